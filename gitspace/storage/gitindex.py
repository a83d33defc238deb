"""Reading and rewriting git's index file (``.git/index``) without GitPython's index path.

Invariant: the file this module writes is an index git reads as if git had written it. Entries
we do not touch are copied byte for byte; entries we replace carry the work-tree file's real stat
data, so ``git status`` stays clean and fast. Optional extensions (cache-tree, untracked cache,
resolve-undo, offset tables) are dropped on write: they are caches git rebuilds. Version 4 and
sparse directories raise ``IndexUnsupported``; the caller then falls back to ``git update-index``.

By default the index is one plain file, which every git client reads: git, libgit2 (GitKraken,
many IDE plugins, through pygit2) and dulwich. The *split* format (git's ``core.splitIndex``:
the bulk of the entries in an immutable ``sharedindex.<sha>`` file, ``.git/index`` holding only
what changed since, with the link extension's delete/replace bitmaps) makes an op write a few
entries instead of the whole file, but libgit2 and dulwich cannot read it. So it is written only
when asked for (``core.splitIndex=true``) on an index of at least ``SPLIT_OPT_IN_AT`` entries,
or on its own above ``SPLIT_AT`` entries unless ``core.splitIndex=false``; the caller decides
(``split=``) and tells the user once when it starts. The changed entries are folded into a new
shared file every ``FOLD_AT`` paths.

Writes follow git's lock protocol: create ``index.lock`` exclusively, write, rename over the
index. A parsed index is cached per file identity (inode, size, mtime, ctime), so an op in a
long-running process does not re-parse a 10,000-entry index.
"""

from __future__ import annotations

import bisect
import os
import struct
import time
from pathlib import Path

from . import ewah, lockfile
from .loose import sha1_digest
from .records import field, record

_HEADER = struct.Struct(">4sLL")
_ENTRY = struct.Struct(">10L20sH")  # ctime s/ns, mtime s/ns, dev, ino, mode, uid, gid, size, sha, flags
_EXTENDED = 0x4000
_NAME_MASK = 0x0FFF
_STAGE_MASK = 0x3000
SPLIT_AT = 100_000  # entries: split without being asked only above this
SPLIT_OPT_IN_AT = 5000  # entries: core.splitIndex=true splits from this size on
FOLD_AT = 256
_SHARED_KEEP_SECONDS = 3600  # old shared files a concurrent reader may still be opening


class IndexUnsupported(Exception):
    """The index uses a feature this writer does not handle; use git itself."""


class IndexLocked(Exception):
    """Another process holds index.lock."""


class IndexChanged(Exception):
    """The index file changed on disk since it was loaded: load it again and redo the change."""


@record(frozen=True)
class Shared:
    """A shared index file: its checksum and where each path's entries sit in it."""

    checksum: str
    positions: dict[bytes, tuple[int, int, bool]]  # path -> (first position, entries, one stage-0)


@record()
class Index:
    """The full index (sorted paths, raw entries per path) and, when split, what changed since
    the shared file."""

    version: int = 2
    paths: list[bytes] = field(default_factory=list)  # sorted
    raw: dict[bytes, bytes] = field(default_factory=dict)  # path -> raw entries (all stages)
    extra_stages: dict[bytes, int] = field(default_factory=dict)  # path -> entries beyond one
    shared: Shared | None = None
    changed: set[bytes] = field(default_factory=set)  # paths that differ from ``shared``
    # Identity of the file ``load`` read it from (() when there was none); None: not loaded from
    # a file, so ``store`` has nothing to compare against.
    origin: tuple[int, ...] | None = None

    def set(self, path: str, sha_hex: str, mode: int, st: os.stat_result | None) -> None:
        key = os.fsencode(path)
        if key not in self.raw:
            bisect.insort(self.paths, key)
        self.raw[key] = _encode_entry(key, bytes.fromhex(sha_hex), mode, st)
        self.extra_stages.pop(key, None)
        self.changed.add(key)

    def remove(self, path: str) -> None:
        key = os.fsencode(path)
        if key in self.raw:
            del self.raw[key]
            self.paths.pop(bisect.bisect_left(self.paths, key))
            self.extra_stages.pop(key, None)
            self.changed.add(key)

    def remove_conflicts(self, path: str) -> None:
        """Remove what cannot stand beside a file at ``path``: entries for its folders (``fd``
        when ``path`` is ``fd/x``) and entries beneath it (``fd/x`` when ``path`` is ``fd``)."""
        key = os.fsencode(path)
        slash = key.find(b"/")
        while slash >= 0:
            self.remove(os.fsdecode(key[:slash]))
            slash = key.find(b"/", slash + 1)
        prefix = key + b"/"
        start = bisect.bisect_left(self.paths, prefix)
        end = bisect.bisect_left(self.paths, key + b"0")  # "0" sorts right after "/"
        for below in self.paths[start:end]:
            del self.raw[below]
            self.extra_stages.pop(below, None)
            self.changed.add(below)
        del self.paths[start:end]

    def entries_of(self, paths: list[str]) -> dict[bytes, tuple[bytes, int] | None]:
        """The raw entries of ``paths`` (and how many stages beyond one), for ``put_back``."""
        saved: dict[bytes, tuple[bytes, int] | None] = {}
        for path in paths:
            key = os.fsencode(path)
            raw = self.raw.get(key)
            saved[key] = None if raw is None else (raw, self.extra_stages.get(key, 0))
        return saved

    def put_back(self, saved: dict[bytes, tuple[bytes, int] | None]) -> None:
        """Make the entries of ``saved``'s paths exactly what ``entries_of`` returned."""
        for key, entry in saved.items():
            if entry is None:
                self.remove(os.fsdecode(key))
                continue
            if key not in self.raw:
                bisect.insort(self.paths, key)
            self.raw[key] = entry[0]
            self.extra_stages.pop(key, None)
            if entry[1]:
                self.extra_stages[key] = entry[1]
            self.changed.add(key)

    def entry_count(self) -> int:
        return len(self.paths) + sum(self.extra_stages.values())

    def encode(self) -> bytes:
        """The whole index as one plain file."""
        raw = self.raw
        body = _HEADER.pack(b"DIRC", self.version, self.entry_count()) + b"".join(
            [raw[p] for p in self.paths])
        return body + sha1_digest(body)

    def encode_split(self) -> bytes:
        """``.git/index`` holding only what changed since ``self.shared``, plus the link extension."""
        assert self.shared is not None
        replaced: list[tuple[int, bytes]] = []
        added: list[tuple[bytes, bytes]] = []
        deleted: list[int] = []
        for path in self.changed:
            where = self.shared.positions.get(path)
            current = self.raw.get(path)
            single = current is not None and path not in self.extra_stages and not (
                _flags(current, 0) & _STAGE_MASK)
            if where is not None and where[1] == 1 and where[2] and single:
                assert current is not None
                replaced.append((where[0], _strip_name(current)))
                continue
            if where is not None:
                deleted.extend(range(where[0], where[0] + where[1]))
            if current is not None:
                added.append((path, current))
        replaced.sort()
        added.sort()
        count = len(replaced) + sum(1 + self.extra_stages.get(p, 0) for p, _ in added)
        link = (bytes.fromhex(self.shared.checksum) + ewah.encode(sorted(deleted))
                + ewah.encode([pos for pos, _ in replaced]))
        body = b"".join([
            _HEADER.pack(b"DIRC", self.version, count),
            *(entry for _, entry in replaced),
            *(entry for _, entry in added),
            b"link", struct.pack(">L", len(link)), link,
        ])
        return body + sha1_digest(body)


def _flags(raw: bytes, off: int) -> int:
    return int(struct.unpack_from(">H", raw, off + 60)[0])


def stat_data(raw: bytes) -> tuple[int, ...]:
    """The stat data an entry records: (ctime s, ns, mtime s, ns, dev, ino, mode, uid, gid,
    size), as git stores them (each truncated to 32 bits)."""
    return tuple(_ENTRY.unpack_from(raw, 0)[:10])


def entry_sha(raw: bytes) -> str:
    return raw[40:60].hex()


def plain_entry(raw: bytes) -> bool:
    """One stage-0 entry without extended flags (skip-worktree, intent-to-add): what ``set``
    writes, so ``set`` may rewrite it."""
    return not _flags(raw, 0) & (_EXTENDED | _STAGE_MASK) and len(raw) == _entry_length(
        raw, 0, 2)[0]


def smudged(raw: bytes) -> bytes:
    """``raw`` with its recorded size set to 0: git's mark for an entry whose stat data cannot
    be trusted (git then compares the file's content on every status)."""
    return raw[:36] + b"\0\0\0\0" + raw[40:]


def _encode_entry(path: bytes, sha: bytes, mode: int, st: os.stat_result | None) -> bytes:
    m = 0xFFFFFFFF
    if st is None:
        fields = (0, 0, 0, 0, 0, 0, mode, 0, 0, 0)
    else:
        fields = (
            int(st.st_ctime_ns // 1_000_000_000) & m,
            int(st.st_ctime_ns % 1_000_000_000),
            int(st.st_mtime_ns // 1_000_000_000) & m,
            int(st.st_mtime_ns % 1_000_000_000),
            st.st_dev & m,
            st.st_ino & m,
            mode,
            st.st_uid & m,
            st.st_gid & m,
            st.st_size & m,
        )
    return _with_name(_ENTRY.pack(*fields, sha, 0), path)


def _head_length(raw: bytes, off: int = 0) -> int:
    return 64 if _flags(raw, off) & _EXTENDED else 62


def _with_name(head: bytes, path: bytes) -> bytes:
    """An on-disk entry: ``head`` (62 or 64 bytes) with its name length set, the name, padding."""
    flags = (_flags(head, 0) & ~_NAME_MASK) | min(len(path), _NAME_MASK)
    head = head[:60] + struct.pack(">H", flags) + head[62:]
    size = (len(head) + len(path) + 8) & ~7
    return head + path + b"\0" * (size - len(head) - len(path))


def _strip_name(raw: bytes) -> bytes:
    """A replacement entry for the split index: git takes the name from the shared entry."""
    return _with_name(raw[: _head_length(raw)], b"")


def _entry_length(data: bytes, off: int, version: int) -> tuple[int, bytes, int]:
    """(length, path, flags) of the entry at ``off``."""
    flags = _flags(data, off)
    name_off = off + 62
    if flags & _EXTENDED:
        if version < 3:
            raise IndexUnsupported("extended flags in a version 2 index")
        name_off += 2
    namelen = flags & _NAME_MASK
    if namelen == _NAME_MASK:
        namelen = data.index(b"\0", name_off) - name_off
    path = data[name_off : name_off + namelen]
    length = ((name_off - off) + namelen + 8) & ~7
    return length, path, flags


def _entries(data: bytes) -> tuple[int, list[tuple[bytes, bytes]], int]:
    """(version, [(path, raw entry)] in file order, offset of the extensions) of an index file."""
    if len(data) < 32 or data[:4] != b"DIRC":
        raise IndexUnsupported("not an index file")
    if sha1_digest(data[:-20]) != data[-20:]:
        raise IndexUnsupported("index checksum mismatch")
    _, version, count = _HEADER.unpack_from(data, 0)
    if version not in (2, 3):
        raise IndexUnsupported(f"index version {version}")
    off = _HEADER.size
    out = []
    for _ in range(count):
        length, path, _ = _entry_length(data, off, version)
        out.append((path, data[off : off + length]))
        off += length
    return version, out, off


def _extensions(data: bytes, off: int) -> dict[bytes, bytes]:
    found = {}
    end = len(data) - 20
    while off + 8 <= end:
        signature, size = struct.unpack_from(">4sL", data, off)
        if not (65 <= signature[0] <= 90) and signature != b"link":
            raise IndexUnsupported(f"mandatory index extension {signature!r}")
        found[signature] = data[off + 8 : off + 8 + size]
        off += 8 + size
    return found


def _grouped(version: int, entries: list[tuple[bytes, bytes]]) -> Index:
    """An Index from entries sorted by path then stage."""
    index = Index(version=version)
    for path, raw in entries:
        if path in index.raw:
            index.raw[path] += raw
            index.extra_stages[path] = index.extra_stages.get(path, 0) + 1
        else:
            index.paths.append(path)
            index.raw[path] = raw
    return index


def parse(data: bytes, gitdir: Path | None = None) -> Index:
    """The index in ``data``; a split index also reads its shared file from ``gitdir``."""
    version, entries, off = _entries(data)
    link = _extensions(data, off).get(b"link")
    if link is None:
        return _grouped(version, entries)
    if gitdir is None:
        raise IndexUnsupported("a split index needs its git directory")
    return _merge_split(version, entries, link, gitdir)


_shared_cache: dict[str, tuple[list[tuple[bytes, bytes]], Shared]] = {}


def _load_shared(gitdir: Path, checksum: str) -> tuple[list[tuple[bytes, bytes]], Shared]:
    hit = _shared_cache.get(checksum)
    if hit is None:
        try:
            data = (gitdir / f"sharedindex.{checksum}").read_bytes()
        except FileNotFoundError:
            raise IndexUnsupported(f"shared index {checksum} is missing") from None
        _, entries, _ = _entries(data)
        hit = _shared_cache[checksum] = (entries, _positions(checksum, entries))
    return hit


def _positions(checksum: str, entries: list[tuple[bytes, bytes]]) -> Shared:
    positions: dict[bytes, tuple[int, int, bool]] = {}
    for pos, (path, raw) in enumerate(entries):
        if path in positions:
            first, n, _ = positions[path]
            positions[path] = (first, n + 1, False)
        else:
            positions[path] = (pos, 1, not _flags(raw, 0) & _STAGE_MASK)
    return Shared(checksum, positions)


def _merge_split(version: int, entries: list[tuple[bytes, bytes]], link: bytes,
                 gitdir: Path) -> Index:
    """Apply a split index (replacements, deletions, additions) to its shared file."""
    checksum = link[:20].hex()
    base, shared = _load_shared(gitdir, checksum)
    deleted, used = ewah.decode(link, 20) if len(link) > 20 else ([], 0)
    replaced, _ = ewah.decode(link, 20 + used) if len(link) > 20 else ([], 0)
    merged: list[tuple[bytes, bytes] | None] = list(base)
    changed: set[bytes] = set()
    for n, pos in enumerate(replaced):
        path = base[pos][0]
        merged[pos] = (path, _with_name(entries[n][1][: _head_length(entries[n][1])], path))
        changed.add(path)
    for pos in deleted:
        changed.add(base[pos][0])
        merged[pos] = None
    survivors = {(p, _flags(r, 0) & _STAGE_MASK): r for p, r in (m for m in merged if m)}
    for path, raw in entries[len(replaced):]:
        survivors[(path, _flags(raw, 0) & _STAGE_MASK)] = raw
        changed.add(path)
    index = _grouped(version, [(p, survivors[(p, s)]) for p, s in sorted(survivors)])
    index.shared, index.changed = shared, changed
    return index


_cache: dict[str, tuple[tuple[int, ...], Index]] = {}


def _identity(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def forget(path: Path) -> None:
    """Drop the cached index for ``path`` (after a caller changed it but did not store it)."""
    _cache.pop(str(path), None)


def _current(path: Path) -> tuple[int, ...] | None:
    try:
        return _identity(os.stat(path))
    except FileNotFoundError:
        return None


def load(path: Path, *, copy: bool = True) -> Index:
    """The index at ``path`` (an empty one if the file does not exist), cached by identity.

    With ``copy=False`` the cached object itself is returned: the caller must ``store`` it or
    ``forget`` the path, because the cache now holds whatever the caller did to it.
    """
    identity = _current(path)
    if identity is None:
        return Index(origin=())
    key = str(path)
    hit = _cache.get(key)
    if hit and hit[0] == identity:
        return _copy(hit[1]) if copy else hit[1]
    index = parse(path.read_bytes(), path.parent)
    index.origin = identity
    _cache[key] = (identity, index)
    return _copy(index) if copy else index


def _copy(index: Index) -> Index:
    return Index(index.version, list(index.paths), dict(index.raw), dict(index.extra_stages),
                 index.shared, set(index.changed), index.origin)


def store(path: Path, index: Index, *, wait: float = 5.0, split: bool | None = None,
          private: bool = False) -> None:
    """Write ``index`` to ``path`` under git's lock protocol (IndexLocked if git holds it), if
    the file is still the one ``index`` was loaded from (IndexChanged if another writer replaced
    it meanwhile: its change would be lost).

    ``split``: write it split (True) or plain (False); None splits an index of ``SPLIT_AT`` or
    more entries. ``private``: see ``lockfile``.
    """
    folded = False
    if split if split is not None else len(index.paths) >= SPLIT_AT:
        if index.shared is None or len(index.changed) > FOLD_AT:
            _fold(path.parent, index)
            folded = True
        data = index.encode_split()
    else:
        index.shared, index.changed = None, set()
        data = index.encode()
    def unchanged() -> None:
        if index.origin is not None and (_current(path) or ()) != index.origin:
            raise IndexChanged(str(path))

    try:
        lockfile.replace(path, data, wait, point="index.store", under_lock=unchanged,
                         private=private)
    except lockfile.Locked as e:
        raise IndexLocked(str(e.lock)) from None
    index.origin = _identity(os.stat(path))
    _cache[str(path)] = (index.origin, index)
    if folded and index.shared is not None:
        # Only now: until the new index is in place, the old one still names the old shared file.
        _prune_shared(path.parent, keep=f"sharedindex.{index.shared.checksum}")


def _fold(gitdir: Path, index: Index) -> None:
    """Write the whole index as a new shared file and make it the base of ``index``."""
    data = index.encode()
    checksum = data[-20:].hex()
    target = gitdir / f"sharedindex.{checksum}"
    if not target.exists():
        lockfile.replace(target, data, point="index.store")
    entries = [(p, r) for p in index.paths for r in _split_stages(index.raw[p], index.version)]
    _shared_cache[checksum] = (entries, _positions(checksum, entries))
    index.shared, index.changed = _shared_cache[checksum][1], set()


def _split_stages(raw: bytes, version: int) -> list[bytes]:
    out, off = [], 0
    while off < len(raw):
        length = _entry_length(raw, off, version)[0]
        out.append(raw[off : off + length])
        off += length
    return out


def _prune_shared(gitdir: Path, keep: str) -> None:
    """Remove shared index files nothing has used for an hour (git expires them likewise)."""
    cutoff = time.time() - _SHARED_KEEP_SECONDS
    for name in os.listdir(gitdir):
        if name.startswith("sharedindex.") and name != keep:
            try:
                if os.stat(gitdir / name).st_mtime < cutoff:
                    os.unlink(gitdir / name)
            except OSError:
                pass  # housekeeping: the index is stored, an old file can go another time
