"""`gitspace run TASK --returns SCHEMA` as a script uses it: real processes, the real SDK, the fake
Messages API. stdout holds the value and nothing else."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import ops
from fake_anthropic import FakeAnthropic, text, tool_use

KEY = "sk-ant-test-secret-value"


def gs(cwd: Path, fake: FakeAnthropic, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("GITSPACE_AGENT",)}
    env.update(ANTHROPIC_API_KEY=KEY, ANTHROPIC_BASE_URL=fake.base_url)
    return subprocess.run([sys.executable, "-m", "gitspace", "-C", str(cwd), *args],
                          capture_output=True, text=True, env=env, timeout=120)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    made = subprocess.run([sys.executable, "-m", "gitspace", "init", str(root)],
                          capture_output=True, text=True)
    assert made.returncode == 0, made.stderr
    return root


def sessions(root: Path) -> list[dict[str, Any]]:
    from gitspace.agent.session import listing

    return [{"id": s.id, "status": s.status, "value": s.value} for s in listing(root)]


def test_stdout_is_the_value_alone_and_progress_goes_to_stderr(ws: Path,
                                                               fake_api: FakeAnthropic) -> None:
    fake_api.reply(tool_use("toolu_1", "create", {"path": "todo.md", "file_text": "- [ ] a\n"}),
                   stop_reason="tool_use")
    fake_api.reply(tool_use("toolu_2", "return", {"value": 1}), stop_reason="tool_use")
    run = gs(ws, fake_api, "run", "count the open todos", "--returns", '{"type":"integer"}',
             "--model", "fake-model")
    fake_api.done()
    assert run.returncode == 0, run.stderr
    assert run.stdout == "1\n"
    assert "Running model fake-model" in run.stderr and "create(" in run.stderr
    assert [op.tool for op in ops(ws)] == ["init", "create"]
    [saved] = sessions(ws)
    assert saved["status"] == "returned" and saved["value"] == 1

    shown = gs(ws, fake_api, "sessions", "show", saved["id"])
    assert shown.returncode == 0 and "Returned value:\n1" in shown.stdout
    as_json = json.loads(gs(ws, fake_api, "sessions", "show", saved["id"], "--json").stdout)
    assert as_json["value"] == 1 and as_json["returns"] == {"type": "integer"}
    assert as_json["status"] == "returned"
    listed = gs(ws, fake_api, "sessions").stdout
    assert "returned" in listed


def test_a_schema_file_and_an_object_value(ws: Path, tmp_path: Path,
                                           fake_api: FakeAnthropic) -> None:
    schema = tmp_path / "answer.json"
    schema.write_text(json.dumps({"type": "object", "properties": {
        "todos": {"type": "array", "items": {"type": "string"}}}, "required": ["todos"]}))
    fake_api.reply(tool_use("toolu_1", "return", {"todos": ["a", "b é"]}), stop_reason="tool_use")
    run = gs(ws, fake_api, "run", "list them", "--returns", str(schema))
    fake_api.done()
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout) == {"todos": ["a", "b é"]}
    assert run.stdout.count("\n") == 1


def test_a_text_answer_exits_4_with_nothing_on_stdout(ws: Path, fake_api: FakeAnthropic) -> None:
    fake_api.reply(text("Probably three."))
    run = gs(ws, fake_api, "run", "count", "--returns", '{"type":"integer"}')
    fake_api.done()
    assert run.returncode == 4 and run.stdout == ""
    assert "no_value" in run.stderr and "Probably three." in run.stderr
    [saved] = sessions(ws)
    assert f"gitspace run --resume {saved['id']}" in run.stderr

    # The next message continues it in the same mode: the value alone on stdout.
    fake_api.reply(tool_use("toolu_1", "return", {"value": 3}), stop_reason="tool_use")
    again = gs(ws, fake_api, "run", "--resume", saved["id"], "Call return with the value.")
    fake_api.done()
    assert again.returncode == 0, again.stderr
    assert again.stdout == "3\n"


def test_the_step_limit_keeps_exit_5_and_json_carries_the_value(ws: Path,
                                                                fake_api: FakeAnthropic) -> None:
    fake_api.reply(tool_use("toolu_1", "plan_show", {}), stop_reason="tool_use")
    run = gs(ws, fake_api, "run", "think", "--returns", '{"type":"integer"}', "--max-steps", "1")
    assert run.returncode == 5 and run.stdout == "" and "max_steps" in run.stderr

    fake_api.reply(tool_use("toolu_2", "return", {"value": 7}), stop_reason="tool_use")
    as_json = gs(ws, fake_api, "run", "again", "--returns", '{"type":"integer"}', "--json")
    fake_api.done()
    assert as_json.returncode == 0
    data = json.loads(as_json.stdout)
    assert data["status"] == "returned" and data["value"] == 7 and data["exit_code"] == 0


@pytest.mark.parametrize("given, says", [
    ("{not json", "the --returns text is not one"),
    ('{"type": "string", "pattern": "a"}', "unsupported keyword 'pattern'"),
    ("[1, 2]", "not list"),
])
def test_a_bad_schema_is_refused_before_anything_runs(ws: Path, fake_api: FakeAnthropic,
                                                      given: str, says: str) -> None:
    run = gs(ws, fake_api, "run", "count", "--returns", given)
    assert run.returncode == 1 and run.stdout == "", run.stderr
    assert says in run.stderr and "Traceback" not in run.stderr
    assert not (ws / ".gitspace" / "sessions").exists()
    assert fake_api.requests == []


def test_a_rejected_value_and_a_return_beside_a_write_through_the_cli(
        ws: Path, fake_api: FakeAnthropic) -> None:
    def rejected(body: dict[str, Any]) -> None:
        [result] = body["messages"][-1]["content"]
        assert result["is_error"] is True
        assert result["content"] == "value must be an integer, got a string."

    fake_api.reply(tool_use("toolu_1", "return", {"value": "two"}), stop_reason="tool_use")
    fake_api.reply(tool_use("toolu_2", "create", {"path": "n.md", "file_text": "2\n"}),
                   tool_use("toolu_3", "return", {"value": 2}), stop_reason="tool_use",
                   check=rejected)
    run = gs(ws, fake_api, "run", "count", "--returns", '{"type":"integer"}')
    fake_api.done()
    assert run.returncode == 0, run.stderr
    assert run.stdout == "2\n" and "return(value='two') -> error" in run.stderr
    assert [op.tool for op in ops(ws)] == ["init", "create"]
