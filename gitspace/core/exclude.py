"""Paths a person keeps out of every recording: never read, hashed or committed by gitspace.

Patterns are read from two files, in gitignore syntax:
- ``<common git dir>/info/gitspace-exclude``: this repository (and all its worktrees); never
  committed, never pushed, like git's own ``info/exclude`` beside it;
- ``$XDG_CONFIG_HOME/gitspace/exclude`` (``~/.config/gitspace/exclude``): every repository.

Syntax: one pattern a line; blank lines and lines starting with ``#`` are skipped; ``!`` in front
takes a path back; a trailing ``/`` matches folders only (and so everything beneath them); a
pattern with a ``/`` before its end is anchored at the top of the work tree, one without matches
at any depth; ``*`` matches anything but ``/``, ``?`` one character, ``[...]`` one of a set,
``**`` any number of folders. A path is excluded when it or a folder above it matches, as git
ignores a folder's contents with the folder.

Invariant: every path that records changes gitspace did not make itself (in-place recording of
a harness's calls, ``snapshot``, ``watch``, the hooks in a workspace) asks ``Excludes.match``
before it reads a file, and leaves an excluded one alone, saying so.
"""

from __future__ import annotations

import re
from pathlib import Path

from .. import config
from ..storage import bounded, statefiles

FILE = "gitspace-exclude"


class _Pattern:
    """One compiled line (a plain class: a harness's before hook reads these)."""

    __slots__ = ("folders_only", "negated", "regex")

    def __init__(self, regex: re.Pattern[str], negated: bool, folders_only: bool) -> None:
        self.regex, self.negated, self.folders_only = regex, negated, folders_only


def _compile(line: str) -> _Pattern | None:
    text = line.rstrip("\n").rstrip("\r")
    if text.endswith(" ") and not text.endswith("\\ "):
        text = text.rstrip(" ")
    if not text or text.startswith("#"):
        return None
    negated = text.startswith("!")
    if negated:
        text = text[1:]
    folders_only = text.endswith("/")
    text = text.rstrip("/")
    if not text:
        return None
    anchored = "/" in text
    text = text.lstrip("/")
    out, i = [], 0
    while i < len(text):
        if text.startswith("**/", i):
            out.append("(?:[^/]+/)*")
            i += 3
        elif text.startswith("/**", i) and i + 3 == len(text):
            out.append("/.*")
            i += 3
        elif text[i] == "*":
            out.append("[^/]*")
            i += 1
        elif text[i] == "?":
            out.append("[^/]")
            i += 1
        elif text[i] == "[" and "]" in text[i + 2:]:
            end = text.index("]", i + 2)
            body = text[i + 1:end]
            body = "^" + body[1:] if body.startswith("!") else body
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = end + 1
        elif text[i] == "\\" and i + 1 < len(text):
            out.append(re.escape(text[i + 1]))
            i += 2
        else:
            out.append(re.escape(text[i]))
            i += 1
    body = "".join(out)
    regex = re.compile(("" if anchored else "(?:.*/)?") + body + r"\Z", re.DOTALL)
    return _Pattern(regex, negated, folders_only)


class Excludes:
    """The patterns in force for one repository."""

    def __init__(self, lines: list[str]) -> None:
        self.patterns = [p for p in map(_compile, lines) if p is not None]

    def __bool__(self) -> bool:
        return bool(self.patterns)

    def match(self, rel: str) -> bool:
        """Is ``rel`` (or a folder above it) excluded?"""
        if not self.patterns:
            return False
        parts = rel.split("/")
        for depth in range(1, len(parts) + 1):
            prefix = "/".join(parts[:depth])
            folder = depth < len(parts)
            verdict = None
            for p in self.patterns:
                if (folder or not p.folders_only) and p.regex.match(prefix):
                    verdict = not p.negated
            if verdict:
                return True
        return False


def load(commondir: Path) -> Excludes:
    """The patterns of the repository whose common git dir is ``commondir``, and the person's."""
    # Bounded, never a fifo's wait; the repository's file never through a link. One that
    # cannot be read is refused rather than skipped: what it excludes must not be recorded.
    found = [bounded.read_named(config.user_config_dir() / "exclude", bounded.JSON_CAP,
                                what="Your gitspace exclude file", follow=True),
             statefiles.read(commondir, f"info/{FILE}")]
    return Excludes([line for data in found if data
                     for line in data.decode("utf-8", "replace").splitlines()])


def add(commondir: Path, patterns: list[str]) -> Path:
    """Append ``patterns`` to this repository's file (made if missing); its path."""
    path = commondir / "info" / FILE
    found = statefiles.read(commondir, f"info/{FILE}")
    old = found.decode("utf-8", "replace") if found is not None else (
        "# Paths gitspace never records (gitignore syntax): see 'gitspace exclude --help'.\n")
    if old and not old.endswith("\n"):
        old += "\n"
    have = set(old.splitlines())
    new = [p for p in patterns if p not in have]
    statefiles.write(commondir, f"info/{FILE}", (old + "".join(p + "\n" for p in new)).encode())
    return path
