"""The repository: opening one, git's plumbing commands, merges and packing; one door to git.

``GitRepo`` is made of one part per storage concept, each in its own module: ``objects.py``
(blobs, trees, commits), ``refs.py`` (refs, HEAD, reflogs), ``worktrees.py`` (git's linked
worktrees). The files of a work tree are ``files.py``'s, the index is ``gitindex.py``'s.

Invariant: every git child process runs with hooks disabled, without inherited ``GIT_*``
variables, with the repository pinned explicitly. Identities are passed in, never taken from the
environment.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from .. import config
from ..errors import GitCommandError, NotAWorkspace, NotFound, Unsupported
from . import loose, objects, packs
from .objects import EXEC_MODE, FILE_MODE, Entry, Objects
from .refs import Refs
from .worktrees import LinkedWorktrees

TYPE_CHECKING = False  # (typing is not imported at run time: a hook's after path reads this)
if TYPE_CHECKING:
    import subprocess
    from typing import Any
else:
    class _OnFirstUse:
        """A module imported when first used: a harness's after hook for a file tool starts no
        git process, so it never pays for importing it (~5 ms)."""

        def __init__(self, name: str) -> None:
            self._name = name

        def __getattr__(self, attribute: str) -> Any:
            from importlib import import_module

            return getattr(import_module(self._name), attribute)

    subprocess = _OnFirstUse("subprocess")


MIN_GIT = (2, 38)  # merge-tree --write-tree (merges, undo of older ops, replay --onto)
_git_version: tuple[int, ...] | None = None


def check_git_version() -> tuple[int, ...]:
    """The installed git's version; Unsupported when git is missing or older than MIN_GIT.
    Asked once per process (one ``git version``, about a millisecond)."""
    global _git_version
    if _git_version is None:
        wanted = ".".join(map(str, MIN_GIT))
        try:
            out = subprocess.run(["git", "version"], capture_output=True,
                                 env=config.child_environment()).stdout.decode()
        except FileNotFoundError:
            raise Unsupported("git is not installed (or not on PATH); gitspace runs git itself.",
                              hint=f"Install git {wanted} or newer.") from None
        found = re.match(r"git version (\d+)\.(\d+)(?:\.(\d+))?", out)
        version = tuple(int(n) for n in found.groups(default="0")) if found else (0,)
        if version[:2] < MIN_GIT:
            raise Unsupported(
                f"gitspace needs git {wanted} or newer (for 'git merge-tree --write-tree'); "
                f"this machine has {out.strip() or 'an unknown git'}.",
                hint=f"Install git {wanted} or newer and put it first on PATH.")
        _git_version = version
    return _git_version


def _check_formats(gitdir: Path, commondir: Path, object_format: str) -> None:
    """Refuse repositories whose object or ref storage gitspace cannot write correctly."""
    if object_format != "sha1":
        raise Unsupported(
            f"{gitdir} uses {object_format} object ids; gitspace reads and writes SHA-1 "
            "repositories only, so it will not open this one. Nothing was changed.",
            hint="Use gitspace in a SHA-1 repository (git's default): 'gitspace init DIR' makes one.")
    if (commondir / "reftable").is_dir():
        raise Unsupported(
            f"{gitdir} stores its refs in the reftable format; gitspace moves refs as files, so "
            "it will not open this one. Nothing was changed.",
            hint="Convert it with 'git refs migrate --ref-format=files' (git 2.46 or newer).")


class GitRepo(Objects, Refs, LinkedWorktrees):
    """A git repository with one work tree (the main one or a linked worktree)."""

    # A repository only gitspace's own process reads (replay's scratch): no reflogs, no journal,
    # and files replaced without the flush an atomic rename costs (see lockfile).
    private = False

    def __init__(self, root: Path, gitdir: Path, commondir: Path) -> None:
        self.root = root
        self.gitdir = gitdir
        self.commondir = commondir
        self.objects = commondir / "objects"
        self._env = self._child_env()
        self._gitpython: Any = None  # started for what ``packs`` cannot read (_py)
        self._packs = packs.Packs(self.objects)
        self._trees = objects.TREES  # (what every repository of this process parsed: ids name
        self._commits = objects.COMMITS  # content wherever it is)
        self._packed: tuple[float, dict[str, str]] | None = None
        self._packer: subprocess.Popen[bytes] | None = None
        # Loose objects that start a background repack (0: never); the opener sets it from config.
        self.pack_threshold = 1024

    # -- opening -----------------------------------------------------------------------------

    @classmethod
    def open(cls, path: Path) -> GitRepo:
        check_git_version()
        env = config.child_environment({"GIT_CEILING_DIRECTORIES": ""})
        out = subprocess.run(
            ["git", "rev-parse", "--show-object-format", "--absolute-git-dir", "--git-common-dir",
             "--is-bare-repository", "--show-toplevel"],
            cwd=path,
            env=env,
            capture_output=True,
        )
        lines = out.stdout.decode(errors="surrogateescape").splitlines()
        if len(lines) < 4:
            error = out.stderr.decode(errors="replace").strip()
            if "extension" in error:  # a format this git (and so gitspace) cannot read
                raise Unsupported(f"{path} is a git repository this git cannot read: {error}",
                                  hint="Use gitspace in a repository made by 'gitspace init DIR'.")
            raise NotAWorkspace(
                f"{path} is not inside a git repository.",
                hint="Run 'gitspace init' there first, or pass -C with a workspace folder.",
            )
        object_format, gitdir, common, bare = lines[:4]
        commondir = (Path(common) if os.path.isabs(common) else Path(path, common)).resolve()
        _check_formats(Path(gitdir), commondir, object_format)
        if bare == "true":
            raise NotAWorkspace(
                f"{gitdir} is a bare repository: it has no work tree for gitspace to work in.",
                hint="Clone it ('git clone REPO DIR') and run gitspace in the clone.")
        if len(lines) < 5:
            raise NotAWorkspace(
                f"{path} is inside a git directory, not in a work tree.",
                hint="Run gitspace in the work tree (the folder that holds .git).")
        return cls(Path(lines[4]), Path(gitdir), commondir)

    @classmethod
    def locate(cls, path: Path) -> GitRepo:
        """``open``, without starting git for an ordinary checkout (``loose.find``): for
        short-lived processes such as a harness's hook. Anything less plain, or GIT_* variables
        in the environment that may move the repository, is left to ``open``, which asks git."""
        found = None if config.git_layout_variables() else loose.find(path)
        return cls(*found) if found is not None else cls.open(path)

    @classmethod
    def init(cls, path: Path, branch: str) -> GitRepo:
        check_git_version()
        path.mkdir(parents=True, exist_ok=True)
        # The formats gitspace reads and writes, whatever init.default* a user configured.
        env = config.child_environment({"GIT_DEFAULT_HASH": "sha1", "GIT_DEFAULT_REF_FORMAT": "files"})
        subprocess.run(
            ["git", "init", "--quiet", f"--initial-branch={branch}", str(path)],
            env=env,
            check=True,
            capture_output=True,
        )
        repo = cls.open(path)
        # Our own repositories: no CRLF rewriting, so work-tree bytes equal blob bytes.
        repo.git("config", "core.autocrlf", "false")
        return repo

    def close(self) -> None:
        if self._gitpython is not None:
            self._gitpython.close()
            self._gitpython = None

    def _env_overrides(self) -> dict[str, str]:
        # GitPython starts from os.environ; neutralise every inherited GIT_* and pin the repo.
        overrides = {name: "" for name in config.inherited_git_variables()}
        overrides.update(self._pinned())
        # An empty value does not unset these: git would look for objects in a folder named "".
        overrides["GIT_OBJECT_DIRECTORY"] = str(self.objects)
        overrides["GIT_COMMON_DIR"] = str(self.commondir)
        return overrides

    def _pinned(self) -> dict[str, str]:
        return {
            "GIT_DIR": str(self.gitdir),
            "GIT_WORK_TREE": str(self.root),
            "GIT_INDEX_FILE": str(self.gitdir / "index"),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_TERMINAL_PROMPT": "0",
        }

    def _child_env(self) -> dict[str, str]:
        return config.child_environment(self._pinned())

    # -- plumbing ----------------------------------------------------------------------------

    def run_git(self, *args: str, input: bytes | None = None,
                index: Path | None = None) -> subprocess.CompletedProcess[bytes]:
        """Run a git command with hooks disabled and the repository pinned (to another index
        file than the work tree's own with ``index``)."""
        cmd = ["git", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", *args]
        env = self._env if index is None else {**self._env, "GIT_INDEX_FILE": str(index)}
        return subprocess.run(cmd, cwd=self.root, env=env, input=input, capture_output=True)

    def start_blame(self, path: str, rev: str | None = None) -> subprocess.Popen[bytes]:
        """``git blame --porcelain [REV] -- PATH``, begun and not waited for
        (``communicate()``): a caller does what it can while git works. A revision that reads
        as an option is refused."""
        if rev is not None and rev.startswith("-"):
            raise NotFound(f"{rev!r} is no revision (it reads as an option of git blame).",
                           hint="Name a commit, a branch or a tag, or leave REV out.")
        cmd = ["git", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "blame",
               "--porcelain", *([rev] if rev else []), "--", path]
        return subprocess.Popen(cmd, cwd=self.root, env=self._env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    def git(self, *args: str, input: bytes | None = None, check: bool = True,
            index: Path | None = None) -> bytes:
        """``run_git`` returning stdout; a failure raises GitCommandError unless check=False."""
        proc = self.run_git(*args, input=input, index=index)
        if check and proc.returncode != 0:
            raise GitCommandError(
                f"git {args[0]} failed: {proc.stderr.decode(errors='replace').strip()}"
            )
        return proc.stdout

    def read_git(self, *args: str, check: bool = True) -> bytes:
        """``git`` for readers that run beside writers (the web view): ``--no-optional-locks``,
        so reading never refreshes the index or takes a lock an op may need at that moment."""
        return self.git("--no-optional-locks", *args, check=check)

    # -- work tree helpers -------------------------------------------------------------------

    def status_paths(self) -> list[str]:
        """Paths that differ between HEAD, the index and the work tree (not ignored).

        ``--no-optional-locks``: git must not refresh the index file as a side effect, which in a
        user's own checkout would rewrite their index (gitspace keeps its own index current)."""
        out = self.git(
            "--no-optional-locks", "status", "--porcelain=v1", "-z", "--untracked-files=all",
            "--no-renames",
            "--ignore-submodules=all",
        )
        paths = []
        for record in out.split(b"\0"):
            if len(record) > 3:
                paths.append(os.fsdecode(record[3:]))
        return paths

    def merge_entry(self, ours: Entry | None, base: Entry | None,
                    theirs: Entry | None) -> Entry | None:
        """A three-way merge of one file (written as a blob), or None when it conflicts, a side
        is missing, or an entry is not a regular file."""
        if ours is None or base is None or theirs is None or any(
                e.is_tree or e.mode not in (FILE_MODE, EXEC_MODE) for e in (ours, base, theirs)):
            return None
        merged = self.merge_blobs(self.read_blob(ours.sha), self.read_blob(base.sha),
                                  self.read_blob(theirs.sha))
        if merged is None:
            return None
        mode = theirs.mode if ours.mode == base.mode else ours.mode
        return Entry(mode, self.write_blob(merged))

    def merge_blobs(self, ours: bytes, base: bytes, theirs: bytes) -> bytes | None:
        """A three-way merge of file contents, or None when it conflicts."""
        import tempfile  # (only here: short-lived processes should not pay for it)

        with tempfile.TemporaryDirectory(prefix="gitspace-merge-", dir=self.gitdir) as tmp:
            files = []
            for name, data in (("ours", ours), ("base", base), ("theirs", theirs)):
                p = Path(tmp, name)
                p.write_bytes(data)
                files.append(str(p))
            proc = self.run_git("merge-file", "-p", *files)
        return proc.stdout if proc.returncode == 0 else None

    def maybe_pack(self, threshold: int | None = None, pack_limit: int = 12) -> bool:
        """Pack loose objects in the background once about ``threshold`` (by default
        ``pack_threshold``) have piled up.

        Cheap enough for every op: it looks at two of the 256 fan-out folders (as ``git gc --auto``
        does with one) and starts at most one repack at a time per process. Once there are
        ``pack_limit`` packs they are merged geometrically, so the repository stays near its
        ``git gc`` size. True if a repack was started.
        """
        threshold = self.pack_threshold if threshold is None else threshold
        if threshold <= 0 or self._packer is not None and self._packer.poll() is None:
            return False
        self._packer = None
        sample = 0
        for fan in ("17", "a4"):
            try:
                sample += len(os.listdir(self.objects / fan))
            except FileNotFoundError:
                pass
        if sample * 128 < threshold:
            return False
        try:
            packs = sum(1 for n in os.listdir(self.objects / "pack") if n.endswith(".pack"))
        except FileNotFoundError:
            packs = 0
        # Past pack_limit packs, merge them geometrically (each object is rewritten O(log n)
        # times over a long session) rather than all at once with -a, whose cost grows with it.
        mode = ["--geometric=2", "-d"] if packs >= pack_limit else ["-d"]
        self._packer = subprocess.Popen(
            ["git", "-c", "core.hooksPath=/dev/null", "repack", "-q", *mode],
            cwd=self.root, env=self._env, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )
        return True

    def packing(self) -> bool:
        """Is a background repack this object started still running?"""
        return self._packer is not None and self._packer.poll() is None

    def wait_for_packing(self, timeout: float = 120.0) -> None:
        if self._packer is not None:
            self._packer.wait(timeout)
            self._packer = None

    # -- remotes -----------------------------------------------------------------------------

    def remote_head_resolves(self, remote: str) -> bool:
        """Does ``remote``'s HEAD name a branch that exists there? (A fresh bare repository's
        HEAD names an unborn branch, and a clone of it then checks nothing out.)"""
        proc = self.run_git("ls-remote", "--symref", remote, "HEAD")
        return proc.returncode != 0 or any(
            line.endswith("\tHEAD") and not line.startswith("ref: ")
            for line in proc.stdout.decode(errors="replace").splitlines())

    def remote_url(self, remote: str) -> str:
        """``remote``'s URL as git resolves it (``insteadOf`` included); ``remote`` itself when it
        is no configured remote (a path or URL given directly)."""
        return self.git("remote", "get-url", "--", remote, check=False).decode(
            errors="surrogateescape").strip() or remote

    def local_bare_remote(self, remote: str) -> Path | None:
        """The folder of ``remote`` when it is a bare repository on this machine, else None."""
        url = self.remote_url(remote)
        if url.startswith("file://"):
            url = url[len("file://"):]
        elif "://" in url or ":" in url.split("/", 1)[0]:
            return None  # a URL or host:path: another machine's
        folder = Path(url) if os.path.isabs(url) else self.root / url
        proc = subprocess.run(["git", "--git-dir", str(folder), "rev-parse", "--is-bare-repository"],
                              env=config.child_environment(), capture_output=True)
        return folder if proc.returncode == 0 and proc.stdout.strip() == b"true" else None

    def set_bare_head(self, folder: Path, branch: str) -> None:
        """Point the bare repository ``folder``'s HEAD at ``branch`` (what hosting services do
        on a first push)."""
        proc = subprocess.run(["git", "--git-dir", str(folder), "symbolic-ref", "HEAD",
                               f"refs/heads/{branch}"], env=config.child_environment(),
                              capture_output=True)
        if proc.returncode != 0:
            raise GitCommandError(
                f"git symbolic-ref failed: {proc.stderr.decode(errors='replace').strip()}")

    # -- merges ----------------------------------------------------------------

    def merge_tree(self, ours: str, theirs: str) -> tuple[str, list[str]]:
        """A three-way merge of two commits, written as objects only (no index, no work tree).

        Returns (tree, conflicted paths); the tree is meaningful only when there is no conflict.
        """
        proc = self.run_git("merge-tree", "--write-tree", "--name-only", "--no-messages", "-z",
                            ours, theirs)
        if proc.returncode not in (0, 1):
            raise GitCommandError(
                f"git merge-tree failed: {proc.stderr.decode(errors='replace').strip()}")
        tree, _, rest = proc.stdout.decode(errors="surrogateescape").partition("\0")
        conflicts = list(dict.fromkeys(p for p in rest.split("\0") if p))
        return tree.strip(), conflicts if proc.returncode == 1 else []

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        proc = self.run_git("merge-base", "--is-ancestor", ancestor, descendant)
        return proc.returncode == 0
