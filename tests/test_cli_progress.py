"""Progress of long jobs (``run``, ``replay``, ``verify``, a long script through ``call``, ``gc``,
``sync --watch``) as a person sees it: on a terminal (a real pty for stderr) a bar with its
total and the time left; into a pipe, plain lines now and then; always on stderr, so stdout
stays what ``--json`` and ``--returns`` print, byte for byte parseable.
"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SAMPLE, gitspace_cli

import gitspace
from gitspace.cli import progressview as progressbar

OPS = 150


@pytest.fixture(scope="module")
def many(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workspace of OPS ops (more than a bar waits for)."""
    root = tmp_path_factory.mktemp("progress") / "ws"
    with gitspace.init(root, agent="writer") as ws:
        for i in range(OPS):
            assert ws.call("create", {"path": f"notes/{i % 10}.md", "file_text": f"{i}\n"}).ok
    return root


def on_a_terminal(cwd: Path, *argv: str) -> tuple[str, str, int]:
    """(stdout, what the terminal showed, exit code) of ``gitspace ARGV`` with stderr a pty
    (stdout a pipe, as when a person captures a value)."""
    main, secondary = pty_pair()
    base = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "GITSPACE_AGENT")}
    proc = subprocess.Popen([sys.executable, "-m", "gitspace", "-C", str(cwd), *argv],
                            stdin=secondary, stdout=subprocess.PIPE, stderr=secondary,
                            env={**base, "COLUMNS": "120", "TERM": "xterm-256color"})
    os.close(secondary)
    chunks = []
    while True:
        ready, _, _ = select.select([main], [], [], 60)
        if not ready:
            break
        try:
            data = os.read(main, 65536)
        except OSError:  # the child closed its side
            break
        if not data:
            break
        chunks.append(data)
    assert proc.stdout is not None
    out = proc.stdout.read().decode()
    proc.stdout.close()
    code = proc.wait(timeout=60)
    os.close(main)
    return out, b"".join(chunks).decode(errors="replace"), code


def pty_pair() -> tuple[int, int]:
    import pty

    return pty.openpty()


def test_replay_on_a_terminal_draws_a_bar_with_its_total_and_time_left(many: Path) -> None:
    out, shown, code = on_a_terminal(many, "replay", "--json")
    assert code == 0, shown
    assert json.loads(out)["reexecuted"] == OPS  # stdout: the JSON alone
    assert "\x1b[" not in out
    assert "commits replayed" in shown and f"{OPS}/{OPS}" in shown and "left" in shown
    assert re.search(r"\d+/150", shown) and "━" in shown  # a bar, moving
    assert "gitspace: commits replayed:" not in shown  # (the plain lines are for pipes)


def test_replay_into_a_pipe_prints_plain_lines_on_stderr(many: Path) -> None:
    done = gitspace_cli(many, "replay", "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["reexecuted"] == OPS
    lines = [line for line in done.stderr.splitlines() if "commits replayed" in line]
    assert lines[-1] == f"gitspace: commits replayed: {OPS} of {OPS} (100%)"
    assert f"gitspace: commits replayed: 15 of {OPS} (10%), about" in lines[1]
    assert len(lines) == 11 and "\x1b[" not in done.stderr  # each tenth once, no bar codes
    verified = gitspace_cli(many, "verify")
    assert verified.returncode == 0 and "Every op parses." in verified.stdout
    assert f"gitspace: commits verified: {OPS + 1} of {OPS + 1} (100%)" in verified.stderr
    assert "commits verified" not in verified.stdout


def test_a_journal_run_shows_how_much_of_the_log_it_covered(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    shutil.copytree(SAMPLE, root)
    assert gitspace_cli(tmp_path, "init", str(root)).returncode == 0
    piped = gitspace_cli(root, "run", "Summarise journal/worklog.jsonl", "--policy", "journal",
                         "--json")
    assert piped.returncode == 0, piped.stderr
    assert json.loads(piped.stdout)["status"] == "done"  # stdout: the JSON alone
    assert "gitspace: log entries summarised: 2,048 of 2,048 (100%)" in piped.stderr
    assert re.search(r"gitspace: log entries summarised: [\d,]+ of 2,048 \(\d0%\), about "
                     r"\d+ (s|min) left", piped.stderr), piped.stderr
    # On a terminal: the bar, and the per-call lines above it; stdout still the JSON alone.
    shutil.rmtree(root)
    shutil.copytree(SAMPLE, root)
    assert gitspace_cli(tmp_path, "init", str(root)).returncode == 0
    out, shown, code = on_a_terminal(root, "run", "Summarise journal/worklog.jsonl",
                                     "--policy", "journal", "--json")
    assert code == 0, shown
    assert json.loads(out)["status"] == "done" and "\x1b[" not in out
    assert "log entries summarised" in shown and "2048/2048" in shown
    assert "model calls" in shown


def test_a_long_script_reports_through_call(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    shutil.copytree(SAMPLE, root)
    assert gitspace_cli(tmp_path, "init", str(root)).returncode == 0
    done = gitspace_cli(root, "call", "split_worklog", "--json", "--args",
                        '{"path": "journal/worklog.jsonl"}')
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["ok"]
    found = [line for line in done.stderr.splitlines() if "copied into segments" in line]
    assert found and found[-1].endswith("(100%)"), done.stderr


def test_the_plain_lines_and_the_milestones() -> None:
    task = progressbar._Task(started=0.0, done=50, total=200)
    assert progressbar.plain_line("x", task, 10.0) == \
        "gitspace: x: 50 of 200 (25%), about 30 s left"
    assert progressbar._milestone(task) == 2.0
    endless = progressbar._Task(started=0.0, done=730, total=None)
    assert progressbar._milestone(endless) == 500
    assert progressbar.plain_line("rounds", endless, 61.0) == "gitspace: rounds: 730 so far (61 s)"


def test_gc_on_a_terminal_says_what_it_is_doing(tmp_path: Path) -> None:
    from user_repo import claude_code_checkout

    own = claude_code_checkout(tmp_path)
    out, shown, code = on_a_terminal(own, "gc")
    assert code == 0, shown
    assert "pruning lines and packing what recording wrote" in shown
    assert "Packed the objects recording wrote." in out
