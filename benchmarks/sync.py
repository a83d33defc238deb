"""Benchmark: a fleet on one branch. Ops per second reaching the remote with 1, 2 and 4 clones,
and the time from an op to its arrival on the server, against plain ``git push`` in the same run.

The server is the test suite's real one (``git daemon --enable=receive-pack`` on 127.0.0.1,
tests/gitserver.py). Each clone is its own process running tests/fleet_agent.py: OPS ops through
``ws.call`` (create, append to a shared log, str_replace of its own line of a shared board), and
after each one ``gitspace.team.sync.sync``, the library call behind ``gitspace sync`` and
``sync --watch``. An op has arrived when a sync that started after it returned successfully
(a sync pushes every op the clone has); an op whose syncs all lost their races arrives with the
clone's next successful sync, and those still queued at the end go out in a final sync each
(counted, and timed from when the op was made).

Baselines, same server, same run:
- ``git push`` latency: a plain clone commits one small change and pushes it, alone, ``OPS``
  times; the median is what one op costs to publish when nothing is in the way.
- ``git push`` rate: the same loop's commits per second.

Two rounds: clones making ops back to back (the worst case: every sync races every other), and
clones ``--think`` seconds apart (an agent waits for its model between ops). Printed: per round
and fleet size, ops/s reaching the remote (ops that arrived / seconds from start until
the last one arrived), the ratio to the plain-push rate, and median and p99 op-to-server latency
with their ratio to the plain-push median. No asserts: the machines are shared and noisy.

Note on the numbers: over ``git://`` to git daemon on loopback, git's protocol v2 (what git uses
by default to fetch and list refs) waits ~40 ms per connection for delayed TCP ACKs, and a sync
makes two or three connections (list refs, fetch when the remote moved, push) where a plain push
makes one. A real host's round trip dominates both in the same way.

    .venv/bin/python benchmarks/sync.py              # 25 ops per clone
    .venv/bin/python benchmarks/sync.py --ops 10     # quicker
    .venv/bin/python benchmarks/sync.py --json
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))
from _bench import hermetic, log  # noqa: E402

AGENT = ROOT / "tests" / "fleet_agent.py"


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.99 * (len(ordered) - 1))))]


def plain_push(server: object, work: Path, count: int) -> dict[str, float]:
    """Commit one small change and ``git push`` it, ``count`` times, alone on a fresh repo."""
    url = server.create("plain")  # type: ignore[attr-defined]
    clone = work / "plain"
    git(work, "clone", "-q", url, str(clone))
    for key, value in (("user.name", "bench"), ("user.email", "bench@example.com")):
        git(clone, "config", key, value)
    times = []
    started = time.perf_counter()
    for n in range(count):
        (clone / "log.md").write_text(f"line {n}\n")
        git(clone, "add", "log.md")
        git(clone, "commit", "-q", "-m", f"change {n}")
        t = time.perf_counter()
        git(clone, "push", "-q", "origin", "HEAD:refs/heads/main")
        times.append(time.perf_counter() - t)
    elapsed = time.perf_counter() - started
    return {"median_s": statistics.median(times), "p99_s": p99(times), "per_s": count / elapsed}


def fleet(server: object, work: Path, clones: int, count: int, think: float) -> dict[str, float]:
    import gitspace
    from gitspace.team.sync import sync

    name = f"fleet{clones}-{think:g}"
    url = server.create(name)  # type: ignore[attr-defined]
    first = gitspace.init(work / name / "seed", agent="seed")
    first.call("create", {"path": "shared/board.md",
                          "file_text": "".join(f"slot-{i}: v0\n" for i in range(8))})
    first.call("create", {"path": "shared/log.md", "file_text": "log\n"})
    git(first.root, "remote", "add", "origin", url)
    sync(first)
    first.close()
    roots = []
    for n in range(1, clones + 1):
        roots.append(work / name / f"m{n}")
        git(work, "clone", "-q", url, str(roots[-1]))
    go = work / name / "go"
    members = [subprocess.Popen([sys.executable, str(AGENT), str(root), f"agent-{n}", str(n),
                                 str(count), str(go), str(think)], stdout=subprocess.PIPE,
                                text=True)
               for n, root in enumerate(roots, 1)]
    time.sleep(0.5)  # every member has imported gitspace and waits for go
    start = time.time()
    go.touch()
    latencies: list[float] = []
    last_arrival = start
    late = 0
    for member, root in zip(members, roots, strict=True):
        out, _ = member.communicate()
        if member.returncode != 0:
            raise SystemExit(f"a fleet member failed in {root}")
        pending: list[float] = []
        for line in map(json.loads, out.splitlines()):
            pending.append(line["made"])
            if line["sync"] == "ok":
                latencies += [line["done"] - made for made in pending]
                last_arrival = max(last_arrival, line["done"])
                pending = []
        if pending:  # still queued: the final sync takes them
            with gitspace.open(root) as ws:
                sync(ws)
            now = time.time()
            latencies += [now - made for made in pending]
            last_arrival = max(last_arrival, now)
            late += len(pending)
    arrived = len(latencies)
    return {"clones": clones, "think_s": think, "ops": arrived, "per_s": arrived / (last_arrival - start),
            "median_s": statistics.median(latencies), "p99_s": p99(latencies),
            "late_ops": late}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=25, help="ops per clone (default 25)")
    parser.add_argument("--think", type=float, default=0.5,
                        help="seconds between one clone's ops in the second round (default 0.5)")
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="gitspace-bench-sync-"))
    try:
        hermetic(work, GITSPACE_PACK_THRESHOLD="0")
        from gitserver import GitServer

        server = GitServer(work / "server")
        server.start()
        try:
            log("baseline: plain git push of one commit")
            base = plain_push(server, work, options.ops)
            rows = []
            for think in (0.0, options.think):
                for clones in (1, 2, 4):
                    log(f"fleet of {clones}: {options.ops} ops each {think:g} s apart, a sync "
                        "after every op")
                    rows.append(fleet(server, work, clones, options.ops, think))
        finally:
            server.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for row in rows:
        row["rate_ratio"] = row["per_s"] / base["per_s"]
        row["latency_ratio"] = row["median_s"] / base["median_s"]
    if options.json:
        print(json.dumps({"git_push": base, "fleet": rows}, indent=2))
        return
    print(f"git push alone: {base['per_s']:.1f} commits/s, push median "
          f"{base['median_s'] * 1000:.0f} ms, p99 {base['p99_s'] * 1000:.0f} ms")
    for row in rows:
        print(f"{row['clones']} clone(s), ops {row['think_s']:g} s apart: {row['per_s']:.1f} ops/s "
              "reach the remote "
              f"({row['rate_ratio']:.2f}x git push's rate); op to server median "
              f"{row['median_s'] * 1000:.0f} ms ({row['latency_ratio']:.1f}x a push), p99 "
              f"{row['p99_s'] * 1000:.0f} ms; {row['late_ops']} op(s) went out only in the "
              "final sync")


if __name__ == "__main__":
    main()
