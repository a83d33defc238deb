"""A private index: git's own index format in a file of gitspace's, so that git finds what
changed in a person's work tree without ever writing their ``.git/index``.

It lives at ``<git dir>/gitspace/inplace/index`` (one per checkout: linked worktrees each have
their own). Every git command here runs with ``GIT_INDEX_FILE`` pointing at it, hooks off,
``core.fsmonitor`` and ``core.splitIndex`` off (a split index would leave shared-index files in
the person's git folder), so the person's index, its lock and its shared files are never opened
for writing.

Nothing here imports more than the standard library needs at the moment: the before hook of a
file tool uses ``readable`` alone.

Invariants:
- It is a cache, never a record: entries tell git which files it need not look at again (their
  stat data). Whatever it holds, a path where the work tree differs from it is reported; the
  caller compares what it reads with the line, not with this file.
- It starts as a byte copy of the person's index (their stat data is good for their work tree,
  so the first scan re-reads only what they changed), made unsplit; paths Git LFS owns are
  marked skip-worktree, so git never runs a filter on them or reads their (smudged) content.
- ``changed`` is one ``git status`` against it, which may refresh its stat data (it is ours);
  ``set`` writes entries through ``git update-index --index-info`` (no stat data: the next
  status hashes those few files once and refreshes them).
"""

from __future__ import annotations

import os
from pathlib import Path

from .. import config
from . import statefiles

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping

    from .gitrepo import GitRepo
    from .objects import Entry

_QUIET = ("-c", "core.splitIndex=false", "-c", "core.untrackedCache=false",
          "-c", "status.showUntrackedFiles=all")
LFS = ":(attr:filter=lfs)"


def path(gitdir: Path) -> Path:
    return gitdir / "gitspace" / "inplace" / "index"


def rebuild(repo: GitRepo, index: Path) -> str:
    """Make ``index`` anew from the person's index (from HEAD when they have none, or theirs
    holds a conflict); the tree it holds."""
    statefiles.folder(index.parent.parent, index.parent.name)  # never a link (statefiles)
    tmp = index.with_name(f".index.{os.urandom(6).hex()}.tmp")
    git = Git(repo, tmp)
    try:
        tree = ""
        try:
            theirs = (repo.gitdir / "index").read_bytes()
        except FileNotFoundError:
            pass
        else:  # (a file of our own, made exclusively: nothing planted there is written through)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
            with os.fdopen(fd, "wb") as out:
                out.write(theirs)
            git("update-index", "--no-split-index", check=False)
            tree = git("write-tree", check=False).strip().decode()
        if not tree:  # no index, or unmerged entries (a merge in progress)
            tmp.unlink(missing_ok=True)
            head = repo.read_ref("HEAD")
            git("read-tree", *([head] if head else ["--empty"]))
            tree = git("write-tree").strip().decode()
        lfs = git("ls-files", "-z", "--", LFS, check=False)
        if lfs.strip(b"\0"):
            git("update-index", "-z", "--skip-worktree", "--stdin", input=lfs)
        os.replace(tmp, index)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tree


def changed(repo: GitRepo, index: Path, *, refresh: bool = True) -> list[str]:
    """Every path whose work-tree file differs from ``index``, or that it lacks (untracked, not
    ignored): one ``git status`` (which refreshes the index's stat data, unless ``refresh`` is
    False: a reader beside a hook that may be writing it)."""
    quiet = () if refresh else ("--no-optional-locks",)
    out = Git(repo, index)(*quiet, "status", "--porcelain=v2", "-z", "--untracked-files=all",
                            "--no-renames", "--ignore-submodules=all")
    found = []
    for record in out.split(b"\0"):
        if record[:2] == b"? ":
            found.append(os.fsdecode(record[2:]))
        elif record[:2] == b"1 " and record[3:4] != b".":
            found.append(os.fsdecode(record.split(b" ", 8)[8]))
        elif record[:2] == b"u ":
            found.append(os.fsdecode(record.split(b" ", 10)[10]))
    return found


def set_entries(repo: GitRepo, index: Path, entries: Mapping[str, Entry | None]) -> None:
    """Make ``index`` hold ``entries`` (None: no entry) for their paths."""
    if not entries:
        return
    lines = [f"0 {'0' * 40}\t{rel}" if e is None or e.is_tree else f"{e.mode:o} {e.sha}\t{rel}"
             for rel, e in entries.items()]
    Git(repo, index)("update-index", "-z", "--index-info",
                      input=("\0".join(lines) + "\0").encode("utf-8", "surrogateescape"))


def skip_worktree(repo: GitRepo, index: Path, rels: Iterable[str]) -> None:
    """Mark ``rels`` skip-worktree: git never looks at (nor filters) their work-tree files."""
    names = sorted(rels)
    if names:
        Git(repo, index)("update-index", "-z", "--skip-worktree", "--stdin",
                         input="\0".join(names).encode("utf-8", "surrogateescape") + b"\0")


def sparse(repo: GitRepo, rels: Iterable[str]) -> set[str]:
    """Which of ``rels`` the person's own index marks skip-worktree (a sparse checkout's files
    outside its cone, or ones set by hand): absent from the work tree on purpose, so never a
    deletion to record and never a file to write. Read from their index, which is only read."""
    names = sorted(rels)
    if not names:
        return set()
    out = repo.git("--no-optional-locks", "ls-files", "-t", "-z", "--", *(
        f":(literal){rel}" for rel in names), check=False)
    return {os.fsdecode(record[2:]) for record in out.split(b"\0") if record[:2] == b"S "}


def filtered(repo: GitRepo, rels: Iterable[str]) -> set[str]:
    """Which of ``rels`` a git filter owns (Git LFS, or any other ``filter`` attribute): their
    content in the work tree is not what git stores, and gitspace never reads it. The
    attributes come from the work tree's ``.gitattributes`` (no index is loaded)."""
    names = list(rels)
    if not names:
        return set()
    out = Git(repo, _NO_INDEX)("check-attr", "-z", "--stdin", "filter", input="\0".join(names).encode(
            "utf-8", "surrogateescape") + b"\0")
    fields = out.split(b"\0")
    found = set()
    for i in range(0, len(fields) - 2, 3):
        if fields[i + 2] not in (b"unspecified", b"unset"):
            found.add(os.fsdecode(fields[i]))
    return found


def readable(root: Path, gitdir: Path, commondir: Path, rel: str, tracked: bool) -> bool:
    """May gitspace read work-tree file ``rel``? Not when it is ignored (unless ``tracked``: git
    stages changes to a tracked file whatever ignores it) or a filter owns it. One git process
    that loads no index, started without GitRepo or ``subprocess`` (this runs in a before hook,
    where importing them costs more than the process); False also when the file is absent."""
    standard = [] if tracked else ["--exclude-standard"]
    env = config.child_environment({
        "GIT_DIR": str(gitdir), "GIT_WORK_TREE": str(root), "GIT_COMMON_DIR": str(commondir),
        "GIT_INDEX_FILE": str(gitdir / "gitspace" / "inplace" / "absent"),
        "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0"})
    out = _run(["git", "-C", str(root), "-c", "core.hooksPath=/dev/null", "-c",
                "core.fsmonitor=false", "ls-files", "-z", "--others", *standard, "--",
                f":(literal,attr:!filter){rel}"], env)
    return out is not None and out.split(b"\0")[0] == os.fsencode(rel)


def _run(argv: list[str], env: dict[str, str]) -> bytes | None:
    """A child's stdout (its stdin and stderr /dev/null), or None when it failed."""
    read, write = os.pipe()
    null = os.open(os.devnull, os.O_RDWR)
    try:
        pid = os.posix_spawnp(argv[0], argv, env, file_actions=[
            (os.POSIX_SPAWN_DUP2, null, 0), (os.POSIX_SPAWN_DUP2, write, 1),
            (os.POSIX_SPAWN_DUP2, null, 2), (os.POSIX_SPAWN_CLOSE, read)])
    finally:
        os.close(write)
        os.close(null)
    chunks = []
    try:
        while chunk := os.read(read, 65536):
            chunks.append(chunk)
    finally:
        os.close(read)
        _, status = os.waitpid(pid, 0)
    return b"".join(chunks) if os.waitstatus_to_exitcode(status) == 0 else None


class Git:
    """git with ``GIT_INDEX_FILE`` at ``index`` (``_NO_INDEX``: an empty index) and the settings
    above."""

    def __init__(self, repo: GitRepo, index: Path) -> None:
        self.repo = repo
        self.index = repo.gitdir / "gitspace" / "inplace" / "absent" if index is _NO_INDEX \
            else index

    def __call__(self, *args: str, input: bytes | None = None, check: bool = True) -> bytes:
        return self.repo.git(*_QUIET, *args, input=input, check=check, index=self.index)


_NO_INDEX = Path("(no index)")  # a file that is never made: git reads it as an empty index
