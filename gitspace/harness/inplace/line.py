"""The recorded line: the ops of an agent that works in a person's own checkout, kept where
nothing of theirs moves. This docstring is the contract; docs/architecture.md says why these refs.

Where it lives: ``core/linerefs.py`` (the names every reader finds it by).

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

How it follows a branch's rename or deletion
--------------------------------------------
When the branch a line belongs to is gone (``git branch -m``, or deleted after a switch) and the
branch now checked out has no line yet, the line goes with the checkout: its ref is renamed to
the new branch's, so its ops stay the ones the next call continues. git cannot rename ``a`` to
``a/b`` in one ref transaction, so such a rename goes through ``refs/gitspace/moving/<tip>``;
a crash between the two leaves the tip there, and the next call finishes the rename. A line of
a branch that is gone and that stands in the way of a new one (``lines/a`` when ``a/b`` is
made) is moved aside to ``refs/gitspace/gone/<tip>``: its ops are kept, and ``gitspace gc``
prunes it as it prunes any line nothing was recorded on for a while.
"""

from __future__ import annotations

import json
from pathlib import Path

from ...core.identity import Identity
from ...core.linerefs import FOLLOW, GONE, LINES, MODEL, MOVING, ROOT, branch_of, ref_for
from ...core.writer import COMMITTER, Change, RefMove, Writer
from ...errors import GitspaceError
from ...storage import bounds, ledger, opchain, statefiles
from ...storage.files import State
from ...storage.gitrepo import GitRepo
from ...storage.objects import EMPTY_TREE, Entry, Signature
from ...storage.records import record

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping, Sequence

_WALK = 4096  # first parents looked at for a base before giving up (then: a follow op)


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


@record(frozen=True)
class Model:
    """What the work tree is believed to hold: the tree of ``tip`` (a commit on ``ref``, or the
    commit it follows when the line has none yet), on the person's commit ``base``.
    ``index_at``: the commit whose tree the private index holds (``storage.privateindex``);
    ``stash``: refs/stash then (a stash since changed the work tree)."""

    ref: str
    tip: str
    base: str
    index_at: str | None = None
    stash: str | None = None

    def as_json(self) -> dict[str, str | None]:
        return {"ref": self.ref, "tip": self.tip, "base": self.base, "index_at": self.index_at,
                "stash": self.stash}


def load(gitdir: Path) -> Model | None:
    """The model this checkout's recorder saved; None when there is none, or when the file is
    not one it writes (a cache: a bad one costs a scan, never an op)."""
    try:
        data = bounds.load_state(statefiles.read(gitdir, MODEL) or b"null")
        model = Model(**{k: data[k] for k in ("ref", "tip", "base", "index_at")},
                      stash=data.get("stash"))
    except (OSError, ValueError, TypeError, KeyError, RecursionError, statefiles.StateRefused):
        return None
    ids = (model.tip, model.base, model.index_at, model.stash)
    if not (isinstance(model.ref, str) and model.ref.startswith(ROOT)
            and all(v is None or isinstance(v, str) and ledger.SHA.fullmatch(v) for v in ids)
            and model.tip and model.base):
        return None
    return model


def save(gitdir: Path, model: Model) -> None:
    write_state(gitdir, "model.json", json.dumps(model.as_json()).encode())  # (never via a link)


@record(frozen=True)
class Where:
    """The checkout right now: its branch (None: detached), the commit it is on (``head``), its
    line, and the line's tip (None: this branch has no line yet)."""

    branch: str | None
    head: str
    ref: str
    tip: str | None


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


def walk(repo: GitRepo, tip: str | None) -> Iterator[tuple[str, ledger.Op]]:
    """The line's own commits from ``tip`` back along first parents, newest first, with their
    ops: it ends at the line's start (the follow op whose parent is the person's commit it
    follows), so nothing of the person's history, whatever its messages say, is read as the
    line's (an undo, a rewind walk this)."""
    sha = tip
    for _ in range(1 << 20):
        if sha is None:
            return
        commit = repo.commit(sha)
        op = _op(commit.message)
        if op is None:
            return
        yield sha, op
        parent = commit.parents[0] if commit.parents else None
        if op.tool == FOLLOW and op.source == "external" and op.args.get("commit") == parent:
            return  # the line's first commit
        sha = parent


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


def carry(writer: Writer, model: Model | None, here: Where) -> Where:
    """Follow a rename or deletion of the model's branch (see the module docstring): where the
    checkout is once its line went with it (``here`` itself when nothing moved). The caller holds
    the writer's lock."""
    repo = writer.repo
    old = branch_of(model.ref) if model is not None else None
    if model is None or old is None or model.ref == here.ref or here.tip is not None \
            or repo.read_ref(f"refs/heads/{old}") is not None:
        return clear_the_way(writer, here)
    tip = repo.read_ref(model.ref)
    moving = MOVING + model.tip
    if tip is None and repo.read_ref(moving) == model.tip:
        tip = model.tip  # a rename a crash cut in two: finished now
    elif tip is None:
        return clear_the_way(writer, here)
    elif _in_the_way(model.ref, here.ref):
        move(writer, [(model.ref, tip, None), (moving, None, tip)])
    else:
        move(writer, [(model.ref, tip, None), (here.ref, None, tip)])
        return Where(here.branch, here.head, here.ref, tip)
    move(writer, [(moving, tip, None), (here.ref, None, tip)])
    return Where(here.branch, here.head, here.ref, tip)


def clear_the_way(writer: Writer, here: Where) -> Where:
    """Move aside the lines of gone branches that stand in the way of ``here``'s line (a line
    ``a`` and a new branch ``a/b``, or the other way round), so that it can be made."""
    if here.tip is not None or not here.ref.startswith(LINES):
        return here
    repo = writer.repo
    blocking = [(ref, tip) for ref, tip, _ in repo.refs(LINES.rstrip("/"))
                if _in_the_way(ref, here.ref)
                and repo.read_ref(f"refs/heads/{branch_of(ref)}") is None]
    for ref, tip in blocking:
        move(writer, [(ref, tip, None), (GONE + tip, None, tip)] if repo.read_ref(GONE + tip)
             is None else [(ref, tip, None)])
    return here


def _in_the_way(a: str, b: str) -> bool:
    """Can git not hold refs ``a`` and ``b`` at once (one is a folder of the other)?"""
    return a != b and (a.startswith(b + "/") or b.startswith(a + "/"))
