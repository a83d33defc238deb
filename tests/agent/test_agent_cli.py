"""`gitspace run`, `gitspace sessions` and `gitspace demo` as a user runs them: real processes."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO, SAMPLE, assert_clean, git, ops
from fake_anthropic import FakeAnthropic, text, tool_use

KEY = "sk-ant-test-secret-value"


def gs(cwd: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items()
            if k not in ("GITSPACE_AGENT", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL")}
    return subprocess.run([sys.executable, "-m", "gitspace", "-C", str(cwd), *args],
                          capture_output=True, text=True, env={**base, **(env or {})}, timeout=120)


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    shutil.copytree(SAMPLE, root)
    assert gs(tmp_path, "init", str(root)).returncode == 0
    return root


def session_id(output: str) -> str:
    found = re.search(r"--resume (\w+)", output) or re.search(r"in session (\w+)", output)
    assert found, output
    return found.group(1)


def test_without_a_key_or_policy_run_says_what_to_do(sample: Path) -> None:
    out = gs(sample, "run", "Escape the maze")
    assert out.returncode == 1
    assert "No ANTHROPIC_API_KEY is set" in out.stderr and "--policy maze" in out.stderr
    assert not (sample / ".gitspace").exists()
    # ... as its help and docs/agents.md say: offline takes --policy, never a guess at one.
    helped = " ".join(gs(sample, "run", "--help").stdout.split())
    assert "Claude (needs ANTHROPIC_API_KEY), or with --policy an offline scripted policy" in helped
    readme = " ".join((REPO / "docs" / "agents.md").read_text().split())
    assert "without `ANTHROPIC_API_KEY` and without `--policy`, `run` refuses" in readme


def test_run_needs_a_task_or_a_session(sample: Path) -> None:
    neither = gs(sample, "run")
    assert neither.returncode == 2 and "Give a TASK, or --resume SESSION" in neither.stderr
    for args in (["--resume", "01M8MXY7BAHW5R7V17BQJ4ZKPR"],
                 ["next message", "--resume", "01M8MXY7BAHW5R7V17BQJ4ZKPR"]):
        missing = gs(sample, "run", *args)
        assert missing.returncode == 1 and "no saved session" in missing.stderr


def test_a_finished_session_continues_with_a_next_message(sample: Path,
                                                          fake_api: FakeAnthropic) -> None:
    env = {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": fake_api.base_url}

    def whole_history(body: dict[str, Any]) -> None:
        said = [m["content"] if isinstance(m["content"], str) else
                " ".join(b.get("text", "") for b in m["content"] if isinstance(b, dict))
                for m in body["messages"]]
        assert said[0] == "Make a plan" and "Planned." in said and said[-1] == "Add a second step"
        assert [m["role"] for m in body["messages"]][-2:] == ["assistant", "user"]

    fake_api.reply(tool_use("toolu_1", "plan_add", {"step": "look around"}), stop_reason="tool_use")
    fake_api.reply(text("Planned."))
    first = gs(sample, "--agent", "claude", "run", "Make a plan", "--model", "claude-test",
               "--json", env=env)
    assert first.returncode == 0, first.stderr
    sid = json.loads(first.stdout)["session"]
    again = gs(sample, "--agent", "claude", "run", "--resume", sid, "--model", "claude-test", env=env)
    assert again.returncode == 0 and "already finished" in again.stdout

    fake_api.reply(tool_use("toolu_2", "plan_add", {"step": "then act"}), stop_reason="tool_use",
                   check=whole_history)
    fake_api.reply(text("Two steps now."))
    second = gs(sample, "--agent", "claude", "run", "Add a second step", "--resume", sid,
                "--model", "claude-test", "--json", env=env)
    fake_api.done()
    assert second.returncode == 0, second.stderr
    result = json.loads(second.stdout)
    assert result["status"] == "done" and result["session"] == sid
    plan_ops = [op for op in ops(sample) if op.tool == "plan_add"]
    assert [op.tool_use_id for op in plan_ops] == ["toolu_1", "toolu_2"]
    assert {op.session for op in plan_ops} == {sid}
    listed = json.loads(gs(sample, "sessions", "--json").stdout)
    assert [(s["session"], s["status"]) for s in listed] == [(sid, "done")]
    empty = gs(sample, "run", " ", "--resume", sid, "--model", "claude-test", env=env)
    assert empty.returncode == 1 and "The next message is empty" in empty.stderr
    assert_clean(sample)


def test_a_policy_run_stops_at_the_limit_and_resumes(sample: Path) -> None:
    first = gs(sample, "--agent", "maze-runner", "run", "Escape the maze", "--policy", "maze",
               "--max-steps", "4")
    assert first.returncode == 5, first.stderr  # stopped early, resumable
    assert "scripted, not a model" in first.stdout and "Stopped after 4 model calls" in first.stdout
    assert_clean(sample)
    sid = session_id(first.stdout)
    listed = json.loads(gs(sample, "sessions", "--json").stdout)
    assert [(s["session"], s["status"], s["scripted"]) for s in listed] == [(sid, "max_steps", True)]

    second = gs(sample, "--agent", "maze-runner", "run", "--resume", sid, "--json")
    assert second.returncode == 0, second.stderr
    result = json.loads(second.stdout)
    assert result["status"] == "done" and result["session"] == sid
    assert sum(1 for op in ops(sample) if op.tool == "move") == 20
    assert {op.session for op in ops(sample) if op.tool == "move"} == {sid}
    assert ".gitspace" not in git(sample, "ls-files")
    assert_clean(sample)


def test_with_a_key_run_uses_the_model_and_never_prints_the_key(sample: Path,
                                                                fake_api: FakeAnthropic) -> None:
    def authorised(body: dict[str, object]) -> None:
        assert fake_api.headers[-1].get("Authorization") == f"Bearer {KEY}"
        assert body["model"] == "claude-test"

    fake_api.reply(tool_use("toolu_1", "plan_add", {"step": "look around"}), stop_reason="tool_use",
                   check=authorised)
    fake_api.reply(text("Planned."))
    out = gs(sample, "--agent", "claude", "run", "Make a plan", "--model", "claude-test",
             "--commit-transcript",
             env={"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": fake_api.base_url})
    fake_api.done()
    assert out.returncode == 0, out.stderr
    assert "model claude-test" in out.stdout and "Planned." in out.stdout
    assert KEY not in out.stdout + out.stderr
    tools = [op.tool for op in ops(sample)]
    assert tools[-2:] == ["plan_add", "transcript"]
    [transcript] = (sample / "transcripts").glob("*.json")
    assert KEY not in transcript.read_text()
    assert json.loads(transcript.read_text())["messages"][0]["content"] == "Make a plan"


def test_an_api_error_exits_5_after_the_sdks_retries(sample: Path, fake_api: FakeAnthropic) -> None:
    for _ in range(3):  # the first call and the SDK's two retries
        fake_api.error(529, "overloaded_error", "Overloaded")
    out = gs(sample, "run", "Q", "--model", "m",
             env={"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": fake_api.base_url})
    assert out.returncode == 5  # the run stopped before the model finished: resumable
    fake_api.done()
    assert "529 (overloaded_error): Overloaded" in out.stdout and KEY not in out.stdout + out.stderr


def test_the_demo_runs_with_a_model_when_asked(tmp_path: Path, fake_api: FakeAnthropic) -> None:
    def maze_task(body: dict[str, object]) -> None:
        assert "Escape the maze" in str(body["messages"])

    fake_api.reply(tool_use("toolu_1", "look", {}), stop_reason="tool_use", check=maze_task)
    fake_api.reply(text("I looked once and stopped."))
    fake_api.reply(text("I will not summarise today."),
                   check=lambda body: "Summarise journal" in str(body["messages"]) or pytest.fail())
    out = gs(tmp_path, "demo", "--dir", str(tmp_path / "d"), "--model", "claude-test",
             env={"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": fake_api.base_url})
    fake_api.done()
    assert out.returncode == 0, out.stderr
    assert "Model: claude-test" in out.stdout and "scripted" not in out.stdout
    assert "maze (git log, tags): 0 moves" in out.stdout and KEY not in out.stdout


def test_demo_with_a_model_but_no_key_is_refused(tmp_path: Path) -> None:
    out = gs(tmp_path, "demo", "--dir", str(tmp_path / "d"), "--model", "claude-test")
    assert out.returncode == 1 and "needs ANTHROPIC_API_KEY" in out.stderr
    assert not (tmp_path / "d").exists()


def test_resume_keeps_the_player_it_started_with(sample: Path) -> None:
    first = gs(sample, "run", "Escape the maze", "--policy", "maze", "--max-steps", "2")
    sid = session_id(first.stdout)
    other = gs(sample, "run", "--resume", sid, "--policy", "journal")
    assert other.returncode == 1
    assert f"Session {sid} was started with policy maze, not policy journal" in other.stderr
    model = gs(sample, "run", "--resume", sid, "--model", "claude-test")
    assert model.returncode == 1 and "not model claude-test" in model.stderr


def test_run_is_refused_up_front_in_a_users_own_repository(tmp_path: Path) -> None:
    repo = tmp_path / "mine"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "a.txt").write_text("mine\n")
    git(repo, "add", "a.txt")
    git(repo, "commit", "-q", "-m", "my own commit")
    before = git(repo, "rev-parse", "HEAD"), (repo / ".git" / "index").read_bytes()
    out = gs(repo, "run", "Escape the maze", "--policy", "maze")
    assert out.returncode == 1 and "attach" in out.stderr
    assert "Running" not in out.stdout and not (repo / ".gitspace").exists()
    assert (git(repo, "rev-parse", "HEAD"), (repo / ".git" / "index").read_bytes()) == before


def test_a_run_that_stops_before_its_first_model_call_never_imports_the_sdk(
        sample: Path, fake_api: FakeAnthropic) -> None:
    # The SDK takes seconds to import: an empty next message, or a finished session resumed
    # without one, is told so at once.
    env = {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": fake_api.base_url}
    fake_api.reply(text("Done."))
    sid = json.loads(gs(sample, "--agent", "claude", "run", "Say done", "--model", "claude-test",
                        "--json", env=env).stdout)["session"]
    fake_api.done()
    probe = ("import runpy, sys\n"
             "sys.argv = ['gitspace', *sys.argv[1:]]\n"
             "try:\n    runpy.run_module('gitspace', run_name='__main__')\n"
             "finally:\n    print('sdk imported' if 'anthropic' in sys.modules else 'no sdk',"
             " file=sys.stderr)\n")
    base = {k: v for k, v in os.environ.items() if k != "GITSPACE_AGENT"}
    for args in (["run", " ", "--resume", sid], ["run", "--resume", sid]):
        proc = subprocess.run([sys.executable, "-c", probe, "-C", str(sample), *args],
                              capture_output=True, text=True, env={**base, **env}, timeout=120)
        assert proc.stderr.strip().endswith("no sdk"), proc.stderr
    assert not fake_api.requests[1:], "a model call was made"
