"""``gitspace fork OP`` refused, each time with a sentence and a hint and nothing changed: bad
input (an op of no harness session, a session named instead of an op, an ambiguous op, a
transcript gone, edited or compacted past the call, a harness still running a call) and attacks
on the transcript, which is the person's private data (a link in its place or its folder's, a huge
one, a forged entry, a session id that is a path). Sessions are played through the real hook entry
point (tests/claude_session.py); the real binary's resume is tests/harness/test_claude_code_fork.py.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from claude_session import Session, three_writes
from conftest import git, gitspace_cli, ops
from hostile import fingerprint
from user_repo import fsck, make_user_repo, users_own

import gitspace
from gitspace.harness import forkcut


@pytest.fixture
def root(tmp_path: Path) -> Path:
    gitspace.init(tmp_path / "ws").close()
    return tmp_path / "ws"


def everything(root: Path, home: Path) -> dict[str, Any]:
    """What a refused fork must leave as it was: every ref, HEAD, the work tree and index, and
    every file under the harness's home folder (the transcripts)."""
    return {"refs": git(root, "for-each-ref", "--format=%(refname) %(objectname)"),
            "HEAD": (root / ".git" / "HEAD").read_bytes(),
            "index": (root / ".git" / "index").read_bytes(),
            "work tree": {k: v for k, v in fingerprint(root).items()
                          if not k.startswith(".git/") and k != ".git"},
            "home": fingerprint(home / ".claude") if (home / ".claude").exists() else None,
            "forks": (root / ".git" / "gitspace" / "forks").exists()}


def refused(root: Path, home: Path, op: str, says: str) -> str:
    before = everything(root, home)
    out = gitspace_cli(root, "fork", op)
    assert out.returncode == 1, out.stdout + out.stderr
    assert says in out.stderr and "Traceback" not in out.stderr, out.stderr
    assert "hint" in out.stderr.lower() or "\n" in out.stderr.strip(), out.stderr
    assert everything(root, home) == before
    return out.stderr


def op_of(root: Path, use_id: str, rev: str = "HEAD") -> str:
    return next(op.op_id for op in ops(root, rev) if op.tool_use_id == use_id)


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def rewrite(path: Path, entries: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(e) + "\n" for e in entries))


# -- bad input -------------------------------------------------------------------------------


def test_an_op_no_harness_session_made(root: Path, hermetic: Path) -> None:
    three_writes(root, hermetic)
    external = next(op for op in ops(root) if op.source == "init")
    refused(root, hermetic, external.op_id, "was not made by a call of a harness session")
    with gitspace.open(root, agent="bot", session="s1") as ws:
        made = ws.call("create", {"path": "x.txt", "file_text": "x"})
    says = refused(root, hermetic, str(made.op), "was not made by a call of a harness session")
    assert "gitspace run --fork" in says
    fsck(root)


def test_a_session_named_instead_of_an_op(root: Path, hermetic: Path) -> None:
    s = three_writes(root, hermetic)
    says = refused(root, hermetic, s.session, "names a session, not an op")
    assert f"gitspace log --session {s.session}" in says
    fsck(root)


def test_an_ambiguous_op(root: Path, hermetic: Path) -> None:
    three_writes(root, hermetic)
    start = op_of(root, "toolu_w1")[:4]  # (ULIDs made within days share their first characters)
    refused(root, hermetic, start, "could name")
    fsck(root)


def test_a_transcript_that_is_gone(root: Path, hermetic: Path) -> None:
    s = three_writes(root, hermetic)
    s.transcript.unlink()
    refused(root, hermetic, op_of(root, "toolu_w2"), "is gone")
    fsck(root)


def test_a_transcript_edited_so_the_call_is_gone(root: Path, hermetic: Path) -> None:
    s = three_writes(root, hermetic)
    rewrite(s.transcript, [e for e in lines(s.transcript) if "toolu_w2" not in json.dumps(e)])
    says = refused(root, hermetic, op_of(root, "toolu_w2"), "is not in the session's transcript")
    assert "edited" in says
    fsck(root)


def test_an_op_a_compaction_folded_away(root: Path, hermetic: Path) -> None:
    s = three_writes(root, hermetic)
    # What a compaction that drops the call leaves: a boundary and the summary, no call.
    kept = [e for e in lines(s.transcript) if "toolu_w1" not in json.dumps(e)]
    boundary = {"parentUuid": None, "logicalParentUuid": kept[-1].get("uuid"), "type": "system",
                "subtype": "compact_boundary", "uuid": "b" * 8 + "-0000-4000-8000-" + "0" * 12,
                "sessionId": s.session}
    rewrite(s.transcript, [*kept, boundary])
    refused(root, hermetic, op_of(root, "toolu_w1"), "a compaction folded it away")
    fsck(root)


def test_a_fork_while_the_harness_runs_a_call_here(root: Path, hermetic: Path) -> None:
    s = three_writes(root, hermetic)
    s.hook("PreToolUse", tool_name="Write", tool_use_id="toolu_w4",
           tool_input={"file_path": str(root / "f4.txt"), "content": "4"})
    says = refused(root, hermetic, op_of(root, "toolu_w2"), "is running a call here")
    assert "toolu_w4" in says
    fsck(root)


def test_an_op_the_session_made_before_the_transcript_says_it_finished(
        root: Path, hermetic: Path) -> None:
    s = three_writes(root, hermetic)
    rewrite(s.transcript, [e for e in lines(s.transcript)
                           if "tool_result" not in json.dumps(e) or "toolu_w2" not in json.dumps(e)])
    refused(root, hermetic, op_of(root, "toolu_w2"), "The result of call toolu_w2 is not in")
    fsck(root)


def test_your_edits_in_the_way_in_a_workspace(root: Path, hermetic: Path) -> None:
    three_writes(root, hermetic)
    (root / "f3.txt").write_text("the person's own words\n")
    refused(root, hermetic, op_of(root, "toolu_w2"), "has changes not recorded yet")
    fsck(root)


# -- in a person's own checkout ----------------------------------------------------------------


@pytest.fixture
def mine(tmp_path: Path) -> Path:
    user = make_user_repo(tmp_path / "repo")
    assert gitspace_cli(user, "hooks", "install", "claude-code").returncode == 0
    return user


LINE = "refs/gitspace/lines/main"


def test_your_unrecorded_edits_in_the_way_in_your_checkout(mine: Path, hermetic: Path) -> None:
    three_writes(mine, hermetic)
    (mine / "f3.txt").write_text("the person's own words\n")
    theirs = users_own(mine)
    says = refused(mine, hermetic, op_of(mine, "toolu_w2", LINE), "are not recorded yet")
    assert "f3.txt" in says and users_own(mine) == theirs
    fsck(mine)


def test_an_op_of_another_line_in_your_checkout(mine: Path, hermetic: Path) -> None:
    three_writes(mine, hermetic)
    git(mine, "stash", "-q", "-u")
    git(mine, "switch", "-q", "-c", "elsewhere")
    Session(mine, hermetic).prompt("start the line here")
    refused(mine, hermetic, op_of(mine, "toolu_w2", LINE), "is not on the line your checkout is on")
    fsck(mine)


def test_a_fork_at_the_last_op_changes_no_file_and_makes_no_op(mine: Path, hermetic: Path) -> None:
    three_writes(mine, hermetic)
    tip = git(mine, "rev-parse", LINE)
    out = json.loads(gitspace_cli(mine, "fork", op_of(mine, "toolu_w3", LINE), "--json").stdout)
    assert out["fork_op"] is None and out["files"] == [] and git(mine, "rev-parse", LINE) == tip
    fsck(mine)


# -- attacks on the transcript -----------------------------------------------------------------


def test_a_transcript_that_is_a_link(root: Path, hermetic: Path, tmp_path: Path) -> None:
    s = three_writes(root, hermetic)
    elsewhere = tmp_path / "elsewhere.jsonl"
    s.transcript.rename(elsewhere)
    s.transcript.symlink_to(elsewhere)
    refused(root, hermetic, op_of(root, "toolu_w2"), "is a symbolic link")
    assert elsewhere.read_text().count("toolu_w2") == 2
    fsck(root)


def test_a_transcript_folder_that_is_a_link(root: Path, hermetic: Path, tmp_path: Path) -> None:
    s = three_writes(root, hermetic)
    folder = s.transcript.parent
    moved = tmp_path / "moved"
    folder.rename(moved)
    folder.symlink_to(moved)
    refused(root, hermetic, op_of(root, "toolu_w2"), "not a folder")
    assert sorted(p.name for p in moved.iterdir()) == [s.transcript.name]
    fsck(root)


def test_a_transcript_that_is_a_fifo(root: Path, hermetic: Path) -> None:
    s = three_writes(root, hermetic)
    s.transcript.unlink()
    os.mkfifo(s.transcript)
    refused(root, hermetic, op_of(root, "toolu_w2"), "not a regular file")
    fsck(root)


def test_a_huge_transcript(root: Path, hermetic: Path) -> None:
    s = three_writes(root, hermetic)
    with s.transcript.open("r+b") as f:  # sparse: over the cap without writing it
        f.truncate(forkcut.READ_LIMIT + 1)
    refused(root, hermetic, op_of(root, "toolu_w2"), "over the")
    fsck(root)


def test_a_forged_entry_of_another_session(root: Path, hermetic: Path) -> None:
    s = three_writes(root, hermetic)
    entries = lines(s.transcript)
    entries.insert(3, {**entries[3], "sessionId": "0" * 8 + "-0000-4000-8000-" + "0" * 12})
    rewrite(s.transcript, entries)
    refused(root, hermetic, op_of(root, "toolu_w2"), "names session")
    fsck(root)


def test_a_forged_result_that_hangs_on_no_call(root: Path, hermetic: Path) -> None:
    s = three_writes(root, hermetic)
    entries = lines(s.transcript)
    result = next(n for n, e in enumerate(entries) if "tool_result" in json.dumps(e)
                  and "toolu_w2" in json.dumps(e))
    entries[result]["parentUuid"] = entries[2]["uuid"]  # the prompt: no call in between
    rewrite(s.transcript, entries)
    refused(root, hermetic, op_of(root, "toolu_w2"), "does not follow the call")
    fsck(root)


def test_a_forged_second_call_with_the_same_id(root: Path, hermetic: Path) -> None:
    s = three_writes(root, hermetic)
    entries = lines(s.transcript)
    call = next(e for e in entries if e["type"] == "assistant" and "toolu_w2" in json.dumps(e))
    entries.insert(1, {**call, "uuid": "f" * 8 + "-0000-4000-8000-" + "0" * 12})
    rewrite(s.transcript, entries)
    refused(root, hermetic, op_of(root, "toolu_w2"), "appears 2 times")
    fsck(root)


def test_a_line_that_is_not_json(root: Path, hermetic: Path) -> None:
    s = three_writes(root, hermetic)
    text = s.transcript.read_text().splitlines()
    text.insert(4, '{"type": "user", "mess')
    s.transcript.write_text("\n".join(text) + "\n")
    refused(root, hermetic, op_of(root, "toolu_w2"), "Line 5 of the transcript is not a JSON")
    fsck(root)


def test_a_session_id_with_path_characters(root: Path, hermetic: Path) -> None:
    s = Session(root, hermetic, session="a/../../../../tmp/x")
    s.transcript = hermetic / "t.jsonl"  # (its hook names some file; the id is the attack)
    s.prompt("go")
    s.write("toolu_w1", "f1.txt", "1\n")
    op = op_of(root, "toolu_w1")
    says = refused(root, hermetic, op, "is not a Claude Code session id")
    assert "a/../../../../tmp/x" in says
    fsck(root)


def test_a_link_for_the_folder_of_fork_records(root: Path, hermetic: Path, tmp_path: Path) -> None:
    three_writes(root, hermetic)
    (tmp_path / "elsewhere").mkdir()
    (root / ".git" / "gitspace" / "forks").symlink_to(tmp_path / "elsewhere")
    refused(root, hermetic, op_of(root, "toolu_w2"), "not a folder")
    assert not list((tmp_path / "elsewhere").iterdir())
    fsck(root)


def test_a_harness_gitspace_does_not_fork_is_named_with_why(root: Path, hermetic: Path) -> None:
    import io

    from gitspace.harness import hook

    common = {"session_id": "gemini-session-1", "transcript_path": str(hermetic / "chat.json"),
              "cwd": str(root), "timestamp": "2026-12-03T12:00:00Z"}
    call = {"tool_name": "write_file", "tool_input": {"file_path": str(root / "g.txt"),
                                                      "content": "g"}}
    for event in ("BeforeAgent", "BeforeTool", "AfterTool", "AfterAgent"):
        if event == "AfterTool":
            (root / "g.txt").write_text("g")
        extra = call if "Tool" in event else {"prompt": "go"}
        data = json.dumps({**common, **extra, "hook_event_name": event}).encode()
        assert hook.main(["hook", "gemini-cli"], stdin=io.BytesIO(data), stdout=io.StringIO(),
                         stderr=io.StringIO()) == 0
    op = next(op.op_id for op in ops(root) if op.agent == "gemini-cli")
    says = refused(root, hermetic, op, "gitspace cannot fork Gemini CLI sessions")
    assert "session files yet" in says and f"gitspace rewind {op}" in says
    fsck(root)
