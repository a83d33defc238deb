"""What recording in a person's own checkout (#23) reads and writes, as untrusted input.

- The exclude files (``.git/info/gitspace-exclude``, the person's own) are read by the bounded
  reader: a fifo there never holds up a hook, and one that cannot be read refuses the call
  rather than record what it may exclude. ``gitspace exclude`` writes the repository's file
  without following a link at it or at its temporary name.
- The hook's "said once" mark lives in the shared temporary folder: a folder another user
  planted there (a link, one that is not the person's) is never written into.
- The in-place state (``.git/gitspace/inplace/``: the model, the list of harnesses recording,
  the private index, gc's clock) is reached without following a link.
- ``undo`` and ``rewind`` never record or overwrite a file the line does not hold (an ignored
  one: a secret in ``.env``).

Each ends with ``git fsck --strict`` clean, the person's status as it was, nothing outside
changed.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import git, ops
from hostile import Outside, fifo, fsck, gitspace_argv, never_blocks, objects_hold, status
from user_repo import make_user_repo

from gitspace.harness import install

SID = "5c0e4b1a-2f3d-4e5f-8a9b-0c1d2e3f4a5b"
LINE = "refs/gitspace/lines/main"
PROGRAM = f"{sys.executable} -m gitspace"


@pytest.fixture
def recorded(tmp_path: Path) -> Path:
    """A person's checkout with Claude Code recorded in place."""
    root = make_user_repo(tmp_path / "repo")
    install.install("claude-code", None, root, tmp_path / "home", PROGRAM)
    return root


def _write_call(root: Path, event: str) -> bytes:
    return json.dumps({"session_id": SID, "cwd": str(root), "hook_event_name": event,
                       "tool_name": "Write", "tool_use_id": "toolu_1",
                       "tool_input": {"file_path": str(root / "made.txt"), "content": "x\n"}
                       }).encode()


@pytest.mark.parametrize("kind", ["fifo", "dev-zero"])
def test_an_exclude_file_that_is_no_regular_file_never_holds_up_a_hook(
        recorded: Path, tmp_path: Path, kind: str) -> None:
    outside = Outside(tmp_path / "outside")
    target = recorded / ".git" / "info" / "gitspace-exclude"
    if kind == "fifo":
        fifo(target)
    else:
        os.symlink("/dev/zero", target)
    before = status(recorded)
    for event in ("PreToolUse", "PostToolUse"):
        if event == "PostToolUse":
            (recorded / "made.txt").write_text("x\n")
        proc = never_blocks(gitspace_argv(recorded, "hook", "claude-code"), recorded,
                            stdin=_write_call(recorded, event))
        assert proc.returncode == 0, proc.stderr
        assert "Traceback" not in proc.stderr and "unexpected" not in proc.stderr, proc.stderr
    (recorded / "made.txt").unlink()
    target.unlink()
    fsck(recorded)
    assert status(recorded) == before
    outside.unchanged()


@pytest.mark.parametrize("name", ["gitspace-exclude", ".gitspace-exclude.tmp"])
def test_gitspace_exclude_never_writes_through_a_link(recorded: Path, tmp_path: Path,
                                                      name: str) -> None:
    outside = Outside(tmp_path / "outside", {"private.txt": "the person's own file\n"})
    os.symlink(outside.path / "private.txt", recorded / ".git" / "info" / name)
    before = status(recorded)
    proc = never_blocks(gitspace_argv(recorded, "exclude", "secrets/"), recorded)
    assert proc.returncode in (0, 1), proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    fsck(recorded)
    assert status(recorded) == before
    outside.unchanged()
    kept = recorded / ".git" / "info" / "gitspace-exclude"
    if proc.returncode == 0:
        assert not kept.is_symlink() and "secrets/" in kept.read_text()
        assert "the person's own file" not in kept.read_text()


def test_the_said_once_mark_is_never_written_into_a_planted_folder(tmp_path: Path) -> None:
    outside = Outside(tmp_path / "outside")
    shared = tmp_path / "shared-tmp"
    shared.mkdir()
    os.symlink(outside.path / "sub", shared / f"gitspace-{os.getuid()}")
    plain = tmp_path / "not-a-repository"
    plain.mkdir()
    env = {**os.environ, "TMPDIR": str(shared)}
    for _ in range(2):
        proc = never_blocks(gitspace_argv(plain, "hook", "claude-code"), plain, env=env,
                            stdin=_write_call(plain, "PostToolUse"))
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    outside.unchanged()


@pytest.mark.parametrize("rel", ["inplace", "inplace/model.json", "inplace/recording",
                                 "inplace/gc"])
def test_in_place_state_is_never_reached_through_a_link(recorded: Path, tmp_path: Path,
                                                        rel: str) -> None:
    outside = Outside(tmp_path / "outside", {"file": "outside\n"})
    target = recorded / ".git" / "gitspace" / rel
    if target.is_dir():
        import shutil
        shutil.rmtree(target)
    else:
        target.unlink(missing_ok=True)
    os.symlink(outside.path / ("sub" if rel == "inplace" else "file"), target)
    before = status(recorded)
    for event in ("PreToolUse", "PostToolUse", "Stop"):
        if event == "PostToolUse":
            (recorded / "made.txt").write_text("x\n")
        body = _write_call(recorded, event) if event != "Stop" else json.dumps(
            {"session_id": SID, "cwd": str(recorded), "hook_event_name": "Stop"}).encode()
        proc = never_blocks(gitspace_argv(recorded, "hook", "claude-code"), recorded, stdin=body)
        assert proc.returncode == 0, proc.stderr
        assert "Traceback" not in proc.stderr and "unexpected" not in proc.stderr, proc.stderr
    (recorded / "made.txt").unlink()
    fsck(recorded)
    assert status(recorded) == before
    outside.unchanged()


def _turn(root: Path, tool: str, tool_input: dict[str, str], use_id: str,
          effect: Callable[[], object]) -> None:
    """One turn of Claude Code with one tool call, its hooks run as the real binary runs them."""
    def hook(event: str, **call: object) -> None:
        body = {"session_id": SID, "cwd": str(root), "hook_event_name": event, **call}
        proc = never_blocks(gitspace_argv(root, "hook", "claude-code"), root,
                            stdin=json.dumps(body).encode())
        assert proc.returncode == 0, proc.stderr

    hook("UserPromptSubmit", prompt="Go.")
    call = {"tool_name": tool, "tool_input": tool_input, "tool_use_id": use_id}
    hook("PreToolUse", **call)
    effect()
    hook("PostToolUse", **call, tool_response={})
    hook("Stop")


@pytest.mark.parametrize("how", ["rewind --all", "rewind", "undo"])
def test_a_take_back_over_an_ignored_file_of_yours_is_refused(recorded: Path, tmp_path: Path,
                                                              how: str) -> None:
    """The agent wrote a ``.env`` template in turn 1 and removed it in turn 2; the person then
    ignores ``.env`` and keeps real secrets in one. Taking the agent's ops back would bring the
    template back over it: ``rewind --all`` recorded the secret on the line as "your changes",
    then overwrote it. Each way is refused, changing nothing, and the secret is in no object."""
    outside = Outside(tmp_path / "outside")
    _turn(recorded, "Write", {"file_path": str(recorded / ".env"), "content": "KEY=\n"},
          "toolu_1", lambda: (recorded / ".env").write_text("KEY=\n"))
    _turn(recorded, "Bash", {"command": "rm .env"}, "toolu_2", (recorded / ".env").unlink)
    with (recorded / ".gitignore").open("a") as ignore:
        ignore.write(".env\n")
    (recorded / ".env").write_text("KEY=the person's real secret\n")
    line = git(recorded, "rev-parse", LINE).strip()
    [first] = [op for op in ops(recorded, LINE) if op.tool_use_id == "toolu_2"]
    before = status(recorded)
    args = {"rewind --all": ["rewind", "1", "--all"], "rewind": ["rewind", "1"],
            "undo": ["undo", "--op", first.op_id]}[how]
    proc = never_blocks(gitspace_argv(recorded, *args), recorded)
    assert proc.returncode == 1, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and "hint" in proc.stderr.lower(), proc.stderr
    assert (recorded / ".env").read_text() == "KEY=the person's real secret\n"
    assert git(recorded, "rev-parse", LINE).strip() == line
    assert not objects_hold(recorded, "real secret")
    fsck(recorded)
    assert status(recorded) == before
    outside.unchanged()


@pytest.mark.parametrize("tracked", [True, False])
def test_installing_in_place_never_writes_through_a_claude_folder_linked_outside(
        tmp_path: Path, tracked: bool) -> None:
    """A person's checkout whose ``.claude`` is a link to a folder outside (history planted it,
    or it is untracked): ``hooks install`` would write ``settings.local.json`` into that folder
    and merge in what it holds. It is refused; the outside and the checkout stay as they were."""
    outside = Outside(tmp_path / "outside", {"settings.local.json": '{"secret": 1}\n'})
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / ".claude").symlink_to(outside.path)
    if tracked:
        git(root, "add", ".claude")
    git(root, "commit", "-q", "--allow-empty", "-m", "the person's commit")
    before = status(root)
    proc = never_blocks(gitspace_argv(root, "hooks", "install", "claude-code"), root,
                        env={**os.environ, "HOME": str(tmp_path / "home")})
    assert proc.returncode == 1, (proc.returncode, proc.stdout, proc.stderr)
    assert "link" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    fsck(root)
    assert status(root) == before
    outside.unchanged()
