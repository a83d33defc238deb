"""Saved sessions drive what a resume, a delegate call and a fork do: they are untrusted input.

A file in ``.gitspace/sessions/`` may come from a clone, a copy or another process. Its fields
name what gitspace then acts on: a delegated child's id names the folder its worktree is removed
from, its branch the ref deleted when it is done, the pending id the child a call resumes. And
``.git/gitspace/delegates/<id>``, where a child's worktree goes, is reachable by any process of
the person's. Each scenario resumes (in a child process that must finish: a fifo never holds it)
and checks that nothing outside changed, no branch moved, and the repository is sound.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from conftest import git, git_run, ops
from hostile import Outside, fifo, gitspace_argv, never_blocks, sealed

import gitspace
from gitspace.agent.model import tool_use_block
from gitspace.agent.session import Session
from gitspace.storage import ledger

# A resume in a process of its own, by a policy that answers with what its calls said.
RESUME = """
import json, sys
import gitspace
from gitspace.agent.loop import Loop
from gitspace.agent.policies.base import Policy

class Quiet(Policy):
    name = "quiet"
    def decide(self, task, seen):
        if task == "Make a file.":
            from gitspace.agent.policies.base import PolicyCall
            return [PolicyCall("create", {"path": "made.txt", "file_text": "m\\n"})] if not seen else "ok"
        return "Seen: " + " | ".join(s.text for s in seen)

with gitspace.open(sys.argv[1], agent="boss") as ws:
    loop = Loop(ws, Quiet())
    out = loop.start(sys.argv[3]) if sys.argv[2] == "-" else loop.resume(sys.argv[2])
print(json.dumps({"status": out.status, "text": out.text, "session": out.session.id}))
"""


def run(root: Path, session_id: str, task: str = "") -> dict[str, str]:
    proc = never_blocks([sys.executable, "-c", RESUME, str(root), session_id, task], root)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def parent_waiting_for(root: Path, child_id: str, task: str = "Help.") -> Session:
    """A run stopped inside its delegate call (the child's id saved in ``pending``), as a
    kill leaves one."""
    tip = git(root, "rev-parse", "main").strip()
    parent = Session.new(root, "Go.", agent="boss", client="quiet", scripted=True)
    parent.messages.append({"role": "assistant", "content": [
        tool_use_block("toolu_p1", "delegate", {"task": task})]})
    parent.next, parent.pending = "tools", {"toolu_p1": child_id}
    parent.client_state = {"notes": {}, "meta": {"n": 1, "asked": [
        ["toolu_p1", "delegate", {"task": task}]]}}  # (the policy's own record of its call)
    parent.branch, parent.base = "main", tip
    parent.save()
    return parent


def child_of(root: Path, parent: Session, child_id: str, **forged: object) -> Path:
    """The child's session file, as the call saved it (status failed: its end removes its
    worktree and branch), with ``forged`` fields put into it afterwards."""
    child = Session.new(root, "Help.", agent="boss", client="quiet", scripted=True,
                        session_id=child_id)
    child.status, child.branch, child.base = "failed", f"delegate/{child_id}", parent.base
    child.parent_session, child.parent_tool_use_id, child.depth = parent.id, "toolu_p1", 1
    child.save()
    first, *rest = child.path.read_text().splitlines(keepends=True)
    head = json.loads(first)
    head["state"].update(forged)
    child.path.write_text(json.dumps(head) + "\n" + "".join(rest))
    return child.path


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    gitspace.init(root, agent="boss").close()
    (root / ".git" / "gitspace" / "delegates").mkdir()  # (an earlier call made it)
    return root


@pytest.mark.parametrize("forged", ["id", "branch", "pending"])
def test_a_forged_child_session_never_removes_a_folder_or_a_branch(
        root: Path, tmp_path: Path, forged: str) -> None:
    """The child's id read back from its file named the worktree folder its end removed
    (``../../../../outside``: a folder beside the workspace, removed whole), its branch the ref
    deleted (``main``: the checked-out branch, gone); a parent's pending id that is no session
    id named the child. Each is refused: the call fails, and nothing is removed."""
    outside = Outside(tmp_path / "outside")
    tip = git(root, "rev-parse", "main").strip()
    child_id = ledger.new_op_id()
    if forged == "pending":
        parent = parent_waiting_for(root, "a/../../../../outside")
    else:
        parent = parent_waiting_for(root, child_id)
        child_of(root, parent, child_id, **(
            {"id": "../../../../outside"} if forged == "id" else {"branch": "main"}))
    with sealed(root, outside):
        out = run(root, parent.id)
    assert out["status"] == "no_action", out  # its one call failed
    assert "could not run" in out["text"], out["text"]
    assert git(root, "for-each-ref", "--format=%(refname) %(objectname)").split() == [
        "refs/heads/main", tip]
    assert git(root, "worktree", "list", "--porcelain").count("worktree ") == 1


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "link-outside"])
def test_a_childs_session_file_that_is_no_regular_file_is_refused_without_blocking(
        root: Path, tmp_path: Path, kind: str) -> None:
    """Where the child's session file should be stands a fifo, a link to ``/dev/zero`` or to a
    file outside: the call is refused unread (a fifo never blocks it), and the thing standing
    there is neither replaced by a fresh child's file nor written through."""
    outside = Outside(tmp_path / "outside")
    child_id = ledger.new_op_id()
    parent = parent_waiting_for(root, child_id)
    path = child_of(root, parent, child_id)
    path.unlink()
    if kind == "fifo":
        fifo(path)
    else:
        path.symlink_to("/dev/zero" if kind == "dev-zero" else outside.path / "victim.txt")
    before = os.lstat(path)
    with sealed(root, outside):
        out = run(root, parent.id)
    assert out["status"] == "no_action" and "could not run" in out["text"], out
    after = os.lstat(path)
    assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode)
    assert git(root, "branch", "--format=%(refname:short)").split() == ["main"]


@pytest.mark.parametrize("kind", ["a-worktree-of-yours", "an-empty-folder"])
def test_a_link_planted_at_a_childs_worktree_folder_is_never_followed(
        root: Path, tmp_path: Path, kind: str) -> None:
    """``.git/gitspace/delegates/<child id>`` planted as a link: ``git worktree remove --force``
    through it removed the linked worktree it names, untracked files and all, and ``git worktree
    add`` through a link to an empty folder checks out there. The call is refused instead, and
    the link and what it names stay as they were."""
    outside = Outside(tmp_path / "outside")
    if kind == "a-worktree-of-yours":
        git(root, "worktree", "add", "-q", "-b", "mine", str(outside.path / "mine"))
        (outside.path / "mine" / "draft.txt").write_text("not committed yet\n")
        named = outside.path / "mine"
    else:
        named = outside.path / "empty"
        named.mkdir()
    outside.settled()
    listed = git(root, "worktree", "list", "--porcelain")
    child_id = ledger.new_op_id()
    parent = parent_waiting_for(root, child_id)
    planted = root / ".git" / "gitspace" / "delegates" / child_id
    planted.symlink_to(named)
    with sealed(root, outside):
        out = run(root, parent.id)
    assert out["status"] == "no_action" and "could not run" in out["text"], out
    assert "not a folder (a link or a file stands there)" in out["text"], out["text"]
    assert planted.is_symlink() and os.readlink(planted) == str(named)
    assert git(root, "worktree", "list", "--porcelain") == listed
    assert git(root, "branch", "--format=%(refname:short)").split() == (
        ["main", "mine"] if kind == "a-worktree-of-yours" else ["main"])


@pytest.mark.parametrize("forged", ["conversation", "fifo", "session-id"])
def test_a_fork_from_a_forged_op_or_session_is_refused_changing_nothing(
        root: Path, tmp_path: Path, forged: str) -> None:
    """``gitspace run --fork OP``: the op's conversation is read from the session file its commit
    names. A file whose messages no model wrote (a crash, exit 3, before), a fifo there, or an op
    whose commit names a session id with ``..`` in it: exit 1 with a hint, no branch made."""
    outside = Outside(tmp_path / "outside")
    made = run(root, "-", "Make a file.")
    [op] = [op for op in ops(root) if op.tool == "create"]
    path = Session.load(root, made["session"]).path
    if forged == "conversation":
        with path.open("a") as log:  # one more save, adding a message that is no object
            log.write(json.dumps({"add": [7]}) + "\n")
    elif forged == "fifo":
        path.unlink()
        fifo(path)
    else:  # the op's commit rewritten to name another session, by a path up and out
        message = git(root, "log", "-1", "--format=%B", "main").replace(
            f"Gitspace-Session: {made['session']}", "Gitspace-Session: x/../../../../outside/s")
        tree, parent = (git(root, "rev-parse", f"main^{{{k}}}").strip() for k in ("tree", "commit"))
        grand = git(root, "rev-parse", "main~1").strip()
        forged_commit = git(root, "commit-tree", tree, "-p", grand, input=message.encode()).strip()
        git(root, "update-ref", "refs/heads/main", forged_commit, parent)
    tip = git(root, "rev-parse", "main").strip()
    with sealed(root, outside):
        proc = never_blocks(gitspace_argv(root, "run", "--fork", op.op_id, "Go on.",
                                          "--policy", "maze"), root)
    assert proc.returncode == 1, (proc.returncode, proc.stdout, proc.stderr)
    assert "Traceback" not in proc.stderr and "hint" in proc.stderr.lower(), proc.stderr
    assert git(root, "branch", "--format=%(refname:short)").split() == ["main"]
    assert git(root, "rev-parse", "main").strip() == tip


def test_a_sessions_folder_linked_outside_lists_nothing_of_what_it_names(
        root: Path, tmp_path: Path) -> None:
    """``.gitspace/sessions`` planted as a link to a folder outside: the listing named that
    folder's files as damaged sessions (``gitspace sessions``, the web view), telling their
    names. It lists none of them; nothing is read or written through the link."""
    outside = Outside(tmp_path / "outside", {"payroll-2024.json": "{}\n"})
    (root / ".gitspace").mkdir()
    (root / ".gitspace" / "sessions").symlink_to(outside.path)
    with sealed(root, outside):
        proc = never_blocks(gitspace_argv(root, "sessions", "--json"), root)
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout) == [] and "payroll" not in proc.stdout + proc.stderr


def test_what_a_crash_or_another_process_left_in_a_childs_worktree_is_never_trusted(
        root: Path, tmp_path: Path) -> None:
    """A folder found at ``.git/gitspace/delegates/<child id>`` holds a file nobody made and a
    ``.git`` file naming another repository (a worktree of the person's elsewhere). The resumed
    call makes the worktree afresh from the child's branch: the child's op records only its own
    file, nothing reaches the named repository, and the folder is gone when the child ends."""
    outside = Outside(tmp_path / "outside")
    other = outside.path / "other"
    git(outside.path, "init", "-q", str(other))
    (other / "draft.txt").write_text("not committed yet\n")
    outside.settled()
    child_id = ledger.new_op_id()
    parent = parent_waiting_for(root, child_id, "Make a file.")
    left = root / ".git" / "gitspace" / "delegates" / child_id
    left.mkdir()
    (left / "planted.txt").write_text("nobody made this\n")
    (left / ".git").write_text(f"gitdir: {other / '.git'}\n")
    with sealed(root, outside):
        out = run(root, parent.id)
    assert out["status"] in ("done", "no_action"), out
    branch = f"delegate/{child_id}"
    assert [op.tool for op in ops(root, f"refs/heads/{branch}")][-1:] == ["create"]
    assert git(root, "diff", "--name-only", "main", branch).split() == ["made.txt"]
    assert "planted.txt" not in git(root, "ls-tree", "-r", "--name-only", branch)
    assert not left.exists()
    assert git_run(other, "rev-parse", "--verify", "-q", "HEAD").returncode != 0  # no commit
