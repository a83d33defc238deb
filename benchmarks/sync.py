"""Benchmark: a fleet on one branch. With 1, 2, 4 and 8 clones, over ``git daemon`` and over the
smart-HTTP host (git http-backend behind lighttpd, basic auth, a protected branch), in one run:
ops per second reaching the remote against plain ``git push``, the time from an op to its
arrival on the server (median and p99), and pushes per op.

The servers are the test suite's (tests/gitserver.py) on 127.0.0.1. Each clone is its own process
running tests/fleet_agent.py: OPS ops through ``ws.call`` (create, append to a shared log,
str_replace of its own line of a shared board), with the rounds of ``sync --watch``
(``gitspace.team.sync_watch.Watch``, the code behind ``gitspace sync --watch``) between them: every
round that falls due, as ``sync --watch`` runs them (after an op, unless the clone is waiting for
its turn to push; at its turn; every few seconds), or with ``--after every-op`` one round right
after each op whatever the turn (the fleet test's worst case for races). An op has arrived at the
end of the first round after it that pushed (a round pushes every op its clone has not pushed yet:
a batch). After its last op a clone keeps running its rounds until nothing is queued; an op still
queued after that goes out in a final sync, counted as late.

Baselines, same server, same run:
- ``git push`` latency: a plain clone commits one small change and pushes it, alone, ``OPS``
  times; the median is what one op costs to publish when nothing is in the way.
- ``git push`` rate: the same loop's commits per second.

Two rounds per server: clones making ops back to back (the next op as soon as the last one and
the round after it, if one was due, returned), and ``--think`` seconds apart (an agent waits for
its model between ops). Printed per server, round and fleet size: ops/s reaching the remote (ops
/ seconds from start until the last one arrived) and its ratio to one clone's and to the
plain-push rate; op-to-server median and p99; pushes per op (lost ones included) and ops per
push that landed; the CPU seconds the clones' processes used per op (on a machine the clones
saturate, throughput stops growing there, not at the host); the machine's load average while it
ran. No asserts: the machines are shared and noisy, and every clone here shares their cores.

    .venv/bin/python benchmarks/sync.py              # 25 ops per clone
    .venv/bin/python benchmarks/sync.py --ops 10     # quicker
    .venv/bin/python benchmarks/sync.py --servers daemon --clones 1 4
    .venv/bin/python benchmarks/sync.py --json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT / "tests"))
from _bench import hermetic, log  # noqa: E402

AGENT = ROOT / "tests" / "fleet_agent.py"
BOARD = "".join(f"slot-{i}: v0\n" for i in range(17))  # as fleet_agent.py's: a line per clone


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout


def p99(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.99 * (len(ordered) - 1))))]


def clone(server: Any, url: str, target: Path) -> Path:
    git(target.parent, *server.client_config(), "clone", "-q", url, str(target))
    server.authorize(target)
    return target


def plain_push(server: Any, work: Path, count: int) -> dict[str, float]:
    """Commit one small change and ``git push`` it, ``count`` times, alone on a fresh repo."""
    url = server.create("plain")
    repo = clone(server, url, work / f"plain-{server.kind}")
    for key, value in (("user.name", "bench"), ("user.email", "bench@example.com")):
        git(repo, "config", key, value)
    times = []
    started = time.perf_counter()
    for n in range(count):
        (repo / "log.md").write_text(f"line {n}\n")
        git(repo, "add", "log.md")
        git(repo, "commit", "-q", "-m", f"change {n}")
        t = time.perf_counter()
        git(repo, "push", "-q", "origin", "HEAD:refs/heads/main")
        times.append(time.perf_counter() - t)
    elapsed = time.perf_counter() - started
    return {"median_s": statistics.median(times), "p99_s": p99(times), "per_s": count / elapsed}


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def fleet(server: Any, work: Path, clones: int, count: int, think: float,
          after: str) -> dict[str, Any]:
    import gitspace
    from gitspace.team.sync import sync

    name = f"fleet{clones}-{think:g}"
    url = server.create(name)
    first = gitspace.init(work / server.kind / name / "seed", agent="seed")
    first.call("create", {"path": "shared/board.md", "file_text": BOARD})
    first.call("create", {"path": "shared/log.md", "file_text": "log\n"})
    git(first.root, "remote", "add", "origin", url)
    server.authorize(first.root)
    sync(first)
    first.close()
    roots = [clone(server, url, work / server.kind / name / f"m{n}")
             for n in range(1, clones + 1)]
    go = work / server.kind / name / "go"
    members = [subprocess.Popen([sys.executable, str(AGENT), str(root), f"agent-{n}", str(n),
                                 str(count), str(go), str(think), after],
                                stdout=subprocess.PIPE, text=True)
               for n, root in enumerate(roots, 1)]
    time.sleep(0.5 + 0.1 * clones)  # every member has imported gitspace and waits for go
    load = os.getloadavg()[0]
    cpu = children_cpu()  # git clones and the seed were waited for before: only members count
    start = time.time()
    go.touch()
    latencies: list[float] = []
    last_arrival = start
    late = pushes = landed = 0
    for member, root in zip(members, roots, strict=True):
        out, _ = member.communicate()
        if member.returncode != 0:
            raise SystemExit(f"a fleet member failed in {root}")
        pending: list[float] = []
        for line in map(json.loads, out.splitlines()):
            if "op" in line:
                pending.append(line["made"])
                continue
            pushes += line["pushes"]
            if line["pushed"]:
                landed += 1
                latencies += [line["done"] - made for made in pending]
                last_arrival = max(last_arrival, line["done"])
                pending = []
        if pending:  # still queued after the member's drain: a final sync takes them
            with gitspace.open(root) as ws:
                sync(ws)
            now = time.time()
            latencies += [now - made for made in pending]
            last_arrival = max(last_arrival, now)
            late += len(pending)
    arrived = len(latencies)
    cpu = children_cpu() - cpu
    return {"server": server.kind, "clones": clones, "think_s": think, "ops": arrived,
            "per_s": arrived / (last_arrival - start), "median_s": statistics.median(latencies),
            "p99_s": p99(latencies), "pushes_per_op": pushes / arrived,
            "ops_per_landed_push": arrived / max(1, landed), "late_ops": late,
            "cpu_ms_per_op": 1000 * cpu / arrived,
            "load": round(max(load, os.getloadavg()[0]), 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=25, help="ops per clone (default 25)")
    parser.add_argument("--think", type=float, default=0.5,
                        help="seconds between one clone's ops in the second round (default 0.5)")
    parser.add_argument("--clones", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--servers", nargs="+", default=["daemon", "http"],
                        choices=["daemon", "http"])
    parser.add_argument("--after", choices=["watch", "every-op"], default="watch",
                        help="a round after an op when the watch says one is due (default), "
                             "or after every op")
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="gitspace-bench-sync-"))
    bases: dict[str, dict[str, float]] = {}
    rows: list[dict[str, Any]] = []
    try:
        hermetic(work, GITSPACE_PACK_THRESHOLD="0")
        from gitserver import SERVERS

        for kind in options.servers:
            server = SERVERS[kind](work / f"server-{kind}")
            server.start()
            (work / kind).mkdir()
            try:
                log(f"{kind}: baseline, plain git push of one commit")
                bases[kind] = plain_push(server, work, options.ops)
                for think in (0.0, options.think):
                    for clones in options.clones:
                        log(f"{kind}: fleet of {clones}, {options.ops} ops each {think:g} s "
                            "apart, sync --watch rounds between them")
                        rows.append(fleet(server, work, clones, options.ops, think, options.after))
            finally:
                server.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    for row in rows:
        base = bases[row["server"]]
        one = next(r for r in rows if r["server"] == row["server"]
                   and r["think_s"] == row["think_s"] and r["clones"] == min(options.clones))
        row["rate_ratio"] = row["per_s"] / base["per_s"]
        row["vs_one_clone"] = row["per_s"] / one["per_s"]
        row["latency_ratio"] = row["median_s"] / base["median_s"]
    if options.json:
        print(json.dumps({"git_push": bases, "fleet": rows}, indent=2))
        return
    for kind, base in bases.items():
        print(f"{kind}: git push alone {base['per_s']:.1f} commits/s, push median "
              f"{base['median_s'] * 1000:.0f} ms, p99 {base['p99_s'] * 1000:.0f} ms")
        for row in (r for r in rows if r["server"] == kind):
            print(f"  {row['clones']} clone(s), ops {row['think_s']:g} s apart: "
                  f"{row['per_s']:.1f} ops/s reach the remote ({row['vs_one_clone']:.2f}x one "
                  f"clone, {row['rate_ratio']:.2f}x git push's rate); op to server median "
                  f"{row['median_s'] * 1000:.0f} ms, p99 {row['p99_s'] * 1000:.0f} ms; "
                  f"{row['pushes_per_op']:.2f} pushes per op, {row['ops_per_landed_push']:.1f} "
                  f"ops per landed push; {row['late_ops']} late; "
                  f"{row['cpu_ms_per_op']:.0f} ms CPU per op; load {row['load']}")


if __name__ == "__main__":
    main()
