"""A folder another program keeps its own files in (a harness's session transcripts, under the
person's home): a file read there, and a new one written beside it, never through a link.

Invariants:
- The folder is opened once, ``O_DIRECTORY | O_NOFOLLOW``: a link standing for the folder is
  refused, never followed. (The folders above it are the caller's to trust, as a path given to
  ``bounded.read_named`` is: a harness named the file.) Every read, write and removal after that
  is made relative to that one descriptor, so a folder renamed or swapped meanwhile changes which
  folder the descriptor names, never where a write lands.
- A name is one plain file name: no ``/``, not ``.`` or ``..``, no NUL; anything else is refused
  before the folder is touched.
- A read is ``bounded.read_at``: a regular file only, never a link or a fifo, at most ``limit``
  bytes.
- A new file never replaces anything, and is never seen half-written: it is written whole into a
  temporary name made exclusively (``O_CREAT | O_EXCL | O_NOFOLLOW``, mode 600: the person's
  alone), flushed, then hard-linked to its name (which fails if the name exists, whatever stands
  there) and the temporary name removed. A failure at any step removes what it made.
"""

from __future__ import annotations

import errno
import os
import stat as statmod
from pathlib import Path
from types import TracebackType

from ..errors import FileRefused, GitspaceError
from . import bounded

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class Exists(GitspaceError):
    """The name a new file was to have is taken already."""


def plain(name: str) -> bool:
    """Is ``name`` one plain file name (what ``Folder`` reads and writes)?"""
    return bool(name) and name not in (".", "..") and "/" not in name and "\0" not in name


class Folder:
    """One folder of another program's, opened without following a link (``with Folder(...)``)."""

    def __init__(self, path: Path, what: str) -> None:
        self.path, self.what = path, what
        self.fd = -1

    def __enter__(self) -> Folder:
        try:
            self.fd = os.open(self.path, _DIR)
        except FileNotFoundError:
            raise FileRefused(f"{self.what} folder {self.path} does not exist.",
                              hint="Check that the harness still keeps its files there.") from None
        except OSError as e:
            if e.errno not in (errno.ELOOP, errno.ENOTDIR):
                raise
            raise FileRefused(
                f"{self.what} folder {self.path} is {_kind(self.path)}, not a folder, and "
                "gitspace never reads or writes through a link; nothing was read or written.",
                hint="Put the folder itself there (or remove the link), then try again.") from None
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def read(self, name: str, limit: int) -> bytes | None:
        """The bytes of file ``name`` here (None: absent); refused when it is a link, not a
        regular file, or over ``limit`` bytes."""
        self._check(name)
        return bounded.read_at(self.fd, name, limit, what=self.what, shown=str(self.path / name))

    def create(self, name: str, data: bytes) -> None:
        """Make a new file ``name`` here holding ``data`` (mode 600); ``Exists`` if the name is
        taken (nothing is replaced), and nothing left behind on any failure."""
        self._check(name)
        tmp = f".{name}.{os.urandom(6).hex()}.tmp"
        out = os.open(tmp, _NEW, 0o600, dir_fd=self.fd)
        try:
            try:
                written = 0
                while written < len(data):
                    written += os.write(out, memoryview(data)[written:])
                os.fsync(out)
            finally:
                os.close(out)
            try:
                os.link(tmp, name, src_dir_fd=self.fd, dst_dir_fd=self.fd,
                        follow_symlinks=False)
            except FileExistsError:
                raise Exists(f"{self.path / name} exists already; gitspace never replaces it.",
                             hint="Run the command again: it picks a new name.") from None
        finally:
            _unlink(self.fd, tmp)

    def remove(self, name: str) -> None:
        """Remove file ``name`` here if it is there (a link is removed, never what it names)."""
        self._check(name)
        _unlink(self.fd, name)

    def _check(self, name: str) -> None:
        if not plain(name):
            raise FileRefused(f"{name!r} is not a plain file name, so gitspace will not use it "
                              f"in {self.path}.", hint="Name a file in that folder.")
        assert self.fd >= 0, "a Folder is used inside its with-block"


def _kind(path: Path) -> str:
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return "something else"
    return "a symbolic link" if statmod.S_ISLNK(mode) else "a file"


def _unlink(folder: int, name: str) -> None:
    try:
        os.unlink(name, dir_fd=folder)
    except FileNotFoundError:
        pass
