"""Text as the text tools read and show it: UTF-8 only, line-numbered, bounded.

Invariant: a file that is binary or not UTF-8 is refused with its size, never decoded lossily, so
an edit can never corrupt it, and text a tool would write never makes one binary (a NUL is
refused); what a model is shown is capped (``VIEW_CAP`` characters,
``LISTING_CAP`` listing rows).
"""

from __future__ import annotations

from typing import Any

from ..errors import FileRefused

VIEW_CAP = 16_000
LISTING_CAP = 200


def decode(rel: str, data: bytes) -> str:
    """``data`` (the content of ``rel``) as text, or FileRefused when it is not UTF-8 text."""
    if b"\0" in data[:8192]:
        raise FileRefused(
            f"{rel} holds binary data ({len(data):,} bytes); the text tools do not edit it.",
            hint="Use the stat tool to see its size and type.",
            cli_hint="Look at it with git or your own tools; 'gitspace call stat' shows its size.",
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise FileRefused(
            f"{rel} is not UTF-8 text ({len(data):,} bytes); the text tools do not edit it.",
            hint="Use the stat tool to see its size and type.",
            cli_hint="Look at it with git or your own tools; 'gitspace call stat' shows its size.",
        ) from None


def numbered(lines: list[str], start: int) -> str:
    return "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(lines, start))


def refuse_binary(args: dict[str, Any], *fields: str) -> None:
    """Text tools write text: a NUL in a text argument would make git, and every diff, treat the
    file as binary (the test ``decode`` applies when reading)."""
    for name in fields:
        value = args.get(name)
        if isinstance(value, str) and "\0" in value:
            raise FileRefused(
                f"{name} holds a NUL character (at character {value.index(chr(0))}); the text "
                "tools write text files, and git treats a file holding a NUL as binary.",
                hint="Remove the NUL character, or write the text without it.",
            )
