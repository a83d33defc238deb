"""The README and every page of docs/, walked literally: every ``sh`` and ``python`` block, in
order, in one shell, in a fresh copy of this checkout, with a fresh HOME and a PATH that has no
virtualenv on it but the one the page's reader has.

- The README: ``gitspace`` is found only where the README's ``make install`` puts it, and
  ``import gitspace`` works only in the ``.venv/bin/python`` the README says runs its Python
  blocks (two virtualenvs are built, as a new user's machine would).
- Each docs page: in a fresh copy of its own, with ``gitspace`` and ``python`` from one
  virtualenv built once for all the pages (``docs_venv``), as a reader who installed gitspace
  has them.

Two lines are not run: ``make test``, which is this very suite (it runs in CI on its own), and
``claude``, which starts Claude Code's interactive session (tests/harness/test_harness*.py drive
it). The ``text`` blocks show syntax with placeholders and are not commands. These are the
slowest tests (nothing else builds virtualenvs).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO, clean_copy

NOT_RUN = {"make test", "claude"}  # this suite itself; an interactive Claude Code session
README_LINES = 250  # a front door: who it is for, the two commands, one short path per reader

PYTHON = ".venv/bin/python"  # what the README says runs its Python blocks
DOCS = sorted((REPO / "docs").glob("*.md"))
# Pages whose blocks a test of their own walks, with what that walk needs and this one has not
# (harnesses.md forks a Claude Code session played through its hooks first; provenance.md checks
# what each step shows): walked there, not twice.
OWN_WALK = {"harnesses.md": "harness/test_harnesses_doc.py",
            "provenance.md": "test_provenance_doc.py"}

# What each page's walk must show (besides exiting 0), so a block that runs but does nothing
# useful cannot pass.
EXPECTED = {
    "README.md": ("Initialised gitspace workspace", "Checkpoint before-refactor saved",
                  "Restored checkpoint before-refactor", "Committed outside changes",
                  "Every op parses", "Recording Claude Code in place",
                  "your checkout as 'gitspace hooks install' found it",
                  "No turns recorded yet",
                  "True File created successfully at: notes/plan.md",  # the first Python block
                  '{"escaped":true', "24 ops: move, restore"),  # the ask() block
    "agents.md": ("exit 4: the policy could not act", "Noted: no sugar",
                  "sdk-runner: create notes/tea.md", "24 ops: move, restore"),
    "cli.md": ("Checkpoint before-refactor saved", "Every op parses",
               "True File created successfully at: notes/plan.md"),
    "in-place.md": ("Re-applied what op", "is session s-3d7682ec", "exit 1: in place there are "
                    "no checkpoints", "Write s-3d7682ec plan.md"),
    "json.md": ('"op_short"', '"session_short"'),
}


def commands(page: Path, python: str) -> list[str]:
    """What a page's blocks run, in order: each line of an ```sh block (comments kept: bash
    ignores them), and each ```python block whole, handed to ``python``."""
    text = page.read_text()
    found = []
    for kind, block in re.findall(r"^```(sh|python)\n(.*?)^```", text, re.M | re.S):
        if kind == "python":
            found.append(f"{python} - <<'PYTHON'\n{block}PYTHON")
            continue
        found += [line for line in block.splitlines()
                  if line.strip() and line.split("#")[0].strip() not in NOT_RUN]
    return found


def environment(home: Path, tmp: Path, path: str) -> dict[str, str]:
    keep = ("LANG", "LC_ALL", "TERM", "http_proxy", "https_proxy", "no_proxy")
    env = {k: v for k, v in os.environ.items() if k in keep or k.startswith("PIP_")}
    env.update(HOME=str(home), PATH=path, GIT_CONFIG_NOSYSTEM="1", TMPDIR=str(tmp),
               GIT_AUTHOR_NAME="Reader", GIT_AUTHOR_EMAIL="reader@example.com",
               GIT_COMMITTER_NAME="Reader", GIT_COMMITTER_EMAIL="reader@example.com")
    return env


def walk(found: list[str], cwd: Path, env: dict[str, str],
         timeout: float) -> subprocess.CompletedProcess[str]:
    script = "\n".join([
        "set -euo pipefail",
        *(f"echo '>>> {_label(c)}'\n{c}" for c in found),
        "echo '>>> where'", "command -v gitspace",
    ])
    return subprocess.run(["bash", "-c", script], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def folders(tmp_path: Path) -> tuple[Path, Path, Path]:
    clone, home, tmp = tmp_path / "gitspace", tmp_path / "home", tmp_path / "tmp"
    for folder in (clone, home, tmp):
        folder.mkdir()
    clean_copy(clone)
    return clone, home, tmp


def test_the_readme_is_a_front_door() -> None:
    lines = (REPO / "README.md").read_text().splitlines()
    assert len(lines) <= README_LINES, f"README.md has {len(lines)} lines; the cap is {README_LINES}"
    linked = set(re.findall(r"\]\((docs/[\w.-]+\.md)", "\n".join(lines)))
    assert linked and all((REPO / page).is_file() for page in linked), linked
    orphans = [p.name for p in DOCS if f"docs/{p.name}" not in linked]
    assert not orphans, f"docs pages the README does not link: {orphans}"


def test_every_readme_block_runs_as_written(tmp_path: Path) -> None:
    found = commands(REPO / "README.md", PYTHON)
    assert found[0].startswith("make demo") and "make install" in found
    assert sum(c.startswith(PYTHON) for c in found) >= 2
    clone, home, tmp = folders(tmp_path)
    env = environment(home, tmp, "/usr/local/bin:/usr/bin:/bin")
    assert shutil.which("gitspace", path=env["PATH"]) is None  # found only where make install puts it
    proc = walk(found, clone, env, timeout=1500)
    transcript = proc.stdout + proc.stderr
    assert proc.returncode == 0, transcript[-6000:]
    assert proc.stdout.strip().splitlines()[-1] == str(home / ".local" / "bin" / "gitspace")
    launcher = home / ".local" / "bin" / "gitspace"
    assert launcher.is_symlink() and ".local/share/gitspace/venv" in os.readlink(launcher)
    _shows(transcript, EXPECTED["README.md"])
    assert re.search(r"^True 4 [0-9A-Z]{26}$", transcript, re.M), transcript[-3000:]
    assert not list(tmp.glob("gitspace-demo-*"))  # make demo leaves no temporary folder behind
    _the_demos_closing_commands_run_as_printed(transcript, clone, env)


@pytest.fixture(scope="module")
def docs_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One virtualenv with gitspace (every extra) for the walks of all the docs pages: what a
    reader who installed gitspace has (built once, not once per page)."""
    root = tmp_path_factory.mktemp("docs-venv")
    source = root / "gitspace"
    source.mkdir()
    clean_copy(source)
    venv = root / "venv"
    env = environment(root, root, "/usr/local/bin:/usr/bin:/bin")
    for argv in ([sys.executable, "-m", "venv", str(venv)],
                 [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", f"{source}[all]"]):
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=1200)
        assert done.returncode == 0, done.stdout + done.stderr
    return venv / "bin"


@pytest.mark.parametrize("page", [p.name for p in DOCS
                                  if commands(p, "python") and p.name not in OWN_WALK])
def test_every_docs_block_runs_as_written(page: str, docs_venv: Path, tmp_path: Path) -> None:
    found = commands(REPO / "docs" / page, "python")
    clone, home, tmp = folders(tmp_path)
    env = environment(home, tmp, f"{docs_venv}:/usr/local/bin:/usr/bin:/bin")
    proc = walk(found, clone, env, timeout=900)
    transcript = proc.stdout + proc.stderr
    assert proc.returncode == 0, transcript[-6000:]
    assert proc.stdout.strip().splitlines()[-1] == str(docs_venv / "gitspace")
    _shows(transcript, EXPECTED.get(page, ()))


def test_every_page_with_blocks_is_walked_and_says_what_it_shows() -> None:
    walked = {p.name for p in DOCS if commands(p, "python")}
    for page, test in OWN_WALK.items():  # walked by a test of its own, which reads that page
        assert page in walked and f'"{page}"' in (REPO / "tests" / test).read_text(), (page, test)
    assert {"agents.md", "cli.md", "in-place.md", "json.md"} <= walked
    assert set(EXPECTED) - {"README.md"} <= walked  # (an expectation for no walk is stale)


def _shows(transcript: str, expected: tuple[str, ...]) -> None:
    for text in expected:
        assert text in transcript, (text, transcript[-3000:])
    assert "Traceback" not in transcript and "gitspace hit a bug" not in transcript


def _label(command: str) -> str:
    """The line the transcript shows before ``command`` (quotes dropped: it is echoed in them)."""
    return command.splitlines()[0].split("#")[0].strip().replace("'", "")


def _the_demos_closing_commands_run_as_printed(transcript: str, clone: Path,
                                               env: dict[str, str]) -> None:
    """``make demo`` ends with commands to try: each runs as printed, where the reader is (its
    gitspace is .venv's: make install comes later). ``gitspace ui`` serves until stopped, so only
    its spelling is checked."""
    demo = transcript.split(">>> make demo\n", 1)[1].split("\n>>> ", 1)[0]
    tail = demo.split("\nInspect it with git:\n", 1)[1]
    shown = [line.strip() for line in tail.splitlines() if line.startswith("  ")]
    ui = [c for c in shown if " ui " in c]
    assert ui == [f".venv/bin/gitspace ui {clone / '.cache' / 'demo'}"], shown
    for command in [c for c in shown if c not in ui]:
        done = subprocess.run(["bash", "-c", command], cwd=clone, env=env, capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0 and done.stdout.strip(), (command, done.stderr)
