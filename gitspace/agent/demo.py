"""The demo: two agents work a fresh copy of the sample workspace through the real tool loop.

Offline (the default) the maze and journal policies play the model's part; with an API key and a
model name, Claude does, on the same tasks. The closing summary says where each figure comes
from: the maze and chunk counts from the git history (ops and tags), the entries from the summary
files the agent committed, and what the agent read from its saved session.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..api import init
from ..api import open as open_ws
from ..core import checkpoints, timeline
from ..core.workspace import Workspace
from ..errors import GitspaceError
from . import calltree, runner
from .loop import Loop, LoopOptions, RunOutcome
from .model import ModelClient
from .policies.journal_tree import FOLDER, LEAF
from .session import Session, listing


def _sample() -> Path:
    """The demo workspace: the copy installed with the package (gitspace/_sample, from a wheel),
    or the source tree's sample_workspace/ (an editable install)."""
    package = Path(__file__).resolve().parents[1]
    installed = package / "_sample"
    return installed if installed.is_dir() else package.parent / "sample_workspace"


SAMPLE = _sample()
JOURNAL = "journal/worklog.jsonl"

MAZE_TASK = ("Escape the maze in maze/. You cannot see the map: use look and move. Checkpoint at "
             "every junction and restore the latest checkpoint at a dead end.")
JOURNAL_TASK = (f"Summarise {JOURNAL} chunk by chunk: one summary file per chunk under summaries/, "
                "rolled up into period summaries, then summaries/index.md, a synthesis that "
                "indexes them. Never read the whole log.")

Echo = Callable[[str], None]


@dataclass
class Figures:
    """What the demo did, counted from the repository."""

    moves: int = 0
    restores: int = 0
    checkpoints: int = 0
    dead_ends: int = 0
    final_path: int = 0
    entries: int = 0
    chunks: int = 0
    ops: int = 0
    journal_bytes: int = 0
    bytes_read: int = 0
    largest_result: int = 0
    peak_request: int = 0
    compactions: int = 0
    calls: list[tuple[Session, int]] = field(default_factory=list)  # the journal's call tree
    outcomes: dict[str, RunOutcome] = field(default_factory=dict)


def run_demo(directory: Path | None, echo: Echo, *, model: str | None = None,
             api_key: str | None = None, base_url: str | None = None,
             command: str = "gitspace") -> Figures:
    """Run both agents on a fresh copy of the sample workspace in ``directory`` (None: a new
    temporary folder) and report; ``command`` is how the reader runs gitspace, as the commands
    the report ends with spell it."""
    temporary = directory is None
    target = _prepare(directory)
    echo(f"Workspace: {target} (a fresh copy of sample_workspace)")
    if model:
        echo(f"Model: {model} through the Anthropic API.")
    else:
        echo("Offline: scripted policies play the model's part through the real loop and tools "
             "(no model is called).")
    init(target, agent="demo").close()

    def client(policy: str) -> ModelClient:
        if model:
            return runner.make_client(model=model, api_key=api_key, base_url=base_url)
        return runner.make_client(policy=policy)

    figures = Figures()
    echo("\n== maze-runner: escape the maze ==")
    figures.outcomes["maze"] = _run(target, "maze-runner", client("maze"), MAZE_TASK,
                                    LoopOptions(max_steps=80), echo)
    echo("\n== journal-reader: summarise two years of worklog, one delegated agent per chunk ==")
    figures.outcomes["journal"] = _run(target, "journal-reader", client("journal-nested"),
                                       JOURNAL_TASK,
                                       LoopOptions(max_steps=300, budget=20_000, keep_last=4), echo)
    with open_ws(target) as ws:
        _count(ws, figures)
        _report(ws, figures, echo, command)
    if temporary:
        echo(f"\nThe demo workspace is a temporary folder; remove it when you are done:\n"
             f"  rm -rf {target.parent}")
    return figures


def _prepare(directory: Path | None) -> Path:
    target = Path(directory) if directory else Path(tempfile.mkdtemp(prefix="gitspace-demo-")) / "ws"
    if target.exists() and any(target.iterdir()):
        raise GitspaceError(f"{target} is not empty.", hint="Pass --dir with a new folder.")
    if not SAMPLE.is_dir():
        raise GitspaceError(f"The sample workspace is missing ({SAMPLE}).",
                            hint="Run the demo from a gitspace source checkout.")
    shutil.copytree(SAMPLE, target, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return target


def _run(root: Path, agent: str, client: ModelClient, task: str, options: LoopOptions,
         echo: Echo) -> RunOutcome:
    def show(event: object) -> None:
        line = runner.describe(event)  # type: ignore[arg-type]
        if line:
            echo(line)

    with open_ws(root, agent=agent) as ws:
        outcome = Loop(ws, client, options, show).start(task)
    echo(f"  -> {outcome.status} after {outcome.calls} model calls: {outcome.text}")
    return outcome


def _count(ws: Workspace, f: Figures) -> None:
    entries = timeline.timeline(ws, None)
    tools = [(e.op.tool, e.op.agent, e.op.args) for e in entries if e.op]
    f.ops = sum(1 for _, agent, _ in tools if agent in ("maze-runner", "journal-reader"))
    f.moves = sum(1 for tool, _, _ in tools if tool == "move")
    f.restores = sum(1 for tool, agent, _ in tools if tool == "restore" and agent == "maze-runner")
    f.checkpoints = sum(1 for cp in checkpoints.listing(ws) if cp.agent == "maze-runner")
    f.dead_ends = f.restores  # the search restores the latest junction at every dead end
    f.final_path = _final_path(ws)
    summaries = [str(args.get("path", "")) for tool, _, args in tools if tool == "create"]
    f.chunks = sum(1 for p in summaries if LEAF.fullmatch(p))
    f.entries = _entries_summarised(ws)
    f.journal_bytes = (ws.root / JOURNAL).stat().st_size
    stats = f.outcomes["journal"].session.stats
    f.bytes_read, f.largest_result = stats.bytes_read, stats.largest_result
    f.peak_request, f.compactions = stats.peak_request, stats.compactions
    journal = f.outcomes["journal"].session.id
    f.calls = [(s, depth) for s, depth in calltree.ordered(listing(ws.root))
               if s.id == journal or s.parent_session == journal]


def _final_path(ws: Workspace) -> int:
    import json

    try:
        return int(json.loads((ws.root / "maze" / "position.json").read_text())["moves"])
    except (OSError, ValueError, KeyError):
        return 0


def _entries_summarised(ws: Workspace) -> int:
    """Entries the chunk summaries account for (each has an 'Entries: N' line)."""
    import re

    total = 0
    for path in sorted((ws.root / FOLDER).glob("*/*.md")):
        if LEAF.fullmatch(path.relative_to(ws.root).as_posix()):
            found = re.search(r"^Entries: ([\d,]+)", path.read_text(encoding="utf-8"), re.M)
            total += int(found.group(1).replace(",", "")) if found else 0
    return total


def _call_tree(tree: list[tuple[Session, int]], echo: Echo, shown: int = 4) -> None:
    """The journal's sessions as a tree: the parent, then its first children, then a count."""
    echo("\nCall tree of the journal (gitspace sessions):")
    for s, depth in tree[:shown + 1]:
        value = s.value if isinstance(s.value, dict) else {}
        said = (f"returned {value.get('entries')} entries, {value.get('start')} to "
                f"{value.get('end')}" if value else f"{s.steps} model calls, {s.status}")
        echo(f"  {'  ' * depth}{'-> ' if depth else ''}{s.id}  {said}")
    if len(tree) > shown + 1:
        echo(f"    ... and {len(tree) - shown - 1} more children")


def _report(ws: Workspace, f: Figures, echo: Echo, command: str) -> None:
    echo("\nTimeline (newest first; the op ids as gitspace log shows them):")
    for e in timeline.timeline(ws, None):
        mark = f"  [checkpoint {', '.join(e.checkpoints)}]" if e.checkpoints else ""
        tool = e.op.tool if e.op else "commit"
        echo(f"  {e.short} {e.agent:<14} {tool:<12} {e.subject[:60]}{mark}")
    echo("\nCheckpoints:")
    for cp in checkpoints.listing(ws):
        echo(f"  {cp.name:<12} -> {cp.commit[:12]} on {cp.branch} by {cp.agent}")

    def ratio(n: int) -> str:
        return f"{n:,} characters ({n / max(f.journal_bytes, 1):.1%} of the journal)"

    echo("\nSummary:")
    echo(f"  maze (git log, tags): {f.moves} moves, {f.dead_ends} dead ends, {f.checkpoints} "
         f"checkpoints, {f.restores} restores; the way out is {f.final_path} moves long")
    echo(f"  journal (git log, summaries/): {f.entries:,} entries in {f.chunks} chunks; journal "
         f"size {f.journal_bytes:,} bytes")
    echo(f"  reading (the saved session): agent read {ratio(f.bytes_read)}; largest tool result "
         f"{ratio(f.largest_result)}")
    echo(f"  peak conversation {ratio(f.peak_request)}, after {f.compactions} compactions")
    children = [s for s, depth in f.calls if depth > 0]
    if children:
        largest = max(s.stats.peak_request for s in children)
        echo(f"  calls (gitspace sessions): the journal-reader delegated {len(children)} windows, "
             f"each child returning one chunk summary; the largest child conversation was "
             f"{largest:,} characters")
    echo(f"  {f.ops} ops by the two agents, one commit each")
    if children:
        _call_tree(f.calls, echo)
    echo("\nInspect it with git:")
    echo(f"  git -C {ws.root} log --format='%h %an %s'")
    echo(f"  git -C {ws.root} log -1 --format=%B")
    echo(f"  git -C {ws.root} tag -l 'gitspace/*'")
    echo(f"  git -C {ws.root} show --stat HEAD")
    echo(f"  {command} -C {ws.root} log")
    echo("\nSee it in a browser (timeline, graph of the maze, the journal's conversation):")
    echo(f"  {command} ui {ws.root}")
