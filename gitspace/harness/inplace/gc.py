"""``gitspace gc``: keep what in-place recording adds to ``.git`` bounded.

What goes (``plan``):
- a line the person's commits have *absorbed* (``provenance/keep.py`` says exactly when: every
  commit it followed is one of the branch's, no op on it took work back, every path its ops
  changed holds in the branch's tip what the line's tip holds), once every commit that absorbed
  it carries its authorship note (a missing one is written first; see ``collect``);
- a line nothing was recorded on for ``keep_days`` days (default 30);
- turn marks no remaining line reaches.

A checkout still on a pruned line loses nothing: its model (``line.Model``) names the commit
its files were last recorded at, so the next call starts the line again from the branch tip
with a follow op holding those files, and its op diffs against them as before.

What stays: everything else, and always everything of the person's. Nothing here deletes an
object: a pruned line's commits become unreachable, and git's own ``gc`` (``gc.pruneExpire``, two
weeks by default) removes them as it removes anything unreachable; meanwhile ``git repack -a -d
--keep-unreachable`` packs what the recording wrote into one pack with the person's objects,
where git stores each new version of a tree or file as a delta of the one before (a pack of its
own could not: a pack holds the bases of its deltas), and drops nothing. The background pass is
``gc --auto``, started by a turn's end once a day
(the first a day after recording began).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from ...core import linerefs
from ...core.writer import Writer
from ...errors import LockTimeout
from ...storage.gitrepo import GitRepo
from . import line

KEEP_DAYS = 30.0
AUTO_EVERY = 24 * 3600.0


@dataclass(frozen=True)
class Pruned:
    ref: str
    tip: str
    why: str


@dataclass(frozen=True)
class GcReport:
    pruned: list[Pruned]
    turns: list[str]
    packed: bool


def plan(repo: GitRepo, keep_days: float = KEEP_DAYS, now: float | None = None) -> list[Pruned]:
    now = time.time() if now is None else now
    out = []
    for ref, tip in linerefs.lines(repo):
        age = now - _time(repo, tip)
        if age > keep_days * 86400:
            out.append(Pruned(ref, tip, f"nothing recorded on it for {age / 86400:.0f} days"))
            continue
        branch = linerefs.branch_of(ref)
        target = repo.read_ref(f"refs/heads/{branch}") if branch else None
        if target is not None and absorbed(repo, tip, target):
            out.append(Pruned(ref, tip, f"absorbed by {branch} at {target[:10]}"))
    return out


def absorbed(repo: GitRepo, tip: str, target: str) -> bool:
    """Did commit ``target`` absorb every op on line ``tip``? (``provenance.keep.absorbed``)"""
    from ...provenance import keep

    return keep.absorbed(repo, tip, target)


def collect(repo: GitRepo, keep_days: float = KEEP_DAYS, dry_run: bool = False
            ) -> tuple[list[Pruned], GcReport | None]:
    """``gitspace gc``: ``plan`` and (unless ``dry_run``: then no report) ``prune`` under the
    checkout's lock, waiting up to 30 s for a hook that holds it."""
    writer = Writer(repo)
    busy = LockTimeout("A gitspace hook held this checkout's lock for 30 s.",
                       hint="Run 'gitspace gc' again when the agent is idle.")
    with writer.locked(30.0, busy):
        pruned = plan(repo, keep_days)
        if dry_run:
            return pruned, None
        pruned = _kept_first(writer, pruned)
        report = prune(writer, pruned)
        ran(repo)
    return pruned, report


def _kept_first(writer: Writer, pruned: list[Pruned]) -> list[Pruned]:
    """The lines that may go once the authorship notes they prove are written (the queued ones
    and each absorbing commit's: ``provenance.keep``); a line whose notes cannot be written
    stays."""
    from ...provenance import keep

    going = keep.may_go(writer, [(p.ref, p.tip) for p in pruned])
    return [p for p in pruned if p.ref in going]


def prune(writer: Writer, pruned: list[Pruned], pack: bool = True) -> GcReport:
    """Apply ``plan``'s verdicts: the lines and the turn marks no line reaches then, deleted in
    one change of ``writer`` (the caller holds its lock)."""
    repo = writer.repo
    turns = _orphan_turns(repo, {p.ref for p in pruned}) if pruned else []
    line.move(writer, [(p.ref, p.tip, None) for p in pruned] + [(r, t, None) for r, t in turns])
    packed = False
    if pack:  # one pack, so each tree recording wrote is a delta of the person's (nothing
        # unreachable is dropped: --keep-unreachable; git's own gc decides about those)
        packed = repo.run_git("repack", "-a", "-d", "--keep-unreachable", "-q").returncode == 0
    return GcReport(pruned, [ref[len(linerefs.TURNS):] for ref, _ in turns], packed)


def _orphan_turns(repo: GitRepo, pruned: set[str]) -> list[tuple[str, str]]:
    """The turn marks no line but the ``pruned`` ones reaches."""
    marks = {ref: tip for ref, tip, _ in repo.refs(linerefs.TURNS.rstrip("/"))}
    if not marks:
        return []
    reached: set[str] = set()
    for ref, tip in linerefs.lines(repo):
        if ref in pruned:
            continue
        out = repo.git("for-each-ref", "--format=%(refname)", f"--merged={tip}",
                       linerefs.TURNS.rstrip("/"))
        reached |= set(out.decode().split())
    return [(ref, tip) for ref, tip in marks.items() if ref not in reached]


def due(repo: GitRepo, now: float | None = None) -> bool:
    """Is the background pass due (``gc --auto``)? Once a day, the first a day after recording
    began here (the first ask starts the clock)."""
    now = time.time() if now is None else now
    try:
        last = os.stat(line.folder(repo.gitdir) / "gc").st_mtime
    except FileNotFoundError:
        ran(repo)
        return False
    except OSError:
        return False
    return now - last >= AUTO_EVERY


def ran(repo: GitRepo) -> None:
    line.write_state(repo.gitdir, "gc", b"")


def _time(repo: GitRepo, sha: str) -> float:
    try:
        return float(repo.commit(sha).committer.rsplit(" ", 2)[-2])
    except (ValueError, IndexError):
        return 0.0
