"""Text as the text tools read and show it: UTF-8 only, line-numbered, bounded.

Invariant: a file that is binary or not UTF-8 is refused with its size, never decoded lossily, so
an edit can never corrupt it; what a model is shown is capped (``VIEW_CAP`` characters,
``LISTING_CAP`` listing rows).
"""

from __future__ import annotations

from ..errors import FileRefused

VIEW_CAP = 16_000
LISTING_CAP = 200


def decode(rel: str, data: bytes) -> str:
    """``data`` (the content of ``rel``) as text, or FileRefused when it is not UTF-8 text."""
    if b"\0" in data[:8192]:
        raise FileRefused(
            f"{rel} holds binary data ({len(data):,} bytes); the text tools do not edit it.",
            hint="Use the stat tool to see its size and type.",
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise FileRefused(
            f"{rel} is not UTF-8 text ({len(data):,} bytes); the text tools do not edit it.",
            hint="Use the stat tool to see its size and type.",
        ) from None


def numbered(lines: list[str], start: int) -> str:
    return "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(lines, start))
