"""Undo, redo and checkpoints for a person with no agent set: through the API, the CLI and MCP,
and every refusal (each changes nothing).

A person undoes whatever was done last on the branch, an agent's op or an outside edit alike; an
agent (an MCP client always is one) only its own ops. The init commit is never an undo target.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from conftest import assert_clean, call_ok, call_refused, files, ops
from mcp import Client
from mcp.types import Implementation

import gitspace
from gitspace.cli import main as cli_main
from gitspace.errors import BadArguments, Conflict, GitspaceError, NotFound, ToolFailed
from gitspace.mcp_server import build_server

UNKNOWN_OP = "01ARZ3NDEKTSV4RRFFQ69G5FAV"  # well formed, on no branch


def tree(root: Path) -> dict[str, str]:
    return {k: v for k, v in files(root).items() if k != ".gitignore"}


@pytest.fixture
def person(ws_root: Path) -> gitspace.Workspace:
    workspace = gitspace.init(ws_root)  # no agent: a person at the keyboard
    assert workspace.agent is None
    return workspace


# -- the API ---------------------------------------------------------------------------------


def test_a_person_undoes_and_redoes_anyones_ops_and_outside_edits(person: gitspace.Workspace,
                                                                   ws_root: Path) -> None:
    with gitspace.open(ws_root, agent="bot") as bot:
        call_ok(bot, "create", {"path": "a.txt", "file_text": "bot\n"})
    (ws_root / "b.txt").write_text("typed by hand\n")
    assert person.snapshot().ok
    call_ok(person, "create", {"path": "c.txt", "file_text": "mine\n"})

    created, outside, mine = ops(ws_root)[1:]
    undone = []
    for expected in ({"a.txt": "bot\n", "b.txt": "typed by hand\n"},
                     {"a.txt": "bot\n"},  # the outside edit: only a person may undo that
                     {}):  # the agent's op
        undone.append(call_ok(person, "undo", {}).op)
        assert tree(ws_root) == expected
    assert [(o.agent, o.undo_of) for o in ops(ws_root)[-3:]] == [
        (None, (mine.op_id,)), (None, (outside.op_id,)), (None, (created.op_id,))]
    call_ok(person, "redo", {})
    assert tree(ws_root) == {"a.txt": "bot\n"}
    assert ops(ws_root)[-1].redo_of == undone[-1]
    assert_clean(ws_root)


def test_an_agent_never_undoes_a_persons_op_or_an_outside_edit(person: gitspace.Workspace,
                                                                 ws_root: Path) -> None:
    call_ok(person, "create", {"path": "a.txt", "file_text": "mine\n"})
    (ws_root / "b.txt").write_text("typed by hand\n")
    assert person.snapshot().ok
    with gitspace.open(ws_root, agent="bot") as bot:
        call_refused(bot, "undo", {}, ToolFailed, "Nothing to undo: there is no earlier op by bot")
        call_refused(bot, "redo", {}, ToolFailed, "Nothing to redo")


def test_the_init_commit_is_never_an_undo_target(ws_root: Path) -> None:
    ws_root.mkdir()
    (ws_root / "kept.txt").write_text("was here before init\n")
    with gitspace.init(ws_root) as person:
        [init] = ops(ws_root)
        call_refused(person, "undo", {}, ToolFailed, "Nothing to undo: there is no earlier op that is")
        call_refused(person, "undo", {"op": init.op_id}, ToolFailed,
                     f"Op {init.op_id} created the workspace; there is nothing before it to undo to.")
        call_ok(person, "create", {"path": "a.txt", "file_text": "a\n"})
        done = call_ok(person, "undo", {"count": 100})  # more than there are: only the create
        assert "Undid 1 op(s)" in done.text
        assert tree(ws_root) == {"kept.txt": "was here before init\n"}
        call_refused(person, "undo", {}, ToolFailed, "Nothing to undo")
        assert [o.tool for o in ops(ws_root)] == ["init", "create", "undo"]


def test_every_refusal_of_undo_and_redo_changes_nothing(person: gitspace.Workspace) -> None:
    call_refused(person, "redo", {}, ToolFailed, "Nothing to redo: there is no undo to re-apply.")
    a = call_ok(person, "create", {"path": "a.txt", "file_text": "1\n"}).op
    call_ok(person, "append", {"path": "a.txt", "text": "2\n"})
    # Nothing was ever undone; the newest op is what redo stops at.
    call_refused(person, "redo", {}, ToolFailed, "Nothing to redo: a new op (append")
    call_refused(person, "undo", {"op": UNKNOWN_OP}, NotFound, f"There is no op {UNKNOWN_OP} on any branch.")
    call_refused(person, "undo", {"op": "not-an-op-id"}, NotFound,
                  "'not-an-op-id' is not an op id, nor the start or end of one, on any branch.")
    call_refused(person, "undo", {"op": a, "count": 1}, BadArguments, "either count or op")
    call_refused(person, "undo", {"count": 0}, BadArguments, "count")
    call_refused(person, "undo", {"count": 101}, BadArguments, "count")
    call_refused(person, "undo", {"op": a}, Conflict, "changed again since")
    call_ok(person, "undo", {})
    call_ok(person, "undo", {})
    call_refused(person, "undo", {"op": a}, ToolFailed, f"Op {a} is already undone.")
    call_refused(person, "undo", {}, ToolFailed, "Nothing to undo")
    call_ok(person, "redo", {})
    call_ok(person, "create", {"path": "b.txt", "file_text": "new\n"})
    call_refused(person, "redo", {}, ToolFailed, "Nothing to redo: a new op (create")


def test_a_persons_redo_over_an_outside_edit_of_the_same_lines_is_a_conflict(
        person: gitspace.Workspace, ws_root: Path) -> None:
    """An outside edit after an undo does not end what redo may re-apply (only a tool op does),
    but when it changed the same lines the redo is refused, naming the undo, and changes nothing."""
    call_ok(person, "create", {"path": "a.txt", "file_text": "x\n"})
    call_ok(person, "str_replace", {"path": "a.txt", "old_str": "x", "new_str": "y"})
    undone = call_ok(person, "undo", {}).op
    (ws_root / "a.txt").write_text("z\n")
    assert person.snapshot().ok
    call_refused(person, "redo", {}, Conflict,
                 f"Cannot undo undo {undone}: a.txt was changed again since, and the changes overlap.")
    # Another outside edit: a.txt back as the undo left it, and a new file. Now redo applies.
    (ws_root / "b.txt").write_text("elsewhere\n")
    (ws_root / "a.txt").write_text("x\n")
    assert person.snapshot().ok
    call_ok(person, "redo", {})
    assert tree(ws_root) == {"a.txt": "y\n", "b.txt": "elsewhere\n"}
    assert_clean(ws_root)


def test_undo_by_id_of_an_op_on_another_branch_is_refused(person: gitspace.Workspace) -> None:
    call_ok(person, "branch", {"name": "side"})
    side = call_ok(person, "create", {"path": "s.txt", "file_text": "side\n"}).op
    call_ok(person, "switch", {"name": "main"})
    call_refused(person, "undo", {"op": side}, NotFound, "on branch main")


def test_a_persons_undo_and_restore_by_op_id_and_their_refusals(person: gitspace.Workspace,
                                                                   ws_root: Path) -> None:
    """An op id may be typed whole or as a unique start or end; each other way to name an op is
    refused with what to type instead, and changes nothing."""
    first, second = "01ARZ3NDEKTSV4RRFFQ69G5FA1", "01ARZ3NDEKTSV4RRFFQ69G5FA2"
    assert person.call("create", {"path": "a.txt", "file_text": "1\n"}, op_id=first).ok
    assert person.call("create", {"path": "b.txt", "file_text": "2\n"}, op_id=second).ok
    made_ref = "01BX5ZZKBKACTAV9WEVGEMMVRZ"
    assert person.call("checkpoint", {"name": "cp"}, op_id=made_ref).ok
    call_refused(person, "undo", {"op": "01ARZ3"}, BadArguments, "'01ARZ3' could name 2 things")
    call_refused(person, "undo", {"op": made_ref}, ToolFailed,
                 f"Op {made_ref} created checkpoint cp; it changed no files")
    call_refused(person, "restore", {"op": "01ARZ3"}, BadArguments, "could name 2 things")
    call_refused(person, "restore", {"op": "FA1"}, NotFound,
                 "'FA1' is not an op id, nor the start or end of one, on any branch.")
    call_refused(person, "restore", {"name": "cp", "op": first}, BadArguments,
                 "Pass a checkpoint name or an op id (op), one of the two.")
    call_refused(person, "restore", {}, BadArguments, "one of the two")
    done = call_ok(person, "undo", {"op": "G5FA1"})  # a unique end of the first op's id
    assert ops(ws_root)[-1].undo_of == (first,) and tree(ws_root) == {"b.txt": "2\n"}
    call_ok(person, "restore", {"op": "G5FA1"})  # the files right after the first op
    assert tree(ws_root) == {"a.txt": "1\n"}
    call_ok(person, "undo", {})  # the restore
    assert tree(ws_root) == {"b.txt": "2\n"}
    call_ok(person, "undo", {})  # never the undo of the first op: the second op
    assert tree(ws_root) == {} and ops(ws_root)[-1].undo_of == (second,)
    assert done.op != ops(ws_root)[-1].op_id
    assert_clean(ws_root)


def test_a_persons_checkpoints_and_their_refusals(person: gitspace.Workspace,
                                                  ws_root: Path) -> None:
    call_ok(person, "create", {"path": "a.txt", "file_text": "1\n"})
    saved = call_ok(person, "checkpoint", {"name": "one", "message": "first"})
    assert "Checkpoint one saved" in saved.text
    call_ok(person, "append", {"path": "a.txt", "text": "2\n"})
    call_ok(person, "restore", {"name": "one"})
    assert tree(ws_root) == {"a.txt": "1\n"}
    call_ok(person, "undo", {})  # the restore is an op like any other
    assert tree(ws_root) == {"a.txt": "1\n2\n"}
    from gitspace.core import checkpoints

    [cp] = checkpoints.listing(person)
    assert (cp.name, cp.agent, cp.message) == ("one", "unknown", "first")  # no git user.name
    call_refused(person, "checkpoint", {"name": "one"}, GitspaceError, "already exists")
    call_refused(person, "checkpoint", {"name": "../x"}, BadArguments, "not a valid checkpoint name")
    call_refused(person, "restore", {"name": "two"}, NotFound, "no checkpoint named 'two'")
    assert_clean(ws_root)


# -- the CLI (in process: the real front end and its one error handler) -----------------------


def cli(capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, root: Path,
        *args: str) -> tuple[int, str, str]:
    monkeypatch.setattr(sys, "argv", ["gitspace", "-C", str(root), *args])
    try:
        cli_main()
        code = 0
    except SystemExit as e:
        code = int(e.code or 0)
    out, err = capfd.readouterr()
    return code, out, err


def test_the_cli_without_an_agent(person: gitspace.Workspace, ws_root: Path,
                                  capfd: pytest.CaptureFixture[str],
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    person.close()

    def run(*args: str) -> tuple[int, str, str]:
        return cli(capfd, monkeypatch, ws_root, *args)

    code, _, err = run("redo")
    assert code == 1 and "Nothing to redo" in err and "Traceback" not in err
    code, _, err = run("undo")
    assert code == 1 and "Nothing to undo" in err
    assert run("call", "create", "--args", json.dumps({"path": "a.txt", "file_text": "1\n"}))[0] == 0
    assert run("checkpoint", "one", "-m", "by hand")[0] == 0
    code, _, err = run("checkpoint", "one")
    assert code == 1 and "already exists" in err and "Traceback" not in err
    assert run("call", "append", "--args", json.dumps({"path": "a.txt", "text": "2\n"}))[0] == 0
    code, _, err = run("redo")
    assert code == 1 and "Nothing to redo: a new op (append" in err
    code, out, _ = run("undo")
    assert code == 0 and "Undid 1 op(s): append" in out
    assert (ws_root / "a.txt").read_text() == "1\n"
    code, out, _ = run("redo")
    assert code == 0 and (ws_root / "a.txt").read_text() == "1\n2\n"
    code, _, err = run("undo", "--op", UNKNOWN_OP)
    assert code == 1 and f"There is no op {UNKNOWN_OP}" in err and "gitspace log" in err
    assert run("restore", "one")[0] == 0 and (ws_root / "a.txt").read_text() == "1\n"
    code, _, err = run("restore", "nope")
    assert code == 1 and "'nope' is not a branch or revision here, nor a checkpoint" in err
    log = json.loads(run("log", "--json")[1])
    assert [e["op"]["tool"] for e in log] == ["restore", "redo", "undo", "append", "create", "init"]
    assert {e["op"]["agent"] for e in log} == {None}
    assert_clean(ws_root)


# -- MCP: a client is always an agent -----------------------------------------------------------


def test_an_mcp_client_undoes_its_own_ops_never_a_persons(person: gitspace.Workspace,
                                                          ws_root: Path) -> None:
    call_ok(person, "create", {"path": "mine.txt", "file_text": "a person's\n"})
    person.close()
    seen: dict[str, Any] = {}

    async def body(client: Client) -> None:
        async def call(tool: str, args: dict[str, Any]) -> tuple[bool, str]:
            result = await client.call_tool(tool, args)
            block = result.content[0]
            assert block.type == "text"
            return bool(result.is_error), block.text

        seen["undo nothing"] = await call("undo", {})
        seen["redo nothing"] = await call("redo", {})
        assert not (await call("create", {"path": "its.txt", "file_text": "x\n"}))[0]
        assert not (await call("checkpoint", {"name": "mcp-cp"}))[0]
        seen["checkpoint again"] = await call("checkpoint", {"name": "mcp-cp"})
        seen["undo"] = await call("undo", {})
        seen["redo"] = await call("redo", {})
        seen["unknown op"] = await call("undo", {"op": UNKNOWN_OP})
        seen["restore"] = await call("restore", {"name": "mcp-cp"})
        seen["bad restore"] = await call("restore", {"name": "missing"})

    async def main() -> None:
        async with Client(build_server(ws_root), client_info=Implementation(
                name="desk-client", version="1.0")) as client:
            await body(client)

    anyio.run(main)
    assert seen["undo nothing"] == (True, "Nothing to undo: there is no earlier op by "
                                          "desk-client that is not already undone.")
    assert seen["redo nothing"][0] and "Nothing to redo" in seen["redo nothing"][1]
    assert not seen["undo"][0] and "Undid 1 op(s): create" in seen["undo"][1]
    assert not seen["redo"][0]
    assert seen["unknown op"][0] and f"There is no op {UNKNOWN_OP}" in seen["unknown op"][1]
    assert not seen["restore"][0] and "unchanged" in seen["restore"][1]  # the files are its tree
    assert seen["checkpoint again"][0] and "already exists" in seen["checkpoint again"][1]
    assert seen["bad restore"][0] and "no checkpoint named 'missing'" in seen["bad restore"][1]
    assert tree(ws_root) == {"mine.txt": "a person's\n", "its.txt": "x\n"}
    assert [(o.tool, o.agent) for o in ops(ws_root)] == [
        ("init", None), ("create", None), ("create", "desk-client"), ("undo", "desk-client"),
        ("redo", "desk-client")]
    assert_clean(ws_root)
