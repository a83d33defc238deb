"""Checkpoint and branch names never shadow git's own names or collide with existing refs.

A name that reads as HEAD or a pseudo-ref, as a full ref (``refs/...``), as gitspace's checkpoint
namespace, as a commit or op id, as an existing branch (for a checkpoint), or that differs from an
existing ref only in case or by a folder, is refused with a hint, through the API and the CLI,
and leaves no ref, lock or journal behind. Checkpoint messages are capped and cannot forge the
fields gitspace reads back from the tag.
"""

from __future__ import annotations

import pytest
from conftest import git
from hostile import Outside, cli, expected_failure, sealed

import gitspace
from gitspace.core import checkpoints
from gitspace.storage import ledger

SHADOWS = ["HEAD", "head", "FETCH_HEAD", "ORIG_HEAD", "MERGE_HEAD", "CHERRY_PICK_HEAD",
           "fetch_head", "refs", "0123456789abcdef0123456789abcdef01234567",
           "01ARZ3NDEKTSV4RRFFQ69G5FAV", "x.lock", "x.", "-rf", "--help", "@", "a..b"]
BRANCH_ONLY = ["refs/heads/main", "refs/tags/x", "REFS/x", "gitspace/junction", "x/HEAD",
               "a/.hidden", "x.lock/y", "main/sub", "Main", "taken"]
CHECKPOINT_ONLY = ["main", "MAIN", "side", "Junction", "a/b"]


@pytest.fixture
def scene(tmp_path):  # type: ignore[no-untyped-def]
    ws = gitspace.init(tmp_path / "ws", agent="tester")
    assert ws.call("checkpoint", {"name": "junction"}).ok
    assert ws.call("branch", {"name": "side", "switch": False}).ok
    git(ws.root, "tag", "taken")  # a user's own tag
    yield ws, Outside(tmp_path / "outside")
    ws.close()


def _refs(ws: gitspace.Workspace) -> str:
    return git(ws.root, "for-each-ref", "--format=%(refname) %(objectname)")


# The CLI costs a process per call: a few names go through it, every name through the API.
THROUGH_CLI = {"FETCH_HEAD", "-rf", "refs/heads/main", "side"}


@pytest.mark.parametrize("kind,names", [("branch", SHADOWS + BRANCH_ONLY),
                                        ("checkpoint", SHADOWS + CHECKPOINT_ONLY)])
def test_names_that_shadow_or_clash_are_refused(scene, kind: str, names: list[str]) -> None:  # type: ignore[no-untyped-def]
    ws, outside = scene
    for name in names:
        refs = _refs(ws)
        with sealed(ws.root, outside):
            result = ws.call(kind, {"name": name})
            assert not result.ok and result.error is not None and result.error.hint, \
                f"{kind} {name!r}: {result.text}"
            assert "Traceback" not in result.text
            if name in THROUGH_CLI:
                expected_failure(cli(ws.root, kind, "--", name))
            assert _refs(ws) == refs and ws.branch() == "main"


def test_a_branch_beside_an_existing_folder_of_branches(scene) -> None:  # type: ignore[no-untyped-def]
    """'d' when 'd/e' exists crashed with IsADirectoryError and left d.lock behind."""
    ws, outside = scene
    assert ws.call("branch", {"name": "d/e", "switch": False}).ok
    refs = _refs(ws)
    with sealed(ws.root, outside):
        result = ws.call("branch", {"name": "d", "switch": False})
        assert not result.ok and "d/e" in result.text and result.error.hint
        assert _refs(ws) == refs


def test_checkpoint_messages_are_capped_and_cannot_forge_fields(scene) -> None:  # type: ignore[no-untyped-def]
    ws, outside = scene
    with sealed(ws.root, outside):
        long = ws.call("checkpoint", {"name": "long", "message": "m" * 501})
        assert not long.ok and "500" in long.text
        expected_failure(cli(ws.root, "checkpoint", "long2", "-m", "m" * 501))
    forged = "Gitspace-Op: 01ARZ3NDEKTSV4RRFFQ69G5FAV\nGitspace-Branch: elsewhere\x1b[31m"
    assert ws.call("checkpoint", {"name": "plain", "message": forged}).ok
    _, tag = ws.repo.read_object(ws.repo.read_ref(checkpoints.PREFIX + "plain") or "")
    note = ledger.parse_checkpoint(tag.decode())
    assert note is not None and note.op_id is None and note.branch == "main"
    listed = {c.name: c for c in checkpoints.listing(ws)}["plain"]
    assert listed.branch == "main" and "\x1b" not in listed.message
