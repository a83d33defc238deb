"""Committing a session's conversation into the workspace: an explicit opt-in, never a default.

Invariant: the transcript lands as one op (tool ``transcript``) at ``transcripts/<session>.json``
and only when a person asks (``gitspace run --commit-transcript``), because conversations may
hold text nobody meant to publish. Sessions themselves stay in the self-ignoring ``.gitspace/``.
"""

from __future__ import annotations

import json

from ..core.result import Result
from ..core.transaction import Plan, Txn
from ..core.workspace import Workspace
from ..errors import FileRefused
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
    op = ws.new_op("transcript", {"path": rel, "session": session.id}, source="transcript")

    def plan(txn: Txn) -> Plan:
        txn.write(rel, data)
        return Plan(f"Committed the conversation of session {session.id} to {rel}.",
                    f"transcript {session.id}")

    return ws.transact(op, plan)
