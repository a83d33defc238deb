"""Other harnesses' file tools, re-done on a file's bytes from the input they recorded.

Invariant: pure functions from (the file's bytes before, or None when it did not exist; the
tool's input) to its bytes after. Nothing here reads or writes a file. A call the harness itself
would have refused raises ``Refused`` with its reason: such a call changes nothing, so no
recorded op can be it. Each spends its work from the op's ``Budget`` (``budget.py``): every pass
over the text, and every text it builds, is counted before it is made, so a forged input that
would make the text huge or the search long stops at ``OverBudget``.

Claude Code (observed with the real binary, tests/replay/test_harness_replay.py):
- ``Write`` writes ``content`` as sent (its line ends too), keeping an existing file's encoding
  (UTF-8, or UTF-16LE behind its byte-order mark) and byte-order mark.
- ``Edit`` and ``MultiEdit`` read the file with CRLF turned into LF, apply each edit in order and
  write it back in the file's encoding, with CRLF when the file had more CRLF than lone LF line
  ends. An edit's ``old_string`` must occur exactly once unless ``replace_all``; when it does not
  occur as given, the same text with curly quotes (‘’“”) written straight is looked for, and
  ``new_string`` then gets the file's curly quotes. An empty ``new_string`` also takes the line
  end after ``old_string``. An empty ``old_string`` creates the file (refused over a file with
  anything but whitespace in it). An edit that changes nothing, an ``old_string`` found inside an
  earlier edit's ``new_string``, and a result equal to the file are refused.
- Trailing spaces Claude Code strips from a ``new_string`` or ``content`` (outside Markdown) are
  already gone from the input its hooks report, so nothing here strips them.

Gemini CLI (its ``replace`` and ``write_file`` as documented): ``old_string`` must occur exactly
``expected_replacements`` times (default 1) in the text with CRLF read as LF, and every
occurrence is replaced; an empty ``old_string`` creates a file that does not exist.
``write_file`` writes ``content``. Versions differ on whether CRLF is written back, so both are
accepted (``EditResult.also``).

Cursor's ``afterFileEdit`` reports the replacements it made (``edits``: ``old_string`` /
``new_string``), each applied to the first place it occurs after the previous one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .budget import Budget

BOM = "\ufeff"
OPENERS = " \t\n\r([{\u2014\u2013"  # a straight quote after one of these opens a quotation
CURLY = {"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"'}


class Refused(Exception):  # noqa: N818 (it is the harness's refusal, not a failure of ours)
    """The harness would have refused this call (the message says why, in its terms)."""


@dataclass(frozen=True)
class Edit:
    old: str
    new: str
    every: bool = False  # replace_all


@dataclass(frozen=True)
class Text:
    """A file's text as the harnesses read it: LF line ends, and how to write it back."""

    body: str
    encoding: str = "utf-8"
    bom: bool = False
    crlf: bool = False

    def encode(self, body: str, *, line_ends: bool = True) -> bytes:
        if line_ends and self.crlf:
            body = body.replace("\n", "\r\n")
        return ((BOM if self.bom else "") + body).encode(self.encoding, "surrogatepass")


@dataclass(frozen=True)
class EditResult:
    """The file's bytes after the call, and another outcome the harness may also have written."""

    data: bytes
    also: bytes | None = None


def read_text(data: bytes | None) -> Text | None:
    """The text of ``data`` (None for a file that does not exist); refused if it is not text."""
    if data is None:
        return None
    encoding = "utf-16-le" if data.startswith(b"\xff\xfe") else "utf-8"
    try:
        raw = data.decode(encoding)
    except UnicodeDecodeError:
        raise Refused("the file is not UTF-8 or UTF-16LE text, which the harness does not "
                      "edit") from None
    bom = raw.startswith(BOM)
    raw = raw[1:] if bom else raw
    crlf = raw.count("\r\n") > raw.count("\n") - raw.count("\r\n")
    return Text(raw.replace("\r\n", "\n"), encoding, bom, crlf)


# -- Claude Code -----------------------------------------------------------------------------

def claude_write(before: bytes | None, content: str, cost: Budget) -> EditResult:
    cost.spend(len(before or b"") + len(content))
    text = read_text(before) or Text("")
    return EditResult(text.encode(content, line_ends=False))


def claude_edit(before: bytes | None, path: str, edits: Sequence[Edit], cost: Budget) -> EditResult:
    if path.endswith(".ipynb"):
        raise Refused("the file is a Jupyter notebook, which Claude Code edits with NotebookEdit")
    text = read_text(before)
    if not edits:
        raise Refused("the call has no edits")
    if text is None and edits[0].old != "":
        raise Refused("the file does not exist, and only an edit with an empty old_string "
                      "creates one")
    body = text.body if text is not None else ""
    cost.spend(len(before or b""))
    written: list[str] = []
    for edit in edits:
        cost.spend(2 * len(body) + sum(map(len, written)))  # its search, and the earlier edits'
        body = _claude_one(body, edit, written, cost, exists=text is not None)
        written.append(edit.new)
    if text is not None and body == text.body:
        raise Refused("the edited file matches the original exactly")
    return EditResult((text or Text("")).encode(body))


def _claude_one(body: str, edit: Edit, written: list[str], cost: Budget, *,
                exists: bool) -> str:
    if edit.old == "":
        if exists and body.strip():
            raise Refused("an empty old_string creates a file, and this file already exists")
        return edit.new
    probe = edit.old.rstrip("\n")
    if probe and any(probe in earlier for earlier in written):
        raise Refused("an old_string is part of an earlier edit's new_string")
    actual = _claude_find(body, edit.old)
    if actual is None:
        raise Refused("old_string is not in the file")
    new = edit.new if actual == edit.old else _curl_like(actual, edit.new)
    if not edit.every and body.count(actual) > 1:
        raise Refused(f"old_string occurs {body.count(actual)} times and replace_all is false")
    if new == "" and not actual.endswith("\n") and actual + "\n" in body:
        actual += "\n"
    _grows(cost, body, actual, new, body.count(actual) if edit.every else 1)
    after = body.replace(actual, new) if edit.every else body.replace(actual, new, 1)
    if after == body:
        raise Refused("the edit changes nothing")
    return after


def _grows(cost: Budget, body: str, old: str, new: str, times: int) -> None:
    """Count the text replacing ``old`` by ``new`` ``times`` in ``body`` builds, before it is."""
    size = len(body) + times * (len(new) - len(old))
    cost.holds(size)
    cost.spend(size)


def _claude_find(body: str, old: str) -> str | None:
    """``old`` as the file holds it: as given, or with the file's curly quotes."""
    if old in body:
        return old
    at = _straight(body).find(_straight(old))
    return body[at:at + len(old)] if at >= 0 else None


def _straight(text: str) -> str:
    return "".join(CURLY.get(c, c) for c in text)


def _curl_like(actual: str, new: str) -> str:
    """``new`` with its straight quotes curled, as the file's matched text has them."""
    doubles = "\u201c" in actual or "\u201d" in actual
    singles = "\u2018" in actual or "\u2019" in actual
    out = []
    for i, c in enumerate(new):
        opening = i == 0 or new[i - 1] in OPENERS
        if c == '"' and doubles:
            c = "\u201c" if opening else "\u201d"
        elif c == "'" and singles:
            between = 0 < i < len(new) - 1 and new[i - 1].isalpha() and new[i + 1].isalpha()
            c = "\u2018" if opening and not between else "\u2019"
        out.append(c)
    return "".join(out)


# -- Gemini CLI ------------------------------------------------------------------------------

def gemini_write(before: bytes | None, content: str, cost: Budget) -> EditResult:
    cost.spend(len(content))
    return EditResult(content.encode("utf-8", "surrogatepass"))


def gemini_replace(before: bytes | None, old: str, new: str, expected: int,
                   cost: Budget) -> EditResult:
    cost.spend(2 * len(before or b""))
    text = read_text(before)
    if text is None:
        if old != "":
            raise Refused("the file does not exist, and only an empty old_string creates one")
        return EditResult(new.encode("utf-8", "surrogatepass"))
    if old == "":
        raise Refused("an empty old_string creates a file, and this file already exists")
    found = text.body.count(old)
    if found != expected:
        raise Refused(f"old_string occurs {found} time(s), and {expected} were expected")
    if old == new:
        raise Refused("old_string and new_string are identical")
    _grows(cost, text.body, old, new, found)
    body = text.body.replace(old, new)
    lf = Text(body, text.encoding, text.bom).encode(body)
    return EditResult(text.encode(body), lf if text.crlf else None)


# -- Cursor ----------------------------------------------------------------------------------

def cursor_edits(before: bytes | None, edits: Sequence[Edit], cost: Budget) -> EditResult:
    cost.spend(len(before or b""))
    text = read_text(before) or Text("")
    body, at = text.body, 0
    for edit in edits:
        cost.spend(len(body))
        _grows(cost, body, edit.old, edit.new, 1)
        found = body.find(edit.old, at) if edit.old else at
        if found < 0:
            found = body.find(edit.old)
        if found < 0:
            raise Refused("an edit's old_string is not in the file")
        body = body[:found] + edit.new + body[found + len(edit.old):]
        at = found + len(edit.new)
    return EditResult(text.encode(body))
