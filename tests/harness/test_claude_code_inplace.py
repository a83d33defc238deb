"""The real ``claude`` binary recorded in a person's own checkout, against a control copy.

One repository as people have them (a staged file, an unstaged edit, an untracked file, ignored
files, a stash, a tag) is copied twice; gitspace's hooks are installed in one copy only. The same
script runs in both: two Claude Code sessions with Write, Read, Edit and Bash calls, the person
editing and committing between them; in a third variant the person switches branch between two
tool calls of one session. Afterwards HEAD, the branch, staged content, the stash, tags,
``git status --ignored`` and every work-tree file are the same in both copies (but for the one
settings file the hooks live in), ``.git/index`` was never written while the agent ran, and the
line holds one op per call that changed files. Then ``gitspace undo --op`` of one Edit takes back
exactly that Edit, in the work tree only.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from claude_code import ClaudeCode, new_session
from conftest import changed_files, git_env, ops
from fake_anthropic import FakeAnthropic, text, tool_use
from user_repo import add_stash, fsck, make_user_repo

SETTINGS = ".claude/settings.local.json"
NAME, EMAIL = "Zoë Tester", "zoe@example.com"
TOOLS = ("Write", "Read", "Edit", "Bash")


CLOCK = {"now": int(time.time())}  # one clock for both copies (set per test)


def person(root: Path, *args: str) -> str:
    """git as the person runs it, on one clock, so that both copies make the same commits."""
    when = f"@{CLOCK['now']} +0000"
    env = {**git_env(), "GIT_AUTHOR_NAME": NAME, "GIT_AUTHOR_EMAIL": EMAIL,
           "GIT_COMMITTER_NAME": NAME, "GIT_COMMITTER_EMAIL": EMAIL,
           "GIT_AUTHOR_DATE": when, "GIT_COMMITTER_DATE": when}
    proc = subprocess.run(["git", *args], cwd=root, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, f"git {args}: {proc.stderr}"
    return proc.stdout


def gs(root: Path, *args: str, resident: bool = False) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "GITSPACE_AGENT"}
    env["GITSPACE_RESIDENT"] = "on" if resident else "off"  # (through the resident recorder?)
    env["GITSPACE_RESIDENT_WATCH_FROM"] = "0"  # (a small checkout: watched all the same)
    proc = subprocess.run([sys.executable, "-m", "gitspace", "-C", str(root), *args], env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 0, f"gitspace {args}:\n{proc.stdout}{proc.stderr}"
    return proc


def the_repository(parent: Path) -> Path:
    root = make_user_repo(parent / "original")
    person(root, "config", "user.name", NAME)
    person(root, "config", "user.email", EMAIL)
    person(root, "tag", "v1")
    add_stash(root)
    return root


def index_mark(root: Path) -> tuple[bytes, int, int]:
    st = (root / ".git" / "index").stat()
    return (root / ".git" / "index").read_bytes(), st.st_mtime_ns, st.st_ino


def what_must_match(root: Path) -> dict[str, Any]:
    files = {}
    for folder, dirs, names in os.walk(root):
        if Path(folder) == root:
            dirs.remove(".git")
        for name in names:
            rel = Path(folder, name).relative_to(root).as_posix()
            if rel != SETTINGS:
                files[rel] = Path(folder, name).read_bytes()
    status = person(root, "--no-optional-locks", "status", "--porcelain", "--ignored",
                    "--untracked-files=all")
    return {
        "HEAD": (root / ".git" / "HEAD").read_text(),
        "head commit": person(root, "rev-parse", "HEAD"),
        "branches": person(root, "for-each-ref", "--format=%(refname) %(objectname)",
                           "refs/heads"),
        "staged": person(root, "ls-files", "--stage"),
        "stash": person(root, "stash", "list", "-p"),
        "tags": person(root, "for-each-ref", "--format=%(refname) %(objectname)", "refs/tags"),
        "status": [line for line in status.splitlines() if SETTINGS not in line
                   and line != "!! .claude/"],
        "files": files,
    }


class Script:
    """The same sessions, run in one copy: Claude Code's calls, and the person's own actions."""

    def __init__(self, claude: ClaudeCode, fake: FakeAnthropic, root: Path) -> None:
        self.claude, self.fake, self.root = claude, fake, root
        self.index_while_agent: list[bool] = []  # per run: .git/index unchanged by the agent

    def p(self, rel: str) -> str:
        return str(self.root / rel)

    def run(self, prompt: str, turns: list[tuple[dict[str, Any], Callable[[], None] | None]]
            ) -> None:
        """One session: each tool call, and what the person does before the model's next turn
        (run by the fake when Claude Code asks for it, so it falls between two tool calls)."""
        sid = new_session()
        marks = [index_mark(self.root)]

        def after(action: Callable[[], None] | None) -> Callable[[dict[str, Any]], None]:
            def check(_: dict[str, Any]) -> None:
                if action is not None:
                    assert index_mark(self.root) == marks[-1], "the agent wrote .git/index"
                    action()
                    marks.append(index_mark(self.root))
            return check

        previous: Callable[[], None] | None = None  # what the person does after the last call
        for n, (block, action) in enumerate(turns):
            self.fake.reply(block, stop_reason="tool_use", session=sid,
                            check=after(previous) if n else None)
            previous = action
        self.fake.reply(text("done"), session=sid, check=after(previous))
        self.claude.run_ok(self.root, prompt, session=sid, tools=TOOLS)
        self.index_while_agent.append(index_mark(self.root) == marks[-1])

    def first(self) -> None:
        p = self.p
        self.run("first session", [
            (tool_use("toolu_w1", "Write", {"file_path": p("docs/plan.md"),
                                            "content": "# plan\n1. edit notes\n"}), None),
            (tool_use("toolu_r1", "Read", {"file_path": p("notes.txt")}), None),
            (tool_use("toolu_e1", "Edit", {"file_path": p("notes.txt"), "old_string": "three",
                                           "new_string": "THREE"}), None),
            (tool_use("toolu_b1", "Bash", {"command": "mkdir -p gen && echo one > gen/a.txt "
                                                      "&& echo log > gen/b.log"}), None),
        ])
    def between(self) -> None:
        """The person edits a file and commits it, with what they had staged."""
        (self.root / "README.md").write_text("# project\nby the person\n")
        person(self.root, "add", "README.md")
        person(self.root, "commit", "-q", "-m", "the person's commit between sessions")

    def second(self, switch_mid_session: bool) -> None:
        p = self.p

        def switch() -> None:
            person(self.root, "switch", "-q", "-c", "side")

        self.run("second session", [
            (tool_use("toolu_r2", "Read", {"file_path": p("docs/plan.md")}),
             switch if switch_mid_session else None),
            (tool_use("toolu_w2", "Write", {"file_path": p("docs/plan.md"),
                                            "content": "# plan\n1. done\n"}), None),
            (tool_use("toolu_r3", "Read", {"file_path": p("README.md")}), None),
            (tool_use("toolu_e2", "Edit", {"file_path": p("README.md"), "old_string": "person",
                                           "new_string": "person, then the agent"}), None),
            (tool_use("toolu_b2", "Bash", {"command": "rm gen/a.txt && echo two > gen/c.txt"}),
             None),
        ])


def _compare(claude_code: ClaudeCode, fake_api: FakeAnthropic, tmp_path: Path,
             switch_mid_session: bool, resident: bool = False) -> tuple[Path, Script]:
    CLOCK["now"] = int(time.time()) - 3600  # the repository's commits: an hour ago
    original = the_repository(tmp_path)
    control, recorded = tmp_path / "control", tmp_path / "recorded"
    shutil.copytree(original, control, symlinks=True)
    shutil.copytree(original, recorded, symlinks=True)
    out = gs(recorded, "hooks", "install", "claude-code", resident=resident)
    assert "settings.local.json" in out.stdout and "in place" in out.stdout
    scripts = {root: Script(claude_code, fake_api, root) for root in (control, recorded)}
    for step in ("first", "between", "second"):  # each step in both copies, in turn
        if step == "between":  # both copies commit at one instant, after the first session
            CLOCK["now"] = int(time.time()) + 1
        for script in scripts.values():
            if step == "second":
                script.second(switch_mid_session)
            else:
                getattr(script, step)()
    fake_api.done()
    assert what_must_match(recorded) == what_must_match(control)
    assert scripts[recorded].index_while_agent == [True, True]
    fsck(recorded)
    return recorded, scripts[recorded]


@pytest.mark.parametrize("resident", [False, True], ids=["in each hook", "resident recorder"])
def test_recording_in_place_leaves_the_checkout_as_a_control_copy(
        claude_code: ClaudeCode, fake_api: FakeAnthropic, tmp_path: Path, resident: bool) -> None:
    root, _ = _compare(claude_code, fake_api, tmp_path, switch_mid_session=False,
                       resident=resident)
    try:
        _compared(root)
    finally:
        if resident:  # (stopped, and everything it kept removed: the settings stay compared)
            gs(root, "hooks", "uninstall", "claude-code")


def _compared(root: Path) -> None:
    line = "refs/gitspace/lines/main"
    recorded = [op for op in ops(root, line) if op.source == "harness"]
    assert [(op.tool, op.tool_use_id, op.paths) for op in recorded] == [
        ("Write", "toolu_w1", ("docs/plan.md",)), ("Edit", "toolu_e1", ("notes.txt",)),
        ("Bash", "toolu_b1", ("gen/a.txt",)),  # gen/b.log is ignored (*.log)
        ("Write", "toolu_w2", ("docs/plan.md",)), ("Edit", "toolu_e2", ("README.md",)),
        ("Bash", "toolu_b2", ("gen/a.txt", "gen/c.txt"))]
    assert {op.agent for op in recorded} == {"claude-code"}
    follows = [op for op in ops(root, line) if op.tool == "follow"]
    assert [op.agent for op in follows] == ["Zoe-Tester", "Zoe-Tester"]  # start, the commit
    # gitspace log in the checkout: the agent's ops and the person's commits in one list.
    listing = gs(root, "log", "--format", "{source} {tool} {subject}", "-n", "40").stdout
    assert "the person's commit between sessions" in listing
    assert listing.index("Edit README.md") < listing.index("the person's commit") \
        < listing.index("Edit notes.txt")

    # Undo one Edit of the first session: only its change is taken back, in the work tree.
    edit = next(op for op in recorded if op.tool_use_id == "toolu_e1")
    index, head = index_mark(root), (root / ".git" / "HEAD").read_text()
    before = what_must_match(root)
    gs(root, "undo", "--op", edit.op_id)
    after = what_must_match(root)
    assert after["files"].pop("notes.txt") == b"one\ntwo (being edited)\nthree\n"
    before["files"].pop("notes.txt")
    assert after["files"] == before["files"]
    assert index_mark(root) == index and (root / ".git" / "HEAD").read_text() == head
    undo = ops(root, line)[-1]
    assert undo.undo_of == (edit.op_id,) and changed_files(root, line) == ["notes.txt"]
    fsck(root)



def test_switching_branch_mid_session(claude_code: ClaudeCode, fake_api: FakeAnthropic,
                                      tmp_path: Path) -> None:
    root, _ = _compare(claude_code, fake_api, tmp_path, switch_mid_session=True)
    side = [op for op in ops(root, "refs/gitspace/lines/side") if op.source == "harness"]
    assert [(op.tool, op.paths) for op in side] == [
        ("Write", ("docs/plan.md",)), ("Edit", ("README.md",)),
        ("Bash", ("gen/a.txt", "gen/c.txt"))]
    main = [op.tool_use_id for op in ops(root, "refs/gitspace/lines/main")
            if op.source == "harness"]
    assert main == ["toolu_w1", "toolu_e1", "toolu_b1"]
