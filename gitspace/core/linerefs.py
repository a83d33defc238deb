"""Where recording in a person's own checkout keeps its refs: the names every reader finds them by.

How a line starts and follows the person is ``harness/inplace/line.py``'s contract; this module
is only the map, so that the readers below the recorder (``timeline``, ``lookup``) and above it
(the CLI, the web view) agree on it.

- ``refs/gitspace/lines/<branch>``: the ops recorded for one of the person's branches, the one
  their checkout had checked out when each call ran;
- ``refs/gitspace/detached/<worktree>``: the same while HEAD is detached (``main`` for the main
  checkout, a linked worktree's own name otherwise);
- ``refs/gitspace/turns/<agent>-<session>-turn-<n>``: the op a harness's turn ended at;
- ``refs/gitspace/gone/<tip>``: a line whose branch is gone, moved out of a new branch's way
  (``harness/inplace/line.py`` says when), and ``refs/gitspace/moving/<tip>``, a line half-way
  through a rename.

Every one of these refs names a commit, keeps no reflog, and stays out of ``git branch``, of
every default push and of clones (docs/architecture.md says why this namespace).
"""

from __future__ import annotations

from pathlib import Path

from ..storage import statefiles
from ..storage.gitrepo import GitRepo

ROOT = "refs/gitspace/"
LINES = ROOT + "lines/"
DETACHED = ROOT + "detached"
TURNS = ROOT + "turns/"
GONE = ROOT + "gone/"  # lines of branches that are gone, moved out of a new one's way
MOVING = ROOT + "moving/"  # a line half-way through a rename git cannot make in one step
FOLLOW = "follow"  # the tool name of a follow op: where a line caught up with the person
MODEL = "gitspace/inplace/model.json"  # below the checkout's git dir: what the work tree holds


def ref_for(branch: str | None, gitdir: Path | None = None) -> str:
    """The line of ``branch``; None: HEAD is detached in the checkout whose git dir is
    ``gitdir`` (a linked worktree's is ``<common dir>/worktrees/<name>``)."""
    if branch is not None:
        return LINES + branch
    linked = gitdir is not None and gitdir.parent.name == "worktrees"
    return f"{DETACHED}/{gitdir.name if linked and gitdir else 'main'}"


def branch_of(ref: str) -> str | None:
    return ref[len(LINES):] if ref.startswith(LINES) else None


def lines(repo: GitRepo) -> list[tuple[str, str]]:
    """Every line of this repository: (ref, tip), lines first, then the detached ones, then
    those of branches that are gone."""
    return [(ref, tip) for ref, tip, _ in repo.refs(ROOT.rstrip("/"))
            if ref.startswith((LINES, DETACHED + "/", GONE, MOVING))]


def turn_marks(repo: GitRepo) -> dict[str, str]:
    """Every turn mark: its name (below ``TURNS``) → the commit it names."""
    return {ref[len(TURNS):]: tip for ref, tip, _ in repo.refs(TURNS.rstrip("/"))}


def in_place(repo: GitRepo) -> bool:
    """Has anything been recorded in place in this checkout (a line, or the recorder's model)?"""
    try:
        model = statefiles.read(repo.gitdir, MODEL, limit=1 << 16)
    except (OSError, statefiles.StateRefused):
        model = None
    return model is not None or (_may_have_lines(repo) and bool(lines(repo)))


def _may_have_lines(repo: GitRepo) -> bool:
    """False when no ref under ``ROOT`` can exist, read without starting git: no loose ones (no
    such folder) and none in ``packed-refs`` (a workspace, or a checkout nothing recorded in)."""
    if (repo.commondir / ROOT).exists():
        return True
    try:
        return ROOT.encode() in (repo.commondir / "packed-refs").read_bytes()
    except FileNotFoundError:
        return False
    except OSError:
        return True
