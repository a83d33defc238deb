"""``gitspace ui`` shows a harness's fork beside its original (as it does for ``run --fork``): a
Claude Code session played through its hooks (tests/claude_session.py), forked with ``gitspace
fork``, then continued; in a workspace (two branches) and in a person's own checkout (one line,
two sessions)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from claude_session import Session, three_writes
from conftest import gitspace_cli, ops
from ui_server import fetch, serving
from user_repo import make_user_repo

import gitspace


def forked_and_continued(root: Path, home: Path, rev: str) -> tuple[Session, Session]:
    original = three_writes(root, home)
    second = next(op.op_id for op in ops(root, rev) if op.tool_use_id == "toolu_w2")
    out = gitspace_cli(root, "fork", second, "--json")
    assert out.returncode == 0, out.stderr
    fork = Session(root, home, session=json.loads(out.stdout)["session"])
    fork.last = None  # (its transcript is the fork's, written by gitspace: appended to here)
    fork.prompt("go on differently")
    fork.write("toolu_n1", "n.txt", "fork\n")
    fork.stop()
    return original, fork


@pytest.mark.parametrize("where", ["workspace", "in place"])
def test_the_fork_and_its_original_side_by_side(tmp_path: Path, hermetic: Path,
                                                where: str) -> None:
    if where == "workspace":
        root = tmp_path / "ws"
        gitspace.init(root).close()
        rev = "HEAD"
    else:
        root = make_user_repo(tmp_path / "repo")
        assert gitspace_cli(root, "hooks", "install", "claude-code").returncode == 0
        rev = "refs/gitspace/lines/main"
    original, fork = forked_and_continued(root, hermetic, rev)
    with serving(root) as base:
        status, body = fetch(f"{base}/fork/{fork.session}")
        assert status == 200, body
        assert "Two runs from one op" in body and f"claude --resume {fork.session}" in body
        columns = body.split('class="side"')[1:3]
        theirs, mine = columns
        assert "1 op(s) after the fork point" in theirs and "f3.txt" in theirs
        assert ("2 op(s)" if where == "in place" else "1 op(s)") in mine and "n.txt" in mine
        assert "Files: " in body and "f3.txt" in body.split("Files: ")[1]
        status, page = fetch(f"{base}/session/{fork.session}")
        assert status == 200 and "Forked from session" in page
        assert f'href="/fork/{fork.session}"' in page and "toolu_n1" in page
        status, page = fetch(f"{base}/session/{original.session}")
        assert status == 200 and "Forked as session" in page
        assert f'href="/fork/{fork.session}"' in page
        status, listed = fetch(f"{base}/sessions")
        assert fork.session in listed and original.session in listed


def test_a_fork_not_continued_yet_shows_its_conversation(tmp_path: Path, hermetic: Path) -> None:
    root = tmp_path / "ws"
    gitspace.init(root).close()
    three_writes(root, hermetic)
    second = next(op.op_id for op in ops(root) if op.tool_use_id == "toolu_w2")
    new = json.loads(gitspace_cli(root, "fork", second, "--json").stdout)["session"]
    with serving(root) as base:
        status, page = fetch(f"{base}/session/{new}")
        assert status == 200 and "forked, not continued" in page
        assert "toolu_w2" in page and "toolu_w3" not in page
        status, listed = fetch(f"{base}/sessions")
        assert f'href="/session/{new}"' in listed and f'href="/fork/{new}"' in listed
