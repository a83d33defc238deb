"""Refs: reading them, and moving them by compare-and-swap; HEAD; reflogs.

Invariants:
- A ref moves only by compare-and-swap under git's own lock file (``<ref>.lock``), so no writer,
  gitspace or git, ever loses a commit; every move is recorded in the reflog, whose line is
  written first, as git does. Several refs move together only through one git ref transaction.
- Only ``core/writer.py`` moves refs and HEAD (``tests/test_architecture.py`` holds the rule); everyone
  else reads them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .. import faults
from ..errors import ConcurrentUpdate, GitspaceError
from . import lockfile
from .objects import Signature

TYPE_CHECKING = False
if TYPE_CHECKING:
    from subprocess import CompletedProcess

ZERO = "0" * 40


class RefUpdate:
    """A ref whose lock file is held (see ``GitRepo.lock_ref``)."""

    def __init__(self, repo: Refs, ref: str, old: str | None, fd: int, lock: Path,
                 path: Path) -> None:
        self.repo, self.ref, self.old = repo, ref, old
        self._fd, self._lock, self._path = fd, lock, path
        self.done = False  # the ref was moved

    def set(self, new: str | None, ident: Signature, message: str) -> None:
        """Move the ref to ``new`` (None: delete it) through the held lock.

        The reflog line is written first, as git does: if it cannot be, the ref does not move.
        """
        if self._fd < 0:
            raise GitspaceError(f"The lock on {self.ref} is no longer held.")
        faults.hit("ref.update")
        repo, ref, old = self.repo, self.ref, self.old
        if new is None:
            self._delete()
            return
        if not repo.private:  # nobody reads a private repository's reflogs
            repo._reflog(ref, old or ZERO, new, ident, message)
            if ref.startswith("refs/heads/") and repo.head_branch() == ref[len("refs/heads/"):]:
                repo._reflog("HEAD", old or ZERO, new, ident, message)
        os.write(self._fd, (new + "\n").encode())
        os.close(self._fd)
        self._fd = -1
        lockfile.rename_over(self._lock, self._path, private=self.repo.private)
        self.done = True

    def _delete(self) -> None:
        """Remove a loose ref and its reflog; one that is also packed (``git pack-refs``) is
        deleted by git, which rewrites ``packed-refs`` (its packed value would reappear)."""
        if not self._path.is_file() or self.ref in self.repo._packed_refs():
            os.close(self._fd)
            self._fd = -1
            self._lock.unlink()  # git takes the lock itself, and checks the ref is still at old
            assert self.old is not None
            self.repo.git("update-ref", "-d", self.ref, self.old)
            self.done = True
            return
        os.unlink(self._path)
        (self.repo.commondir / "logs" / self.ref).unlink(missing_ok=True)
        os.close(self._fd)
        self._fd = -1
        self._lock.unlink()
        self.done = True

    def release(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        if not self.done:
            self._lock.unlink(missing_ok=True)


def _locked(lock: Path) -> GitspaceError:
    return GitspaceError(
        f"{lock} exists: another git process is updating it.",
        hint="If no git process is running, remove that file and try again.",
    )


class Refs:
    """The refs of a repository (a part of ``gitrepo.GitRepo``, which sets the attributes
    declared here)."""

    root: Path
    gitdir: Path
    commondir: Path
    private: bool
    _env: dict[str, str]
    _packed: tuple[float, dict[str, str]] | None

    if TYPE_CHECKING:
        def git(self, *args: str, input: bytes | None = None, check: bool = True,
                index: Path | None = None) -> bytes: ...

        def run_git(self, *args: str, input: bytes | None = None,
                    index: Path | None = None) -> CompletedProcess[bytes]: ...

    def _ref_path(self, ref: str) -> Path:
        base = self.gitdir if ref == "HEAD" else self.commondir
        return base / ref

    def read_ref(self, ref: str) -> str | None:
        """The object a ref points at (following one symbolic level), or None."""
        try:
            text = self._ref_path(ref).read_text().strip()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return self._packed_refs().get(ref)
        if text.startswith("ref: "):
            return self.read_ref(text[5:])
        return text or None

    def _packed_refs(self) -> dict[str, str]:
        path = self.commondir / "packed-refs"
        try:
            mtime = path.stat().st_mtime_ns
        except FileNotFoundError:
            return {}
        if self._packed and self._packed[0] == mtime:
            return self._packed[1]
        refs = {}
        for line in path.read_text().splitlines():
            if line and line[0] not in "#^":
                sha, _, name = line.partition(" ")
                refs[name] = sha
        self._packed = (mtime, refs)
        return refs

    def head_branch(self) -> str | None:
        """The branch HEAD points at, or None when HEAD is detached."""
        text = (self.gitdir / "HEAD").read_text().strip()
        if text.startswith("ref: refs/heads/"):
            return text[len("ref: refs/heads/") :]
        return None

    def refs(self, prefix: str) -> list[tuple[str, str, str]]:
        """(refname, object, peeled commit) for refs under ``prefix``, via for-each-ref (which
        reads no tag contents: only listings that show messages need ``tags``)."""
        out = self.git("for-each-ref", "--format=%(refname)%00%(objectname)%00%(*objectname)", prefix)
        rows = []
        for line in out.decode(errors="replace").splitlines():
            name, obj, peeled = line.split("\0")
            rows.append((name, obj, peeled or obj))
        return rows

    def tags(self, prefix: str) -> list[tuple[str, str, str, int, str]]:
        """(refname, object, peeled commit, tagger time, tag message) under ``prefix``, one call."""
        fmt = "%(refname)%00%(objectname)%00%(*objectname)%00%(taggerdate:unix)%00%(contents)%1e"
        out = self.git("for-each-ref", f"--format={fmt}", prefix)
        rows = []
        for record in out.decode(errors="replace").split("\x1e"):
            record = record.lstrip("\n")
            if record:
                name, obj, peeled, when, message = record.split("\0", 4)
                rows.append((name, obj, peeled or obj, int(when or 0), message))
        return rows

    def first_reflog(self, ref: str) -> tuple[str, str] | None:
        """(commit, message) of the oldest entry of ``ref``'s reflog (None when it has none)."""
        base = self.gitdir if ref == "HEAD" else self.commondir
        try:
            with open(base / "logs" / ref, encoding="utf-8", errors="replace") as log:
                first = log.readline()
        except OSError:
            return None
        head, tab, message = first.rstrip("\n").partition("\t")
        shas = head.split(" ", 2)
        return (shas[1], message) if tab and len(shas) == 3 else None

    # -- moving refs (core/writer.py only) ---------------------------------------------------

    def set_head(self, branch: str, ident: Signature, old: str | None, new: str | None) -> None:
        """Point HEAD at ``branch``; its reflog line (``old`` to ``new``) is written first, under
        HEAD.lock, as git does."""
        head = self.gitdir / "HEAD"

        def log() -> None:
            if old and new:
                self._reflog("HEAD", old, new, ident, f"checkout: moving to {branch}")

        try:
            lockfile.replace(head, f"ref: refs/heads/{branch}\n".encode(), point="head.update",
                             under_lock=log)
        except lockfile.Locked:
            raise _locked(head.with_name("HEAD.lock")) from None

    def cas_ref(self, ref: str, old: str | None, new: str | None, ident: Signature,
                message: str) -> None:
        """Point ``ref`` at ``new`` if it currently points at ``old`` (None: must not exist;
        ``new`` None deletes the ref)."""
        with self.lock_ref(ref, old) as update:
            update.set(new, ident, message)

    @contextmanager
    def lock_ref(self, ref: str, old: str | None) -> Iterator[RefUpdate]:
        """Hold ``ref``'s lock file while the block runs, once ``ref`` is verified to be at ``old``.

        Nobody, gitspace or git, can move the ref meanwhile; ``RefUpdate.set`` moves it through
        the lock. Leaving the block without ``set`` (or by an exception) releases it unchanged.
        """
        path = self._ref_path(ref)
        lock = path.with_name(path.name + ".lock")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            raise GitspaceError(
                f"Cannot create {ref}: a ref with a prefix of that name exists.",
                hint="Pick a name that is neither a folder of an existing ref nor inside one.",
            ) from None
        try:
            fd = lockfile.acquire(lock)
        except lockfile.Locked:
            raise _locked(lock) from None
        update = RefUpdate(self, ref, old, fd, lock, path)
        try:
            current = self.read_ref(ref)
            if current != old:
                raise ConcurrentUpdate(
                    f"{ref} moved from {(old or 'nothing')[:12]} to {(current or 'nothing')[:12]} "
                    "while this op was being prepared.",
                    hint="Nothing was changed; run the command again.",
                )
            yield update
        finally:
            update.release()

    @contextmanager
    def ref_transaction(self, moves: list[tuple[str, str | None, str | None]], ident: Signature,
                        message: str) -> Iterator[None]:
        """Move every ``(ref, old, new)`` (old None: must not exist; new None: delete it) in one
        git ref transaction.

        All refs are locked and verified ('prepare') before the block runs; they move together
        when it ends ('commit'), and none moves if it raises or the prepare fails.
        """
        if not moves:
            yield
            return
        import subprocess  # (here: a harness's hook never moves refs together)

        env = dict(self._env, GIT_COMMITTER_NAME=ident.name, GIT_COMMITTER_EMAIL=ident.email)
        proc = subprocess.Popen(
            ["git", "-c", "core.hooksPath=/dev/null", "update-ref", "--stdin", "-m", message],
            cwd=self.root, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE)
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None

        def say(line: str, expect: str | None = None) -> None:
            assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
            try:
                proc.stdin.write(line.encode())
                proc.stdin.flush()
            except BrokenPipeError:
                pass
            if expect is not None and proc.stdout.readline().strip() != expect.encode():
                proc.stdin.close()
                error = proc.stderr.read().decode(errors="replace").strip()
                proc.wait()
                raise ConcurrentUpdate(
                    f"Could not move the refs together: {error or 'git update-ref stopped'}. "
                    "Nothing was changed.", hint="Run the command again.")

        try:
            say("start\n", "start: ok")
            say("".join(f"update {ref} {new} {old or ZERO}\n" if new is not None
                        else f"delete {ref} {old}\n" for ref, old, new in moves)
                + "prepare\n", "prepare: ok")
            try:
                yield
            except BaseException:
                say("abort\n")
                raise
            say("commit\n", "commit: ok")
        finally:
            if proc.poll() is None:
                proc.stdin.close()
                proc.wait()
            proc.stdout.close()
            proc.stderr.close()

    def _reflog(self, ref: str, old: str, new: str, ident: Signature, message: str) -> None:
        if ref.startswith("refs/tags/"):
            # git keeps no reflog for tags, and 'git gc' reports one whose entries name annotated
            # tag objects as "error: Object ... not a commit" (see drop_tag_reflogs).
            return
        if ref.startswith("refs/gitspace/"):
            # Nor for refs outside heads and remotes; one here would also keep every commit a
            # pruned line held alive for git gc's 90 days (see harness/inplace/line.py).
            return
        base = self.gitdir if ref == "HEAD" else self.commondir
        log = base / "logs" / ref
        log.parent.mkdir(parents=True, exist_ok=True)
        faults.hit("reflog.write")
        line = f"{old} {new} {ident.line()}\t{' '.join(message.split())[:200]}\n"
        with open(log, "a", encoding="utf-8", errors="surrogateescape") as out:
            out.write(line)

    def drop_tag_reflogs(self, prefix: str) -> None:
        """Remove the reflogs older gitspace versions wrote for the tags under ``prefix`` (they
        make every ``git gc`` print errors; git itself never writes them)."""
        folder = self.commondir / "logs" / prefix
        if folder.is_dir():
            import shutil

            shutil.rmtree(folder, ignore_errors=True)
