"""The only door to git: objects, trees, commits, refs, tags and the few plumbing commands we use.

Invariants:
- GitPython is imported here and nowhere else, and only when an object must be read from a pack:
  loose objects (everything gitspace wrote since the last repack) are read directly, which keeps
  short-lived processes such as a harness's hook free of GitPython's import and ``git cat-file``
  start-up. Everything this module returns is gitspace's own value types.
- Objects are written as loose objects by a tmp-file-and-rename, so a crash never leaves a partial
  object; a tree write rebuilds only the trees on the changed paths.
- A ref moves only by compare-and-swap under git's own lock file (``<ref>.lock``), so no writer,
  gitspace or git, ever loses a commit; every move is recorded in the reflog.
- Every git child process runs with hooks disabled, without inherited ``GIT_*`` variables, with
  the repository pinned explicitly. Identities are passed in, never taken from the environment.
"""

from __future__ import annotations

import os
import re
import time
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import config, faults
from ..errors import (
    ConcurrentUpdate,
    GitspaceError,
    NotAWorkspace,
    NotFound,
    PathRefused,
    Unsupported,
)
from . import lockfile, loose
from .loose import EXEC_MODE, FILE_MODE, LINK_MODE, TREE_MODE  # noqa: F401  (re-exported)

if TYPE_CHECKING:
    import shutil
    import subprocess
else:
    class _OnFirstUse:
        """A module imported when first used: a harness's after hook for a file tool starts no
        git process and removes no folder, so it never pays for importing these (~5 ms)."""

        def __init__(self, name: str) -> None:
            self._name = name

        def __getattr__(self, attribute: str) -> Any:
            from importlib import import_module

            return getattr(import_module(self._name), attribute)

    shutil, subprocess = _OnFirstUse("shutil"), _OnFirstUse("subprocess")

GITLINK_MODE = 0o160000
ZERO = "0" * 40
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


@dataclass(frozen=True)
class Entry:
    """A tree entry: a mode and an object id."""

    mode: int
    sha: str

    @property
    def is_tree(self) -> bool:
        return self.mode == TREE_MODE


@dataclass(frozen=True)
class Identity:
    name: str
    email: str

    def line(self, when: float | None = None) -> str:
        when = time.time() if when is None else when
        offset = time.localtime(when).tm_gmtoff // 60
        sign = "+" if offset >= 0 else "-"
        tz = f"{sign}{abs(offset) // 60:02d}{abs(offset) % 60:02d}"
        return f"{_clean_ident(self.name)} <{_clean_ident(self.email)}> {int(when)} {tz}"


def _clean_ident(text: str) -> str:
    cleaned = "".join(c for c in text if c.isprintable() and c not in "<>\n")
    return cleaned.strip() or "unknown"


@dataclass(frozen=True)
class Commit:
    sha: str
    tree: str
    parents: tuple[str, ...]
    author: str
    committer: str
    message: str

    @property
    def author_name(self) -> str:
        return self.author.split(" <", 1)[0]

    @property
    def time(self) -> int:
        return int(self.committer.rsplit(" ", 2)[-2])


@dataclass(frozen=True)
class Worktree:
    """One work tree of a repository, as ``git worktree list`` reports it."""

    path: Path
    head: str | None
    branch: str | None  # short name; None when detached (or bare)
    prunable: bool = False


@dataclass(frozen=True)
class Change:
    """One path that differs between two trees (None = absent on that side)."""

    path: str
    old: Entry | None
    new: Entry | None


class RefUpdate:
    """A ref whose lock file is held (see ``GitRepo.lock_ref``)."""

    def __init__(self, repo: GitRepo, ref: str, old: str | None, fd: int, lock: Path,
                 path: Path) -> None:
        self.repo, self.ref, self.old = repo, ref, old
        self._fd, self._lock, self._path = fd, lock, path
        self.done = False  # the ref was moved

    def set(self, new: str | None, ident: Identity, message: str) -> None:
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
        """Remove a loose ref and its reflog (one that is also packed is never deleted here: its
        packed value would reappear)."""
        if not self._path.is_file() or self.ref in self.repo._packed_refs():
            raise GitspaceError(f"{self.ref} is a packed ref, so gitspace does not delete it.")
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


class GitCommandError(GitspaceError):
    """A git plumbing command failed."""


def _locked(lock: Path) -> GitspaceError:
    return GitspaceError(
        f"{lock} exists: another git process is updating it.",
        hint="If no git process is running, remove that file and try again.",
    )


_MODES = frozenset((FILE_MODE, EXEC_MODE, LINK_MODE, TREE_MODE, GITLINK_MODE))


def _canonical_mode(tree: str, name: bytes, mode: int) -> int:
    """The mode git reads ``mode`` as (its ``canon_mode``: 100664 is a plain file); a mode
    without a file type (``644``), which git would take for a submodule, is refused."""
    kind = mode & 0o170000
    if kind == 0o100000:
        return EXEC_MODE if mode & 0o100 else FILE_MODE
    if kind in (LINK_MODE, TREE_MODE, GITLINK_MODE):
        return kind
    raise PathRefused(f"The folder {tree} in this history gives {os.fsdecode(name)!r} the mode "
                      f"{mode:o}, which is no kind of file git knows; gitspace does not read it.",
                      hint="Leave that commit alone; repair the history with git.")


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


def _mode_bytes(mode: int) -> bytes:
    return b"40000" if mode == TREE_MODE else b"%o" % mode


def _tree_sort_key(item: tuple[bytes, Entry]) -> bytes:
    name, entry = item
    return name + b"/" if entry.is_tree else name


class GitRepo:
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
        self._gitpython: Any = None  # started on the first read of a packed object (_py)
        self._trees: OrderedDict[str, dict[bytes, Entry]] = OrderedDict()
        self._commits: dict[str, Commit] = {}
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

    @property
    def _py(self) -> Any:
        """GitPython's Repo, for objects in packs (its persistent ``git cat-file`` processes)."""
        if self._gitpython is None:
            import git as gitpython

            self._gitpython = gitpython.Repo(str(self.root))
            self._gitpython.git.update_environment(**self._env_overrides())
        return self._gitpython

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

    # -- objects -----------------------------------------------------------------------------

    def read_object(self, sha: str) -> tuple[str, bytes]:
        found = loose.read(self.objects, sha)
        if found is not None:
            return found
        import git as gitpython

        try:
            stream = self._py.odb.stream(bytes.fromhex(sha))
        except (ValueError, gitpython.exc.GitError, gitpython.BadObject, gitpython.BadName) as e:
            raise NotFound(f"Object {sha} does not exist in this repository.",
                           hint="The history names an object it does not hold: fetch it again, "
                           "or repair it with git.") from e
        return stream.type.decode(), stream.read()


    def read_blob(self, sha: str) -> bytes:
        kind, data = self.read_object(sha)
        if kind != "blob":
            raise NotFound(f"Object {sha} is a {kind}, not a file.", hint=(
                "It is a submodule, which gitspace does not check out: leave that commit alone."
                if kind == "commit" else "The history is damaged: repair it with git."))
        return data

    def has_object(self, sha: str) -> bool:
        path = loose.object_path(self.objects, sha)
        if path is not None and path.is_file():
            return True
        try:
            self._py.odb.info(bytes.fromhex(sha))
            return True
        except Exception:
            return False

    hash_object = staticmethod(loose.hash_object)

    def write_object(self, kind: str, data: bytes) -> str:
        return loose.write(self.objects, kind, data)

    def write_blob(self, data: bytes) -> str:
        return self.write_object("blob", data)

    # -- trees -------------------------------------------------------------------------------

    def tree(self, sha: str | None) -> dict[bytes, Entry]:
        """The entries of a tree (cached: trees are immutable)."""
        if sha is None or sha == EMPTY_TREE:
            return {}
        cached = self._trees.get(sha)
        if cached is not None:
            self._trees.move_to_end(sha)
            return cached
        kind, data = self.read_object(sha)
        if kind != "tree":
            raise NotFound(f"Object {sha} is a {kind}, not a folder.",
                           hint="The history is damaged: repair it with git.")
        entries: dict[bytes, Entry] = {}
        i = 0
        while i < len(data):
            space = data.index(b" ", i)
            nul = data.index(b"\0", space)
            mode, name = int(data[i:space], 8), data[space + 1 : nul]
            if mode not in _MODES:
                mode = _canonical_mode(sha, name, mode)
            if name in entries:  # (a file and a folder of one name, too: git sorts them apart)
                raise PathRefused(
                    f"The folder {sha} in this history names {os.fsdecode(name)!r} twice, which "
                    "git refuses (fsck: duplicateEntries); gitspace does not read it.",
                    hint="Leave that commit alone; repair the history with git.")
            entries[name] = Entry(mode, data[nul + 1 : nul + 21].hex())
            i = nul + 21
        self._trees[sha] = entries
        if len(self._trees) > 4096:
            self._trees.popitem(last=False)
        return entries

    def write_tree(self, entries: Mapping[bytes, Entry]) -> str:
        body = b"".join(
            _mode_bytes(e.mode) + b" " + name + b"\0" + bytes.fromhex(e.sha)
            for name, e in sorted(entries.items(), key=_tree_sort_key)
        )
        sha = self.write_object("tree", body)
        self._trees[sha] = dict(entries)
        return sha

    def entry_at(self, tree: str, path: str) -> Entry | None:
        """The entry at ``path`` (a/b/c) in ``tree``, or None."""
        entry: Entry | None = Entry(TREE_MODE, tree)
        for part in os.fsencode(path).split(b"/"):
            if entry is None or not entry.is_tree:
                return None
            entry = self.tree(entry.sha).get(part)
        return entry

    def update_tree(self, tree: str | None, changes: Mapping[str, Entry | None]) -> str:
        """A new tree: ``tree`` with each path set to its entry (None removes it)."""
        split = {tuple(os.fsencode(p).split(b"/")): e for p, e in changes.items()}
        return self._update(tree, split) or self.write_tree({})

    def _update(self, tree: str | None, changes: dict[tuple[bytes, ...], Entry | None]) -> str | None:
        entries = dict(self.tree(tree))
        nested: dict[bytes, dict[tuple[bytes, ...], Entry | None]] = {}
        for parts, entry in changes.items():
            if len(parts) == 1:
                if entry is None:
                    entries.pop(parts[0], None)
                else:
                    entries[parts[0]] = entry
            else:
                nested.setdefault(parts[0], {})[parts[1:]] = entry
        for name, sub in nested.items():
            current = entries.get(name)
            if (name,) in changes and current is not None and not current.is_tree:
                continue  # a file or link set at ``name`` replaces the folder and all beneath it
            base = current.sha if current is not None and current.is_tree else None
            new = self._update(base, sub)
            if new is None:
                entries.pop(name, None)
            else:
                entries[name] = Entry(TREE_MODE, new)
        if not entries:
            return None
        return self.write_tree(entries)

    def diff_trees(self, a: str | None, b: str | None, prefix: bytes = b"") -> Iterator[Change]:
        """Every file path whose entry differs between trees ``a`` and ``b``."""
        if a == b:
            return
        left, right = self.tree(a), self.tree(b)
        for name in sorted(set(left) | set(right)):
            old, new = left.get(name), right.get(name)
            if old == new:
                continue
            path = prefix + name
            if old is not None and old.is_tree or new is not None and new.is_tree:
                yield from self.diff_trees(
                    old.sha if old and old.is_tree else None,
                    new.sha if new and new.is_tree else None,
                    path + b"/",
                )
            if (old is None or not old.is_tree) and (new is None or not new.is_tree):
                yield Change(os.fsdecode(path), old, new)
            elif old is not None and not old.is_tree:
                yield Change(os.fsdecode(path), old, None)
            elif new is not None and not new.is_tree:
                yield Change(os.fsdecode(path), None, new)

    def walk_files(self, tree: str | None, prefix: bytes = b"") -> Iterator[tuple[str, Entry]]:
        for name, entry in sorted(self.tree(tree).items()):
            if entry.is_tree:
                yield from self.walk_files(entry.sha, prefix + name + b"/")
            else:
                yield os.fsdecode(prefix + name), entry

    # -- commits -----------------------------------------------------------------------------

    def write_commit(
        self,
        tree: str,
        parents: list[str],
        message: str,
        author: Identity,
        committer: Identity,
        when: float | None = None,
    ) -> str:
        lines = [f"tree {tree}", *(f"parent {p}" for p in parents)]
        lines += [f"author {author.line(when)}", f"committer {committer.line(when)}"]
        sha = self.write_object("commit", ("\n".join(lines) + "\n\n" + message).encode())
        self._commits[sha] = Commit(sha, tree, tuple(parents), lines[-2][7:], lines[-1][10:],
                                    message)
        return sha

    def parent_tree(self, commit: Commit) -> str | None:
        """The tree of ``commit``'s first parent (None for a root commit)."""
        return self.commit(commit.parents[0]).tree if commit.parents else None

    def commit(self, sha: str) -> Commit:
        """A parsed commit (cached: commits are immutable)."""
        cached = self._commits.get(sha)
        if cached is not None:
            return cached
        if len(self._commits) > 4096:
            self._commits.clear()
        self._commits[sha] = found = self._read_commit(sha)
        return found

    def _read_commit(self, sha: str) -> Commit:
        kind, data = self.read_object(sha)
        if kind != "commit":
            raise NotFound(f"{sha} is a {kind}, not a commit.")
        head, _, message = data.decode(errors="surrogateescape").partition("\n\n")
        fields: dict[str, list[str]] = {}
        for line in head.splitlines():
            key, _, value = line.partition(" ")
            fields.setdefault(key, []).append(value)
        return Commit(
            sha=sha,
            tree=fields["tree"][0],
            parents=tuple(fields.get("parent", [])),
            author=fields["author"][0],
            committer=fields["committer"][0],
            message=message,
        )

    def log(self, rev: str, limit: int | None = None, first_parent: bool = True,
            grep: str | None = None) -> list[Commit]:
        """Commits reachable from ``rev`` (``--branches``: from any branch), newest first, in one
        git process; with ``grep``, only those with a message line matching that extended regex."""
        args = ["log", "-z", "--date=format:%z",
                "--format=%H%x1f%T%x1f%P%x1f%an <%ae> %at %ad%x1f%cn <%ce> %ct %cd%x1f%B"]
        if first_parent:
            args.append("--first-parent")
        if limit is not None:
            args.append(f"-n{limit}")
        if grep is not None:
            args += ["-E", f"--grep={grep}"]
        out = self.git(*args, rev, "--")
        commits = []
        for record in out.decode(errors="surrogateescape").split("\0"):
            if not record.strip("\n"):
                continue
            sha, tree, parents, author, committer, message = record.lstrip("\n").split("\x1f", 5)
            commits.append(Commit(sha, tree, tuple(parents.split()), author, committer, message))
        return commits

    def walk(self, rev: str, first: int = 16, most: int = 4096) -> Iterator[Commit]:
        """The first-parent commits of ``rev``, newest first, read in pages that grow from
        ``first`` to ``most`` commits: a caller that stops after k commits costs O(k), never the
        length of the history behind them."""
        page = first
        while True:
            commits = self.log(rev, page)
            yield from commits
            if len(commits) < page or not commits[-1].parents:
                return
            rev = commits[-1].parents[0]
            page = min(page * 4, most)

    def resolve(self, rev: str) -> str | None:
        """The commit a revision names, or None (a tag resolves to its commit)."""
        if rev.startswith("-"):
            return None
        proc = self.run_git("rev-parse", "--verify", "--quiet", "--end-of-options",
                            rev + "^{commit}")
        return proc.stdout.decode().strip() or None if proc.returncode == 0 else None

    # -- refs --------------------------------------------------------------------------------

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

    def set_head(self, branch: str, ident: Identity, old: str | None, new: str | None) -> None:
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

    def cas_ref(self, ref: str, old: str | None, new: str | None, ident: Identity,
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
    def ref_transaction(self, moves: list[tuple[str, str | None, str]], ident: Identity,
                        message: str) -> Iterator[None]:
        """Move every ``(ref, old, new)`` (old None: must not exist) in one git ref transaction.

        All refs are locked and verified ('prepare') before the block runs; they move together
        when it ends ('commit'), and none moves if it raises or the prepare fails.
        """
        if not moves:
            yield
            return
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
            say("".join(f"update {ref} {new} {old or ZERO}\n" for ref, old, new in moves)
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

    def _reflog(self, ref: str, old: str, new: str, ident: Identity, message: str) -> None:
        if ref.startswith("refs/tags/"):
            # git keeps no reflog for tags, and 'git gc' reports one whose entries name annotated
            # tag objects as "error: Object ... not a commit" (see drop_tag_reflogs).
            return
        base = self.gitdir if ref == "HEAD" else self.commondir
        log = base / "logs" / ref
        log.parent.mkdir(parents=True, exist_ok=True)
        faults.hit("reflog.write")
        line = f"{old} {new} {ident.line()}\t{' '.join(message.split())[:200]}\n"
        with open(log, "a", encoding="utf-8", errors="surrogateescape") as out:
            out.write(line)

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

    def drop_tag_reflogs(self, prefix: str) -> None:
        """Remove the reflogs older gitspace versions wrote for the tags under ``prefix`` (they
        make every ``git gc`` print errors; git itself never writes them)."""
        folder = self.commondir / "logs" / prefix
        if folder.is_dir():
            shutil.rmtree(folder, ignore_errors=True)

    def write_tag(self, name: str, target: str, message: str, tagger: Identity) -> str:
        """An annotated tag object (the ref is the caller's to set)."""
        body = f"object {target}\ntype commit\ntag {name}\ntagger {tagger.line()}\n\n{message}"
        return self.write_object("tag", body.encode())

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

    def local_bare_remote(self, remote: str) -> Path | None:
        """The folder of ``remote`` when it is a bare repository on this machine, else None."""
        url = self.git("remote", "get-url", remote, check=False).decode(
            errors="surrogateescape").strip() or remote
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

    # -- worktrees and merges ----------------------------------------------------------------

    def worktrees(self) -> list[Worktree]:
        """Every work tree of this repository, the main one first."""
        out = self._worktree_git("list", "--porcelain", "-z")
        found = []
        for record in out.decode(errors="surrogateescape").split("\0\0"):
            fields = dict(line.partition(" ")[::2] for line in record.split("\0") if line)
            if "worktree" not in fields:
                continue
            branch = fields.get("branch")
            found.append(Worktree(
                Path(fields["worktree"]), fields.get("HEAD"),
                branch[len("refs/heads/"):] if branch and branch.startswith("refs/heads/") else None,
                "prunable" in fields,
            ))
        return found

    def checked_out_elsewhere(self, branch: str) -> Path | None:
        """The other work tree that has ``branch`` checked out, or None (reads HEAD files only)."""
        want = f"ref: refs/heads/{branch}"
        own = self.gitdir.resolve()
        for gitdir in [self.commondir, *(self.commondir / "worktrees").glob("*")]:
            if gitdir.resolve() == own:
                continue
            try:
                if (gitdir / "HEAD").read_text().strip() != want:
                    continue
                if gitdir == self.commondir:
                    return gitdir.parent
                return Path((gitdir / "gitdir").read_text().strip()).parent
            except (FileNotFoundError, NotADirectoryError):
                continue
        return None

    def add_worktree(self, path: Path, branch: str) -> None:
        """Check ``branch`` out into a new linked work tree at ``path``."""
        self._worktree_git("add", "--quiet", "--", str(path), branch)

    def remove_worktree(self, path: Path, force: bool = False) -> None:
        self._worktree_git("remove", *(["--force"] if force else []), "--", str(path))

    def forget_worktree(self, path: Path) -> None:
        """Drop git's record of the linked work tree at ``path`` once its folder is gone (what
        ``git worktree prune`` does, for this one only: others may be on an unmounted disk)."""
        if path.exists():
            raise GitspaceError(
                f"{path} still exists, so it is not a stale worktree; nothing was changed.",
                hint="Look inside it and move it away if it is no longer needed, then try again.")
        for admin in (self.commondir / "worktrees").glob("*"):
            try:
                points_at = Path((admin / "gitdir").read_text().strip())
            except (FileNotFoundError, NotADirectoryError):
                continue
            if points_at == path / ".git":
                import shutil

                shutil.rmtree(admin)

    def _worktree_git(self, *args: str) -> bytes:
        # Not run_git: its pinned GIT_WORK_TREE/GIT_INDEX_FILE would be inherited by the checkout
        # 'git worktree add' runs inside the new work tree, which would then rewrite *this* work
        # tree's index. Only the common git dir is pinned here.
        env = config.child_environment({"GIT_DIR": str(self.commondir), "GIT_CONFIG_NOSYSTEM": "1",
                                        "GIT_TERMINAL_PROMPT": "0"})
        proc = subprocess.run(
            ["git", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "worktree",
             *args], cwd=self.commondir, env=env, capture_output=True)
        if proc.returncode != 0:
            raise GitCommandError(
                f"git worktree {args[0]} failed: {proc.stderr.decode(errors='replace').strip()}")
        return proc.stdout

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
