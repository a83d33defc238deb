"""Does this clone hold the history a check reads? A shallow clone's cut is not a root.

Invariant: a command that checks history (``verify``, ``replay``) reads a range only when no
commit of it, nor the commit it starts from, is one where a shallow clone's history was cut
(git lists them in the repository's ``shallow`` file). Such a commit looks like a root and what
lies behind it is absent, so a check there would pass on what it never saw: ``require`` raises
``ShallowHistory`` with the fix instead.
"""

from __future__ import annotations

from collections.abc import Iterable

from ..errors import GitspaceError
from ..storage.gitrepo import GitRepo

FIX = ("Fetch the whole history: 'git fetch --unshallow' (in GitHub Actions, 'fetch-depth: 0' "
       "on actions/checkout; in GitLab CI, the variable GIT_DEPTH: 0).")


class ShallowHistory(GitspaceError):
    """The range to check reaches past what a shallow clone fetched."""


def cut(repo: GitRepo) -> set[str]:
    """The commits where this clone's history was cut (empty for a full clone)."""
    try:
        text = (repo.commondir / "shallow").read_text(encoding="ascii", errors="replace")
    except FileNotFoundError:
        return set()
    return {line.strip() for line in text.splitlines() if line.strip()}


def require(repo: GitRepo, commits: Iterable[str], what: str) -> None:
    """Refuse when one of ``commits`` (what ``what`` reads) is where the history was cut."""
    cuts = cut(repo)
    if not cuts:
        return
    hit = next((sha for sha in commits if sha in cuts), None)
    if hit is not None:
        raise ShallowHistory(
            f"This clone is shallow: its history stops at {hit[:12]}, inside the commits "
            f"{what} reads, so {what} would check only what was fetched and say nothing of the "
            "ops before it.", hint=FIX)
