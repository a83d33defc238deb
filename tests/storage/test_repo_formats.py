"""Repositories gitspace will not open are refused with a sentence, never misread; a checkpointed
workspace stays one that ``git gc`` handles without a word; the git version is checked."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import call_ok, git, git_run

import gitspace
from gitspace.errors import NotAWorkspace, Unsupported
from gitspace.storage import gitrepo


def test_sha256_repositories_are_refused_clearly(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "--object-format=sha256", "sha")
    (tmp_path / "sha" / "a.txt").write_text("a\n")
    git(tmp_path / "sha", "add", ".")
    git(tmp_path / "sha", "commit", "-q", "-m", "one")
    before = git(tmp_path / "sha", "rev-parse", "HEAD")
    with pytest.raises(Unsupported, match="sha256 object ids") as caught:
        gitspace.open(tmp_path / "sha")
    assert caught.value.hint and "SHA-1" in caught.value.hint
    assert git(tmp_path / "sha", "rev-parse", "HEAD") == before
    assert not (tmp_path / "sha" / ".git" / "gitspace").exists()


def test_reftable_repositories_are_refused_clearly(tmp_path: Path) -> None:
    # This git (2.39) cannot make a reftable repository; one a newer git made looks like this
    # to it: an extension it does not know.
    git(tmp_path, "init", "-q", "rt")
    git(tmp_path / "rt", "config", "core.repositoryformatversion", "1")
    git(tmp_path / "rt", "config", "extensions.refStorage", "reftable")
    with pytest.raises(Unsupported, match="cannot read"):
        gitspace.open(tmp_path / "rt")
    # And to a git that reads reftable, the refs live in .git/reftable: refused by name.
    git(tmp_path, "init", "-q", "rt2")
    (tmp_path / "rt2" / ".git" / "reftable").mkdir()
    with pytest.raises(Unsupported, match="reftable"):
        gitspace.open(tmp_path / "rt2")


def test_bare_and_git_dir_are_named_as_such(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "--bare", "bare.git")
    with pytest.raises(NotAWorkspace, match="bare repository"):
        gitspace.open(tmp_path / "bare.git")
    gitspace.init(tmp_path / "ws").close()
    with pytest.raises(NotAWorkspace, match="inside a git directory"):
        gitspace.open(tmp_path / "ws" / ".git")


def test_an_old_git_is_refused_with_the_version_it_needs(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "git").write_text("#!/bin/sh\necho 'git version 2.30.1'\n")
    (fake / "git").chmod(0o755)
    monkeypatch.setattr(gitrepo, "_git_version", None)
    monkeypatch.setenv("PATH", f"{fake}:/usr/bin:/bin")
    with pytest.raises(Unsupported, match=r"needs git 2\.38 or newer.*2\.30\.1"):
        gitrepo.check_git_version()
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    with pytest.raises(Unsupported, match="not installed"):
        gitrepo.check_git_version()
    monkeypatch.undo()
    monkeypatch.setattr(gitrepo, "_git_version", None)
    assert gitrepo.check_git_version() >= (2, 38)


def test_git_gc_is_silent_on_a_workspace_with_checkpoints(ws: gitspace.Workspace) -> None:
    root = ws.root
    for i in range(3):
        call_ok(ws, "create", {"path": f"f{i}.txt", "file_text": f"{i}\n"})
        call_ok(ws, "checkpoint", {"name": f"cp{i}"})
    call_ok(ws, "restore", {"name": "cp0"})
    assert not (root / ".git" / "logs" / "refs" / "tags").exists()
    gc = git_run(root, "gc", "--quiet")
    assert gc.returncode == 0 and gc.stderr == b"", gc.stderr.decode()
    assert git_run(root, "fsck", "--strict", "--no-progress").stderr == b""


def test_tag_reflogs_an_older_version_wrote_are_dropped(ws: gitspace.Workspace) -> None:
    root = ws.root
    call_ok(ws, "checkpoint", {"name": "old"})
    # What earlier versions left: a reflog for the checkpoint tag, naming the tag object.
    tag = git(root, "rev-parse", "refs/tags/gitspace/old").strip()
    legacy = root / ".git" / "logs" / "refs" / "tags" / "gitspace" / "old"
    legacy.parent.mkdir(parents=True)
    legacy.write_text(f"{'0' * 40} {tag} a <a@b> 1700000000 +0000\tcheckpoint old\n")
    assert b"not a commit" in git_run(root, "gc", "--quiet").stderr
    call_ok(ws, "checkpoint", {"name": "new"})
    assert not legacy.exists()
    assert git_run(root, "gc", "--quiet").stderr == b""
