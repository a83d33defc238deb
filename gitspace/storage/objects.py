"""Objects: blobs, trees, commits and tags, read and written by gitspace itself.

Invariants:
- Loose objects (everything gitspace wrote since the last repack) are read directly; GitPython is
  imported here and nowhere else, and only when an object must be read from a pack, which keeps
  short-lived processes such as a harness's hook free of its import and ``git cat-file`` start-up.
  Everything returned is gitspace's own value types.
- Objects are written as loose objects by a tmp-file-and-rename, so a crash never leaves a partial
  object; a tree write rebuilds only the trees on the changed paths.
- Trees and commits are immutable, so they are cached by id.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

from ..errors import NotFound, PathRefused
from . import bounds, loose, packs, records
from .loose import EXEC_MODE, FILE_MODE, LINK_MODE, TREE_MODE  # noqa: F401  (re-exported)

# Parsed trees and commits, shared by every repository this process opens: an object's id names
# its content (and its kind) wherever it is, so what one GitRepo parsed holds for the next, and a
# resident recorder, which opens the checkout anew for each call, parses the line's tree once.
# Oldest first out past CACHED; a thread may race another's insert, never corrupt it.
CACHED = 4096
TREES: dict[str, dict[bytes, Entry]] = {}
COMMITS: dict[str, Commit] = {}


def _keep(cache: dict[str, Any], sha: str, value: Any) -> None:
    cache[sha] = value
    while len(cache) > CACHED:
        try:
            del cache[next(iter(cache))]
        except (KeyError, StopIteration, RuntimeError):  # (another thread took it first)
            break

TYPE_CHECKING = False  # (typing is not imported at run time: a hook's after path reads this)
if TYPE_CHECKING:
    from subprocess import CompletedProcess
    from typing import Any

GITLINK_MODE = 0o160000
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


@records.record(frozen=True)
class Entry:
    """A tree entry: a mode and an object id."""

    mode: int
    sha: str

    @property
    def is_tree(self) -> bool:
        return self.mode == TREE_MODE


@records.record(frozen=True)
class Signature:
    """A git name and email, as an author, committer or tagger line carries them."""

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


@records.record(frozen=True)
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


@records.record(frozen=True)
class Difference:
    """One path that differs between two trees (None = absent on that side)."""

    path: str
    old: Entry | None
    new: Entry | None


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


def _mode_bytes(mode: int) -> bytes:
    return b"40000" if mode == TREE_MODE else b"%o" % mode


def _tree_sort_key(item: tuple[bytes, Entry]) -> bytes:
    name, entry = item
    return name + b"/" if entry.is_tree else name


class Objects:
    """The object store of a repository (a part of ``gitrepo.GitRepo``, which sets the attributes
    declared here)."""

    root: Path
    objects: Path
    _gitpython: Any
    _packs: packs.Packs
    _trees: dict[str, dict[bytes, Entry]]  # TREES, shared
    _commits: dict[str, Commit]  # COMMITS, shared

    if TYPE_CHECKING:
        def _env_overrides(self) -> dict[str, str]: ...

        def git(self, *args: str, input: bytes | None = None, check: bool = True,
                index: Path | None = None) -> bytes: ...

        def run_git(self, *args: str, input: bytes | None = None,
                    index: Path | None = None) -> CompletedProcess[bytes]: ...

    @property
    def _py(self) -> Any:
        """GitPython's Repo, for objects in packs (its persistent ``git cat-file`` processes)."""
        if self._gitpython is None:
            import git as gitpython

            self._gitpython = gitpython.Repo(str(self.root))
            self._gitpython.git.update_environment(**self._env_overrides())
        return self._gitpython

    # -- objects -----------------------------------------------------------------------------

    def read_object(self, sha: str) -> tuple[str, bytes]:
        found = loose.read(self.objects, sha) or self._packs.read(sha)
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

    def packed_size(self, sha: str) -> int | None:
        """The size of a packed object from its pack entry's header (None: ask git)."""
        return self._packs.size(sha)

    def has_object(self, sha: str) -> bool:
        path = loose.object_path(self.objects, sha)
        if path is not None and path.is_file() or self._packs.contains(sha):
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

    def write_tag(self, name: str, target: str, message: str, tagger: Signature) -> str:
        """An annotated tag object (the ref is the caller's to set)."""
        body = f"object {target}\ntype commit\ntag {name}\ntagger {tagger.line()}\n\n{message}"
        return self.write_object("tag", body.encode())

    # -- trees -------------------------------------------------------------------------------

    def tree(self, sha: str | None) -> dict[bytes, Entry]:
        """The entries of a tree (cached: trees are immutable)."""
        if sha is None or sha == EMPTY_TREE:
            return {}
        cached = self._trees.get(sha)
        if cached is not None:
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
        _keep(self._trees, sha, entries)
        return entries

    def write_tree(self, entries: Mapping[bytes, Entry]) -> str:
        body = b"".join(
            _mode_bytes(e.mode) + b" " + name + b"\0" + bytes.fromhex(e.sha)
            for name, e in sorted(entries.items(), key=_tree_sort_key)
        )
        sha = self.write_object("tree", body)
        _keep(self._trees, sha, dict(entries))
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

    def diff_trees(self, a: str | None, b: str | None, prefix: bytes = b"") -> Iterator[Difference]:
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
                bounds.check_tree_depth(path)  # (before the recursion a forged tree aims at)
                yield from self.diff_trees(
                    old.sha if old and old.is_tree else None,
                    new.sha if new and new.is_tree else None,
                    path + b"/",
                )
            if (old is None or not old.is_tree) and (new is None or not new.is_tree):
                yield Difference(os.fsdecode(path), old, new)
            elif old is not None and not old.is_tree:
                yield Difference(os.fsdecode(path), old, None)
            elif new is not None and not new.is_tree:
                yield Difference(os.fsdecode(path), None, new)

    def walk_files(self, tree: str | None, prefix: bytes = b"") -> Iterator[tuple[str, Entry]]:
        for name, entry in sorted(self.tree(tree).items()):
            if entry.is_tree:
                bounds.check_tree_depth(prefix + name)
                yield from self.walk_files(entry.sha, prefix + name + b"/")
            else:
                yield os.fsdecode(prefix + name), entry

    # -- commits -----------------------------------------------------------------------------

    def write_commit(
        self,
        tree: str,
        parents: list[str],
        message: str,
        author: Signature,
        committer: Signature,
        when: float | None = None,
    ) -> str:
        lines = [f"tree {tree}", *(f"parent {p}" for p in parents)]
        lines += [f"author {author.line(when)}", f"committer {committer.line(when)}"]
        sha = self.write_object("commit", ("\n".join(lines) + "\n\n" + message).encode())
        _keep(self._commits, sha, Commit(sha, tree, tuple(parents), lines[-2][7:], lines[-1][10:],
                                         message))
        return sha

    def parent_tree(self, commit: Commit) -> str | None:
        """The tree of ``commit``'s first parent (None for a root commit)."""
        return self.commit(commit.parents[0]).tree if commit.parents else None

    def commit(self, sha: str) -> Commit:
        """A parsed commit (cached: commits are immutable)."""
        cached = self._commits.get(sha)
        if cached is not None:
            return cached
        found = self._read_commit(sha)
        _keep(self._commits, sha, found)
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

    def rev_parse(self, rev: str) -> str | None:
        """The commit git's revision syntax ``rev`` names, or None (a tag resolves to its
        commit). What a person names (an op id, a checkpoint) is ``core.lookup.resolve``'s."""
        if rev.startswith("-"):
            return None
        proc = self.run_git("rev-parse", "--verify", "--quiet", "--end-of-options",
                            rev + "^{commit}")
        return proc.stdout.decode().strip() or None if proc.returncode == 0 else None
