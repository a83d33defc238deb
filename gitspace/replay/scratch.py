"""A private, throw-away workspace that sees a user's objects: where replay re-runs ops.

Invariants:
- The scratch repository lives in its own temporary folder. Its ``objects/info/alternates`` points
  at the user's object store, so every object of the user's history is readable without copying,
  while its refs, index, work tree and worktree list are its own: nothing here ever writes to the
  user's repository except ``export``, which copies new objects in and then creates one new branch
  by compare-and-swap.
- It never packs (``gc.auto`` is off and ``maybe_pack`` does nothing), so no repack ever runs over
  the alternates and every object it wrote is a loose file ``export`` can find.
- ``open_scratch`` removes the folder in all cases, including Ctrl-C and SIGTERM (turned into
  KeyboardInterrupt while it runs, the previous handler restored after); the two signals are held
  back while the scratch is being made (so no git child is left running, unknown to subprocess,
  to write into it after its removal) and while the folder is being removed (so a second one
  cannot leave half of it behind). Its
  path is known before it exists, so an interrupt at any instant cannot orphan it. If it still
  cannot be removed (a killed git child writing into it for seconds), ``Scratch.leftover`` names it.
- It runs the tools with the user's workspace limits (``max_file_bytes``), so an op that was within
  the cap when recorded is within it when replayed.
- It is private (``GitRepo.private``): no journal, no reflogs, and files replaced without the
  flush an atomic rename costs on ext4. It lives in ``GITSPACE_SCRATCH_DIR`` or ``TMPDIR`` when
  one is set; otherwise in a RAM-backed folder (``/dev/shm``) when that has room for the start
  tree and the objects the replay will write several times over, else in the temporary folder.
  On a disk every op costs a dozen file-system metadata writes; in RAM they are free.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType

from .. import config
from ..core import branches
from ..core.workspace import Workspace
from ..core.writer import COMMITTER, Change, RefMove
from ..errors import BadArguments, ConcurrentUpdate, GitspaceError
from ..storage import gitindex
from ..storage.gitrepo import GitRepo
from ..storage.objects import Commit, Entry
from ..tools.builtins import registry

BRANCH = "replay"
_SIGNALS = {signal.SIGINT, signal.SIGTERM}
REPLAYER = COMMITTER
# 10 ms apart: up to ten seconds for a git child an interrupt killed to finish its last write
# (subprocess does not wait for a child it kills on KeyboardInterrupt; on a loaded machine one
# blocked in a disk write can take a while to die). Nothing waits when the folder goes at once.
REMOVE_ATTEMPTS = 1000


class BadNewBranch(BadArguments):
    """The branch ``replay --onto`` would create cannot be: a bad name, or it exists."""


class ScratchRepo(GitRepo):
    """A private GitRepo (see ``GitRepo.private``) that never starts a background repack (its
    objects are short-lived)."""

    private = True

    def maybe_pack(self, threshold: int | None = None, pack_limit: int = 12) -> bool:
        return False


class Scratch:
    """The scratch workspace: branch ``replay`` checked out in a private work tree."""

    def __init__(self, user: GitRepo, ws: Workspace) -> None:
        self.user = user
        self.ws = ws
        self.repo = ws.repo
        self.leftover: Path | None = None  # the folder, if it could not be removed

    def tip(self) -> str:
        tip = self.repo.read_ref(f"refs/heads/{BRANCH}")
        assert tip is not None
        return tip

    def tree(self) -> str:
        return self.repo.commit(self.tip()).tree

    def on_branch(self) -> bool:
        return self.repo.head_branch() == BRANCH

    def set_tags(self, tags: dict[str, str]) -> None:
        """Create or move refs ``{refname: object}`` (checkpoint tags) in the scratch repo."""
        moves = [RefMove(name, self.repo.read_ref(name), sha) for name, sha in sorted(tags.items())]
        moves = [m for m in moves if m.old != m.new]
        if moves:
            with self.ws.writer.locked():
                self.ws.writer.apply(Change("replay: checkpoints", REPLAYER, moves))

    def commit_tree(self, tree: str, like: Commit) -> str:
        """Commit ``tree`` on the tip with ``like``'s author and message; update files and index."""
        tip = self.tip()
        old_tree = self.repo.commit(tip).tree
        head = f"tree {tree}\nparent {tip}\nauthor {like.author}\ncommitter {REPLAYER.line()}\n"
        new = self.repo.write_object("commit", (head + "\n" + like.message).encode(
            "utf-8", "surrogateescape"))
        writes: dict[str, tuple[bytes, int] | None] = {}
        for change in self.repo.diff_trees(old_tree, tree):
            writes[change.path] = None if change.new is None else self._content(change.new)
        # Read (never through a link) before the ref moves: a path the tree names that no work
        # tree can hold ("..", ".git") is refused here, with nothing written.
        before = {rel: self.ws.files.read(rel) for rel in writes}
        with self.ws.writer.locked():
            self.ws.writer.apply(Change("gitspace: replay", REPLAYER,
                                        [RefMove(f"refs/heads/{BRANCH}", tip, new)], at=new,
                                        files=writes, before=before))
        return new

    def _content(self, entry: Entry) -> tuple[bytes, int]:
        return self.repo.read_blob(entry.sha), entry.mode

    def export(self) -> int:
        """Copy every object the replay wrote into the user's object store; returns the count."""
        copied = 0
        source = self.repo.objects
        for fan in sorted(os.listdir(source)):
            if len(fan) != 2:
                continue  # info/, pack/
            target_dir = self.user.objects / fan
            for name in os.listdir(source / fan):
                if name.startswith("tmp_") or (target_dir / name).exists():
                    continue
                target_dir.mkdir(exist_ok=True)
                _copy_object(source / fan / name, target_dir / name)
                copied += 1
        return copied


def _copy_object(src: Path, dst: Path) -> None:
    """Loose objects are immutable: a hard link when the folders share a file system, else a
    copy renamed into place (a reader never sees half an object)."""
    try:
        os.link(src, dst)
        return
    except FileExistsError:
        return
    except OSError:
        pass
    fd, tmp = tempfile.mkstemp(prefix="tmp_obj_", dir=dst.parent)
    os.close(fd)
    try:
        shutil.copyfile(src, tmp)
        os.chmod(tmp, 0o444)
        os.replace(tmp, dst)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _remove(folder: Path) -> Path | None:
    """Remove ``folder``, retrying: a git child that an interrupt killed may still be finishing
    its last write into it. Returns the folder if it is still there in the end."""
    for _ in range(REMOVE_ATTEMPTS):
        shutil.rmtree(folder, ignore_errors=True)
        if not os.path.lexists(folder):
            return None
        time.sleep(0.01)
    return folder


def _sigterm(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


RAM_FOLDERS = ("/dev/shm",)
RAM_SHARE = 4  # use at most a quarter of a RAM-backed folder's free space
RAM_MOST = 2 << 30  # and never more than 2 GiB of it
PER_OP = 16 << 10  # what one replayed op leaves in the scratch: a commit, a tree or two, a blob
PAGE = 4096


def scratch_parent(user: GitRepo, start: str, ops: int) -> Path:
    """Where the scratch folder goes (see the module docstring)."""
    chosen = config.scratch_parent()
    if chosen:
        return Path(chosen)
    for folder in RAM_FOLDERS:
        try:
            st = os.statvfs(folder)
        except OSError:
            continue
        if not os.access(folder, os.W_OK | os.X_OK):
            continue
        room = min(st.f_bavail * st.f_frsize // RAM_SHARE, RAM_MOST)
        if ops * PER_OP <= room and _tree_bytes(user, start, room) <= room - ops * PER_OP:
            return Path(folder)
    return Path(tempfile.gettempdir())


def _tree_bytes(user: GitRepo, start: str, stop: int) -> int:
    """What checking ``start`` out takes (every file rounded up to a page), counted up to
    ``stop``."""
    total = 0
    out = user.git("ls-tree", "-r", "-l", "-z", start)
    for record in out.split(b"\0"):
        fields = record.split(None, 4)
        if len(fields) == 5 and fields[3].isdigit():
            total += (int(fields[3]) // PAGE + 1) * PAGE
            if total > stop:
                break
    return total


@contextmanager
def open_scratch(user: GitRepo, start: str, max_file_bytes: int = 1 << 20,
                 parent: Path | None = None, ops: int = 0) -> Iterator[Scratch]:
    """A scratch workspace on branch ``replay`` at commit ``start`` for about ``ops`` ops, in a
    new folder of ``parent`` (default: see ``scratch_parent``); removed when the block ends (when
    it cannot be, ``leftover`` on the yielded Scratch says where it is)."""
    main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _sigterm) if main else None
    parent = parent or scratch_parent(user, start, ops)
    # Named before it exists: wherever an interrupt lands after mkdir, the cleanup knows the name.
    made = parent / f"gitspace-replay-{secrets.token_hex(16)}"
    folder: Path | None = made
    repo: GitRepo | None = None
    scratch: Scratch | None = None
    # Held back while the scratch is made: an interrupt between a git child's fork and its exec
    # leaves that child running (subprocess kills only a child it knows it started), and a
    # ``git init`` finishing after the removal would make the folder again. A signal that came
    # meanwhile is raised when the mask is restored, with no child running.
    setup_mask = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
    try:
        try:
            try:
                os.mkdir(made, 0o700)
            except FileExistsError:
                folder = None  # not ours to remove (an unguessable name: practically never)
                raise
            root = made / "ws"
            GitRepo.init(root, BRANCH).close()
            (root / ".git" / "objects" / "info" / "alternates").write_text(f"{user.objects}\n")
            repo = opened = ScratchRepo.open(root)
            opened.git("config", "gc.auto", "0")
            ws = Workspace(opened, tools=registry(), max_file_bytes=max_file_bytes)
            files = {rel: (opened.read_blob(e.sha), e.mode)
                     for rel, e in opened.walk_files(opened.commit(start).tree)}
            with ws.writer.locked():  # the start tree checked out, its files and index
                ws.writer.apply(Change("replay: start", REPLAYER,
                                       [RefMove(f"refs/heads/{BRANCH}", None, start)], at=start,
                                       files=files))
            scratch = Scratch(user, ws)
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, setup_mask)
        yield scratch
    finally:
        held = signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
        try:
            if repo is not None:
                gitindex.forget(repo.gitdir / "index")
                repo.close()
            leftover = None if folder is None else _remove(folder)
            if scratch is not None:
                scratch.leftover = leftover
        finally:
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)
            signal.pthread_sigmask(signal.SIG_SETMASK, held)


def check_new_branch(user: GitRepo, name: str) -> str:
    """The ref of a branch replay may create: a valid name that does not exist yet."""
    try:
        branches.check_name(name)
    except BadArguments as e:
        raise BadNewBranch(e.message, hint=e.hint) from None
    ref = f"refs/heads/{name}"
    if user.read_ref(ref) is not None:
        raise BadNewBranch(f"A branch named {name!r} already exists, and replay --onto never moves "
                           "a branch; nothing was changed.", hint="Pick another name for --branch.")
    return ref


def create_branch(user_ws: Workspace, name: str, target: str) -> None:
    """Create ``refs/heads/name`` at ``target`` in the user's repository (never moves one)."""
    ref = check_new_branch(user_ws.repo, name)
    check = user_ws.repo.run_git("rev-list", "--quiet", "--objects", target, "--not", "--all")
    if check.returncode != 0:
        raise GitspaceError(f"The replayed commits did not all reach the repository: "
                            f"{check.stderr.decode(errors='replace').strip()}")
    try:
        with user_ws.writer.locked():
            user_ws.writer.apply(Change(f"gitspace replay --onto: {name}", REPLAYER,
                                        [RefMove(ref, None, target)]))
    except ConcurrentUpdate:
        check_new_branch(user_ws.repo, name)  # created meanwhile: say so as the check does
        raise


__all__ = ["BRANCH", "BadNewBranch", "Scratch", "ScratchRepo", "check_new_branch",
           "create_branch", "open_scratch"]
