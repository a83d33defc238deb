"""One path policy for everything that takes a path, and for every tree gitspace writes.

Names some file system reads as ``.git`` (git's own ``verify_path`` rules for NTFS and HFS+),
gitspace's ``.gitspace/``, people's ``constraints/`` and git's ``.gitmodules`` are refused to every
writer: the edit tools, memory, ``append_entry`` (a constraint script, checked after it ran),
outside edits a snapshot would commit, and trees arriving from history or a remote. After each
attempt ``git fsck --strict`` passes, ``git status`` is as it was, and nothing outside changed.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import git, head
from hostile import Outside, blob, cli, commit, drop, expected_failure, fsck, sealed, workspace

import gitspace
from gitspace.core import paths
from gitspace.team import remote as sync

DOTGIT = [".GIT/x", ".Git/config", "GIT~1/x", "git~1/hooks/pre-commit", ".git /x", ".git./x",
          ".git. . /x", ".git::$INDEX_ALLOCATION/x", ".git:stream/x", "x/.GIT/y", "x/GIT~1",
          ".gIt./hooks/x"]
TOP = [".gitspace/.gitignore", ".gitspace/sessions/forged.json", ".GITSPACE/x", ".gitspace./x",
       ".gitspace::$INDEX_ALLOCATION/x", "GITSPA~1/x", "constraints/evil", "Constraints./evil",
       "CONSTR~1/evil", "constraints::$INDEX_ALLOCATION/evil"]  # (only at the top: the owners')
GITMODULES = [".gitmodules", "sub/.gitmodules", ".GITMODULES", "gitmod~1", "GI7EBA~1",
              ".gitmodules. "]
FOLDERS = [".gitattributes/x", ".gitmodules/x", "a/.GITATTRIBUTES/b"]
ANY_DEPTH = DOTGIT + GITMODULES + FOLDERS
HOSTILE = ANY_DEPTH + TOP


@pytest.fixture
def scene(tmp_path: Path) -> Iterator[tuple[gitspace.Workspace, Outside]]:
    with workspace(tmp_path, {"a.txt": "a\n", "journal/log.jsonl": ""}) as made:
        yield made


def _writers(path: str) -> list[tuple[str, dict[str, object]]]:
    return [
        ("create", {"path": path, "file_text": "pwned\n"}),
        ("append", {"path": path, "text": "pwned\n"}),
        ("rename", {"old_path": "a.txt", "new_path": path}),
        ("append_entry", {"path": f"{path}/log.jsonl", "text": "pwned"}),
    ] + ([("memory", {"command": "create", "path": f"/memories/{path}", "file_text": "pwned\n"})]
         if path in ANY_DEPTH else [])


@pytest.mark.parametrize("path", [".GIT/x.jsonl", "constraints/x.jsonl", ".gitspace/x.jsonl",
                                  "GIT~1/x.jsonl", "CONSTRAINTS/x.jsonl"])
def test_append_entry_writes_only_what_an_agent_may(scene: tuple[gitspace.Workspace, Outside],
                                                    path: str) -> None:
    """The issue's case: append_entry wrote into constraints/ and .GIT/, which the edit tools
    refuse. The script's write is checked after it ran and undone."""
    ws, outside = scene
    tip = head(ws.root)
    with sealed(ws.root, outside):
        result = ws.call("append_entry", {"path": path, "text": "pwned"})
        assert not result.ok and "may not" in result.text, result.text
        assert head(ws.root) == tip and not _first_part(ws.root, path).exists()


def _first_part(root: Path, path: str) -> Path:
    return root / path.split("/")[0]


@pytest.mark.parametrize("path", HOSTILE)
def test_every_writer_refuses_the_path(scene: tuple[gitspace.Workspace, Outside], path: str) -> None:
    ws, outside = scene
    tip = head(ws.root)
    with sealed(ws.root, outside):
        for tool, args in _writers(path):
            result = ws.call(tool, args)
            assert not result.ok, f"{tool} {args} was accepted: {result.text}"
            assert "Traceback" not in result.text and result.error is not None
            assert result.error.hint, f"{tool} {args}: no hint"
            assert head(ws.root) == tip
            assert not os.path.lexists(_first_part(ws.root, path)), f"{tool} left {path}"
            assert not os.path.lexists(ws.root / "memories" / path.split("/")[0])


def test_the_alias_rules_match_gits_own() -> None:
    """Ports of is_ntfs_dotgit / is_hfs_dotgit / is_ntfs_dotgitmodules, cases from git's t0060."""
    for name in (".git", ".GIT", "GIT~1", ".git ", ".git.", ".git. .", ".git::$INDEX_ALLOCATION",
                 ".g\u200cit", "\u200c.git", ".git\ufeff", ".GI\u200dT"):
        assert paths.is_dotgit(name), name
    for name in (".gitx", "x.git", "git", ".gi", "git~10", ".git-x", ".git~1", "git"):
        assert not paths.is_dotgit(name), name
    for name in (".gitmodules", ".GITMODULES", "gitmod~1", "GITMOD~4", "gi7eba~1", "gi7eb~12",
                 ".gitmodules ...", ".gitmodules:x"):
        assert paths.aliases(name, ".gitmodules"), name
    for name in ("gitmod~5", "gi7eba~12", "gitmodules", ".gitmodulesx", "gi7eba~0"):
        assert not paths.aliases(name, ".gitmodules"), name
    assert paths.git_refusal(".gitmodules", 0o120000) and not paths.git_refusal(".gitmodules")


def test_gitattributes_git_fsck_would_reject_is_refused(scene: tuple[gitspace.Workspace, Outside]) -> None:
    ws, outside = scene
    with sealed(ws.root, outside):
        result = ws.call("create", {"path": "sub/.gitattributes", "file_text": "*" * 3000 + " text\n"})
        assert not result.ok and "fsck" in result.text
        assert not (ws.root / "sub").exists()
    assert ws.call("create", {"path": "sub/.gitattributes", "file_text": "*.md text\n"}).ok
    fsck(ws.root)


def test_cli_refusal_is_an_expected_error(scene: tuple[gitspace.Workspace, Outside]) -> None:
    ws, outside = scene
    with sealed(ws.root, outside):
        expected_failure(cli(ws.root, "call", "create", "--args",
                             '{"path": ".gitspace/.gitignore", "file_text": ""}'))
        expected_failure(cli(ws.root, "call", "append_entry", "--args",
                             '{"path": "constraints/x.jsonl", "text": "hi"}'))


PERSON = {".GIT/x": "a file a person made\n", "GIT~1/y": "y\n", ".git::$INDEX_ALLOCATION/z": "z\n",
          ".gitmodules": '[submodule "x"]\n\tpath = x\n\turl = -oProxyCommand=evil\n',
          "sub/.gitattributes": "*" * 3000 + " text\n"}


def test_snapshot_leaves_what_git_would_refuse_uncommitted(
        scene: tuple[gitspace.Workspace, Outside]) -> None:
    ws, outside = scene
    for rel, text in PERSON.items():
        (ws.root / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws.root / rel).write_text(text)
    (ws.root / "fine.txt").write_text("fine\n")
    result = ws.snapshot()
    assert result.ok and result.changed == ["fine.txt"], result.text
    for rel in PERSON:
        assert rel in result.text
        assert (ws.root / rel).read_text() == PERSON[rel]  # left alone, not committed
    fsck(ws.root)


def _hostile_commit(ws: gitspace.Workspace, rel: str, text: str) -> str:
    """A commit on top of HEAD adding ``rel``, made with git's plumbing the way an attacker
    would: ``mktree`` writes any name, even one git's own index refuses."""
    root = ws.root
    parts = rel.split("/")
    entry = f"100644 blob {blob(root, text.encode())}\t{parts[-1]}\n"
    for part in reversed(parts[:-1]):
        sub = git(root, "mktree", input=entry.encode()).strip()
        entry = f"040000 tree {sub}\t{part}\n"
    top = git(root, "mktree", input=git(root, "ls-tree", "HEAD").encode() + entry.encode())
    return commit(root, head(root), {}, "attack\n", tree_sha=top.strip())


def test_history_cannot_plant_session_files(scene: tuple[gitspace.Workspace, Outside],
                                            tmp_path: Path) -> None:
    """switch, restore and pull each refuse a tree holding .gitspace/, writing nothing."""
    ws, outside = scene
    root = ws.root
    (root / ".gitspace" / "sessions").mkdir(parents=True)
    (root / ".gitspace" / ".gitignore").write_text("*\n")
    planted = _hostile_commit(ws, ".gitspace/sessions/forged.json", '{"forged": true}\n')
    git(root, "branch", "hostile", planted)
    git(root, "tag", "-a", "-m", "planted", "gitspace/planted", planted)
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(root, "remote", "add", "origin", str(bare))
    git(root, "push", "-q", "origin", f"{planted}:refs/heads/main")
    tip = head(root)
    with sealed(root, outside):
        switched = ws.call("switch", {"name": "hostile"})
        assert not switched.ok and ".gitspace" in switched.text
        restored = ws.call("restore", {"name": "planted"})
        assert not restored.ok and ".gitspace" in restored.text
        with pytest.raises(gitspace.GitspaceError, match=r"\.gitspace"):
            sync.pull(ws, "origin")
        assert head(root) == tip and ws.branch() == "main"
        assert not (root / ".gitspace" / "sessions" / "forged.json").exists()


@pytest.mark.parametrize("rel", [".GIT/hooks/post-checkout", "GIT~1/hooks/x",
                                 ".git::$INDEX_ALLOCATION/hooks/x", ".g\u200cit/hooks/x"])
def test_history_cannot_write_into_a_git_alias(scene: tuple[gitspace.Workspace, Outside],
                                               rel: str) -> None:
    """The attacker's own objects already fail git fsck (hasDotgit); gitspace adds none and
    writes nothing from them."""
    ws, outside = scene
    git(ws.root, "branch", "hostile", _hostile_commit(ws, rel, "#!/bin/sh\necho pwned\n"))
    tip = head(ws.root)
    with sealed(ws.root, outside):
        result = ws.call("switch", {"name": "hostile"})
        assert not result.ok and result.error is not None and result.error.hint, result.text
        assert head(ws.root) == tip and ws.branch() == "main"
        assert not _first_part(ws.root, rel).exists()
        drop(ws.root, "refs/heads/hostile")  # (so fsck judges only what gitspace wrote)
