"""The command line for people: log's formats, filters, pager and colour; --json field
selection; --args from stdin and files; usage errors exit 2; the session view; run's exit codes;
reading a detached HEAD, a shallow clone and a repository gitspace does not own.

Real processes throughout (``gitspace_cli``); a pager and a terminal are real too (a pty).
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import git, gitspace_cli

import gitspace


@pytest.fixture
def busy(tmp_path: Path) -> Path:
    """A workspace with two agents' ops, a checkpoint, and an outside edit that brought a file
    name with a newline in it (agents cannot make one; people can)."""
    root = tmp_path / "ws"
    with gitspace.init(root, agent="alice", session="s-one") as ws:
        assert ws.call("create", {"path": "notes/a.md",
                                  "file_text": "alpha journal-reader words\n"}).ok
        assert ws.call("create", {"path": "notes/b.md", "file_text": "b\n"}).ok
        assert ws.call("checkpoint", {"name": "first"}).ok
    with gitspace.open(root, agent="bob", session="s-two") as ws:
        assert ws.call("str_replace", {"path": "notes/a.md", "old_str": "alpha",
                                       "new_str": "beta"}).ok
        (root / "outside.txt").write_text("by hand\n")
        (root / "odd\nname.md").write_text("x\n")
        assert ws.snapshot().ok
    return root


def test_piped_log_is_one_whole_line_per_entry(busy: Path) -> None:
    out = gitspace_cli(busy, "log")
    assert out.returncode == 0, out.stderr
    rows = out.stdout.splitlines()
    count = len(git(busy, "rev-list", "HEAD").split())
    assert len(rows) == count == 5  # init, two creates, str_replace, the outside edit
    assert all("  files: " in r for r in rows)  # every entry whole on its line, never folded
    assert any("files: odd\\nname.md" in r for r in rows)  # a newline in a name stays escaped
    assert any(re.search(r"\bunknown\s+external_edit\b", r) for r in rows)
    assert any(r.endswith("checkpoint: first") for r in rows)
    assert "\x1b[" not in out.stdout  # no colour into a pipe


def test_log_filters_and_formats(busy: Path) -> None:
    def log(*args: str) -> list[str]:
        out = gitspace_cli(busy, "log", "--format", "{agent} {tool} {source} {files}", *args)
        assert out.returncode == 0, out.stderr
        return out.stdout.splitlines()

    assert log("--agent", "alice") == ["alice create tool notes/b.md",
                                       "alice create tool notes/a.md", "alice init init .gitignore"]
    assert log("--source", "external") == ["unknown external_edit external odd\\nname.md,outside.txt"]
    assert log("--tool", "str_replace", "--session", "s-two") == [
        "bob str_replace tool notes/a.md"]
    assert log("--", "notes/a.md") == ["bob str_replace tool notes/a.md",
                                       "alice create tool notes/a.md"]
    assert log("-n", "1", "--skip", "1") == ["bob str_replace tool notes/a.md"]
    assert log("--since", "2000-01-01", "--until", "2001-01-01") == []
    bad = gitspace_cli(busy, "log", "--format", "{nope}")
    assert bad.returncode == 2 and "{op_short}" in bad.stderr
    bad_source = gitspace_cli(busy, "log", "--source", "robot")
    assert bad_source.returncode == 2
    fields = gitspace_cli(busy, "log", "--format", "help")
    assert fields.returncode == 0 and "{op_short}" in fields.stdout


def test_json_field_selection(busy: Path) -> None:
    out = gitspace_cli(busy, "log", "-n", "2", "--json=commit,op.tool,files")
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert [sorted(r) for r in rows] == [["commit", "files", "op"]] * 2
    assert rows[0]["op"] == {"tool": "external_edit"}
    assert rows[0]["files"] == ["odd\nname.md", "outside.txt"]
    whole = json.loads(gitspace_cli(busy, "status", "--json").stdout)
    assert whole["branch"] == "main" and whole["detached"] is False
    unknown = gitspace_cli(busy, "log", "--json=commit,colour")
    assert unknown.returncode == 2 and "'colour'" in unknown.stderr and "commit" in unknown.stderr
    empty = gitspace_cli(busy, "log", "--json=")
    assert empty.returncode == 2


def test_args_from_stdin_and_from_a_file(busy: Path, tmp_path: Path) -> None:
    piped = gitspace_cli(busy, "call", "create", "--args", "-",
                         input='{"path": "from-stdin.md", "file_text": "s\\n"}')
    assert piped.returncode == 0, piped.stderr
    args = tmp_path / "args.json"
    args.write_text(json.dumps({"path": "from-file.md", "file_text": "f\n"}))
    filed = gitspace_cli(busy, "call", "create", "--args", f"@{args}")
    assert filed.returncode == 0, filed.stderr
    assert (busy / "from-stdin.md").read_text() == "s\n" and (busy / "from-file.md").read_text() == "f\n"
    for bad in ("@" + str(tmp_path / "missing.json"), "[1, 2]", "{nope"):
        out = gitspace_cli(busy, "call", "create", "--args", bad)
        assert out.returncode == 2 and "--args" in out.stderr, (bad, out.stderr)


@pytest.mark.parametrize("argv", [
    ["log", "--no-such-option"], ["log", "-n", "zero"], ["log", "-n", "0"], ["show"],
    ["diff", "a", "b", "c"], ["undo", "--count", "0"], ["undo", "--count", "1", "--op", "x"],
    ["call"], ["run"], ["sessions", "show"],
    ["checkpoint"], ["--color", "sometimes", "log"], ["nosuchcommand"], ["status", "extra"],
    ["status", "--", "notes"], ["-C", "log", "status", "--", "x"],
])
def test_usage_errors_exit_2(busy: Path, argv: list[str]) -> None:
    out = gitspace_cli(busy, *argv)
    assert out.returncode == 2, (argv, out.returncode, out.stderr)
    assert "Traceback" not in out.stderr


def test_version_short_help_and_completion(busy: Path) -> None:
    version = gitspace_cli(busy, "--version")
    assert version.returncode == 0
    from gitspace.storage import ledger

    newest = max(ledger.FORMATS)
    assert re.fullmatch(rf"gitspace \d+\.\d+\.\d+ \(JSON output schema 1, ledger formats 1-{newest}: "
                        rf"writes {ledger.FORMAT} for every op\)\n", version.stdout)
    assert re.search(rf"Read as ledger formats 1-{newest}: writes {ledger.FORMAT} for every op\.",
                     gitspace_cli(busy, "verify").stdout)
    short = gitspace_cli(busy, "-h")
    assert short.returncode == 0 and "--install-completion" in short.stdout
    assert "<bool>" not in short.stdout
    for command in ("log", "run", "call", "sessions", "push"):
        helped = gitspace_cli(busy, command, "-h")
        assert helped.returncode == 0 and "Usage:" in helped.stdout, command
        assert "<bool>" not in helped.stdout, command


def test_a_run_builds_one_command_and_says_the_same(busy: Path) -> None:
    """The CLI registers only the command it runs (the rest by name and help): the top-level
    help is the whole app's, word for word, and shell completion still sees every option."""
    whole = subprocess.run([sys.executable, "-c", "from gitspace.cli import app; "
                            "app(prog_name='gitspace')", "--help"], capture_output=True, text=True)
    assert whole.returncode == 0 and gitspace_cli(busy, "--help").stdout == whole.stdout
    env = {**os.environ, "_GITSPACE_COMPLETE": "complete_bash", "COMP_WORDS": "gitspace log --ag",
           "COMP_CWORD": "2"}
    completed = subprocess.run([sys.executable, "-m", "gitspace"], capture_output=True, text=True,
                               env=env, cwd=busy)
    assert "--agent" in completed.stdout, (completed.stdout, completed.stderr)


def test_color_follows_the_flag_and_no_color(busy: Path) -> None:
    always = gitspace_cli(busy, "--color", "always", "show", "HEAD")
    assert always.returncode == 0 and "\x1b[" in always.stdout
    never = gitspace_cli(busy, "--color", "never", "show", "HEAD")
    assert "\x1b[" not in never.stdout
    assert "\x1b[" not in _on_a_terminal(busy, ["--no-pager", "log"], {"NO_COLOR": "1"})
    assert "\x1b[" in _on_a_terminal(busy, ["--no-pager", "log"], {})


def _on_a_terminal(cwd: Path, argv: list[str], env: dict[str, str]) -> str:
    """What ``gitspace ARGV`` writes to a real terminal (a pty), colours included."""
    main, secondary = pty.openpty()
    base = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "GITSPACE_AGENT")}
    proc = subprocess.Popen([sys.executable, "-m", "gitspace", "-C", str(cwd), *argv],
                            stdin=secondary, stdout=secondary, stderr=secondary,
                            env={**base, "COLUMNS": "100", "TERM": "xterm-256color", **env})
    os.close(secondary)
    chunks = []
    while True:
        ready, _, _ = select.select([main], [], [], 30)
        if not ready:
            break
        try:
            data = os.read(main, 65536)
        except OSError:  # the child closed its side
            break
        if not data:
            break
        chunks.append(data)
    proc.wait(timeout=30)
    os.close(main)
    return b"".join(chunks).decode(errors="replace")


def test_a_terminal_gets_the_pager_and_a_pipe_does_not(busy: Path, tmp_path: Path) -> None:
    seen = tmp_path / "paged.txt"
    pager = tmp_path / "pager.sh"
    pager.write_text(f"#!/bin/sh\ncat > {seen}\n")
    pager.chmod(0o755)
    env = {"PAGER": str(pager), "GITSPACE_PAGER": str(pager)}
    shown = _on_a_terminal(busy, ["log"], env)
    assert seen.exists() and "external_edit" in seen.read_text()
    assert "external_edit" not in shown  # it went to the pager, not straight to the terminal
    seen.unlink()
    direct = _on_a_terminal(busy, ["--no-pager", "log"], env)
    assert not seen.exists() and "external_edit" in direct
    piped = gitspace_cli(busy, "log", env=env)
    assert not seen.exists() and "external_edit" in piped.stdout


def test_diff_and_show_take_stat(busy: Path) -> None:
    shown = gitspace_cli(busy, "show", "HEAD~1", "--stat")
    assert shown.returncode == 0 and "notes/a.md | 2 +-" in shown.stdout
    assert "+beta" not in shown.stdout
    full = gitspace_cli(busy, "show", "HEAD~1")
    assert "+beta" in full.stdout
    stat = gitspace_cli(busy, "diff", "gitspace/first", "--stat")
    assert stat.returncode == 0, stat.stderr
    assert "3 files changed" in stat.stdout and "+beta" not in stat.stdout


def test_sessions_show_lists_a_runs_ops_and_how_it_ended(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    gitspace.init(root).close()
    run = gitspace_cli(root, "run", "Escape the maze", "--policy", "maze")
    assert run.returncode == 4, run.stdout + run.stderr  # the policy could not act
    assert "gave_up" in run.stdout and "done" not in run.stdout.split("\n")[2]
    [listed] = json.loads(gitspace_cli(root, "sessions", "--json").stdout)
    assert listed["status"] == "gave_up"
    view = gitspace_cli(root, "sessions", "show", listed["session"][-6:])
    assert view.returncode == 0, view.stderr
    assert "gave_up" in view.stdout and "offers no look, move tool" in view.stdout
    data = json.loads(gitspace_cli(root, "sessions", "show", listed["session"], "--json").stdout)
    assert data["status"] == "gave_up" and data["ops"] == [] and "look" in data["answer"]
    missing = gitspace_cli(root, "sessions", "show", "ZZZZ")
    assert missing.returncode == 1 and "no saved session" in missing.stderr


def test_sessions_show_follows_the_run_across_branches(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    with gitspace.init(root, agent="a", session="sess-1") as ws:
        ws.call("create", {"path": "one.md", "file_text": "1\n"})
        ws.call("branch", {"name": "side"})
        ws.call("create", {"path": "two.md", "file_text": "2\n"})
        ws.call("switch", {"name": "main"})
    from gitspace.agent.session import Session

    Session("sess-1", "a task", "a", "test", True, status="done", root=root).save()
    data = json.loads(gitspace_cli(root, "sessions", "show", "sess-1", "--json").stdout)
    assert [(e["op"]["tool"], e["files"]) for e in data["ops"]] == [
        ("init", [".gitignore"]), ("create", ["one.md"]), ("create", ["two.md"])]


def test_reads_work_on_a_detached_head_and_writes_are_refused(busy: Path) -> None:
    git(busy, "checkout", "-q", "--detach", "HEAD~1")
    status = gitspace_cli(busy, "status")
    assert status.returncode == 0 and "HEAD detached at" in status.stdout
    assert json.loads(gitspace_cli(busy, "status", "--json").stdout)["detached"] is True
    log = gitspace_cli(busy, "log")
    assert log.returncode == 0 and len(log.stdout.splitlines()) == 4, log.stdout
    assert gitspace_cli(busy, "verify").returncode == 0
    wrote = gitspace_cli(busy, "call", "create", "--args", '{"path": "x.md", "file_text": "x"}')
    assert wrote.returncode == 1 and "detached" in wrote.stderr and "hint:" in wrote.stderr


def test_reads_work_in_a_shallow_clone_and_a_users_own_repository(busy: Path,
                                                                  tmp_path: Path) -> None:
    shallow = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "2", f"file://{busy}", str(shallow))
    log = gitspace_cli(shallow, "log")
    assert log.returncode == 0 and len(log.stdout.splitlines()) == 2, log.stderr
    assert gitspace_cli(shallow, "status").returncode == 0
    assert gitspace_cli(shallow, "show", "HEAD").returncode == 0
    mine = tmp_path / "mine"
    git(tmp_path, "init", "-q", "-b", "main", str(mine))
    (mine / "a.txt").write_text("a\n")
    git(mine, "add", "a.txt")
    git(mine, "commit", "-q", "-m", "my own commit")
    log = gitspace_cli(mine, "log")
    assert log.returncode == 0 and "my own commit" in log.stdout
    assert gitspace_cli(mine, "status").returncode == 0
    wrote = gitspace_cli(mine, "call", "create", "--args", '{"path": "x.md", "file_text": "x"}')
    assert wrote.returncode == 1 and "attach --agent" in wrote.stderr
    assert not (mine / "x.md").exists()


def test_what_log_shows_types_back_everywhere(busy: Path) -> None:
    """The op column of a piped log (the last 8 characters of an op id) and a bare checkpoint
    name, typed back into show, diff, log REV, undo --op and restore."""
    rows = gitspace_cli(busy, "log", "--format", "{op_short} {tool}").stdout.splitlines()
    short: dict[str, str] = {}
    for part, tool in (r.split() for r in rows):
        short.setdefault(tool, part)  # newest first: the create of notes/b.md
    replaced, created = short["str_replace"], short["create"]
    assert len(replaced) == 8
    shown = gitspace_cli(busy, "show", replaced)
    assert shown.returncode == 0 and "+beta" in shown.stdout, shown.stderr
    assert gitspace_cli(busy, "show", "first").returncode == 0
    diff = gitspace_cli(busy, "diff", "first", replaced)
    assert diff.returncode == 0 and "-alpha" in diff.stdout and "+beta" in diff.stdout
    since_first = gitspace_cli(busy, "log", "first", "--format", "{op_short}").stdout.split()
    assert since_first[0] == created and len(since_first) == 3  # b.md, a.md, init
    assert gitspace_cli(busy, "log", replaced, "--format", "{op_short}").stdout.split()[0] == replaced
    undone = gitspace_cli(busy, "undo", "--op", replaced)
    assert undone.returncode == 0, undone.stderr
    assert (busy / "notes/a.md").read_text().startswith("alpha")
    by_op = gitspace_cli(busy, "restore", replaced)  # the files right after that op
    assert by_op.returncode == 0, by_op.stderr
    assert (busy / "notes/a.md").read_text().startswith("beta")
    by_name = gitspace_cli(busy, "restore", "first")
    assert by_name.returncode == 0, by_name.stderr
    assert not (busy / "outside.txt").exists() and (busy / "notes/a.md").read_text().startswith("alpha")
    for command in (["show"], ["diff"], ["log"], ["undo", "--op"], ["restore"]):
        missing = gitspace_cli(busy, *command, "ZZZZZZZZ")
        assert missing.returncode == 1 and "hint:" in missing.stderr, (command, missing.stderr)
        assert "fatal" not in missing.stderr and "Traceback" not in missing.stderr
    branch = gitspace_cli(busy, "restore", "main")
    assert branch.returncode == 1 and "restore takes a checkpoint or an op" in branch.stderr
