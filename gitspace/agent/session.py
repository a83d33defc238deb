"""A run's durable state: the conversation and where the loop stands, in one JSON file.

Invariants: the file is replaced atomically (temp file, fsync, rename, through the work-tree
writer: never through a link), so a crash leaves the previous step or the next, never half of
one. It lives under ``.gitspace/sessions/`` in the workspace, which ignores itself, so
transcripts are never committed unless a person opts in (``commit_transcript``). Before a
mutating tool runs, its op id is in ``pending`` on disk: that is what lets a resumed run find the
op in the ledger instead of running it twice.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..errors import BadArguments, GitspaceError, NotFound
from ..storage import ledger
from ..storage.files import FILE_MODE, Files
from .model import Message

FORMAT = 1
FOLDER = Path(".gitspace") / "sessions"

# What the loop does next: call the model, or run the tools of the last assistant message.
CALL, TOOLS = "call", "tools"


@dataclass
class Stats:
    tool_calls: int = 0
    bytes_read: int = 0  # characters of every tool result the model was shown
    largest_result: int = 0
    peak_request: int = 0  # the largest conversation (system excluded) sent to the model
    compactions: int = 0
    recovered: int = 0  # tool calls whose result came back from the ledger after a restart
    failed_calls: int = 0  # tool calls answered with an error


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
    stats: Stats = field(default_factory=Stats)
    created: float = field(default_factory=time.time)
    updated: float = 0.0
    root: Path | None = field(default=None, repr=False, compare=False)

    @classmethod
    def new(cls, root: Path, task: str, *, agent: str | None, client: str, scripted: bool) -> Session:
        if not task.strip():
            raise BadArguments("The task is empty.", hint="Say what the agent should do.")
        session = cls(ledger.new_op_id(), task, agent, client, scripted, root=root)
        session.messages.append({"role": "user", "content": task})
        return session

    @property
    def path(self) -> Path:
        assert self.root is not None
        return self.root / FOLDER / f"{self.id}.json"

    def save(self) -> None:
        self.updated = time.time()
        assert self.root is not None
        # Through the work-tree writer (never through a link a history planted at .gitspace),
        # fsynced with its folder: a saved pending op id survives a power cut.
        tree = Files(self.root, durable=True)
        marker = f"{FOLDER.parent.as_posix()}/.gitignore"
        if tree.stat(marker) is None:
            tree.put(marker, (b"# gitspace session transcripts: local unless you opt in\n*\n",
                              FILE_MODE))
        data = {k: v for k, v in asdict(self).items() if k != "root"}
        data["format"] = FORMAT
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        tree.put(f"{FOLDER.as_posix()}/{self.id}.json", (text.encode("utf-8"), FILE_MODE))

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
        path = root / FOLDER / f"{session_id}.json"
        if not path.exists():
            known = sorted(p.stem for p in (root / FOLDER).glob("*.json"))
            raise NotFound(f"There is no saved session {session_id} in {root}.",
                           hint="Saved sessions: " + (", ".join(known[-5:]) or "none") + ".")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if data.pop("format", None) != FORMAT:
                raise BadArguments(f"{path} was written by another version of gitspace.",
                                   hint="Resume it with that version, or start a new run.")
            stats = Stats(**data.pop("stats", {}))
            return cls(**data, stats=stats, root=root)
        except (ValueError, TypeError, AttributeError) as e:
            raise BadArguments(f"The session file {path} is damaged ({e}).",
                               hint="Start a new run; the ops it made are all in the git log.") from None


def find(root: Path, text: str) -> Session:
    """The saved session ``text`` names: its id, or a unique start or end of it (as lists show
    them). Ambiguity is an error listing the candidates."""
    ids = sorted(p.stem for p in (root / FOLDER).glob("*.json"))
    if text in ids:
        return Session.load(root, text)
    hits = [i for i in ids if text and (i.startswith(text) or i.endswith(text))]
    if len(hits) == 1:
        return Session.load(root, hits[0])
    if hits:
        raise BadArguments(f"{text!r} matches {len(hits)} sessions: {', '.join(hits[:10])}.",
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
    for path in sorted((root / FOLDER).glob("*.json")):
        try:
            out.append(Session.load(root, path.stem))
        except BadArguments:
            out.append(Session(path.stem, "(the session file is damaged)", None, "?", False,
                               status="damaged", root=root))
    return out
