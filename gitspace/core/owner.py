"""Which checkouts gitspace owns: the one test every writer asks before it changes a checkout.

gitspace owns a checkout when it is
- an agent's worktree made by ``attach``: ``<common git dir>/gitspace/worktrees/NAME``, or a
  linked worktree anywhere else (``attach --at DIR``) whose own git dir (``<common git
  dir>/worktrees/ID``, which git creates with the worktree and deletes with it) holds the mark
  ``gitspace/agent`` naming the agent; never the main checkout, whatever its git dir holds; or
- a workspace: its checked-out branch descends, by first parents, from a root commit that is a
  gitspace ``init`` op (made by ``gitspace init``). That survives clones, pulls and merges into
  the branch, and a user's own branch never has one, whatever a merge or fast-forward put at its
  tip.

Everything else is the user's own checkout: gitspace reads it but never writes its files, index
or HEAD. The verdict costs one first-parent walk the first time, then only the commits made since
(a verified tip is remembered in this worktree's own ``gitspace`` state folder).
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import LedgerError, NotAWorkspace
from ..storage import loose, statefiles

TYPE_CHECKING = False
if TYPE_CHECKING:  # owner is light at run time: a harness's before hook asks ``known_owned``
    from ..storage.gitrepo import GitRepo

_REMEMBER = "owned-tip"
_SHORT_WALK = 64  # first parents looked at before asking git for the root instead


def worktrees_dir(repo: GitRepo) -> Path:
    return repo.commondir / "gitspace" / "worktrees"


AGENT_MARK = "agent"  # <linked worktree's git dir>/gitspace/agent: the agent's name


def marked_agent(gitdir: Path, commondir: Path) -> str | None:
    """The agent whose worktree (``attach --at``) this linked worktree's git dir marks, or None.
    The main checkout (git dir = common git dir) is never an agent's."""
    if gitdir.resolve() == commondir.resolve():
        return None
    name = _mark(gitdir, AGENT_MARK)
    return name or None


def is_agent_worktree(repo: GitRepo) -> bool:
    return (repo.root.resolve().parent == worktrees_dir(repo).resolve()
            or marked_agent(repo.gitdir, repo.commondir) is not None)


def known_owned(root: Path, gitdir: Path, commondir: Path) -> bool:
    """True when gitspace owns this checkout by what costs nothing to check: an agent's
    worktree, or HEAD still at the tip ``owns`` verified last. False means "ask ``owns``"."""
    if root.resolve().parent == (commondir / "gitspace" / "worktrees").resolve() \
            or marked_agent(gitdir, commondir) is not None:
        return True
    remembered = _mark(gitdir, _REMEMBER)
    return bool(remembered) and loose.read_ref(gitdir, commondir, "HEAD") == remembered


def owns(repo: GitRepo) -> bool:
    """Does gitspace own the checkout ``repo`` is opened at? (See the module docstring.)"""
    if is_agent_worktree(repo):
        return True
    tip = repo.read_ref("HEAD")
    if tip is None or not repo.has_object(tip):
        return False
    remembered = _remembered(repo)
    sha: str | None = tip
    for _ in range(_SHORT_WALK):
        if sha is None:
            return False
        if sha == remembered:
            break
        parents = repo.commit(sha).parents
        if not parents:
            if not _is_init(repo, sha):
                return False
            break
        sha = parents[0]
    else:
        roots = repo.git("rev-list", "--first-parent", "--max-parents=0", tip).split()
        if not roots or not _is_init(repo, roots[-1].decode()):
            return False
    if tip != remembered:
        _remember(repo, tip)
    return True


def _is_init(repo: GitRepo, sha: str) -> bool:
    commit = repo.commit(sha)
    if commit.parents:
        return False
    from ..storage import ledger

    try:
        op = ledger.parse_message(commit.message)
    except LedgerError:
        return False
    return op is not None and op.source == "init"


def _remembered(repo: GitRepo) -> str | None:
    return _mark(repo.gitdir, _REMEMBER) or None


def _mark(gitdir: Path, name: str) -> str | None:
    """The text of mark ``gitspace/NAME`` in ``gitdir``; None when it is absent or is no
    regular file (a link, a fifo: never followed, never waited on)."""
    try:
        raw = statefiles.read(gitdir, f"gitspace/{name}", limit=4096)
        return None if raw is None else raw.decode("utf-8").strip()
    except (OSError, UnicodeDecodeError, statefiles.StateRefused):
        return None


def remember(repo: GitRepo) -> None:
    """Note the current tip as verified: call it on a checkout known to be owned (a workspace
    that checked, then made ops), so the next check walks only what came after."""
    tip = repo.read_ref("HEAD")
    if tip is not None and tip != _remembered(repo):
        _remember(repo, tip)


def _remember(repo: GitRepo, tip: str) -> None:
    if not os.path.isdir(repo.gitdir / "gitspace"):
        return
    try:
        statefiles.write(repo.gitdir, f"gitspace/{_REMEMBER}", (tip + "\n").encode())
    except (OSError, statefiles.StateRefused):
        pass  # only a cache: the next check walks again


def refuse(repo: GitRepo, action: str) -> NotAWorkspace:
    """The error for ``action`` (e.g. 'record ops') asked of a checkout gitspace does not own."""
    from . import linerefs

    if linerefs.in_place(repo):  # recorded in place already: say what does work here
        return NotAWorkspace(
            f"{repo.root} is your own checkout, recorded in place, so gitspace will not "
            f"{action} here: it writes only its own line of ops, and your work-tree files when "
            "you undo, redo or rewind. Nothing was changed.",
            hint="Here 'gitspace log', 'show', 'diff' and 'status' read what is recorded, and "
                 "'undo', 'redo', 'rewind' and 'snapshot' work. To let an agent run gitspace's "
                 f"own tools, give it a branch of its own ('gitspace -C {repo.root} attach "
                 "--agent NAME') or a workspace ('gitspace init DIR').")
    return NotAWorkspace(
        f"{repo.root} is not a gitspace workspace but a checkout of your own, so gitspace will "
        f"not {action} here: its files, index and HEAD stay yours. Nothing was changed.",
        hint=f"To record an agent working here, run 'gitspace -C {repo.root} hooks install "
             "claude-code' (in place: ops on a line of gitspace's own, nothing of yours "
             f"moves). Or give it a branch and worktree of its own ('gitspace -C {repo.root} "
             "attach --agent NAME'), or start a new workspace with 'gitspace init DIR'.",
    )


def require(repo: GitRepo, action: str) -> None:
    if not owns(repo):
        raise refuse(repo, action)
