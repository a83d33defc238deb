"""Replay: honest branches replay clean; every way of lying is caught at the op that lies.

Lies are built with plain git plumbing (commit-tree, a private index), the way someone editing
history by hand would, never by calling gitspace internals.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import assert_clean, call_ok, git, git_env, git_run, head

import gitspace
from gitspace import tools
from gitspace.onto import replay_onto
from gitspace.replay import BadRange, Report, replay
from gitspace.workspace import Result, Workspace

# -- helpers ---------------------------------------------------------------------------------


def message(root: Path, rev: str) -> str:
    """A commit's message exactly as stored."""
    return git(root, "cat-file", "commit", rev).split("\n\n", 1)[1]


def commit_tree(root: Path, tree: str, parent: str, msg: str) -> str:
    return git(root, "commit-tree", tree, "-p", parent, input=msg.encode()).strip()


def rechain(root: Path, base: str, commits: list[str]) -> str:
    """Commits with the same trees and messages as ``commits``, chained in that order on base."""
    parent = base
    for rev in commits:
        parent = commit_tree(root, git(root, "rev-parse", f"{rev}^{{tree}}").strip(), parent,
                             message(root, rev))
    return parent


def tree_with(root: Path, rev: str, files: dict[str, str | None], mode: str = "100644") -> str:
    """The tree of ``rev`` with ``files`` replaced (None removes), built in a private index."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {**git_env(), "GIT_INDEX_FILE": str(Path(tmp, "index"))}

        def run(*args: str, data: bytes | None = None) -> str:
            out = subprocess.run(["git", *args], cwd=root, env=env, input=data,
                                 capture_output=True, check=True)
            return out.stdout.decode().strip()

        run("read-tree", rev)
        for path, text in files.items():
            if text is None:
                run("update-index", "--force-remove", path)
            else:
                blob = run("hash-object", "-w", "--stdin", data=text.encode())
                run("update-index", "--add", "--cacheinfo", f"{mode},{blob},{path}")
        return run("write-tree")


def revs(root: Path, rev: str = "HEAD") -> list[str]:
    """First-parent commits, oldest first."""
    return git(root, "rev-list", "--first-parent", "--reverse", rev).split()


def user_state(root: Path) -> tuple[str, ...]:
    """Everything replay must leave alone in the user's repository."""
    index = Path(root, ".git", "index")
    return (git(root, "for-each-ref"), git(root, "symbolic-ref", "HEAD"), git(root, "status",
            "--porcelain", "--untracked-files=all"), git(root, "worktree", "list", "--porcelain"),
            index.read_bytes().hex() if index.exists() else "")


@pytest.fixture(autouse=True)
def scratch_dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Replay's temporary folders go here, and none may be left afterwards."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    yield folder
    assert not any(n.startswith("gitspace-replay-") for n in os.listdir(folder))


def replayed(ws: Workspace, rev: str = "HEAD", base: str | None = None) -> Report:
    before = user_state(ws.root)
    report = replay(ws, head(ws.root, rev), base)
    assert user_state(ws.root) == before, "replay changed the user's repository"
    return report


def basic_ops(ws: Workspace) -> list[Result]:
    return [
        call_ok(ws, "create", {"path": "notes.md", "file_text": "title\nalpha\nbeta\ngamma\n"}),
        call_ok(ws, "str_replace", {"path": "notes.md", "old_str": "alpha", "new_str": "ALPHA"}),
        call_ok(ws, "str_replace", {"path": "notes.md", "old_str": "ALPHA", "new_str": "A+"}),
        call_ok(ws, "create", {"path": "other.md", "file_text": "other\n"}),
    ]


def add_script(ws: Workspace, name: str, body: str, helper: str | None = None) -> None:
    """A workspace constraint script, added as a person would (on disk, then snapshot)."""
    header = (f"# ---gitspace---\n# name: {name}\n# description: Test script {name}.\n"
              "# example: {}\n# mutates: true\n"
              '# args: {"type": "object", "properties": {}, "additionalProperties": false}\n'
              "# ---\n")
    folder = ws.root / "constraints"
    folder.mkdir(exist_ok=True)
    (folder / f"{name}.py").write_text("#!/usr/bin/env python3\n" + header + body)
    if helper is not None:
        (folder / "_helper.py").write_text(helper)
    assert ws.snapshot().ok


BUMP = ("import os, sys\nsys.dont_write_bytecode = True\n"
        "sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))\n"
        "from _helper import STEP\n"
        "with open('counter.txt', 'a') as f:\n    f.write(STEP)\nprint('bumped')\n")


# -- honest branches replay clean ------------------------------------------------------------


def test_a_demo_branch_replays_clean(tmp_path: Path) -> None:
    from gitspace.demo import run_demo

    root = tmp_path / "demo"
    run_demo(root, echo=lambda s: None)
    with gitspace.open(root) as ws:
        report = replayed(ws)
    assert report.ok, report.divergence
    assert report.total == len(revs(root)) > 40
    assert report.reexecuted == report.total - 1 and report.recorded_why == {"root commit": 1}
    tools_run = set(git(root, "log", "--format=%(trailers:key=Gitspace-Tool,valueonly)").split())
    assert {"move", "restore", "create", "plan_add", "plan_done", "memory"} <= tools_run
    assert_clean(root)


def test_basic_ops_undo_redo_and_outside_edits_replay_clean(ws: Workspace) -> None:
    basic_ops(ws)
    (ws.root / "outside.txt").write_text("a person wrote this\n")
    assert ws.snapshot().ok
    call_ok(ws, "undo", {})
    call_ok(ws, "redo", {})
    call_ok(ws, "checkpoint", {"name": "cp"})
    call_ok(ws, "delete", {"path": "other.md"})
    call_ok(ws, "restore", {"name": "cp"})
    git(ws.root, "commit", "--allow-empty", "-q", "-m", "a person's own commit")
    report = replayed(ws)
    assert report.ok, report.divergence
    assert report.recorded_why == {"root commit": 1, "external op": 1, "not an op": 1}
    assert report.reexecuted == 8 and report.total == 11


def test_from_replays_only_the_later_ops(ws: Workspace) -> None:
    basic_ops(ws)
    chain = revs(ws.root)
    report = replayed(ws, base=chain[2])
    assert report.ok and report.total == report.reexecuted == 2
    with pytest.raises(BadRange):
        replay(ws, chain[1], chain[3])  # not an ancestor
    side = commit_tree(ws.root, git(ws.root, "rev-parse", f"{chain[1]}^{{tree}}").strip(),
                       chain[1], "a side commit\n")
    merged = git(ws.root, "commit-tree", "HEAD^{tree}", "-p", "HEAD", "-p", side,
                 input=b"merge\n").strip()
    with pytest.raises(BadRange, match="first-parent"):
        replay(ws, merged, side)  # reachable only through a second parent


def test_elided_arguments_are_expanded_and_checked(ws: Workspace) -> None:
    big = "".join(f"line {i}\n" for i in range(1000))
    call_ok(ws, "create", {"path": "big.txt", "file_text": big})
    assert '"$blob"' in message(ws.root, "HEAD")
    report = replayed(ws)
    assert report.ok and report.reexecuted == 1
    # The same op, but the file in the commit is not what its elided argument says.
    forged = commit_tree(ws.root, tree_with(ws.root, "HEAD", {"big.txt": big + "extra\n"}),
                         head(ws.root, "HEAD~1"), message(ws.root, "HEAD"))
    lie = replay(ws, forged)
    assert lie.divergence is not None and lie.divergence.paths == ["big.txt"]
    assert "+++ replayed/big.txt" in lie.divergence.diff and "-extra" in lie.divergence.diff


def test_an_elided_argument_whose_blob_is_missing_is_applied_as_recorded(ws: Workspace) -> None:
    call_ok(ws, "create", {"path": "a.md", "file_text": "a\n"})
    msg = message(ws.root, "HEAD").replace(
        '{"file_text":"a\\n","path":"a.md"}', '{"file_text":{"$blob":"' + "1" * 40
        + '","bytes":2},"path":"a.md"}')
    tip = commit_tree(ws.root, git(ws.root, "rev-parse", "HEAD^{tree}").strip(),
                      head(ws.root, "HEAD~1"), msg)
    report = replay(ws, tip)
    assert report.ok and report.recorded_why == {"root commit": 1, "elided argument missing": 1}


# -- lies ------------------------------------------------------------------------------------


def test_a_hand_edit_under_a_forged_tool_trailer_is_caught_at_that_commit(ws: Workspace) -> None:
    basic_ops(ws)
    honest = message(ws.root, "HEAD~2")  # str_replace alpha -> ALPHA
    (ws.root / "notes.md").write_text("title\nA+\nbeta (edited by hand)\ngamma\n")
    (ws.root / "secret.txt").write_text("slipped in\n")
    git(ws.root, "add", "-A")
    forged = honest.replace('"new_str":"ALPHA","old_str":"alpha"', '"new_str":"x","old_str":"beta"')
    git(ws.root, "commit", "-q", "-F", "-", input=forged.encode())
    call_ok(ws, "create", {"path": "after.md", "file_text": "later\n"})
    report = replayed(ws)
    d = report.divergence
    assert d is not None and d.commit == head(ws.root, "HEAD~1") and d.tool == "str_replace"
    assert d.args == {"new_str": "x", "old_str": "beta", "path": "notes.md"}
    assert d.paths == ["notes.md", "secret.txt"] and report.checked == 5
    assert "-beta (edited by hand)" in d.diff and "+x" in d.diff


def test_reordered_ops_are_caught_at_the_first_moved_op(ws: Workspace) -> None:
    basic_ops(ws)
    init, create, a, b, other = revs(ws.root)
    report = replay(ws, rechain(ws.root, create, [b, a, other]))
    d = report.divergence
    assert d is not None and d.op_id == gitspace_op(ws, b) and "failed" in d.reason
    assert "did not appear verbatim" in d.reason and d.paths == ["notes.md"]
    assert report.checked == 2  # the root and the create replayed; b is where it breaks


def test_a_dropped_op_is_caught_at_the_first_op_it_affects(ws: Workspace) -> None:
    basic_ops(ws)
    init, create, a, b, other = revs(ws.root)
    report = replay(ws, rechain(ws.root, init, [create, a, other]))  # b dropped
    d = report.divergence
    assert d is not None and d.op_id == gitspace_op(ws, other)
    assert d.reason == "re-running it produced different files." and d.paths == ["notes.md"]
    assert "-A+" in d.diff and "+ALPHA" in d.diff


def test_a_forged_undo_link_is_caught_though_the_files_agree(ws: Workspace) -> None:
    basic_ops(ws)
    call_ok(ws, "undo", {})
    first = gitspace_op(ws, "HEAD~4")
    real = gitspace_op(ws, "HEAD~1")
    forged = message(ws.root, "HEAD").replace(f"Gitspace-Undo-Of: {real}",
                                              f"Gitspace-Undo-Of: {first}")
    tip = commit_tree(ws.root, git(ws.root, "rev-parse", "HEAD^{tree}").strip(),
                      head(ws.root, "HEAD~1"), forged)
    d = replay(ws, tip).divergence
    assert d is not None and d.tool == "undo" and "undo_of" in d.reason and not d.paths


def test_a_malformed_trailer_block_diverges(ws: Workspace) -> None:
    call_ok(ws, "create", {"path": "a.md", "file_text": "a\n"})
    tip = commit_tree(ws.root, git(ws.root, "rev-parse", "HEAD^{tree}").strip(), head(ws.root),
                      "edit\n\nGitspace-Format: 1\nGitspace-Op: nope\n")
    d = replay(ws, tip).divergence
    assert d is not None and d.op_id is None and "malformed" in d.reason


@pytest.fixture
def stamp_tool() -> Iterator[Any]:
    """A test-only built-in tool, registered through the registry's own decorator."""
    def register(version: str) -> None:
        @tools.builtin("stamp_test", "Write stamp.txt (test only).", {"text": "x"},
                       tools.obj(["text"], text=tools.string("What to stamp.")), mutates=True)
        def stamp(ws: Workspace, args: dict[str, Any], **kw: Any) -> Result:
            from gitspace.edit_tools import edit
            from gitspace.transaction import Plan

            def plan(txn: Any) -> Plan:
                txn.write("stamp.txt", f"{version}: {args['text']}\n".encode())
                return Plan("stamped", "stamp")

            return edit(ws, "stamp_test", args, plan, **kw)

    yield register
    tools._BUILTINS.pop("stamp_test", None)


def test_a_tool_whose_behaviour_changed_since_the_op_diverges_there(ws: Workspace,
                                                                    stamp_tool: Any) -> None:
    stamp_tool("v1")
    call_ok(ws, "create", {"path": "a.md", "file_text": "a\n"})
    call_ok(ws, "stamp_test", {"text": "hello"})
    call_ok(ws, "stamp_test", {"text": "again"})
    assert replayed(ws).ok
    stamp_tool("v2")  # a new release of the tool writes something else for the same call
    d = replayed(ws).divergence
    assert d is not None and d.commit == head(ws.root, "HEAD~1") and d.paths == ["stamp.txt"]
    assert "-v1: hello" in d.diff and "+v2: hello" in d.diff


def test_scripts_run_as_they_were_in_the_tree_at_each_op(ws: Workspace) -> None:
    add_script(ws, "bump", BUMP, helper="STEP = '+1\\n'\n")
    call_ok(ws, "bump", {})
    call_ok(ws, "bump", {})
    # A person changes the helper and the script with a plain commit (not an op) ...
    (ws.root / "constraints" / "_helper.py").write_text("STEP = '+2\\n'\n")
    (ws.root / "constraints" / "bump.py").write_text(
        (ws.root / "constraints" / "bump.py").read_text() + "# v2\n")
    git(ws.root, "commit", "-qam", "faster bumps")
    call_ok(ws, "bump", {})  # ... and later ops run the new code.
    assert (ws.root / "counter.txt").read_text() == "+1\n+1\n+2\n"
    report = replayed(ws)
    assert report.ok, report.divergence
    assert report.recorded_why == {"root commit": 1, "external op": 1, "not an op": 1}


def rewritten(ws: Workspace, files: dict[str, str]) -> tuple[str, str]:
    """The script was added by an outside edit, then ran as an op. Rewrite both commits so the
    tree holds ``files`` from the outside edit on: (new tip, the original op commit)."""
    init, added, op = revs(ws.root)
    tip = init
    for rev in (added, op):
        tip = commit_tree(ws.root, tree_with(ws.root, rev, files), tip, message(ws.root, rev))
    return tip, op


def test_a_script_changed_under_an_op_is_reported_as_such(ws: Workspace) -> None:
    add_script(ws, "bump", BUMP, helper="STEP = '+1\\n'\n")
    call_ok(ws, "bump", {})
    script = (ws.root / "constraints" / "bump.py").read_text()
    lie, op = rewritten(ws, {"constraints/bump.py": script.replace("'a'", "'w'")})
    report = replay(ws, lie)
    d = report.divergence
    assert d is not None and d.tool == "bump" and d.op_id == gitspace_op(ws, op)
    assert d.reason.startswith("the script changed since the op")
    assert "constraints/bump.py in the tree at this op" in d.reason
    assert report.recorded_why == {"root commit": 1, "external op": 1}


def test_a_helper_changed_under_an_op_shows_as_different_files(ws: Workspace) -> None:
    add_script(ws, "bump", BUMP, helper="STEP = '+1\\n'\n")
    call_ok(ws, "bump", {})
    lie, op = rewritten(ws, {"constraints/_helper.py": "STEP = '+3\\n'\n"})
    d = replay(ws, lie).divergence
    assert d is not None and d.op_id == gitspace_op(ws, op) and d.paths == ["counter.txt"]
    assert "-+1" in d.diff and "++3" in d.diff


# -- onto ------------------------------------------------------------------------------------


def forked(ws: Workspace) -> tuple[str, str]:
    """main and agent diverge on adjacent lines of notes.md: git rebase conflicts there."""
    call_ok(ws, "create", {"path": "notes.md", "file_text": "title\nalpha\nbeta\ngamma\n"})
    call_ok(ws, "checkpoint", {"name": "fork"})
    call_ok(ws, "branch", {"name": "agent", "from": "fork"})
    call_ok(ws, "str_replace", {"path": "notes.md", "old_str": "alpha", "new_str": "ALPHA"})
    call_ok(ws, "create", {"path": "agent.md", "file_text": "mine\n"})
    call_ok(ws, "switch", {"name": "main"})
    call_ok(ws, "str_replace", {"path": "notes.md", "old_str": "beta", "new_str": "BETA"})
    return head(ws.root, "main"), head(ws.root, "agent")


def test_onto_succeeds_where_git_rebase_conflicts(ws: Workspace, tmp_path: Path) -> None:
    main, agent = forked(ws)
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(ws.root), str(clone))
    git(clone, "switch", "-q", "agent")
    assert git_run(clone, "rebase", "origin/main").returncode != 0, "git rebase should conflict"
    before = user_state(ws.root)
    report = replay_onto(ws, agent, main, "agent-on-main")
    assert report.ok and report.reexecuted == 2 and report.created == head(ws.root, "agent-on-main")
    after = user_state(ws.root)
    assert after[1:] == before[1:], "only the refs may change"
    assert set(after[0].splitlines()) - set(before[0].splitlines()) == {
        f"{report.created} commit\trefs/heads/agent-on-main"}
    assert git(ws.root, "show", "agent-on-main:notes.md") == "title\nALPHA\nBETA\ngamma\n"
    assert git(ws.root, "rev-parse", "agent-on-main~2").strip() == main
    assert [gitspace_op(ws, f"agent-on-main~{i}") for i in (1, 0)] == [
        gitspace_op(ws, f"agent~{i}") for i in (1, 0)]
    assert replay(ws, report.created, main).ok  # the new branch replays clean itself
    assert_clean(ws.root)


def test_onto_stops_cleanly_where_the_meaning_no_longer_applies(ws: Workspace) -> None:
    main, agent = forked(ws)
    call_ok(ws, "str_replace", {"path": "notes.md", "old_str": "alpha\n", "new_str": ""})
    main = head(ws.root, "main")
    before = user_state(ws.root)
    report = replay_onto(ws, agent, main, "agent-on-main")
    d = report.divergence
    assert d is not None and report.result == "stopped" and report.created is None
    assert d.op_id == gitspace_op(ws, "agent~1") and "did not appear verbatim" in d.reason
    assert user_state(ws.root) == before
    with pytest.raises(gitspace.GitspaceError, match="already exists"):
        replay_onto(ws, agent, main, "agent")


def test_onto_moves_outside_edits_by_merging_and_stops_on_a_conflict(ws: Workspace) -> None:
    main, agent = forked(ws)
    call_ok(ws, "switch", {"name": "agent"})
    (ws.root / "notes.md").write_text("title\nALPHA\nbeta\ngamma\nend by hand\n")
    assert ws.snapshot().ok
    call_ok(ws, "switch", {"name": "main"})
    report = replay_onto(ws, head(ws.root, "agent"), main, "moved")
    assert report.ok and report.recorded_why == {"external op": 1}
    assert git(ws.root, "show", "moved:notes.md") == "title\nALPHA\nBETA\ngamma\nend by hand\n"
    call_ok(ws, "create", {"path": "notes.md", "file_text": "title\nalpha\nBETA\ngamma\nEND\n"})
    stopped = replay_onto(ws, head(ws.root, "agent"), head(ws.root, "main"), "moved-again")
    d = stopped.divergence
    assert d is not None and "conflicts" in d.reason and d.tool == "external_edit"
    assert git_run(ws.root, "rev-parse", "--verify", "moved-again").returncode != 0


def test_onto_restores_a_checkpoint_to_its_moved_state(ws: Workspace) -> None:
    main, _ = forked(ws)
    call_ok(ws, "switch", {"name": "agent"})
    call_ok(ws, "checkpoint", {"name": "agent-1"})
    call_ok(ws, "delete", {"path": "agent.md"})
    call_ok(ws, "restore", {"name": "agent-1"})
    report = replay_onto(ws, head(ws.root, "agent"), main, "moved")
    assert report.ok, report.divergence
    # The restore brings back agent.md on the new base; main's BETA stays.
    assert git(ws.root, "show", "moved:notes.md") == "title\nALPHA\nBETA\ngamma\n"
    assert git(ws.root, "show", "moved:agent.md") == "mine\n"


def gitspace_op(ws: Workspace, rev: str) -> str:
    from gitspace.ledger import parse_message

    op = parse_message(message(ws.root, rev))
    assert op is not None
    return op.op_id


def test_a_script_that_uses_now_sees_the_recorded_moment_on_replay(ws: Workspace) -> None:
    import json

    ws.clock = 1_700_000_000  # recorded "in the past": a replay now would see another second
    done = call_ok(ws, "append_entry", {"path": "journal/log.jsonl", "text": "shipped it"})
    ws.clock = None
    entry = json.loads((ws.root / "journal/log.jsonl").read_text())
    assert entry["ts"].startswith("2023-11-14T22:13:20")
    assert ws.repo.commit(done.commit).time == 1_700_000_000
    report = replay(ws, head(ws.root))
    assert report.ok, report.divergence
