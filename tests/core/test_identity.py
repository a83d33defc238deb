"""core/identity.py: a call's identity is one value, handed down to the op it records."""

from __future__ import annotations

from pathlib import Path

from conftest import call_ok, git, ops

import gitspace
from gitspace.core.identity import Identity
from gitspace.storage import ledger, records

# The commit records these, not a trailer: its time the clock, its author the person (as a
# token, or by their git identity: the signature).
NOT_RECORDED = {"clock", "person", "signature"}


def test_every_field_is_recorded_by_name_or_said_not_to_be() -> None:
    """Adding a field is one change: a field ledger.Op also has is recorded with no more code."""
    op_fields = set(records.names(ledger.Op))
    unrecorded = set(records.names(Identity)) - op_fields
    assert unrecorded == NOT_RECORDED


def test_the_op_carries_the_identity_and_reads_back_as_it() -> None:
    who = Identity("create", op_id=ledger.new_op_id(), tool_use_id="toolu_1", agent="ann",
                   session="s-1", rebased_from="ab" * 20, clock=1_700_000_000.0)
    op = who.op({"path": "a.txt"}, undo_of=("x",))
    assert (op.tool, op.op_id, op.tool_use_id, op.agent, op.session, op.rebased_from,
            op.source, op.undo_of) == ("create", who.op_id, "toolu_1", "ann", "s-1", "ab" * 20,
                                       "tool", ("x",))
    assert Identity.of(op, clock=who.clock) == who
    assert who.author.name == "ann" and Identity("view").author.name == "human"
    assert Identity("create").op({}).op_id != Identity("create").op({}).op_id  # none fixed


def test_a_call_as_another_agent_and_session_leaves_the_workspace_as_it_was(
        ws: gitspace.Workspace) -> None:
    agent, session = ws.agent, ws.session
    who = ws.identity("create", agent="bob", session="run-7", tool_use_id="toolu_9")
    done = ws.call_as(who, {"path": "a.txt", "file_text": "a\n"})
    assert done.ok, done.text
    (ws.root / "a.txt").write_text("changed outside\n")  # the next op finds this first
    call_ok(ws, "append", {"path": "a.txt", "text": "more\n"})
    mine, external, theirs = ops(ws.root)[-3:]
    assert (mine.agent, mine.session, mine.tool_use_id) == ("bob", "run-7", "toolu_9")
    assert git(ws.root, "log", "-1", "--format=%an", done.commit or "").strip() == "bob"
    assert (ws.agent, ws.session) == (agent, session)
    assert external.source == "external" and external.session == session
    assert (theirs.agent, theirs.session) == (agent, session)


def test_a_pinned_clock_is_the_ops_commit_time(ws: gitspace.Workspace) -> None:
    done = ws.call_as(ws.identity("append_entry", clock=1_700_000_000),
                      {"path": "journal/log.jsonl", "text": "then"})
    assert done.ok, done.text
    assert ws.repo.commit(done.commit or "").time == 1_700_000_000


def test_a_call_with_no_agent_is_the_persons_and_authored_as_them(tmp_path: Path) -> None:
    root = tmp_path / "w"
    gitspace.init(root).close()
    with gitspace.open(root, external_author="ada") as ws:
        assert ws.identity("create").person == "ada"
        assert ws.identity("create", agent="bot").person is None  # an agent's call is the agent's
        done = ws.call("create", {"path": "a.txt", "file_text": "a\n"})
        assert done.ok, done.text
        assert ws.person == "ada" and ws.agent is None  # nothing set on the workspace
    [op] = [o for o in ops(root) if o.tool == "create"]
    assert op.agent is None  # no trailer invented: the author names the person
    assert git(root, "log", "-1", "--format=%an <%ae>").strip() == "ada <ada@gitspace>"
    assert Identity.of(op, person="ada").author == Identity("create", person="ada").author
