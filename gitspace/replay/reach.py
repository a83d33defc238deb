"""Checkpoints a replay needs that this clone lacks: fetched from a remote that has them.

Invariant: a branch pushed with plain ``git push`` arrives without its checkpoint tags, and a
restore op cannot be re-run without the checkpoint it restores. Before a replay starts,
``missing_checkpoints`` looks for every such tag on the repository's remotes (origin first) and
fetches its objects; no ref moves in the user's repository (the replay gives the tags to its
scratch repository only). A checkpoint no remote has stops the replay before it starts, with
the fix: push with ``gitspace push`` (it sends the checkpoints), or fetch the tags.
"""

from __future__ import annotations

from ..core import checkpoints
from ..errors import GitspaceError, NotFound
from ..storage import remotes
from ..storage.gitrepo import GitRepo

FETCH_TAGS = "git fetch origin 'refs/tags/gitspace/*:refs/tags/gitspace/*'"


class MissingCheckpoint(NotFound):
    """A restore in the range names a checkpoint neither this clone nor a remote has."""


def missing_checkpoints(repo: GitRepo, names: set[str], now: dict[str, str],
                        later: dict[str, list[str]]) -> dict[str, str]:
    """Fetch the tags of ``names`` that are neither in ``now`` nor ``later``; ``{ref: object}``."""
    have = set(now) | {ref for refs in later.values() for ref in refs}
    wanted = sorted(checkpoints.PREFIX + n for n in names if checkpoints.PREFIX + n not in have)
    if not wanted:
        return {}
    found: dict[str, str] = {}
    tried: list[str] = []
    for name in _remotes(repo):
        try:
            offered = remotes.ls_remote(repo, name)
            here = {ref: offered[ref] for ref in wanted if ref in offered and ref not in found}
            remotes.fetch(repo, name, here)
        except GitspaceError as e:
            tried.append(f"{name} ({e.message})")
            continue
        tried.append(name)
        found.update(here)
    lost = [ref[len(checkpoints.PREFIX):] for ref in wanted if ref not in found]
    if lost:
        where = f"nor on {', '.join(tried)}" if tried else "and the repository has no remote"
        raise MissingCheckpoint(
            f"The branch restores checkpoint(s) {', '.join(repr(n) for n in lost)}, which are "
            f"not in this clone {where}: a branch pushed with plain 'git push' leaves its "
            "checkpoint tags behind.",
            hint=f"Push the branch with 'gitspace push' (it sends its checkpoints), or fetch "
                 f"them into this clone: {FETCH_TAGS}")
    return found


def _remotes(repo: GitRepo) -> list[str]:
    names = repo.git("remote").decode(errors="replace").split()
    return sorted(names, key=lambda n: n != "origin")
