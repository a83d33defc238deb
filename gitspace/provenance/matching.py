"""Which lines of one version of a file are lines of another: the alignment attribution rests on.

Invariant: ``match(old, new)[j]`` is the index of the line of ``old`` that line ``j`` of ``new``
is (the same bytes, in the same order as every other matched line: a longest common
subsequence as ``difflib`` finds it), or -1 for a line ``new`` added or changed. Lines are split
on ``\\n`` alone, as git splits them; a final line without one is still a line. Cost: the common
start and end are skipped first, so an edit in a long file costs what the edit spans.
"""

from __future__ import annotations

BINARY_PROBE = 8000  # git's own test: a NUL in the first 8,000 bytes makes a file binary
SMALL = 1 << 20  # cells (old x new lines) below which the exact, slower alignment is used


def split(data: bytes) -> list[bytes]:
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return lines


def is_binary(data: bytes) -> bool:
    return b"\0" in data[:BINARY_PROBE]


def match(old: list[bytes], new: list[bytes]) -> list[int]:
    out = [-1] * len(new)
    start = 0
    limit = min(len(old), len(new))
    while start < limit and old[start] == new[start]:
        out[start] = start
        start += 1
    end = 0
    while end < limit - start and old[-1 - end] == new[-1 - end]:
        out[len(new) - 1 - end] = len(old) - 1 - end
        end += 1
    a, b = old[start:len(old) - end], new[start:len(new) - end]
    if a and b:
        from difflib import SequenceMatcher

        matcher = SequenceMatcher(None, a, b, autojunk=len(a) * len(b) > SMALL)
        for i, j, size in matcher.get_matching_blocks():
            for k in range(size):
                out[start + j + k] = start + i + k
    return out


def added(old: list[bytes], new: list[bytes]) -> list[int]:
    """The 1-based numbers of the lines of ``new`` that ``old`` does not have."""
    return [j + 1 for j, i in enumerate(match(old, new)) if i < 0]
