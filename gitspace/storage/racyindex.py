"""Racily clean index entries, and settling them so that ``git status`` stops re-reading them.

git trusts an index entry's stat data only if its file last changed before the index was written.
git here is built without USE_NSEC, so it compares whole seconds: an entry whose recorded mtime is
not in an earlier second than the index file's own mtime is *racy*, and every ``git status``
re-hashes its file. An op writes its files and then the index within one second, so what it wrote
stays racy until the index is written again; and gitspace runs status with
``--no-optional-locks``, so git never refreshes the index for it. After ``split_worklog`` wrote a
127 MiB log as 1,019 segments, every status re-read all 127 MiB.

Invariant: ``settle`` never hides a modification. It writes the index only once the clock has
left the second of every racy entry (with a margin for the kernel's coarse file clock; and a
stamp on a whole second, which a file system that keeps whole seconds, or two as FAT does, would
give, is taken to cover the two seconds from it), and in
the index it writes, every entry that was racy is either
- *verified*: its file (no link among its folders; the file itself opened without following a
  link) is of the entry's type and executable bit, did not change while it was read (fstat
  before and after), last changed in a past second, and its content hashes to the entry's blob.
  Its stat data is recorded from that read. Any later change stamps a later second (mtime, or
  ctime for a write that sets mtime back), which git's comparison sees; or
- *smudged*: its recorded size set to 0 (git's own mark), so git compares its content on every
  status, as it did while the entry was racy.
An index with a racy entry that is not one plain stage-0 entry (a conflict, skip-worktree,
intent-to-add) is left to git. ``settle`` runs under the caller's op lock; a git process writing
the index meanwhile makes it give up (IndexLocked, IndexChanged), leaving the index as it was:
slow, never wrong.

``unseen_changes`` is the same rule for the index an op writes (git's own writer applies it too):
an entry that was racy and that the new index makes git trust is checked once, and smudged if its
file changed unseen; copied byte for byte, it would hide that change from git for good.

Cost: ``racy`` reads a version of the index once; after that, each op's writer ``carry``-s the
answer over to the index it stores, from the entries racy before and the paths it changed, and
``unseen_changes`` looks at those alone, so neither grows with the index.
"""

from __future__ import annotations

import hashlib
import os
import stat as statmod
import time
from collections.abc import Iterator
from pathlib import Path

from . import gitindex
from .loose import EXEC_MODE, FILE_MODE, LINK_MODE
from .records import record

SETTLE_BYTES = 1 << 20  # racy bytes worth an index rewrite: each status re-reads them
SETTLE_ENTRIES = 256  # ... or racy files: each costs status an open and a read
_CLOCK_SLACK_NS = 50_000_000  # file times come from a coarse clock, a tick or so behind
_BLOCK = 1 << 20
NS = 1_000_000_000


@record(frozen=True)
class Racy:
    """The racy entries of one index file (as identified by ``identity``)."""

    identity: tuple[int, ...]
    entries: int
    size: int  # bytes their files had when recorded
    newest: int  # the latest second one of them was recorded in
    plain: bool  # all of them plain stage-0 entries (settle handles no other kind)
    paths: frozenset[bytes] = frozenset()  # which they are

    def worth_settling(self) -> bool:
        return self.plain and (self.size >= SETTLE_BYTES or self.entries >= SETTLE_ENTRIES)

    def settled_by_now(self) -> bool:
        """Has the file clock left every racy entry's second? (Only then can settling help.)"""
        return _now_second() > self.newest


_found: dict[str, Racy] = {}  # index path -> what its current version holds


def _now_second() -> int:
    return (time.time_ns() - _CLOCK_SLACK_NS) // NS


def last_second(mtime_s: int, mtime_ns: int, ctime_s: int, ctime_ns: int) -> int:
    """The last second a file's stamps may stand for. git (built without USE_NSEC) reads whole
    seconds, so a fine stamp stands for its own second. A stamp with no fraction at all may come
    from a file system that keeps whole seconds or only even ones (FAT): a write two seconds
    later could still carry it, so it stands for the next second too."""
    newest = max(mtime_s, ctime_s)
    return newest + 1 if mtime_ns == 0 and ctime_ns == 0 else newest


def racy(index_path: Path) -> Racy | None:
    """The racy entries of the index at ``index_path`` (None: no index, or one git alone reads).
    Worked out once per version of the file."""
    try:
        st = os.stat(index_path)
    except OSError:
        return None
    identity = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    known = _found.get(str(index_path))
    if known is not None and known.identity == identity:
        return known
    try:
        index = gitindex.load(index_path, copy=False)  # (only read here)
    except (OSError, gitindex.IndexUnsupported):
        return None
    if index.origin is None or len(index.origin) != 4:
        return None
    found = _summary(index, index.paths)
    _found[str(index_path)] = found
    return found


def known(index_path: Path, identity: tuple[int, ...] | None) -> Racy | None:
    """What ``racy`` found in the version of the index that has ``identity``, if it is known
    without reading the file: worked out by ``racy``, or carried over by ``carry``."""
    found = _found.get(str(index_path))
    return found if found is not None and found.identity == identity else None


def carry(index_path: Path, index: gitindex.Index, before: Racy | None,
          touched: set[bytes]) -> None:
    """After a writer stored ``index`` with only the paths ``touched`` changed since the version
    it loaded (whose racy entries were ``before``): its racy entries, from those paths alone. An
    entry neither racy before nor touched was recorded before the second of the version loaded,
    so before the second of this one too: an op costs what it changed, not an index's length.
    ``before`` unknown: forgotten, worked out afresh by the next ``racy``."""
    if before is None or index.origin is None or len(index.origin) != 4:
        _found.pop(str(index_path), None)
        return
    _found[str(index_path)] = _summary(index, sorted(before.paths | touched))


def _summary(index: gitindex.Index, paths: list[bytes]) -> Racy:
    """The racy entries among ``paths`` of ``index``."""
    assert index.origin is not None
    entries = size = newest = 0
    plain = True
    racy_paths = []
    for path, raw, fields in _racy_entries(index, paths):
        entries, size = entries + 1, size + fields[9]
        newest = max(newest, last_second(fields[2], fields[3], fields[0], fields[1]))
        plain = plain and gitindex.plain_entry(raw) and path not in index.extra_stages
        racy_paths.append(path)
    return Racy(index.origin, entries, size, newest, plain, frozenset(racy_paths))


def _racy_entries(index: gitindex.Index, paths: list[bytes] | None = None,
                  ) -> Iterator[tuple[bytes, bytes, tuple[int, ...]]]:
    """(path, raw entry, stat data) of each entry (of ``paths``, by default all) git would not
    trust: recorded in the second the index was written or later. (A submodule is never racy
    for git.)"""
    assert index.origin is not None
    stamp = index.origin[2] // NS
    for path in index.paths if paths is None else paths:
        raw = index.raw.get(path)
        if raw is None:
            continue  # (removed)
        fields = gitindex.stat_data(raw)
        if fields[2] >= stamp and fields[6] in (FILE_MODE, EXEC_MODE, LINK_MODE):
            yield path, raw, fields


@record(frozen=True)
class Settled:
    verified: int
    smudged: int


def settle(index_path: Path, root: Path, *, private: bool = False) -> Settled | None:
    """Verify or smudge every racy entry and write the index again (see the module docstring).
    The caller holds the op lock. None: nothing written (not yet possible, or git was busy)."""
    try:
        index = gitindex.load(index_path)
    except (OSError, gitindex.IndexUnsupported):
        return None
    if index.origin is None or len(index.origin) != 4:
        return None
    now = _now_second()
    todo = []
    for path, raw, fields in _racy_entries(index):
        if last_second(fields[2], fields[3], fields[0], fields[1]) >= now \
                or not gitindex.plain_entry(raw) or path in index.extra_stages:
            return None  # too soon, or an entry only git should rewrite
        todo.append((path, raw, fields))
    verified = smudged = 0
    folders: dict[bytes, bool] = {}
    for path, raw, fields in todo:
        st = _verify(root, path, fields[6], gitindex.entry_sha(raw), now, folders)
        if st is None:
            index.raw[path] = gitindex.smudged(raw)
            index.changed.add(path)
            smudged += 1
        else:
            index.set(os.fsdecode(path), gitindex.entry_sha(raw), fields[6], st)
            verified += 1
    try:
        gitindex.store(index_path, index, split=index.shared is not None, private=private)
    except (OSError, gitindex.IndexLocked, gitindex.IndexChanged):
        gitindex.forget(index_path)
        return None
    return Settled(verified, smudged)


def _identity(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_dev, st.st_ino, st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _plain_folders(root: bytes, path: bytes, folders: dict[bytes, bool]) -> bool:
    """No link and nothing but folders on the way from ``root`` to ``path`` (memoised)."""
    cut = path.rfind(b"/")
    if cut < 0:
        return True
    parent = path[:cut]
    if parent not in folders:
        try:
            ok = statmod.S_ISDIR(os.lstat(os.path.join(root, parent)).st_mode)
        except OSError:
            ok = False
        folders[parent] = ok and _plain_folders(root, parent, folders)
    return folders[parent]


def _verify(root: Path, path: bytes, mode: int, sha: str, now: int,
            folders: dict[bytes, bool]) -> os.stat_result | None:
    """The stat of the file at ``path`` if it provably holds blob ``sha`` as a ``mode`` entry and
    last changed before second ``now``; None otherwise."""
    base = os.fsencode(root)
    full = os.path.join(base, path)
    try:
        if not _plain_folders(base, path, folders):
            return None
        st = os.lstat(full)
    except OSError:
        return None
    if last_second(*divmod(st.st_mtime_ns, NS), *divmod(st.st_ctime_ns, NS)) >= now:
        return None  # changed in this very second (or granule): it could change again unseen
    if mode == LINK_MODE and not statmod.S_ISLNK(st.st_mode) or mode != LINK_MODE and (
            not statmod.S_ISREG(st.st_mode) or bool(st.st_mode & 0o100) != (mode == EXEC_MODE)):
        return None
    return st if _blob_sha(full, st) == sha else None


def _blob_sha(full: bytes, st: os.stat_result) -> str | None:
    """The blob id of what ``full`` holds, a link or a regular file as ``st`` says, never through
    a link; None when it cannot be read or changed while it was read."""
    try:
        if statmod.S_ISLNK(st.st_mode):
            data = os.readlink(full)
            if _identity(os.lstat(full)) != _identity(st):
                return None
            return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
        fd = os.open(full, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if _identity(os.fstat(fd)) != _identity(st):
            return None
        digest = hashlib.sha1(b"blob %d\0" % st.st_size)
        read = 0
        while chunk := os.read(fd, _BLOCK):
            digest.update(chunk)
            read += len(chunk)
        if read != st.st_size or _identity(os.fstat(fd)) != _identity(st):
            return None
        return digest.hexdigest()
    except OSError:
        return None
    finally:
        os.close(fd)


# ---------------------------------------------------------------- when an op writes the index

def unseen_changes(root: Path, index: gitindex.Index, since: int, until: int,
                   among: frozenset[bytes] | None = None) -> list[bytes]:
    """What git's own index writer smudges (``ce_smudge_racily_clean_entry``): the entries that
    were racy in the index as loaded (stamped second ``since``) and that the index just written
    (second ``until``) makes git trust, whose file git's stat comparison would take for unchanged
    although its content is not the entry's blob. A file changed in the entry's own second, with
    the same size, is such a file; copied byte for byte into a later index it would stay hidden
    from ``git status`` for good. Only entries whose second lies in [since, until) are read: each
    file an op writes is looked at about once, by the first op of a later second. ``among``: the
    entries that were racy in the index as loaded (``known``) and those written since: no other
    entry can lie in that range, so no other is looked at."""
    if until <= since:
        return []
    base = os.fsencode(root)
    found = []
    for path in index.paths if among is None else sorted(among):
        raw = index.raw.get(path)
        if raw is None:
            continue  # (removed)
        if not since <= int.from_bytes(raw[8:12], "big") < until:
            continue
        fields = gitindex.stat_data(raw)
        if fields[6] not in (FILE_MODE, EXEC_MODE, LINK_MODE) or fields[9] == 0:
            continue  # a submodule, or size 0 (smudged, or empty: any write changes its size)
        full = os.path.join(base, path)
        try:
            st = os.lstat(full)
        except OSError:
            continue  # gone: git sees that
        if not _git_trusts(fields, st):
            continue  # git sees a change by stat alone
        if _blob_sha(full, st) != gitindex.entry_sha(raw):  # (unreadable counts as changed)
            found.append(path)
    return found


def _git_trusts(fields: tuple[int, ...], st: os.stat_result) -> bool:
    """Would git take the file for unchanged by its stat data (whole seconds, as built here)?"""
    m = 0xFFFFFFFF
    kind = LINK_MODE if statmod.S_ISLNK(st.st_mode) else (
        EXEC_MODE if statmod.S_ISREG(st.st_mode) and st.st_mode & 0o100 else
        FILE_MODE if statmod.S_ISREG(st.st_mode) else 0)
    return (fields[0], fields[2], fields[5], fields[6], fields[7], fields[8], fields[9]) == (
        (st.st_ctime_ns // NS) & m, (st.st_mtime_ns // NS) & m, st.st_ino & m, kind,
        st.st_uid & m, st.st_gid & m, st.st_size & m)
