"""harness/inplace/takeback.py: undo and rewind in a person's own checkout, through the one writer.

The line's move and the files it writes are one change of the checkout's writer: a process
killed (kill -9) after the line moved and one file was written leaves the writer's journal, and
the next hook call finishes the rewind from it before it records anything, so the half that was
not written is never taken for an edit of the person's. A failure instead (a write refused)
puts back the file written and the line, and changes nothing of the person's.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import git
from hookcalls import LINE, PROGRAM, call, line_ops, own_repo, payload, run_hook, write
from user_repo import fsck, users_own

from gitspace import faults
from gitspace.errors import WriteFailed
from gitspace.harness import install
from gitspace.harness.events import Options
from gitspace.harness.inplace import commands
from gitspace.storage.gitrepo import GitRepo

KILLED_REWIND = textwrap.dedent("""
    import os, sys
    from pathlib import Path
    from gitspace import faults
    from gitspace.harness.events import Options
    from gitspace.harness.inplace import commands
    from gitspace.storage.gitrepo import GitRepo
    with faults.inject("file.replace", lambda: os._exit(9), after=1):
        commands.rewind(GitRepo.open(Path(sys.argv[1])), "1", False, Options())
""")


@pytest.fixture
def user(tmp_path: Path) -> Path:
    """A person's checkout where turn 1 wrote a.txt and b.txt, and turn 2 changed both."""
    root = own_repo(tmp_path / "repo")
    install.install("claude-code", None, root, tmp_path / "home", PROGRAM)
    for turn, text in ((1, "turn 1\n"), (2, "turn 2\n")):
        run_hook(payload(root, "UserPromptSubmit"))
        for rel in ("a.txt", "b.txt"):
            call(root, "Write", {"file_path": str(root / rel), "content": text},
                 f"toolu_{turn}{rel[0]}", write(root, rel, text))
        assert run_hook(payload(root, "Stop"))[0] == 0
    return root


def _texts(root: Path) -> tuple[str, str]:
    return (root / "a.txt").read_text(), (root / "b.txt").read_text()


def test_a_rewind_killed_midway_is_finished_by_the_next_call(user: Path) -> None:
    before = users_own(user)
    tip = git(user, "rev-parse", LINE).strip()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT")}
    proc = subprocess.run([sys.executable, "-c", KILLED_REWIND, str(user)], env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 9, proc.stdout + proc.stderr
    assert (user / ".git" / "gitspace" / "journal.json").exists()
    assert _texts(user) == ("turn 1\n", "turn 2\n")  # killed after its first file
    rewound = git(user, "rev-parse", LINE).strip()
    assert rewound != tip

    call(user, "Bash", {"command": "true"}, "toolu_next")  # any call: it takes the lock first
    assert _texts(user) == ("turn 1\n", "turn 1\n")
    assert not (user / ".git" / "gitspace" / "journal.json").exists()
    assert git(user, "rev-parse", LINE).strip() == rewound  # nothing of b.txt was the person's
    assert (line_ops(user)[0].tool, line_ops(user)[0].source) == ("rewind", "tool")
    after = users_own(user)
    for key in ("HEAD", "refs", "index", "index stat", "stash", "tags"):
        assert after[key] == before[key], key
    fsck(user)


def test_a_rewind_whose_second_file_fails_changes_nothing(user: Path) -> None:
    before = users_own(user)
    tip = git(user, "rev-parse", LINE).strip()
    with faults.inject("file.write", errno.ENOSPC, after=1), pytest.raises(WriteFailed):
        commands.rewind(GitRepo.open(user), "1", False, Options())
    assert _texts(user) == ("turn 2\n", "turn 2\n")
    assert git(user, "rev-parse", LINE).strip() == tip
    assert not (user / ".git" / "gitspace" / "journal.json").exists()
    after = users_own(user)
    for key in ("HEAD", "refs", "index", "index stat", "stash", "tags"):
        assert after[key] == before[key], key
    taken = commands.rewind(GitRepo.open(user), "1", False, Options())  # and then it works
    assert sorted(taken.files) == ["a.txt", "b.txt"] and _texts(user) == ("turn 1\n", "turn 1\n")
