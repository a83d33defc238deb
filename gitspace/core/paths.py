"""Resolving agent-supplied paths safely.

Invariant: a path that passes ``resolve`` names a location inside the work tree, outside ``.git``,
reached without following any symbolic link, spelled in one canonical way (NFC, ``/``-separated,
no ``.``/``..``/empty parts), and free of characters that could disguise it. Everything else is
refused with a sentence that says why, before any file is touched.
"""

from __future__ import annotations

import os
import re
import unicodedata
from pathlib import Path

from ..errors import PathRefused

_PERCENT = re.compile(r"%[0-9A-Fa-f]{2}")
# Characters that look like separators or dots but are not: refused rather than guessed at.
_LOOKALIKES = set("\u2215\u2044\u29f8\uff0f\uff3c\u2024\uff0e\u3002\ufe52\u2025\u2026")
MAX_PATH_BYTES = 4096
MAX_PART_BYTES = 255


def _refuse(path: str, why: str) -> PathRefused:
    return PathRefused(
        f"The path {path!r} was refused: {why}.",
        hint="Use a plain relative path inside the workspace, like 'notes/todo.md'.",
    )


def normalize(path: object, *, allow_root: bool = False) -> str:
    """The canonical relative form of an agent-supplied path, or PathRefused."""
    if not isinstance(path, str):
        raise PathRefused(f"A path must be a string, not {type(path).__name__}.")
    text = path
    if text in ("", ".", "./") and allow_root:
        return ""
    if not text:
        raise _refuse(path, "it is empty")
    if "\0" in text or any(unicodedata.category(c) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")
                           for c in text):
        raise _refuse(path, "it contains control, format or unassigned characters")
    if unicodedata.normalize("NFC", text) != text:
        raise _refuse(path, "it is not in Unicode normal form C")
    if any(c in _LOOKALIKES for c in text):
        raise _refuse(path, "it contains a character that imitates a slash or a dot")
    if "\\" in text:
        raise _refuse(path, "it contains a backslash")
    if _PERCENT.search(text):
        raise _refuse(path, "it contains URL-encoded characters")
    if text.startswith("/") or text.startswith("~") or re.match(r"^[A-Za-z]:", text):
        raise _refuse(path, "it is absolute; paths are relative to the workspace root")
    if text.startswith("./"):
        text = text[2:]
    text = text.rstrip("/") if allow_root or text.endswith("/") else text
    parts = text.split("/")
    for part in parts:
        if part in ("", ".", ".."):
            raise _refuse(path, "it has an empty, '.' or '..' part")
        if part.rstrip(". ").casefold() == ".git":
            raise _refuse(path, "it points into .git")
        if len(part.encode()) > MAX_PART_BYTES:
            raise _refuse(path, "one of its parts is longer than 255 bytes")
    if len(text.encode()) > MAX_PATH_BYTES:
        raise _refuse(path, "it is longer than 4096 bytes")
    return text


def resolve(root: Path, path: object, *, allow_root: bool = False) -> tuple[str, Path]:
    """(canonical relative path, absolute path), refusing any symbolic link on the way."""
    rel = normalize(path, allow_root=allow_root)
    current = root
    for part in rel.split("/") if rel else []:
        current = current / part
        if os.path.islink(current):
            raise _refuse(str(path), f"{current.relative_to(root)} is a symbolic link")
    return rel, current
