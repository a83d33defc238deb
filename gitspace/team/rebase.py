"""The rebase by meaning behind ``sync``: this clone's unpushed ops re-run on the remote's tip.

Invariants:
- It runs in replay's scratch workspace with replay's own steps (``replay.engine.run`` with
  ``onto.apply_diff``), so every re-run op is checked as ``replay --onto`` checks it: the tool
  succeeds on the new base and records the same trailers and author, a recorded script is the one
  that would run now, an outside edit changes exactly the paths it records and merges three ways.
  Op ids stay what they were; each re-run op records the commit it came from
  (``Gitspace-Rebased-From``).
- It moves no ref and writes nothing in the user's repository until every op applied; then it
  copies the new objects in and says where the branch and each checkpoint go. The caller moves
  them (journaled, see ``sync_state``). A stop raises ``SyncStopped`` naming the op, the remote
  ops that changed what it needed, and the two ways on.
- A checkpoint at a moved commit moves with it to the re-run commit, as a new tag object that is
  the old one with its target changed (name, tagger and message kept); a checkpoint at a dropped
  op moves to the op before it. A restore re-run on the new base sees each checkpoint where it
  will be after the sync, so what it brings back is what a replay of the result brings back.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..core.workspace import Workspace
from ..errors import Conflict, LedgerError
from ..replay.engine import Progress, ReplayReport, checkpoint_tags, run
from ..replay.judge import Divergence
from ..replay.onto import apply_diff
from ..replay.scratch import open_scratch
from ..storage import ledger
from ..storage.gitrepo import GitRepo
from ..storage.objects import Commit

THEIRS_SCANNED = 200  # remote commits looked through for the ones that changed the same paths


@dataclass
class Rebased:
    """The re-run ops' new tip and, per checkpoint ref that moves, its new tag object."""

    tip: str
    tags: dict[str, tuple[str, str]]  # ref -> (old tag object, new tag object)
    report: ReplayReport


class SyncStopped(Conflict):
    """An unpushed op no longer applies on the remote's tip; nothing was changed."""

    def __init__(self, message: str, hint: str, divergence: Divergence,
                 theirs: list[tuple[Commit, ledger.Op | None]]) -> None:
        super().__init__(message, hint)
        self.divergence = divergence
        self.theirs = theirs


def rebase(ws: Workspace, commits: list[Commit], base: str, onto: str, drop: set[str],
           extra_tags: dict[str, str], scratch_in: Path,
           progress: Progress | None = None) -> Rebased:
    """Re-run ``commits`` (oldest first, those whose op id is in ``drop`` left out) on ``onto``.

    ``extra_tags`` are checkpoints the remote has and this clone does not have yet ({ref: tag
    object}): a restore among the ops can use them, as it will after the sync."""
    repo = ws.repo
    kept = [c for c in commits if _op_id(c) not in drop]
    now, later = checkpoint_tags(repo, commits)
    _follow_dropped(commits, kept, later, now, onto)
    now.update(extra_tags)
    report = ReplayReport(commits[-1].sha, base, len(kept), start=base, onto=onto)
    with open_scratch(repo, onto, ws.max_file_bytes, scratch_in) as sc:
        sc.set_tags(now)
        run(sc, kept, report, later, apply_diff, compare=False, progress=progress)
        if report.ok:
            sc.export()
            tip = sc.tip()
            moved = {ref: sc.repo.read_ref(ref) for refs in later.values() for ref in refs}
            report.created = tip
    report.leftover = None if sc.leftover is None else str(sc.leftover)
    if not report.ok:
        return Rebased("", {}, report)
    tags = {}
    for ref, target in moved.items():
        old = repo.read_ref(ref)
        assert old is not None and target is not None
        tags[ref] = (old, retarget_tag(repo, old, target))
    return Rebased(tip, tags, report)


def _op_id(commit: Commit) -> str | None:
    try:
        op = ledger.parse_message(commit.message)
    except LedgerError:
        return None
    return op.op_id if op else None


def _follow_dropped(commits: list[Commit], kept: list[Commit], later: dict[str, list[str]],
                    now: dict[str, str], onto: str) -> None:
    """Checkpoints at dropped commits go where the op before them goes (``onto`` if none)."""
    kept_shas = {c.sha for c in kept}
    previous: str | None = None
    for commit in commits:
        if commit.sha in kept_shas:
            previous = commit.sha
            continue
        for ref in later.pop(commit.sha, []):
            if previous is None:
                now[ref] = onto
            else:
                later.setdefault(previous, []).append(ref)


def retarget_tag(repo: GitRepo, tag: str, target: str) -> str:
    """The annotated tag ``tag`` pointing at ``target`` instead (everything else kept)."""
    kind, data = repo.read_object(tag)
    if kind != "tag" or not data.startswith(b"object "):
        # A lightweight checkpoint ref (not one gitspace makes): it simply moves.
        return target
    return repo.write_object("tag", b"object " + target.encode() + data[len("object ") + 40:])


def stopped(repo: GitRepo, remote: str, branch: str, report: ReplayReport, base: str,
            theirs_tip: str) -> SyncStopped:
    """The refusal for a rebase that stopped: our op, the remote ops in its way, the choices."""
    d = report.divergence
    assert d is not None
    ours = _describe(d.op_id, d.tool, d.args, repo.commit(d.commit).author_name, d.commit)
    paths = set(d.paths) | {v for k, v in d.args.items() if "path" in k and isinstance(v, str)}
    theirs = _theirs(repo, base, theirs_tip, paths)
    if theirs:
        lines = [_describe(op.op_id, op.tool, op.args, c.author_name, c.sha) if op
                 else _describe(None, None, {}, c.author_name, c.sha)
                 for c, op in theirs[:5]]
        their_side = (f" On {remote}/{branch}, " + "; ".join(lines) + " changed "
                      + ", ".join(sorted(paths)[:5]) + ".")
    else:
        their_side = (f" {remote}/{branch} has {_count(repo, base, theirs_tip)} new commit(s) "
                      "since this clone last synced; none of them changed those paths directly.")
    name = d.op_id or d.commit[:12]
    message = (f"Sync stopped; nothing was changed here or on {remote}. Your op {ours} no longer "
               f"applies on top of {remote}/{branch} ({theirs_tip[:12]}): {d.reason}{their_side}")
    hint = (f"Choose one: continue on a branch of your own with 'gitspace branch NAME' then "
            f"'gitspace sync {remote}' (your ops go to {remote} as branch NAME, untouched); or "
            f"drop this op with 'gitspace sync {remote} --drop {name}' (its commit stays in the "
            f"reflog of {branch}).")
    return SyncStopped(message, hint, d, theirs)


def _describe(op_id: str | None, tool: str | None, args: dict[str, object], author: str,
              commit: str) -> str:
    what = f"{tool} {ledger.args_summary(args)}" if tool else "(not an op)"
    return f"{op_id or '-'} ({what}, by {author}, commit {commit[:12]})"


def _theirs(repo: GitRepo, base: str, tip: str,
            paths: set[str]) -> list[tuple[Commit, ledger.Op | None]]:
    """The remote's commits since ``base`` that changed any of ``paths``, newest first."""
    found = []
    for commit in repo.log(f"{base}..{tip}", limit=THEIRS_SCANNED):
        changed = {c.path for c in repo.diff_trees(repo.parent_tree(commit), commit.tree)}
        if changed & paths or any(p.startswith(q + "/") for p in changed for q in paths):
            try:
                op = ledger.parse_message(commit.message)
            except LedgerError:
                op = None
            found.append((commit, op))
    return found


def _count(repo: GitRepo, base: str, tip: str) -> int:
    return int(repo.git("rev-list", "--count", f"{base}..{tip}").decode().strip() or 0)


__all__ = ["Rebased", "SyncStopped", "rebase", "retarget_tag", "stopped"]
