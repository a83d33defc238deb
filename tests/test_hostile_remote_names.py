"""A remote names what the person means: names someone else chose never stand in for an op.

``gitspace pull`` took every ``refs/tags/gitspace/*`` the remote had, without the rules a
checkpoint made here follows, so a tag named like an op's short id won when the person named that
op: ``gitspace restore <the id log shows>`` wrote the remote's files. Now one rule
(``core/refnames.py``: git's own ``check-ref-format`` answer, ``storage/gitnames.py``, plus "never
reads as an op id") decides every branch and checkpoint made here or taken by ``pull`` and
``sync``; a name it refuses stays on the remote, with a note. ``gitspace checkpoint`` refuses a
name that reads as an op recorded here (its start or end, as ``log`` shows it) or has an op
id's form; and the resolver, where such a name exists anyway (an older gitspace took it), says
the name is ambiguous rather than pick one. Every scenario ends sealed.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import git, head, op_ids
from hostile import Outside, assert_sound, cli, commit, expected_failure, sealed

import gitspace
from gitspace.storage import ledger


def _published(tmp_path: Path) -> tuple[gitspace.Workspace, Path, str]:
    """A workspace with two ops on a.txt, pushed to a bare remote; (it, the remote, the first
    op's id)."""
    ws = gitspace.init(tmp_path / "ws", agent="tester")
    assert ws.call("create", {"path": "a.txt", "file_text": "the op's own text\n"}).ok
    first = op_ids(ws.root)[-1]
    assert ws.call("create", {"path": "b.txt", "file_text": "b\n"}).ok
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "--initial-branch=main", str(remote))
    git(ws.root, "remote", "add", "origin", str(remote))
    assert cli(ws.root, "push").returncode == 0
    return ws, remote, first


def _plant(tmp_path: Path, remote: Path, names: list[str], *, new_op: bool = False) -> str:
    """What someone with push access does: a commit of their own files, tagged ``gitspace/NAME``
    for every name, pushed to ``remote``; with ``new_op``, an op on main too. Their commit."""
    attacker = tmp_path / "attacker"
    git(tmp_path, "clone", "-q", str(remote), str(attacker))
    theirs = commit(attacker, head(attacker), {"a.txt": "the remote's files\n"}, "theirs\n")
    for name in names:
        git(attacker, "tag", "-a", "-m", f"planted\n\nGitspace-Checkpoint: {name}\n",
            f"gitspace/{name}", theirs)
    git(attacker, "push", "-q", "origin", "--tags")
    return theirs


def _names_for(op_id: str) -> list[str]:
    return [ledger.short_id(op_id), ledger.short_id(op_id).lower(), op_id[:6], op_id,
            "FETCH_HEAD", "x@y", "0123456789abcdef0123456789abcdef01234567"]


def test_pull_never_takes_a_tag_named_like_an_op_and_restore_means_the_op(tmp_path: Path) -> None:
    ws, remote, first = _published(tmp_path)
    outside = Outside(tmp_path / "outside")
    names = _names_for(first)
    _plant(tmp_path, remote, [*names, "fine-name"])
    ws.close()
    with sealed(ws.root, outside, clean=True):
        pulled = cli(ws.root, "pull")
        assert pulled.returncode == 0, pulled.stderr
        tags = git(ws.root, "for-each-ref", "--format=%(refname)", "refs/tags").split()
        assert tags == ["refs/tags/gitspace/fine-name"], tags  # the one rightly named
        for name in names:
            assert f"checkpoint {name} on origin was not taken" in pulled.stdout, (name, pulled.stdout)
        restored = cli(ws.root, "restore", ledger.short_id(first))
        assert restored.returncode == 0, restored.stderr
        assert (ws.root / "a.txt").read_text() == "the op's own text\n"
        assert not (ws.root / "b.txt").exists()  # the files right after that op
    assert_sound(ws.root)


def test_sync_never_takes_a_tag_named_like_an_op_it_brings(tmp_path: Path) -> None:
    ws, remote, _ = _published(tmp_path)
    outside = Outside(tmp_path / "outside")
    # Someone else's clone makes an op and pushes it with a tag named like that very op.
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(remote), str(clone))
    with gitspace.open(clone, agent="other") as theirs:
        assert theirs.call("create", {"path": "c.txt", "file_text": "c\n"}).ok
        op = op_ids(clone)[0]
    assert cli(clone, "sync").returncode == 0
    planted = _plant(tmp_path, remote, [ledger.short_id(op)])
    ws.close()
    with sealed(ws.root, outside, clean=True):
        synced = cli(ws.root, "sync")
        assert synced.returncode == 0, synced.stderr
        assert git(ws.root, "tag", "-l").split() == []
        assert op in op_ids(ws.root)  # the op came; the tag named like it did not
        shown = cli(ws.root, "show", ledger.short_id(op), "--json")
        assert shown.returncode == 0 and planted not in shown.stdout, shown.stdout
    assert_sound(ws.root)


@pytest.mark.parametrize("which", ["short", "lower", "start", "whole", "other-form"])
def test_checkpoint_refuses_a_name_that_reads_as_an_op_id(tmp_path: Path, which: str) -> None:
    with gitspace.init(tmp_path / "ws", agent="tester") as ws:
        assert ws.call("create", {"path": "a.txt", "file_text": "a\n"}).ok
        op = op_ids(ws.root)[0]
        name = {"short": ledger.short_id(op), "lower": ledger.short_id(op).lower(),
                "start": op[:6], "whole": op.lower(),
                "other-form": ledger.new_op_id().lower()}[which]
        refs = git(ws.root, "for-each-ref")
        with sealed(ws.root, Outside(tmp_path / "outside")):
            result = ws.call("checkpoint", {"name": name})
            assert not result.ok and result.error is not None and result.error.hint, result.text
            assert "op" in result.text, result.text
            expected_failure(cli(ws.root, "checkpoint", name))
            branch = ws.call("branch", {"name": name, "switch": False})
            assert not branch.ok, branch.text
            assert git(ws.root, "for-each-ref") == refs


def test_the_resolver_says_a_name_is_ambiguous_rather_than_pick_one(tmp_path: Path) -> None:
    """A tag an older gitspace took, named like an op: naming it names two things."""
    ws, remote, first = _published(tmp_path)
    outside = Outside(tmp_path / "outside")
    short = ledger.short_id(first)
    theirs = _plant(tmp_path, remote, [short])
    git(ws.root, "fetch", "-q", "origin", "refs/tags/gitspace/*:refs/tags/gitspace/*")
    ws.close()
    with sealed(ws.root, outside, clean=True):
        for command in (["restore", short], ["show", short]):
            said = cli(ws.root, *command)
            expected_failure(said)
            assert "could name 2 things" in said.stderr and first in said.stderr, said.stderr
            assert f"checkpoint {short}" in said.stderr and "gitspace/NAME" in said.stderr
        assert (ws.root / "a.txt").read_text() == "the op's own text\n"
        assert cli(ws.root, "restore", first).returncode == 0  # the whole id: the op
        assert (ws.root / "a.txt").read_text() == "the op's own text\n"
        assert cli(ws.root, "restore", f"gitspace/{short}").returncode == 0  # said so: the tag
        assert (ws.root / "a.txt").read_text() == "the remote's files\n"
        assert git(ws.root, "rev-parse", f"{theirs}^{{tree}}").strip() == \
            git(ws.root, "rev-parse", "HEAD^{tree}").strip()
    assert_sound(ws.root)


def test_a_branch_and_a_checkpoint_of_one_name_are_ambiguous(tmp_path: Path) -> None:
    with gitspace.init(tmp_path / "ws", agent="tester") as ws:
        assert ws.call("checkpoint", {"name": "junction"}).ok
        assert ws.call("create", {"path": "a.txt", "file_text": "a\n"}).ok
        refused = ws.call("branch", {"name": "junction", "switch": False})
        assert not refused.ok and "checkpoint has that name" in refused.text, refused.text
        git(ws.root, "branch", "junction")  # made with git itself
        with sealed(ws.root, Outside(tmp_path / "outside")):
            said = cli(ws.root, "show", "junction")
            expected_failure(said)
            assert "could name 2 things" in said.stderr, said.stderr
            assert cli(ws.root, "show", "gitspace/junction").returncode == 0
            assert cli(ws.root, "show", "refs/heads/junction").returncode == 0
