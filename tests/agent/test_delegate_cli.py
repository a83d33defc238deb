"""The tree of calls as people see it: ``gitspace run`` delegating through the real SDK and the
fake Messages API, then ``log``, ``sessions`` and ``sessions show``, all real processes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from fake_anthropic import FakeAnthropic, text, tool_use

from gitspace.storage import ids as shortids

KEY = "sk-ant-test-secret-value"


def gs(cwd: Path, fake: FakeAnthropic, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "GITSPACE_AGENT"}
    env.update(ANTHROPIC_API_KEY=KEY, ANTHROPIC_BASE_URL=fake.base_url)
    return subprocess.run([sys.executable, "-m", "gitspace", "-C", str(cwd), *args],
                          capture_output=True, text=True, env=env, timeout=120)


@pytest.fixture
def nested(tmp_path: Path, fake_api: FakeAnthropic) -> tuple[Path, dict[str, str]]:
    """A run that delegated twice, one call inside the other; its session ids by role."""
    root = tmp_path / "ws"
    made = subprocess.run([sys.executable, "-m", "gitspace", "init", str(root)],
                          capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    fake_api.reply(tool_use("toolu_p0", "create", {"path": "plan.md", "file_text": "p\n"}),
                   tool_use("toolu_p1", "delegate", {"task": "Write the chapter."}),
                   stop_reason="tool_use")
    fake_api.reply(tool_use("toolu_c1", "create", {"path": "chapter.md", "file_text": "c\n"}),
                   tool_use("toolu_c2", "delegate", {"task": "Write a footnote.",
                                                     "returns": {"type": "integer"}}),
                   stop_reason="tool_use")
    fake_api.reply(tool_use("toolu_g1", "create", {"path": "note.md", "file_text": "n\n"}),
                   stop_reason="tool_use")
    fake_api.reply(tool_use("toolu_g2", "return", {"value": 1}), stop_reason="tool_use")
    fake_api.reply(tool_use("toolu_c3", "return", {"value": {"footnotes": 1}}),
                   stop_reason="tool_use")
    fake_api.reply(tool_use("toolu_p2", "create", {"path": "done.md", "file_text": "d\n"}),
                   stop_reason="tool_use")
    fake_api.reply(text("Book written."))
    run = gs(root, fake_api, "--agent", "author", "run", "Write the book.", "--model", "m")
    fake_api.done()
    assert run.returncode == 0, run.stdout + run.stderr
    # Progress shows the children's calls under the call that started them.
    assert "delegate -> session" in run.stdout
    indent = {line.strip().split(" ", 2)[1].split("(")[0] + line.split("path=")[-1][:10]:
              len(line) - len(line.lstrip()) for line in run.stdout.splitlines() if "path=" in line}
    assert indent["create'plan.md')"] + 8 == indent["create'note.md')"], run.stdout
    assert indent["create'plan.md')"] + 4 == indent["create'chapter.m"], run.stdout
    rows = json.loads(gs(root, fake_api, "sessions", "--json").stdout)
    roles = {}
    for row in rows:
        roles[{0: "top", 1: "child", 2: "grandchild"}[row["depth"]]] = row["session"]
    return root, roles


def test_sessions_json_names_each_parent(nested: tuple[Path, dict[str, str]],
                                         fake_api: FakeAnthropic) -> None:
    root, ids = nested
    rows = {r["session"]: r for r in json.loads(gs(root, fake_api, "sessions", "--json").stdout)}
    assert rows[ids["top"]]["parent_session"] is None
    assert rows[ids["child"]]["parent_session"] == ids["top"]
    assert rows[ids["child"]]["parent_tool_use_id"] == "toolu_p1"
    assert rows[ids["grandchild"]]["parent_session"] == ids["child"]
    assert rows[ids["grandchild"]]["parent_tool_use_id"] == "toolu_c2"
    assert [r["status"] for r in rows.values()] == ["done", "returned", "returned"]


def test_sessions_lists_the_tree(nested: tuple[Path, dict[str, str]],
                                 fake_api: FakeAnthropic) -> None:
    root, ids = nested
    listed = gs(root, fake_api, "sessions").stdout
    short = {k: shortids.session(v) for k, v in ids.items()}  # (listings show the short form)
    top, child, grand = (next(line for line in listed.splitlines() if short[k] in line)
                         for k in ("top", "child", "grandchild"))
    assert top.lstrip().startswith(short["top"])
    assert f"↳ {short['child']}" in child and f"  ↳ {short['grandchild']}" in grand
    assert listed.index(short["top"]) < listed.index(short["child"]) < \
        listed.index(short["grandchild"])


def test_sessions_show_names_the_caller_and_the_callees(nested: tuple[Path, dict[str, str]],
                                                        fake_api: FakeAnthropic) -> None:
    root, ids = nested
    shown = gs(root, fake_api, "sessions", "show", ids["child"]).stdout
    assert f"called  by session {shortids.session(ids['top'])} (its delegate call toolu_p1), 1 " \
           "level(s) deep" in shown
    assert "Delegated to 1 session(s):" in shown and \
        f"{shortids.session(ids['grandchild'])}  1  Write a footnote." in shown
    assert 'Returned value:\n{\n  "footnotes": 1\n}' in shown
    data = json.loads(gs(root, fake_api, "sessions", "show", ids["top"], "--json").stdout)
    assert data["children"] == [ids["child"]] and data["depth"] == 0


def tool_cells(log: list[str]) -> list[str]:
    """The tool cell of each ``log --format line`` line, oldest first (its indentation kept)."""
    cells = []
    for line in log[::-1]:
        rest = line.split("  ", 3)[3]  # after time, op and agent
        found = re.match(r"(?: *↳ )?\S+", rest)
        assert found, line
        cells.append(found.group(0))
    return cells


def test_log_shows_each_op_under_the_call_that_made_it(nested: tuple[Path, dict[str, str]],
                                                       fake_api: FakeAnthropic) -> None:
    root, ids = nested
    log = gs(root, fake_api, "log", "--format", "line").stdout.splitlines()
    tools = tool_cells(log)
    assert tools == ["init", "create", "↳ create", "  ↳ create", "create"]
    template = gs(root, fake_api, "log", "--format", "{depth} {parent} {session}").stdout
    assert template.splitlines()[::-1][1:] == [
        f"0 - {ids['top']}", f"1 {ids['top']} {ids['child']}",
        f"2 {ids['child']} {ids['grandchild']}", f"0 - {ids['top']}"]
    as_json = json.loads(gs(root, fake_api, "log", "--json").stdout)
    deepest = as_json[1]["op"]
    assert deepest["parent_session"] == ids["child"] and deepest["parent_tool_use_id"] == "toolu_c2"
    # Without the session files (a clone), the trailers alone still give the tree.
    clone = root.parent / "clone"
    subprocess.run(["git", "clone", "-q", str(root), str(clone)], check=True)
    cloned = gs(clone, fake_api, "log", "--format", "line").stdout.splitlines()
    assert tool_cells(cloned) == tools


def test_a_child_cannot_be_resumed_on_its_own(nested: tuple[Path, dict[str, str]],
                                              fake_api: FakeAnthropic) -> None:
    root, ids = nested
    refused = gs(root, fake_api, "run", "--resume", ids["child"], "more")
    assert refused.returncode == 1 and "runs only as that call" in refused.stderr
    assert f"gitspace run --resume {ids['top']}" in refused.stderr
