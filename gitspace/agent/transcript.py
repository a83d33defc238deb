"""Committing a session's conversation into the workspace: an explicit opt-in, never a default.

Invariant: the transcript lands as one op (tool ``transcript``) at ``transcripts/<session>.json``
and only when a person asks (``gitspace run --commit-transcript``), because conversations may
hold text nobody meant to publish. Sessions themselves stay in the self-ignoring ``.gitspace/``.
Reading one back (``committed``, ``load_committed``) reads objects only, never the work tree.
"""

from __future__ import annotations

import json
from typing import Any

from ..core import browse
from ..core.result import Result
from ..core.transaction import Outcome, Txn
from ..core.workspace import Workspace
from ..errors import BadArguments, FileRefused, NotFound
from ..storage import bounds, ledger
from ..storage.gitrepo import GitRepo
from .session import Session

FOLDER = "transcripts"


def commit_transcript(ws: Workspace, session: Session) -> Result:
    ws.require_owned("commit a transcript")
    rel = f"{FOLDER}/{session.id}.json"
    data = json.dumps({"session": session.id, "task": session.task, "agent": session.agent,
                       "client": session.client, "scripted": session.scripted,
                       "status": session.status, "messages": session.messages},
                      ensure_ascii=False, indent=1).encode() + b"\n"
    if len(data) > ws.max_file_bytes:
        raise FileRefused(f"The transcript is {len(data):,} bytes, over the {ws.max_file_bytes:,}-byte "
                          "cap for committed files; it stays in .gitspace/sessions.",
                          hint="Raise GITSPACE_MAX_FILE_BYTES if you do want it committed.")
    who = ws.identity("transcript", source="transcript")
    op = who.op({"path": rel, "session": session.id})

    def stage(txn: Txn) -> Outcome:
        txn.write(rel, data)
        return Outcome(f"Committed the conversation of session {session.id} to {rel}.",
                       f"transcript {session.id}")

    return ws.transact(op, stage, who.author)


def committed(repo: GitRepo, commit: str) -> list[str]:
    """The session ids whose transcript is committed at ``commit`` (read from objects only)."""
    try:
        items = browse.listing(repo, commit, FOLDER)
    except NotFound:
        return []
    return sorted(i.name[:-5] for i in items if i.kind == "blob" and i.name.endswith(".json"))


def load_committed(repo: GitRepo, commit: str, session_id: str) -> dict[str, Any]:
    """A committed transcript as written by ``commit_transcript``; BadArguments when damaged."""
    ledger.check_token("session id", session_id)
    found = browse.read(repo, commit, f"{FOLDER}/{session_id}.json")
    text = found.text
    if text is None:
        raise BadArguments(f"The transcript {FOLDER}/{session_id}.json is binary or too large "
                           "to read.", hint="Read it with git show.")
    try:
        data = bounds.loads(text, "the transcript")
    except ValueError as e:
        raise BadArguments(f"The transcript {FOLDER}/{session_id}.json is damaged ({e}).",
                           hint="Its ops are all in the git log.") from None
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
        raise BadArguments(f"The transcript {FOLDER}/{session_id}.json has no message list.",
                           hint="Its ops are all in the git log.")
    return data
