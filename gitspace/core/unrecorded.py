"""The diff of changes not recorded yet: the files on disk against the commit they came from.

Invariant: reading it writes nothing of the repository's, not even an object. git compares the
work tree with ``base`` through a throwaway copy of the index (in a temporary folder, removed
afterwards) into which each new file is entered with the id its content would have: git then
reads the file itself from disk, so new files show as new, and the work tree's own index (a
person's, in their own checkout) is never opened for writing.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import stat
import tempfile
from pathlib import Path

from ..storage.gitrepo import GitRepo


def patch(repo: GitRepo, base: str, paths: list[str], *, stat_only: bool = False,
          color: bool = False) -> bytes:
    """git's diff from ``base`` (a commit) to the work tree's ``paths`` (those a snapshot would
    record: the caller has left out ignored, excluded and over-cap files)."""
    if not paths:
        return b""
    with tempfile.TemporaryDirectory(prefix="gitspace-diff-") as folder:
        index = Path(folder) / "index"
        own = repo.gitdir / "index"
        if own.is_file():
            shutil.copyfile(own, index)
        tracked = set(os.fsdecode(p) for p in repo.git(
            "--no-optional-locks", "ls-files", "-z", "--", *paths, index=index).split(b"\0") if p)
        rows = [row for row in (_entry(repo.root, p) for p in paths if p not in tracked) if row]
        if rows:
            repo.git("update-index", "-z", "--add", "--index-info", input=b"".join(rows), index=index)
        options = ["--stat"] if stat_only else []
        return repo.git("--no-optional-locks", "diff", f"--color={'always' if color else 'never'}",
                        *options, base, "--", *paths, index=index)


def _entry(root: Path, rel: str) -> bytes | None:
    """An ``update-index --index-info`` line for a new file (its mode and the id its content
    would have: nothing is written); None when it is gone."""
    path = root / rel
    try:
        st = os.lstat(path)
        if stat.S_ISLNK(st.st_mode):
            data, mode = os.fsencode(os.readlink(path)), "120000"
        elif stat.S_ISREG(st.st_mode):
            data, mode = path.read_bytes(), "100755" if st.st_mode & 0o111 else "100644"
        else:
            return None
    except OSError:
        return None
    sha = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()  # noqa: S324 (git's id)
    return f"{mode} {sha}\t".encode() + os.fsencode(rel) + b"\0"
