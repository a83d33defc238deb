"""Ops say where they stand: a dropped, copied or reordered op is reported at that op.

A branch from which one op was dropped (``git rebase --onto X~1 X``) verified and replayed as
"match", exit 0: a pull request that silently removed an agent's op passed CI. Every op now names
the op its commit's first parent records (ledger format 4, ``Gitspace-After``,
``storage/opchain.py``), so ``verify``, ``replay`` and the CI action report the first op that no
longer stands where it was made. History a newer gitspace recorded (a format this one does not
read) is refused as such, with the fix; history an older one recorded still replays. The person's
own rewrites under a workspace branch (a reset, an amend, a filter) are reported, or, where
nothing of an op was lost, leave every command working. Every scenario ends sealed.
"""

from __future__ import annotations

import json
from pathlib import Path

from ci_runner import check_step, read_commands
from conftest import git, head, op_ids, ops
from hostile import assert_sound, cli, expected_failure, fsck, sealed, status, workspace

import gitspace
from gitspace.storage import ledger


def _four_ops(ws: gitspace.Workspace) -> list[str]:
    for i in range(4):
        assert ws.call("create", {"path": f"f{i}.txt", "file_text": f"{i}\n"}).ok
    return op_ids(ws.root)[-4:]  # oldest first


def _person(root: Path, *args: str, input: bytes | None = None) -> str:  # noqa: A002
    """A git command the person runs, as themselves."""
    return git(root, "-c", "user.name=Pat", "-c", "user.email=pat@example.com", *args,
               input=input)


def _reported_at(root: Path, rev: str, op: str, says: str) -> None:
    """``verify`` and ``replay`` of ``rev`` both fail, naming ``op`` and saying ``says``."""
    verify = cli(root, "verify", rev, "--json")
    assert verify.returncode == 1, verify.stderr
    problems = json.loads(verify.stdout)["problems"]
    assert [p["problem"] for p in problems if op in p["problem"] and says in p["problem"]], problems
    replay = cli(root, "replay", rev, "--json")
    assert replay.returncode == 1, replay.stderr
    divergence = json.loads(replay.stdout)["divergence"]
    assert divergence["op_id"] == op and says in divergence["reason"], divergence


def test_a_branch_with_one_op_dropped_fails_verify_replay_and_ci_at_that_op(
        tmp_path: Path) -> None:
    with workspace(tmp_path, {"a.txt": "a\n"}) as (ws, outside):
        _, _, dropped, last = _four_ops(ws)
        base = head(ws.root, "HEAD~4")
        ws.close()
        git(ws.root, "branch", "pr")
        git(ws.root, "switch", "-q", "pr")
        x = head(ws.root, "HEAD~1")  # the op before the last, as `git rebase --onto X~1 X` drops
        _person(ws.root, "rebase", "-q", "--onto", f"{x}~1", x)
        git(ws.root, "switch", "-q", "main")
        gone = ledger.parse_message(git(ws.root, "log", "-1", "--format=%B", x))
        assert gone is not None
        kept = ops(ws.root, "pr")[-1]  # the op that followed it, now after the one before
        assert gone.op_id == dropped and kept.op_id == last and gone.op_id not in op_ids(
            ws.root, "pr")
        with sealed(ws.root, outside):
            _reported_at(ws.root, "pr", kept.op_id, f"op {gone.op_id} was dropped")
            bare = tmp_path / "remote.git"
            git(tmp_path, "init", "-q", "--bare", "--initial-branch=main", str(bare))
            git(ws.root, "push", "-q", str(bare), "main", "pr")
            proc, files = check_step(bare, head(ws.root, "pr"), base, tmp_path, head_ref="pr")
            assert proc.returncode == 1, proc.stderr
            outputs = read_commands(files["output"])
            assert outputs["matched"] == "false" and outputs["result"] != "match", outputs
            assert kept.op_id[:12] in outputs["first-divergence"] or \
                kept.op_id in outputs["first-divergence"], outputs
            assert "was dropped" in files["summary"].read_text()
            fsck(tmp_path / "checkout")
            assert status(tmp_path / "checkout") == ""


def test_a_copied_and_a_reordered_op_are_reported_at_that_op(tmp_path: Path) -> None:
    with workspace(tmp_path, {"a.txt": "a\n"}) as (ws, outside):
        _four_ops(ws)
        ws.close()
        root = ws.root
        git(root, "branch", "copied")
        git(root, "branch", "reordered", "HEAD~2")
        git(root, "switch", "-q", "copied")
        _person(root, "cherry-pick", "--allow-empty", "--keep-redundant-commits", "HEAD~2")
        copy = ops(root, "copied")[-1]
        git(root, "switch", "-q", "reordered")
        top, below = head(root, "main"), head(root, "main~1")
        _person(root, "cherry-pick", top, below)  # the last two ops, swapped
        moved = ops(root, "reordered")[-2]  # the last op, now first of the two
        git(root, "switch", "-q", "main")
        with sealed(root, outside):
            verify = cli(root, "verify", "copied", "--json")
            assert verify.returncode == 1
            problems = [p["problem"] for p in json.loads(verify.stdout)["problems"]]
            assert any(f"op id {copy.op_id} appears twice" in p for p in problems), problems
            assert any("copied here" in p for p in problems), problems
            _reported_at(root, "reordered", moved.op_id, "reordered")


def test_a_plain_commit_dropped_between_ops_is_reported_at_the_op_after_it(
        tmp_path: Path) -> None:
    with workspace(tmp_path, {"a.txt": "a\n"}) as (ws, outside):
        assert ws.call("create", {"path": "b.txt", "file_text": "b\n"}).ok
        ws.close()
        (ws.root / "mine.txt").write_text("a person's own commit\n")
        git(ws.root, "add", "mine.txt")
        _person(ws.root, "commit", "-qm", "mine")
        with gitspace.open(ws.root, agent="tester") as again:
            assert again.call("create", {"path": "c.txt", "file_text": "c\n"}).ok
        assert cli(ws.root, "verify").returncode == 0 and cli(ws.root, "replay").returncode == 0
        mine = head(ws.root, "HEAD~1")
        git(ws.root, "branch", "pr")
        git(ws.root, "switch", "-q", "pr")
        _person(ws.root, "rebase", "-q", "--onto", f"{mine}~1", mine)
        git(ws.root, "switch", "-q", "main")
        last = ops(ws.root, "pr")[-1]
        with sealed(ws.root, outside):
            _reported_at(ws.root, "pr", last.op_id, "a commit before it was dropped")


def test_history_a_newer_gitspace_recorded_is_refused_and_an_older_ones_replays(
        tmp_path: Path) -> None:
    with workspace(tmp_path, {"a.txt": "a\n"}) as (ws, outside):
        assert ws.call("create", {"path": "b.txt", "file_text": "b\n"}).ok
        ws.close()
        newer = git(ws.root, "log", "-1", "--format=%B").replace("Gitspace-Format: 4",
                                                                   "Gitspace-Format: 5")
        (ws.root / "c.txt").write_text("c\n")
        git(ws.root, "add", "c.txt")
        _person(ws.root, "commit", "-q", "-F", "-", input=newer.encode())
        with sealed(ws.root, outside):
            for command in (["verify"], ["replay"], ["replay", "--json"]):
                said = cli(ws.root, *command)
                expected_failure(said)
                assert "Ledger format 5 is newer than this gitspace reads" in said.stderr
                assert "pip install --upgrade gitspace" in said.stderr, said.stderr
        git(ws.root, "reset", "-q", "--hard", "HEAD~1")
    with workspace(tmp_path / "old", {"a.txt": "a\n"}) as (ws, outside):
        old = ledger.FORMAT
        try:
            ledger.FORMAT = 1  # an older gitspace: every op in format 1, none naming another
            assert ws.call("create", {"path": "b.txt", "file_text": "b\n"}).ok
            assert ws.call("str_replace", {"path": "b.txt", "old_str": "b", "new_str": "B"}).ok
        finally:
            ledger.FORMAT = old
        assert ws.call("append", {"path": "b.txt", "text": "more\n"}).ok  # and a newer op
        assert [op.format for op in ops(ws.root)] == [4, 1, 1, 4]
        ws.close()
        with sealed(ws.root, outside):
            assert cli(ws.root, "verify").returncode == 0
            replayed = cli(ws.root, "replay", "--json")
            assert replayed.returncode == 0 and json.loads(replayed.stdout)["reexecuted"] == 3


def test_the_persons_own_rewrites_under_a_workspace_branch(tmp_path: Path) -> None:
    """A reset drops ops the person meant to drop: what follows is recorded after what is left,
    and undo, log and replay work on that. An amend of an op's message, or a filter that changes
    an op's files, is reported at that op."""
    with workspace(tmp_path, {"a.txt": "a\n"}) as (ws, outside):
        _four_ops(ws)
        ws.close()
        root = ws.root
        with sealed(root, outside, clean=True):
            git(root, "reset", "-q", "--hard", "HEAD~2")
            with gitspace.open(root, agent="tester") as again:
                assert again.call("create", {"path": "g.txt", "file_text": "g\n"}).ok
                undone = again.call("undo", {})
                assert undone.ok and not (root / "g.txt").exists(), undone.text
                assert again.call("undo", {}).ok and not (root / "f1.txt").exists()
            assert cli(root, "verify").returncode == 0
            assert cli(root, "replay").returncode == 0
        tip = head(root)
        _person(root, "commit", "-q", "--amend", "-m", git(root, "log", "-1", "--format=%B")
                .replace("undo", "undo, as the person says", 1))
        said = cli(root, "replay", "--json")
        assert said.returncode == 1, said.stdout
        assert "its message differs" in json.loads(said.stdout)["divergence"]["reason"]
        git(root, "reset", "-q", "--hard", tip)
        _person(root, "filter-branch", "-f", "--tree-filter", "rm -f f0.txt", "HEAD")
        git(root, "update-ref", "-d", "refs/original/refs/heads/main")
        said = cli(root, "replay", "--json")
        assert said.returncode == 1, said.stdout
        first = json.loads(said.stdout)["divergence"]
        assert first["tool"] == "create" and first["args"]["path"] in ("f0.txt", "f1.txt"), first
        git(root, "reset", "-q", "--hard", tip)
        git(root, "reflog", "expire", "--expire=now", "--all")
        git(root, "gc", "-q", "--prune=now")
    assert_sound(root)
