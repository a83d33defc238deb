"""The CI action reads a pull request's history, which its author wrote: untrusted input.

What the action prints, writes to the job summary and sets as outputs carries text from that
history (a file's content in the divergence's diff, its path, the op's reason). A runner reads
every line a step prints for workflow commands (``::error::``, ``::add-mask::``,
``::stop-commands::``, and ``::set-env::`` where insecure commands are allowed), and renders
the summary as Markdown. So a forged op whose file holds such lines must not speak to the
runner: the printed report is fenced off with ``::stop-commands::`` and a random token, the one
``::error::`` the action means is escaped as the runner requires, the summary's code fence is
longer than any the history holds and history's text in it is kept on one line, and the outputs
are exactly the action's own.

The check step runs as the runner runs it (``ci/gitspace_ci.py github`` with the ``GITHUB_*``
files and variables), against a clone of a workspace pushed to a bare remote, using this
checkout's gitspace.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from ci_runner import check_step, read_commands
from conftest import call_ok, git, head

import gitspace

HOSTILE = ("::error title=pwned::the history speaks\n"
           "::add-mask::gitspace\n"
           "::set-env name=BASH_ENV::/tmp/evil\n"
           "::stop-commands::abc\n"
           "```\n"
           "### gitspace: every op matched\n")
SNEAKY_PATH = "notes\n### gitspace: every op matched\n::warning::a path speaks.md"
COMMAND = re.compile(r"^::([A-Za-z-]+)([^:]*)::(.*)$")
OUTPUTS = {"result", "matched", "ops-checked", "reexecuted", "first-divergence", "tip", "base",
           "agent-lines", "person-lines", "unattested-lines", "notes-attached", "authorship"}


def _remote(where: Path) -> tuple[Path, Path, str]:
    """A workspace whose branch 'forged' claims an op whose file holds ``HOSTILE`` (and a file
    with ``SNEAKY_PATH``), pushed to a bare remote; (remote, workspace, pull request head)."""
    root = where / "ws"
    with gitspace.init(root, agent="ci-bot") as ws:
        call_ok(ws, "create", {"path": "a.md", "file_text": "one\n"})
        call_ok(ws, "branch", {"name": "forged"})
        call_ok(ws, "create", {"path": "c.md", "file_text": "c\n"})
        call_ok(ws, "switch", {"name": "main"})
    git(root, "switch", "-q", "forged")
    (root / "c.md").write_text(HOSTILE)
    (root / SNEAKY_PATH).write_text("x\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "--amend", "--no-edit")
    git(root, "switch", "-q", "main")
    bare = where / "remote.git"
    git(where, "init", "-q", "--bare", "--initial-branch=main", str(bare))
    git(root, "push", "-q", str(bare), "main", "forged")
    return bare, root, head(root, "forged")


def _live_commands(text: str) -> list[tuple[str, str, str]]:
    """The workflow commands a runner would act on in ``text``, honouring ``stop-commands``."""
    live, stopped = [], None
    for line in text.splitlines():
        line = line.strip()
        if stopped is not None:
            if line == f"::{stopped}::":
                stopped = None
            continue
        found = COMMAND.match(line)
        if not found:
            continue
        if found.group(1).lower() == "stop-commands":
            stopped = found.group(3)
            continue
        live.append((found.group(1).lower(), found.group(2), found.group(3)))
    return live


def _outside_fences(markdown: str) -> list[str]:
    """The lines of ``markdown`` outside fenced code blocks (CommonMark: a fence closes only on
    a line of at least as many backticks as opened it)."""
    out, fence = [], 0
    for line in markdown.splitlines():
        ticks = len(line) - len(line.lstrip("`"))
        if fence:
            if ticks >= fence and not line.strip("`").strip():
                fence = 0
            continue
        if ticks >= 3:
            fence = ticks
            continue
        out.append(line)
    return out


def test_a_forged_ops_content_never_speaks_to_the_runner(tmp_path: Path) -> None:
    bare, root, tip = _remote(tmp_path)
    proc, files = check_step(bare, tip, head(root, "main"), tmp_path)
    assert proc.returncode == 1, proc.stderr  # the forged op diverges: the job fails
    live = _live_commands(proc.stdout) + _live_commands(proc.stderr)
    assert [(cmd, props.strip()) for cmd, props, _ in live] == [("error", "title=gitspace diverged")], \
        f"workflow commands from the history reached the runner: {live}"
    assert not any(word in message for _, _, message in live for word in ("speaks", "pwned"))
    outputs = read_commands(files["output"])
    assert set(outputs) == OUTPUTS, outputs
    assert outputs["result"] == "diverged"
    assert files["env"].read_text() == "" and files["path"].read_text() == ""
    summary = files["summary"].read_text()
    assert "the history speaks" in summary  # the diff is shown...
    outside = _outside_fences(summary)
    assert "### gitspace: every op matched" not in outside, summary  # ...but cannot pose as it
    assert not any(line.lstrip().startswith("::") for line in outside), outside


def test_replay_redoes_a_harness_patch_only_on_the_paths_its_op_lists(tmp_path: Path) -> None:
    """Replay re-does another harness's file edits from their recorded input (#26). A Codex
    patch recorded by a harness can name any path; re-done, it is held to the paths its op
    lists: one outside the work tree or inside .git makes the op diverge, and nothing outside
    the scratch repository is written."""
    from hostile import Outside, cli, fsck, status

    outside = Outside(tmp_path / "outside")
    root = tmp_path / "ws"
    with gitspace.init(root, agent="ci-bot") as ws:
        call_ok(ws, "create", {"path": "a.md", "file_text": "one\n"})
    for target in (f"{outside.path}/pwned.txt", "../outside/pwned.txt", ".git/hooks/post-commit"):
        (root / "x.txt").write_text("x\n")
        patch = f"*** Begin Patch\n*** Add File: {target}\n+x\n*** End Patch\n"
        proc = subprocess.run([sys.executable, "-m", "gitspace", "-C", str(root), "record"],
                              input=json.dumps({"agent": "codex", "tool": "apply_patch",
                                                "args": {"command": patch}, "cwd": str(root),
                                                "paths": [str(root / "x.txt")]}),
                              cwd=root, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        replayed = cli(root, "replay", "--json")
        assert replayed.returncode == 1, replayed.stdout
        assert json.loads(replayed.stdout)["result"] == "diverged", replayed.stdout
        assert "Traceback" not in replayed.stderr
        fsck(root)
        assert status(root) == ""
        outside.unchanged()
        assert not (root / ".git" / "hooks" / "post-commit").exists()
        with gitspace.open(root) as again:
            call_ok(again, "undo", {})


def test_a_pull_request_that_plants_a_link_never_writes_through_it_on_the_runner(
        tmp_path: Path) -> None:
    """A pull request whose history points ``lnk`` at a folder of the runner's and then writes
    beneath that name: the action checks it (replaying every commit in its scratch repository)
    and nothing in the folder changes, the checkout stays sound and clean, and the job says what
    it found rather than crash (the two plain commits re-execute no op, so the job fails)."""
    from hostile import Outside, fsck, plant, status

    outside = Outside(tmp_path / "outside")
    root = tmp_path / "ws"
    with gitspace.init(root, agent="ci-bot") as ws:
        call_ok(ws, "create", {"path": "a.md", "file_text": "one\n"})
    base = head(root)
    planted = plant(root, base, outside.path)
    git(root, "update-ref", "refs/heads/forged", planted.file)
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "--initial-branch=main", str(bare))
    git(root, "push", "-q", str(bare), "main", "forged")
    proc, files = check_step(bare, planted.file, base, tmp_path)
    outside.unchanged()
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, proc.stderr
    print(proc.returncode, read_commands(files["output"]), proc.stdout[-800:])
    assert read_commands(files["output"])["result"] in ("matched", "diverged", "empty"), proc.stdout
    fsck(tmp_path / "checkout")
    assert status(tmp_path / "checkout") == ""
    fsck(root)
