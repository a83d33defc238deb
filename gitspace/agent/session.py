"""A run's durable state: the conversation and where the loop stands, in one append-only log.

This docstring is the format contract of a session file (format 2).

``.gitspace/sessions/<id>.jsonl`` holds UTF-8 JSON Lines. The first line is a snapshot::

    {"format": 2, "state": {FIELD: VALUE, ...}, "messages": [MESSAGE, ...]}

``state`` holds every field of ``Session`` but ``messages`` (id, task, agent, client, scripted,
next, status, steps, pending, client_state, stats, created, updated, ...). Each later line is what
one save changed, applied in order::

    {"keep": K, "add": [MESSAGE, ...], "set": {FIELD: VALUE, ...}}

- ``keep`` (absent: all of them): only the first K messages of the conversation stay (compaction
  folded the rest, or a message was replaced); ``add``: messages appended after those;
- ``set``: each field whose value changed, whole (``stats`` as one object).

Invariants:
- A save appends one line, so it costs what the step changed, not the whole history. A crash
  leaves the previous save or the next, never half of one: a last line that lacks its newline or
  does not parse is a save cut off, which readers ignore and the next save replaces by writing a
  new snapshot.
- A save that records a pending op id, or a new status, is flushed (fdatasync, which flushes the
  lines before it too) before it returns; the others are left to the system. A power cut may
  then lose the saves after the last flushed one, and a resume redoes those steps from there,
  which repeats no op: every op id is on disk before its op runs.
- When the lines after the snapshot outgrow ``REWRITE`` times its size (and ``MIN_REWRITE``
  bytes), the save writes a new snapshot instead, replacing the file atomically (temp file,
  fsync, rename): the file stays within a few times the live conversation, and each rewrite's
  cost is spread over the steps that grew the log.
- Messages are values: the loop appends them, or replaces the list (compaction) or one message
  (a new user message), but never edits a saved message in place; a save finds what changed by
  identity.
- A field added to ``Session`` with a default needs no new format: older files lack it and read
  with the default. A reader refuses a field it does not know (the file is from a newer gitspace).
- A file is untrusted input (a clone or another process can plant one): it is read by the
  bounded reader, and a field not of its declared type or form, or another session's id, makes
  the file damaged (``agent/shapes.py``), never acted on. A conversation holding a message the
  loop cannot read is shown (the web view marks it), but never resumed or forked
  (``require_readable``).
- Every write goes through the work-tree writer (never through a link a history planted at
  ``.gitspace``). The folder ``.gitspace/`` ignores itself, so transcripts are never committed
  unless a person opts in (``commit_transcript``). Before a mutating tool runs, its op id is in
  ``pending`` on disk: that is what lets a resumed run find the op in the ledger instead of
  running it twice.

Format 1 (read, never written): ``<id>.json``, one JSON object ``{"format": 1, FIELD: VALUE, ...,
"messages": [...]}``. A format-1 session saved again becomes a format-2 file, and its ``.json``
is removed.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
import typing
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from ..errors import BadArguments, GitspaceError, NotFound
from ..storage import bounded, bounds, ledger
from ..storage import ids as shortids
from ..storage.files import FILE_MODE, Files
from . import shapes
from .model import Message

FORMAT = 2
FOLDER = Path(".gitspace") / "sessions"
SUFFIX, OLD_SUFFIX = ".jsonl", ".json"
REWRITE = 2  # lines after the snapshot may grow to this many times its size...
MIN_REWRITE = 1 << 20  # ...and at least this many bytes, before a save writes a new snapshot

# What the loop does next: call the model, or run the tools of the last assistant message.
CALL, TOOLS = "call", "tools"
# How a run that did not end stopped: killed (still "running" on disk), cut off by an error it
# did not expect ("crashed") or by Ctrl-C ("interrupted"). Each goes on with a resume.
UNFINISHED = ("running", "crashed", "interrupted")


@dataclass
class SessionStats:
    tool_calls: int = 0
    bytes_read: int = 0  # characters of every tool result the model was shown
    largest_result: int = 0
    peak_request: int = 0  # the largest conversation (system excluded) sent to the model
    compactions: int = 0
    recovered: int = 0  # tool calls whose result came back from the ledger after a restart
    failed_calls: int = 0  # tool calls answered with an error


@dataclass
class _Disk:
    """What the file holds now, for the next save to write only the difference."""

    messages: list[Message]  # the saved conversation (the same message objects)
    state: dict[str, str]  # field -> its JSON text as saved
    snapshot: int  # bytes of the snapshot line
    size: int  # bytes of the whole file
    torn: bool = False  # the last line was cut off: the next save writes a snapshot


@dataclass
class Session:
    id: str
    task: str
    agent: str | None
    client: str
    scripted: bool
    messages: list[Message] = field(default_factory=list)
    next: str = CALL
    status: str = "running"
    steps: int = 0
    pending: dict[str, str] = field(default_factory=dict)  # tool_use id -> op id
    client_state: dict[str, Any] = field(default_factory=dict)
    stats: SessionStats = field(default_factory=SessionStats)
    returns: dict[str, Any] | None = None  # the JSON Schema of the value the run must return
    value: Any = None  # the value it returned (status "returned")
    branch: str | None = None  # the branch it works on
    base: str | None = None  # the commit that branch was at when it started
    at_branch: str | None = None  # the branch checked out when the run last stopped (its tools
    # may switch): where a resume goes on
    # A delegated child: the session and delegate call it answers to, how deep it runs, and the
    # commit of the parent's branch its ops joined (None: not joined, or not a child).
    parent_session: str | None = None
    parent_tool_use_id: str | None = None
    depth: int = 0
    joined: str | None = None
    # A fork (``gitspace run --fork``): the op it started after, the session and branch that
    # made that op, and the op's commit.
    forked_from: dict[str, str | None] | None = None
    created: float = field(default_factory=time.time)
    updated: float = 0.0
    root: Path | None = field(default=None, repr=False, compare=False)
    _disk: _Disk | None = field(default=None, init=False, repr=False, compare=False)
    _old_file: bool = field(default=False, init=False, repr=False, compare=False)

    @classmethod
    def new(cls, root: Path, task: str, *, agent: str | None, client: str, scripted: bool,
            session_id: str | None = None) -> Session:
        if not task.strip():
            raise BadArguments("The task is empty.", hint="Say what the agent should do.")
        session = cls(session_id or ledger.new_op_id(), task, agent, client, scripted, root=root)
        session.messages.append({"role": "user", "content": task})
        return session

    @property
    def path(self) -> Path:
        assert self.root is not None
        return self.root / FOLDER / f"{self.id}{SUFFIX}"

    def save(self) -> None:
        """Write what changed since the last save (the first save writes a snapshot)."""
        self.updated = time.time()
        assert self.root is not None
        state = {name: _dumps(value) for name, value in self._state().items()}
        disk = self._disk
        if disk is None or disk.torn:
            self._snapshot(Files(self.root, durable=True), state)
            return
        keep = _shared_prefix(disk.messages, self.messages)
        record: dict[str, Any] = {} if keep == len(disk.messages) else {"keep": keep}
        if keep < len(self.messages):
            record["add"] = self.messages[keep:]
        changed = {k: v for k, v in state.items() if disk.state.get(k) != v}
        line = _record_line(record, changed)
        if disk.size + len(line) - disk.snapshot > max(MIN_REWRITE, REWRITE * disk.snapshot):
            self._snapshot(Files(self.root, durable=True), state)
            return
        # What must survive a power cut: an op id before its op runs, and how the run ended.
        flush = "status" in changed or ("pending" in changed and bool(self.pending))
        try:
            disk.size = Files(self.root, durable=flush).append(_rel(self.id), line)
        except BaseException:
            disk.torn = True  # the line may be in the file, whole or not: start afresh next time
            raise
        disk.messages = list(self.messages)
        disk.state.update(changed)

    def _state(self) -> dict[str, Any]:
        return {f.name: _plain(getattr(self, f.name)) for f in fields(self) if f.name in _STATE}

    def _snapshot(self, tree: Files, state: dict[str, str]) -> None:
        marker = f"{FOLDER.parent.as_posix()}/.gitignore"
        if tree.stat(marker) is None:
            tree.put(marker, (b"# gitspace session transcripts: local unless you opt in\n*\n",
                              FILE_MODE))
        fields_text = ",".join(f"{json.dumps(k)}:{v}" for k, v in state.items())
        line = (f'{{"format":{FORMAT},"state":{{{fields_text}}},"messages":'
                f'{_dumps(self.messages)}}}\n').encode()
        tree.put(_rel(self.id), (line, FILE_MODE))
        self._disk = _Disk(list(self.messages), state, len(line), len(line))
        if self._old_file:  # the format-1 file this session was read from is replaced now
            tree.put(f"{FOLDER.as_posix()}/{self.id}{OLD_SUFFIX}", None)
            self._old_file = False

    @contextlib.contextmanager
    def running(self) -> Iterator[None]:
        """Hold the session for one process: two resumes of one session could otherwise both find
        a pending op missing from the ledger and apply it twice."""
        assert self.root is not None
        fd = Files(self.root).open_lock_file(f"{FOLDER.as_posix()}/{self.id}.lock")
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise GitspaceError(f"Session {self.id} is being run by another process.",
                                    hint="Wait for it to finish, or stop it first.") from None
            yield
        finally:
            os.close(fd)

    @classmethod
    def load(cls, root: Path, session_id: str) -> Session:
        ledger.check_token("session id", session_id)
        for suffix, reader in ((SUFFIX, _read_log), (OLD_SUFFIX, _read_old)):
            rel = f"{FOLDER.as_posix()}/{session_id}{suffix}"
            path = root / rel
            try:  # history can plant it: a link (to /dev/zero, outside), a fifo, a huge file
                found = bounded.read_inside(root, rel, bounded.JSON_CAP, what="The session file")
            except GitspaceError as e:
                raise BadArguments(e.message, hint="Move it away; the ops it made are all in the "
                                   "git log.") from None
            if found is None:
                continue
            try:
                return reader(root, found, path, session_id)
            except (ValueError, TypeError, AttributeError, KeyError) as e:
                raise BadArguments(f"The session file {path} is damaged ({e}).",
                                   hint="Start a new run; the ops it made are all in the git "
                                        "log.") from None
        known = ids(root)
        raise NotFound(f"There is no saved session {session_id} in {root}.",
                       hint="Saved sessions: " + (", ".join(known[-5:]) or "none") + ".")


# The fields a file holds: every dataclass field but the conversation and what is in memory only.
_STATE = tuple(f.name for f in fields(Session) if f.name not in ("messages", "root")
               and not f.name.startswith("_"))
_HINTS = {name: hint for name, hint in typing.get_type_hints(Session).items() if name in _STATE}


def _rel(session_id: str) -> str:
    return f"{FOLDER.as_posix()}/{session_id}{SUFFIX}"


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _plain(value: Any) -> Any:
    return asdict(value) if isinstance(value, SessionStats) else value


def _record_line(record: dict[str, Any], changed: dict[str, str]) -> bytes:
    parts = [f"{json.dumps(k)}:{_dumps(v)}" for k, v in record.items()]
    if changed:
        parts.append('"set":{' + ",".join(f"{json.dumps(k)}:{v}" for k, v in changed.items()) + "}")
    return ("{" + ",".join(parts) + "}\n").encode("utf-8")


def _shared_prefix(saved: list[Message], now: list[Message]) -> int:
    """How many leading messages are the very objects saved (compaction shares the goal)."""
    n = 0
    for a, b in zip(saved, now, strict=False):
        if a is not b:
            break
        n += 1
    return n


def _build(root: Path, state: dict[str, Any], messages: list[Message], session_id: str
           ) -> Session:
    unknown = sorted(set(state) - set(_STATE))
    if unknown:
        raise BadArguments(f"The session file has field(s) {', '.join(unknown)} this version of "
                           "gitspace does not know.",
                           hint="Resume it with the newer gitspace that wrote it.")
    wrong = shapes.wrong_field(state, _HINTS, session_id)
    if wrong is not None:  # (a planted file: its fields would name what a resume removes)
        raise ValueError(wrong)
    data = dict(state)
    stats = SessionStats(**data.pop("stats", {}))
    return Session(**data, messages=messages, stats=stats, root=root)


def _read_log(root: Path, data: bytes, path: Path, session_id: str) -> Session:
    lines = data.split(b"\n")
    torn = lines.pop() != b""  # the text after the last newline: a save cut off, if any
    head = bounds.loads(lines[0], "its first line") if lines else None
    if not isinstance(head, dict) or head.get("format") != FORMAT:
        if isinstance(head, dict) and isinstance(head.get("format"), int):
            raise _other_version(path)
        raise ValueError("its first line is not a format-2 snapshot")
    state: dict[str, Any] = head["state"]
    messages: list[Message] = head["messages"]
    for number, line in enumerate(lines[1:], start=2):
        try:
            record = bounds.loads(line, f"line {number}")
        except ValueError:
            if number < len(lines):
                raise ValueError(f"line {number} is not JSON") from None
            torn = True  # the last line, whole but unreadable: cut off by a power cut
            break
        del messages[record.get("keep", len(messages)):]
        messages.extend(record.get("add", []))
        state.update(record.get("set", {}))
    session = _build(root, state, messages, session_id)
    texts = {k: _dumps(v) for k, v in session._state().items()}
    session._disk = _Disk(list(messages), texts, len(lines[0]) + 1, len(data), torn)
    return session


def _read_old(root: Path, data: bytes, path: Path, session_id: str) -> Session:
    state = bounds.loads(data, "the session file")
    if state.pop("format", None) != 1:
        raise _other_version(path)
    messages = state.pop("messages", [])
    session = _build(root, state, messages, session_id)
    session._old_file = True
    return session


def player_state_at(session: Session, tool_use_id: str) -> dict[str, Any] | None:
    """The player's notes (``client_state``) as saved with the reply that asked for call
    ``tool_use_id``: what a fork's player starts from. None when the file no longer holds that
    save (a later snapshot replaced the lines, or it is a format-1 file)."""
    if session.root is None:
        return None
    try:
        found = bounded.read_inside(session.root, _rel(session.id), bounded.JSON_CAP,
                                    what="The session file")
    except GitspaceError:
        return None
    lines = (found or b"").split(b"\n")[1:-1]  # (the snapshot, and a save cut off: neither)
    for line in lines:
        try:
            record = json.loads(line)
            added = record.get("add", [])
            state = record.get("set", {}).get("client_state")
        except (ValueError, AttributeError):
            return None
        if any(isinstance(m, dict) and m.get("role") == "assistant" and isinstance(
                m.get("content"), list) and any(isinstance(b, dict) and b.get("id") == tool_use_id
                                               for b in m["content"]) for m in added):
            return state if isinstance(state, dict) else None
    return None


def _other_version(path: Path) -> BadArguments:
    return BadArguments(f"{path} was written by another version of gitspace.",
                        hint="Resume it with that version, or start a new run.")


def require_readable(session: Session) -> None:
    """Refuse to go on from a conversation holding a message or block the loop cannot read."""
    wrong = shapes.wrong_message(session.messages)
    if wrong is not None:
        raise BadArguments(f"The session file {session.path} is damaged ({wrong}).",
                           hint="Start a new run; the ops it made are all in the git log.")


def ids(root: Path) -> list[str]:
    """The ids of the saved sessions, sorted (a session of either format counted once). The
    folder is listed without following a link (one planted at ``.gitspace`` would list the names
    of another folder's files as sessions)."""
    found = Files(root).listing(FOLDER.as_posix()) or []
    return sorted({name[:-len(suffix)] for name, _ in found for suffix in (SUFFIX, OLD_SUFFIX)
                   if name.endswith(suffix) and len(name) > len(suffix)})


def exists(root: Path, session_id: str) -> bool:
    return session_id in ids(root)


def find(root: Path, text: str) -> Session:
    """The saved session ``text`` names: any form of its id (``storage/ids.py``: the id, its
    short form ``s-...`` as lists show it, a unique start or end). Ambiguity is an error
    listing the candidates."""
    known = ids(root)
    if text in known:
        return Session.load(root, text)
    hits = [i for i in known if shortids.names_session(text, i)]
    if len(hits) == 1:
        return Session.load(root, hits[0])
    if hits:
        shown = ", ".join(f"{shortids.session(i)} ({i})" for i in hits[:10])
        raise BadArguments(f"{text!r} matches {len(hits)} sessions: {shown}.",
                           hint="Give more of the session id.")
    raise NotFound(f"There is no saved session {text!r} in {root}.",
                   hint="'gitspace sessions' lists them.")


def answer(session: Session) -> str:
    """The text of the session's last model reply (how the run ended, in its own words)."""
    for message in reversed(session.messages):
        if message.get("role") == "assistant":
            content = message.get("content")
            if isinstance(content, str):
                return content
            return "\n".join(b.get("text", "") for b in content or []
                             if isinstance(b, dict) and b.get("type") == "text").strip()
    return ""


def listing(root: Path) -> list[Session]:
    """Every saved session; a damaged file is listed with status "damaged" rather than hiding
    the others."""
    out = []
    for session_id in ids(root):
        try:
            out.append(Session.load(root, session_id))
        except GitspaceError:  # damaged, from a newer version, a link, a fifo...
            out.append(Session(session_id, "(the session file is damaged)", None, "?", False,
                               status="damaged", root=root))
    return out
