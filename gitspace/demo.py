"""The offline demo: a scripted session on a fresh copy of the sample workspace.

Every step goes through ``Workspace.call``, exactly as an agent's tool calls would, and the
printed history is read back from git. (The model-driven demo with offline policies replaces the
scripted steps once the agent runtime lands.)
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import checkpoints, history
from .workspace import Workspace, init

SAMPLE = Path(__file__).resolve().parent.parent / "sample_workspace"

STEPS: list[tuple[str, dict[str, Any]]] = [
    ("peek", {"path": "journal/worklog.jsonl"}),
    ("create", {"path": "notes/plan.md", "file_text": "# Plan\n- [ ] read the journal\n"}),
    ("checkpoint", {"name": "plan-v1", "message": "first plan"}),
    ("str_replace", {"path": "notes/plan.md", "old_str": "- [ ] read", "new_str": "- [x] read"}),
    ("append", {"path": "notes/plan.md", "text": "- [ ] summarise each quarter\n"}),
    ("undo", {}),
    ("redo", {}),
    ("restore", {"name": "plan-v1"}),
    ("branch", {"name": "try-other", "from": "plan-v1"}),
    ("create", {"path": "notes/other.md", "file_text": "another strategy\n"}),
    ("switch", {"name": "main"}),
]


def run_demo(directory: Path | None, echo: Callable[[str], None]) -> Path:
    target = Path(directory) if directory else Path(tempfile.mkdtemp(prefix="gitspace-demo-")) / "ws"
    if target.exists() and any(target.iterdir()):
        from .errors import GitspaceError

        raise GitspaceError(f"{target} is not empty.", hint="Pass --dir with a new folder.")
    if SAMPLE.is_dir():
        shutil.copytree(SAMPLE, target, dirs_exist_ok=True)
    echo(f"Workspace: {target}")
    with init(target, agent="demo") as ws:
        for tool, args in STEPS:
            _step(ws, tool, args, echo)
        _summary(ws, echo)
    return target


def _step(ws: Workspace, tool: str, args: dict[str, Any], echo: Callable[[str], None]) -> None:
    result = ws.call(tool, args)
    short = ", ".join(f"{k}={str(v)[:30]!r}" for k, v in args.items())
    status = f"op {result.op}" if result.op else ("ok" if result.ok else "error")
    first = result.text.splitlines()[0] if result.text else ""
    echo(f"  {tool}({short}) -> {status}: {first}")


def _summary(ws: Workspace, echo: Callable[[str], None]) -> None:
    echo("\nTimeline (newest first):")
    for entry in history.timeline(ws, 50):
        mark = f"  [checkpoint {', '.join(entry.checkpoints)}]" if entry.checkpoints else ""
        tool = entry.op.tool if entry.op else "commit"
        echo(f"  {entry.commit[:10]} {entry.author:<8} {tool:<12} {entry.subject}{mark}")
    echo("\nCheckpoints:")
    for cp in checkpoints.listing(ws):
        echo(f"  {cp.name} -> {cp.commit[:10]} on {cp.branch}")
    echo("\nInspect it with git:")
    echo(f"  git -C {ws.root} log --format='%h %an %s' --all")
    echo(f"  git -C {ws.root} log -1 --format=%B")
    echo(f"  git -C {ws.root} tag -l 'gitspace/*'")
    echo(f"  gitspace -C {ws.root} log")
