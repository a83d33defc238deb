"""git's EWAH bitmap serialisation (``ewah/ewah_io.c``), as the split index's link extension uses it.

Layout: 32-bit bit count, 32-bit word count, that many 64-bit big-endian words, 32-bit position
of the last run-length word. Words alternate: a run-length word (bit 0: the running bit; bits
1-32: how many 64-bit words of that bit follow; bits 33-63: how many literal words follow it),
then its literal words, whose bit ``i`` is bitmap position ``64 * word + i``.
"""

from __future__ import annotations

import struct

_RUN_MAX = (1 << 32) - 1
_LITERAL_MAX = (1 << 31) - 1
_MASK = (1 << 64) - 1


def encode(positions: list[int]) -> bytes:
    """The serialised bitmap with exactly ``positions`` set (a run of zero words is compressed)."""
    bits = 0
    for pos in positions:
        bits |= 1 << pos
    nwords = (bits.bit_length() + 63) // 64
    literals = [(bits >> (64 * i)) & _MASK for i in range(nwords)]
    words: list[int] = []
    rlw_at = 0
    i = 0
    while i < nwords or not words:
        run = 0
        while i < nwords and literals[i] == 0 and run < _RUN_MAX:
            run, i = run + 1, i + 1
        start = i
        while i < nwords and literals[i] != 0 and i - start < _LITERAL_MAX:
            i += 1
        rlw_at = len(words)
        words.append((run << 1) | ((i - start) << 33))
        words.extend(literals[start:i])
    head = struct.pack(">LL", bits.bit_length(), len(words))
    return head + struct.pack(f">{len(words)}Q", *words) + struct.pack(">L", rlw_at)


def decode(data: bytes, offset: int = 0) -> tuple[list[int], int]:
    """(set positions in order, bytes consumed) of the bitmap serialised at ``offset``."""
    _, count = struct.unpack_from(">LL", data, offset)
    words = struct.unpack_from(f">{count}Q", data, offset + 8)
    positions: list[int] = []
    pos = i = 0
    while i < count:
        word = words[i]
        run = ((word >> 1) & _RUN_MAX) * 64
        if word & 1:
            positions.extend(range(pos, pos + run))
        pos += run
        i += 1
        for literal in words[i : i + (word >> 33)]:
            positions.extend(pos + b for b in range(64) if literal >> b & 1)
            pos += 64
        i += word >> 33
    return positions, 12 + 8 * count
