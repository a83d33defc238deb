"""One call fails, the op notices: every fault point (``gitspace.faults``), failing with each of
ENOSPC, EACCES, EIO, an interrupted call (EINTR) and Ctrl-C, in every op that reaches it: the
tools (branch and switch, restore, undo, redo among them), snapshot, a harness's recorded call,
record_paths, sync, pull, attach, merge, a delegated child's join, and in a person's own
checkout a call recorded in place, undo in place and gc: every path through the one writer
(``core/writer.py``). (``run --fork`` makes its branch with the branch tool's change; replay's
scratch is tests/replay/test_scratch.py's.)

Each case starts from a copy of one prepared workspace and checks that the op fails with an
expected error (WriteFailed, whose sentence says nothing was changed and whose hint fits the
errno; Ctrl-C propagates as KeyboardInterrupt) and leaves the refs, HEAD, the index (byte for
byte) and the files (content, mode, links, folders) exactly as before, with no tmp file, lock
file or journal left and ``git fsck --strict`` clean. The same op then succeeds unarmed.

Which points an op reaches is pinned in ``REACHES`` and checked by an unarmed run, so a point that
stops being reached (or a new one) shows up as a failure, never as a silently empty case.
"""

from __future__ import annotations

import errno
import os
import resource
import shutil
import stat
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import call_ok, git, git_env, git_run, write_script

import gitspace
from gitspace import faults
from gitspace.core import branches, writer
from gitspace.errors import GitspaceError, WriteFailed, system_hint
from gitspace.storage import gitindex

ERRORS: dict[str, int | BaseException] = {
    "ENOSPC": errno.ENOSPC,
    "EACCES": errno.EACCES,
    "EIO": errno.EIO,
    "EINTR": errno.EINTR,  # an interrupted system call: InterruptedError
    "Ctrl-C": KeyboardInterrupt(),
}


# -- the prepared workspace ------------------------------------------------------------------


STAMP = """\
printf 'stamped\\n' > stamped.txt
mkdir -p out && printf 'one\\n' > out/one.txt && printf 'two\\n' > out/two.txt
"""


def _prepare(root: Path) -> None:
    """Files of every kind, a checkpoint whose tree differs from the tip in every way, a second
    branch, a mutating workspace script, and an op to undo."""
    with gitspace.init(root, agent="tester") as ws:
        call_ok(ws, "create", {"path": "a.txt", "file_text": "alpha\n"})
        call_ok(ws, "create", {"path": "d/e/deep.txt", "file_text": "deep\n"})
        (root / "run.sh").write_text("#!/bin/sh\necho hi\n")
        (root / "run.sh").chmod(0o755)
        (root / "link").symlink_to("a.txt")
        write_script(root / "constraints", "stamp", True, STAMP)
        assert ws.snapshot().ok
        call_ok(ws, "checkpoint", {"name": "cp"})
        call_ok(ws, "branch", {"name": "other", "switch": False})
        call_ok(ws, "str_replace", {"path": "a.txt", "old_str": "alpha", "new_str": "ALPHA"})
        (root / "run.sh").unlink()
        (root / "link").unlink()  # no tool deletes a link: an outside change
        assert ws.snapshot().ok
        call_ok(ws, "create", {"path": "n/new.txt", "file_text": "new\n"})
        call_ok(ws, "create", {"path": "b.txt", "file_text": "bee\n"})
        git(root, "update-ref", "refs/heads/other", "refs/tags/gitspace/cp^{commit}")
    _remote_ahead(root)


REMOTE = Path(".git") / "remote.git"  # inside .git: copied with the workspace, never a file of it


def _remote_ahead(root: Path) -> None:
    """A bare remote holding everything here, plus one commit on main that changes, adds and
    removes files: what a sync or a pull brings in."""
    git(root.parent, "clone", "--quiet", "--bare", str(root), str(root / REMOTE))
    other = root.parent / "other-clone"
    git(root.parent, "clone", "--quiet", str(root / REMOTE), str(other))
    (other / "b.txt").write_text("bee, from the remote\n")
    (other / "theirs").mkdir()
    (other / "theirs" / "new.txt").write_text("theirs\n")
    (other / "n" / "new.txt").unlink()
    git(other, "add", "-A")
    git(other, "commit", "--quiet", "-m", "the remote's own work")
    git(other, "push", "--quiet", "origin", "main")
    shutil.rmtree(other)


@pytest.fixture(scope="module")
def prepared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("faults-home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HOME", str(home))
        mp.setenv("GIT_CONFIG_GLOBAL", "/dev/null")
        mp.setenv("GIT_CONFIG_NOSYSTEM", "1")
        mp.setenv("GITSPACE_PACK_THRESHOLD", "0")
        root = tmp_path_factory.mktemp("faults-template") / "ws"
        _prepare(root)
        shutil.rmtree(root / ".git" / "hooks")  # never run, and not worth copying 634 times
        yield root


@pytest.fixture
def copy(prepared: Path, tmp_path: Path) -> Path:
    """A copy of the prepared workspace; loose objects are immutable, so they are hard links."""
    root = tmp_path / "ws"
    objects = prepared / ".git" / "objects"

    def link_objects(src: str, dst: str) -> object:
        if Path(src).parent.parent == objects:
            return os.link(src, dst)
        return shutil.copy2(src, dst)

    shutil.copytree(prepared, root, symlinks=True, copy_function=link_objects)
    return root


# -- what "exactly as before" means ----------------------------------------------------------


def leftovers(root: Path) -> list[str]:
    """Tmp files, lock files and journals anywhere in the repository or the work tree."""
    found = []
    for folder, _, names in os.walk(root):
        for name in names:
            if (name.endswith(".lock") or name.startswith(("tmp_obj_", ".gitspace-"))
                    or name in ("journal.json", "journal.tmp")):
                found.append(os.path.relpath(os.path.join(folder, name), root))
    return found


def work_tree(root: Path) -> dict[str, object]:
    """Every folder, file (bytes and mode) and link (target) outside .git."""
    seen: dict[str, object] = {}
    for folder, dirs, names in os.walk(root):
        if Path(folder) == root:
            dirs.remove(".git")
        for name in dirs:
            seen[os.path.relpath(os.path.join(folder, name), root) + "/"] = "folder"
        for name in names:
            path = Path(folder, name)
            rel = os.path.relpath(path, root)
            if path.is_symlink():
                seen[rel] = ("link", os.readlink(path))
            else:
                seen[rel] = (oct(path.stat().st_mode), path.read_bytes())
    return seen


def everything(root: Path) -> dict[str, object]:
    return {
        "refs": git(root, "for-each-ref", "--format=%(refname) %(objectname)"),
        "HEAD": (root / ".git" / "HEAD").read_text(),
        "index": (root / ".git" / "index").read_bytes(),
        "files": work_tree(root),
    }


def assert_as_before(root: Path, before: dict[str, object]) -> None:
    after = everything(root)
    for key in before:
        assert after[key] == before[key], f"the {key} changed"
    assert not leftovers(root), f"left behind: {leftovers(root)}"
    fsck = git_run(root, "fsck", "--strict", "--no-progress", "--no-dangling")
    assert fsck.returncode == 0, fsck.stdout.decode() + fsck.stderr.decode()


# -- the ops ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Op:
    """An op to break: ``setup`` runs unarmed first; ``act`` is the op (raises or returns a
    Result); ``reaches`` is every point it hits, with how many times."""

    setup: Callable[[gitspace.Workspace], Any]
    act: Callable[[gitspace.Workspace], Any]
    reaches: dict[str, int]


def _nothing(ws: gitspace.Workspace) -> None:
    return None


def _call(tool: str, args: dict[str, Any]) -> Callable[[gitspace.Workspace], Any]:
    return lambda ws: ws.call(tool, args)


def _outside_edit(ws: gitspace.Workspace) -> None:
    (ws.root / "a.txt").write_text("ALPHA\nfrom outside\n")


def _undo_first(ws: gitspace.Workspace) -> None:
    call_ok(ws, "undo", {})


@dataclass(frozen=True)
class _Done:
    """The answer of a path that returns no Result: whether it recorded something."""

    ok: bool
    text: str = ""
    error: BaseException | None = None


def _with_remote(ws: gitspace.Workspace) -> None:
    git(ws.root, "remote", "add", "origin", str(ws.root / REMOTE))


def _record(ws: gitspace.Workspace) -> _Done:
    """A harness's Write of a.txt (made by ``_outside_edit``), recorded by the hook's own code."""
    from gitspace.harness import route
    from gitspace.harness.events import Call, Event, Options

    path = str(ws.root / "a.txt")
    done = route.handle(Event("after", "claude-code", cwd=str(ws.root), session="s1",
                               call=Call("Write", {"file_path": path}, (path,), "toolu_1")),
                         ws.root, Options())
    return _Done(bool(done.ops), " ".join(done.notes))


def _record_paths(ws: gitspace.Workspace) -> _Done:
    from gitspace.core.snapshot import record_paths

    return _Done(record_paths(ws, ["a.txt"], "Recorded by the test.") is not None)


def _sync(ws: gitspace.Workspace) -> _Done:
    from gitspace.team.sync import sync

    done = sync(ws, "origin")
    return _Done(done.tip == git(ws.root, "rev-parse", "refs/remotes/origin/main").strip())


def _attach(ws: gitspace.Workspace) -> _Done:
    from gitspace.team.attach import attach

    return _Done(attach(ws.root, "bob").branch == "agent/bob")


def _agent_worked(ws: gitspace.Workspace) -> None:
    """Agent bob attached, with one op of his on agent/bob."""
    from gitspace.team.attach import attach

    bob = attach(ws.root, "bob").path
    with gitspace.open(bob, agent="bob") as theirs:
        call_ok(theirs, "create", {"path": "bob.txt", "file_text": "by bob\n"})


def _merge(ws: gitspace.Workspace) -> _Done:
    """bob's work merged into ``other``, a branch checked out nowhere: a ref move alone."""
    from gitspace.team.merge import merge

    return _Done(merge(ws.root, "bob", into="other").commit is not None)


def _pull(ws: gitspace.Workspace) -> _Done:
    from gitspace.team.remote import pull

    done = pull(ws, "origin")
    return _Done(bool(done.moved), " ".join(done.notes))


def _in_place(ws: gitspace.Workspace, kind: str = "scan", **fields: Any) -> Any:
    """One hook event recorded in place (``harness/inplace/place.py``: the place of a person's
    own checkout, here the workspace itself), by Claude Code."""
    from gitspace.harness import route
    from gitspace.harness.events import Event, Options
    from gitspace.storage.gitrepo import GitRepo

    return route.record_in(route.IN_PLACE, GitRepo.open(ws.root), Event(
        kind, "claude-code", cwd=str(ws.root), session="s1", **fields), Options())


def _write_call(ws: gitspace.Workspace, use_id: str) -> Any:
    from gitspace.harness.events import Call

    path = str(ws.root / "a.txt")
    return Call("Write", {"file_path": path}, (path,), use_id)


def _line_started(ws: gitspace.Workspace) -> None:
    """A line recorded in place, then an outside edit of a.txt for its next call to claim."""
    _in_place(ws)
    _outside_edit(ws)


def _record_in_place(ws: gitspace.Workspace) -> _Done:
    return _Done(bool(_in_place(ws, "after", call=_write_call(ws, "toolu_1")).ops))


def _agent_wrote_in_place(ws: gitspace.Workspace) -> None:
    _line_started(ws)
    assert _record_in_place(ws).ok


def _undo_in_place(ws: gitspace.Workspace) -> _Done:
    """``gitspace undo --op`` in a person's checkout: the line's move and a.txt, one change."""
    from gitspace.harness.events import Options
    from gitspace.harness.inplace import commands, takeback
    from gitspace.storage.gitrepo import GitRepo

    repo = GitRepo.open(ws.root)
    taken = commands.undo_op(repo, takeback.latest_agent_op(repo), Options())
    return _Done(taken.files == ["a.txt"])


def _agent_wrote_twice_in_place(ws: gitspace.Workspace) -> None:
    _agent_wrote_in_place(ws)
    (ws.root / "a.txt").write_text("ALPHA\nthe agent's second write\n")
    assert _in_place(ws, "after", call=_write_call(ws, "toolu_2")).ops


def _fork_in_place(ws: gitspace.Workspace) -> _Done:
    """``gitspace fork`` in a person's checkout, at the first Write: the second taken back, the
    line's move and a.txt in one change (harness/inplace/fork.py)."""
    from gitspace.core.linerefs import LINES
    from gitspace.harness import route
    from gitspace.harness.events import Event, Options
    from gitspace.harness.inplace import fork
    from gitspace.storage.gitrepo import GitRepo

    repo = GitRepo.open(ws.root)
    first = next(c for c in repo.log(LINES + "main")
                 if "Gitspace-Tool-Use-Id: toolu_1" in c.message)
    act = fork.act(first.sha, {"op": "x", "session": "s1"}, "s2", lambda: None)
    made = route.record_in(route.IN_PLACE, repo, Event("fork", "gitspace", cwd=str(ws.root)),
                           Options(), act=act).taken
    return _Done(made.files == ["a.txt"])


def _gc(ws: gitspace.Workspace) -> _Done:
    """``gitspace gc`` of every line (none is younger than a minute from now): one change."""
    import time

    from gitspace.core.writer import Writer
    from gitspace.harness.inplace import gc as linegc

    writer = Writer(ws.repo)
    with writer.locked():
        report = linegc.prune(writer, linegc.plan(ws.repo, 0.0, now=time.time() + 60), False)
    return _Done(bool(report.pruned))


def _note(ws: gitspace.Workspace) -> _Done:
    """A commit's authorship note (``provenance/notes.py``): refs/notes/ai alone, one change."""
    from gitspace.core.writer import Writer
    from gitspace.provenance import authorship, notes
    from gitspace.storage.objects import Signature

    writer = Writer(ws.repo)
    text = authorship.dump(authorship.Note(ws.tip(), {"a.txt": {"h_31dce776f88375": [(1, 1)]}}))
    with writer.locked():
        tip = notes.put(writer, Signature("Zoë", "zoe@example.invalid"), {ws.tip(): text}, "test")
    return _Done(tip is not None)


def _child_worked(ws: gitspace.Workspace) -> None:
    """A delegated child's op on its own branch, and one of the parent's on main meanwhile."""
    call_ok(ws, "branch", {"name": "child"})
    call_ok(ws, "create", {"path": "child.txt", "file_text": "by the child\n"})
    call_ok(ws, "switch", {"name": "main"})
    call_ok(ws, "create", {"path": "parent.txt", "file_text": "by the parent\n"})


def _join(ws: gitspace.Workspace) -> _Done:
    """A returned child's ops join the parent's branch (``agent/delegate.join``): a merge."""
    from gitspace.agent.delegate import join
    from gitspace.core.identity import author_of

    tip = ws.repo.read_ref("refs/heads/child")
    assert tip is not None
    return _Done(ws.repo.is_ancestor(tip, join(ws, tip, author_of("tester"), "join child")))


# An op writes: objects (blobs, trees, commit), the journal, the ref (its reflog and HEAD's
# first), the files (each: tmp file, mode, rename; or a removal), the index, and removes the
# journal. Objects already in the repository are not written again.
COMMIT = {"journal.write": 1, "ref.update": 1, "reflog.write": 2, "index.store": 1,
          "journal.remove": 1}
WRITE_ONE = {"file.write": 1, "file.chmod": 1, "file.replace": 1}
# restore and switch: a.txt and b.txt, a symbolic link, an executable, two removals.
CHECKOUT = {"file.write": 3, "file.chmod": 2, "file.replace": 3, "file.remove": 2}
OPS: dict[str, Op] = {
    "create": Op(_nothing, _call("create", {"path": "new/dir/c.txt", "file_text": "c\n"}),
                 {**COMMIT, **WRITE_ONE, "object.write": 5}),  # blob, 3 trees, commit
    "edit over an outside change": Op(  # the outside change is committed first, as its own op
        _outside_edit, _call("str_replace", {"path": "a.txt", "old_str": "from", "new_str": "by"}),
        {**COMMIT, **WRITE_ONE, "object.write": 6}),
    "rename": Op(_nothing, _call("rename", {"old_path": "d/e/deep.txt", "new_path": "f/deep.txt"}),
                 {**COMMIT, **WRITE_ONE, "file.remove": 1, "object.write": 2}),
    "restore": Op(_nothing, _call("restore", {"name": "cp"}),
                  {**COMMIT, **CHECKOUT, "object.write": 1}),
    "undo": Op(_nothing, _call("undo", {}), {**COMMIT, "file.remove": 1, "object.write": 1}),
    "redo": Op(_undo_first, _call("redo", {}), {**COMMIT, **WRITE_ONE, "object.write": 1}),
    "switch": Op(_nothing, _call("switch", {"name": "other"}),
                 {**CHECKOUT, "journal.write": 1, "head.update": 1, "reflog.write": 1,
                  "index.store": 1, "journal.remove": 1}),
    # The branch made and checked out in one change: one journal, its ref, then HEAD.
    "branch and switch": Op(_nothing, _call("branch", {"name": "try", "from": "cp"}),
                            {**CHECKOUT, "journal.write": 1, "ref.update": 1, "reflog.write": 2,
                             "journal.remove": 1, "head.update": 1, "index.store": 1}),
    "checkpoint": Op(_nothing, _call("checkpoint", {"name": "cp2"}),  # the tag object; tags
                     {"object.write": 1, "journal.write": 1, "ref.update": 1,  # have no reflog
                      "journal.remove": 1}),
    "snapshot": Op(_outside_edit, lambda ws: ws.snapshot(), {**COMMIT, "object.write": 3}),
    "mutating script": Op(_nothing, _call("stamp", {"path": "x"}),  # three files it wrote
                          {**COMMIT, "object.write": 6, "file.write": 3, "file.chmod": 3,
                           "file.replace": 3}),
    # A harness's Write, recorded by its hook: its op (blob, tree, commit), one change.
    "record": Op(_outside_edit, _record, {**COMMIT, "object.write": 3}),
    "record_paths": Op(_outside_edit, _record_paths, {**COMMIT, "object.write": 3}),
    # The branch, its files and index, and the tracking ref in one git ref transaction (git
    # moves the refs: no ref.update here).
    "sync": Op(_with_remote, _sync, {"journal.write": 1, "file.write": 2, "file.chmod": 2,
                                     "file.replace": 2, "file.remove": 1, "index.store": 1,
                                     "journal.remove": 1}),
    # The agent's branch, made for its worktree (git's own worktree add comes after).
    "attach": Op(_nothing, _attach, {"journal.write": 1, "ref.update": 1, "reflog.write": 1,
                                     "journal.remove": 1}),
    "merge": Op(_agent_worked, _merge, {"object.write": 1, "journal.write": 1, "ref.update": 1,
                                        "reflog.write": 1, "journal.remove": 1}),
    "pull": Op(_with_remote, _pull, {**COMMIT, "file.write": 2, "file.chmod": 2,
                                     "file.replace": 2, "file.remove": 1}),
    # In a person's own checkout: the line's ref alone (no reflog, no index, no HEAD).
    "record in place": Op(_line_started, _record_in_place,
                          {"object.write": 3, "journal.write": 1, "ref.update": 1,
                           "journal.remove": 1}),
    "undo in place": Op(_agent_wrote_in_place, _undo_in_place,  # (its blob is there already)
                        {"object.write": 1, "journal.write": 1, "ref.update": 1,
                         "journal.remove": 1, **WRITE_ONE}),
    "fork in place": Op(_agent_wrote_twice_in_place, _fork_in_place,
                        {"object.write": 1, "journal.write": 1, "ref.update": 1,
                         "journal.remove": 1, **WRITE_ONE}),
    "gc": Op(_agent_wrote_in_place, _gc, {"journal.write": 1, "ref.update": 1,
                                          "journal.remove": 1}),
    "delegate join": Op(_child_worked, _join, {**COMMIT, **WRITE_ONE, "object.write": 1}),
    # A commit's note: its blob, the notes tree, the notes commit; refs/notes/ai and its reflog.
    "note": Op(_nothing, _note, {"object.write": 3, "journal.write": 1, "ref.update": 1,
                                 "reflog.write": 1, "journal.remove": 1}),
}


def _arm_all(stack: ExitStack) -> dict[str, faults.Injection]:
    """Every point armed to count, never to fail."""
    return {p: stack.enter_context(faults.inject(p, times=0)) for p in sorted(faults.POINTS)}


@pytest.mark.parametrize("name", sorted(OPS))
def test_each_op_reaches_the_points_it_is_tested_at(copy: Path, name: str) -> None:
    op = OPS[name]
    with gitspace.open(copy, agent="tester") as ws:
        op.setup(ws)
        with ExitStack() as stack:
            armed = _arm_all(stack)
            result = op.act(ws)
        assert result.ok, result.text
    assert {p: a.hits for p, a in armed.items() if a.hits} == op.reaches


def _cases() -> Iterator[Any]:
    """Every op at every point it reaches, the first time with every error; the last time (when
    it differs: more was written before it) with one OSError and with Ctrl-C."""
    for name, op in sorted(OPS.items()):
        for point, hits in sorted(op.reaches.items()):
            for which in sorted({0, hits - 1}):
                for label in ERRORS if which == 0 else ("EIO", "Ctrl-C"):
                    yield pytest.param(name, point, which, label,
                                       id=f"{name}-{point}#{which + 1}-{label}")


@pytest.mark.parametrize(("name", "point", "which", "label"), list(_cases()))
def test_a_failing_call_leaves_everything_as_before(copy: Path, name: str, point: str,
                                                    which: int, label: str) -> None:
    op = OPS[name]
    error = ERRORS[label]
    with gitspace.open(copy, agent="tester") as ws:
        op.setup(ws)
        before = everything(copy)
        with faults.inject(point, error, after=which) as armed:
            if isinstance(error, KeyboardInterrupt):
                with pytest.raises(KeyboardInterrupt):
                    op.act(ws)
            else:
                failure = _failure_of(op, ws)
                assert isinstance(failure, WriteFailed), failure
                assert failure.message.endswith("Nothing was changed."), failure.message
                assert failure.hint == system_hint(int(error))
        assert armed.fired == 1
        assert_as_before(copy, before)
        index = copy / ".git" / "index"  # nothing stale is cached in the process either
        assert gitindex.load(index).raw == gitindex.parse(index.read_bytes(), index.parent).raw
        again = op.act(ws)
        assert again.ok, again.text


def _failure_of(op: Op, ws: gitspace.Workspace) -> BaseException:
    try:
        result = op.act(ws)
    except GitspaceError as e:
        return e
    assert not result.ok, "the op succeeded although a call it needs failed"
    assert result.error is not None, result.text
    return result.error


# -- faults that persist: the rollback itself fails -------------------------------------------


def test_a_rollback_that_fails_too_is_finished_by_the_next_open(copy: Path) -> None:
    """Every file write fails: the first file of restore is written before the second one fails,
    and putting it back fails as well. The op says so; reopening finishes it from its journal."""
    with gitspace.open(copy, agent="tester") as ws:
        tip = ws.tip()
        with faults.inject("file.write", errno.ENOSPC, after=1, times=None):
            result = ws.call("restore", {"name": "cp"})
        assert isinstance(result.error, WriteFailed)
        # It says what happened, that the next command finishes it, and what the disk needs.
        assert result.error.message.startswith("A write failed: No space left on device"), \
            result.error.message
        assert " Rolling it back failed too (A write failed: " in result.error.message
        assert result.error.message.endswith(
            "so the next gitspace command in this workspace will finish it from its journal.")
        assert result.error.hint == system_hint(errno.ENOSPC)
        assert (copy / ".git" / "gitspace" / "journal.json").exists()
    with gitspace.open(copy, agent="tester") as ws:
        assert ws.repo.commit(ws.tip()).parents == (tip,)  # finished: the restore is the tip
        assert git(copy, "diff", "--stat", "refs/tags/gitspace/cp", "HEAD") == ""
    assert not leftovers(copy)
    assert git(copy, "status", "--porcelain") == ""


def test_a_journal_that_cannot_be_removed_never_brings_a_failed_op_back(copy: Path) -> None:
    with gitspace.open(copy, agent="tester") as ws:
        before = everything(copy)
        with faults.inject("journal.remove", errno.EACCES, times=None):
            result = ws.call("append", {"path": "a.txt", "text": "more\n"})
        assert isinstance(result.error, WriteFailed)
        assert everything(copy) == before
    with gitspace.open(copy, agent="tester"):
        pass  # the leftover journal says "nothing to finish"
    assert_as_before(copy, before)


def test_a_failed_switch_inside_branch_leaves_no_branch_behind(copy: Path) -> None:
    with gitspace.open(copy, agent="tester") as ws:
        with faults.inject("file.replace", errno.EIO, after=1):
            result = ws.call("branch", {"name": "try", "from": "cp"})
        assert isinstance(result.error, WriteFailed)
        assert [b.name for b in branches.listing(ws)] == ["main", "other"]
        assert not (copy / ".git" / "logs" / "refs" / "heads" / "try").exists()


# -- crash recovery breaks only the crashed op's locks ----------------------------------------


def _crashed_after_the_ref_moved(ws: gitspace.Workspace) -> None:
    """The journal an op leaves when it dies after its ref moved and its files were written."""
    tip = ws.tip()
    ws.writer.journal_write({"ref": "refs/heads/main", "old": ws.repo.commit(tip).parents[0],
                                   "new": tip, "paths": []})


def test_recovery_leaves_locks_older_than_the_journal(copy: Path) -> None:
    git_dir = copy / ".git"
    older = [git_dir / "index.lock", git_dir / "refs" / "heads" / "main.lock"]
    with gitspace.open(copy, agent="tester") as ws:
        for lock in older:
            lock.write_bytes(b"someone else's\n")
            os.utime(lock, ns=(0, 0))  # taken long before the op that crashed
        _crashed_after_the_ref_moved(ws)
        mine = git_dir / "HEAD.lock"  # taken by the crashed op, after its journal
        mine.write_bytes(b"")
    with gitspace.open(copy, agent="tester"):
        pass
    assert [lock.read_bytes() for lock in older] == [b"someone else's\n"] * 2
    assert not mine.exists()
    assert not (git_dir / "gitspace" / "journal.json").exists()


def test_recovery_breaks_the_locks_the_crashed_op_took(copy: Path) -> None:
    git_dir = copy / ".git"
    mine = [git_dir / "index.lock", git_dir / "HEAD.lock", git_dir / "refs" / "heads" / "main.lock"]
    with gitspace.open(copy, agent="tester") as ws:
        _crashed_after_the_ref_moved(ws)
        for lock in mine:  # taken after its journal
            lock.write_bytes(b"")
    with gitspace.open(copy, agent="tester"):
        pass
    assert [lock for lock in mine if lock.exists()] == []
    assert not leftovers(copy)


EDITOR = """#!/bin/sh
touch "$GITSPACE_TEST_STARTED"
n=0
while [ ! -e "$GITSPACE_TEST_GO" ] && [ $n -lt 400 ]; do sleep 0.05; n=$((n+1)); done
: > "$1"
"""


def test_recovery_leaves_the_lock_of_a_live_git_process(copy: Path, tmp_path: Path) -> None:
    """git commit -a holds index.lock while its editor is open (with no descriptor on it); the
    lock is newer than the journal, yet recovery must wait for git, not break it."""
    editor = tmp_path / "editor.sh"
    editor.write_text(EDITOR)
    editor.chmod(0o755)
    started, go = tmp_path / "started", tmp_path / "go"
    with gitspace.open(copy, agent="tester") as ws:
        _crashed_after_the_ref_moved(ws)
    (copy / "a.txt").write_text("changed by a person\n")
    env = {**git_env(), "GIT_EDITOR": str(editor), "GITSPACE_TEST_STARTED": str(started),
           "GITSPACE_TEST_GO": str(go)}
    person = subprocess.Popen(["git", "commit", "-a"], cwd=copy, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        for _ in range(400):
            if started.exists() or person.poll() is not None:
                break
            time.sleep(0.05)
        lock = copy / ".git" / "index.lock"
        assert started.exists() and lock.exists(), person.communicate()[0]
        held = lock.stat().st_ino
        with gitspace.open(copy, agent="tester"):
            pass  # the journal asks for no index update: recovery only looks at the locks
        assert lock.exists() and lock.stat().st_ino == held, "recovery broke git's lock"
        assert person.poll() is None
    finally:
        go.touch()
        out = person.communicate(timeout=30)[0].decode()
    assert "Aborting commit due to empty commit message" in out
    assert not lock.exists()


def test_recovery_breaks_the_locks_a_pull_took_since_its_first_journal(copy: Path) -> None:
    """A pull's ref transaction locks refs from its first journal on ("since"); the journal its
    checkout move writes comes later. A lock taken in between is still the crashed pull's."""
    lock = copy / ".git" / "refs" / "heads" / "other.lock"
    with gitspace.open(copy, agent="tester") as ws, ws.writer.locked():
        tip = ws.tip()  # (the journal an earlier version's pull wrote for its checkout move)
        ws.writer.journal_write({"ref": "refs/heads/main", "old": tip, "new": tip, "paths": [],
                                 "locks": ["refs/heads/other"], "since": 0})
        lock.write_bytes(b"")  # the pull dies here, its transaction holding other's lock
        os.utime(lock, ns=(1, 1))  # older than the last journal, newer than "since"
    with gitspace.open(copy, agent="tester"):
        pass
    assert not lock.exists()
    assert not (copy / ".git" / "gitspace" / "journal.json").exists()


CUT_OFF = {  # op: the point where its process dies (journal written, the ref or HEAD not moved)
    "checkpoint": (_call("checkpoint", {"name": "cp2"}), "ref.update"),
    "append": (_call("append", {"path": "a.txt", "text": "more\n"}), "ref.update"),
    "switch": (_call("switch", {"name": "other"}), "head.update"),
}


def _settled(root: Path) -> dict[str, object]:
    """What an op leaves: refs, HEAD, files, and the index as git lists it."""
    return {**{k: v for k, v in everything(root).items() if k != "index"},
            "index": git(root, "ls-files", "-s"), "status": git(root, "status", "--porcelain")}


@pytest.mark.parametrize("name", sorted(CUT_OFF))
def test_an_op_cut_off_after_its_journal_is_finished_by_the_next_open(
        copy: Path, tmp_path: Path, name: str) -> None:
    """The process dies after its journal, with the ref's (or HEAD's) lock taken: a copy of the
    workspace taken at that instant is what it leaves. Opening that copy breaks the lock and
    finishes the op from the journal, exactly as the op ends when it runs through."""
    act, point = CUT_OFF[name]
    crashed = tmp_path / "crashed"
    with gitspace.open(copy, agent="tester") as ws:
        with faults.inject(point, lambda: shutil.copytree(copy, crashed, symlinks=True)):
            assert act(ws).ok
    assert (crashed / ".git" / "gitspace" / "journal.json").exists()
    with gitspace.open(crashed, agent="tester"):
        pass
    assert _settled(crashed) == _settled(copy)
    assert not leftovers(crashed)


class _GitCommitsItsLock(threading.Thread):
    """Another git client that replaces ``lock`` over its ref a moment later."""

    def __init__(self, lock: Path, ref: Path) -> None:
        super().__init__()
        self.lock, self.ref, self.error = lock, ref, None

    def run(self) -> None:
        time.sleep(0.3)
        try:
            os.replace(self.lock, self.ref)
        except OSError as e:
            self.error = e


def test_recovery_waits_for_a_lock_about_to_be_committed(copy: Path) -> None:
    """A lock that goes away within the wait is its owner's (a live client finishing), not the
    crashed op's: recovery lets it finish instead of deleting it under the client's feet."""
    ref = copy / ".git" / "refs" / "heads" / "theirs"
    lock = ref.with_suffix(".lock")
    with gitspace.open(copy, agent="tester") as ws:
        lock.write_text(ws.tip() + "\n")
        client = _GitCommitsItsLock(lock, ref)
        client.start()
        try:
            writer.break_stale_locks([lock], 0, ws.repo, wait=60)
        finally:
            client.join()
        assert client.error is None
        assert ref.read_text() == ws.tip() + "\n"


# -- a durable workspace: each file and its folder flushed --------------------------------------


@pytest.mark.parametrize("which", [0, 1], ids=["file", "folder-after-rename"])
def test_a_failed_flush_leaves_everything_as_before(copy: Path, which: int) -> None:
    """A durable workspace flushes each file before its rename and its folder after it. A
    failed folder flush comes after the file is in place: the op must put the old one back."""
    with gitspace.open(copy, agent="tester", durable=True) as ws:
        before = everything(copy)
        with faults.inject("file.fsync", errno.EIO, after=which) as armed:
            result = ws.call("str_replace", {"path": "a.txt", "old_str": "ALPHA",
                                             "new_str": "alpha"})
        assert armed.fired == 1
        assert isinstance(result.error, WriteFailed), result.text
        assert result.error.message.endswith("Nothing was changed."), result.error.message
        assert_as_before(copy, before)
        assert ws.call("str_replace", {"path": "a.txt", "old_str": "ALPHA",
                                       "new_str": "alpha"}).ok


# -- another process in the window between two of gitspace's calls ---------------------------


def _replace_index(copy: Path) -> Callable[[], None]:
    """A git client that rewrites the index (same entries, a new file) each time it is run."""
    index = copy / ".git" / "index"

    def rewrite() -> None:
        fresh = index.with_name("index.theirs")
        fresh.write_bytes(index.read_bytes())
        os.replace(fresh, index)

    return rewrite


def test_an_index_that_keeps_changing_fails_the_op_with_what_to_do(copy: Path) -> None:
    with gitspace.open(copy, agent="tester") as ws:
        before = everything(copy)
        with faults.inject("index.store", _replace_index(copy), times=None) as armed:
            result = ws.call("append", {"path": "a.txt", "text": "more\n"})
        assert armed.fired == writer.INDEX_TRIES
        assert result.error is not None and result.error.message == (
            f"{copy / '.git' / 'index'} kept changing while gitspace updated it."), result.text
        assert result.error.hint == "Wait for the other git process to finish, then try again."
        before["index"] = everything(copy)["index"]  # (the other client's rewrite)
        assert_as_before(copy, before)


def test_an_index_that_keeps_changing_while_an_op_rolls_back(copy: Path) -> None:
    """The op failed after its index was stored; putting the index back meets a git client
    rewriting it every time. The op says so; the next open finishes the op instead."""
    with gitspace.open(copy, agent="tester") as ws:
        tip = ws.tip()
        with faults.inject("journal.remove", errno.EIO), \
                faults.inject("index.store", _replace_index(copy), after=1, times=None):
            result = ws.call("append", {"path": "a.txt", "text": "more\n"})
        assert isinstance(result.error, WriteFailed), result.text
        assert (f"Rolling it back failed too ({copy / '.git' / 'index'} kept changing while "
                "gitspace rolled it back.)") in result.error.message
    with gitspace.open(copy, agent="tester") as ws:
        assert ws.repo.commit(ws.tip()).parents == (tip,)
        assert (copy / "a.txt").read_text().endswith("more\n")
    assert git(copy, "status", "--porcelain") == ""
    assert not leftovers(copy)


def test_a_rollback_leaves_what_another_process_put_at_a_written_path(copy: Path) -> None:
    """Between the op's file write and its index store another process puts a fifo where the
    file was written; the store then fails. The rollback moves everything else back and leaves
    the fifo (not gitspace's to remove) for the person."""
    path = copy / "a.txt"

    def swap_then_fail() -> None:
        path.unlink()
        os.mkfifo(path)
        raise faults.os_error(errno.EIO, "index.store")

    with gitspace.open(copy, agent="tester") as ws:
        before = everything(copy)
        with faults.inject("index.store", swap_then_fail):
            result = ws.call("append", {"path": "a.txt", "text": "more\n"})
        assert isinstance(result.error, WriteFailed), result.text
        assert result.error.message.endswith("Nothing was changed."), result.error.message
        assert stat.S_ISFIFO(os.lstat(path).st_mode)
        path.unlink()
        after = everything(copy)
        assert after["refs"] == before["refs"] and after["index"] == before["index"]
        assert not leftovers(copy)


def test_recovery_writes_the_index_entries_with_the_files_stat_data(copy: Path) -> None:
    """An op that died after its files were written: the next open finishes the index from the
    files on disk, stat data included (git status then trusts it instead of re-reading)."""
    with gitspace.open(copy, agent="tester") as ws:
        call_ok(ws, "create", {"path": "late.txt", "file_text": "late\n"})
        ws.writer.journal_write({"ref": "refs/heads/main",
                                       "old": ws.repo.commit(ws.tip()).parents[0],
                                       "new": ws.tip(), "paths": ["late.txt"]})
    index = copy / ".git" / "index"
    git(copy, "update-index", "--index-info", input=b"0 " + b"0" * 40 + b"\tlate.txt\n")
    with gitspace.open(copy, agent="tester"):
        pass
    st = os.lstat(copy / "late.txt")
    entry = gitindex.stat_data(gitindex.parse(index.read_bytes()).raw[b"late.txt"])
    assert entry == (st.st_ctime_ns // 10**9, st.st_ctime_ns % 10**9, st.st_mtime_ns // 10**9,
                     st.st_mtime_ns % 10**9, st.st_dev & 0xFFFFFFFF, st.st_ino & 0xFFFFFFFF,
                     0o100644, st.st_uid, st.st_gid, st.st_size)


def test_a_journal_that_cannot_even_be_opened_reports_that(copy: Path) -> None:
    """No descriptor left (EMFILE): the journal's tmp file never exists, and cleaning up after
    the failure must not hide it under an error of its own."""
    with gitspace.open(copy, agent="tester") as ws:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        lowest = os.open(os.devnull, os.O_RDONLY)  # the descriptor the next open would get
        os.close(lowest)
        resource.setrlimit(resource.RLIMIT_NOFILE, (lowest, hard))
        try:
            with pytest.raises(OSError) as caught:
                ws.writer.journal_write({"ref": None, "paths": []})
        finally:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        assert caught.value.errno == errno.EMFILE, caught.value
    assert not leftovers(copy)


def test_taking_back_a_scripts_write_leaves_what_another_process_put_there(copy: Path) -> None:
    """A mutating script changed a.txt; the op then fails, and meanwhile another process made
    a.txt a folder with a file in it. Taking the script's write back cannot go through that
    folder: it is left (not gitspace's to remove) and the op reports its own failure."""
    write_script(copy / "constraints", "touch_a", True, "printf 'by the script\\n' > a.txt\n")
    path = copy / "a.txt"

    def make_a_folder_then_fail() -> None:
        path.unlink()
        path.mkdir()
        (path / "theirs.txt").write_text("theirs\n")
        raise faults.os_error(errno.EIO, "object.write")

    with gitspace.open(copy, agent="tester") as ws:
        assert ws.snapshot().ok  # the new script is recorded
        tip = ws.tip()
        with faults.inject("object.write", make_a_folder_then_fail) as armed:
            result = ws.call("touch_a", {"path": "a.txt"})
        assert armed.fired == 1
        assert isinstance(result.error, WriteFailed), result.text
        assert ws.tip() == tip
    assert (path / "theirs.txt").read_text() == "theirs\n"


def test_a_rollback_puts_back_an_index_only_git_writes(copy: Path) -> None:
    """A version 4 index goes through git update-index, and so does putting it back."""
    git(copy, "update-index", "--index-version", "4")
    with gitspace.open(copy, agent="tester") as ws:
        before = _settled(copy)
        with faults.inject("journal.remove", errno.EIO) as armed:
            result = ws.call("append", {"path": "a.txt", "text": "more\n"})
        assert armed.fired == 1
        assert isinstance(result.error, WriteFailed), result.text
        assert result.error.message.endswith("Nothing was changed."), result.error.message
        assert _settled(copy) == before
        assert not leftovers(copy)
