"""Offline scripted policies: they drive the real loop through the real tools, without a model."""

from __future__ import annotations

from ...errors import BadArguments
from .base import Policy


def names() -> list[str]:
    return ["journal", "journal-nested", "maze"]


def make(name: str) -> Policy:
    if name == "maze":
        from .maze import MazePolicy

        return MazePolicy()
    if name in ("journal", "journal-nested"):
        from .journal import JournalPolicy

        return JournalPolicy(nested=name == "journal-nested")
    raise BadArguments(f"There is no policy named {name!r}.",
                       hint="Offline policies: " + ", ".join(names()) + ".")
