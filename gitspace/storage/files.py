"""The one way gitspace writes into a work tree, and reads what an op is built from.

Invariants:
- No symbolic link below the root is ever followed, at the moment of the write and not only at a
  check: a path is walked one folder at a time from a descriptor of the root (``openat`` with
  ``O_NOFOLLOW | O_DIRECTORY``), and every create, rename, unlink and rmdir is made relative to
  the descriptor of its own folder. Another process renaming folders or planting links
  meanwhile changes which folder a descriptor names, never where a write can land.
- A path is plain: ``/``-separated parts, none empty, ``.``, ``..`` or a spelling of ``.git``
  (gitnames.is_dotgit: any case, trailing dots or spaces, ``GIT~1``, an NTFS stream, HFS+
  ignorables). History can name other paths (trees are input); they are refused before anything
  is written. (core/paths.py is the whole policy; this is the writer's last line.)
- A file is written whole: into a new temporary file in its own folder (``O_CREAT | O_EXCL |
  O_NOFOLLOW``), then renamed over the path. A failed write leaves the path as it was, no
  temporary file and no folder it created, with one exception it reports: in a durable work
  tree the folder is flushed after the rename, and when that fails the path already holds the
  new content (the caller puts the old one back). A file's mode is 644 or 755, a link is a link,
  except under ``memories/`` (OWNER_ONLY_FOLDER), which is owner-only as Anthropic's reference
  memory backend keeps it: files 600 or 700, and the folders made there (itself included) 700,
  whoever writes (the memory tool, a restore, an undo, a pull) and whatever the umask.
- Reading never follows a link either: a path beneath a link or a file is absent (as git sees
  it); a link reads as its target text; a fifo, socket or device is refused, never opened in a
  way that blocks.

What a write may remove to make room (git's own rule for a checkout), and nothing else:
- what the caller plans to replace: the path it writes (a file or a link; an empty folder), or
  the path it deletes. ``order`` puts deletions first, deepest first, so a planned deletion of
  ``lnk`` or ``fd`` is done before ``lnk/file`` or ``fd/x`` is written;
- folders left empty by a deletion, up to the root.
Anything else in the way is the user's and raises ``InTheWay``, changing nothing: a file, link,
fifo, socket or device where a folder is needed, a non-empty folder where a file goes, a special
file at the path itself.
"""

from __future__ import annotations

import errno
import os
import re
import stat as statmod
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from .. import faults
from ..errors import FileRefused, PathRefused, ToolFailed
from .gitnames import is_dotgit

OWNER_ONLY_FOLDER = "memories"  # the memory tool's folder (tools/memory.py)
FILE_MODE = 0o100644
EXEC_MODE = 0o100755
LINK_MODE = 0o120000

State = tuple[bytes, int] | None  # (content, git mode); None: absent

TMP_PREFIX = ".gitspace-"
TMP_NAME = re.compile(r"\.gitspace-[a-z0-9_]{8}")  # the watcher and recovery know these names
_TMP_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789_"

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_RETRIES = 8  # a racing process can undo a mkdir or swap a file between two calls


class InTheWay(ToolFailed):
    """Something gitspace may not remove stands where a write needs to go."""


def parts_of(rel: str) -> list[str]:
    """The parts of a work-tree path, or PathRefused for one that leaves the tree or enters .git."""
    parts = rel.split("/")
    for part in parts:
        if part in ("", ".", "..") or "\0" in part or is_dotgit(part):
            raise PathRefused(
                f"gitspace refused the path {rel!r}: its part {part!r} would lead outside the "
                "work tree or into .git, so nothing was written.",
                hint="The history names a path git itself refuses ('git fsck' reports such "
                     "trees); do not check that commit out.")
    return parts


def is_plain(rel: str) -> bool:
    """Can the work-tree writer name ``rel``? (Not a path holding a .git spelling, or leaving
    the tree: ``parts_of`` refuses those.)"""
    try:
        parts_of(rel)
    except PathRefused:
        return False
    return True


def order(changes: Mapping[str, State]) -> list[str]:
    """The paths of ``changes`` in the order to apply them: deletions first, deepest first (a
    folder's files go before the file that replaces it), then writes, shallowest first."""
    deletions = sorted((p for p, s in changes.items() if s is None),
                       key=lambda p: (-p.count("/"), p))
    writes = sorted((p for p, s in changes.items() if s is not None),
                    key=lambda p: (p.count("/"), p))
    return deletions + writes


def _kind(mode: int) -> str:
    if statmod.S_ISLNK(mode):
        return "a symbolic link"
    if statmod.S_ISREG(mode):
        return "a file"
    if statmod.S_ISDIR(mode):
        return "a folder"
    if statmod.S_ISFIFO(mode):
        return "a fifo"
    if statmod.S_ISSOCK(mode):
        return "a socket"
    return "a device"


def _lstat_at(folder: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _open_folder(folder: int, name: str) -> int | None:
    """A descriptor of folder ``name`` in ``folder``; None if absent; -1 if it is no folder."""
    try:
        return os.open(name, _DIR, dir_fd=folder)
    except FileNotFoundError:
        return None
    except OSError as e:
        if e.errno in (errno.ENOTDIR, errno.ELOOP):
            return -1
        raise


class _Chain:
    """Open descriptors from the root down to one path's folder (closed together)."""

    def __init__(self, root: int) -> None:
        self.fds = [root]
        self.names: list[str] = []
        self.made = 0  # the last ``made`` folders of the chain were created by this write

    @property
    def folder(self) -> int:
        return self.fds[-1]

    def push(self, name: str, fd: int, made: bool) -> None:
        self.fds.append(fd)
        self.names.append(name)
        self.made = self.made + 1 if made else 0

    def prune(self, only_made: bool) -> None:
        """Remove the chain's empty folders from the deepest up (only those this write made)."""
        count = self.made if only_made else len(self.names)
        for depth in range(len(self.names), len(self.names) - count, -1):
            try:
                os.rmdir(self.names[depth - 1], dir_fd=self.fds[depth - 1])
            except OSError:
                return  # not empty (or gone): everything above it stays

    def close(self) -> None:
        for fd in self.fds[1:]:
            os.close(fd)
        self.fds = self.fds[:1]


class Files:
    """Reads and writes one work tree under the rules of the module docstring."""

    def __init__(self, root: Path, *, durable: bool = False, private: bool = False) -> None:
        self.root = root
        # fsync each file before its rename and its folder after: survives a power cut, costs
        # milliseconds per file. A process crash needs no fsync (the op journal covers it).
        self.durable = durable
        # A work tree nobody else reads (replay's scratch): a file is unlinked before its
        # replacement is renamed in, which spares ext4's flush on a rename over a file.
        self.private = private

    # -- for a program that reads the disk itself (a constraint script, a walk of a folder) --

    def whole(self, rel: str = "") -> Path:
        """The work tree, every file of it (below ``rel``) on disk: here always; a delegated
        child's work tree fills on first touch and checks out the rest when this is asked."""
        return self.root

    def reader(self) -> tuple[Path, Path | None]:
        """Where a program that only reads the work tree finds every file of it: (that folder,
        the git dir whose cache goes with it; None: this checkout's own). Here, the work tree."""
        return self.root, None

    @contextmanager
    def _root(self) -> Iterator[int]:
        fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            yield fd
        finally:
            os.close(fd)

    # -- reading -----------------------------------------------------------------------------

    def _find(self, root: int, parts: list[str]) -> _Chain | None:
        """The chain down to the folder holding ``parts[-1]``, or None when a folder on the way
        is absent, a link or a file (the path then does not exist, as git sees it)."""
        chain = _Chain(root)
        for name in parts[:-1]:
            fd = _open_folder(chain.folder, name)
            if fd is None or fd < 0:
                chain.close()
                return None
            chain.push(name, fd, made=False)
        return chain

    @contextmanager
    def _folder_of(self, parts: list[str]) -> Iterator[int | None]:
        """The descriptor of the folder holding ``parts[-1]`` (None: see ``_find``)."""
        with self._root() as root:
            chain = self._find(root, parts)
            try:
                yield None if chain is None else chain.folder
            finally:
                if chain is not None:
                    chain.close()

    def stat(self, rel: str) -> os.stat_result | None:
        """The path's own stat (a link is not followed), None when absent."""
        parts = parts_of(rel)
        with self._folder_of(parts) as folder:
            return None if folder is None else _lstat_at(folder, parts[-1])

    def listing(self, rel: str) -> list[tuple[str, os.stat_result]] | None:
        """The entries of folder ``rel`` ("" for the root) with their own stats (links are not
        followed), sorted by name; None when it, or a folder on the way, is absent, a link or a
        file. Read through a descriptor of the folder itself, so a folder swapped for a link
        while it is listed never shows what lies beyond the link."""
        parts = parts_of(rel) + [""] if rel else [""]
        with self._folder_of(parts) as folder:
            if folder is None:
                return None
            found = []
            for name in sorted(os.listdir(folder)):
                st = _lstat_at(folder, name)
                if st is not None:  # (gone since the listing)
                    found.append((name, st))
            return found

    def read(self, rel: str, *, limit: int | None = None,
             stats: dict[str, os.stat_result] | None = None) -> State:
        """(content, git mode) of a path, None when absent or a folder.

        The stat kept in ``stats`` is taken before the content is read: an index entry built
        from it can only be older than the content, so git re-checks rather than trusts it. A
        file larger than ``limit`` is refused before it is read.
        """
        parts = parts_of(rel)
        with self._folder_of(parts) as folder:
            if folder is None:
                return None
            for _ in range(_RETRIES):
                found = self._read_at(folder, parts[-1], rel, limit, stats)
                if found is not _SWAPPED:
                    return found  # type: ignore[return-value]
        raise ToolFailed(f"{rel} kept changing between a link and a file while gitspace read it.",
                         hint="Stop the process changing it, then try again.")

    def _read_at(self, folder: int, name: str, rel: str, limit: int | None,
                 stats: dict[str, os.stat_result] | None) -> State | object:
        st = _lstat_at(folder, name)
        if st is None:
            return None
        if stats is not None:
            stats[rel] = st
        if statmod.S_ISLNK(st.st_mode):
            try:
                return os.fsencode(os.readlink(name, dir_fd=folder)), LINK_MODE
            except (FileNotFoundError, OSError) as e:
                if getattr(e, "errno", None) in (errno.EINVAL, errno.ENOENT):
                    return _SWAPPED  # no longer a link
                raise
        if statmod.S_ISDIR(st.st_mode):
            return None
        if not statmod.S_ISREG(st.st_mode):
            raise _special(rel, st.st_mode)
        if limit is not None and st.st_size > limit:
            raise _too_large(rel, st.st_size, limit)  # (not even opened; fstat checks again)
        try:
            fd = os.open(name, _READ, dir_fd=folder)
        except FileNotFoundError:
            return None
        except OSError as e:
            if e.errno == errno.ELOOP:
                return _SWAPPED  # became a link since the stat
            raise
        try:
            st = os.fstat(fd)
            if not statmod.S_ISREG(st.st_mode):
                raise _special(rel, st.st_mode)
            if stats is not None:
                stats[rel] = st
            if limit is not None and st.st_size > limit:
                raise _too_large(rel, st.st_size, limit)
            data = _read_all(fd, None if limit is None else limit + 1)
            if limit is not None and len(data) > limit:
                raise _too_large(rel, len(data), limit)
        finally:
            os.close(fd)
        return data, EXEC_MODE if st.st_mode & 0o100 else FILE_MODE

    # -- writing -----------------------------------------------------------------------------

    def put(self, rel: str, state: State, *, changed: list[str] | None = None
            ) -> os.stat_result | None:
        """Make ``rel`` hold ``state`` (None: absent); the stat of what was written. A write
        that fails after the path changed (only its folder's flush can) adds ``rel`` to
        ``changed`` before it raises."""
        parts = parts_of(rel)
        with self._root() as root:
            if state is None:
                self._delete(root, parts)
                return None
            for _ in range(_RETRIES):
                try:
                    chain = self._make_folders(root, parts, rel)
                except FileNotFoundError:
                    continue  # a folder on the way was removed meanwhile: walk again
                try:
                    return self._write_at(chain, parts[-1], rel, *state, changed)
                except FileNotFoundError:
                    chain.prune(only_made=True)  # the folder held was removed: walk again
                except BaseException:
                    chain.prune(only_made=True)
                    raise
                finally:
                    chain.close()
            raise _kept_changing(rel)

    def _delete(self, root: int, parts: list[str]) -> None:
        chain = self._find(root, parts)
        if chain is None:
            return  # beneath a link or a file: there is nothing of ours to delete
        try:
            st = _lstat_at(chain.folder, parts[-1])
            if st is None:
                return
            if statmod.S_ISDIR(st.st_mode):
                try:
                    os.rmdir(parts[-1], dir_fd=chain.folder)  # only an empty one
                except OSError:
                    return
            elif not (statmod.S_ISREG(st.st_mode) or statmod.S_ISLNK(st.st_mode)):
                raise InTheWay(f"{'/'.join(parts)} is {_kind(st.st_mode)} in the work tree, "
                               "which gitspace never removes.", hint="Move it away, then try "
                               "again.")
            else:
                try:
                    faults.hit("file.remove")
                    os.unlink(parts[-1], dir_fd=chain.folder)
                except FileNotFoundError:
                    pass
            chain.prune(only_made=False)
        finally:
            chain.close()

    def _make_folders(self, root: int, parts: list[str], rel: str) -> _Chain:
        """The chain down to ``rel``'s folder, creating missing folders (never through a link)."""
        chain = _Chain(root)
        try:
            for depth, name in enumerate(parts[:-1]):
                for _ in range(_RETRIES):
                    fd = _open_folder(chain.folder, name)
                    if fd is not None and fd >= 0:
                        chain.push(name, fd, made=False)
                        break
                    if fd is not None:  # a link, file or special file where a folder goes
                        st = _lstat_at(chain.folder, name)
                        if st is None:
                            continue  # removed meanwhile: look again
                        raise _in_the_way_of_folder(rel, "/".join(parts[: depth + 1]), st.st_mode)
                    owner_only = parts[0] == OWNER_ONLY_FOLDER
                    try:
                        os.mkdir(name, 0o700 if owner_only else 0o777, dir_fd=chain.folder)
                    except FileExistsError:
                        continue  # made meanwhile (by a racing process): look again
                    fd = _open_folder(chain.folder, name)
                    if fd is not None and fd >= 0:
                        chain.push(name, fd, made=True)
                        if owner_only:
                            os.fchmod(fd, 0o700)  # (mkdir's mode is masked by the umask)
                        break
                else:
                    raise _kept_changing(rel)
        except BaseException:
            chain.prune(only_made=True)
            chain.close()
            raise
        return chain

    def _write_at(self, chain: _Chain, name: str, rel: str, data: bytes, mode: int,
                  changed: list[str] | None) -> os.stat_result:
        folder = chain.folder
        st = _lstat_at(folder, name)
        if st is not None and not (statmod.S_ISREG(st.st_mode) or statmod.S_ISLNK(st.st_mode)
                                   or statmod.S_ISDIR(st.st_mode)):
            raise InTheWay(f"{rel} is {_kind(st.st_mode)} in the work tree, which gitspace never "
                           "replaces.", hint="Move it away, then try again.")
        tmp = self._temporary(folder, data, mode,
                              owner_only=rel.split("/", 1)[0] == OWNER_ONLY_FOLDER)
        try:
            if st is not None and statmod.S_ISDIR(st.st_mode):
                try:
                    os.rmdir(name, dir_fd=folder)  # an empty folder holds nothing to lose
                except OSError:
                    raise InTheWay(f"{rel} is a folder in the work tree; it cannot become a "
                                   "file.", hint="Move or delete the folder first.") from None
            try:
                faults.hit("file.replace")
                if self.private and st is not None and not statmod.S_ISDIR(st.st_mode):
                    _unlink_quietly(folder, name)
                os.replace(tmp, name, src_dir_fd=folder, dst_dir_fd=folder)
            except IsADirectoryError:  # a folder put there since the lstat (another process)
                raise InTheWay(f"{rel} became a folder while gitspace wrote it; it cannot "
                               "become a file.", hint="Stop the process changing it, then try "
                               "again.") from None
        except BaseException:
            _unlink_quietly(folder, tmp)
            raise
        if self.durable:
            try:
                faults.hit("file.fsync")
                os.fsync(folder)
            except BaseException:
                if changed is not None:
                    changed.append(rel)  # renamed already: only the caller can put it back
                raise
        return os.stat(name, dir_fd=folder, follow_symlinks=False)

    def _temporary(self, folder: int, data: bytes, mode: int, *, owner_only: bool = False) -> str:
        """A new temporary file (or link) in ``folder`` holding ``data``; its name."""
        import secrets  # here, not at the top: a harness's before hook reads files, never writes

        for _ in range(_RETRIES):
            tmp = TMP_PREFIX + "".join(secrets.choice(_TMP_CHARS) for _ in range(8))
            try:
                if mode == LINK_MODE:
                    faults.hit("file.write")
                    os.symlink(os.fsdecode(data), tmp, dir_fd=folder)
                    return tmp
                fd = os.open(tmp, _NEW, 0o600, dir_fd=folder)
            except FileExistsError:
                continue
            try:
                faults.hit("file.write")
                _write_all(fd, data)
                faults.hit("file.chmod")
                os.fchmod(fd, (0o700 if mode == EXEC_MODE else 0o600) if owner_only
                          else 0o755 if mode == EXEC_MODE else 0o644)
                if self.durable:
                    faults.hit("file.fsync")
                    os.fsync(fd)
            except BaseException:
                os.close(fd)
                _unlink_quietly(folder, tmp)
                raise
            os.close(fd)
            return tmp
        raise ToolFailed("Could not create a temporary file in the work tree.")

    def open_lock_file(self, rel: str) -> int:
        """A read-write descriptor of ``rel`` (created if missing, mode 600), for ``flock``:
        reached like a write, never through a link."""
        parts = parts_of(rel)
        with self._root() as root:
            chain = self._make_folders(root, parts, rel)
            try:
                return os.open(parts[-1], os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
                               0o600, dir_fd=chain.folder)
            except OSError as e:
                if e.errno != errno.ELOOP:
                    raise
                raise InTheWay(f"{rel} is a symbolic link; gitspace never opens a file through "
                               "one.", hint="Move it away, then try again.") from None
            finally:
                chain.close()

    def append(self, rel: str, data: bytes) -> int:
        """Add ``data`` at the end of the regular file ``rel`` (never through a link; flushed in
        a durable work tree) and return the file's size after it. For gitspace's own logs, not
        for files an op builds: an absent file raises FileNotFoundError (whoever appends made
        it whole first, with ``put``), a link or special file InTheWay."""
        parts = parts_of(rel)
        with self._folder_of(parts) as folder:
            if folder is None:
                raise FileNotFoundError(rel)
            try:
                fd = os.open(parts[-1], os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_NONBLOCK
                             | os.O_CLOEXEC, dir_fd=folder)
            except OSError as e:
                st = _lstat_at(folder, parts[-1])
                if st is None or e.errno not in (errno.ELOOP, errno.ENXIO, errno.EISDIR):
                    raise
                raise _not_appendable(rel, st.st_mode) from None
            try:
                st = os.fstat(fd)
                if not statmod.S_ISREG(st.st_mode):
                    raise _not_appendable(rel, st.st_mode)
                _write_all(fd, data)
                if self.durable:
                    faults.hit("file.fsync")
                    os.fdatasync(fd)
                return os.fstat(fd).st_size
            finally:
                os.close(fd)

    def remove_tmp_files(self, rels: Iterable[str]) -> None:
        """Delete the temporary files a crashed write left in the folders of ``rels``."""
        for parts in {tuple(parts_of(rel)[:-1]) for rel in rels}:
            with self._folder_of([*parts, ""]) as folder:
                if folder is None:
                    continue
                for name in os.listdir(folder):
                    if TMP_NAME.fullmatch(name):
                        _unlink_quietly(folder, name)


_SWAPPED = object()  # read again: the entry changed kind between two calls


def _read_all(fd: int, cap: int | None) -> bytes:
    chunks = []
    total = 0
    while cap is None or total < cap:
        chunk = os.read(fd, 1 << 20 if cap is None else min(1 << 20, cap - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    return b"".join(chunks)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _unlink_quietly(folder: int, name: str) -> None:
    try:
        os.unlink(name, dir_fd=folder)
    except FileNotFoundError:
        pass


def _kept_changing(rel: str) -> ToolFailed:
    return ToolFailed(f"A folder of {rel} kept changing while gitspace wrote it.",
                      hint="Stop the process changing it, then try again.")


def _not_appendable(rel: str, mode: int) -> InTheWay:
    return InTheWay(f"{rel} is {_kind(mode)}, not a regular file: gitspace never appends to one.",
                    hint="Move it away, then try again.")


def _special(rel: str, mode: int) -> FileRefused:
    return FileRefused(f"{rel} is {_kind(mode)}, not a regular file: gitspace neither reads nor "
                       "replaces it.", hint="Move it out of the workspace, or add it to "
                       ".gitignore.")


def _too_large(rel: str, size: int, limit: int) -> FileRefused:
    return FileRefused(
        f"{rel} is {size:,} bytes, over the {limit:,}-byte cap for files gitspace edits.",
        hint="Read it with the constraint tools (stat, grep, peek, range).",
    )


def _in_the_way_of_folder(rel: str, where: str, mode: int) -> InTheWay:
    if statmod.S_ISREG(mode):
        return InTheWay(f"A parent of {rel} is a file, not a folder: {where}.",
                        hint=f"Delete or rename {where} first.")
    return InTheWay(f"A parent of {rel} is {_kind(mode)}, not a folder: {where}. gitspace never "
                    "writes through a link and never removes what it did not put there.",
                    hint=f"Move {where} away (or record it with 'gitspace snapshot' and delete "
                         "it), then try again.")
