"""Benchmark: what a delegated call costs next to the op it wraps, through the agent loop, and
whether a child's start grows with the workspace.

Two scripted policies drive the real loop: ``flat`` makes N ``create`` ops itself; ``nested``
hands each ``create`` to a child with ``delegate`` (a child session, its branch and worktree,
one op, ``return``, the fast-forward join and the clean-up). For each size of ``--sizes``
(default 1,000 and 100,000 files) one workspace is made, its files committed in one commit on
top of ``gitspace init``'s; then both policies run ``--rounds`` times on each, sizes and
policies alternating; the best round of each is kept. Per size the report gives the time per
call of both and their ratio, measured in the same run (the machines are shared and noisy);
a child's start (from its parent's delegate call to the child's first decision: its session,
branch, worktree and workspace; the median over every call), with the machine's load beside
it; and the target: a child's start at the largest size within 1.5x of one at the smallest (a
child's worktree is filled only with what it touches: team/agent_worktrees.py). The rest of a
call (the child's op, the join into the parent's branch and index, the clean-up) is the flat
op's kind of cost. It asserts nothing.

    .venv/bin/python benchmarks/delegate.py [--calls 10] [--rounds 3] [--sizes 1000,100000]
                                            [--json]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _bench  # noqa: E402

import gitspace  # noqa: E402
from gitspace.agent.loop import Loop  # noqa: E402
from gitspace.agent.policies.base import Policy, PolicyCall, Return, Seen  # noqa: E402


def flat(n: int, tag: str = "") -> type[Policy]:
    class Flat(Policy):
        name = "flat"

        def decide(self, task: str, seen: list[Seen]) -> list[PolicyCall] | str | Return:
            done = self.notes.setdefault("done", 0)
            if done == n:
                return "done"
            self.notes["done"] = done + 1
            return [PolicyCall("create", {"path": f"f{done}{tag}.md", "file_text": f"{done}\n"})]
    return Flat


# A child's start: from the moment its parent asks for it (the parent policy's delegate call)
# to its own first decision, as the loop hands it over (session, branch, worktree, workspace).
STARTS: list[float] = []


def nested(n: int, tag: str = "") -> type[Policy]:
    class Nested(Policy):
        name = "nested"

        def decide(self, task: str, seen: list[Seen]) -> list[PolicyCall] | str | Return:
            if task.startswith("write "):  # a child: one op, then its value
                if not seen:
                    STARTS[-1] = time.perf_counter() - STARTS[-1]
                path = task.split()[1]
                return self.finish("", 1) if seen else [PolicyCall("create", {"path": path,
                                                                        "file_text": "x\n"})]
            done = self.notes.setdefault("done", 0)
            if done == n:
                return "done"
            self.notes["done"] = done + 1
            STARTS.append(time.perf_counter())
            return [PolicyCall("delegate", {"task": f"write d{done}{tag}.md",
                                      "returns": {"type": "integer"}})]
    return Nested


def workspace(work: Path, files: int) -> Path:
    """A workspace of ``files`` small files (100 a folder under data/), committed at once."""
    root = work / f"ws-{files}"
    gitspace.init(root, agent="bench").close()
    for i in range(files):
        folder = root / "data" / f"{i // 100:04}"
        if i % 100 == 0:
            folder.mkdir(parents=True)
        (folder / f"{i}.txt").write_text(f"file {i}\n")
    if files:
        for args in (["add", "-A"], ["commit", "-q", "-m", f"{files} files"]):
            subprocess.run(["git", "-c", "user.name=bench", "-c", "user.email=b@b", *args],
                           cwd=root, check=True)
    return root


def one_round(root: Path, policy: type[Policy], n: int) -> float:
    with gitspace.open(root, agent="bench") as ws:
        start = time.perf_counter()
        outcome = Loop(ws, policy()).start("Write the files.")
        elapsed = time.perf_counter() - start
    if outcome.status != "done":
        raise SystemExit(f"{policy.name} ended {outcome.status}: {outcome.text}")
    return elapsed / n


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sizes", default="1000,100000", help="files in each workspace")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    sizes = [int(x) for x in args.sizes.split(",") if x]
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="gitspace-delegate-") as tmp:
        work = Path(tmp)
        _bench.hermetic(work, GITSPACE_PACK_THRESHOLD="0")
        roots = {}
        for files in sizes:
            _bench.log(f"a workspace of {files:,} files ...")
            roots[files] = workspace(work, files)
        best: dict[tuple[int, str], float] = {}
        starts: dict[int, list[float]] = {files: [] for files in sizes}
        for r in range(args.rounds):  # sizes interleaved: the machine's load hits all alike
            for files in sizes:
                for make in (flat, nested):
                    policy = make(args.calls, f"-{r}")  # (each round writes files of its own)
                    STARTS.clear()
                    per_call = one_round(roots[files], policy, args.calls)
                    starts[files] += STARTS
                    key = (files, policy.name)
                    best[key] = min(best.get(key, per_call), per_call)
                    _bench.log(f"  round {r + 1}, {files:,} files: {policy.name} "
                               f"{per_call * 1000:.1f} ms a call")
        for files in sizes:
            rows.append({"files": files, "flat_ms": round(best[files, "flat"] * 1000, 1),
                         "nested_ms": round(best[files, "nested"] * 1000, 1),
                         "ratio": round(best[files, "nested"] / best[files, "flat"], 2),
                         "start_ms": round(statistics.median(starts[files]) * 1000, 1),
                         "load": round(os.getloadavg()[0], 2)})
    growth = rows[-1]["start_ms"] / rows[0]["start_ms"]
    report: dict[str, Any] = {"calls": args.calls, "rounds": args.rounds, "rows": rows,
                              "start_growth": round(growth, 2), "holds": growth <= 1.5}
    table = [f"{args.calls} calls, best of {args.rounds} rounds (a child's start: the median)",
             f"{'files':>9} {'flat ms/call':>13} {'nested ms/call':>15} {'nested/flat':>12} "
             f"{'child start ms':>15} {'load':>6}"]
    table += [f"{r['files']:>9,} {r['flat_ms']:>13.1f} {r['nested_ms']:>15.1f} "
              f"{r['ratio']:>12.2f} {r['start_ms']:>15.1f} {r['load']:>6.2f}" for r in rows]
    table.append(f"a child's start at {rows[-1]['files']:,} files / at {rows[0]['files']:,}: "
                 f"{growth:.2f}x ({'pass' if growth <= 1.5 else 'FAIL'}: goal at most 1.5x)")
    _bench.emit("\n".join(table), report, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
