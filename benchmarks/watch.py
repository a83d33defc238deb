"""Benchmark: ``gitspace watch`` — write-to-commit latency and commits per 10,000-write burst.

Measured on a workspace of ``--files`` small files (default 1,000; 100 per folder), with the
watcher running in this process (as ``gitspace run --watch`` runs it):

- latency: write one small file, then wait for the watcher's report of the op that records it
  (median and p99 over many writes, at two debounce settings). Baselines from the same run: the
  debounce interval itself (the wait the watcher imposes on purpose), and a plain
  ``git add -A && git commit`` of the same change in a plain copy of the repository (what the
  watcher's own work after the quiet period is compared with);
- burst: a separate process rewrites 10 files round-robin 10,000 times as fast as it can; we count
  the commits the watcher makes for it, how long after the burst ended the tree was committed, and
  whether the committed tree then equals the disk. Baseline: one commit per write (10,000);
- hygiene: this process's open file descriptors and child processes before the first watcher and
  after the last (they must be equal).

The machines are shared and noisy: compare the ratios, not the absolute numbers. Exit status is
always 0 (this is a report); checks print pass/FAIL.

Hermetic: HOME and XDG_CONFIG_HOME point into a temporary folder, GIT_CONFIG_NOSYSTEM=1, every
other GIT_* variable is dropped; the repositories live under that folder and are removed at exit.

    .venv/bin/python benchmarks/watch.py            # ~1 minute
    .venv/bin/python benchmarks/watch.py --quick    # fewer samples, 100 files
    .venv/bin/python benchmarks/watch.py --json     # JSON on stdout (the table goes to stderr)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from typing import Any

from _bench import hermetic, log  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

IDENTITY = ["-c", "user.name=bench", "-c", "user.email=bench@example.com"]
BURST_WRITER = """
import sys, time
root, count = sys.argv[1], int(sys.argv[2])
t0 = time.perf_counter()
for i in range(count):
    with open(f"{root}/burst/f{i % 10}.txt", "w") as out:
        out.write(f"write {i}\\n")
print(time.perf_counter() - t0)
"""



def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *IDENTITY, *args], cwd=cwd, check=True,
                          capture_output=True).stdout.decode()


def populate(root: Path, files: int) -> None:
    for i in range(files):
        folder, j = divmod(i, 100)
        d = root / "src" / f"d{folder:03d}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{j:03d}.txt").write_text(f"file {i}\n" + "y" * 90 + "\n")
    (root / "bench").mkdir()
    (root / "burst").mkdir()


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def resources() -> tuple[int, int]:
    fds = len(os.listdir("/proc/self/fd"))
    children = sum(len(Path(t, "children").read_text().split())
                   for t in Path("/proc/self/task").iterdir())
    return fds, children


def clean(root: Path) -> bool:
    return git(root, "status", "--porcelain", "--untracked-files=all") == ""


# -- measurements ----------------------------------------------------------------------------


class Recorder:
    """Collects the watcher's reports with the moment each arrived."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.commits: list[tuple[float, Any]] = []

    def __call__(self, report: Any) -> None:
        if report.kind == "committed":
            with self.cond:
                self.commits.append((time.perf_counter(), report))
                self.cond.notify_all()
        elif report.kind == "error":
            log(f"  watcher error: {report.text}")

    def wait_for(self, path: str, since: int, timeout: float = 30.0) -> float:
        """When the first commit after index ``since`` that lists ``path`` was reported."""
        deadline = time.perf_counter() + timeout
        with self.cond:
            while True:
                for when, report in self.commits[since:]:
                    if path in report.files:
                        return when
                left = deadline - time.perf_counter()
                if left <= 0:
                    raise SystemExit(f"no commit for {path} within {timeout:g} s")
                self.cond.wait(left)


def latency(root: Path, debounce: float, samples: int) -> list[float]:
    from gitspace.team.watch import Watcher

    rec = Recorder()
    watcher = Watcher(root, author="bench", debounce=debounce, max_wait=5.0, on_report=rec)
    watcher.start()
    try:
        while watcher.stats.flushes < 1:
            time.sleep(0.01)
        found = []
        for i in range(samples):
            rel = f"bench/lat_{i % 10}.txt"
            since = len(rec.commits)
            t0 = time.perf_counter()
            (root / rel).write_text(f"sample {debounce} {i}\n")
            found.append(rec.wait_for(rel, since) - t0)
    finally:
        watcher.stop()
    return found


def git_cli_commit(root: Path, samples: int) -> list[float]:
    found = []
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com"}
    for i in range(samples):
        t0 = time.perf_counter()
        (root / f"bench/lat_{i % 10}.txt").write_text(f"sample {i}\n")
        subprocess.run(["sh", "-c", f"git add -A && git commit -q -m 'sample {i}'"], cwd=root,
                       env=env, check=True)
        found.append(time.perf_counter() - t0)
    return found


def burst(root: Path, writes: int, debounce: float, max_wait: float) -> dict[str, Any]:
    from gitspace.team.watch import Watcher

    rec = Recorder()
    watcher = Watcher(root, author="bench", debounce=debounce, max_wait=max_wait, on_report=rec)
    watcher.start()
    try:
        while watcher.stats.flushes < 1 or not watcher.idle():
            time.sleep(0.01)
        before, events0 = len(rec.commits), watcher.stats.events
        proc = subprocess.run([sys.executable, "-c", BURST_WRITER, str(root), str(writes)],
                              capture_output=True, text=True, check=True)
        ended = time.perf_counter()
        while not (watcher.idle() and clean(root)):
            time.sleep(0.01)
        settled = rec.commits[-1][0] if len(rec.commits) > before else ended
        commits = len(rec.commits) - before
        events = watcher.stats.events - events0
    finally:
        watcher.stop()
    disk = {f"burst/f{n}.txt": (root / f"burst/f{n}.txt").read_text() for n in range(10)}
    committed = {rel: git(root, "show", f"HEAD:{rel}") for rel in disk}
    return {"writes": writes, "debounce": debounce, "max_wait": max_wait,
            "burst_seconds": float(proc.stdout), "commits": commits, "events": events,
            "settle_after_burst": max(0.0, settled - ended), "tree_equals_disk": disk == committed}


# -- report ----------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer samples, 100 files")
    ap.add_argument("--files", type=int, default=None, help="files in the workspace")
    ap.add_argument("--json", action="store_true", help="print JSON on stdout")
    args = ap.parse_args(argv)
    files = args.files if args.files is not None else (100 if args.quick else 1000)
    samples = 20 if args.quick else 100

    tmp = Path(tempfile.mkdtemp(prefix="gitspace-watch-bench-"))
    try:
        hermetic(tmp)
        os.environ["GITSPACE_PACK_THRESHOLD"] = "0"  # no background repack skewing a sample
        import gitspace

        ws_root, plain = tmp / "ws", tmp / "plain"
        for root in (ws_root, plain):
            root.mkdir()
            populate(root, files)
        gitspace.init(ws_root, agent="bench").close()
        git(ws_root, "gc", "--quiet")
        git(plain, "init", "--quiet", "--initial-branch=main")
        git(plain, "add", "-A")
        git(plain, "commit", "--quiet", "-m", "start")
        git(plain, "gc", "--quiet")

        start = resources()
        log(f"workspace: {files:,} files; {samples} latency samples per setting "
            f"({os.cpu_count()} cores, shared)")
        result: dict[str, Any] = {"files": files, "latency": {}, "bursts": []}
        base = git_cli_commit(plain, samples)
        base_med = statistics.median(base)
        result["git_add_commit"] = {"median": base_med, "p99": percentile(base, 99)}
        log(f"\nbaseline  git add -A && git commit: median {base_med * 1000:7.1f} ms, "
            f"p99 {percentile(base, 99) * 1000:7.1f} ms")
        log("\nlatency: write -> op committed       median      p99   median/debounce  "
            "(median-debounce)/git-commit")
        for debounce in (0.05, 0.3):
            found = latency(ws_root, debounce, samples)
            med, p99 = statistics.median(found), percentile(found, 99)
            result["latency"][str(debounce)] = {"median": med, "p99": p99}
            log(f"  debounce {debounce * 1000:4.0f} ms                 {med * 1000:7.1f} ms "
                f"{p99 * 1000:7.1f} ms   {med / debounce:9.2f}x          "
                f"{(med - debounce) / base_med:9.2f}x")
        log("\nburst: 10 files rewritten 10,000 times by another process")
        log("  debounce  max_wait  burst s  events  commits  writes/commit  settle s  "
            "settle/debounce  tree=disk")
        for debounce, max_wait in ((0.3, 5.0), (0.3, 1.0)):
            b = burst(ws_root, 10_000, debounce, max_wait)
            result["bursts"].append(b)
            log(f"  {debounce:6.1f}  {max_wait:8.1f}  {b['burst_seconds']:7.2f}  {b['events']:6,}  "
                f"{b['commits']:7}  {b['writes'] / max(1, b['commits']):13,.0f}  "
                f"{b['settle_after_burst']:8.2f}  {b['settle_after_burst'] / debounce:15.2f}  "
                f"{'pass' if b['tree_equals_disk'] else 'FAIL'}")
        end = resources()
        result["resources"] = {"before": start, "after": end}
        log(f"\nhygiene: (open fds, child processes) before {start}, after {end}: "
            f"{'pass' if start == end else 'FAIL'}")
        checks = {
            "a 10,000-write burst makes at most 10 commits":
                all(b["commits"] <= 10 for b in result["bursts"]),
            "the committed tree equals the disk after every burst":
                all(b["tree_equals_disk"] for b in result["bursts"]),
            "median latency at debounce 300 ms is under 2x the debounce":
                result["latency"]["0.3"]["median"] < 0.6,
        }
        for name, ok in checks.items():
            log(f"  {'pass' if ok else 'FAIL'}  {name}")
        if args.json:
            print(json.dumps(result, indent=2))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
