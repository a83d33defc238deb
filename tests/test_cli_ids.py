"""One short form per kind of id (``gitspace/storage/ids.py``), the same in the CLI, the JSON and
the web view, and every form of an id taken back wherever one is asked for; a session named
where an op is expected says it is a session. Real processes on real repositories: a person's
own checkout with two Claude Code sessions recorded in place (hook payloads as the binary sends
them), and a workspace where gitspace's own agent ran.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from conftest import SAMPLE, gitspace_cli
from ui_server import fetch, serving
from user_repo import ONE, TWO, claude_code_checkout

from gitspace.agent.session import listing
from gitspace.storage import ids


@pytest.fixture
def own(tmp_path: Path) -> Path:
    return claude_code_checkout(tmp_path)


def test_a_session_has_one_form_in_the_cli_the_json_and_the_web_view(own: Path) -> None:
    entries = json.loads(gitspace_cli(own, "log", "--json").stdout)
    shorts = {e["op"]["session"]: e["op"]["session_short"] for e in entries
              if e["op"] and e["op"]["session"]}
    assert shorts == {ONE: "s-3d7682ec", TWO: "s-84836b81"}
    listed = gitspace_cli(own, "sessions").stdout
    assert "s-3d7682ec" in listed and "s-84836b81" in listed and ONE not in listed
    assert "Write the plan" in listed and "with detail" not in listed  # the prompt's first line
    rows = json.loads(gitspace_cli(own, "sessions", "--json").stdout)
    assert {(r["session_short"], r["task"]) for r in rows} == {
        ("s-3d7682ec", "Write the plan"), ("s-84836b81", "Make c")}
    write = next(e for e in entries if e["op"] and e["op"]["tool_use_id"] == "toolu_1")
    shown = gitspace_cli(own, "show", write["op"]["short"]).stdout
    assert f"session s-3d7682ec ({ONE})" in shown
    with serving(own) as base:
        _, sessions_page = fetch(f"{base}/sessions")
        _, timeline_page = fetch(f"{base}/")
        _, op_page = fetch(f"{base}/op/{write['commit']}")
    for page in (sessions_page, timeline_page, op_page):
        assert "s-3d7682ec" in page and ">55556666<" not in page and "55556666</a>" not in page
    assert "Write the plan" in sessions_page and "the harness&#x27;s own transcript" not in \
        sessions_page and "the harness's own transcript" not in sessions_page


def test_a_session_named_where_an_op_is_expected_says_so(own: Path) -> None:
    for form in ("s-3d7682ec", "3d7682ec", ONE):
        for command in (["show", form], ["diff", form], ["undo", "--op", form],
                        ["log", form]):
            out = gitspace_cli(own, *command)
            assert out.returncode == 1, (command, out.stdout)
            assert f"is session s-3d7682ec ({ONE}), not an op" in out.stderr, (command, out.stderr)
            assert "gitspace log --session s-3d7682ec" in out.stderr


@pytest.mark.parametrize("form", ["s-3d7682ec", "3d7682ec", ONE, "claude-code-3d7682ec", "3d76"])
def test_log_session_takes_every_form(own: Path, form: str) -> None:
    out = gitspace_cli(own, "log", "--session", form, "--format", "{tool_use_id}")
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["toolu_2", "toolu_1"]


def test_failed_calls_show_as_failed(own: Path) -> None:
    entries = json.loads(gitspace_cli(own, "log", "--json").stdout)
    failed = {e["op"]["tool_use_id"]: e["op"]["failed"] for e in entries if e["op"]}
    assert failed["toolu_2"] == "Exit code 1" and failed["toolu_1"] is None
    bash = next(e for e in entries if e["op"] and e["op"]["tool_use_id"] == "toolu_2")
    line = gitspace_cli(own, "log", "--format", "line").stdout
    assert re.search(r"Bash .*failed: Exit code 1", line), line
    assert "failed" not in next(x for x in line.splitlines() if "toolu_1" in x)
    shown = gitspace_cli(own, "show", bash["op"]["short"]).stdout
    assert "failed: Exit code 1" in shown
    with serving(own) as base:
        _, timeline_page = fetch(f"{base}/")
        _, op_page = fetch(f"{base}/op/{bash['commit']}")
    assert timeline_page.count('class="badge b-failed"') == 1
    assert 'class="badge b-failed"' in op_page and "Exit code 1" in op_page


def test_turns_are_named_by_session_and_number(own: Path) -> None:
    listed = gitspace_cli(own, "rewind").stdout
    assert re.findall(r"s-\w+ turn \d", listed) == [
        "s-3d7682ec turn 1", "s-3d7682ec turn 2", "s-84836b81 turn 1"]
    # A bare number is the latest session's, said as such; one it lacks names who has it.
    refused = gitspace_cli(own, "rewind", "2")
    assert refused.returncode == 1
    assert "Session s-84836b81 (the latest session) has no turn 2" in refused.stderr
    assert "gitspace rewind 2 --session s-3d7682ec" in refused.stderr
    # --session is honoured, in any form of the id; the answer names the session and turn.
    out = gitspace_cli(own, "rewind", "1", "--session", "s-3d7682ec")
    assert out.returncode == 0, out.stderr
    assert "to s-3d7682ec turn 1" in out.stdout, out.stdout
    assert not (own / "b.md").exists() and not (own / "c.md").exists()
    assert (own / "plan.md").read_text() == "# plan\n"
    again = gitspace_cli(own, "rewind", "1", "--session", "3d7682ec")
    assert "unchanged: your files already are as s-3d7682ec turn 1 left them." in again.stdout
    latest = gitspace_cli(own, "rewind", "1")
    assert "Turn 1 of the latest session, s-84836b81" in latest.stderr
    assert "s-84836b81 turn 1" in latest.stdout


def test_gitspace_sessions_look_unlike_ops_and_every_form_is_taken(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    shutil.copytree(SAMPLE, root)
    assert gitspace_cli(tmp_path, "init", str(root)).returncode == 0
    ran = gitspace_cli(root, "run", "Escape the maze", "--policy", "maze", "--max-steps", "3")
    assert ran.returncode == 5
    [session] = listing(root)
    short = ids.session(session.id)
    assert f"in session {short})" in ran.stdout
    assert not re.search(r"-> op [0-9A-Z]{26}", ran.stdout), ran.stdout  # ops by their short form
    assert re.search(r"-> op [0-9A-Z]{8}:", ran.stdout), ran.stdout
    listed = gitspace_cli(root, "sessions").stdout
    assert short in listed and session.id not in listed
    op = json.loads(gitspace_cli(root, "log", "-n", "1", "--json").stdout)[0]["op"]
    assert op["session_short"] == short != op["short"] and short.startswith("s-")
    refused = gitspace_cli(root, "show", session.id[-8:])
    assert refused.returncode == 1 and f"is session {short}" in refused.stderr
    for form in (short, session.id[-8:], session.id):
        shown = gitspace_cli(root, "sessions", "show", form)
        assert shown.returncode == 0 and f"Session {short} ({session.id})" in shown.stdout
    resumed = gitspace_cli(root, "run", "--resume", short)
    assert resumed.returncode == 0, resumed.stderr
    assert listing(root)[0].status == "done"

