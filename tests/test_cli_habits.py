"""git's habits at the command line, one id and one name for what it shows, and filters that take
what gitspace prints.

- ``branch NAME`` creates without switching (``--switch`` does both), ``log --all``, ``diff``
  alone shows what is not recorded yet (and writes nothing), an empty diff says so, ``snapshot
  -m``;
- an op's short id is the same in ``call``, ``log``, ``show`` and JSON, and every form of it is
  taken back (the whole id, the short form, a start or an end, in any case);
- a person's ops and edits carry their git ``user.name`` everywhere, and replay still matches;
- ``log --session`` takes a start of the id, ``--source harness``, tool-use ids in ``log``,
  ``tools`` shows examples, ``record`` says what it recorded, ``verify`` tells the formats.

Real processes throughout (``gitspace_cli``), real git repositories.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import pytest
from conftest import git, gitspace_cli, head

import gitspace
from gitspace.replay.engine import replay
from gitspace.storage import ledger


def ok(root: Path, *args: str, input: str | None = None) -> str:
    out = gitspace_cli(root, *args, input=input)
    assert out.returncode == 0, (args, out.stdout, out.stderr)
    assert "Traceback" not in out.stderr
    return out.stdout


def as_json(root: Path, *args: str) -> object:
    return json.loads(ok(root, *args, "--json"))


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A workspace whose person is Ada Lovelace (their git user.name, as git would read it)."""
    root = tmp_path / "work"
    gitspace.init(root).close()
    git(root, "config", "user.name", "Ada Lovelace")
    git(root, "config", "user.email", "ada@example.com")
    return root


def create(root: Path, path: str, text: str) -> str:
    """A create call from the command line; the op's short id as the call printed it."""
    out = ok(root, "call", "create", "--args", json.dumps({"path": path, "file_text": text}))
    line = next(x for x in out.splitlines() if x.startswith("op "))
    short, full = line.split()[1], line.split()[2].strip("()")
    assert short == ledger.short_id(full) and len(short) == 8
    return short


# -- git's habits ------------------------------------------------------------------------------


def test_branch_creates_without_switching_and_log_keeps_what_was_just_done(work: Path) -> None:
    create(work, "a.md", "one\n")
    ok(work, "checkpoint", "start")
    create(work, "a.md", "two\n")
    ok(work, "undo")
    ok(work, "redo")
    ok(work, "restore", "start")
    said = ok(work, "branch", "try-other", "--from", "start")
    assert "try-other" in said and "checked out" not in said
    assert git(work, "branch", "--show-current").strip() == "main"
    tools = [e["op"]["tool"] for e in as_json(work, "log")]  # type: ignore[index, union-attr]
    assert tools[:4] == ["restore", "redo", "undo", "create"]

    ok(work, "branch", "side", "--switch")
    assert git(work, "branch", "--show-current").strip() == "side"
    create(work, "side.md", "side\n")
    ok(work, "switch", "main")
    here = [e["files"] for e in as_json(work, "log")]  # type: ignore[index, union-attr]
    everywhere = as_json(work, "log", "--all")
    assert ["side.md"] not in here
    assert ["side.md"] in [e["files"] for e in everywhere]  # type: ignore[index, union-attr]
    assert len(everywhere) == len(here) + 1  # type: ignore[arg-type]
    both = gitspace_cli(work, "log", "--all", "main")
    assert both.returncode == 2 and "not both" in both.stderr


def test_diff_alone_shows_what_is_not_recorded_and_writes_nothing(work: Path) -> None:
    create(work, "a.md", "one\n")
    create(work, "gone.md", "bye\n")
    clean = ok(work, "diff")
    assert clean == "No changes to record: the files are as the last op left them.\n"
    (work / "a.md").write_text("one\nmore\n")
    (work / "new.md").write_text("fresh\n")
    (work / "gone.md").unlink()
    (work / "big.bin").write_bytes(b"x" * (2 << 20))  # over the size cap: never recorded
    index, objects = (work / ".git/index").read_bytes(), sorted(os.listdir(work / ".git/objects"))
    out = gitspace_cli(work, "diff")
    assert out.returncode == 0, out.stderr
    assert "+more" in out.stdout and "new file mode" in out.stdout and "+fresh" in out.stdout
    assert "deleted file mode" in out.stdout and "-bye" in out.stdout
    assert "big.bin" not in out.stdout and "big.bin" in out.stderr  # said, not shown
    stat = ok(work, "diff", "--stat")
    assert "3 files changed" in stat
    assert (work / ".git/index").read_bytes() == index
    assert sorted(os.listdir(work / ".git/objects")) == objects  # not even a blob was written
    assert git(work, "status", "--porcelain", "--untracked-files=all").splitlines() == [
        " M a.md", " D gone.md", "?? big.bin", "?? new.md"]


def test_an_empty_diff_says_so(work: Path) -> None:
    create(work, "a.md", "one\n")
    ok(work, "checkpoint", "here")
    same = ok(work, "diff", "here")
    assert same.strip() == "No differences: here and HEAD have the same files."
    assert ok(work, "diff", "here", "main").startswith("No differences: here and main")


def test_snapshot_takes_a_message_as_git_commit_does(work: Path) -> None:
    (work / "notes.md").write_text("by hand\n")
    ok(work, "snapshot", "-m", "Notes from the meeting")
    [entry] = as_json(work, "log", "-n", "1")  # type: ignore[misc]
    assert entry["subject"] == "Notes from the meeting"
    assert entry["op"]["source"] == "external" and entry["files"] == ["notes.md"]
    assert "Notes from the meeting" in ok(work, "show", "HEAD")
    assert replay(gitspace.open(work), head(work)).ok


# -- one id ------------------------------------------------------------------------------------


def test_one_short_id_everywhere_and_every_form_taken_back(work: Path) -> None:
    short = create(work, "a.md", "one\n")
    create(work, "b.md", "two\n")
    [entry] = [e for e in as_json(work, "log") if e["op"]["short"] == short]  # type: ignore[index, union-attr]
    full = entry["op"]["id"]
    assert ledger.short_id(full) == short
    line = [x for x in ok(work, "log", "--format", "line").splitlines() if "a.md" in x]
    assert line[0].split()[2] == short  # time (two words), then the op
    assert ok(work, "log", "--format", "{op_short}", "-n", "1").strip() != short
    assert f"op {short} ({full})" in ok(work, "show", short)
    assert as_json(work, "call", "view", "--args", '{"path": "a.md"}')["op_short"] is None  # type: ignore[index]
    for form in (full, short, short.lower(), full[:-3], full[-5:], full[:-3].lower()):
        shown = as_json(work, "show", form)
        assert shown["op"]["id"] == full, form  # type: ignore[index]
    ok(work, "undo", "--op", short.lower())
    assert not (work / "a.md").exists()
    assert f"undoes {short}" in ok(work, "show", "HEAD")


# -- one name ----------------------------------------------------------------------------------


def test_a_persons_ops_and_edits_carry_their_git_name_everywhere(work: Path) -> None:
    create(work, "a.md", "one\n")
    (work / "b.md").write_text("typed\n")
    ok(work, "snapshot")
    ok(work, "checkpoint", "mine")
    log = [e for e in as_json(work, "log") if e["op"]["tool"] != "init"]  # type: ignore[index, union-attr]
    # The agent trailer is a token; the commit's author is the person as git knows them.
    assert {(e["agent"], e["author"]) for e in log} == {("Ada-Lovelace", "Ada Lovelace")}  # type: ignore[index, union-attr]
    assert {git(work, "log", "-1", "--format=%an <%ae>", e["commit"]).strip()  # type: ignore[index]
            for e in log} == {"Ada Lovelace <ada@example.com>"}
    assert [e["op"]["agent"] for e in log][:2] == ["Ada-Lovelace", None]  # type: ignore[index, union-attr]
    line = [x for x in ok(work, "log", "--format", "line").splitlines() if " init " not in x]
    assert [x.split()[3] for x in line] == ["Ada-Lovelace"] * 2
    assert "agent Ada-Lovelace" in ok(work, "show", "HEAD~1")
    assert as_json(work, "checkpoints")[0]["agent"] == "Ada-Lovelace"  # type: ignore[index]
    someone = gitspace_cli(work, "snapshot", "--author", "Zoë van Dijk")
    assert someone.returncode == 0
    (work / "c.md").write_text("hers\n")
    ok(work, "snapshot", "--author", "Zoë van Dijk")
    assert as_json(work, "log", "-n", "1")[0]["agent"] == "Zoe-van-Dijk"  # type: ignore[index]
    # Replay re-runs a person's ops as theirs: the same author, so every op matches.
    with gitspace.open(work) as ws:
        report = replay(ws, head(work))
    assert report.ok and report.reexecuted >= 1, report.divergence


def test_without_a_git_name_the_person_is_unknown_never_human(tmp_path: Path) -> None:
    root = tmp_path / "w"
    gitspace.init(root).close()
    create(root, "a.md", "one\n")
    (root / "b.md").write_text("typed\n")
    ok(root, "snapshot")
    names = {e["agent"] for e in as_json(root, "log")}  # type: ignore[union-attr, index]
    assert names == {"unknown"}


def test_an_agent_is_named_the_same_in_every_listing(work: Path) -> None:
    ok(work, "--agent", "bot", "call", "create", "--args", '{"path": "a.md", "file_text": "x\\n"}')
    [entry] = as_json(work, "log", "-n", "1")  # type: ignore[misc]
    assert entry["agent"] == entry["op"]["agent"] == entry["author"] == "bot"
    assert "agent bot" in ok(work, "show", "HEAD")


# -- filters take what gitspace prints ---------------------------------------------------------


def test_log_session_takes_a_start_or_an_end_of_the_id(work: Path) -> None:
    first, second = "1a2b3c4d-0000-4000-8000-000000000001", "1a2b9999-0000-4000-8000-000000000002"
    for session, path in ((first, "a.md"), (second, "b.md")):
        with gitspace.open(work, agent="claude-code", session=session) as ws:
            assert ws.call("create", {"path": path, "file_text": "x\n"}).ok
    for form in (first, first[:8], first[-12:]):
        found = as_json(work, "log", "--session", form)
        assert [e["files"] for e in found] == [["a.md"]], form  # type: ignore[index, union-attr]
    shared = gitspace_cli(work, "log", "--session", "1a2b")
    assert shared.returncode == 1 and "2 session ids" in shared.stderr
    assert first in shared.stderr and "more characters" in shared.stderr
    assert as_json(work, "log", "--session", "zzzz") == []
    nothing = gitspace_cli(work, "log", "--session", "zzzz", "--format", "line")
    assert nothing.stdout == "" and "No entries match" in nothing.stderr


def test_source_harness_tool_use_ids_and_record_saying_what_it_did(work: Path) -> None:
    (work / "a.md").write_text("x\n")
    call = {"tool": "edit", "args": {"path": "a.md"}, "agent": "aider", "session": "s-1",
            "tool_use_id": "call_42", "paths": ["a.md"]}
    said = ok(work, "record", input=json.dumps(call))
    [entry] = as_json(work, "log", "--source", "harness")  # type: ignore[misc]
    full = entry["op"]["id"]
    assert said.strip() == f"Recorded edit as op {ledger.short_id(full)} ({full})."
    assert entry["op"]["tool_use_id"] == "call_42"
    again = ok(work, "record", input=json.dumps(call))
    assert again.startswith("unchanged:")
    assert "tool_use_id: call_42" in ok(work, "log", "--format", "line", "-n", "1")
    assert ok(work, "log", "--format", "{tool_use_id} {session}", "-n", "1").strip() == "call_42 s-1"
    assert "tool_use_id call_42" in ok(work, "show", "HEAD")
    assert as_json(work, "log", "--source", "tool") == []


def test_tools_shows_each_tools_example_as_a_command_to_paste(work: Path) -> None:
    listing = ok(work, "tools")
    with gitspace.open(work) as ws:
        from gitspace.tools.registry import registry_of

        found = registry_of(ws).all(ws)
    examples = [shlex.split(x.strip()) for x in listing.splitlines()
                if x.strip().startswith("gitspace call ")]
    assert {argv[2] for argv in examples} == set(found)
    for argv in examples:
        assert argv[:2] == ["gitspace", "call"] and argv[3] == "--args"
        assert json.loads(argv[4]) == found[argv[2]].example, argv
    view = next(argv for argv in examples if argv[2] == "view")
    create(work, json.loads(view[4])["path"], "hello\n" * 50)
    assert "hello" in ok(work, *view[1:])  # the example, pasted, runs
