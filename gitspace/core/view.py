"""A checkout opened to read it: what the CLI's reads (status, log, show, diff) work on.

Invariant: a view writes nothing but what opening a workspace writes: when the writer's journal
says a change was cut short, ``open`` first has the writer finish it (``Writer.recover``, the
writer imported only then), so a read never shows a crash's half-made op as outside changes
(and ``owner.owns`` remembers the tip it verified, as for a workspace). It holds what a reader
asks of a workspace (the repository, whether gitspace owns it, the file cap, the files) and
nothing that runs a tool or makes an op, so a read imports neither the op's transaction nor the
writer (``tests/test_cli_reads.py`` pins what each read imports).
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import NotAWorkspace
from ..storage.gitrepo import GitRepo
from . import owner

TYPE_CHECKING = False  # typing is not imported at run time: a read of the CLI starts without it
if TYPE_CHECKING:
    from ..storage.files import Files

JOURNAL = "gitspace/journal.json"  # the writer's journal (writer.JOURNAL), below the git dir


class View:
    """An open checkout, to read. Use as a context manager, or call ``close()``."""

    def __init__(self, repo: GitRepo, *, max_file_bytes: int = 1 << 20) -> None:
        self.repo = repo
        self.root = repo.root
        self.max_file_bytes = max_file_bytes
        self._owned: bool | None = None
        self._files: Files | None = None

    @property
    def owned(self) -> bool:
        """Does gitspace own this checkout (a workspace, an agent's worktree)? See owner.py."""
        if self._owned is None:
            self._owned = owner.owns(self.repo)
        return self._owned

    @property
    def files(self) -> Files:
        """The work tree's files, read never through a link (``storage/files.py``)."""
        if self._files is None:
            from ..storage.files import Files

            self._files = Files(self.root)
        return self._files

    def close(self) -> None:
        self.repo.close()

    def __enter__(self) -> View:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open(path: str | os.PathLike[str] = ".", *, max_file_bytes: int = 1 << 20) -> View:  # noqa: A001
    """The checkout containing ``path``, a change a crash cut short there finished first. An
    ordinary checkout is found without starting git (``GitRepo.locate``)."""
    where = Path(path)
    if not where.exists():
        raise NotAWorkspace(f"{where} does not exist.", hint="Create it with 'gitspace init DIR'.")
    repo = GitRepo.locate(where)
    try:
        if (repo.gitdir / JOURNAL).exists():
            from .writer import Writer

            Writer(repo).recover()
    except BaseException:
        repo.close()
        raise
    return View(repo, max_file_bytes=max_file_bytes)
