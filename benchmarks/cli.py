"""Benchmark: how fast the CLI answers a person, on a workspace of 10,000 ops, against git and
against Python itself.

The workspace is built through the product (``ws.call`` of create / str_replace / append on 200
files, a checkpoint every 250 ops, three agents in turn). Then each command runs as a person
runs it: a new ``gitspace`` process, its stdout a pipe (so ``log`` prints its compact one-line
format, as it does when piped; a terminal adds the pager and the table, which this does not
measure). gitspace is installed as a user has it: a virtual environment of its own holding a
byte-compiled copy of the package and its console script, as a wheel leaves them
(``_bench.install_like_a_wheel``: no editable finder, nothing compiled on the way). Each gitspace
command is timed beside the git command that does the same work and beside ``python -c pass``
of that same environment (the floor: nothing a Python program can do starts faster), in
interleaved rounds, so a burst of load from other processes on this shared machine hits all
three alike:

    gitspace log -n 20       vs  git log -n 20 --name-only
    gitspace log -n 5000     vs  git log -n 5000 --name-only
    gitspace status          vs  git status
    gitspace --help          vs  git --help

Each row also gives the median CPU time (user + system, the process and its git children): on a
loaded machine wall time also measures the other processes.

Targets (printed with pass/FAIL; the exit status is always 0, this is a report): ``status`` and
``log -n 20`` within 4x the floor (median against median, CPU and wall); medians of ``log -n
20`` and ``status`` under 150 ms, ``log -n 5000`` under 1.5 s, ``--help`` under 150 ms. The
ratios to git say how much of that is gitspace's own cost on this machine.

    .venv/bin/python benchmarks/cli.py                 # 10,000 ops, 15 rounds (~3-5 minutes)
    .venv/bin/python benchmarks/cli.py --ops 2000 --rounds 5       # a quick look
    .venv/bin/python benchmarks/cli.py --keep          # keep the workspace (path on stderr)
    .venv/bin/python benchmarks/cli.py --reuse DIR     # time a workspace kept before
    .venv/bin/python benchmarks/cli.py --json          # JSON on stdout (the table on stderr)
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench import emit, finish, hermetic, install_like_a_wheel, log  # noqa: E402

FILES = 200
AGENTS = ("planner", "writer", "reviewer")

# (label, gitspace arguments, the git command doing the same work, target in ms)
COMMANDS: list[tuple[str, list[str], list[str], float]] = [
    ("log -n 20", ["log", "-n", "20"], ["log", "-n", "20", "--name-only"], 150.0),
    ("status", ["status"], ["status"], 150.0),
    ("log -n 5000", ["log", "-n", "5000"], ["log", "-n", "5000", "--name-only"], 1500.0),
    ("--help", ["--help"], ["--help"], 150.0),
]
NEAR_THE_FLOOR = {"log -n 20": 4.0, "status": 4.0}  # label -> at most this many times the floor


def build(root: Path, ops: int) -> float:
    """A workspace of ``ops`` ops made through ws.call; the seconds it took."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    import gitspace

    started = time.perf_counter()
    gitspace.init(root, agent="bench").close()
    done = 0
    marker: dict[str, int] = {}  # path -> the number on its "op N" line
    while done < ops:
        agent = AGENTS[(done // 100) % len(AGENTS)]
        with gitspace.open(root, agent=agent, session=f"bench-session-{done // 100}") as ws:
            for _ in range(min(100, ops - done)):
                i = done
                path = f"notes/{i % FILES // 20:02d}/n{i % FILES:03d}.md"
                if i < FILES:
                    result = ws.call("create", {"path": path, "file_text": f"# note {i}\nop {i}\n"})
                    marker[path] = i
                elif i % 3 == 0:
                    result = ws.call("str_replace", {"path": path, "old_str": f"op {marker[path]}\n",
                                                     "new_str": f"op {i}\n"})
                    marker[path] = i
                else:
                    result = ws.call("append", {"path": path, "text": f"line {i}\n"})
                if not result.ok:
                    raise SystemExit(f"op {i} failed: {result.text}")
                done += 1
                if done % 250 == 0:
                    ws.call("checkpoint", {"name": f"cp-{done}"})
            ws.repo.wait_for_packing()
        if done % 2000 == 0:
            log(f"  built {done:,} ops in {time.perf_counter() - started:.0f} s")
    return time.perf_counter() - started


@dataclass
class Row:
    label: str
    gitspace_ms: float
    gitspace_p90_ms: float
    git_ms: float
    ratio: float
    gitspace_cpu_ms: float
    git_cpu_ms: float
    target_ms: float
    holds: bool
    output_lines: int
    floor_ratio: float  # wall median over the floor's (python -c pass), same rounds
    floor_cpu_ratio: float
    floor_target: float | None  # at most this many times the floor (None: no such target)
    near_floor: bool | None


def _cpu() -> float:
    """CPU seconds (user + system) of every child waited for so far, and of theirs (git)."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _timed(cmd: list[str], cwd: Path) -> tuple[float, float, bytes]:
    """(wall seconds, CPU seconds, stdout) of one run of ``cmd``."""
    c0, t0 = _cpu(), time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True)
    dt, cpu = time.perf_counter() - t0, _cpu() - c0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr.decode(errors='replace')}")
    return dt, cpu, proc.stdout


def measure(root: Path, gitspace_bin: str, python: str, rounds: int
            ) -> tuple[list[Row], dict[str, float]]:
    """The rows, and the floor's medians (wall and CPU ms), all from the same rounds."""
    # label -> ([gitspace wall], [git wall], [gitspace cpu], [git cpu])
    times: dict[str, tuple[list[float], ...]] = {c[0]: ([], [], [], []) for c in COMMANDS}
    floor: tuple[list[float], list[float]] = ([], [])
    lines: dict[str, int] = {}
    for _label, ours, theirs, _ in COMMANDS:  # warm the page cache
        _timed([gitspace_bin, *ours], root)
        _timed(["git", *theirs], root)
    for _ in range(rounds):
        for label, ours, theirs, _ in COMMANDS:
            wall, cpu, out = _timed([gitspace_bin, *ours], root)
            lines[label] = out.count(b"\n")
            git_wall, git_cpu, _ = _timed(["git", *theirs], root)
            floor_wall, floor_cpu, _ = _timed([python, "-c", "pass"], root)
            for series, value in zip(times[label], (wall, git_wall, cpu, git_cpu), strict=True):
                series.append(value)
            floor[0].append(floor_wall)
            floor[1].append(floor_cpu)
    floor_ms = {"wall": statistics.median(floor[0]) * 1000,
                "cpu": statistics.median(floor[1]) * 1000}
    rows = []
    for label, _, _, target in COMMANDS:
        ours_s, git_s, ours_cpu, git_cpu = times[label]
        med = statistics.median(ours_s) * 1000
        cpu_med = statistics.median(ours_cpu) * 1000
        git_med = statistics.median(git_s) * 1000
        p90 = sorted(ours_s)[max(0, int(len(ours_s) * 0.9) - 1)] * 1000
        near = NEAR_THE_FLOOR.get(label)
        floor_ratio, cpu_ratio = med / floor_ms["wall"], cpu_med / max(floor_ms["cpu"], 0.1)
        rows.append(Row(label, round(med, 1), round(p90, 1), round(git_med, 1),
                        round(med / git_med, 1), round(cpu_med, 1),
                        round(statistics.median(git_cpu) * 1000, 1), target, med < target,
                        lines[label], round(floor_ratio, 2), round(cpu_ratio, 2), near,
                        None if near is None else floor_ratio <= near and cpu_ratio <= near))
    return rows, {k: round(v, 1) for k, v in floor_ms.items()}


def render(report: dict[str, object], rows: list[Row]) -> str:
    env = report["env"]
    assert isinstance(env, dict)
    out = [f"gitspace CLI benchmark — {env['ops']:,} ops, {env['python']}, {env['git']}, "
           f"{env['cpus']} CPUs, load {env['load_start']} -> {env['load_end']}",
           f"gitspace: {env['gitspace']} ({env['install']}); stdout is a pipe; "
           f"{env['rounds']} interleaved rounds; the floor (python -c pass, same rounds): "
           f"{env['python_floor_ms']} ms wall, {env['python_floor_cpu_ms']} ms CPU.", "",
           f"{'command':<14} {'gitspace ms':>12} {'p90 ms':>8} {'git ms':>8} {'ratio':>7} "
           f"{'cpu ms':>7} {'git cpu':>8} {'/floor':>7} {'cpu/fl':>7} {'lines out':>10}  targets"]
    for r in rows:
        near = "" if r.floor_target is None else (
            f"; [{'pass' if r.near_floor else 'FAIL'}] within {r.floor_target:g}x the floor")
        out.append(f"{r.label:<14} {r.gitspace_ms:>12.1f} {r.gitspace_p90_ms:>8.1f} "
                   f"{r.git_ms:>8.1f} {r.ratio:>6.1f}x {r.gitspace_cpu_ms:>7.1f} "
                   f"{r.git_cpu_ms:>8.1f} {r.floor_ratio:>6.2f}x {r.floor_cpu_ratio:>6.2f}x "
                   f"{r.output_lines:>10,}  "
                   f"[{'pass' if r.holds else 'FAIL'}] median < {r.target_ms:,.0f} ms{near}")
    out.append("cpu ms: user + system CPU of the process and its git children (median); on a "
               "loaded machine wall time also measures the other processes. /floor: the wall "
               "median over the floor's; cpu/fl: the same for CPU.")
    out.append(f"\nBuilding the workspace took {report['build_seconds']} s; total run "
               f"{env['seconds']} s.")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ops", type=int, default=10_000, help="ops in the workspace (default 10,000)")
    ap.add_argument("--rounds", type=int, default=15, help="interleaved rounds (default 15)")
    ap.add_argument("--reuse", type=Path, help="time this existing workspace instead of building")
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder")
    ap.add_argument("--json", action="store_true", help="print JSON on stdout (table to stderr)")
    ap.add_argument("--gitspace", help=(
        "the gitspace executable to time (default: a wheel-like install of this checkout made "
        "for the run)"))
    args = ap.parse_args(argv)

    started, load_start = time.perf_counter(), os.getloadavg()[0]
    base = Path(__file__).resolve().parent / ".work"
    base.mkdir(exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="gitspace-cli-bench-", dir=base))
    hermetic(work, GITSPACE_PACK_THRESHOLD="1024")
    try:
        if args.reuse:
            root, build_s, ops = args.reuse.resolve(), 0.0, args.ops
        else:
            root = work / "ws"
            log(f"building a workspace of {args.ops:,} ops through ws.call ...")
            build_s, ops = build(root, args.ops), args.ops
        python = install_like_a_wheel(work) if args.gitspace is None else Path(sys.executable)
        gitspace_bin = args.gitspace or str(python.parent / "gitspace")
        rows, floor = measure(root, gitspace_bin, str(python), args.rounds)
        installed = Path(gitspace_bin).resolve()
        editable = args.gitspace is not None and any(
            Path(sys.prefix, "lib").glob("python*/site-packages/__editable__*gitspace*"))
        report: dict[str, object] = {
            "env": {"ops": ops, "python": f"Python {platform.python_version()}",
                    "git": subprocess.run(["git", "--version"], capture_output=True,
                                          text=True).stdout.strip(),
                    "cpus": os.cpu_count(), "load_start": round(load_start, 2),
                    "load_end": round(os.getloadavg()[0], 2), "rounds": args.rounds,
                    "gitspace": str(installed),
                    "install": "editable install" if editable else "installed as a wheel",
                    "python_floor_ms": floor["wall"], "python_floor_cpu_ms": floor["cpu"],
                    "seconds": round(time.perf_counter() - started, 1)},
            "build_seconds": round(build_s, 1),
            "rows": [asdict(r) for r in rows],
        }
        table = render(report, rows)
        emit(table, report, args.json)
    finally:
        finish(work, args.keep)
    return 0


if __name__ == "__main__":
    sys.exit(main())
