"""Reading a file that history, a harness or a person named: bounded, never through a link,
never blocking.

Invariants:
- Only a regular file is read. A fifo, socket, device or folder is refused, and so is a link:
  at the path itself always, and for a path inside a tree (``read_inside``: a work tree, the
  git directory) at every folder on the way too. The file is opened ``O_NOFOLLOW |
  O_NONBLOCK`` (a fifo never blocks the open) and judged by ``fstat`` of the descriptor opened,
  so what is read is what was checked, whatever another process swaps meanwhile.
- At most ``limit`` bytes are read: a file larger by its ``fstat`` is refused before anything is
  read, and one that grows while it is read is cut at ``limit + 1`` bytes and refused too.
- An absent path (or one beneath a missing folder) reads as None; the caller says whether that
  is an error. Every refusal is a ``FileRefused`` with a sentence naming the file and a hint.
- ``read_tail`` reads the last ``limit`` bytes of a file that only grows (a harness's transcript,
  where what just happened is at the end), with the same checks; its size is no refusal.
- ``follow=True`` exists for one case: a file gitspace itself names in the user's own home (a
  harness's user-wide settings), which dotfile managers routinely make a link. The target must
  still be a regular file under the cap.
"""

from __future__ import annotations

import errno
import os
import stat as statmod
from collections.abc import Callable
from pathlib import Path

from ..errors import FileRefused

JSON_CAP = 64 << 20  # JSON someone else wrote: a hook payload, --args @FILE, a saved session
_READ = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def read_named(path: Path, limit: int, *, what: str, follow: bool = False,
               cut: bool = False) -> bytes | None:
    """The bytes of the file at ``path`` (its folders are the caller's to trust), None if it is
    absent. With ``cut``, a larger file is not refused: its first ``limit + 1`` bytes come back
    (the caller, seeing more than ``limit``, says it was cut)."""
    flags = _READ | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise _unopenable(e, what, str(path), lambda: os.lstat(path)) from None
    return _read_fd(fd, limit, what, str(path), cut)


def read_tail(path: Path, limit: int, *, what: str) -> tuple[bytes, bool] | None:
    """The last ``limit`` bytes (or fewer) of the regular file at ``path``, never through a link,
    and whether they are the whole file; None if it is absent."""
    try:
        fd = os.open(path, _READ | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise _unopenable(e, what, str(path), lambda: os.lstat(path)) from None
    try:
        st = os.fstat(fd)
        if not statmod.S_ISREG(st.st_mode):
            raise refused_kind(what, str(path), st.st_mode)
        start = max(0, st.st_size - limit)
        os.lseek(fd, start, os.SEEK_SET)
        chunks, total = [], 0
        while total < limit:
            chunk = os.read(fd, min(1 << 20, limit - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        return b"".join(chunks), start == 0
    finally:
        os.close(fd)


def read_inside(root: Path, rel: str, limit: int, *, what: str) -> bytes | None:
    """The bytes of ``root/rel``, reached one folder at a time from ``root`` without following a
    link anywhere below it; None if it (or a folder on the way) is absent."""
    parts = [p for p in rel.split("/") if p]
    if not parts or any(p in (".", "..") or "\0" in p for p in parts):
        raise FileRefused(f"{what} {rel!r} is not a plain path below {root}.",
                          hint="Name a file inside the folder.")
    try:
        folder = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        for depth, name in enumerate(parts[:-1]):
            shown = str(root.joinpath(*parts[:depth + 1]))
            try:
                inner = os.open(name, _DIR, dir_fd=folder)
            except FileNotFoundError:
                return None
            except OSError as e:
                raise _unopenable(e, what, shown, _lstat(folder, name), folder_needed=True
                                  ) from None
            os.close(folder)
            folder = inner
        return read_at(folder, parts[-1], limit, what=what, shown=str(root / rel))
    finally:
        os.close(folder)


def read_at(folder: int, name: str, limit: int, *, what: str, shown: str) -> bytes | None:
    """The bytes of file ``name`` in the folder open at descriptor ``folder``, never through a
    link (``shown``: the path a message names); None if it is absent."""
    try:
        fd = os.open(name, _READ | os.O_NOFOLLOW, dir_fd=folder)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise _unopenable(e, what, shown, _lstat(folder, name)) from None
    return _read_fd(fd, limit, what, shown)


Lstat = Callable[[], os.stat_result]


def _lstat(folder: int, name: str) -> Lstat:
    return lambda: os.stat(name, dir_fd=folder, follow_symlinks=False)


def _read_fd(fd: int, limit: int, what: str, shown: str, cut: bool = False) -> bytes:
    try:
        st = os.fstat(fd)
        if not statmod.S_ISREG(st.st_mode):
            raise refused_kind(what, shown, st.st_mode)
        if st.st_size > limit and not cut:
            raise too_large(what, shown, st.st_size, limit)
        chunks, total = [], 0
        while total <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > limit and not cut:
            raise too_large(what, shown, total, limit)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _unopenable(error: OSError, what: str, shown: str, lstat: Lstat, *,
                folder_needed: bool = False) -> Exception:
    """The refusal for a path ``open`` would not take (a link, a file where a folder goes), or
    the OSError itself when the system refused for a reason of its own."""
    if error.errno not in (errno.ELOOP, errno.ENOTDIR, errno.ENXIO, errno.EISDIR):
        return error
    try:
        mode = lstat().st_mode
    except OSError:
        return error
    if statmod.S_ISLNK(mode):
        return FileRefused(
            f"{what} {shown} is a symbolic link, and gitspace never reads through a link that "
            "history or another program could have planted; nothing was read.",
            hint="Put the file itself there (or remove the link), then run the command again.")
    if folder_needed:
        return FileRefused(f"{what} {shown} is {_kind(mode)} where a folder should be; nothing "
                           "was read.", hint="Move it away, then run the command again.")
    return refused_kind(what, shown, mode)


def refused_kind(what: str, shown: str, mode: int) -> FileRefused:
    return FileRefused(f"{what} {shown} is {_kind(mode)}, not a regular file, so gitspace did not "
                       "read it.", hint="Put a regular file there, then run the command again.")


def too_large(what: str, shown: str, size: int, limit: int) -> FileRefused:
    return FileRefused(f"{what} {shown} is {size:,} bytes or more, over the {limit:,}-byte cap, "
                       "so gitspace did not read it.",
                       hint="Use a smaller file, or raise the cap where it is configurable.")


def _kind(mode: int) -> str:
    for test, name in ((statmod.S_ISLNK, "a symbolic link"), (statmod.S_ISDIR, "a folder"),
                       (statmod.S_ISREG, "a file"), (statmod.S_ISFIFO, "a fifo"),
                       (statmod.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "a device"
