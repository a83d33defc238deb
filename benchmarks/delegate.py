"""Benchmark: what a delegated call costs next to the op it wraps, through the agent loop.

Two scripted policies drive the real loop on fresh workspaces in a temporary folder: ``flat``
makes N ``create`` ops itself; ``nested`` hands each ``create`` to a child with ``delegate``
(a child session, its branch and worktree, one op, ``return``, the fast-forward join and the
clean-up). Each runs ``--rounds`` times, alternating, and the best round of each is kept. The
report is the time per call and the ratio nested / flat measured in the same run (the machines
are shared and noisy). It asserts nothing.

A child's worktree is a checkout of the whole workspace, so its cost grows with the files there:
``--files N`` first commits N small files (one snapshot op) to every workspace.

    .venv/bin/python benchmarks/delegate.py [--calls 10] [--rounds 3] [--files 0] [--json]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _bench  # noqa: E402

import gitspace  # noqa: E402
from gitspace.agent.loop import Loop  # noqa: E402
from gitspace.agent.policies.base import Call, Policy, Return, Seen  # noqa: E402


def flat(n: int) -> type[Policy]:
    class Flat(Policy):
        name = "flat"

        def decide(self, task: str, seen: list[Seen]) -> list[Call] | str | Return:
            done = self.notes.setdefault("done", 0)
            if done == n:
                return "done"
            self.notes["done"] = done + 1
            return [Call("create", {"path": f"f{done}.md", "file_text": f"{done}\n"})]
    return Flat


def nested(n: int) -> type[Policy]:
    class Nested(Policy):
        name = "nested"

        def decide(self, task: str, seen: list[Seen]) -> list[Call] | str | Return:
            if task.startswith("write "):  # a child: one op, then its value
                path = task.split()[1]
                return self.finish("", 1) if seen else [Call("create", {"path": path,
                                                                        "file_text": "x\n"})]
            done = self.notes.setdefault("done", 0)
            if done == n:
                return "done"
            self.notes["done"] = done + 1
            return [Call("delegate", {"task": f"write d{done}.md", "returns": {"type": "integer"}})]
    return Nested


def one_round(work: Path, policy: type[Policy], n: int, files: int) -> float:
    root = Path(tempfile.mkdtemp(dir=work)) / "ws"
    gitspace.init(root, agent="bench").close()
    for i in range(files):
        folder = root / "data" / f"{i // 100:03}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{i}.txt").write_text(f"file {i}\n")
    with gitspace.open(root, agent="bench") as ws:
        if files:
            assert ws.snapshot().ok
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
    parser.add_argument("--files", type=int, default=0, help="files in each workspace")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="gitspace-delegate-") as tmp:
        work = Path(tmp)
        _bench.hermetic(work, GITSPACE_PACK_THRESHOLD="0")
        best: dict[str, float] = {}
        for r in range(args.rounds):
            for make in (flat, nested):
                policy = make(args.calls)
                per_call = one_round(work, policy, args.calls, args.files)
                best[policy.name] = min(best.get(policy.name, per_call), per_call)
                _bench.log(f"round {r + 1}: {policy.name} {per_call * 1000:.1f} ms per call")
    report: dict[str, Any] = {"calls": args.calls, "rounds": args.rounds, "files": args.files,
                              "flat_ms": round(best["flat"] * 1000, 1),
                              "nested_ms": round(best["nested"] * 1000, 1),
                              "ratio": round(best["nested"] / best["flat"], 2)}
    table = (f"{args.calls} calls, best of {args.rounds} rounds, {args.files} files in the "
             "workspace\n"
             f"  an op made by the agent itself     {report['flat_ms']:8.1f} ms per call\n"
             f"  the same op made by a child        {report['nested_ms']:8.1f} ms per call\n"
             f"  ratio nested / flat                {report['ratio']:8.2f}")
    _bench.emit(table, report, args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
