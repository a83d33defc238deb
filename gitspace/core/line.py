"""The recorded line: the ops of an agent that works in a person's own checkout, kept where
nothing of theirs moves. This docstring is the contract; docs/design.md says why.

Where it lives
--------------
- ``refs/gitspace/lines/<branch>``: one line for each branch of the person's, the branch their
  checkout had checked out when the call ran; ``refs/gitspace/detached/<worktree>`` while HEAD
  is detached (a rebase stopped half-way, a checked-out tag): ``main`` for the main checkout, the
  linked worktree's own name otherwise.
- ``refs/gitspace/turns/<agent>-<session>-turn-<n>``: the op a harness's turn ended at.

Every one of these refs names a commit: never a tree or a tag object, the kind of ref that made
libgit2 clients fail on Codex's ``refs/codex/turn-diffs/*``. Outside ``refs/heads/`` they stay out
of ``git branch``, of branch pickers and of every ``git push`` (``--all`` included) unless named;
outside ``refs/tags/`` out of ``git push --tags``; a clone and a fetch never take them. They
keep no reflog (git keeps none for such refs either), so a line ``gitspace gc`` prunes leaves
nothing behind that keeps its objects. ``git log --all``, ``git gc``, ``git fsck`` see them as the
commits they are.

How a line starts and continues
-------------------------------
The person's work tree is followed as a *model*: the commit whose tree is what the work tree
held after the last recorded call, the person's commit (``base``) it was on, and the line.
``<git dir>/gitspace/inplace/model.json`` caches it; losing it costs one scan, never an op.

- A call in a checkout whose branch tip (``base``) and line tip are what the model says
  continues the line: its op's parent is the line's tip.
- Otherwise the person moved between calls: committed, amended, switched branch, rebased,
  stashed, reset. A ``follow`` op (source ``external``, by the person's git identity) comes
  first, on the line of the branch now checked out (started on that branch's tip when it has
  none). Its tree is the model's tree with every path that changed between the two person's
  commits set to the new commit's version where the model held the old commit's version
  (what a checkout does; a path with uncommitted changes keeps them). Its arguments name the
  branch and the commit it follows (``commit``), and the paths it changed (``count``, ``paths``)
  as every external op's do; it has a single parent, so the line never drags the person's
  history into its own: their commits are read beside it. ``gitspace log`` (and the web
  view) list the two as one, newest first, by what happened rather than by dates
  (``timeline.interleaved``): each of the person's commits right below the follow op that
  names it, one no follow op names yet above every op.
- A line's first commit is always a ``follow`` op whose parent is the person's commit, so a walk
  back along first parents finds the base at the nearest ``follow`` op without ever reading the
  person's history as if it were ops.
- What a checkout did not do (``git stash`` and ``reset --hard`` drop uncommitted changes) shows
  at the next scan (a shell command, a turn's start or end) as an outside change of its own.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import GitspaceError
from ..storage import bounds, ledger, opchain, statefiles
from ..storage.files import State
from ..storage.gitrepo import GitRepo
from ..storage.objects import EMPTY_TREE, Entry, Signature
from .identity import Identity
from .writer import COMMITTER, Change, RefMove, Writer

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

ROOT = "refs/gitspace/"
LINES = ROOT + "lines/"
DETACHED = ROOT + "detached"
TURNS = ROOT + "turns/"
FOLLOW = "follow"  # the tool name of a follow op
_WALK = 4096  # first parents looked at for a base before giving up (then: a follow op)


def ref_for(branch: str | None, gitdir: Path | None = None) -> str:
    """The line of ``branch``; None: HEAD is detached in the checkout whose git dir is
    ``gitdir`` (a linked worktree's is ``<common dir>/worktrees/<name>``)."""
    if branch is not None:
        return LINES + branch
    linked = gitdir is not None and gitdir.parent.name == "worktrees"
    return f"{DETACHED}/{gitdir.name if linked and gitdir else 'main'}"


def branch_of(ref: str) -> str | None:
    return ref[len(LINES):] if ref.startswith(LINES) else None


MODEL = "gitspace/inplace/model.json"  # below the checkout's git dir


def folder(gitdir: Path) -> Path:
    return gitdir / "gitspace" / "inplace"


def own_folder(gitdir: Path) -> Path:
    """``folder(gitdir)``, made if missing: refused when it, or ``gitspace/`` above it, is a link
    or a file (whatever planted it there, gitspace never writes through it: ``statefiles``)."""
    return statefiles.folder(gitdir, "gitspace", "inplace")


def write_state(gitdir: Path, name: str, data: bytes) -> None:
    """Replace ``folder(gitdir)/name`` by rename, from a new file nothing else can have planted
    (``statefiles``: created exclusively, never through a link)."""
    statefiles.write(gitdir, f"gitspace/inplace/{name}", data)


class _Value:
    """A small immutable record, compared by its fields (a plain class: a harness's hook
    imports this module on every call, and ``dataclasses`` costs more than the rest of it)."""

    __slots__: tuple[str, ...] = ()

    def __init__(self, *values: object, **named: object) -> None:
        fields = self.__slots__
        given = dict(zip(fields, values, strict=False), **named)
        for name in fields:
            object.__setattr__(self, name, given.get(name, getattr(type(self), "_" + name,
                                                                   None)))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and all(
            getattr(self, n) == getattr(other, n) for n in self.__slots__)

    def __hash__(self) -> int:
        return hash(tuple(getattr(self, n) for n in self.__slots__))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(" + ", ".join(
            f"{n}={getattr(self, n)!r}" for n in self.__slots__) + ")"


class Model(_Value):
    """What the work tree is believed to hold: the tree of ``tip`` (a commit on ``ref``, or the
    commit it follows when the line has none yet), on the person's commit ``base``.
    ``index_at``: the commit whose tree the private index holds (``storage.privateindex``);
    ``stash``: refs/stash then (a stash since changed the work tree)."""

    __slots__ = ("ref", "tip", "base", "index_at", "stash")
    ref: str
    tip: str
    base: str
    index_at: str | None
    stash: str | None

    if TYPE_CHECKING:
        def __init__(self, ref: str, tip: str, base: str, index_at: str | None = None,
                     stash: str | None = None) -> None: ...

    def as_json(self) -> dict[str, str | None]:
        return {n: getattr(self, n) for n in self.__slots__}


def load(gitdir: Path) -> Model | None:
    try:
        data = bounds.load_state(statefiles.read(gitdir, MODEL) or b"null")
        return Model(**{k: data[k] for k in ("ref", "tip", "base", "index_at")},
                     stash=data.get("stash"))
    except (OSError, ValueError, TypeError, KeyError, statefiles.StateRefused):
        return None


def save(gitdir: Path, model: Model) -> None:
    write_state(gitdir, "model.json", json.dumps(model.as_json()).encode())  # (never via a link)


class Where(_Value):
    """The checkout right now: its branch (None: detached), the commit it is on (``head``), its
    line, and the line's tip (None: this branch has no line yet)."""

    __slots__ = ("branch", "head", "ref", "tip")
    branch: str | None
    head: str
    ref: str
    tip: str | None

    if TYPE_CHECKING:
        def __init__(self, branch: str | None, head: str, ref: str, tip: str | None) -> None: ...


class NothingToFollow(GitspaceError):
    """The checkout has no commit yet: there is nothing a line could start from."""


def where(repo: GitRepo) -> Where:
    branch = repo.head_branch()
    head = repo.read_ref("HEAD")
    if head is None:
        raise NothingToFollow(
            f"{repo.root} has no commit yet ({'branch ' + branch if branch else 'HEAD'} is "
            "unborn), so there is nothing for gitspace to record the agent's calls against.",
            hint="Make a first commit ('git commit'); the next call is recorded.")
    ref = ref_for(branch, repo.gitdir)
    return Where(branch, head, ref, repo.read_ref(ref))


def continues(model: Model | None, here: Where) -> bool:
    """Does the model still describe this checkout (nobody moved since the last call)?"""
    if model is None or model.ref != here.ref or model.base != here.head:
        return False
    return model.tip == here.tip if here.tip is not None else False


def base_of(repo: GitRepo, tip: str) -> str | None:
    """The person's commit line ``tip`` follows: the ``commit`` of its nearest follow op."""
    sha = tip
    for _ in range(_WALK):
        commit = repo.commit(sha)
        op = _op(commit.message)
        if op is None:
            return None  # not a line's commit: nothing here to follow
        if op.tool == FOLLOW and op.source == "external":
            found = op.args.get("commit")
            return found if isinstance(found, str) and ledger.SHA.fullmatch(found) else None
        if not commit.parents:
            return None
        sha = commit.parents[0]
    return None


def _op(message: str) -> ledger.Op | None:
    try:
        return ledger.parse_message(message)
    except GitspaceError:
        return None


def derive(repo: GitRepo, model_tree: str, old_base: str | None, new_base: str) -> str:
    """The model tree after the checkout moved from commit ``old_base`` to ``new_base``: every
    path the two commits differ in takes the new version where the model held the old one."""
    old_tree = repo.commit(old_base).tree if old_base else EMPTY_TREE
    new_tree = repo.commit(new_base).tree
    changes: dict[str, Entry | None] = {}
    for change in repo.diff_trees(old_tree, new_tree):
        held = repo.entry_at(model_tree, change.path)
        if held == change.old or (held is not None and held.is_tree and change.old is None):
            changes[change.path] = change.new
    return repo.update_tree(model_tree, changes) if changes else model_tree


def follow(repo: GitRepo, here: Where, tree: str, since: Model | None, person: Signature,
           agent: str, why: str = "") -> str:
    """Write the follow op that puts the line of ``here`` on the person's commit ``here.head``
    with work-tree ``tree`` (``since``: the model before, if known). Its commit id; the caller
    publishes it."""
    parent = here.tip or here.head
    changed = sorted(c.path for c in repo.diff_trees(repo.commit(parent).tree, tree))
    args: dict[str, object] = {"branch": here.branch, "commit": here.head, "count": len(changed),
                               "paths": changed[:100]}
    op = Identity(FOLLOW, agent=agent, source="external").op(args)
    what = _movement(repo, here, since)
    body = (f"{why}\n\n" if why else "") + (
        "The files are taken as they were after the last recorded call, with what changed "
        "between the two commits applied as a checkout applies it."
        if since is not None else
        "The files are the work tree as found: the commit plus every change not committed yet.")
    if changed:
        body += "\n\nFiles:\n" + "\n".join(ledger.canonical_json(p) for p in changed[:200])
    message = opchain.message(repo, parent, op, what, body)
    return repo.write_commit(tree, [parent], message, person, COMMITTER)


def _movement(repo: GitRepo, here: Where, since: Model | None) -> str:
    short = here.head[:10]
    on = f"branch {here.branch}" if here.branch else "a detached HEAD"
    if since is None:
        return f"follow {on} at {short}"
    if since.ref != here.ref:
        was = branch_of(since.ref)
        return f"follow {on} at {short} (switched from {'branch ' + was if was else 'a detached HEAD'})"
    if since.base in repo.commit(here.head).parents:
        subject = repo.commit(here.head).message.split("\n", 1)[0][:50]
        return f"follow {on} to {short}: {subject}"
    return f"follow {on} to {short} (moved from {since.base[:10]})"


def move(writer: Writer, moves: Sequence[tuple[str, str | None, str | None]]) -> None:
    """Move gitspace's refs here (lines, turn marks): each ``(ref, old, new)`` from ``old`` to
    ``new`` (None: create, delete), all in one change of the checkout's writer, whose lock the
    caller holds. The one place these refs move."""
    refs = [RefMove(ref, old, new) for ref, old, new in moves if old is not None or new is not None]
    if refs:  # (a packed one too: git pack-refs packs these)
        writer.apply(Change("gitspace: record", COMMITTER, refs))


def move_with_files(writer: Writer, ref: str, old: str | None, new: str,
                    files: Mapping[str, State], before: Mapping[str, State]) -> None:
    """Move line ``ref`` to ``new`` and write work-tree ``files`` with it (undo, rewind): one
    change of the writer (its lock held), the work tree only (no index, no HEAD); ``before`` is
    what each path holds now (a failure puts it back, a crash is finished by the next lock)."""
    writer.apply(Change(why="gitspace: undo in place", who=COMMITTER,
                        refs=[RefMove(ref, old, new)], at=new, files=files, before=before,
                        index=False))


def lines(repo: GitRepo) -> list[tuple[str, str]]:
    """Every line of this repository: (ref, tip), lines first, then the detached one."""
    return [(ref, tip) for ref, tip, _ in repo.refs(ROOT.rstrip("/"))
            if ref.startswith((LINES, DETACHED + "/"))]


def in_place(repo: GitRepo) -> bool:
    """Has anything been recorded in place in this checkout (a line, or a model)?"""
    return load(repo.gitdir) is not None or bool(lines(repo))
