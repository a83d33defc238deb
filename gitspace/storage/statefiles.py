"""gitspace's own state under a git directory (``<git dir>/gitspace/...``), never through a link.

Invariants:
- Every folder from the git directory down (``gitspace`` and each one below it) is reached with
  ``O_NOFOLLOW | O_DIRECTORY`` from a descriptor of the folder above, and made there when
  missing. A link, file or anything else standing where a folder belongs is refused
  (``StateRefused``: a sentence naming it and a hint), never followed and never removed. The
  git directory itself is git's, and trusted.
- A state file is read by the bounded reader (``storage/bounded.py``): a link, fifo or device at
  its name is refused, never opened to block, and nothing past ``STATE_CAP`` is read.
- A state file is written whole: a new temporary file with a random name (``O_CREAT | O_EXCL |
  O_NOFOLLOW``) in its folder's descriptor, renamed over the name there. A link at the name is
  replaced, never written through; a reader sees the old content or the new, never half.
- A name is removed relative to its folder's descriptor: a link is removed, never its target;
  a folder (``remove_tree``: an agent's worktree) only when a real folder stands at its name,
  and everything in it by descriptor.
- A lock file is opened the same way (``open_lock``), for ``flock``. Where an API needs a path
  (SQLite, a child's environment), ``folder`` checks the chain and hands back the path: what is
  in it is then the caller's to open without following.
"""

from __future__ import annotations

import errno
import os
import stat as statmod
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import FileRefused, GitspaceError
from . import bounded

STATE_CAP = 16 << 20  # a journal, a mark, a hook's note: all far smaller
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class StateRefused(GitspaceError):
    """Something not gitspace's stands where gitspace keeps its state (a link, a file)."""


def folder(base: Path, *parts: str) -> Path:
    """``base/parts...``, each folder made if missing and refused if it is not a real folder."""
    with _walk(base, list(parts), make=True):
        return base.joinpath(*parts)


def read(base: Path, rel: str, limit: int = STATE_CAP) -> bytes | None:
    """The bytes of state file ``base/rel`` (None: absent). A link, fifo or device there, or a
    folder on the way that is not a real one, raises ``StateRefused``."""
    try:
        return bounded.read_inside(base, rel, limit, what="gitspace's state file")
    except FileRefused as e:
        raise StateRefused(e.message, hint=f"Move {base / rel} away (gitspace writes only "
                           "regular files there), then run the command again.") from None


def write(base: Path, rel: str, data: bytes, mode: int = 0o644) -> None:
    """Make state file ``base/rel`` hold ``data`` (a temporary file, then a rename; ``mode``:
    0o600 for a secret, whatever the umask)."""
    *parts, name = rel.split("/")
    with _walk(base, parts, make=True) as fd:
        assert fd is not None  # (made)
        for _ in range(8):
            tmp = f".{name}.{os.urandom(6).hex()}.tmp"  # (secrets costs a hook its import)
            try:
                out = os.open(tmp, _NEW, mode, dir_fd=fd)
                break
            except FileExistsError:
                continue
        else:
            raise StateRefused(f"gitspace could not make a temporary file in {base.joinpath(*parts)}.",
                               hint="Remove the stray .tmp files there, then try again.")
        try:
            if mode != 0o644:
                os.fchmod(out, mode)  # (a secret's: open's mode is masked by the umask)
            with os.fdopen(out, "wb") as stream:
                stream.write(data)
            os.rename(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
        except BaseException:
            _unlink(fd, tmp)
            raise


def open_lock(base: Path, rel: str) -> int:
    """A descriptor of lock file ``base/rel`` (made if missing, never through a link: a link,
    fifo or device there is refused), for ``flock``."""
    *parts, name = rel.split("/")
    with _walk(base, parts, make=True) as fd:
        assert fd is not None  # (made)
        try:
            lock = os.open(name, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK
                           | os.O_CLOEXEC, 0o644, dir_fd=fd)
        except OSError as e:
            if e.errno != errno.ELOOP:
                raise
            lock = -1
        if lock < 0 or not statmod.S_ISREG(os.fstat(lock).st_mode):
            if lock >= 0:
                os.close(lock)
            where = base / rel
            raise StateRefused(f"{where} is not a regular file (a link or something else "
                               "stands there), so gitspace will not lock it.",
                               hint=f"Move {where} away, then run the command again.")
        return lock


def remove(base: Path, rel: str) -> None:
    """Remove state file ``base/rel`` if it is there (a link is removed, not what it names)."""
    *parts, name = rel.split("/")
    with _walk(base, parts, make=False) as fd:
        if fd is not None:
            _unlink(fd, name)


def remove_tree(base: Path, rel: str) -> bool:
    """Remove state folder ``base/rel`` and all in it, never following a link (the walk to it and
    the removal inside it go by descriptor); False when it is absent. A link or file at its name
    raises ``StateRefused`` and stays: it is not gitspace's to remove."""
    import shutil  # (here: a hook never removes a tree)

    *parts, name = rel.split("/")
    with _walk(base, parts, make=False) as fd:
        if fd is None:
            return False
        try:
            st = os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return False
        if not statmod.S_ISDIR(st.st_mode):
            where = base / rel
            raise StateRefused(
                f"{where} is not a folder (a link or a file stands there), so gitspace will not "
                "remove it or what it names.", hint=f"Move {where} away, then run the command "
                "again.")
        shutil.rmtree(name, dir_fd=fd)
        return True


def names(base: Path, rel: str) -> list[str]:
    """The names in state folder ``base/rel`` (none when it is absent)."""
    with _walk(base, [p for p in rel.split("/") if p], make=False) as fd:
        return [] if fd is None else sorted(os.listdir(fd))


@contextmanager
def _walk(base: Path, parts: list[str], *, make: bool) -> Iterator[int | None]:
    """A descriptor of folder ``base/parts...`` reached without following a link (None: absent
    and ``make`` is off). The first folder is opened by its path below ``base`` (which is
    trusted), not from a descriptor of ``base``: opening the git directory itself is an event
    for whoever watches the work tree (``team/watch.py``), on every op."""
    fd = -1 if parts else os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for depth, name in enumerate(parts):
            if name in ("", ".", ".."):
                raise StateRefused(f"{name!r} is no name for a state folder.")
            at, within = (base / name, None) if depth == 0 else (Path(name), fd)
            if make:
                try:
                    os.mkdir(at, 0o755, dir_fd=within)
                except FileExistsError:
                    pass
            try:
                inner = os.open(at, _DIR, dir_fd=within)
            except FileNotFoundError:
                if make:
                    raise
                yield None
                return
            except OSError as e:
                if e.errno not in (errno.ELOOP, errno.ENOTDIR):
                    raise
                where = base.joinpath(*parts[:depth + 1])
                raise StateRefused(
                    f"{where} is not a folder (a link or a file stands there), so gitspace will "
                    "not keep its state in it.",
                    hint=f"Move {where} away, then run the command again.") from None
            if fd >= 0:
                os.close(fd)
            fd = inner
        yield fd
    finally:
        if fd >= 0:
            os.close(fd)


def _unlink(fd: int, name: str) -> None:
    try:
        os.unlink(name, dir_fd=fd)
    except FileNotFoundError:
        pass
