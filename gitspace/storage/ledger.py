"""The ledger: op records carried in commit messages. This docstring is the format contract.

Format 1
--------
An op commit's message is a subject line, an optional body, and, as its LAST paragraph, a
trailer block that git's own trailer parser understands::

    str_replace notes/todo.md

    Gitspace-Format: 1
    Gitspace-Op: 01JF3Q7Z0A8K3M2N4P5R6S7T8V
    Gitspace-Tool: str_replace
    Gitspace-Source: tool
    Gitspace-Args: {"new_str":"done","old_str":"todo","path":"notes/todo.md"}
    Gitspace-Agent: maze-runner
    Gitspace-Session: 01JF3Q6...
    Gitspace-Tool-Use-Id: toolu_01...

The body, when there is one, is for people; a tool op's body ends with a ``Result:`` paragraph
holding what the tool answered (capped at 4,000 characters), which is how a resumed agent reads
back the result of an op it ran before a crash. Only the last paragraph is ever parsed.

Keys, in this order, each at most once:

- ``Gitspace-Format`` (required, first): the integer ``1``.
- ``Gitspace-Op`` (required): the op id, a 26-character ULID (time-ordered).
- ``Gitspace-Tool`` (required): the tool name, ``[a-z][a-z0-9_]*``.
- ``Gitspace-Source`` (required): ``tool`` (a tool call), ``external`` (outside changes committed
  by gitspace), ``init`` (the workspace's first commit) or ``transcript`` (a session's
  conversation committed on request; it is not a tool call and is never re-run).
- ``Gitspace-Args`` (required): the call's arguments as canonical JSON: keys sorted, no
  whitespace, ASCII only (every other character ``\\u``-escaped), hence always one line. A string
  value may be elided to ``{"$blob": "<sha1>", "bytes": N}`` when it equals the content of a blob
  in the commit's own tree; the arguments stay recoverable from the repository alone.
- ``Gitspace-Agent``, ``Gitspace-Session``, ``Gitspace-Tool-Use-Id`` (optional): tokens matching
  ``[A-Za-z0-9][A-Za-z0-9._:@+=/-]{0,199}``.
- ``Gitspace-Undo-Of`` (optional): comma-separated op ids this op reverts.
- ``Gitspace-Redo-Of`` (optional): the op id of the undo this op reverts.
- ``Gitspace-Script`` (optional): the blob id of the constraint script that ran.
- ``Gitspace-Rebased-From`` (optional): the commit the op was first recorded as, when a rebase by
  meaning (``replay --onto``, ``sync``) re-ran it on another base; the op id stays the same. It
  says where the op came from, and nothing checks it: that commit may never have left the clone
  that made it.

Format 2 (additive: harness ops)
--------------------------------
Format 2 is format 1 plus what an op recorded from another agent harness's hooks needs (Claude
Code, Codex, Gemini CLI, Cursor, ``gitspace record``). Only such ops are written as format 2;
every other op is still written as format 1, so older readers keep reading them. A reader of
format 2 reads format 1 unchanged.

- ``Gitspace-Format``: ``2``.
- ``Gitspace-Source``: also ``harness``: a tool call the harness ran with its own tool, recorded
  from its hooks. Replay checks that it changes exactly the paths ``Gitspace-Paths`` names; a
  file edit it knows (Claude Code's ``Write``, ``Edit``...) it re-does from the args, and takes
  any other (a shell command) as recorded.
- ``Gitspace-Tool``: for source ``harness``, the harness's own tool name as it gives it
  (``Write``, ``Bash``, ``apply_patch``...): ``[A-Za-z][A-Za-z0-9_.-]*``, at most 64 characters.
  For every other source the format 1 rule holds.
- ``Gitspace-Args``: for source ``harness``, the tool's input as the harness gave it, except that
  file paths inside the workspace are made relative to it, and that a string longer than 4,096
  characters is either elided to a ``$blob`` as above or, when it is no file's content (an
  Edit's replacement text, a long command), replaced by ``{"$omitted": "<sha1 of its UTF-8
  bytes>", "bytes": N}``: the harness's transcript holds it.
- ``Gitspace-Paths`` (new, last; required with source ``harness``, allowed with no other):
  canonical JSON ``{"count": N, "paths": [...]}``: how many paths the commit changes and the first
  100 of them, sorted. For a file tool they are the files it wrote; for a shell command they are
  what changed while it ran.

Format 3 (additive: delegated calls)
------------------------------------
Format 3 is format 2 plus what an op made by a delegated agent needs: the call it answers to.
Only such ops are written as format 3: its tool calls (source ``tool``) and the outside changes
one of them found first (source ``external``, the commit just before it); every other op is
written as before. A reader of format 3 reads formats 1 and 2 unchanged.

- ``Gitspace-Format``: ``3``.
- ``Gitspace-Parent-Session``, ``Gitspace-Parent-Tool-Use-Id`` (new, last, in this order; both
  or neither): tokens as above. The session of the agent that delegated the task and the id of
  its ``delegate`` tool call; the op's own ``Gitspace-Session`` is the delegated agent's. A
  chain of them is the tree of calls: a grandchild's op names the child, whose ops (or session
  file) name the parent.

Format 4 (additive: where an op stands)
---------------------------------------
Format 4 is formats 1, 2 and 3 together, for ops of every source, plus the op before it: every op
is written in format 4. A reader of format 4 reads formats 1 to 3 unchanged.

- ``Gitspace-Format``: ``4``.
- ``Gitspace-Source``: any source of the formats before; ``Gitspace-Tool`` is the harness's own
  name for source ``harness`` (as in format 2) and a gitspace tool's name for every other.
- ``Gitspace-Paths``: as in format 2, required with source ``harness`` and allowed with no other;
  ``Gitspace-Parent-Session`` and ``Gitspace-Parent-Tool-Use-Id``: as in format 3.
- ``Gitspace-After`` (new, last; optional): the op id that the op's commit's first parent records,
  the op before it on its branch or line. It is absent exactly when that parent records no op (a
  person's commit, a merge) or there is none (the first commit). ``storage/opchain.py`` writes
  it (``message``) and checks it (``misplaced``): an op whose first parent records another op,
  or none where it names one, has been moved, or an op before it dropped or copied, and
  ``replay`` and ``verify`` report it at that op.

Format versions
---------------
``FORMATS`` holds every version this gitspace reads: which op sources are written in it, what a
tool name looks like in it, and which keys it may hold (all keys keep the order of ``_KEYS``).
An op is written in ``FORMAT`` unless its source needs another (``version_for``); since format 4
every source is written in it, delegated ops too (``PARENTED``). A change to the block is a new
version: append any new key to ``_KEYS``, add ``FORMATS[n]`` (copy the last and change what
changes), make it ``FORMAT`` if every op should be written in it, and document it above. Never
change or drop an old version, so old history still reads. An ``Op`` read back remembers its
version (``Op.format``) and is written back in it. A block that declares a version above every
one in ``FORMATS`` was written by a newer gitspace: reading it raises ``NewerFormat`` (a
``LedgerError``), so that a check of such history can refuse it as such, with the fix (a newer
gitspace), rather than report it as forged.

Checkpoint tags and branch reflogs
----------------------------------
A checkpoint is an annotated tag whose message is one line of text and, as its last paragraph,
``Gitspace-Checkpoint: <name>``, ``Gitspace-Branch: <branch>``, ``Gitspace-Agent: <agent>`` and,
when a tool call made it, ``Gitspace-Op: <op id>`` (``checkpoint_message``/``parse_checkpoint``).
A branch a tool call created carries its op in the first line of its reflog:
``gitspace: branch <name> (op <op id>)`` (``branch_note``/``parse_branch_note``). The tag's
block is read by the same trailer reader as an op commit's; nothing outside this module parses
either.

Why nothing agent-supplied can forge or break a trailer: args are JSON-escaped into one ASCII line;
every other value is validated against the token pattern before it is written; the subject is
stripped of control characters and line breaks; only the final paragraph is parsed, and it must
consist solely of the keys above. A commit whose last paragraph does not start with
``Gitspace-Format`` is not an op (a user's own commit); one that does but breaks any rule above is
malformed, and ``verify`` reports it.
"""

from __future__ import annotations

import os
import re
import time
import unicodedata

from ..errors import BadArguments, GitspaceError, LedgerError
from . import bounds, ids
from .loose import sha1_hex
from .records import field, record, replace

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

PATHS_LISTED = 100  # Gitspace-Paths lists the first 100 changed paths
RESULT = "Result:"
RESULT_CAP = 4000


def result_body(text: str) -> str:
    """The body paragraph that records a tool's answer (capped)."""
    text = text.strip("\n")
    if len(text) > RESULT_CAP:
        text = text[:RESULT_CAP] + f"\n[... {len(text) - RESULT_CAP:,} more characters]"
    return f"{RESULT}\n{text}"


def result_of(message: str) -> str | None:
    """The tool's answer recorded in an op commit's message, if it has one."""
    end = message.rfind("\n\nGitspace-Format: ")
    start = message.find(f"\n\n{RESULT}\n")
    if start < 0 or end < 0 or start >= end:
        return None
    return message[start + len(RESULT) + 3:end]
TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@+=/-]{0,199}")
TOOL_NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")
SHA = re.compile(r"[0-9a-f]{40}")
HARNESS_TOOL_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,63}")
OP_ID = re.compile(r"[0-9A-HJKMNP-TV-Z]{26}")
_KEYS = (
    "Gitspace-Format",
    "Gitspace-Op",
    "Gitspace-Tool",
    "Gitspace-Source",
    "Gitspace-Args",
    "Gitspace-Agent",
    "Gitspace-Session",
    "Gitspace-Tool-Use-Id",
    "Gitspace-Undo-Of",
    "Gitspace-Redo-Of",
    "Gitspace-Script",
    "Gitspace-Rebased-From",
    "Gitspace-Paths",
    "Gitspace-Parent-Session",
    "Gitspace-Parent-Tool-Use-Id",
    "Gitspace-After",
)
_PARENT = ("Gitspace-Parent-Session", "Gitspace-Parent-Tool-Use-Id")
_REQUIRED = ("Gitspace-Format", "Gitspace-Op", "Gitspace-Tool", "Gitspace-Source", "Gitspace-Args")


@record(frozen=True)
class Format:
    """One version of the trailer block."""

    sources: tuple[str, ...]  # the op sources written in it
    tool_name: re.Pattern[str]  # what a tool name looks like in it
    keys: frozenset[str]  # the keys it may hold
    written_for: str  # which ops it is written for, as ``gitspace --version`` says it


_AFTER = "Gitspace-After"
FORMATS: dict[int, Format] = {
    1: Format(("tool", "external", "init", "transcript"), TOOL_NAME,
              frozenset(_KEYS) - {"Gitspace-Paths", *_PARENT, _AFTER}, "every other op"),
    2: Format(("harness",), HARNESS_TOOL_NAME, frozenset(_KEYS) - {*_PARENT, _AFTER},  # "Format 2"
              "harness ops"),
    3: Format(("tool", "external"), TOOL_NAME, frozenset(_KEYS) - {"Gitspace-Paths", _AFTER},
              "the ops of a delegated call"),  # "Format 3"
    4: Format(("tool", "external", "init", "transcript", "harness"), TOOL_NAME,  # "Format 4"
              frozenset(_KEYS), "every op"),
}
FORMAT = 4  # what an op is written in unless its source needs another
PARENTED = 4  # what an op that names a parent call is written in
SOURCES = tuple(dict.fromkeys(s for f in FORMATS.values() for s in f.sources))


class NewerFormat(LedgerError):
    """A trailer block in a ledger format newer than any this gitspace reads."""


def require_known(messages: Iterable[str], what: str) -> None:
    """Refuse history a newer gitspace recorded (``NewerFormat``, with the fix): ``what`` would
    take each of its ops for a forged one. Blocks that are malformed otherwise are left to it."""
    for message in messages:
        try:
            parse_message(message)
        except NewerFormat as e:
            raise NewerFormat(f"{e.message} {what} cannot check ops it cannot read.",
                              hint="Run a gitspace that reads it ('pip install --upgrade "
                                   "gitspace'; 'gitspace --version' lists the formats read).") \
                from None
        except LedgerError:
            continue


def tool_name(spec: Format, source: str) -> re.Pattern[str]:
    """What a tool name looks like for an op of ``source`` in format ``spec``: the harness's own
    name for a harness op, in every version that has them."""
    return HARNESS_TOOL_NAME if source == "harness" else spec.tool_name


def formats_note() -> str:
    """The ledger formats in one phrase, as ``gitspace --version`` says it: every version this
    gitspace reads, and which it writes for what."""
    versions = sorted(FORMATS)
    span = f"{versions[0]}-{versions[-1]}" if len(versions) > 1 else str(versions[0])
    written = sorted({version_for(s) for s in SOURCES} | {PARENTED})
    said = [f"{v} for {FORMATS[v].written_for}" for v in written if v != FORMAT]
    return (f"ledger formats {span}: writes {', '.join([*said, ''])}{FORMAT} for "
            f"{FORMATS[FORMAT].written_for}")


def version_for(source: str) -> int:
    """The version an op of ``source`` is written in."""
    if source in FORMATS[FORMAT].sources:
        return FORMAT
    for version in sorted(FORMATS):
        if source in FORMATS[version].sources:
            return version
    raise BadArguments(f"The op source {source!r} is not one of {SOURCES}.")


_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


SHORT = ids.OP  # characters of an op id people see: its random end (a ULID's start is its time)


def short_id(op_id: str) -> str:
    """The short form of an op id (``storage/ids.py``): every reader takes it back, as it takes
    any unique start or end of an id (``core/lookup.py``)."""
    return ids.op(op_id)


def new_op_id(now: float | None = None) -> str:
    """A ULID: 48 bits of milliseconds then 80 random bits, Crockford base32."""
    millis = int((time.time() if now is None else now) * 1000)
    value = (millis << 80) | int.from_bytes(os.urandom(10), "big")
    return "".join(_CROCKFORD[(value >> shift) & 31] for shift in range(125, -1, -5))


def canonical_json(value: Any) -> str:
    import json  # (here, and in the two parsers below: a reader that parses no op never loads it)

    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def check_token(kind: str, value: str) -> str:
    if not TOKEN.fullmatch(value):
        raise BadArguments(
            f"The {kind} {value!r} is not allowed: use 1-200 letters, digits and ._:@+=/- "
            "starting with a letter or digit.",
            hint=f"Choose a plainer {kind}.",
        )
    return value


@record(frozen=True)
class Op:
    """One op as recorded in the ledger."""

    op_id: str
    tool: str
    args: dict[str, Any]
    source: str = "tool"
    agent: str | None = None
    session: str | None = None
    tool_use_id: str | None = None
    undo_of: tuple[str, ...] = field(default_factory=tuple)
    redo_of: str | None = None
    script: str | None = None
    rebased_from: str | None = None
    paths: tuple[str, ...] | None = None  # a harness op's changed paths (the first 100, sorted)
    path_count: int | None = None  # how many paths it changed (Gitspace-Paths count)
    parent_session: str | None = None  # the delegating agent's session (format 3)
    parent_tool_use_id: str | None = None  # ... and its delegate call
    # The op its commit's first parent records (format 4, ``opchain``): where it stands, not
    # what it is, so not compared either.
    after: str | None = field(default=None, compare=False)
    # The version it was read in (None: made here, written as ``version_for(source)``). Not part
    # of what the op means, so not compared.
    format: int | None = field(default=None, compare=False)

    def version(self) -> int:
        """The format it is written in: the one it was read in, else the one its source (or a
        parent call) needs."""
        if self.format is not None:
            return self.format
        parented = self.parent_session is not None or self.parent_tool_use_id is not None
        return PARENTED if parented else version_for(self.source)

    def trailers(self) -> str:
        parented = self.parent_session is not None or self.parent_tool_use_id is not None
        version = self.version()
        spec = FORMATS[version]
        if self.source not in spec.sources:
            raise BadArguments(f"The op source {self.source!r} is not one of {spec.sources}.")
        if not tool_name(spec, self.source).fullmatch(self.tool):
            raise BadArguments(f"The tool name {self.tool!r} is not valid.")
        if (self.source == "harness") != (self.paths is not None):
            raise BadArguments("Changed paths are recorded for harness ops, and only for them.")
        rows = [
            ("Gitspace-Format", str(version)),
            ("Gitspace-Op", self.op_id),
            ("Gitspace-Tool", self.tool),
            ("Gitspace-Source", self.source),
            ("Gitspace-Args", canonical_json(self.args)),
        ]
        for key, kind, value in (
            ("Gitspace-Agent", "agent name", self.agent),
            ("Gitspace-Session", "session id", self.session),
            ("Gitspace-Tool-Use-Id", "tool-use id", self.tool_use_id),
        ):
            if value is not None:
                rows.append((key, check_token(kind, value)))
        if self.undo_of:
            rows.append(("Gitspace-Undo-Of", ",".join(self.undo_of)))
        if self.redo_of:
            rows.append(("Gitspace-Redo-Of", self.redo_of))
        if self.script:
            rows.append(("Gitspace-Script", self.script))
        if self.rebased_from:
            if not SHA.fullmatch(self.rebased_from):
                raise BadArguments(f"{self.rebased_from!r} is not a commit id.")
            rows.append(("Gitspace-Rebased-From", self.rebased_from))
        if self.paths is not None:
            count = len(self.paths) if self.path_count is None else self.path_count
            rows.append(("Gitspace-Paths", canonical_json(
                {"count": count, "paths": sorted(self.paths)[:PATHS_LISTED]})))
        if parented:
            if self.parent_session is None or self.parent_tool_use_id is None:
                raise BadArguments("A delegated op names both its parent session and tool call.")
            rows.append(("Gitspace-Parent-Session",
                         check_token("parent session id", self.parent_session)))
            rows.append(("Gitspace-Parent-Tool-Use-Id",
                         check_token("parent tool-use id", self.parent_tool_use_id)))
        if self.after is not None:
            if not OP_ID.fullmatch(self.after):
                raise BadArguments(f"{self.after!r} is not an op id.")
            rows.append((_AFTER, self.after))
        if any(key not in spec.keys for key, _ in rows):
            raise BadArguments(f"Ledger format {version} cannot record this op: it has no "
                               f"{next(k for k, _ in rows if k not in spec.keys)}.")
        return "\n".join(f"{k}: {v}" for k, v in rows)


def clean_subject(text: str, limit: int = 72) -> str:
    """One printable line: control and format characters dropped, whitespace folded."""
    kept = "".join(
        " " if c.isspace() else c
        for c in text
        if c.isspace() or unicodedata.category(c)[0] != "C"
    )
    line = " ".join(kept.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def encode_message(op: Op, subject: str, body: str = "") -> str:
    parts = [clean_subject(subject) or op.tool]
    if body.strip():
        # The body is free text for humans; it can never be the last paragraph.
        parts.append(body.strip())
    parts.append(op.trailers())
    return "\n\n".join(parts) + "\n"


def trailer_block(message: str, first: str, keys: tuple[str, ...]) -> dict[str, str] | None:
    """The trailer block of ``message``: its last paragraph, when the message has another before
    it and the block's first line is key ``first``, as {key: value}; None otherwise. Every line
    must be ``key: value`` with a key of ``keys`` (once each, in that order), or LedgerError.

    The one reader of trailers: op commits, checkpoint tags and anything added later use it."""
    paragraphs = [p for p in re.split(r"\n\s*\n", message.strip("\n")) if p.strip()]
    if len(paragraphs) < 2:
        return None
    block = paragraphs[-1].strip("\n").split("\n")
    if not block[0].startswith(f"{first}:"):
        return None
    seen: dict[str, str] = {}
    order = []
    for line in block:
        key, sep, value = line.partition(": ")
        if not sep or key not in keys:
            raise LedgerError(f"Unknown or malformed trailer line {line[:80]!r}.")
        if key in seen:
            raise LedgerError(f"Trailer {key} appears twice.")
        seen[key] = value
        order.append(keys.index(key))
    if order != sorted(order):
        raise LedgerError("Trailers are out of order.")
    return seen


def parse_message(message: str) -> Op | None:
    """The op a commit message records; None if it is not an op; LedgerError if malformed."""
    seen = trailer_block(message, "Gitspace-Format", _KEYS)
    if seen is None:
        return None
    missing = [k for k in _REQUIRED if k not in seen]
    if missing:
        raise LedgerError(f"Missing trailer(s): {', '.join(missing)}.")
    return _op_from(seen)


def op_or_none(message: str) -> Op | None:
    """The op a commit message records, or None: not an op, or one that cannot be read (a
    reader that only skips what it cannot attribute; ``verify`` reports those)."""
    try:
        return parse_message(message)
    except GitspaceError:  # (LedgerError, or a value the format refuses)
        return None


def _op_from(seen: dict[str, str]) -> Op:
    declared = seen["Gitspace-Format"]
    version = int(declared) if declared.isdigit() and str(int(declared)) == declared else None
    spec = FORMATS.get(version) if version is not None else None
    if version is not None and version > max(FORMATS):
        raise NewerFormat(f"Ledger format {version} is newer than this gitspace reads "
                          f"({formats_note().split(':')[0]}): a newer gitspace recorded it.")
    if version is None or spec is None:
        raise LedgerError(f"Unsupported ledger format {declared!r}.")
    if not OP_ID.fullmatch(seen["Gitspace-Op"]):
        raise LedgerError(f"Malformed op id {seen['Gitspace-Op']!r}.")
    source = seen["Gitspace-Source"]
    if not any(source in f.sources for f in FORMATS.values()):
        raise LedgerError(f"Unknown source {source!r}.")
    if source not in spec.sources:
        raise LedgerError(f"An op of source {source!r} is written in format "
                          f"{version_for(source)}, not {declared}.")
    if not tool_name(spec, source).fullmatch(seen["Gitspace-Tool"]):
        raise LedgerError(f"Malformed tool name {seen['Gitspace-Tool']!r}.")
    harness = source == "harness"
    if harness != ("Gitspace-Paths" in seen):
        raise LedgerError("Gitspace-Paths belongs to harness ops, and every harness op has it.")
    foreign = [k for k in seen if k not in spec.keys]
    if foreign:
        raise LedgerError(f"Trailer {foreign[0]} is not part of ledger format {version}.")
    paths, count = _paths(seen["Gitspace-Paths"]) if harness else (None, None)
    raw_args = seen["Gitspace-Args"]
    import json

    try:
        bounds.check_nesting(raw_args, "Gitspace-Args")  # (before the parser's own recursion)
        args = json.loads(raw_args)
    except bounds.TooDeep as e:
        raise LedgerError(f"{e}, deeper than any op's arguments.") from None
    except ValueError as e:
        raise LedgerError(f"Gitspace-Args is not valid JSON: {e}.") from None
    if not isinstance(args, dict) or canonical_json(args) != raw_args:
        raise LedgerError("Gitspace-Args is not a canonical JSON object.")
    for key in ("Gitspace-Agent", "Gitspace-Session", "Gitspace-Tool-Use-Id", *_PARENT):
        if key in seen and not TOKEN.fullmatch(seen[key]):
            raise LedgerError(f"{key} has a malformed value.")
    if (_PARENT[0] in seen) != (_PARENT[1] in seen):
        raise LedgerError("A delegated op names both its parent session and tool call, or "
                          "neither.")
    if "Gitspace-Redo-Of" in seen and not OP_ID.fullmatch(seen["Gitspace-Redo-Of"]):
        raise LedgerError("Gitspace-Redo-Of has a malformed op id.")
    undo_of = tuple(seen["Gitspace-Undo-Of"].split(",")) if "Gitspace-Undo-Of" in seen else ()
    if any(not OP_ID.fullmatch(u) for u in undo_of):
        raise LedgerError("Gitspace-Undo-Of has a malformed op id.")
    if "Gitspace-Script" in seen and not SHA.fullmatch(seen["Gitspace-Script"]):
        raise LedgerError("Gitspace-Script is not an object id.")
    if "Gitspace-Rebased-From" in seen and not SHA.fullmatch(seen["Gitspace-Rebased-From"]):
        raise LedgerError("Gitspace-Rebased-From is not a commit id.")
    if _AFTER in seen and not OP_ID.fullmatch(seen[_AFTER]):
        raise LedgerError(f"{_AFTER} has a malformed op id.")
    return Op(
        op_id=seen["Gitspace-Op"],
        tool=seen["Gitspace-Tool"],
        args=args,
        source=seen["Gitspace-Source"],
        agent=seen.get("Gitspace-Agent"),
        session=seen.get("Gitspace-Session"),
        tool_use_id=seen.get("Gitspace-Tool-Use-Id"),
        undo_of=undo_of,
        redo_of=seen.get("Gitspace-Redo-Of"),
        script=seen.get("Gitspace-Script"),
        rebased_from=seen.get("Gitspace-Rebased-From"),
        paths=paths,
        path_count=count,
        parent_session=seen.get(_PARENT[0]),
        parent_tool_use_id=seen.get(_PARENT[1]),
        after=seen.get(_AFTER),
        format=version,
    )


def in_format(message: str, op: Op, version: int) -> str:
    """``message`` (which records ``op``) with its trailer block written in format ``version``
    (without the op before it, in a version that does not record it)."""
    head = message[:message.rindex("\n\nGitspace-Format: ")]
    after = op.after if _AFTER in FORMATS[version].keys else None
    return f"{head}\n\n{replace(op, format=version, after=after).trailers()}\n"


def _paths(raw: str) -> tuple[tuple[str, ...], int]:
    import json

    try:
        bounds.check_nesting(raw, "Gitspace-Paths", 2)  # {"count", "paths": [...]}: two levels
        value = json.loads(raw)
    except ValueError:
        value = None
    paths = value.get("paths") if isinstance(value, dict) else None
    count = value.get("count") if isinstance(value, dict) else None
    if (not isinstance(paths, list) or not all(isinstance(p, str) for p in paths)
            or not isinstance(count, int) or isinstance(count, bool) or count < len(paths)
            or paths != sorted(paths) or len(paths) > PATHS_LISTED
            or canonical_json(value) != raw or set(value) != {"count", "paths"}):
        raise LedgerError("Gitspace-Paths is not a canonical {\"count\", \"paths\"} object.")
    return tuple(paths), count


# -- checkpoint tags and branch reflogs -------------------------------------------------------

CHECKPOINTS = "refs/tags/gitspace/"  # where checkpoint tags live
_CHECKPOINT_KEYS = ("Gitspace-Checkpoint", "Gitspace-Branch", "Gitspace-Agent", "Gitspace-Op")
_BRANCH_NOTE = re.compile(r"gitspace: branch (\S+) \(op (\S+)\)")


@record(frozen=True)
class CheckpointNote:
    """What a checkpoint tag's message records."""

    name: str
    branch: str
    agent: str
    op_id: str | None
    text: str


def checkpoint_message(text: str, name: str, branch: str, agent: str, op_id: str | None) -> str:
    """A checkpoint tag's message; ``text`` is folded onto one line."""
    line = " ".join(text.split())[:500] or f"checkpoint {name}"
    rows = [("Gitspace-Checkpoint", name), ("Gitspace-Branch", branch), ("Gitspace-Agent", agent)]
    if op_id:
        rows.append(("Gitspace-Op", check_token("op id", op_id)))
    return line + "\n\n" + "".join(f"{k}: {v}\n" for k, v in rows)


def parse_checkpoint(message: str) -> CheckpointNote | None:
    """The record of a checkpoint tag's message (None if it has none; LedgerError if broken)."""
    seen = trailer_block(message, "Gitspace-Checkpoint", _CHECKPOINT_KEYS)
    if seen is None:
        return None
    return CheckpointNote(seen["Gitspace-Checkpoint"], seen.get("Gitspace-Branch", "?"),
                          seen.get("Gitspace-Agent", "?"), seen.get("Gitspace-Op"),
                          message.split("\n\n", 1)[0].strip())


def branch_note(name: str, op_id: str | None) -> str:
    """The reflog message of a branch gitspace creates."""
    return f"gitspace: branch {name}" + (f" (op {check_token('op id', op_id)})" if op_id else "")


def parse_branch_note(message: str) -> str | None:
    """The op id a reflog message records, if it is the note of a branch a tool call created."""
    found = _BRANCH_NOTE.fullmatch(message)
    return found.group(2) if found else None


ARG_LIMIT = 4096  # a harness op's argument strings longer than this are elided (format 2)


def omit(value: str) -> dict[str, Any]:
    """What a harness op's arguments hold in place of a long string that is no file's content."""
    data = value.encode("utf-8", "surrogatepass")
    return {"$omitted": sha1_hex(data), "bytes": len(data)}


def args_summary(args: dict[str, Any], width: int = 60) -> str:
    """One short line of an op's args for people: long strings clipped, elided blobs as sizes."""
    parts = []
    for key, value in sorted(args.items()):
        if isinstance(value, str):
            text = " ".join(value.split())
            parts.append(f"{key}={text if len(text) <= 24 else text[:21] + '...'!r}")
        elif isinstance(value, dict) and ("$blob" in value or "$omitted" in value):
            parts.append(f"{key}=<{value.get('bytes', '?')} bytes>")
        else:
            parts.append(f"{key}={value}")
    line = " ".join(parts)
    return line if len(line) <= width else line[: width - 3] + "..."


def elide(args: dict[str, Any], key: str, blob_sha: str, limit: int = 4096) -> dict[str, Any]:
    """Args with ``args[key]`` replaced by a blob reference when it is longer than ``limit``."""
    value = args.get(key)
    if not isinstance(value, str) or len(value) <= limit:
        return args
    return {**args, key: {"$blob": blob_sha, "bytes": len(value.encode("utf-8", "surrogatepass"))}}
