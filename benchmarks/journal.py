"""Benchmark: the seed's journal test at every size, through ``gitspace run --policy journal``.

For each density (the sample's, about 2.8 entries a day, and 137 a day) and each size (2,048,
100,000 and 1,000,000 entries by default), in one run: a log from ``gen_worklog.py`` is split into
a segmented log (``split_worklog``, one op) in a fresh workspace, then a ``gitspace run --policy
journal "Summarise the journal."`` process (no path: the policy finds the log through ``peek``; no
``--max-steps``: a scripted run needs none) summarises it. The benchmark reads the run's output as
it comes (each chunk read is one line, timed here when it arrives), then asks ``gitspace sessions
show --json`` for the run's stats and walks the tree of summaries it left
(``summary_tree.check``). Per run it prints:

- wall time, and time per chunk at the start and at the end of the run (the median of the first
  and of the last CHUNKS_MEASURED chunks): target, the end within 1.3x of the start; and the same
  for the CPU the run uses per chunk (its scripts and git included), which the load of other
  processes on the machine does not inflate, both as that median and as the mean over the same
  windows (the CPU clock ticks in 10 ms, about a tenth of a chunk: the median moves in ticks);
- model calls and ops per chunk;
- peak conversation (target: at most the budget at every size, the final synthesis included),
  largest tool result (at most 16,000 characters), largest summary file;
- whether the index covers every entry (each in exactly one leaf).

The nested form (``--policy journal-nested``: each chunk summarised by a delegated child whose
value is the chunk's summary) runs too, at the sizes of ``--nested-sizes``: a child works in a
worktree of its own with the whole workspace checked out, so it is measured on the smaller logs.
Its row adds the children's count and their largest conversation, beside the parent's.

``--budget`` is the run's ``--budget`` (compaction folds the conversation past it). At the
default every form's peak is held near it, so to compare what each form's conversation would
grow to, run once with a budget no run reaches (``--budget 100000000``: nothing is folded).

The machine's load average is printed with each run: the 2 cores are shared, so times are noisy;
the ratio of end to start within one run is the figure to trust. It asserts nothing.

    .venv/bin/python benchmarks/journal.py                              # about two hours
    .venv/bin/python benchmarks/journal.py --sizes 2048,100000 --json   # JSON on stdout
    .venv/bin/python benchmarks/journal.py --sizes 2048 --nested-sizes 2048 --budget 100000000
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
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen_worklog  # noqa: E402
import summary_tree  # noqa: E402
from _bench import emit, finish, hermetic, log  # noqa: E402

from gitspace.agent.session import listing  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
WORK = REPO / "benchmarks" / ".work"  # git-ignored
DENSITIES = {"sample": None, "137/day": 137.0}
BUDGET = 60_000  # gitspace run's default --budget
CAP = 16_000  # the tool result cap
FANOUT = 20  # parts per summary (journal_tree.FANOUT)
CHUNKS_MEASURED = 50
TASK = "Summarise the journal."


def gitspace(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "gitspace", "-C", str(root), *args],
                          capture_output=True, text=True, check=True)


def prepare(root: Path, entries: int, per_day: float | None) -> dict[str, Any]:
    """A workspace whose journal is a segmented log of ``entries`` entries."""
    root.mkdir(parents=True)
    source = root / "journal" / "source.jsonl"
    source.parent.mkdir()
    (root / ".gitignore").write_text("journal/source.jsonl\n")
    began = time.perf_counter()
    assert gen_worklog.write(source, entries, per_day=per_day) == entries
    gitspace(root, "init", ".")
    split = time.perf_counter()
    gitspace(root, "call", "split_worklog", "--args",
             json.dumps({"path": "journal/source.jsonl", "into": "journal/worklog"}))
    source.unlink()  # ignored, never committed: the segments hold every entry
    done = time.perf_counter()
    return {"generate_s": round(split - began, 1), "split_s": round(done - split, 1)}


def run_policy(root: Path, form: str, budget: int) -> dict[str, Any]:
    """Run the policy as a user does; the arrival time of each chunk read (in the nested form,
    of each child's value)."""
    policy, done = ("journal-nested", " delegate(") if form == "nested" else ("journal", " range(")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    env.pop("ANTHROPIC_API_KEY", None)
    began = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "gitspace", "-C", str(root), "--agent",
                             "journal-reader", "run", "--policy", policy, "--budget",
                             str(budget), TASK],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    assert proc.stdout is not None
    reads: list[float] = []
    cpu: list[float] = []
    tail: list[str] = []
    for line in proc.stdout:
        if done in line and "-> ok:" in line and not line.startswith("        "):
            reads.append(time.perf_counter())
            cpu.append(cpu_seconds(proc.pid))
        tail = (tail + [line])[-12:]
    code = proc.wait()
    wall = time.perf_counter() - began
    if code != 0:
        raise SystemExit(f"gitspace run exited {code}:\n{''.join(tail)}")
    [top] = [s for s in json.loads(gitspace(root, "sessions", "--json").stdout)
             if not s.get("parent_session")]
    shown = json.loads(gitspace(root, "sessions", "show", top["session"], "--json").stdout)
    children = [s.stats for s in listing(root) if s.parent_session == top["session"]]
    return {"wall_s": wall, "reads": reads, "cpu": cpu, "began": began, "session": shown,
            "ops": len(shown["ops"]), "children": children}


def cpu_seconds(pid: int) -> float:
    """CPU the run has used so far, its finished children (scripts, git) included: unlike wall
    time, it does not grow with the load other processes put on the machine."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return float("nan")
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def _window(gaps: int) -> int:
    """Chunks in each measured window: CHUNKS_MEASURED, or a quarter of a short run."""
    return max(1, min(CHUNKS_MEASURED, gaps // 4))


def per_chunk(times: list[float]) -> tuple[float, float]:
    """Median seconds per chunk over the first and the last CHUNKS_MEASURED chunks (the first
    chunk's own time, which includes finding and peeking at the log, left out)."""
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    if not gaps:
        return 0.0, 0.0
    n = _window(len(gaps))
    return statistics.median(gaps[:n]), statistics.median(gaps[-n:])


def per_chunk_mean(totals: list[float]) -> tuple[float, float]:
    """Mean seconds per chunk over ``per_chunk``'s windows, from running totals. The CPU clock
    ticks in 10 ms, a tenth of a chunk, so a median of single chunks moves in whole ticks; the
    mean over a window does not."""
    if len(totals) < 2:
        return 0.0, 0.0
    n = _window(len(totals) - 1)
    return (totals[n] - totals[0]) / n, (totals[-1] - totals[-1 - n]) / n


def one_case(base: Path, density: str, entries: int, form: str, budget: int) -> dict[str, Any]:
    root = base / f"{form}-{density.replace('/', '-')}-{entries}"
    load_before = os.getloadavg()[0]
    log(f"{form}, {density} density, {entries:,} entries: preparing")
    setup = prepare(root, entries, DENSITIES[density])
    log(f"  generated in {setup['generate_s']} s, split in {setup['split_s']} s; running")
    ran = run_policy(root, form, budget)
    start, end = per_chunk(ran["reads"])
    cpu_start, cpu_end = per_chunk(ran["cpu"])
    mean_start, mean_end = per_chunk_mean(ran["cpu"])
    stats = ran["session"]["stats"]
    tree = summary_tree.check(root, fanout=FANOUT, cap=CAP, entries=entries)
    chunks = max(tree.leaves, 1)
    kids = ran["children"]
    row = {
        "form": form, "density": density, "entries": entries, **setup,
        "wall_s": round(ran["wall_s"], 1), "chunks": tree.leaves,
        "chunk_start_ms": round(start * 1000), "chunk_end_ms": round(end * 1000),
        "end_over_start": round(end / start, 2) if start else None,
        "cpu_start_ms": round(cpu_start * 1000), "cpu_end_ms": round(cpu_end * 1000),
        "cpu_end_over_start": round(cpu_end / cpu_start, 2) if cpu_start else None,
        "cpu_mean_start_ms": round(mean_start * 1000, 1), "cpu_mean_end_ms": round(mean_end * 1000, 1),
        "cpu_mean_end_over_start": round(mean_end / mean_start, 2) if mean_start else None,
        "model_calls_per_chunk": round(ran["session"]["steps"] / chunks, 2),
        "ops_per_chunk": round(ran["ops"] / chunks, 2),
        "peak_conversation": stats["peak_request"], "budget": budget,
        "largest_result": stats["largest_result"], "characters_read": stats["bytes_read"],
        "compactions": stats["compactions"], "children": len(kids),
        "child_peak_max": max((k.peak_request for k in kids), default=0),
        "child_read_max": max((k.bytes_read for k in kids), default=0),
        "largest_summary": tree.largest[0], "largest_summary_file": tree.largest[1],
        "tree_depth": tree.depth, "period_summaries": tree.nodes,
        "covers_every_entry": tree.ok and tree.entries == entries,
        "problems": tree.problems[:5],
        "load": [round(load_before, 1), round(os.getloadavg()[0], 1)],
    }
    log(f"  {row['wall_s']} s, {row['chunks']:,} chunks, {row['chunk_start_ms']} -> "
        f"{row['chunk_end_ms']} ms per chunk, peak {row['peak_conversation']:,}, covers every "
        f"entry: {row['covers_every_entry']}")
    return row


def table(rows: list[dict[str, Any]]) -> str:
    head = ("form", "density", "entries", "wall", "chunks", "ms/chunk start", "end", "end/start",
            "CPU ms/chunk start", "end", "end/start", "CPU mean start", "end", "end/start",
            "calls/chunk", "ops/chunk", "peak conv.",
            "largest result", "chars read", "compactions", "children", "child peak max",
            "largest summary",
            "depth", "covers all", "load")
    lines = [" | ".join(head), " | ".join("-" * len(h) for h in head)]
    for r in rows:
        lines.append(" | ".join(str(v) for v in (
            r["form"], r["density"], f"{r['entries']:,}", f"{r['wall_s']:,} s",
            f"{r['chunks']:,}",
            r["chunk_start_ms"], r["chunk_end_ms"], r["end_over_start"],
            r["cpu_start_ms"], r["cpu_end_ms"], r["cpu_end_over_start"],
            r["cpu_mean_start_ms"], r["cpu_mean_end_ms"], r["cpu_mean_end_over_start"],
            r["model_calls_per_chunk"], r["ops_per_chunk"],
            f"{r['peak_conversation']:,} / {r['budget']:,}", f"{r['largest_result']:,}",
            f"{r['characters_read']:,}", r["compactions"], f"{r['children']:,}",
            f"{r['child_peak_max']:,}",
            f"{r['largest_summary']:,}", r["tree_depth"], r["covers_every_entry"],
            f"{r['load'][0]}-{r['load'][1]}")))
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="2048,100000,1000000",
                        help="entry counts, comma-separated")
    parser.add_argument("--densities", default=",".join(DENSITIES),
                        help="sample and/or 137/day, comma-separated")
    parser.add_argument("--nested-sizes", default="2048,20000", help=(
        "entry counts for the nested form too (each chunk a delegated child in a worktree of its "
        "own, checked out whole); empty for none"))
    parser.add_argument("--budget", type=int, default=BUDGET, help=(
        "the run's --budget: conversation characters before compaction (default: gitspace run's)"))
    parser.add_argument("--json", action="store_true", help="JSON on stdout, the table on stderr")
    parser.add_argument("--keep", action="store_true", help="keep the workspaces")
    ns = parser.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    base = Path(tempfile.mkdtemp(prefix="journal-", dir=WORK))
    hermetic(base)
    rows = []
    try:
        cases = [("flat", int(s)) for s in ns.sizes.split(",")]
        cases += [("nested", int(s)) for s in ns.nested_sizes.split(",") if s]
        for form, size in sorted(cases, key=lambda c: (c[1], c[0])):
            for density in ns.densities.split(","):
                rows.append(one_case(base, density, size, form, ns.budget))
    finally:
        if rows:
            emit(table(rows), rows, ns.json)
        finish(base, ns.keep)


if __name__ == "__main__":
    main()
