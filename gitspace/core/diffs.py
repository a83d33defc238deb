"""Unified diffs as data: git's patch output parsed into files, hunks and numbered lines.

``between`` asks git for the patch through ``git --no-optional-locks diff-tree`` (plumbing:
no user diff configuration, no external diff or textconv program runs), so reading a diff
never writes and never locks.

Invariant: parsing never fails. Whatever git printed (a binary file, a mode change, a name that
is not UTF-8, a hunk cut short) comes back as a ``FileDiff`` a reader can show, with what could
not be shown said in ``note``; a diff larger than the caps is cut at a hunk line and says so.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..storage.gitnames import unquote
from ..storage.gitrepo import GitRepo

_HUNK = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(.*)$")
MAX_LINES = 20_000  # lines of all files together; the rest is summarised


@dataclass
class Line:
    kind: str  # " " context, "+" added, "-" removed, "\\" "no newline at end of file"
    text: str
    old: int | None  # line number in the old file
    new: int | None


@dataclass
class Hunk:
    header: str
    lines: list[Line] = field(default_factory=list)


@dataclass
class FileDiff:
    old_path: str | None  # None when the file is new
    new_path: str | None  # None when it was deleted
    binary: bool = False
    old_mode: str | None = None
    new_mode: str | None = None
    hunks: list[Hunk] = field(default_factory=list)
    added: int = 0
    removed: int = 0
    note: str | None = None  # what could not be shown

    @property
    def path(self) -> str:
        return self.new_path or self.old_path or "?"

    @property
    def status(self) -> str:
        if self.old_path is None:
            return "added"
        if self.new_path is None:
            return "deleted"
        if self.old_path != self.new_path:
            return "renamed"
        return "modified"


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


def _path(raw: bytes) -> str | None:
    """A path from a ---/+++ line: /dev/null is None; git quotes unusual names C-style."""
    raw = raw.rstrip(b"\t")
    if raw == b"/dev/null":
        return None
    if raw.startswith(b'"') and raw.endswith(b'"'):
        raw = unquote(raw[1:-1])
    return _text(raw[2:] if raw[:2] in (b"a/", b"b/") else raw)


def _header_paths(line: bytes) -> tuple[str | None, str | None]:
    """Both names from ``diff --git a/X b/Y`` (used when there are no ---/+++ lines)."""
    rest = line[len(b"diff --git "):]
    if rest.startswith(b'"'):
        end = rest.find(b'" ', 1)
        if end > 0:
            return _path(rest[:end + 1]), _path(rest[end + 2:])
    half = len(rest) // 2  # "a/P b/P": unambiguous when both names are equal
    if rest[half:half + 1] == b" " and rest[2:half] == rest[half + 3:]:
        return _path(rest[:half]), _path(rest[half + 1:])
    a, _, b = rest.partition(b" b/")
    return _path(a), _path(b"b/" + b)


def parse(patch: bytes, max_lines: int = MAX_LINES) -> list[FileDiff]:
    """The files of a ``git diff``/``diff-tree -p`` output, in order."""
    files: list[FileDiff] = []
    current: FileDiff | None = None
    hunk: Hunk | None = None
    old = new = 0
    shown = 0
    for raw in patch.split(b"\n"):
        if raw.startswith(b"diff --git "):
            a, b = _header_paths(raw)
            current = FileDiff(a, b)
            files.append(current)
            hunk = None
            continue
        if current is None:
            continue
        if hunk is None or raw[:1] not in (b" ", b"+", b"-", b"\\"):
            if _meta(current, raw):
                continue
            found = _HUNK.match(raw)
            if found:
                old, new = int(found.group(1)), int(found.group(3))
                hunk = Hunk(_text(raw))
                current.hunks.append(hunk)
            continue
        kind = chr(raw[0])
        if kind == "+":
            current.added += 1
        elif kind == "-":
            current.removed += 1
        if shown >= max_lines:
            if current.note is None:
                current.note = "The diff is too long to show here; the counts include every line."
            continue
        shown += 1
        line = Line(kind, _text(raw[1:]), old if kind in " -" else None,
                    new if kind in " +" else None)
        hunk.lines.append(line)
        old += kind in " -"
        new += kind in " +"
    return files


def _meta(current: FileDiff, raw: bytes) -> bool:
    """Extended header lines (modes, renames, binary): True when ``raw`` was one."""
    if raw.startswith(b"--- "):
        current.old_path = _path(raw[4:])
    elif raw.startswith(b"+++ "):
        current.new_path = _path(raw[4:])
    elif raw.startswith(b"new file mode "):
        current.old_path, current.new_mode = None, _text(raw[14:])
    elif raw.startswith(b"deleted file mode "):
        current.new_path, current.old_mode = None, _text(raw[18:])
    elif raw.startswith(b"old mode "):
        current.old_mode = _text(raw[9:])
    elif raw.startswith(b"new mode "):
        current.new_mode = _text(raw[9:])
    elif raw.startswith(b"Binary files ") or raw == b"GIT binary patch":
        current.binary = True
        current.note = "Binary file: not shown as text."
    elif raw.startswith((b"index ", b"similarity index ", b"rename from ", b"rename to ",
                         b"dissimilarity index ", b"copy from ", b"copy to ")):
        pass
    else:
        return False
    return True


def between(repo: GitRepo, old: str | None, new: str, max_lines: int = MAX_LINES) -> list[FileDiff]:
    """What changed from commit ``old`` to commit ``new`` (None: from nothing, as for a root
    commit). Both must be commit ids the caller resolved."""
    for sha in (old, new):
        if sha is not None and not re.fullmatch(r"[0-9a-f]{40,64}", sha):
            raise ValueError(f"{sha!r} is not a commit id")
    args = ["diff-tree", "-p", "-r", "--no-color", "--no-ext-diff", "--no-textconv",
            "--no-renames", "--full-index"]
    args += ["--root", new] if old is None else [old, new]
    return parse(repo.read_git(*args), max_lines)
