"""The CLI's reads (cli/reads.py) import only what they use, and say what typer's run says.

Not timed (``benchmarks/cli.py`` times them): each read runs in a fresh process and the test
pins the gitspace modules it loaded, and that none of what a read must never pay for came in
(typer, click, rich, GitPython, typing, dataclasses, inspect; json and sqlite where a read
needs neither). A module that joins a read's path fails here by name: take it out of the path
(import it where it is used), or, if the read truly needs it, add it to the pin below.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import call_ok

import gitspace

CLI = ["gitspace.cli", "gitspace.cli.jsonout", "gitspace.cli.lines", "gitspace.cli.options",
       "gitspace.cli.pager", "gitspace.cli.params", "gitspace.cli.reads", "gitspace.cli.shared"]
LIBRARY = ["gitspace", "gitspace.config", "gitspace.core", "gitspace.core.linerefs",
           "gitspace.core.owner", "gitspace.core.view", "gitspace.errors", "gitspace.faults",
           "gitspace.storage", "gitspace.storage.bounded", "gitspace.storage.bounds",
           "gitspace.storage.gitrepo", "gitspace.storage.ids",
           "gitspace.storage.ledger", "gitspace.storage.lockfile", "gitspace.storage.loose",
           "gitspace.storage.objects", "gitspace.storage.packs", "gitspace.storage.records",
           "gitspace.storage.refs", "gitspace.storage.statefiles", "gitspace.storage.worktrees"]
TIMELINE = ["gitspace.core.depth", "gitspace.core.timeline", "gitspace.storage.opchain"]
WHO = ["gitspace.core.person"]  # the name an entry made with no agent is shown by
FINDER = ["gitspace.core.lookup", "gitspace.core.opnames", "gitspace.core.refnames",
          "gitspace.storage.gitnames", "gitspace.storage.opindex"]  # an op id, a checkpoint, a branch
BLAME = ["gitspace", "gitspace.config", "gitspace.core", "gitspace.core.linerefs",
         "gitspace.core.person", "gitspace.errors", "gitspace.faults", "gitspace.harness",
         "gitspace.harness.state", "gitspace.provenance",
         "gitspace.provenance.authorship", "gitspace.provenance.blame",
         "gitspace.provenance.matching", "gitspace.provenance.notes",
         "gitspace.provenance.sessions", "gitspace.provenance.sources", "gitspace.storage",
         "gitspace.storage.bounded", "gitspace.storage.bounds", "gitspace.storage.gitnames",
         "gitspace.storage.gitrepo",
         "gitspace.storage.ids", "gitspace.storage.ledger", "gitspace.storage.lockfile",
         "gitspace.storage.loose", "gitspace.storage.objects", "gitspace.storage.packs",
         "gitspace.storage.records", "gitspace.storage.refs", "gitspace.storage.statefiles",
         "gitspace.storage.worktrees"]  # (the notes, the ops' trailers, the transcripts)
PINNED: dict[str, tuple[list[str], set[str]]] = {  # command -> (its gitspace modules, allowed)
    "status": ([*CLI, *LIBRARY, *TIMELINE, *WHO, "gitspace.core.exclude",
                "gitspace.core.snapshot"], {"json"}),  # (the timeline: the last op, said)
    "log -n 20": ([*CLI, *LIBRARY, *TIMELINE, *WHO], {"json"}),
    "show HEAD": ([*CLI, *LIBRARY, *TIMELINE, *FINDER, *WHO], {"json", "sqlite3"}),
    "diff HEAD~1": ([*CLI, *LIBRARY, *TIMELINE, *FINDER], {"json", "sqlite3"}),
    "blame a.md": ([*CLI, *BLAME], {"json"}),
    "blame a.md HEAD --json": ([*CLI, *BLAME], {"json"}),
}
NEVER = {"typer", "click", "rich", "git", "typing", "dataclasses", "inspect", "json", "sqlite3"}


def loaded(root: Path, command: str) -> tuple[set[str], set[str]]:
    """(gitspace modules, modules of NEVER) a real ``gitspace COMMAND`` process imported."""
    code = ("import sys, io, contextlib\nsys.argv = ['gitspace', *sys.argv[1:]]\n"
            "from gitspace.cli import main\nwith contextlib.redirect_stdout(io.StringIO()):\n"
            "    main()\n"
            f"print(' '.join(sorted(m for m in sys.modules if m.startswith('gitspace') "
            f"or m in {sorted(NEVER)!r})))")
    proc = subprocess.run([sys.executable, "-c", code, *command.split()], cwd=root,
                          capture_output=True, text=True)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    names = set(proc.stdout.split())
    return {n for n in names if n.startswith("gitspace")}, names & NEVER


@pytest.fixture
def busy(ws: gitspace.Workspace) -> Path:
    call_ok(ws, "create", {"path": "a.md", "file_text": "one\n"})
    call_ok(ws, "checkpoint", {"name": "first"})
    call_ok(ws, "str_replace", {"path": "a.md", "old_str": "one", "new_str": "two"})
    (ws.root / "outside.txt").write_text("not recorded yet\n")
    return ws.root


@pytest.mark.parametrize("command", sorted(PINNED))
def test_a_read_imports_only_what_it_uses(busy: Path, command: str) -> None:
    # (A clean work tree, as benchmarks/cli.py reads one: a pending change brings in what
    # hashing it needs, core/transaction.py's entry_of and what that module imports.)
    (busy / "outside.txt").unlink()
    _run(busy, "status", typer=False)  # verifies the workspace and remembers it (core/owner.py)
    modules, allowed = PINNED[command]
    ours, heavy = loaded(busy, command)
    assert sorted(ours) == sorted(modules), (
        f"'gitspace {command}' imports {sorted(ours - set(modules))} more, "
        f"{sorted(set(modules) - ours)} fewer than pinned")
    assert heavy <= allowed, f"'gitspace {command}' imported {sorted(heavy - allowed)}"


# The typer app alone, on what ``main`` hands it (``--json=FIELDS`` and log's paths taken out).
TYPER = ("import sys\nfrom gitspace.cli import build, shared\n"
         "build()(args=shared.take_arguments(sys.argv[1:]), prog_name='gitspace')")


def _run(root: Path, *args: str, typer: bool) -> subprocess.CompletedProcess[str]:
    """``gitspace ARGS`` in a new process: as people run it, or through the typer app alone."""
    code = TYPER if typer else "from gitspace.__main__ import main\nmain()"
    env = {k: v for k, v in os.environ.items() if k not in ("GITSPACE_AGENT", "NO_COLOR")}
    return subprocess.run([sys.executable, "-c", code, "-C", str(root), *args],
                          capture_output=True, text=True, env=env)


@pytest.mark.parametrize("args", [
    ["status"], ["status", "--json"], ["log"], ["log", "-n", "1", "--json"],
    ["log", "--format", "{op_short} {tool} {checkpoints}"], ["log", "first"],
    ["log", "--", "a.md"], ["--no-pager", "show", "HEAD"], ["show", "first", "--stat"],
    ["--color", "always", "show", "HEAD"], ["diff"], ["diff", "first"], ["diff", "first", "HEAD"],
    ["log", "--json=op.tool,checkpoints"],
])
def test_a_read_says_what_the_typer_app_says(busy: Path, args: list[str]) -> None:
    plain, typed = _run(busy, *args, typer=False), _run(busy, *args, typer=True)
    assert (plain.returncode, plain.stdout, plain.stderr) == (
        typed.returncode, typed.stdout, typed.stderr)
    assert plain.returncode == 0 and plain.stdout


def test_the_checkpoints_log_shows_are_the_tags(busy: Path) -> None:
    entries = json.loads(_run(busy, "log", "--json", typer=False).stdout)
    assert [e["checkpoints"] for e in entries] == [[], ["first"], []]


@pytest.mark.parametrize("args", [["log", "-n", "0"], ["log", "--format", "{nope}"],
                                  ["log", "--all", "HEAD"], ["status", "--json=nope"],
                                  ["log", "-h"], ["show"]])
def test_a_usage_error_or_help_is_typers_own(busy: Path, args: list[str]) -> None:
    plain, typed = _run(busy, *args, typer=False), _run(busy, *args, typer=True)
    assert plain.returncode == typed.returncode and plain.returncode in (0, 2)
    assert plain.stdout == typed.stdout
    assert "Usage: gitspace" in plain.stdout + plain.stderr


def _stopped_reading(root: Path, typer: bool) -> tuple[int, str]:
    """(exit status, stderr) of a ``log`` whose reader stops after a few bytes (``| head``)."""
    code = TYPER if typer else "from gitspace.__main__ import main\nmain()"
    wide = "{commit}" * 40  # 1,600 characters a line: more than a pipe holds, in a few lines
    proc = subprocess.Popen([sys.executable, "-c", code, "-C", str(root), "log", "-n", "60",
                             "--format", wide], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.read(10)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    return proc.wait(timeout=60), err


def test_a_read_into_a_reader_that_stops_ends_as_typers_run_does(ws: gitspace.Workspace) -> None:
    for n in range(60):
        call_ok(ws, "create", {"path": f"f{n}.md", "file_text": f"{n}\n"})
    assert _stopped_reading(ws.root, typer=False) == _stopped_reading(ws.root, typer=True) == (
        1, "")
