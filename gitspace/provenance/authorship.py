"""The authorship log: the Git AI Standard v3.0.0 note, read and written. This docstring is the
format contract as gitspace keeps it (``specs/git_ai_standard_v3.0.0.md`` in git-ai-project/git-ai
is the standard; where the two differ, the standard wins and this is a bug).

A note is text: an *attestation section*, a line holding exactly ``---``, and a *metadata section*
(one JSON object)::

    src/main.py
      s_c9883b05a2487d::t_9f8e7d6c5b4a32 1-10,15-20
      h_31dce776f88375 25
    "docs/my notes.md"
      s_c9883b05a2487d::t_a1b2c3d4e5f678 1-4
    ---
    {
      "schema_version": "authorship/3.0.0",
      "base_commit_sha": "<the commit the note is on>",
      "prompts": {},
      "humans": {"h_31dce776f88375": {"author": "Name <email>"}},
      "sessions": {"s_c9883b05a2487d": {"agent_id": {"tool": "claude", "id": "<session id>",
                   "model": "<model>"}, "human_author": "Name <email>"}},
      "gitspace": {"version": 1, "traces": {"t_9f8e7d6c5b4a32": {...}}, "files": [...]}
    }

Attestations
------------
- A file path starts a line; one with whitespace in it, or that starts with ``"``, or that is
  ``---``, is wrapped in double quotes (nothing inside is escaped: a reader drops the first and
  last character). Each entry below it is two spaces, a key, a space and line ranges
  (``1,2,19-222``): 1-based, ascending, merged, no spaces. Files without entries are left out.
- Keys: ``s_<14 hex>::t_<14 hex>`` an agent's call (the session: the first 14 hex of SHA-256 of
  ``<tool>:<conversation id>``; the trace: of ``gitspace-op:<op id>``, so each recorded call has
  its own, the same every time it is computed); ``h_<14 hex>`` a person, of SHA-256 of their git
  identity ``Name <email>`` exactly as git resolves it; a bare hex key is a legacy session (its
  record in ``prompts``). Other tools' keys are read as they are, routed by prefix.
- A path a line cannot hold (a line break or a carriage return in it, or bytes that are not
  UTF-8) is kept in ``gitspace.files`` instead: ``[{"path": P}`` or ``{"path_hex": HEX}``, ``"keys":
  {KEY: RANGES}]``. Nothing is dropped.

Metadata
--------
``schema_version`` (``authorship/3.0.0``; another version is refused), ``base_commit_sha`` (the
commit the note is attached to), ``prompts``, and ``humans``/``sessions`` when there are any. A
session record is ``agent_id`` ``{tool, id, model}`` and ``human_author``: never transcript text.
``gitspace`` (ignored by other readers) holds ``traces``: for each trace id the call it stands
for (``op``, ``tool``, ``agent``, ``session``, ``tool_use_id``, ``time``), all of them names and
ids, never text. Fields gitspace does not know are kept as they were when a note is rewritten.

Reading: a note is untrusted input (another person's push, another tool). Over ``NOTE_CAP`` bytes,
not UTF-8, without the divider, with a malformed path, entry or range, or metadata that is not an
object of the shapes above, it is refused with a sentence (``NoteRefused``); nothing is guessed.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right

try:  # CPython's own SHA-256: a hook that imports hashlib pays for OpenSSL's (about 5 ms)
    from _sha256 import sha256
except ImportError:  # pragma: no cover  (another Python)
    from hashlib import sha256

from ..errors import GitspaceError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SCHEMA = "authorship/3.0.0"
REF = "refs/notes/ai"
NOTE_CAP = 16 << 20  # bytes of a note gitspace reads; a larger one is refused unread
LINE_MAX = 1 << 31  # line numbers above this are no file's
KEY_MAX = 256  # characters of an attestation key
PATH_MAX = 4096
EXTENSION = "gitspace"

Ranges = list[tuple[int, int]]  # sorted, disjoint, merged (first, last), 1-based inclusive
_RANGE = re.compile(r"[1-9][0-9]{0,9}(?:-[1-9][0-9]{0,9})?")


class NoteRefused(GitspaceError):
    """A note that is no authorship log gitspace can read (says why)."""


def _refused(why: str) -> NoteRefused:
    return NoteRefused(f"The authorship note {why}.", hint=(
        "The note was written by another tool or changed by hand: gitspace leaves it as it is "
        "and reads the commit as if it had none. 'git notes --ref=ai show COMMIT' shows it."))


# -- keys ----------------------------------------------------------------------------------

def _hex14(text: str) -> str:
    return sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:14]


def session_key(tool: str, conversation: str) -> str:
    return "s_" + _hex14(f"{tool}:{conversation}")


def trace_key(op_id: str) -> str:
    return "t_" + _hex14(f"gitspace-op:{op_id}")


def human_key(identity: str) -> str:
    """``h_`` of ``Name <email>`` exactly as given."""
    return "h_" + _hex14(identity)


def call_key(session: str, trace: str) -> str:
    return f"{session}::{trace}"


def kind_of(key: str) -> str:
    """``agent`` (an ``s_`` session key or a legacy prompt), ``person`` (``h_``)."""
    return "person" if key.startswith("h_") else "agent"


def split_key(key: str) -> tuple[str, str | None]:
    """(session or legacy id, trace id or None)."""
    head, sep, trace = key.partition("::")
    return head, (trace if sep else None)


# -- ranges --------------------------------------------------------------------------------

def to_ranges(lines: list[int] | set[int]) -> Ranges:
    out: Ranges = []
    for n in sorted(lines):
        if out and n == out[-1][1] + 1:
            out[-1] = (out[-1][0], n)
        elif not out or n > out[-1][1]:
            out.append((n, n))
    return out


def format_ranges(ranges: Ranges) -> str:
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in ranges)


def parse_ranges(text: str) -> Ranges:
    out: Ranges = []
    for part in text.split(","):
        if not _RANGE.fullmatch(part):
            raise _refused(f"has a line range {part[:40]!r} that is not N or N-M")
        first, _, last = part.partition("-")
        a, b = int(first), int(last or first)
        if b < a or b >= LINE_MAX:
            raise _refused(f"has a line range {part!r} that ends before it starts or past any file")
        if out and a <= out[-1][1]:
            if a < out[-1][0]:
                raise _refused(f"lists line ranges out of order ({text[:60]!r})")
            out[-1] = (out[-1][0], max(b, out[-1][1]))
        elif out and a == out[-1][1] + 1:
            out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


def covers(ranges: Ranges, line: int) -> bool:
    i = bisect_right(ranges, (line, LINE_MAX)) - 1
    return i >= 0 and ranges[i][0] <= line <= ranges[i][1]


def keys_in(entries: dict[str, Ranges], first: int, count: int) -> list[str | None]:
    """The key ``entries`` (key → ranges) give each of lines ``first`` to ``first + count - 1``
    (None: not attested); where ranges of two keys overlap, the first key's (``key_at``'s).
    Ranges past those lines are cut, however long a hostile note makes them."""
    keys: list[str | None] = [None] * count
    last = first + count - 1
    for key, ranges in reversed(list(entries.items())):
        i = max(0, bisect_right(ranges, (first, LINE_MAX)) - 1)  # (ranges: sorted, apart)
        while i < len(ranges) and ranges[i][0] <= last:
            lo, hi = max(ranges[i][0], first), min(ranges[i][1], last)
            if lo <= hi:
                keys[lo - first:hi - first + 1] = [key] * (hi - lo + 1)
            i += 1
    return keys


def count(ranges: Ranges) -> int:
    return sum(b - a + 1 for a, b in ranges)


# -- the note ------------------------------------------------------------------------------

class Note:
    """One authorship log: ``files`` (path → key → ranges) and its metadata, with every field
    gitspace does not know kept in ``other``."""

    def __init__(self, base: str = "", files: dict[str, dict[str, Ranges]] | None = None,
                 sessions: dict[str, dict[str, Any]] | None = None,
                 humans: dict[str, dict[str, Any]] | None = None,
                 prompts: dict[str, dict[str, Any]] | None = None,
                 traces: dict[str, dict[str, Any]] | None = None,
                 other: dict[str, Any] | None = None) -> None:
        self.base = base
        self.files = files if files is not None else {}
        self.sessions = sessions if sessions is not None else {}
        self.humans = humans if humans is not None else {}
        self.prompts = prompts if prompts is not None else {}
        self.traces = traces if traces is not None else {}
        self.other = other if other is not None else {}

    def key_at(self, path: str, line: int) -> str | None:
        for key, ranges in self.files.get(path, {}).items():
            if covers(ranges, line):
                return key
        return None

    def record_of(self, key: str) -> dict[str, Any] | None:
        """The metadata record a key routes to (``sessions``, ``humans`` or ``prompts``)."""
        head, _ = split_key(key)
        table = self.sessions if head.startswith("s_") else self.humans if head.startswith(
            "h_") else self.prompts
        found = table.get(head)
        return found if isinstance(found, dict) else None

    def keys(self) -> set[str]:
        return {k for entries in self.files.values() for k in entries}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Note) and self.__dict__ == other.__dict__

    def __repr__(self) -> str:
        return f"Note(base={self.base!r}, files={len(self.files)})"


# -- writing -------------------------------------------------------------------------------

def _writable(path: str) -> bool:
    """Can the attestation section hold ``path`` on a line of its own?"""
    if "\n" in path or "\r" in path or not path:
        return False
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _quoted(path: str) -> str:
    needs = path == "---" or path.startswith('"') or any(c.isspace() for c in path)
    return f'"{path}"' if needs else path


def dump(note: Note) -> str:
    """The note's text (``parse(dump(n)) == n`` for every note ``parse`` returns)."""
    lines: list[str] = []
    unlisted = []
    for path in sorted(note.files):
        entries = {k: r for k, r in note.files[path].items() if r}
        if not entries:
            continue
        ordered = sorted(entries.items(), key=lambda kv: (kv[1][0], kv[0]))
        if not _writable(path):
            spelled: dict[str, Any] = ({"path": path} if _plain_text(path)
                                       else {"path_hex": path.encode("utf-8", "surrogateescape").hex()})
            unlisted.append({**spelled, "keys": {k: format_ranges(r) for k, r in ordered}})
            continue
        lines.append(_quoted(path))
        lines += [f"  {key} {format_ranges(ranges)}" for key, ranges in ordered]
    meta: dict[str, Any] = {"schema_version": SCHEMA}
    meta.update({k: v for k, v in note.other.items() if k in ("git_ai_version",)})
    meta["base_commit_sha"] = note.base
    meta["prompts"] = note.prompts
    if note.humans:
        meta["humans"] = note.humans
    if note.sessions:
        meta["sessions"] = note.sessions
    meta.update({k: v for k, v in note.other.items() if k not in meta and k != EXTENSION})
    ext = dict(note.other.get(EXTENSION) or {}) if isinstance(note.other.get(EXTENSION),
                                                               dict) else {}
    ext.pop("files", None)
    ext.pop("traces", None)
    if note.traces or unlisted:
        ext["version"] = 1
    if note.traces:
        ext["traces"] = note.traces
    if unlisted:
        ext["files"] = unlisted
    if ext:
        meta[EXTENSION] = ext
    return "\n".join([*lines, "---", json.dumps(meta, indent=2, ensure_ascii=False)]) + "\n"


def _plain_text(path: str) -> bool:
    try:
        path.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


# -- reading -------------------------------------------------------------------------------

def parse(data: bytes | str) -> Note:
    """The note in ``data``; NoteRefused (saying what is wrong) for anything else."""
    if isinstance(data, bytes):
        if len(data) > NOTE_CAP:
            raise _refused(f"is {len(data):,} bytes, more than the {NOTE_CAP >> 20} MiB "
                           "gitspace reads")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            raise _refused("is not UTF-8 text") from None
    else:
        text = data
    lines = [line[:-1] if line.endswith("\r") else line for line in text.split("\n")]
    try:
        divider = lines.index("---")
    except ValueError:
        raise _refused("has no line '---' between its attestations and its metadata") from None
    files = _attestations(lines[:divider])
    try:
        meta = json.loads("\n".join(lines[divider + 1:]))
    except (ValueError, RecursionError) as e:
        raise _refused(f"has metadata that is not JSON ({str(e)[:80]})") from None
    return _note(files, meta)


def _attestations(lines: list[str]) -> dict[str, dict[str, Ranges]]:
    files: dict[str, dict[str, Ranges]] = {}
    current: dict[str, Ranges] | None = None
    for number, raw in enumerate(lines, 1):
        line = raw.rstrip()
        if not line:
            continue
        if line.startswith("  "):
            if current is None:
                raise _refused(f"has an entry before any file path (line {number})")
            key, sep, ranges = line[2:].partition(" ")
            if not sep or not key or len(key) > KEY_MAX or " " in ranges or not ranges:
                raise _refused(f"has a malformed entry on line {number}: {line[:80]!r}")
            parsed = parse_ranges(ranges)
            current[key] = union(current[key], parsed) if key in current else parsed
            continue
        path = line[1:-1] if len(line) >= 2 and line[0] == '"' and line[-1] == '"' else line
        if not path or len(path) > PATH_MAX:
            raise _refused(f"has a malformed file path on line {number}: {line[:80]!r}")
        current = files.setdefault(path, {})
    return {p: e for p, e in files.items() if e}


def union(a: Ranges, b: Ranges) -> Ranges:
    out: Ranges = []
    for first, last in sorted(a + b):
        if out and first <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(last, out[-1][1]))
        else:
            out.append((first, last))
    return out


def _note(files: dict[str, dict[str, Ranges]], meta: object) -> Note:
    if not isinstance(meta, dict):
        raise _refused("has metadata that is not a JSON object")
    version = meta.get("schema_version")
    if version != SCHEMA:
        raise _refused(f"is of schema {str(version)[:40]!r}; gitspace reads {SCHEMA} only")
    base = meta.get("base_commit_sha")
    if not isinstance(base, str):
        raise _refused("has no base_commit_sha string")
    if "prompts" not in meta:
        raise _refused("has no prompts object")
    tables = {}
    for name in ("prompts", "sessions", "humans"):
        table = meta.get(name) or {}
        if not isinstance(table, dict) or not all(
                isinstance(k, str) and isinstance(v, dict) for k, v in table.items()):
            raise _refused(f"has a {name} field that is not an object of records")
        tables[name] = table
    for key, record in tables["sessions"].items():
        if not isinstance(record.get("agent_id"), dict):
            raise _refused(f"has a session {key[:40]!r} without an agent_id")
    for key, record in tables["humans"].items():
        if not isinstance(record.get("author"), str):
            raise _refused(f"has a person {key[:40]!r} without an author")
    other = {k: v for k, v in meta.items()
             if k not in ("schema_version", "base_commit_sha", "prompts", "sessions", "humans")}
    ext = other.get(EXTENSION)
    traces: dict[str, dict[str, Any]] = {}
    if isinstance(ext, dict):
        found = ext.get("traces", {})
        if isinstance(found, dict):
            traces = {k: v for k, v in found.items() if isinstance(k, str) and isinstance(v, dict)}
        _unlisted(ext.get("files"), files)
    return Note(base, files, tables["sessions"], tables["humans"], tables["prompts"], traces,
                other)


def _unlisted(found: object, files: dict[str, dict[str, Ranges]]) -> None:
    """Add the paths the attestation section could not hold (``gitspace.files``)."""
    if not isinstance(found, list):
        return
    for item in found:
        if not isinstance(item, dict) or not isinstance(item.get("keys"), dict):
            raise _refused("has a gitspace.files entry that is not {path, keys}")
        path = item.get("path")
        if not isinstance(path, str) and isinstance(item.get("path_hex"), str):
            try:
                path = bytes.fromhex(item["path_hex"]).decode("utf-8", "surrogateescape")
            except ValueError:
                path = None
        if not isinstance(path, str) or not path or len(path) > PATH_MAX:
            raise _refused("has a gitspace.files entry without a usable path")
        entries = files.setdefault(path, {})
        for key, ranges in item["keys"].items():
            if not isinstance(key, str) or not isinstance(ranges, str) or len(key) > KEY_MAX:
                raise _refused("has a gitspace.files entry with a malformed key or range")
            entries[key] = parse_ranges(ranges)
