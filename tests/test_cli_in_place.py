"""Every command a person runs in their own checkout recorded in place (``gitspace hooks install
claude-code``) works, or says plainly why not and what to do instead; ``status`` says what was
recorded and when; and nothing of theirs moves (HEAD, branches, the index byte for byte, the
stash, tags). Real processes, Claude Code's hook payloads as the binary sends them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import git, gitspace_cli
from user_repo import ONE, claude_code_checkout, fsck, turn, users_own


@pytest.fixture
def own(tmp_path: Path) -> Path:
    return claude_code_checkout(tmp_path)


def ops_on_line(root: Path) -> list[dict[str, object]]:
    return [e["op"] for e in json.loads(gitspace_cli(root, "log", "-n", "50", "--json").stdout)
            if e["op"]]


def test_undo_redo_and_undo_again(own: Path) -> None:
    before = users_own(own)
    undo = gitspace_cli(own, "undo")
    assert undo.returncode == 0 and not (own / "c.md").exists(), undo.stderr
    redo = gitspace_cli(own, "redo")
    assert redo.returncode == 0, redo.stderr
    assert re.search(r"Re-applied what op \w{8} took back in your files \(c\.md\) as op \w{8}",
                     redo.stdout), redo.stdout
    assert (own / "c.md").read_text() == "c\n"
    [newest, undone, *_] = ops_on_line(own)
    assert newest["tool"] == "redo" and newest["redo_of"] == undone["id"]
    twice = gitspace_cli(own, "redo")
    assert twice.returncode == 1 and "were re-applied already" in twice.stderr
    # The op the redo re-applied can be taken back again, and that undo redone in turn.
    again = gitspace_cli(own, "undo")
    assert again.returncode == 0 and not (own / "c.md").exists(), again.stderr
    assert gitspace_cli(own, "redo").returncode == 0 and (own / "c.md").exists()
    # A redo merges with the person's own edits since, or is refused changing nothing.
    assert gitspace_cli(own, "undo").returncode == 0
    (own / "c.md").write_text("mine now\n")
    refused = gitspace_cli(own, "redo")
    assert refused.returncode == 1 and "Nothing was changed" in refused.stderr
    assert (own / "c.md").read_text() == "mine now\n"
    after = users_own(own)
    for key in ("HEAD", "refs", "index", "index stat", "stash", "tags"):
        assert after[key] == before[key], key
    fsck(own)


def test_nothing_to_redo_after_the_agent_moved_on(own: Path) -> None:
    assert gitspace_cli(own, "undo").returncode == 0
    turn(own, ONE, "toolu_9", "d.md", "d\n", "Make d")  # the agent's next call
    refused = gitspace_cli(own, "redo")
    assert refused.returncode == 1
    assert "no undo came after the agent's last op (Write" in refused.stderr


@pytest.mark.parametrize("command, instead", [
    (["checkpoint", "keep"], "'gitspace rewind' lists them"),
    (["restore", "1"], "'gitspace rewind 1 --all'"),
    (["branch", "try"], "'git branch try'"),
    (["switch", "main"], "'git switch main'"),
    (["call", "create", "--args", '{"path": "x.md", "file_text": "x"}'], "attach --agent"),
])
def test_what_cannot_work_in_place_says_why_and_what_instead(own: Path, command: list[str],
                                                            instead: str) -> None:
    before = users_own(own)
    tip = git(own, "rev-parse", "refs/gitspace/lines/main")
    out = gitspace_cli(own, *command)
    assert out.returncode == 1, out.stdout
    assert "recorded in place" in out.stderr and "run 'gitspace" not in out.stderr, out.stderr
    assert "hooks install" not in out.stderr and instead in out.stderr, out.stderr
    assert users_own(own) == before and git(own, "rev-parse", "refs/gitspace/lines/main") == tip


def test_status_says_what_was_recorded_and_when(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    git(tmp_path, "init", "-q", "-b", "main", str(root))
    (root / "a.md").write_text("a\n")
    git(root, "add", "a.md")
    git(root, "commit", "-q", "-m", "mine")
    (root / "a.md").write_text("a, being edited\n")
    (root / "notes.txt").write_text("untracked\n")
    installed = gitspace_cli(root, "hooks", "install", "claude-code")
    assert "2 uncommitted or untracked file(s) recorded as they were (a.md, notes.txt)" in \
        installed.stdout, installed.stdout
    status = gitspace_cli(root, "status").stdout
    assert "Everything is recorded" not in status
    assert re.search(r"Last recorded, \d{4}-\d\d-\d\d \d\d:\d\d:\d\d: your checkout as 'gitspace "
                     r"hooks install' found it: main at \w{12}, with 2 uncommitted or untracked "
                     r"file\(s\) recorded as they were \(a\.md, notes\.txt\) \(op \w{8}\)\.",
                     status), status
    assert "Nothing changed since" in status
    (root / "b.md").write_text("b\n")
    status = gitspace_cli(root, "status").stdout
    assert "Since then, 1 change(s) not recorded yet" in status and "  b.md" in status
    data = json.loads(gitspace_cli(root, "status", "--json").stdout)
    assert data["last_op"]["op"]["tool"] == "follow" and data["pending"] == ["b.md"]
    turn(root, ONE, "toolu_1", "c.md", "c\n", "Make c")
    status = gitspace_cli(root, "status").stdout
    assert "claude-code's Write call, session s-3d7682ec: Write c.md" in status, status


def test_hooks_install_outside_a_repository_says_git_init_and_names_the_folder(
        tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    out = gitspace_cli(plain, "hooks", "install", "claude-code")
    assert out.returncode == 1
    assert f"{plain} is not inside a git repository" in out.stderr
    assert f"Run 'git init' in {plain}" in out.stderr and "'. " not in out.stderr
    assert not any(plain.iterdir())


def test_the_graph_counts_and_names_the_turn_marks(own: Path) -> None:
    from ui_server import fetch, serving

    with serving(own) as base:
        _, page = fetch(f"{base}/graph")
    assert "3 turn marks" in page and "0 checkpoints" not in page
    assert "⚑ s-3d7682ec turn 1" in page and "⚑ s-84836b81 turn 1" in page
