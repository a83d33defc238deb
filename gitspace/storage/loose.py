"""Loose objects and finding a repository, with the standard library only (and ``faults``).

Invariant: nothing here starts git or imports GitPython, so a process that needs only this (a
harness's before hook) starts fast; ``objects`` builds on it and stays the door for everything
else. An object is written by tmp-file-and-rename, so a crash never leaves a partial one; a read
that meets anything unusual returns None and the caller asks git.
"""

from __future__ import annotations

import os
import zlib
from pathlib import Path

from .. import faults

TYPE_CHECKING = False  # typing is not imported at run time: a harness's before hook reads here
if TYPE_CHECKING:
    from typing import Any

try:  # CPython's own SHA-1: hashlib would load OpenSSL, which costs more than a hook's whole run
    from _sha1 import sha1 as _sha1
except ImportError:  # pragma: no cover  (other interpreters)
    from hashlib import sha1 as _sha1

TREE_MODE = 0o040000
FILE_MODE = 0o100644
EXEC_MODE = 0o100755
LINK_MODE = 0o120000


def find(path: Path) -> tuple[Path, Path, Path] | None:
    """(work tree, git dir, common git dir) of the ordinary checkout containing ``path``: the
    nearest ``.git`` folder, or a linked worktree's ``.git`` file and its ``commondir``. None when
    there is none or anything is less plain than that (the caller then asks git)."""
    try:
        here = path.resolve(strict=True)
    except OSError:
        return None
    for top in (here, *here.parents):
        dot = top / ".git"
        if dot.is_dir():
            gitdir = dot
        elif dot.is_file():
            text = dot.read_text(errors="replace").strip()
            if not text.startswith("gitdir: "):
                return None
            gitdir = (top / text[len("gitdir: "):]).resolve()
        else:
            continue
        common = gitdir
        if (gitdir / "commondir").is_file():
            common = (gitdir / (gitdir / "commondir").read_text().strip()).resolve()
        if not (gitdir / "HEAD").is_file() or not (common / "objects").is_dir():
            return None
        try:  # an extension (SHA-256 objects, reftable...) is for git and gitrepo's checks to read
            if b"[extensions]" in (common / "config").read_bytes().lower():
                return None
        except OSError:
            return None
        return top, gitdir, common
    return None


def object_path(objects: Path, sha: str) -> Path | None:
    if len(sha) != 40 or not all(c in "0123456789abcdef" for c in sha):
        return None
    return objects / sha[:2] / sha[2:]


def read(objects: Path, sha: str) -> tuple[str, bytes] | None:
    """(kind, content) of a loose object, or None (packed, absent, or unreadable: ask git)."""
    path = object_path(objects, sha)
    try:
        raw = zlib.decompress(path.read_bytes()) if path is not None else None
    except (OSError, zlib.error):
        return None
    if raw is None:
        return None
    header, _, data = raw.partition(b"\0")
    kind, _, size = header.partition(b" ")
    if not size.isdigit() or int(size) != len(data):
        return None
    return kind.decode("ascii", "replace"), data


# From this size on, OpenSSL's SHA-1 (hashlib) is worth its import (~10 ms, once): it hashes a
# 10,000-entry index (1 MB) in 1 ms where CPython's own takes 10 ms, and that is on every op.
_LARGE = 64 * 1024


def _hasher(data: bytes) -> Any:
    if len(data) < _LARGE:
        return _sha1(data)
    import hashlib

    return hashlib.sha1(data)


def sha1_hex(data: bytes) -> str:
    return _hasher(data).hexdigest()


def sha1_digest(data: bytes) -> bytes:
    return _hasher(data).digest()


def hash_object(kind: str, data: bytes) -> str:
    return sha1_hex(b"%s %d\0" % (kind.encode(), len(data)) + data)


def write(objects: Path, kind: str, data: bytes) -> str:
    """Store an object (if it is not there yet); its id."""
    raw = b"%s %d\0" % (kind.encode(), len(data)) + data
    sha = sha1_hex(raw)
    folder = objects / sha[:2]
    target = folder / sha[2:]
    if target.exists():
        return sha
    fd, tmp = _object_tmp(folder)
    try:
        with os.fdopen(fd, "wb") as out:
            faults.hit("object.write")
            out.write(zlib.compress(raw, 1))
        os.chmod(tmp, 0o444)
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return sha


def _object_tmp(folder: Path) -> tuple[int, Path]:
    # A background repack's prune-packed removes empty fan-out folders at any moment (git's
    # own writers retry likewise); once our tmp file is inside, the folder stays. (Not
    # tempfile.mkstemp: importing tempfile costs a hook more than writing the object.)
    for attempt in range(10):
        try:
            os.mkdir(folder)
        except FileExistsError:
            pass  # pathlib's exist_ok re-checks is_dir(), which a prune can falsify meanwhile
        tmp = folder / f"tmp_obj_{os.urandom(6).hex()}"
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), tmp
        except FileNotFoundError:
            if attempt == 9:
                raise
        except FileExistsError:
            continue
    raise AssertionError("unreachable")


def read_ref(gitdir: Path, commondir: Path, ref: str) -> str | None:
    """A ref's commit id from its loose file or packed-refs (HEAD followed once); None when it
    cannot be read this simply."""
    if ref == "HEAD":
        try:
            head = (gitdir / "HEAD").read_text().strip()
        except OSError:
            return None
        if not head.startswith("ref: "):
            return head if object_path(commondir, head) is not None else None
        ref = head[len("ref: "):]
    try:
        value = (commondir / ref).read_text().strip()
        return value if object_path(commondir, value) is not None else None
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        pass
    except OSError:
        return None
    try:
        for line in (commondir / "packed-refs").read_text().splitlines():
            sha, _, name = line.partition(" ")
            if name == ref:
                return sha
    except OSError:
        return None
    return None
