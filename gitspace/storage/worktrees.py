"""Linked worktrees: git's other work trees of one repository (``git worktree``).

Invariant: only git creates, removes and lists them; gitspace reads their HEAD files to tell
whether a branch is checked out elsewhere, and drops the record of one only once its folder is
gone. (The files inside a work tree are written by ``storage/files.py``.)
"""

from __future__ import annotations

from pathlib import Path

from .. import config
from ..errors import Conflict, GitCommandError, GitspaceError
from . import records


@records.record(frozen=True)
class Worktree:
    """One work tree of a repository, as ``git worktree list`` reports it."""

    path: Path
    head: str | None
    branch: str | None  # short name; None when detached (or bare)
    prunable: bool = False


class LinkedWorktrees:
    """The linked worktrees of a repository (a part of ``gitrepo.GitRepo``)."""

    gitdir: Path
    commondir: Path

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

    def add_worktree(self, path: Path, branch: str, *, checkout: bool = True) -> None:
        """Check ``branch`` out into a new linked work tree at ``path`` (``checkout=False``:
        its HEAD only, no index and no file: whoever uses it fills it)."""
        self._worktree_git("add", "--quiet", *([] if checkout else ["--no-checkout"]), "--",
                           str(path), branch)

    def place_worktree(self, target: Path, branch: str, *, checkout: bool = True) -> None:
        """``add_worktree`` at ``target``, never through a link put there.

        git accepts an empty folder for a new worktree and follows a link to one, so it is never
        handed ``target``: it checks out into a fresh folder of gitspace's own beside it (made
        by ``mkdtemp``, a random name), which one ``rename`` then puts at ``target``. A rename of
        a folder replaces only an empty folder and never writes through a link; anything else
        standing there stops it (Conflict, the checkout removed). ``git worktree repair`` then
        points git's record at ``target``."""
        import os
        import tempfile

        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.gitspace-", dir=target.parent))
        inner, placed = staging / target.name, False
        try:
            self.add_worktree(inner, branch, checkout=checkout)
            try:
                os.rename(inner, target)
            except OSError as e:
                raise Conflict(f"{target} exists and is not an empty folder ({e.strerror}). "
                               "Nothing was changed.",
                               hint="Name a new folder (attach makes it) or an empty one.") from None
            placed = True
            self._worktree_git("repair", "--", str(target))
        except BaseException:
            try:  # just made, holds nothing of anyone's
                self.remove_worktree(target if placed else inner, force=True)
            except GitspaceError:
                pass
            raise
        finally:
            try:
                os.rmdir(staging)
            except OSError:
                pass

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
        import subprocess  # (here: a harness's hook never lists worktrees)

        env = config.child_environment({"GIT_DIR": str(self.commondir), "GIT_CONFIG_NOSYSTEM": "1",
                                        "GIT_TERMINAL_PROMPT": "0"})
        proc = subprocess.run(
            ["git", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "worktree",
             *args], cwd=self.commondir, env=env, capture_output=True)
        if proc.returncode != 0:
            raise GitCommandError(
                f"git worktree {args[0]} failed: {proc.stderr.decode(errors='replace').strip()}")
        return proc.stdout
