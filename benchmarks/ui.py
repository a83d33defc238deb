"""The web view on a 10,000-op workspace: time to first byte and to full load, and its memory.

The workspace is built through ``ws.call`` (benchmarks/ui_workspace.py: three agents, sessions,
checkpoints, restores, undo). The view is the real ``gitspace ui`` in its own process; pages are
loaded by headless Chromium (Debian's), and each page's Navigation Timing gives the time to first
byte (request start to response start: the server's time, over loopback) and to full load (to the
load event: HTML, CSS and script). The baseline, measured in the same run and interleaved with
the pages, is ``git log -n 50`` with full messages on the same repository: the least any timeline
page could cost.

    python benchmarks/ui.py [--ops 10000] [--rounds 15] [--reuse DIR]

Targets: the timeline's first byte under 300 ms, an op's detail under 150 ms.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _bench import hermetic, log

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ui_workspace import build  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
TARGETS = {"timeline": 300.0, "op detail": 150.0}
NAV = """() => { const n = performance.getEntriesByType('navigation')[0];
                 return [n.responseStart - n.requestStart, n.loadEventEnd - n.startTime]; }"""


def git_ms(root: Path, *args: str) -> float:
    start = time.perf_counter()
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)
    return (time.perf_counter() - start) * 1000


def rss_kib(pid: int) -> tuple[int, int]:
    """(current, peak) resident memory of a process, in KiB."""
    status = Path(f"/proc/{pid}/status").read_text()
    now = int(re.search(r"VmRSS:\s+(\d+)", status).group(1))  # type: ignore[union-attr]
    peak = int(re.search(r"VmHWM:\s+(\d+)", status).group(1))  # type: ignore[union-attr]
    return now, peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ops", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--reuse", type=Path, help="a workspace built before (skips building)")
    opts = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="gitspace-bench-ui-"))
    hermetic(work)
    root = opts.reuse or work / "ws"
    if opts.reuse is None:
        log(f"building a {opts.ops:,}-op workspace through ws.call in {root} ...")
        start = time.perf_counter()
        build(root, opts.ops)
        log(f"  built in {time.perf_counter() - start:.0f} s")
    commits = int(subprocess.run(["git", "-C", str(root), "rev-list", "--count", "HEAD"],
                                 capture_output=True, text=True, check=True).stdout)
    shas = subprocess.run(["git", "-C", str(root), "rev-list", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.split()
    picks = [shas[len(shas) * i // 7] for i in range(1, 7)]  # ops across the whole history

    server = subprocess.Popen([sys.executable, "-m", "gitspace", "ui", str(root), "--port", "0"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert server.stdout is not None
    found = re.search(r"(http://127\.0\.0\.1:\d+)/", server.stdout.readline())
    assert found, "gitspace ui did not start"
    base = found.group(1)
    idle_kib = rss_kib(server.pid)[0]
    pages = {
        "timeline": lambda i: "/",
        "op detail": lambda i: f"/op/{picks[i % len(picks)]}",
        "timeline, page 100": lambda i: "/?offset=5000",
        "timeline, agent filter": lambda i: "/?agent=coder",
        "timeline, search": lambda i: "/?q=mod_123",
        "graph (300 rows)": lambda i: "/graph",
    }
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in pages}
    cold: tuple[float, ...] = (0.0, 0.0)
    baseline: list[float] = []
    try:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as pw:
            browser = pw.chromium.launch_persistent_context(
                tempfile.mkdtemp(dir=work), executable_path=CHROMIUM, headless=True, args=ARGS)
            tab = browser.new_page()
            tab.goto(base + "/", wait_until="load")  # the first visit counts every commit once
            cold = tuple(tab.evaluate(NAV))
            for path in pages.values():  # warm up: imports, Pygments, git's caches
                tab.goto(base + path(0))
            for i in range(opts.rounds):
                baseline.append(git_ms(root, "log", "-n", "50", "--format=%H%x1f%B", "--name-only"))
                for name, path in pages.items():
                    tab.goto(base + path(i), wait_until="load")
                    times[name].append(tuple(tab.evaluate(NAV)))  # type: ignore[arg-type]
            browser.close()
        now_kib, peak_kib = rss_kib(server.pid)
    finally:
        server.terminate()
        server.wait(timeout=30)

    base_ms = statistics.median(baseline)
    rows = []
    log(f"\n{commits:,} commits; {opts.rounds} rounds; medians in ms; baseline "
        f"'git log -n 50' (full messages, files) = {base_ms:.1f} ms")
    log(f"{'page':<24} {'first byte':>10} {'full load':>10} {'x baseline':>10}  target")
    for name, samples in times.items():
        first = statistics.median(s[0] for s in samples)
        full = statistics.median(s[1] for s in samples)
        target = TARGETS.get(name)
        verdict = "" if target is None else (f"< {target:.0f} ms: " + ("met" if first < target
                                                                        else "MISSED"))
        log(f"{name:<24} {first:>10.1f} {full:>10.1f} {first / base_ms:>10.1f}  {verdict}")
        rows.append({"page": name, "first_byte_ms": round(first, 1), "full_load_ms": round(full, 1),
                     "ratio_to_git_log_50": round(first / base_ms, 2), "target_ms": target})
    log(f"first timeline visit (counts all {commits:,} commits once): first byte {cold[0]:.1f} ms, "
        f"full load {cold[1]:.1f} ms")
    log(f"server memory: {idle_kib / 1024:.0f} MiB idle, {now_kib / 1024:.0f} MiB after, "
        f"peak {peak_kib / 1024:.0f} MiB")
    print(json.dumps({"commits": commits, "baseline_ms": round(base_ms, 1), "pages": rows,
                      "first_timeline_visit_ms": [round(cold[0], 1), round(cold[1], 1)],
                      "memory_mib": {"idle": round(idle_kib / 1024), "after": round(now_kib / 1024),
                                     "peak": round(peak_kib / 1024)}}, indent=1))


if __name__ == "__main__":
    main()
