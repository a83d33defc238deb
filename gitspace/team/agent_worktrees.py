"""The worktrees gitspace makes for others to work in: an attached agent's and a delegated child's.

One lifecycle for both (team/attach.py and agent/delegate.py make and remove theirs only here);
the branch a worktree checks out is always the writer's, made before:

- **make**: ``make`` checks a branch out into a new linked worktree, never through a link
  planted where it goes (storage's ``place_worktree``). An attached agent's is whole: another
  program (a harness, a person) works there, so ``git worktree add`` writes every file and the
  index. A delegated child's is not: ``--no-checkout`` writes its HEAD alone, so making it costs
  the same in a workspace of 100,000 files as in one of ten. gitspace alone works there, through
  ``LazyFiles``.
- **fill** (a child's): ``LazyFiles`` is the child's work tree. The first time a path is read,
  stat'ed, listed or written, every folder on its way gets the files its tree holds directly
  (so the path itself, and the ``.gitignore`` and ``.gitattributes`` git reads for it, are
  there), written from the child's branch; a listed folder gets its subfolders too. Nothing
  already on disk is overwritten, and a folder is filled once, so what someone put there or an
  op removed stays as it is. A program that reads the disk itself is handed a whole tree
  (``Files.reader``, ``Files.whole``): while the child has written nothing, a read-only program
  reads its parent's checkout, which it was forked from (nothing is copied, and a built-in
  script finds its parent's cache there); otherwise the rest of the tree is checked out first
  (``git read-tree`` and ``git checkout-index``, which never overwrite a file on disk).
- **reuse**: an attached agent's worktree is reused as it is (``attach.attach`` finds it); a
  child's never is: a child runs in one made afresh from its branch (its ops are commits, and
  its session knows which ran), so nothing a crash left in it is trusted.
- **remove**: ``remove`` removes an attached agent's worktree with ``git worktree remove``,
  which refuses a worktree that holds changes unless forced (``detach`` says which first);
  ``discard`` a child's: its folder, never through a link (``git worktree remove`` follows one,
  to whatever work tree it names), then git's record of it.
- **recover after a crash**: ``discard`` first, before a child's worktree is made again, clears
  whatever a crash left at its place; ``forget`` drops git's record of a worktree whose folder
  is gone, before an agent is attached there again.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from ..errors import GitspaceError
from ..storage import statefiles
from ..storage.files import Files
from ..storage.gitrepo import GitRepo
from ..storage.objects import EXEC_MODE, FILE_MODE, LINK_MODE, TREE_MODE, Entry

FILE_KINDS = (FILE_MODE, EXEC_MODE, LINK_MODE)  # what a folder's files are (not gitlinks)


def make(repo: GitRepo, target: Path, branch: str, *, whole: bool = True) -> None:
    """Check ``branch`` out at ``target`` (see the module docstring): every file with ``whole``,
    else HEAD alone, for ``LazyFiles``. The folder it goes in is the caller's to make (never
    through a link)."""
    repo.place_worktree(target, branch, checkout=whole)


def remove(repo: GitRepo, target: Path, *, force: bool = False) -> None:
    """Remove an attached agent's worktree at ``target`` (``git worktree remove``)."""
    repo.remove_worktree(target, force=force)


def discard(repo: GitRepo, place: str) -> None:
    """Remove whatever is at ``place`` below the common git dir (a child's worktree, or what a
    crash left of one), never through a link, and git's record of the worktree there."""
    statefiles.remove_tree(repo.commondir, place)
    with contextlib.suppress(GitspaceError):  # (also the record of one a crash left half gone)
        repo.forget_worktree(repo.commondir / place)


def forget(repo: GitRepo, target: Path) -> None:
    """Drop git's record of the worktree at ``target``, whose folder is gone."""
    repo.forget_worktree(target)


class LazyFiles(Files):
    """A delegated child's work tree, filled on first touch (see the module docstring).
    ``parent``: the work tree it was forked from; ``parent_gitdir``: that checkout's git dir."""

    def __init__(self, repo: GitRepo, parent: Files, parent_gitdir: Path) -> None:
        super().__init__(repo.root, private=repo.private)
        self.repo = repo
        self.parent, self.parent_gitdir = parent, parent_gitdir
        self._filled: set[str] = set()  # folders whose files are on disk
        self._listed: set[str] = set()  # ... and whose subfolders are too
        self._wrote = False  # did the child write anything (then its parent's files differ)?
        self._all = False  # the whole tree is checked out

    # -- what a tool touches is there first ---------------------------------------------------

    def stat(self, rel: str) -> os.stat_result | None:
        self._fill(rel)
        return super().stat(rel)

    def listing(self, rel: str) -> list[tuple[str, os.stat_result]] | None:
        self._fill(rel, listed=True)
        return super().listing(rel)

    def read(self, rel: str, *, limit: int | None = None,
             stats: dict[str, os.stat_result] | None = None) -> tuple[bytes, int] | None:
        self._fill(rel)
        return super().read(rel, limit=limit, stats=stats)

    def put(self, rel: str, state: tuple[bytes, int] | None, *,
            changed: list[str] | None = None) -> os.stat_result | None:
        self._fill(rel)
        self._wrote = True
        return super().put(rel, state, changed=changed)

    def append(self, rel: str, data: bytes) -> int:
        self._fill(rel)
        self._wrote = True
        return super().append(rel, data)

    def _fill(self, rel: str, listed: bool = False) -> None:
        """Every folder on the way to ``rel`` (``rel`` too when it is a folder) filled from the
        tree HEAD names; with ``listed``, ``rel``'s subfolders made as well."""
        if self._all:
            return
        tip = self.repo.read_ref("HEAD")
        if tip is None:
            return
        tree: str | None = self.repo.commit(tip).tree
        parts = [p for p in rel.strip("/").split("/") if p] if rel not in ("", ".") else []
        folder = ""
        for depth in range(len(parts) + 1):
            if tree is None:
                return
            entries = self.repo.tree(tree)
            last = depth == len(parts)
            if folder not in self._filled or (last and listed and folder not in self._listed):
                self._fill_folder(folder, entries, subfolders=last and listed)
            if last:
                return
            found = entries.get(parts[depth].encode())
            tree = found.sha if found is not None and found.is_tree else None
            if tree is not None and depth == len(parts) - 1:
                self._make_folder(rel)  # (a folder of the tree: there, even before it is listed)
            folder = "/".join(parts[:depth + 1])

    def _fill_folder(self, folder: str, entries: dict[bytes, Entry], subfolders: bool) -> None:
        prefix = f"{folder}/" if folder else ""
        for raw, entry in entries.items():
            rel = prefix + os.fsdecode(raw)
            if entry.mode in FILE_KINDS and folder not in self._filled and \
                    super().stat(rel) is None:
                super().put(rel, (self.repo.read_blob(entry.sha), entry.mode))
            elif subfolders and entry.mode == TREE_MODE:
                self._make_folder(rel)
        self._filled.add(folder)
        if subfolders:
            self._listed.add(folder)

    def _make_folder(self, rel: str) -> None:
        """Folder ``rel`` on disk (its files come when it is filled), never through a link."""
        if super().stat(rel) is not None:
            return
        parts = [*rel.split("/"), ""]
        with self._root() as root:
            self._make_folders(root, parts, rel).close()

    # -- a program that reads the disk itself ----------------------------------------------

    def whole(self, rel: str = "") -> Path:
        """Check out what is not on disk yet below ``rel`` (never over a file there): the whole
        tree once by git, a folder by filling it and every folder under it."""
        if rel not in ("", "."):
            self._fill_under(rel.strip("/"))
            return self.root
        if not self._all:
            self.repo.git("read-tree", "HEAD")
            # What is not on disk: a file there (filled, written, or someone's) stays as it is.
            missing = self.repo.git("diff-files", "--name-only", "--diff-filter=D", "-z")
            if missing:
                self.repo.git("checkout-index", "-u", "-z", "--stdin", input=missing)
            self._all = True
        return self.root

    def _fill_under(self, rel: str) -> None:
        if self._all:
            return
        self._fill(rel, listed=True)
        tip = self.repo.read_ref("HEAD")
        found = None if tip is None else self.repo.entry_at(self.repo.commit(tip).tree, rel)
        if found is not None and found.is_tree:
            for name, entry in self.repo.tree(found.sha).items():
                if entry.is_tree:
                    self._fill_under(f"{rel}/{os.fsdecode(name)}")

    def reader(self) -> tuple[Path, Path | None]:
        if self._wrote or self._all:
            return self.whole(), None
        root, gitdir = self.parent.reader()  # (a child's parent may be a child too)
        return root, gitdir or self.parent_gitdir
