"""Constraint scripts as tools: discovered per workspace, run with their side effects policed.

Invariants: a read-only script never produces a commit, and if it changed files anyway the change
is undone (script_guard: back to what was on disk before it ran, nothing destroyed) and reported as
an error. gitspace's own read-only scripts, installed outside the workspace, are its code and run
unwatched, as its built-in tools do (``_ours``). A mutating script runs under the workspace lock
and its changes become exactly one op (tool = script name, args recorded, the script's blob id in
``Gitspace-Script``), so it can be undone and replayed; outside changes it touched are committed
first, as for any op. Its writes obey the one path policy (paths.py) as if an agent had made them:
a write into ``.gitspace/``, ``constraints/``, a ``.git`` alias, or over the size cap refuses the
whole op and is undone. A failing mutating script leaves the files as they were. Discovery is
remembered per pair of folders and redone as soon as any file in them changes (name, mode, size,
inode or times); a file changed in the last two seconds is not trusted to stay as stat'ed (git's
racy-index rule), so nothing is remembered until it settles.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

from ..core.identity import Identity
from ..core.result import Result
from ..core.transaction import Outcome, Txn
from ..core.workspace import Workspace
from ..errors import PathRefused, ToolFailed
from ..storage import statefiles
from . import script_guard, script_header, script_runner
from .registry import Tool

COPY_BUDGET = 64 << 20  # bytes of over-cap files copied before a mutating script runs


def builtin_dir() -> Path | None:
    """The built-in scripts: the source tree's constraints/, or the copy installed with us."""
    here = Path(__file__).resolve().parents[1]  # the gitspace package
    for candidate in (here / "_constraints", here.parent / "constraints"):
        if candidate.is_dir():
            return candidate
    return None


Folders = tuple[Path | None, Path]
Stamp = tuple[tuple[str, int, int, int, int, int], ...]
RACY_NS = 2_000_000_000  # a file stat'ed this soon after a change may change again unseen
_REMEMBERED = 32  # pairs of folders whose discovery is kept
_catalogs: OrderedDict[Folders, tuple[Stamp, script_header.Catalog]] = OrderedDict()
_catalogs_lock = threading.Lock()


def catalog(ws: Workspace) -> script_header.Catalog:
    """Every constraint script ``ws`` offers, and every refused declaration."""
    ws.files.stat("constraints")  # (a delegated child's work tree fills as it is touched)
    folders = (builtin_dir(), ws.root / "constraints")
    stamp = _stamp(folders)
    with _catalogs_lock:
        known = _catalogs.get(folders)
        if known is not None and stamp is not None and known[0] == stamp:
            _catalogs.move_to_end(folders)
            return known[1]
    found = script_header.discover(*folders)
    if stamp is not None:
        with _catalogs_lock:
            _catalogs[folders] = (stamp, found)
            while len(_catalogs) > _REMEMBERED:
                _catalogs.popitem(last=False)
    return found


def _stamp(folders: Folders) -> Stamp | None:
    """What discovery depends on: every file of both folders as lstat sees it, or None when a
    file changed too recently for its stat to be trusted."""
    rows = []
    newest = time.time_ns() - RACY_NS
    for number, folder in enumerate(folders):
        try:
            entries = list(os.scandir(folder)) if folder is not None else []
        except (FileNotFoundError, NotADirectoryError):
            entries = []
        except OSError:
            return None
        for entry in entries:
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                return None
            if max(st.st_mtime_ns, st.st_ctime_ns) > newest:
                return None
            rows.append((f"{number}/{entry.name}", st.st_mode, st.st_size, st.st_ino,
                         st.st_mtime_ns, st.st_ctime_ns))
    return tuple(sorted(rows))


def script_tools(ws: Workspace, reserved: set[str]) -> dict[str, Tool]:
    """The workspace's constraint scripts as tools, except those named like a built-in."""
    tools = {}
    for name, script in catalog(ws).scripts.items():
        if name in reserved:
            continue  # a built-in tool's name: reported by 'gitspace tools', never shadowed

        def run(ws: Workspace, args: dict[str, Any], who: Identity, *,
                _script: script_header.Script = script) -> Result:
            return run_script(ws, _script, args, who)

        tools[name] = Tool(name, script.description, script.example, script.args_schema,
                           script.mutates, run, origin=script.origin, script=script)
    return tools


def _cache_dir(ws: Workspace) -> Path:
    # Never a link: the scripts resolve it, and would write their cache wherever it led.
    return statefiles.folder(ws.repo.gitdir, "gitspace", "cache")


def _run(ws: Workspace, script: script_header.Script, args: dict[str, Any],
         now: int | None = None, *, reads_only: bool = False) -> script_runner.RunResult:
    """Run ``script`` where every file of the work tree is on disk (``Files.whole``); one that
    only reads (a built-in read-only script, unwatched) wherever they are (``Files.reader``: a
    delegated child that changed nothing reads its parent's, with its parent's cache)."""
    extra = {"GITSPACE_NOW": str(now)} if now is not None else None
    cwd, gitdir = ws.files.reader() if reads_only else (ws.files.whole(), None)
    cache = statefiles.folder(gitdir, "gitspace", "cache") if gitdir else _cache_dir(ws)
    return script_runner.run(script, args, cwd=cwd, cache_dir=cache, extra_env=extra)


def run_script(ws: Workspace, script: script_header.Script, args: dict[str, Any],
               who: Identity) -> Result:
    if script.mutates:
        return _run_mutating(ws, script, args, who)
    script_guard.settle(ws)  # (for every later git status, whoever runs it)
    result = _run(ws, script, args, reads_only=True) if _ours(ws, script) else \
        _run_watched(ws, script, args)
    if not result.ok:
        raise ToolFailed(result.message(), hint=_failed_hint(script))
    return Result(ok=True, text=result.text, tool=who.tool)


def _ours(ws: Workspace, script: script_header.Script) -> bool:
    """Whether ``script`` is one of gitspace's own read-only scripts, installed outside this
    workspace: gitspace's code, like the built-in tools, whose tests hold it to writing nothing
    but its cache (tests/tools/test_builtin_constraints.py), so its runs are not watched. The
    watch costs two ``git status`` of the whole work tree per call, which grows with the files
    the run itself makes (a journal summarised into 12,000 files: 47 ms of CPU a call, most of
    the growth in its time per chunk)."""
    if script.origin != "builtin":
        return False
    try:
        script.path.resolve().relative_to(ws.root.resolve())
    except ValueError:
        return True
    return False  # (a copy inside the workspace, which its ops can rewrite, is watched)


def _run_watched(ws: Workspace, script: script_header.Script,
                 args: dict[str, Any]) -> script_runner.RunResult:
    """Run a read-only script, then undo whatever it changed anyway (script_guard)."""
    tree = ws.tree()
    before = script_guard.take(ws)
    result = _run(ws, script, args)
    changes = script_guard.changes(ws, tree, before)
    if changes:
        with ws.writer.locked():
            undone = script_guard.undo(ws, changes)
        raise ToolFailed(
            f"{script.name} declares that it does not change files, but it changed "
            f"{', '.join(c.rel for c in changes)}: {undone.sentence()}",
            hint=f"Fix the script, or declare 'mutates: true' in {script.path.name}.",
        )
    return result


def _failed_hint(script: script_header.Script) -> str:
    return (f"{script.name} says what went wrong above; its example call: "
            f"{json.dumps(script.example)}")


def _run_mutating(ws: Workspace, script: script_header.Script, args: dict[str, Any],
                  who: Identity) -> Result:
    script_blob = ws.repo.hash_object("blob", script.path.read_bytes())
    op = who.op(args, script=script_blob)

    def stage(txn: Txn) -> Outcome:
        # One "now" for the script and its commit, so a replay can hand the script the same time.
        now = int(who.clock if who.clock is not None else time.time())
        script_guard.settle(ws, locked=True)
        # A mutating script may well write a big log it was pointed at: copy those first.
        before = script_guard.take(ws, copy_budget=COPY_BUDGET)
        try:
            result = _run(ws, script, args, now)
            changes = script_guard.changes(ws, txn.tree, before)
            return _outcome(ws, txn, script, changes, result, now)
        finally:
            before.discard()

    return ws.transact(op, stage, who.author)


def _outcome(ws: Workspace, txn: Txn, script: script_header.Script,
             changes: list[script_guard.ScriptChange], result: script_runner.RunResult,
             now: int) -> Outcome:
    """The op a mutating script's run makes, or an error with its changes undone."""
    if not result.ok:
        undone = script_guard.undo(ws, changes)
        raise ToolFailed(result.message() + (f" Its changes were undone: {undone.sentence()}"
                                             if changes else ""), hint=_failed_hint(script))
    refused = [(c.rel, why) for c in changes
               if (why := script_guard.refusal(c, ws.max_file_bytes)) is not None]
    if refused:
        undone = script_guard.undo(ws, changes)
        rel, why = refused[0]
        raise PathRefused(
            f"{script.name} wrote {rel}, which it may not: {why}. Nothing was recorded, and its "
            f"changes were undone: {undone.sentence()}",
            hint="Call it with another path; scripts write only what an agent could write.",
        )
    for change in changes:
        assert isinstance(change.before, tuple | None)  # (anything else was refused above)
        txn.already_written(change.rel, change.before, change.after)
    subject = f"{script.name} " + ", ".join(c.rel for c in changes)[:60]
    return Outcome(result.text, subject, when=now)
