"""Benchmark: worklog constraint scripts cost what the answer costs, not what the log costs.

Invariant checked by eye: for peek, range (one week), last_n (n=20) and a peek right after an
append (which indexes only the new tail), the median wall time and peak RSS on a 1,000,000-entry
log stay close to those on a 10,000-entry log (ratio near 1), and under 100 ms / 100 MB warm.
Every run is a fresh process, started the way the runner starts it (the script's own #! line,
JSON on stdin, cwd = workspace, a cache folder outside it), so process start is included. Peak
RSS comes from os.wait4 on that one child.

    .venv/bin/python benchmarks/constraints.py [--runs 11] [--big 1000000]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gen_worklog import write  # noqa: E402

SCRIPTS = Path(__file__).resolve().parent.parent / "constraints"


def child_env(cache: Path, workspace: Path) -> dict[str, str]:
    # The interpreter's own folder first: a pyenv shim in PATH would add ~80 ms of bash per call.
    path = os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"])
    return {"PATH": path, "LANG": "C.UTF-8", "GITSPACE_WORKSPACE": str(workspace),
            "GITSPACE_CACHE_DIR": str(cache)}


def run_once(script: str, args: dict, workspace: Path, env: dict[str, str]) -> tuple[float, int]:
    """(wall seconds, peak RSS in KiB) of one fresh process running one script."""
    with tempfile.TemporaryFile() as stdin, tempfile.TemporaryFile() as out:
        stdin.write(json.dumps(args).encode())
        stdin.seek(0)
        t0 = time.perf_counter()
        proc = subprocess.Popen([str(SCRIPTS / script)], stdin=stdin, stdout=out, stderr=out,
                                cwd=workspace, env=env)
        _, status, usage = os.wait4(proc.pid, 0)  # reaps it ourselves to get this child's rusage
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            out.seek(0)
            raise SystemExit(f"{script} failed: {out.read().decode()[:500]}")
    return wall, usage.ru_maxrss


REL = "journal/worklog.jsonl"
CASES = {
    "peek": ("peek", {"path": REL}),
    "range (1 week)": ("range", {"path": REL, "start": "2023-06-05", "end": "2023-06-12"}),
    "last_n (20)": ("last_n", {"path": REL, "n": 20}),
}


def prepare(entries: int, root: Path) -> tuple[Path, dict[str, str]]:
    """A workspace holding a generated log, with its index already built (the one full read)."""
    workspace = root / f"ws{entries}"
    (workspace / "journal").mkdir(parents=True)
    log = workspace / REL
    t0 = time.perf_counter()
    write(log, entries=entries)
    print(f"  generated {entries:,} entries ({log.stat().st_size / 2**20:.1f} MiB) "
          f"in {time.perf_counter() - t0:.1f} s", flush=True)
    env = child_env(root / f"cache{entries}", workspace)
    t0 = time.perf_counter()
    run_once("peek", {"path": REL}, workspace, env)
    print(f"  cold peek (index build) {time.perf_counter() - t0:.2f} s", flush=True)
    return workspace, env


def sample(case: str, i: int, workspace: Path, env: dict[str, str]) -> tuple[float, int]:
    if case == "peek after append":  # the log grew by one entry: only the new tail is indexed
        entry = {"path": REL, "text": "benchmark", "ts": f"3100-01-01T00:{i:02d}:00+00:00"}
        run_once("append_entry", entry, workspace, env)
        return run_once("peek", {"path": REL}, workspace, env)
    script, args = CASES[case]
    return run_once(script, args, workspace, env)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--small", type=int, default=10_000)
    parser.add_argument("--big", type=int, default=1_000_000)
    ns = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gitspace-bench-") as tmp:
        print(f"baseline: {ns.small:,} entries")
        small = prepare(ns.small, Path(tmp))
        print(f"big: {ns.big:,} entries")
        big = prepare(ns.big, Path(tmp))
        print(f"\nmedian of {ns.runs} fresh processes (start included; 10k and 1M interleaved "
              f"so machine noise hits both); peak RSS is the max")
        heads = ("10k ms", "1M ms", "ratio", "10k MiB", "1M MiB", "ratio")
        print(f"{'script':<18}" + "".join(f"{h:>9}" for h in heads))
        for case in [*CASES, "peek after append"]:
            runs = [(sample(case, i, *small), sample(case, i, *big)) for i in range(ns.runs)]
            ts, tb = (statistics.median(r[k][0] for r in runs) for k in (0, 1))
            rs, rb = (max(r[k][1] for r in runs) for k in (0, 1))
            print(f"{case:<18}{ts * 1e3:>9.1f}{tb * 1e3:>9.1f}{tb / ts:>9.2f}"
                  f"{rs / 1024:>9.1f}{rb / 1024:>9.1f}{rb / rs:>9.2f}", flush=True)


if __name__ == "__main__":
    main()
