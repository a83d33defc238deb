"""Reading and rewriting git's index file (``.git/index``) without GitPython's index path.

Invariant: the file this module writes is an index git reads as if git had written it. Entries
we do not touch are copied byte for byte; entries we replace carry the work-tree file's real stat
data, so ``git status`` stays clean and fast. Optional extensions (cache-tree, untracked cache,
resolve-undo, offset tables) are dropped on write: they are caches git rebuilds. An index that
uses a *mandatory* extension (split index, sparse directories) or version 4 raises
``IndexUnsupported`` and the caller falls back to ``git update-index``.

Writes follow git's lock protocol: create ``index.lock`` exclusively, write, rename over the
index. A parsed index is cached per file identity (inode, size, mtime, ctime), so an op in a
long-running process does not re-parse a 10,000-entry index.
"""

from __future__ import annotations

import bisect
import hashlib
import os
import struct
from dataclasses import dataclass, field
from pathlib import Path

from . import lockfile

_HEADER = struct.Struct(">4sLL")
_ENTRY = struct.Struct(">10L20sH")  # ctime s/ns, mtime s/ns, dev, ino, mode, uid, gid, size, sha, flags
_EXTENDED = 0x4000
_NAME_MASK = 0x0FFF
_STAGE_SHIFT = 12


class IndexUnsupported(Exception):
    """The index uses a feature this writer does not handle; use git itself."""


class IndexLocked(Exception):
    """Another process holds index.lock."""


@dataclass
class Index:
    """An index held as raw entries keyed by path (all stages of a path kept together)."""

    version: int = 2
    paths: list[bytes] = field(default_factory=list)  # sorted
    raw: dict[bytes, bytes] = field(default_factory=dict)  # path -> raw entry bytes (all stages)
    shas: dict[bytes, bytes] = field(default_factory=dict)  # path -> stage-0 sha (20 bytes)
    stats: dict[bytes, tuple[int, ...]] = field(default_factory=dict)  # path -> stat tuple
    extra_stages: dict[bytes, int] = field(default_factory=dict)  # path -> entries beyond one

    def sha_of(self, path: str) -> str | None:
        sha = self.shas.get(os.fsencode(path))
        return sha.hex() if sha else None

    def stat_matches(self, path: str, st: os.stat_result) -> bool:
        """True when the index's stat data for path matches ``st`` (git's 'unchanged' test)."""
        cached = self.stats.get(os.fsencode(path))
        return cached is not None and cached == _stat_key(st)

    def set(self, path: str, sha_hex: str, mode: int, st: os.stat_result | None) -> None:
        key = os.fsencode(path)
        if key not in self.raw:
            bisect.insort(self.paths, key)
        self.raw[key] = _encode_entry(key, bytes.fromhex(sha_hex), mode, st)
        self.extra_stages.pop(key, None)
        self.shas[key] = bytes.fromhex(sha_hex)
        if st is not None:
            self.stats[key] = _stat_key(st)
        else:
            self.stats.pop(key, None)

    def remove(self, path: str) -> None:
        key = os.fsencode(path)
        if key in self.raw:
            del self.raw[key]
            self.paths.pop(bisect.bisect_left(self.paths, key))
            self.shas.pop(key, None)
            self.stats.pop(key, None)
            self.extra_stages.pop(key, None)

    def encode(self) -> bytes:
        count = len(self.paths) + sum(self.extra_stages.values())
        raw = self.raw
        body = _HEADER.pack(b"DIRC", self.version, count) + b"".join([raw[p] for p in self.paths])
        return body + hashlib.sha1(body).digest()


def _stat_key(st: os.stat_result) -> tuple[int, ...]:
    m = 0xFFFFFFFF
    return (
        int(st.st_mtime_ns // 1_000_000_000) & m,
        int(st.st_mtime_ns % 1_000_000_000),
        int(st.st_ctime_ns // 1_000_000_000) & m,
        int(st.st_ctime_ns % 1_000_000_000),
        st.st_ino & m,
        st.st_size & m,
    )


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
    flags = min(len(path), _NAME_MASK)
    head = _ENTRY.pack(*fields, sha, flags)
    size = (len(head) + len(path) + 8) & ~7
    return head + path + b"\0" * (size - len(head) - len(path))


def _entry_length(data: bytes, off: int, version: int) -> tuple[int, bytes, int]:
    """(length, path, flags) of the entry at ``off``."""
    flags = struct.unpack_from(">H", data, off + 60)[0]
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


def parse(data: bytes) -> Index:
    if len(data) < 32 or data[:4] != b"DIRC":
        raise IndexUnsupported("not an index file")
    if hashlib.sha1(data[:-20]).digest() != data[-20:]:
        raise IndexUnsupported("index checksum mismatch")
    _, version, count = _HEADER.unpack_from(data, 0)
    if version not in (2, 3):
        raise IndexUnsupported(f"index version {version}")
    index = Index(version=version)
    off = _HEADER.size
    groups: dict[bytes, list[bytes]] = {}
    order: list[bytes] = []
    for _ in range(count):
        length, path, flags = _entry_length(data, off, version)
        raw = data[off : off + length]
        if path not in groups:
            groups[path] = []
            order.append(path)
        groups[path].append(raw)
        if (flags >> _STAGE_SHIFT) & 3 == 0:
            fields = _ENTRY.unpack_from(data, off)
            index.shas[path] = fields[10]
            index.stats[path] = (fields[2], fields[3], fields[0], fields[1], fields[5], fields[9])
        off += length
    _check_extensions(data, off)
    index.paths = order
    index.raw = {p: b"".join(parts) for p, parts in groups.items()}
    index.extra_stages = {p: len(parts) - 1 for p, parts in groups.items() if len(parts) > 1}
    return index


def _check_extensions(data: bytes, off: int) -> None:
    end = len(data) - 20
    while off + 8 <= end:
        signature, size = struct.unpack_from(">4sL", data, off)
        if not (65 <= signature[0] <= 90):  # lowercase first letter = mandatory
            raise IndexUnsupported(f"mandatory index extension {signature!r}")
        off += 8 + size


_cache: dict[str, tuple[tuple[int, ...], Index]] = {}


def _identity(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def forget(path: Path) -> None:
    """Drop the cached index for ``path`` (after a caller changed it but did not store it)."""
    _cache.pop(str(path), None)


def load(path: Path, *, copy: bool = True) -> Index:
    """The index at ``path`` (an empty one if the file does not exist), cached by identity.

    With ``copy=False`` the cached object itself is returned: the caller must ``store`` it or
    ``forget`` the path, because the cache now holds whatever the caller did to it.
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return Index()
    key = str(path)
    hit = _cache.get(key)
    if hit and hit[0] == _identity(st):
        return _copy(hit[1]) if copy else hit[1]
    index = parse(path.read_bytes())
    _cache[key] = (_identity(st), index)
    return _copy(index) if copy else index


def _copy(index: Index) -> Index:
    return Index(
        index.version,
        list(index.paths),
        dict(index.raw),
        dict(index.shas),
        dict(index.stats),
        dict(index.extra_stages),
    )


def store(path: Path, index: Index, *, wait: float = 5.0) -> None:
    """Write ``index`` to ``path`` under git's lock protocol (IndexLocked if git holds it)."""
    try:
        lockfile.replace(path, index.encode(), wait)
    except lockfile.Locked as e:
        raise IndexLocked(str(e.lock)) from None
    _cache[str(path)] = (_identity(os.stat(path)), index)
