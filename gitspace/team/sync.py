"""Sync: one branch shared by a fleet of clones through any git server; ops rebased by meaning,
nothing ever forced.

``sync(ws, remote)`` makes this checkout's branch and the remote's branch of the same name
equal, keeping every op of both:

1. read the remote's refs and fetch its new objects (objects only, no ref moves);
2. when both sides have ops the other lacks, re-run this clone's unpushed ops on top of the
   remote's (``rebase``), each checked as ``replay --onto`` checks it; an op that no longer
   applies raises ``SyncStopped`` naming it and the remote ops in its way, nothing changed;
3. move the branch, its files and its index to the result as one journaled step, with the
   checkpoints at the moved ops, the remote's new checkpoints and the remote-tracking ref
   (``sync_state``). A branch that only has to catch up is fast-forwarded the same way;
4. push the branch and its checkpoints in one atomic push of explicit ``sha:ref`` refspecs:
   every op this clone has not pushed yet, in one push (a batch).

Turns (``sync_pace``): a push that lost its race to another clone starts again at 1 after a
short jitter, at most ``attempts`` times; then ``SyncBusy`` (the ops stay here, rebased, and the
next sync pushes them). A clone whose last push landed yields before pushing again, until the
remote has been quiet for a while, so that the clones that lost get their turn. While it yields
with ops to push, a round is only step 1's read of the refs (a look, once a round, so it sees
each landing), and its turn is a round of steps 1 to 4; ``wait=False`` returns after one look
(``Synced.waiting``: when to look again), its ops queued for a later sync, which is how ``sync
--watch`` batches the ops made meanwhile. With rivals about, a round reads the refs again just
before step 4 and leaves out a push that would lose (the branch moved since step 1).

Never: ``--force`` or a ``+`` refspec; a change to any commit the remote has (only this clone's
unpushed commits are re-made, and only here); a sync onto a remote branch that no longer
contains what the last sync saw there (rewritten) or that was deleted; a push of an op id the
remote already has (it would be there twice). Each of these refuses with nothing changed.

Crash safety: steps 1 and 2 only add objects, 3 is journaled, 4 is atomic on the server. A sync
killed at any instant leaves the checkout as a killed op does (finished on next open), and the
next sync carries on from what it finds: the branch already rebased (it pushes it) or already
pushed. An op never reaches the remote twice because the branch moves to the re-run ops before
they are pushed, so the originals are never pushed after their copies.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from ..core.transaction import checkout_changes
from ..core.workspace import Workspace
from ..core.writer import COMMITTER, Change, RefMove
from ..errors import BadArguments, ConcurrentUpdate, Conflict, GitspaceError
from ..replay.engine import branch_commits
from ..replay.onto import merge_base
from ..storage import ledger
from ..storage.gitrepo import GitRepo
from ..storage.objects import Commit
from . import sync_state
from .rebase import rebase, stopped
from .remote import (
    TAGS,
    RemoteUnavailable,
    carry_notes,
    fetch,
    ls_remote,
    push_refspecs,
    rightly_named,
    unreachable,
)
from .sync_pace import Pace, Random

ATTEMPTS = 10  # rounds of one sync that may fail (a push lost, an op landed here meanwhile)
_RACE = ("fetch first", "non-fast-forward", "stale info", "failed to update ref", "cannot lock",
         "failed to lock", "atomic push failed", "atomic transaction failed")
Step = Callable[[str], None]


class SyncBusy(GitspaceError):
    """Every push of a sync lost its race to other clones. ``pushes``: how many it sent;
    ``retry_in``: the pause its clone's turns ask for before the next try."""

    pushes: int = 0
    retry_in: float = 0.0


@dataclass
class Synced:
    """What one sync did. ``tip`` is the branch's tip here (and on the remote) afterwards."""

    remote: str
    branch: str
    tip: str
    pulled: int = 0  # commits of the remote that this clone did not have
    rebased: int = 0  # unpushed commits re-run on top of them
    pushed: int = 0  # commits that reached the remote
    dropped: list[tuple[str, str]] = field(default_factory=list)  # (op id, commit) left out
    checkpoints: list[str] = field(default_factory=list)  # moved with their ops, or pushed
    attempts: int = 1  # rounds that went on past reading the remote's refs
    notes: list[str] = field(default_factory=list)
    pushes: int = 0  # pushes sent, lost ones included
    waiting: float = 0.0  # wait=False: not its turn; look again in this many seconds (ops queued)

    @property
    def changed(self) -> bool:
        return bool(self.pulled or self.pushed or self.dropped or self.checkpoints)


def sync(ws: Workspace, remote: str = "origin", *, drop: tuple[str, ...] = (),
         attempts: int = ATTEMPTS, wait: bool = True, on_step: Step | None = None,
         pause: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.time,
         rng: Random = random) -> Synced:
    """Sync this checkout's branch with ``remote``'s (see the module docstring)."""
    ws.require_owned("sync its branch")
    check_remote_name(ws.repo, remote)
    branch = ws.branch()
    for op_id in drop:
        if not ledger.OP_ID.fullmatch(op_id):
            raise BadArguments(f"{op_id!r} is not an op id.",
                               hint="'gitspace log' lists op ids (26 letters and digits).")
    with sync_state.lock(ws):
        sync_state.clear_scratch(ws)
        with ws.writer.locked():
            pass  # a sync a crash cut short is finished from the writer's journal first
        pace = sync_state.load_pace(ws, remote, branch)
        turns = _Turns(pace, attempts, wait, pause, clock, rng)
        try:
            done = _rounds(ws, remote, branch, set(drop), turns, on_step or _quiet)
        finally:
            sync_state.save_pace(ws, remote, branch, pace)
        done.notes += carry_notes(ws.repo, remote)  # refs/notes/ai, when this clone has any
        return done


@dataclass
class _Turns:
    """One sync's retry state: its clone's ``Pace`` and what it may spend."""

    pace: Pace
    attempts: int
    wait: bool
    pause: Callable[[float], None]
    clock: Callable[[], float]
    rng: Random
    pushes: int = 0
    failed: int = 0  # rounds that lost a race or met an op landing here
    checked: bool = False  # a round got past the --drop check (and may have dropped)
    dropped: list[tuple[str, str]] = field(default_factory=list)  # by a round that moved


@dataclass
class _Again:
    """A round that did not finish the sync: ``why`` is "raced" (its push lost), "moved" (an op
    landed here meanwhile) or "wait" (not this clone's turn for ``delay`` seconds; ``report``
    says what the round did here: it pulled and re-ran, and only left out the push)."""

    why: str
    delay: float = 0.0
    report: Synced | None = None


def _rounds(ws: Workspace, remote: str, branch: str, drop: set[str], turns: _Turns,
            on_step: Step) -> Synced:
    while True:
        started = turns.clock()
        done = _attempt(ws, remote, branch, drop, turns, on_step)
        took = turns.clock() - started
        if isinstance(done, Synced):
            if done.pushes:
                turns.pace.won(done.tip, turns.clock(), took, full=done.rebased > 0)
            done.attempts, done.pushes = turns.failed + 1, turns.pushes
            done.dropped = turns.dropped
            return done
        if done.why == "wait":
            turns.checked = True  # (a round that only looked never has a --drop to check)
            if done.report is not None and done.report.rebased:
                turns.pace.measure(took)  # a full round but for its push
            if not turns.wait and done.report is not None:
                done.report.attempts, done.report.pushes = turns.failed, turns.pushes
                done.report.dropped, done.report.waiting = turns.dropped, done.delay
                return done.report
            on_step("wait")
            turns.pause(done.delay)
            continue
        turns.checked = True
        turns.failed += 1
        if done.why == "raced":
            turns.pace.lost_round(turns.clock(), took)
        if turns.failed >= turns.attempts:
            raise _busy(remote, branch, turns)
        if done.why == "raced":
            turns.pause(turns.pace.retry_pause(turns.rng))


def _busy(remote: str, branch: str, turns: _Turns) -> SyncBusy:
    busy = SyncBusy(
        f"{remote} kept moving: {turns.failed} round(s) of this sync of {branch} lost their race "
        "to other clones. Your ops are safe here, already re-run on the remote's newest ops.",
        hint=f"Run 'gitspace sync {remote}' again (or keep 'gitspace sync --watch' running).")
    busy.pushes, busy.retry_in = turns.pushes, turns.pace.retry_pause(turns.rng)
    return busy


def _quiet(step: str) -> None:
    pass


def check_remote_name(repo: GitRepo, remote: str) -> None:
    """Sync keeps per-remote state (the remote-tracking ref), so it needs a configured remote."""
    proc = repo.run_git("config", "--get", f"remote.{remote}.url") if remote and not (
        remote.startswith("-") or any(c in remote for c in "\0\n/:")) else None
    if proc is None or proc.returncode != 0:
        raise BadArguments(
            f"{remote!r} is not a remote of this clone; sync needs a remote's name.",
            hint="'git remote -v' lists them; add one with 'git remote add origin URL'.")


def _attempt(ws: Workspace, remote: str, branch: str, drop: set[str], turns: _Turns,
             on_step: Step) -> Synced | _Again:
    """One fetch-rebase-move-push round: a report, or why another round is needed."""
    repo = ws.repo
    ref, tracking = f"refs/heads/{branch}", sync_state.tracking_ref(remote, branch)
    theirs = ls_remote(repo, remote)
    their_tip = theirs.get(ref)
    turns.pace.observe(their_tip, turns.clock())
    first = not turns.checked
    local = _tip(repo, branch)
    delay = turns.pace.next_look(turns.clock())
    if delay > 0 and not (drop and first) and _unpushed(repo, local, their_tip, tracking):
        # Not this clone's turn, and it has ops to push: a look at the refs is the whole round
        # (its turn round pulls, re-runs and pushes, so the quiet it waited for stays true). A
        # --drop is checked by a first round that goes on, whatever the turn.
        return _Again("wait", delay, Synced(remote, branch, local))
    remote_tags = {r: sha for r, sha in theirs.items() if r.startswith(TAGS)}
    on_step("fetch")
    fetch(repo, remote, {**remote_tags, **({ref: their_tip} if their_tip else {})})
    _check_not_rewritten(repo, remote, branch, repo.read_ref(tracking), their_tip)
    local = _tip(repo, branch)  # (an op may have landed here meanwhile: it goes out too)
    report = Synced(remote, branch, local)
    remote_tags = rightly_named(repo, remote, remote_tags, report.notes)
    new, tag_moves = local, {}
    if their_tip is not None and their_tip != local:
        base = merge_base(repo, local, their_tip)
        mine, _ = branch_commits(repo, local, base) if base != local else ([], base)
        _check_unique(repo, remote, branch, mine, base, their_tip)
        gone = _check_drop(mine, drop, first)
        report.pulled = _count(repo, base, their_tip)
        if base == local:
            new = their_tip  # nothing unpushed: catch up
        elif base != their_tip or gone:
            on_step("rebase")
            done = rebase(ws, mine, base, their_tip, drop, _missing(repo, remote_tags),
                          sync_state.scratch_folder(ws))
            if not done.report.ok:
                raise stopped(repo, remote, branch, done.report, base, their_tip)
            new, tag_moves = done.tip, done.tags
            report.rebased = done.report.checked
            report.dropped = gone
    elif drop and first:
        _check_drop([], drop, first)
    moves = _ref_moves(repo, remote, tag_moves, remote_tags, their_tip, tracking)
    report.checkpoints = [r[len(TAGS):] for r in tag_moves]
    if new != local or moves:
        on_step("move")
        if _move(ws, branch, local, new, moves) is not None:
            return _Again("moved")
        turns.dropped += report.dropped
    report.tip = new
    refspecs = _refspecs(repo, new, ref, their_tip, remote_tags)
    if not refspecs:
        return report
    delay = turns.pace.next_look(turns.clock())
    if delay > 0:  # pulled and re-ran here (checkpoints only, or a drop): the push waits
        return _Again("wait", delay, report)
    if turns.pace.rivals() and ls_remote(repo, remote).get(ref) != their_tip:
        return _Again("raced")  # another clone landed meanwhile: this push would lose
    on_step("push")
    turns.pushes += 1
    proc = push_refspecs(repo, remote, refspecs)
    if proc.returncode != 0:
        return _Again(_push_failed(remote, proc.stdout, proc.stderr))
    report.pushes = 1
    report.pushed = _count(repo, their_tip, new) if their_tip else _count(repo, None, new)
    if their_tip is not None and f"*\t{new}:{ref}\t" in proc.stdout.decode(errors="replace"):
        report.notes.append(f"{remote} deleted {branch} while this sync ran; the push created it "
                            "again, with every commit it had when the sync read it and yours.")
    report.checkpoints = sorted(set(report.checkpoints) | {
        spec.split(":", 1)[1][len(TAGS):] for spec in refspecs if TAGS in spec})
    report.notes += sync_state.move_tracking(ws, tracking, new)
    return report


def _tip(repo: GitRepo, branch: str) -> str:
    tip = repo.read_ref(f"refs/heads/{branch}")
    if tip is None:
        raise GitspaceError(f"Branch {branch} has no commits yet; there is nothing to sync.")
    return tip


def _unpushed(repo: GitRepo, local: str, their_tip: str | None, tracking: str) -> bool:
    """Whether the branch here has commits the remote lacks, judged without fetching: the
    remote's tip as read, or as the last sync saw it when that tip is not here."""
    if local == their_tip or local == repo.read_ref(tracking):
        return False
    seen = their_tip if their_tip is not None and repo.has_object(their_tip) else \
        repo.read_ref(tracking)
    return seen is None or not repo.is_ancestor(local, seen)


def _check_not_rewritten(repo: GitRepo, remote: str, branch: str, seen: str | None,
                         their_tip: str | None) -> None:
    if seen is None:
        return
    if their_tip is None:
        raise Conflict(
            f"{remote} no longer has branch {branch} (the last sync saw it at {seen[:12]}). "
            "Sync never re-creates a branch someone deleted; nothing was changed.",
            hint=f"If it should exist again, push it on purpose: 'gitspace push {remote}'.")
    if seen != their_tip and not repo.is_ancestor(seen, their_tip):
        raise Conflict(
            f"{remote}/{branch} was rewritten: it no longer contains {seen[:12]}, which the last "
            f"sync saw there, so ops that were shared may be gone from it. Sync never builds on "
            "a rewritten branch; nothing was changed.",
            hint=f"Find out who rewrote it. Your ops are safe here; continue on a branch of your "
                 f"own ('gitspace branch NAME' then 'gitspace sync {remote}'), or, once the "
                 f"rewrite is agreed on, accept it with 'git update-ref "
                 f"refs/remotes/{remote}/{branch} {their_tip}' and sync again.")


def _check_unique(repo: GitRepo, remote: str, branch: str, mine: list[Commit], base: str,
                  their_tip: str) -> None:
    """Refuse when an unpushed op id is already on the remote (it would be there twice)."""
    ours = {op_id: c.sha for c in mine if (op_id := _op_id(c.message))}
    if not ours:
        return
    for commit in repo.log(f"{base}..{their_tip}", first_parent=False):
        op_id = _op_id(commit.message)
        if op_id in ours:
            raise Conflict(
                f"Op {op_id} is both on {remote}/{branch} (commit {commit.sha[:12]}) and among "
                f"this clone's unpushed ops (commit {ours[op_id][:12]}); pushing would put it "
                "there twice. Nothing was changed.",
                hint=f"If the remote's copy came from this clone another way, drop yours: "
                     f"'gitspace sync {remote} --drop {op_id}'. If it did not (a copied or "
                     f"forged op id), continue on a branch of your own: 'gitspace branch NAME' "
                     f"then 'gitspace sync {remote}'.")


def _check_drop(mine: list[Commit], drop: set[str], first: bool) -> list[tuple[str, str]]:
    """The unpushed (op id, commit) pairs ``drop`` names; an id that is not one of them is an
    error on the first attempt (later ones already dropped it)."""
    found = {op_id: c.sha for c in mine if (op_id := _op_id(c.message)) in drop}
    missing = sorted(drop - set(found))
    if missing and first:
        raise BadArguments(
            f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} not among this clone's "
            "unpushed ops, so there is nothing to drop; nothing was changed.",
            hint="Only an op that is here and not yet on the remote can be dropped; to take "
                 "back one that is shared, use 'gitspace undo --op ID'.")
    return sorted(found.items())


def _op_id(message: str) -> str | None:
    try:
        op = ledger.parse_message(message)
    except GitspaceError:
        return None
    return op.op_id if op else None


def _count(repo: GitRepo, since: str | None, tip: str) -> int:
    rev = tip if since is None else f"{since}..{tip}"
    return int(repo.git("rev-list", "--count", rev).decode().strip() or 0)


def _missing(repo: GitRepo, remote_tags: dict[str, str]) -> dict[str, str]:
    """The remote's checkpoints this clone does not have yet."""
    return {r: sha for r, sha in remote_tags.items() if repo.read_ref(r) is None}


def _ref_moves(repo: GitRepo, remote: str, tag_moves: dict[str, tuple[str, str]],
               remote_tags: dict[str, str], their_tip: str | None,
               tracking: str) -> list[tuple[str, str | None, str]]:
    """Every ref the local move changes besides the branch; refuses checkpoint clashes first."""
    local = {r: obj for r, obj, _ in repo.refs(TAGS.rstrip("/"))}
    clashes = []
    moves: list[tuple[str, str | None, str]] = []
    for ref, (old, new) in sorted(tag_moves.items()):
        if ref in remote_tags:
            clashes.append(f"checkpoint {ref[len(TAGS):]} was made here on an op not pushed yet, "
                           f"and {remote} already has a checkpoint of that name")
        moves.append((ref, old, new))
    for ref, obj in sorted(remote_tags.items()):
        if ref in tag_moves:
            continue
        if ref not in local:
            moves.append((ref, None, obj))
        elif local[ref] != obj:
            clashes.append(f"checkpoint {ref[len(TAGS):]} is at another commit on {remote}")
    if clashes:
        raise Conflict(
            "Sync refused: " + "; ".join(clashes) + ". Nothing was changed.",
            hint="Rename yours (git tag gitspace/NEW gitspace/OLD; git tag -d gitspace/OLD), "
                 "then sync again.")
    if their_tip is not None and repo.read_ref(tracking) != their_tip:
        moves.append((tracking, repo.read_ref(tracking), their_tip))
    return moves


def _move(ws: Workspace, branch: str, local: str, new: str,
          moves: list[tuple[str, str | None, str]]) -> str | None:
    """Move the branch (files, index) and ``moves`` as one change; "moved" when an op landed
    here since the fetch, or a ref moved meanwhile (the caller starts again)."""
    repo = ws.repo
    with ws.writer.locked():
        if repo.read_ref(f"refs/heads/{branch}") != local or repo.head_branch() != branch:
            return "moved"
        writes, before = ({}, {}) if new == local else checkout_changes(
            ws, repo.commit(local).tree, repo.commit(new).tree, "Syncing",
            "Nothing was changed here; run 'gitspace snapshot' to record them, then sync again.")
        refs = [RefMove(ref, old, sha) for ref, old, sha in moves]
        if new != local:
            refs.insert(0, RefMove(f"refs/heads/{branch}", local, new))
        if not refs:
            return None
        try:
            ws.writer.apply(Change("gitspace: sync", COMMITTER, refs,
                                   at=None if new == local else new, files=writes, before=before))
        except ConcurrentUpdate:
            return "moved"
    return None


def _refspecs(repo: GitRepo, new: str, ref: str, their_tip: str | None,
              remote_tags: dict[str, str]) -> list[str]:
    """Explicit ``sha:ref`` pairs, no ``+``: the branch if the remote lacks ``new``, and every
    checkpoint at a commit of the branch that the remote does not have."""
    specs = [] if their_tip == new else [f"{new}:{ref}"]
    merged = repo.git("for-each-ref", "--merged", new, "--format=%(refname) %(objectname)",
                      TAGS.rstrip("/")).decode().split("\n")
    for line in merged:
        name, _, obj = line.partition(" ")
        if name and name not in remote_tags:
            specs.append(f"{obj}:{name}")
    return specs


def _push_failed(remote: str, stdout: bytes, stderr: bytes) -> str:
    """"raced" for a push that lost to another clone; raise for anything else."""
    rejected = [line for line in stdout.decode(errors="replace").splitlines()
                if line.startswith("!")]
    text = (stdout + stderr).decode(errors="replace").strip()
    if not rejected:
        raise unreachable(remote, text, RemoteUnavailable(
            f"Could not push to {remote}: {text} Your ops are safe here and go out with the "
            "next sync.", hint="Check the remote ('git remote -v') and your access to it."))
    if all(any(reason in line for reason in _RACE) for line in rejected):
        return "raced"
    raise Conflict(f"{remote} refused the push (nothing was forced, nothing is lost here):\n"
                   f"{text}", hint="The server's message says why; a hook or a protected branch "
                                   "may need its owner.")
