"""Recording in a person's own checkout keeps git's own rules (#35): what a session id, a branch
rename, an undo walk and a sparse checkout could break.

- A turn mark is made from a session id anyone chose: a name with ``..``, ``.lock`` or path
  characters still makes a ref git accepts (``git fsck --strict`` and ``git gc`` stay happy).
- A line follows its branch through ``git branch -m`` (also to a name one folder deeper, which
  git cannot do in one ref transaction), and a line of a deleted branch never blocks a new one.
- ``undo`` and ``rewind`` never cross the line's start into the person's own history, even when
  that history holds commits that read as a harness's ops.
- A sparse checkout's skip-worktree files are what git says they are: absent on purpose, never
  recorded as deleted, never written by a rewind.

Each scenario ends with ``git fsck --strict``, the person's index and HEAD as they were, and
nothing outside the checkout changed (the module's neighbour folder).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import git, git_run, ops
from hookcalls import payload, run_hook, write
from user_repo import fsck, gs, make_user_repo

from gitspace.core.identity import Identity
from gitspace.harness import install
from gitspace.storage import ledger

PROGRAM = f"{sys.executable} -m gitspace"
OP = "01JF3Q7Z0A8K3M2N4P5R6S7T8V"  # a commit of the person's that reads as an op


@pytest.fixture
def person(tmp_path: Path) -> Path:
    root = make_user_repo(tmp_path / "repo")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "everything in")
    install.install("claude-code", None, root, tmp_path / "home", PROGRAM)
    return root


def _call(root: Path, rel: str, text: str, use_id: str, session: str | None = None) -> None:
    extra: dict[str, Any] = {"session_id": session} if session else {}
    args = {"file_path": str(root / rel), "content": text}
    for event in ("PreToolUse", "PostToolUse"):
        if event == "PostToolUse":
            write(root, rel, text)()
        code, err = run_hook(payload(root, event, "Write", args, use_id, **extra))
        assert code == 0 and "gitspace:" not in err, err


def _ops(root: Path, ref: str) -> list[Any]:
    return [op for op in ops(root, ref) if op.source == "harness"]


def _refs(root: Path, prefix: str = "refs/gitspace/") -> list[str]:
    return git(root, "for-each-ref", "--format=%(refname)", prefix).split()


@pytest.mark.parametrize("session", ["../../x..y.lock", "a..b", ".hidden", "@{x}", "s/../..",
                                     "x.lock", "-rf"])
def test_a_hostile_session_id_makes_refs_git_accepts(person: Path, session: str) -> None:
    run_hook(payload(person, "UserPromptSubmit", session_id=session))
    _call(person, "a.txt", "a\n", "toolu_1", session)
    code, err = run_hook(payload(person, "Stop", session_id=session))
    assert code == 0 and "gitspace:" not in err, err
    marks = _refs(person, "refs/gitspace/turns/")
    assert len(marks) == 1
    for ref in marks:
        assert git_run(person, "check-ref-format", ref).returncode == 0, ref
    fsck(person)
    assert git_run(person, "gc", "-q").returncode == 0
    fsck(person)


def test_the_line_follows_a_rename_one_folder_deeper(person: Path) -> None:
    git(person, "checkout", "-qb", "feature")
    _call(person, "a.txt", "a\n", "toolu_1")
    assert [op.tool_use_id for op in _ops(person, "refs/gitspace/lines/feature")] == ["toolu_1"]
    git(person, "branch", "-m", "feature", "feature/x")  # git's own rename: lines/feature is in
    _call(person, "b.txt", "b\n", "toolu_2")            # the way of lines/feature/x
    line = "refs/gitspace/lines/feature/x"
    assert [op.tool_use_id for op in _ops(person, line)] == ["toolu_1", "toolu_2"]
    assert "refs/gitspace/lines/feature" not in _refs(person)
    assert [op.tool for op in ops(person, line)].count("follow") == 1  # the line's start only
    git(person, "branch", "-m", "feature/x", "y")  # and back out of the folder
    _call(person, "c.txt", "c\n", "toolu_3")
    assert [op.tool_use_id for op in _ops(person, "refs/gitspace/lines/y")] == [
        "toolu_1", "toolu_2", "toolu_3"]
    assert not [r for r in _refs(person) if "/moving/" in r]
    fsck(person)


def test_a_line_of_a_deleted_branch_never_blocks_a_new_one(person: Path) -> None:
    git(person, "checkout", "-qb", "feature")
    _call(person, "a.txt", "a\n", "toolu_1")
    old_tip = git(person, "rev-parse", "refs/gitspace/lines/feature").strip()
    git(person, "checkout", "-q", "main")
    _call(person, "m.txt", "m\n", "toolu_m")
    git(person, "branch", "-D", "-q", "feature")
    git(person, "checkout", "-qb", "feature/x")
    _call(person, "b.txt", "b\n", "toolu_2")
    assert [op.tool_use_id for op in _ops(person, "refs/gitspace/lines/feature/x")] == ["toolu_2"]
    assert git(person, "rev-parse", f"refs/gitspace/gone/{old_tip}").strip() == old_tip
    log = gs(person, "log", "--all", "--format", "{tool_use_id}")
    assert "toolu_1" in log.stdout, log.stdout + log.stderr  # its ops are kept, and listed
    fsck(person)


def _persons_commit_that_reads_as_an_op(root: Path) -> str:
    """A commit of the person's whose message carries a harness op's trailers (a squash of a
    workspace's branch, a copied message): it is theirs, not the agent's."""
    (root / "theirs.txt").write_text("the person's own change\n")
    git(root, "add", "theirs.txt")
    op = Identity("Write", op_id=OP, agent="claude-code", source="harness",
                  tool_use_id="toolu_9").op({"file_path": "theirs.txt"}, paths=("theirs.txt",),
                                             path_count=1)
    message = ledger.encode_message(op, "Write theirs.txt", "")
    assert ledger.parse_message(message) is not None
    git(root, "commit", "-q", "-m", message)
    return git(root, "rev-parse", "HEAD").strip()


def test_undo_never_crosses_the_lines_start(person: Path) -> None:
    mine = _persons_commit_that_reads_as_an_op(person)
    _call(person, "a.txt", "a\n", "toolu_1")
    head, index = git(person, "rev-parse", "HEAD"), (person / ".git" / "index").read_bytes()
    first = gs(person, "undo")
    assert first.returncode == 0 and not (person / "a.txt").exists(), first.stderr
    second = gs(person, "undo")
    assert second.returncode == 1 and "no op" in second.stderr, second.stdout + second.stderr
    assert (person / "theirs.txt").read_text() == "the person's own change\n"
    refused = gs(person, "undo", "--op", OP)
    assert refused.returncode == 1 and "not on this checkout's line" in refused.stderr, \
        refused.stdout + refused.stderr
    rewound = gs(person, "rewind", mine[:12])
    assert rewound.returncode == 1 and "not on the line" in rewound.stderr, rewound.stderr
    assert (person / "theirs.txt").exists()
    assert git(person, "rev-parse", "HEAD") == head
    assert (person / ".git" / "index").read_bytes() == index
    fsck(person)


def test_a_sparse_checkouts_files_are_absent_on_purpose(person: Path, tmp_path: Path) -> None:
    upstream = tmp_path / "upstream"
    git(tmp_path, "clone", "-q", str(person), str(upstream))
    (upstream / "far").mkdir()
    (upstream / "far" / "x.txt").write_text("far away\n")
    git(upstream, "add", "far")
    git(upstream, "commit", "-qm", "far/x")
    git(person, "pull", "-q", "--no-rebase", str(upstream), "main")
    git(person, "sparse-checkout", "set", "--no-cone", "/*", "!/far/")
    assert not (person / "far").exists()
    _call(person, "a.txt", "a\n", "toolu_1")
    (upstream / "far" / "x.txt").write_text("changed upstream\n")
    git(upstream, "commit", "-qam", "far/x again")
    git(person, "pull", "-q", "--no-rebase", str(upstream), "main")
    assert not (person / "far").exists()
    _call(person, "b.txt", "b\n", "toolu_2")
    code, err = run_hook(payload(person, "Stop"))
    deleted = [op for op in ops(person, "refs/gitspace/lines/main")
               if "far/x.txt" in (op.args.get("paths") or ()) and op.tool != "follow"]
    assert deleted == [], [(op.tool, op.args) for op in deleted]
    tree = git(person, "ls-tree", "-r", "--name-only", "refs/gitspace/lines/main")
    assert "far/x.txt" in tree.split()  # the line holds it, as the person's commit does
    first = next(op for op in ops(person, "refs/gitspace/lines/main") if op.tool_use_id == "toolu_1")
    rewound = gs(person, "rewind", first.op_id, "--all")  # far/x.txt differed then
    assert rewound.returncode == 0, rewound.stderr
    assert "sparse checkout leaves out (far/x.txt)" in rewound.stdout + rewound.stderr
    assert not (person / "far").exists(), "a rewind wrote outside the sparse checkout"
    status = json.loads(gs(person, "status", "--json").stdout)
    assert "far/x.txt" not in status.get("pending", [])
    fsck(person)


def test_two_harnesses_recording_at_once_keep_their_own_calls(person: Path,
                                                               tmp_path: Path) -> None:
    """Claude Code and Codex in one checkout at the same time: each call is one op of its own
    harness; a shell command of one never claims a file the other's file tool is writing."""
    import io

    from gitspace.harness import hook

    install.install("codex", None, person, tmp_path / "home", PROGRAM)

    def codex(event: str, **extra: Any) -> None:
        body = {"session_id": "codex-1", "cwd": str(person), "turn_id": "t-1",
                "hook_event_name": event, "model": "m", "permission_mode": "default", **extra}
        err = io.StringIO()
        assert hook.main(["hook", "codex", "--quiet-outside"], stdin=io.BytesIO(
            json.dumps(body).encode()), stdout=io.StringIO(), stderr=err) == 0
        assert "gitspace:" not in err.getvalue(), err.getvalue()

    bash = {"tool_name": "Bash", "tool_input": {"command": "echo c > c.txt"},
            "tool_use_id": "call_1"}
    a = {"file_path": str(person / "a.txt"), "content": "a\n"}
    run_hook(payload(person, "PreToolUse", "Write", a, "toolu_1"))
    codex("PreToolUse", **bash)
    write(person, "c.txt", "c\n")()
    write(person, "a.txt", "a\n")()
    codex("PostToolUse", **bash, tool_response="")
    run_hook(payload(person, "PostToolUse", "Write", a, "toolu_1"))
    calls = [(op.agent, op.tool, op.paths) for op in _ops(person, "refs/gitspace/lines/main")]
    assert calls == [("codex", "Bash", ("c.txt",)), ("claude-code", "Write", ("a.txt",))]
    fsck(person)


def test_the_persons_reset_and_rebase_under_a_line_lose_no_call_and_move_nothing(
        person: Path) -> None:
    # The person rewrites their history under a line with the agent's calls on it: a reset
    # drops their commit the line followed, a rebase replays the rest onto a new base.
    (person / "mine.txt").write_text("mine\n")
    git(person, "add", "mine.txt")
    git(person, "commit", "-qm", "mine")
    _call(person, "a.txt", "a\n", "toolu_1")
    git(person, "reset", "-q", "--hard", "HEAD~1")  # (a.txt is untracked: reset keeps it)
    _call(person, "b.txt", "b\n", "toolu_2")
    git(person, "checkout", "-qb", "side")
    (person / "side.txt").write_text("side\n")
    git(person, "add", "side.txt")
    git(person, "commit", "-qm", "side")
    git(person, "checkout", "-q", "main")
    (person / "base.txt").write_text("base\n")
    git(person, "add", "base.txt")
    git(person, "commit", "-qm", "new base")
    git(person, "checkout", "-q", "side")
    _call(person, "c.txt", "c\n", "toolu_3")
    git(person, "rebase", "-q", "main")
    _call(person, "d.txt", "d\n", "toolu_4")
    head, index = git(person, "rev-parse", "HEAD"), (person / ".git" / "index").read_bytes()
    everywhere = {op.tool_use_id for ref in _refs(person, "refs/gitspace/lines/")
                  for op in _ops(person, ref)}
    assert {"toolu_1", "toolu_2", "toolu_3", "toolu_4"} <= everywhere, everywhere
    # The undo takes back the newest call in the work tree only, on the rebased branch's line.
    undone = gs(person, "undo")
    assert undone.returncode == 0 and not (person / "d.txt").exists(), undone.stderr
    assert (person / "c.txt").read_text() == "c\n"
    assert git(person, "rev-parse", "HEAD") == head
    assert (person / ".git" / "index").read_bytes() == index
    assert git(person, "log", "--format=%s", "-2").split() == ["side", "new", "base"]  # theirs
    fsck(person)
