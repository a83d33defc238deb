"""Codex's ``apply_patch``, re-done from the patch text its hook recorded.

Invariant: ``apply`` maps the files a patch names (their bytes before, None when absent) to
their bytes after (None: deleted); it reads and writes nothing. A patch Codex would have refused
(bad grammar, context that is not in the file, a file to update that does not exist) raises
``edits.Refused``. Its work is spent from the op's ``Budget`` (``budget.py``): each file a hunk
reads, each line compared while a chunk is looked for, each file it builds. Each way of
comparing lines reads the file's lines once per hunk, so a search costs the lines it passes, not
a normalisation of each line at each place tried.

The format, as Codex documents it::

    *** Begin Patch
    *** Add File: path          then the file's lines, each starting with "+"
    *** Delete File: path
    *** Update File: path       optionally "*** Move to: new/path", then chunks:
    @@ optional context line    (a line to find first, such as a function's header)
     context line  -removed line  +added line
    *** End of File             (optional: the chunk ends the file)
    *** End Patch

Each chunk's old lines (context and removed) are found in the file after the previous chunk:
exactly, then ignoring trailing whitespace, then ignoring surrounding whitespace, then with
typographic dashes, quotes and spaces read as ASCII. The patch may arrive wrapped in a shell
heredoc (``apply_patch <<'EOF' ... EOF``). An updated file ends with a line end; Codex versions
differ on keeping a CRLF file's line ends, so both are accepted (``edits.EditResult.also``).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field

from .budget import Budget
from .edits import EditResult, Refused, read_text

BEGIN, END = "*** Begin Patch", "*** End Patch"
ADD, DELETE, UPDATE, MOVE = "*** Add File: ", "*** Delete File: ", "*** Update File: ", "*** Move to: "
EOF_MARK = "*** End of File"
HEREDOC = re.compile(r"\A\s*(?:apply_patch|applypatch)\s+<<-?\s*['\"]?(\w+)['\"]?\s*\n(.*)\n\1\s*\Z",
                     re.S)
ASCII = {"\u2010": "-", "\u2011": "-", "\u2012": "-", "\u2013": "-", "\u2014": "-", "\u2015": "-",
         "\u2212": "-", "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u201c": '"',
         "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u00a0": " ", "\u2002": " ", "\u2003": " ",
         "\u2009": " ", "\u202f": " ", "\u3000": " "}


@dataclass
class Chunk:
    context: str | None
    old: list[str] = field(default_factory=list)
    new: list[str] = field(default_factory=list)
    at_end: bool = False


@dataclass
class PatchHunk:
    kind: str  # "add", "delete" or "update"
    path: str
    lines: list[str] = field(default_factory=list)  # an added file's lines
    move_to: str | None = None
    chunks: list[Chunk] = field(default_factory=list)


def parse(patch: str) -> list[PatchHunk]:
    wrapped = HEREDOC.match(patch)
    lines = (wrapped.group(2) if wrapped else patch).strip().splitlines()
    if len(lines) < 2 or lines[0].strip() != BEGIN or lines[-1].strip() != END:
        raise Refused(f"the patch does not start with '{BEGIN}' and end with '{END}'")
    hunks: list[PatchHunk] = []
    for line in lines[1:-1]:
        if line.startswith((ADD, DELETE, UPDATE)):
            kind = "add" if line.startswith(ADD) else "delete" if line.startswith(DELETE) else "update"
            hunks.append(PatchHunk(kind, line.split(": ", 1)[1].strip()))
        elif not hunks:
            raise Refused(f"the patch has a line outside any file: {line[:80]!r}")
        else:
            _line(hunks[-1], line)
    return hunks


def _line(hunk: PatchHunk, line: str) -> None:
    if hunk.kind == "add":
        if not line.startswith("+"):
            raise Refused(f"a line of added file {hunk.path} does not start with '+'")
        hunk.lines.append(line[1:])
    elif hunk.kind == "delete":
        raise Refused(f"deleted file {hunk.path} is followed by lines")
    elif line.startswith(MOVE) and not hunk.chunks:
        hunk.move_to = line[len(MOVE):].strip()
    elif line.startswith("@@"):
        hunk.chunks.append(Chunk(line[2:].strip() or None))
    elif line.strip() == EOF_MARK and hunk.chunks:
        hunk.chunks[-1].at_end = True
    else:
        if not hunk.chunks:
            hunk.chunks.append(Chunk(None))
        chunk, mark, rest = hunk.chunks[-1], line[:1], line[1:]
        if mark not in ("", " ", "-", "+"):
            raise Refused(f"a line of the update to {hunk.path} starts with {mark!r}, not ' ', "
                          "'-' or '+'")
        if mark in ("", " ", "-"):
            chunk.old.append(rest)
        if mark in ("", " ", "+"):
            chunk.new.append(rest)


def apply(hunks: list[PatchHunk], files: dict[str, bytes | None],
          cost: Budget) -> dict[str, EditResult | None]:
    """The patch's effect on ``files`` (every path it names): new content, or None (deleted)."""
    out: dict[str, EditResult | None] = {}
    for hunk in hunks:
        before = files.get(hunk.path)
        cost.spend(1 + sum(map(len, hunk.lines)))
        if hunk.kind == "add":
            out[hunk.path] = EditResult("".join(f"{line}\n" for line in hunk.lines).encode())
        elif before is None:
            raise Refused(f"{hunk.path} does not exist, so it cannot be deleted or updated")
        elif hunk.kind == "delete":
            out[hunk.path] = None
        else:
            out[hunk.move_to or hunk.path] = _update(before, hunk, cost)
            if hunk.move_to and hunk.move_to != hunk.path:
                out[hunk.path] = None
    return out


def _update(before: bytes, hunk: PatchHunk, cost: Budget) -> EditResult:
    cost.spend(2 * len(before))  # read as text, split in lines
    text = read_text(before)
    assert text is not None
    lines = text.body.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    at, swaps = 0, []
    seen: dict[int, list[str]] = {}  # the lines as each way of comparing reads them
    for chunk in hunk.chunks:
        if chunk.context is not None:
            found = _seek(lines, [chunk.context], at, False, seen, cost)
            if found is None:
                raise Refused(f"the context line {chunk.context[:80]!r} is not in {hunk.path}")
            at = found + 1
        if not chunk.old:
            swaps.append((len(lines), 0, chunk.new))
            continue
        old, new = chunk.old, chunk.new
        found = _seek(lines, old, at, chunk.at_end, seen, cost)
        if found is None and old[-1] == "":
            old, new = old[:-1], new[:-1] if new and new[-1] == "" else new
            found = _seek(lines, old, at, chunk.at_end, seen, cost)
        if found is None:
            raise Refused(f"the lines a chunk changes are not in {hunk.path}: "
                          f"{chr(10).join(chunk.old)[:120]!r}")
        swaps.append((found, len(old), new))
        at = found + len(old)
    for start, length, new in sorted(swaps, reverse=True):
        lines[start:start + length] = new
    cost.holds(sum(map(len, lines)) + len(lines))
    body = "\n".join(lines) + "\n"
    cost.spend(2 * len(body))
    lf = body.encode(text.encoding, "surrogatepass")
    return EditResult(text.encode(body), lf if text.crlf else None)


def _seek(lines: list[str], pattern: list[str], start: int, at_end: bool,
          seen: dict[int, list[str]], cost: Budget) -> int | None:
    """Where ``pattern`` starts in ``lines`` from ``start`` (or at the end): exactly, then each
    looser way of comparing in turn, as Codex looks (``seen`` keeps each way's reading of
    ``lines`` for the hunk's other chunks)."""
    if len(pattern) > len(lines):
        return None
    first = max(len(lines) - len(pattern) if at_end else start, 0)
    last = len(lines) - len(pattern)
    for way, read in enumerate(_WAYS):
        if way not in seen:
            cost.spend(sum(map(len, lines)) + len(lines))
            seen[way] = [read(line) for line in lines]
        have, want = seen[way], [read(p) for p in pattern]
        head, size, work = want[0], len(want), 0
        for i in range(first, last + 1):
            work += 1
            if have[i] == head:
                work += size
                if have[i:i + size] == want:
                    cost.spend(work)
                    return i
            if work > 65536:  # (counted in batches: a call per place tried would double it)
                cost.spend(work)
                work = 0
        cost.spend(work)
    return None


def _ascii(text: str) -> str:
    return "".join(ASCII.get(c, c) for c in unicodedata.normalize("NFC", text.strip()))


def _exact(text: str) -> str:
    return text


# How Codex compares a chunk's lines with the file's, strictest first.
_WAYS: tuple[Callable[[str], str], ...] = (_exact, str.rstrip, str.strip, _ascii)
