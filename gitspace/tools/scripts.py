"""Constraint scripts as tools: discovered per workspace, run with their side effects policed.

Invariants: a read-only script never produces a commit, and if it changed files anyway the change
is undone and reported as an error. A mutating script runs under the workspace lock and its
changes become exactly one op (tool = script name, args recorded, the script's blob id in
``Gitspace-Script``), so it can be undone and replayed; outside changes it touched are committed
first, as for any op. A failing mutating script leaves the files as they were. Discovery is
remembered per pair of folders and redone as soon as any file in them changes (name, mode, size,
inode or times); a file changed in the last two seconds is not trusted to stay as stat'ed (git's
racy-index rule), so nothing is remembered until it settles.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import Any

from ..core.result import Result
from ..core.transaction import Outcome, Txn, disk_state
from ..core.workspace import Workspace
from ..errors import FileRefused, ToolFailed
from ..storage.gitrepo import GitRepo
from . import script_header, script_runner
from .registry import Tool

State = tuple[bytes, int] | None


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

        def run(ws: Workspace, args: dict[str, Any], *, _script: script_header.Script = script,
                **kw: Any) -> Result:
            return run_script(ws, _script, args, **kw)

        tools[name] = Tool(name, script.description, script.example, script.args_schema,
                           script.mutates, run, origin=script.origin, script=script)
    return tools


def _cache_dir(ws: Workspace) -> Path:
    folder = ws.repo.gitdir / "gitspace" / "cache"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _snapshot(ws: Workspace) -> dict[str, State]:
    """Disk state of every path git reports as differing (before a script runs)."""
    before: dict[str, State] = {}
    for rel in ws.repo.status_paths():
        path = ws.root / rel
        if os.path.isfile(path) and os.path.getsize(path) > ws.max_file_bytes:
            before[rel] = None  # too big to keep: it is the user's, and we never rewrite it
            continue
        before[rel] = disk_state(ws.root, rel)
    return before


def _clean_state(repo: GitRepo, tree: str, rel: str) -> State:
    entry = repo.entry_at(tree, rel)
    if entry is None or entry.is_tree:
        return None
    return repo.read_blob(entry.sha), entry.mode


def _changes(ws: Workspace, tree: str, before: dict[str, State]) -> dict[str, tuple[State, State]]:
    """{path: (state before the script, state after)} for paths the script changed."""
    out = {}
    for rel in set(before) | set(ws.repo.status_paths()):
        pre = before[rel] if rel in before else _clean_state(ws.repo, tree, rel)
        post = disk_state(ws.root, rel)
        if pre != post:
            out[rel] = (pre, post)
    return out


def _undo_changes(ws: Workspace, changes: dict[str, tuple[State, State]]) -> None:
    ws.transactions.apply({rel: pre for rel, (pre, _) in changes.items()})  # deletions first


def _run(ws: Workspace, script: script_header.Script, args: dict[str, Any],
         now: int | None = None) -> script_runner.RunResult:
    extra = {"GITSPACE_NOW": str(now)} if now is not None else None
    return script_runner.run(script, args, cwd=ws.root, cache_dir=_cache_dir(ws), extra_env=extra)


def run_script(ws: Workspace, script: script_header.Script, args: dict[str, Any], *,
               tool_use_id: str | None = None, op_id: str | None = None) -> Result:
    if script.mutates:
        return _run_mutating(ws, script, args, tool_use_id=tool_use_id, op_id=op_id)
    tree = ws.tree()
    before = _snapshot(ws)
    result = _run(ws, script, args)
    changes = _changes(ws, tree, before)
    if changes:
        with ws.transactions.lock():
            _undo_changes(ws, changes)
        raise ToolFailed(
            f"{script.name} declares that it does not change files, but it changed "
            f"{', '.join(sorted(changes))}; those changes were undone.",
            hint=f"Fix the script, or declare 'mutates: true' in {script.path.name}.",
        )
    if not result.ok:
        raise ToolFailed(result.message())
    return Result(ok=True, text=result.text, tool=script.name)


def _run_mutating(ws: Workspace, script: script_header.Script, args: dict[str, Any], *,
                  tool_use_id: str | None, op_id: str | None) -> Result:
    script_blob = ws.repo.hash_object("blob", script.path.read_bytes())
    op = ws.new_op(script.name, args, tool_use_id=tool_use_id, op_id=op_id, script=script_blob)

    def stage(txn: Txn) -> Outcome:
        # One "now" for the script and its commit, so a replay can hand the script the same time.
        now = int(ws.clock if ws.clock is not None else time.time())
        before = _snapshot(ws)
        result = _run(ws, script, args, now)
        changes = _changes(ws, txn.tree, before)
        if not result.ok:
            _undo_changes(ws, changes)
            raise ToolFailed(result.message())
        for rel, (pre, post) in changes.items():
            if post is not None and len(post[0]) > ws.max_file_bytes:
                _undo_changes(ws, changes)
                raise FileRefused(f"{script.name} wrote {rel}, over the size cap; undone.")
            txn.disk[rel] = pre
            txn.writes[rel] = post
        return Outcome(result.text, f"{script.name} " + ", ".join(sorted(changes))[:60], when=now)

    return ws.transact(op, stage)
