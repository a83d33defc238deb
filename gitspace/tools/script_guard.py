"""What a constraint script changed, and putting back what was on disk before it ran.

Invariants (the rule is written out in docs/trust.md):
- ``take`` records, before a script runs, what gitspace can see of what the script could change:
  the exact content of every path ``git status`` reports (for files over the size cap a copy
  while a budget lasts, else a stat fingerprint), a fingerprint of every file under
  ``.gitspace/`` (gitspace's own), and the moment the run started.
- ``changes`` reports what differs afterwards. A clean tracked path counts only if its inode
  changed during the run (ctime), and a path of which nothing was recorded counts only then too:
  a file that merely became visible (its ``.gitignore`` changed) is never taken for the script's.
- ``undo`` restores what was on disk before the run, never what the tree says, and destroys
  nothing: whatever the script left at a path is first copied to ``.git/gitspace/undone/<run>/``,
  then the earlier states go back through the one work-tree writer (deletions first, never
  through a link, folders left empty pruned). A path whose earlier content gitspace never held
  (over the cap, unreadable, or unseen) is left as the script left it and named in
  ``Undone.kept``. A path the script did not change is never touched.
"""

from __future__ import annotations

import os
import shutil
import stat as statmod
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..core import paths
from ..core.transaction import disk_state
from ..core.workspace import Workspace
from ..core.writer import COMMITTER, Change
from ..errors import GitspaceError, LockTimeout, WriteFailed
from ..storage import ledger, racyindex, statefiles
from ..storage.files import is_plain
from ..storage.objects import EXEC_MODE, FILE_MODE, LINK_MODE

State = tuple[bytes, int] | None
Print = tuple[int, int, int, int, int]  # (mode, size, mtime_ns, ctime_ns, inode)
OWN = ".gitspace"
# The kernel stamps ctime from a coarse clock (a tick or so behind time.time_ns): a change made
# just after the run started may carry a slightly earlier stamp, so "before the run" means
# comfortably before it.
_CLOCK_SLACK_NS = 50_000_000
ASIDE_CAP = 64 << 20  # bytes: a bigger file the script left is not copied aside (named instead)
_SETTLE_WAIT = 0.2  # seconds a read-only call waits for the op lock to settle the index


class Unknown:
    """The state of a path before the run, when gitspace holds no copy of its content."""

    def __init__(self, existed: bool) -> None:
        self.existed = existed

    def __repr__(self) -> str:
        return f"Unknown(existed={self.existed})"


@dataclass
class Before:
    started_ns: int
    states: dict[str, State] = field(default_factory=dict)  # exact content, None: absent
    prints: dict[str, Print] = field(default_factory=dict)  # existed, content not kept
    copies: dict[str, tuple[Print, Path]] = field(default_factory=dict)  # over the cap, copied
    folder: Path | None = None  # where the copies are

    def discard(self) -> None:
        """Drop the copies (the run is over and they were not needed)."""
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)


@dataclass(frozen=True)
class ScriptChange:
    rel: str
    before: State | Unknown | Path  # Path: a copy of a file over the cap
    after: State  # None: absent, or a folder now (git tracks no folders)


@dataclass
class Undone:
    restored: list[str] = field(default_factory=list)  # back to what was on disk before
    kept: list[str] = field(default_factory=list)  # left as the script left it (no copy)
    aside: Path | None = None  # where what the script left was moved

    def sentence(self) -> str:
        parts = []
        if self.restored:
            parts.append(f"{', '.join(self.restored)} {'was' if len(self.restored) == 1 else 'were'}"
                         " put back as they were before it ran")
        if self.kept:
            parts.append(f"{', '.join(self.kept)} {'was' if len(self.kept) == 1 else 'were'} left "
                         "as the script left it (gitspace keeps no copy of files over the size "
                         "cap, unreadable or ignored)")
        text = "; ".join(parts) or "nothing needed putting back"
        if self.aside is not None:
            text += f"; what the script wrote is kept in {self.aside}"
        return text + "."


def _print(st: os.stat_result) -> Print:
    return (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None


def _stat(ws: Workspace, rel: str) -> os.stat_result | None:
    """The path's own stat, never through a link (a path git status listed: no link above it)."""
    return ws.files.stat(rel) if is_plain(rel) else _lstat(ws.root / rel)


def _read(ws: Workspace, rel: str) -> State:
    """(content, git mode) of a path the script may have touched, read without following links."""
    if is_plain(rel):
        return disk_state(ws.root, rel)
    st = _lstat(ws.root / rel)
    if st is None or not statmod.S_ISREG(st.st_mode):
        return None if st is None or statmod.S_ISDIR(st.st_mode) else (b"", -1)
    fd = os.open(ws.root / rel, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as f:
        return f.read(), EXEC_MODE if st.st_mode & 0o100 else FILE_MODE


def _own_files(root: Path) -> dict[str, os.stat_result]:
    """Every non-folder entry under .gitspace/, never following a link."""
    found: dict[str, os.stat_result] = {}
    top = root / OWN
    if not top.is_dir() or top.is_symlink():
        return found
    for folder, dirs, names in os.walk(top):
        for name in names + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            full = Path(folder, name)
            st = _lstat(full)
            if st is not None:
                found[full.relative_to(root).as_posix()] = st
    return found


def settle(ws: Workspace, *, locked: bool = False) -> None:
    """Settle the index's racy entries when there are many (storage/racyindex.py): each of the
    two ``git status`` calls around a run would re-read every one of them. ``locked``: the caller
    holds the op lock; otherwise it is taken briefly. Best effort: while an op holds the lock, or
    within the second the entries were written, status stays slow and correct."""
    index = ws.repo.gitdir / "index"
    found = racyindex.racy(index)
    if found is None or not found.worth_settling() or not found.settled_by_now():
        return
    if locked:
        ws.writer.settle_index()
        return
    try:
        with ws.writer.locked(timeout=_SETTLE_WAIT):
            ws.writer.settle_index()
    except (LockTimeout, WriteFailed, OSError):
        pass  # an op is running (or the lock cannot be had here): a later call settles them


def take(ws: Workspace, copy_budget: int = 0) -> Before:
    """What the work tree holds before a script runs (see the module docstring). Files over the
    cap are copied aside while ``copy_budget`` bytes last (a mutating script, which may well
    write them, can then be undone exactly); past it they are only fingerprinted."""
    ws.files.whole()  # (a delegated child's work tree fills as it is touched: watched, it is whole)
    _aside_folder(ws)  # before the script runs: a folder no undo could use is refused now
    before = Before(started_ns=time.time_ns())
    for rel in ws.repo.status_paths():
        rel = rel.rstrip("/")  # ("sub/": an untracked nested repository)
        st = _stat(ws, rel)
        if st is not None and statmod.S_ISDIR(st.st_mode):
            continue  # a nested repository or an empty folder: git tracks neither
        if st is not None and statmod.S_ISREG(st.st_mode) and st.st_size > ws.max_file_bytes:
            if st.st_size <= copy_budget:
                copy_budget -= st.st_size
                before.folder = before.folder or _aside(ws)
                kept = before.folder / "before" / rel
                kept.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ws.root / rel, kept, follow_symlinks=False)
                before.copies[rel] = (_print(st), kept)
            else:
                before.prints[rel] = _print(st)  # too big to keep: the user's; never rewritten
            continue
        try:
            before.states[rel] = _read(ws, rel)
        except (OSError, GitspaceError):
            if st is not None:
                before.prints[rel] = _print(st)
    for rel, st in _own_files(ws.root).items():
        before.prints[rel] = _print(st)
    return before


def changes(ws: Workspace, tree: str, before: Before) -> list[ScriptChange]:
    """What the script changed, by path (see the module docstring for what counts)."""
    now_visible = [rel.rstrip("/") for rel in ws.repo.status_paths()]
    own_now = _own_files(ws.root)
    rules_changed = any(rel.rsplit("/", 1)[-1] == ".gitignore" for rel in now_visible) or any(
        rel.rsplit("/", 1)[-1] == ".gitignore" for rel in before.states)
    since = before.started_ns - _CLOCK_SLACK_NS
    found = []
    every = set(before.states) | set(before.prints) | set(before.copies) | set(now_visible)
    for rel in sorted(every | set(own_now)):
        st = own_now.get(rel) or _stat(ws, rel)
        if rel in before.copies:
            if st is None or _print(st) != before.copies[rel][0]:
                found.append(ScriptChange(rel, before.copies[rel][1], _after(ws, rel, st)))
            continue
        if rel in before.prints:
            if st is None or _print(st) != before.prints[rel]:
                found.append(ScriptChange(rel, Unknown(existed=True), _after(ws, rel, st)))
            continue
        touched = st is None or st.st_ctime_ns >= since
        if rel in before.states:
            pre: State | Unknown = before.states[rel]
        else:
            if not touched:
                continue  # its inode did not change during the run: not the script's doing
            entry = ws.repo.entry_at(tree, rel)
            if entry is not None and not entry.is_tree:
                pre = (ws.repo.read_blob(entry.sha), entry.mode)  # clean: disk held the tree's
            elif rel.startswith(OWN + "/") or not rules_changed:
                pre = None  # unseen before and nothing could have hidden it: the script made it
            else:
                pre = Unknown(existed=False)  # maybe an ignored file the new rules uncovered
        post = _after(ws, rel, st)
        if isinstance(pre, Unknown) or pre != post:
            found.append(ScriptChange(rel, pre, post))
    return found


def _after(ws: Workspace, rel: str, st: os.stat_result | None) -> State:
    if st is None or statmod.S_ISDIR(st.st_mode):
        return None
    if statmod.S_ISREG(st.st_mode) and st.st_size > ws.max_file_bytes:
        return (b"", -1)  # (never compared by content: over the cap)
    try:
        return _read(ws, rel)
    except (OSError, GitspaceError):
        return (b"", -1)  # (unreadable: never committed, never restored by content)


def refusal(change: ScriptChange, cap: int) -> str | None:
    """Why a mutating script's change cannot become part of an op, or None."""
    why = paths.owner_refusal(change.rel)
    if why is not None:
        return why[0]
    post = change.after
    mode = None if post is None else post[1]
    reason = paths.git_refusal(change.rel, mode)
    if reason is None and post is not None and post[1] != -1:
        reason = paths.content_refusal(change.rel, post[0])
    if reason is not None:
        return reason
    if post is not None and (post[1] == -1 or len(post[0]) > cap):
        return f"it is over the {cap:,}-byte cap for files gitspace records, or unreadable"
    if isinstance(change.before, Unknown):
        return "gitspace did not know what it held before the script ran (ignored or over the cap)"
    if isinstance(change.before, Path):
        return "it was over the size cap before the script ran, and gitspace records no such file"
    return None


def undo(ws: Workspace, found: list[ScriptChange]) -> Undone:
    """Put back what was on disk before the run (the module docstring says how)."""
    done = Undone()
    aside = _aside(ws)
    restorable = [c for c in found if not isinstance(c.before, Unknown)]
    done.kept = sorted(c.rel for c in found if isinstance(c.before, Unknown))
    for change in restorable:
        if change.after is not None and _keep_aside(ws, change.rel, aside / change.rel):
            done.aside = aside
    # Back through the one work-tree writer: deletions first, never through a link, folders
    # left empty pruned. A name it refuses (a .git spelling) the script can only have made.
    plain = {c.rel: _state_of(c.before) for c in restorable if is_plain(c.rel)}
    written = ws.writer.apply(Change("gitspace: put back a script's changes", COMMITTER,
                                     files=plain, lenient=True))
    for change in restorable:
        if not is_plain(change.rel) and change.before is None:
            _remove_odd(ws.root, change.rel)
            written.append(change.rel)
    done.restored = sorted(written)
    done.kept = sorted(set(done.kept) | {c.rel for c in restorable} - set(written))
    return done


def _state_of(before: State | Unknown | Path) -> State:
    if isinstance(before, Path):  # a copy of a file over the cap
        mode = EXEC_MODE if before.stat().st_mode & 0o100 else FILE_MODE
        return before.read_bytes(), mode
    assert not isinstance(before, Unknown)
    return before


def _keep_aside(ws: Workspace, rel: str, target: Path) -> bool:
    """Copy what the script left at ``rel`` to ``target`` (False: nothing there, or too big)."""
    try:
        st = _stat(ws, rel)
        if st is None or statmod.S_ISDIR(st.st_mode) or st.st_size > ASIDE_CAP:
            return False
        state = _read(ws, rel)
    except (OSError, GitspaceError):
        return False
    if state is None or state[1] == -1:
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    if state[1] == LINK_MODE:
        os.symlink(os.fsdecode(state[0]), target)
    else:
        target.write_bytes(state[0])
    return True


def _remove_odd(root: Path, rel: str) -> None:
    """Remove a file the script made under a name git refuses (``.GIT/x`` on a case-sensitive
    file system), and the folders it leaves empty, if that name is not .git itself here."""
    dotgit = _lstat(root / ".git")
    full = root / rel
    for folder in [full, *full.parents]:
        if folder == root:
            break
        st = _lstat(folder)
        if st is None or dotgit is not None and (st.st_dev, st.st_ino) == (
                dotgit.st_dev, dotgit.st_ino) or folder != full and statmod.S_ISLNK(st.st_mode):
            return  # it is .git, or reached through a link: not the script's to lose
    try:
        os.unlink(full)
    except OSError:
        return
    for folder in full.parents:
        if folder == root:
            break
        try:
            os.rmdir(folder)
        except OSError:
            break


def _aside(ws: Workspace) -> Path:
    """A new folder for one run's set-aside files (never inside the work tree)."""
    return _aside_folder(ws) / ledger.new_op_id()


def _aside_folder(ws: Workspace) -> Path:
    return statefiles.folder(ws.repo.gitdir, "gitspace", "undone")
