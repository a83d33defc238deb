"""Benchmark: how little of a big journal an agent has to hold, and what compaction saves.

1. The journal policy (``gitspace/agent/policies/journal.py``) summarises the sample journal on a
   fresh copy of ``sample_workspace`` under ``benchmarks/.work``, with the options the tests use
   (budget 20,000 characters, keep_last 4). Every ratio in its table is against the size of
   ``journal/worklog.jsonl`` measured in the same run, so the numbers stay honest if the journal
   is regenerated.
2. A tiny scripted policy views three ~6,000-character files one after another, then answers; the
   prompt of its last model call is measured before and after ``compaction.compact(keep_last=2)``.
   Tokens are estimated as characters / 4.

It prints a report and asserts nothing: no timing here is a pass or a fail.

    .venv/bin/python benchmarks/agent.py            # the copies are removed afterwards
    .venv/bin/python benchmarks/agent.py --keep     # keep them to look at (path printed)
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import gitspace
from gitspace.agent import compaction
from gitspace.agent.loop import Loop, LoopEvent, LoopOptions
from gitspace.agent.policies.base import Policy, PolicyCall, Seen
from gitspace.agent.policies.journal import JournalPolicy

REPO = Path(__file__).resolve().parent.parent
SAMPLE = REPO / "sample_workspace"
WORK = REPO / "benchmarks" / ".work"  # git-ignored
JOURNAL = "journal/worklog.jsonl"
LONG_FILES = ("notes/long-a.md", "notes/long-b.md", "notes/long-c.md")


class ViewThree(Policy):
    """Views each long file in its own reply, then answers: three long results in the history."""

    name = "view-three"
    tools = ("view",)

    def decide(self, task: str, seen: list[Seen]) -> list[PolicyCall] | str:
        failed = next((s for s in seen if s.is_error), None)
        if failed is not None:
            return f"I stopped: view {failed.input['path']} failed: {failed.text}"
        done = LONG_FILES.index(seen[-1].input["path"]) + 1 if seen else 0
        if done == len(LONG_FILES):
            return f"I read {len(LONG_FILES)} files."
        return [PolicyCall("view", {"path": LONG_FILES[done]})]


def fresh_copy(parent: Path, name: str) -> Path:
    root = parent / name
    shutil.copytree(SAMPLE, root)
    gitspace.init(root, agent="bench").close()
    return root


def journal_run(parent: Path) -> list[tuple[str, str, str]]:
    root = fresh_copy(parent, "journal")
    size = (root / JOURNAL).stat().st_size
    events: list[LoopEvent] = []
    began = time.perf_counter()
    with gitspace.open(root, agent="bench") as ws:
        outcome = Loop(ws, JournalPolicy(), LoopOptions(budget=20_000, keep_last=4, max_steps=200),
                       events.append).start(f"Summarise {JOURNAL}")
    wall = time.perf_counter() - began
    if outcome.status != "done":
        raise SystemExit(f"The journal run ended with {outcome.status}: {outcome.text}")
    ranges = [e for e in events if e.kind == "tool" and e.name == "range" and e.result]
    refused = sum(not e.result.ok for e in ranges if e.result)
    chunks = len(list((root / "summaries").glob("*.md"))) - 1  # index.md is not a chunk
    stats = outcome.session.stats

    def ratio(n: int) -> str:
        return f"{n / size:.2f}x"

    return [
        ("journal size", f"{size:,} bytes", "1.00x"),
        ("read by the agent (all tool results)", f"{stats.bytes_read:,} chars", ratio(stats.bytes_read)),
        ("largest tool result", f"{stats.largest_result:,} chars", ratio(stats.largest_result)),
        ("peak conversation sent", f"{stats.peak_request:,} chars", ratio(stats.peak_request)),
        ("chunks summarised", f"{chunks}", ""),
        ("range windows refused and narrowed", f"{refused} of {len(ranges)}", ""),
        ("model calls", f"{outcome.calls}", ""),
        ("tool calls", f"{stats.tool_calls}", ""),
        ("compactions", f"{stats.compactions}", ""),
        ("wall time", f"{wall:.1f} s", ""),
    ]


def long_text(seed: int, chars: int = 6_000) -> str:
    lines, size, i = [], 0, 0
    while size < chars:
        line = f"Line {i} of file {seed}: notes on the import pipeline, retry policy and error budgets."
        lines.append(line)
        size += len(line) + 1
        i += 1
    return "\n".join(lines) + "\n"


def compaction_run(parent: Path) -> list[tuple[str, str, str]]:
    root = parent / "compaction"
    root.mkdir()
    with gitspace.init(root, agent="bench") as ws:
        for seed, path in enumerate(LONG_FILES):
            result = ws.call("create", {"path": path, "file_text": long_text(seed)})
            if not result.ok:
                raise SystemExit(f"Could not create {path}: {result.text}")
        # A budget this large never compacts, so the session keeps every message as it was sent.
        outcome = Loop(ws, ViewThree(), LoopOptions(budget=10**9, max_steps=10)).start(
            "Read the three long notes.")
    prompt = outcome.session.messages[:-1]  # what the last model call was sent
    before = compaction.size(prompt)
    after = compaction.size(compaction.compact(prompt, keep_last=2))
    results = [len(m["content"][0]["content"]) for m in prompt[2::2]]
    return [
        ("tool results in the prompt (chars)", ", ".join(f"{n:,}" for n in results), ""),
        ("prompt before compaction", f"{before:,} chars (~{before // 4:,} tokens)", "1.00x"),
        ("prompt after compact(keep_last=2)", f"{after:,} chars (~{after // 4:,} tokens)",
         f"{after / before:.2f}x"),
    ]


def table(title: str, rows: list[tuple[str, str, str]]) -> None:
    width = max(len(r[0]) for r in rows)
    value = max(len(r[1]) for r in rows)
    print(f"\n{title}")
    print("-" * (width + value + 14))
    for label, amount, ratio in rows:
        print(f"{label:<{width}}  {amount:>{value}}  {ratio:>8}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true", help="keep the workspaces under benchmarks/.work")
    keep = parser.parse_args().keep
    WORK.mkdir(parents=True, exist_ok=True)
    parent = Path(tempfile.mkdtemp(prefix="agent-", dir=WORK))
    try:
        table("Journal policy (ratios against the journal size measured in this run)",
              journal_run(parent))
        table("Compaction of three long tool results (ratio against the uncompacted prompt)",
              compaction_run(parent))
    finally:
        if keep:
            print(f"\nWorkspaces kept in {parent}")
        else:
            shutil.rmtree(parent, ignore_errors=True)


if __name__ == "__main__":
    main()
