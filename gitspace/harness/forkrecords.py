"""What gitspace keeps of each harness session it forked, for ``gitspace ui`` and the sessions
list: ``<git dir>/gitspace/forks/<hash of harness and session>.json``, one file a fork.

Invariants: the record is a convenience, never the truth: the fork's files are a branch (in a
workspace) or an op on the line (in place) that the ledger holds, and its conversation is the
harness's own transcript. A record holds ids, refs, paths and the command that continues the
session, never a word of the conversation. It is written by rename (``statefiles``: never
through a link) and read back as untrusted: a field of the wrong shape drops the record.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from ..storage import ledger, statefiles
from ..storage.loose import sha1_hex

FOLDER = "gitspace/forks"


@dataclass(frozen=True)
class ForkRecord:
    harness: str
    session: str  # the new session
    from_session: str  # the session it was forked from
    op: str  # the op it was forked at
    commit: str  # that op's commit
    tool_use_id: str
    transcript: str  # the new session's transcript
    cwd: str | None  # where to continue it
    command: str  # what continues it
    branch: str | None  # in a workspace: the fork's branch; in place: None
    line: str | None  # in place: the line the fork's op went on
    fork_op: str | None  # in place: that op (None: the files already were so)
    at: str  # the commit the fork's own calls come after (the op's, or the fork op's)
    time: float = 0.0


def _name(harness: str, session: str) -> str:
    return f"{FOLDER}/{sha1_hex((harness + chr(0) + session).encode())}.json"


def ready(gitdir: Path) -> None:
    """Refuse (``StateRefused``) when a link or a file stands where the records' folder goes:
    asked before a fork changes anything, so that its record can be written after. (An absent
    folder is made by ``save``.)"""
    statefiles.names(gitdir, FOLDER)


def save(gitdir: Path, record: ForkRecord) -> None:
    data = {**asdict(record), "time": record.time or time.time()}
    statefiles.write(gitdir, _name(record.harness, record.session), json.dumps(data).encode())


def listing(gitdir: Path) -> list[ForkRecord]:
    """Every fork recorded in this checkout, oldest first."""
    try:
        names = statefiles.names(gitdir, FOLDER)
    except statefiles.StateRefused:
        return []
    found = [r for name in names if name.endswith(".json") and not name.startswith(".")
             and (r := _load(gitdir, f"{FOLDER}/{name}")) is not None]
    return sorted(found, key=lambda r: r.time)


def of(gitdir: Path, session: str) -> ForkRecord | None:
    """The fork that made ``session``, if gitspace made it here."""
    return next((r for r in listing(gitdir) if r.session == session), None)


def forks_of(gitdir: Path, session: str) -> list[ForkRecord]:
    """The forks made from ``session`` here, oldest first."""
    return [r for r in listing(gitdir) if r.from_session == session]


_OPTIONAL = {"cwd", "branch", "line", "fork_op"}
_IDS = {"session", "from_session", "op", "tool_use_id", "fork_op"}


def _load(gitdir: Path, rel: str) -> ForkRecord | None:
    try:
        data = json.loads(statefiles.read(gitdir, rel) or b"null")
    except (statefiles.StateRefused, OSError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    kept: dict[str, Any] = {}
    for f in fields(ForkRecord):
        value = data.get(f.name)
        if f.name == "time":
            kept["time"] = float(value) if isinstance(value, int | float) else 0.0
        elif value is None and f.name in _OPTIONAL:
            kept[f.name] = None
        elif not isinstance(value, str) or (f.name in _IDS and not ledger.TOKEN.fullmatch(value)):
            return None
        else:
            kept[f.name] = value
    if not (ledger.SHA.fullmatch(kept["commit"]) and ledger.SHA.fullmatch(kept["at"])):
        return None
    return ForkRecord(**kept)
