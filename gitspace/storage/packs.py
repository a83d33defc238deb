"""Objects in git's pack files, read with the standard library only.

A harness's hook runs twice per tool call in a user's own repository, where nearly every object
is packed (a clone, ``git gc``). Starting GitPython and its ``git cat-file`` processes to read one
tree would cost a hook more than all of its own work, so ``read`` looks the object up in each
pack's index (version 2, as git has written since 2007) and inflates it, applying deltas.

Invariants:
- A read either returns the object git would return, its id checked against its content, or
  None; never a guess. Anything unusual (an index of another version, a pack that changed
  underneath, a truncated entry, a base that is missing) is None and the caller asks git.
- Nothing here writes, starts a process or imports anything beyond the standard library.
"""

from __future__ import annotations

import mmap
import os
import zlib
from pathlib import Path

from .loose import sha1_hex

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

KINDS = {1: "commit", 2: "tree", 3: "blob", 4: "tag"}
OFS_DELTA, REF_DELTA = 6, 7
MAX_CHAIN = 64  # git's own default depth is 50; a deeper chain is left to git
_IDX_MAGIC = b"\xfftOc\x00\x00\x00\x02"


class _Pack:
    """One ``pack-*.idx`` and its ``.pack``, mapped read-only."""

    def __init__(self, idx_path: Path) -> None:
        self.name = idx_path.name
        self.idx = _map(idx_path)
        self.pack = _map(idx_path.with_suffix(".pack"))
        if self.idx[:8] != _IDX_MAGIC or self.pack[:4] != b"PACK":
            raise ValueError("not a version 2 pack index")
        self.count = int.from_bytes(self.idx[8 + 255 * 4: 8 + 256 * 4], "big")
        self.names = 8 + 256 * 4
        self.offsets = self.names + self.count * 24  # names (20 bytes), then CRCs (4 bytes)
        self.large = self.offsets + self.count * 4

    def offset(self, sha: bytes) -> int | None:
        first = sha[0]
        lo = int.from_bytes(self.idx[8 + (first - 1) * 4: 8 + first * 4], "big") if first else 0
        hi = int.from_bytes(self.idx[8 + first * 4: 12 + first * 4], "big")
        idx = self.idx
        while lo < hi:
            mid = (lo + hi) // 2
            at = self.names + mid * 20
            found = idx[at: at + 20]
            if found == sha:
                value = int.from_bytes(idx[self.offsets + mid * 4: self.offsets + mid * 4 + 4],
                                       "big")
                if value & 0x80000000:
                    at = self.large + (value & 0x7FFFFFFF) * 8
                    value = int.from_bytes(idx[at: at + 8], "big")
                return value
            if found < sha:
                lo = mid + 1
            else:
                hi = mid
        return None


def _map(path: Path) -> mmap.mmap:
    with open(path, "rb") as f:
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)


class Packs:
    """The packs of one object folder (``objects/pack``), opened as they are first needed."""

    def __init__(self, objects: Path) -> None:
        self.folder = objects / "pack"
        self._packs: list[_Pack] = []
        self._seen: set[str] = set()
        self._listed: int | None = None  # the folder's mtime when it was last listed

    def _refresh(self) -> bool:
        """Open packs that appeared since the last listing; True if any did."""
        try:
            mtime = os.stat(self.folder).st_mtime_ns
            if mtime == self._listed:
                return False
            names = sorted(n for n in os.listdir(self.folder) if n.endswith(".idx"))
        except OSError:
            return False
        self._listed = mtime
        gone = self._seen - set(names)  # repacked away: let their mappings go
        if gone:
            self._packs = [p for p in self._packs if p.name not in gone]
            self._seen -= gone
        added = False
        for name in names:
            if name in self._seen:
                continue
            self._seen.add(name)
            try:
                self._packs.append(_Pack(self.folder / name))
                added = True
            except (OSError, ValueError):
                continue  # being written, or a kind git reads and we do not: git's turn
        return added

    def contains(self, sha: str) -> bool:
        """Does a pack index list ``sha``? (False may still mean "ask git".)"""
        try:
            raw = bytes.fromhex(sha)
        except ValueError:
            return False
        if len(raw) != 20:
            return False
        if any(pack.offset(raw) is not None for pack in self._packs):
            return True
        return self._refresh() and any(pack.offset(raw) is not None for pack in self._packs)

    def read(self, sha: str) -> tuple[str, bytes] | None:
        """(kind, content) of packed object ``sha``, or None (see the module docstring)."""
        try:
            raw = bytes.fromhex(sha)
        except ValueError:
            return None
        if len(raw) != 20:
            return None
        for attempt in (0, 1):
            if attempt or not self._packs:
                if not self._refresh() and attempt:
                    return None
            for pack in self._packs:
                offset = pack.offset(raw)
                if offset is None:
                    continue
                try:
                    found = self._entry(pack, offset, 0)
                except (ValueError, IndexError, zlib.error, OSError):
                    return None
                if found is None:
                    return None
                kind, data = found
                if sha1_hex(b"%s %d\0" % (kind.encode(), len(data)) + data) != sha:
                    return None
                return found
        return None

    def size(self, sha: str) -> int | None:
        """The size of packed object ``sha`` as its entry's header says (a delta's: the size
        it makes), read without inflating the object; None: not in a pack, or unusual (ask
        git). A size is a hint for what to read, never a checked content."""
        try:
            raw = bytes.fromhex(sha)
        except ValueError:
            return None
        if len(raw) != 20:
            return None
        for attempt in (0, 1):
            if (attempt or not self._packs) and not self._refresh() and attempt:
                return None
            for pack in self._packs:
                offset = pack.offset(raw)
                if offset is not None:
                    try:
                        return _entry_size(pack.pack, offset)
                    except (ValueError, IndexError, zlib.error, OSError):
                        return None
        return None

    def _entry(self, pack: _Pack, offset: int, depth: int) -> tuple[str, bytes] | None:
        if depth > MAX_CHAIN:
            return None
        data = pack.pack
        kind, size, at = _header(data, offset)
        if kind in KINDS:
            return KINDS[kind], _inflate(data, at, size)
        if kind == OFS_DELTA:
            c = data[at]
            back, at = c & 0x7F, at + 1
            while c & 0x80:
                c = data[at]
                back, at = ((back + 1) << 7) | (c & 0x7F), at + 1
            base = self._entry(pack, offset - back, depth + 1)
        elif kind == REF_DELTA:
            base_sha, at = data[at: at + 20], at + 20
            base_offset = pack.offset(base_sha)
            base = None if base_offset is None else self._entry(pack, base_offset, depth + 1)
        else:
            return None
        if base is None:
            return None
        return base[0], apply_delta(base[1], _inflate(data, at, size))


def _header(data: Any, offset: int) -> tuple[int, int, int]:
    """(kind, size, where the entry's data starts) of the pack entry at ``offset``."""
    c = data[offset]
    kind, size, shift, at = (c >> 4) & 7, c & 15, 4, offset + 1
    while c & 0x80:
        c = data[at]
        size |= (c & 0x7F) << shift
        shift, at = shift + 7, at + 1
    return kind, size, at


def _entry_size(data: Any, offset: int) -> int | None:
    """The size of the object the entry at ``offset`` makes: its header's, or for a delta the
    target size its first bytes say (inflating only those)."""
    kind, size, at = _header(data, offset)
    if kind in KINDS:
        return size
    if kind == OFS_DELTA:
        while data[at] & 0x80:
            at += 1
        at += 1
    elif kind == REF_DELTA:
        at += 20
    else:
        return None
    head = zlib.decompressobj().decompress(data[at: at + 64], 20)
    _, end = _varint(head, 0)
    target, _ = _varint(head, end)
    return target


def _inflate(data: Any, at: int, size: int) -> bytes:
    """The zlib stream at ``at``, which must inflate to exactly ``size`` bytes."""
    d = zlib.decompressobj()
    out = bytearray()
    step = size + 64  # a stream is rarely longer than its content: usually one slice suffices
    while not d.eof and len(out) <= size:
        if d.unconsumed_tail:
            chunk = d.unconsumed_tail
        else:
            chunk, at = data[at: at + step], at + step
            if not chunk:
                break
        out += d.decompress(chunk, size + 1 - len(out))
    if not d.eof or len(out) != size:
        raise ValueError("a pack entry inflated to the wrong size")
    return bytes(out)


def _varint(delta: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        c = delta[at]
        value |= (c & 0x7F) << shift
        shift, at = shift + 7, at + 1
        if not c & 0x80:
            return value, at


def apply_delta(base: bytes, delta: bytes) -> bytes:
    """git's delta format: the sizes, then copy-from-base and insert instructions."""
    source, at = _varint(delta, 0)
    target, at = _varint(delta, at)
    if source != len(base):
        raise ValueError("a delta for another base")
    out = bytearray()
    end = len(delta)
    while at < end:
        op = delta[at]
        at += 1
        if op & 0x80:
            offset = size = 0
            for bit in range(4):
                if op & (1 << bit):
                    offset |= delta[at] << (8 * bit)
                    at += 1
            for bit in range(3):
                if op & (0x10 << bit):
                    size |= delta[at] << (8 * bit)
                    at += 1
            size = size or 0x10000
            if offset + size > len(base):
                raise ValueError("a delta copies past its base")
            out += base[offset: offset + size]
        elif op:
            out += delta[at: at + op]
            at += op
        else:
            raise ValueError("a delta instruction git never writes")
    if len(out) != target:
        raise ValueError("a delta produced the wrong size")
    return bytes(out)
