"""Sharing workspaces through git remotes: ``push`` and ``pull`` that never force.

What moves (the same set both ways):
- the current branch, when gitspace owns this checkout (``owner.py``: an agent's worktree, or a
  workspace ``gitspace init`` made, or a clone of one). A user's own branch in their own checkout
  is theirs to push with git, whatever its tip is; ``--branch`` names it (or any other branch)
  explicitly;
- every ``agent/*`` branch (pull: every one the remote has);
- every checkpoint tag ``refs/tags/gitspace/*``;
- nothing else: session transcripts live in the self-ignoring ``.gitspace/`` folder and are never
  committed, so never pushed, unless a person committed one (``run --commit-transcript``).

Never forcing: refspecs are explicit ``refs/...:refs/...`` pairs without ``+``, git is never
given ``--force``, and both commands check first and refuse as a whole, changing nothing:
- push refuses when the remote has a branch commit this clone does not contain (pull first) or a
  checkpoint of the same name at another commit; the push itself is ``--atomic`` where the remote
  supports it, and the remote's own fast-forward check still applies.
- pull fetches objects only (``--refmap=`` so that no remote-tracking ref is updated, by force or
  otherwise), then moves local refs by compare-and-swap: a branch only by fast-forward, a
  checkpoint only by creation. A diverged branch or a clashing checkpoint refuses the pull with
  what to do next. The current branch is fast-forwarded like an op (journaled; its files and
  index move with it) and is refused if that would overwrite unrecorded changes. A branch checked
  out in another worktree is left to that worktree's own pull.

git runs through ``GitRepo.run_git``: hooks off, scrubbed environment, no terminal prompts (a
remote that needs a password must get it from a credential helper). Reads from a ``git://``
remote (``git daemon``) speak protocol v0: over that transport git's v2 client sends its request
in small writes that wait on TCP's delayed acknowledgement, about 40 ms a request, eight times
what v0 takes there (``storage/remotes.py``). v2's gain, a ref listing filtered on the server, matters on
big hosted repositories, which are reached over HTTPS or SSH and keep v2.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field

from ..core import branches, checkpoints, opnames, refnames
from ..core.transaction import checkout_changes
from ..core.workspace import Workspace
from ..core.writer import COMMITTER, Change, RefMove
from ..errors import Conflict, GitspaceError
from ..storage.files import State
from ..storage.gitrepo import GitRepo
from ..storage.remotes import (  # noqa: F401  (the team layer's names for them)
    AccessDenied,
    RemoteUnavailable,
    fetch,
    ls_remote,
    unreachable,
)
from .attach import BRANCH_PREFIX

TAGS = checkpoints.PREFIX  # refs/tags/gitspace/


@dataclass
class SyncReport:
    remote: str
    moved: list[tuple[str, str]] = field(default_factory=list)  # (ref, what happened)
    notes: list[str] = field(default_factory=list)


def _short(ref: str) -> str:
    if ref.startswith(TAGS):
        return "checkpoint " + ref[len(TAGS):]
    return ref.removeprefix("refs/heads/")


def _check_remote(remote: str) -> str:
    if not remote or remote.startswith("-") or any(c in remote for c in "\0\n"):
        raise GitspaceError(f"{remote!r} is not a remote name, path or URL.",
                            hint="'git remote -v' lists this repository's remotes; a path or URL "
                                 "works too.")
    return remote


def _owns_current(ws: Workspace) -> str | None:
    """The current branch when gitspace owns this checkout (owner.py), else None."""
    current = ws.repo.head_branch()
    return current if current is not None and ws.owned else None


def _branches(ws: Workspace, owned: str | None, names: list[str], extra: tuple[str, ...],
              report: SyncReport) -> list[str]:
    current = ws.repo.head_branch()
    chosen = [owned] if owned else []
    if current and not owned and current not in extra:
        report.notes.append(f"{current} is your own branch (this checkout is not a gitspace "
                            "workspace), so it was left alone; use git for it, or name it with "
                            "--branch.")
    chosen += [n for n in names if n.startswith(BRANCH_PREFIX)]
    chosen += [branches.check_name(n) for n in extra]
    return list(dict.fromkeys(chosen))


# -- push ------------------------------------------------------------------------------------


def push(ws: Workspace, remote: str = "origin", extra: tuple[str, ...] = ()) -> SyncReport:
    repo = ws.repo
    report = SyncReport(_check_remote(remote))
    local_heads = {ref[len("refs/heads/"):]: sha for ref, sha, _ in repo.refs("refs/heads")}
    names = _branches(ws, _owns_current(ws), list(local_heads), extra, report)
    theirs = ls_remote(repo, remote)
    refusals: list[str] = []
    refspecs: list[str] = []
    for name in names:
        ref, mine = f"refs/heads/{name}", local_heads.get(name)
        if mine is None:
            refusals.append(f"there is no branch {name} here")
            continue
        other = theirs.get(ref)
        if other == mine:
            continue
        if other is None or repo.has_object(other) and repo.is_ancestor(other, mine):
            refspecs.append(f"{ref}:{ref}")
            report.moved.append((ref, "new" if other is None else
                                 f"{other[:12]}..{mine[:12]} (fast-forward)"))
        elif repo.has_object(other) and repo.is_ancestor(mine, other):
            report.notes.append(f"{name} is behind {remote}: nothing to push ('gitspace pull' "
                                "brings the newer ops here).")
        else:
            refusals.append(f"{remote} has ops on {name} that this clone does not have")
    for ref, tag, _ in repo.refs(TAGS.rstrip("/")):
        other = theirs.get(ref)
        if other is None:
            refspecs.append(f"{ref}:{ref}")
            report.moved.append((ref, "new"))
        elif other != tag:
            refusals.append(f"{_short(ref)} exists on {remote} at another commit")
    if refusals:
        raise Conflict(
            f"Push to {remote} refused: " + "; ".join(refusals) + ". Nothing was pushed.",
            hint="Run 'gitspace pull' first. If both sides made ops on one branch, continue "
                 "yours on a new branch ('gitspace branch NAME') and push that; a clashing "
                 "checkpoint needs a new name.",
        )
    if refspecs:
        _run_push(repo, remote, refspecs)
    report.notes += carry_notes(repo, remote)
    owned = _owns_current(ws)
    if owned and f"refs/heads/{owned}:refs/heads/{owned}" in refspecs:
        _mend_remote_head(repo, remote, owned, report)
    return report


def carry_notes(repo: GitRepo, remote: str) -> list[str]:
    """Push the authorship notes (refs/notes/ai) too, the remote's merged in first so that no
    one's are lost (provenance/travel.py); what the person should know when that failed."""
    from ..provenance import travel

    try:
        tip = travel.to_push(repo, remote)
        if tip is None:
            return []
        proc = push_refspecs(repo, remote, [f"{tip}:{travel.REF}"])
    except GitspaceError as e:
        return [f"The authorship notes were not pushed ({e.message}); the next push tries again."]
    if proc.returncode != 0:
        return [f"The authorship notes were not pushed to {remote} ("
                f"{proc.stderr.decode(errors='replace').strip()}); the next push tries again."]
    return []


def _mend_remote_head(repo: GitRepo, remote: str, branch: str, report: SyncReport) -> None:
    """A fresh bare remote's HEAD names a branch nobody pushed, so 'git clone' of it would check
    nothing out. A bare repository on this machine gets HEAD -> the branch just pushed (as
    hosting services do on a first push); another machine's is left alone, with a note."""
    if repo.remote_head_resolves(remote):
        return
    folder = repo.local_bare_remote(remote)
    if folder is None:
        report.notes.append(
            f"{remote}'s HEAD names a branch it does not have, so 'git clone' of it checks out "
            f"nothing: set it there ('git symbolic-ref HEAD refs/heads/{branch}' in the "
            f"repository, or the default branch setting of its host), or clone with "
            f"'--branch {branch}'.")
        return
    repo.set_bare_head(folder, branch)
    report.notes.append(f"{remote} had no default branch; its HEAD now names {branch}, so a "
                        "'git clone' of it checks that out.")


def push_refspecs(repo: GitRepo, remote: str,
                  refspecs: list[str]) -> subprocess.CompletedProcess[bytes]:
    """``git push --porcelain`` of explicit refspecs (never ``+``, never ``--force``), atomic
    where the remote supports it."""
    assert not any(spec.startswith("+") for spec in refspecs), refspecs
    flags = ["--porcelain", "--no-verify", "--no-follow-tags", "--no-recurse-submodules"]
    proc = repo.run_git("push", *flags, "--atomic", remote, *refspecs)
    if proc.returncode != 0 and b"support --atomic" in proc.stderr:
        proc = repo.run_git("push", *flags, remote, *refspecs)
    return proc


def _run_push(repo: GitRepo, remote: str, refspecs: list[str]) -> None:
    proc = push_refspecs(repo, remote, refspecs)
    if proc.returncode == 0:
        return
    out = (proc.stdout + proc.stderr).decode(errors="replace").strip()
    if any(line.startswith("!") for line in proc.stdout.decode(errors="replace").splitlines()):
        raise Conflict(f"{remote} refused the push; nothing was forced:\n{out}",
                       hint="Someone pushed meanwhile: run 'gitspace pull', then push again.")
    raise GitspaceError(f"Could not push to {remote}:\n{out}",
                        hint="Check the remote ('git remote -v') and your access to it.")


# -- pull ------------------------------------------------------------------------------------


def pull(ws: Workspace, remote: str = "origin", extra: tuple[str, ...] = ()) -> SyncReport:
    repo = ws.repo
    report = SyncReport(_check_remote(remote))
    theirs = ls_remote(repo, remote)
    remote_heads = [r[len("refs/heads/"):] for r in theirs if r.startswith("refs/heads/")]
    owned = _owns_current(ws)
    names = _branches(ws, owned, remote_heads, extra, report)
    wanted = {f"refs/heads/{n}": theirs[f"refs/heads/{n}"] for n in names
              if f"refs/heads/{n}" in theirs}
    for name in names:
        if f"refs/heads/{name}" not in theirs:
            report.notes.append(f"{remote} has no branch {name} yet.")
    wanted.update({ref: sha for ref, sha in theirs.items() if ref.startswith(TAGS)})
    fetch(repo, remote, wanted)
    wanted = rightly_named(repo, remote, wanted, report.notes)
    with ws.writer.locked():
        moves, current_move = _plan_pull(ws, remote, wanted, report, owned)
        # One change: every ref locked and verified first, the checkout's files and index
        # written, then all the refs moved together (or, if anything failed, none).
        refs = [RefMove(ref, old, new) for ref, old, new in moves]
        writes: dict[str, State] = {}
        before: dict[str, State] = {}
        at = None
        if current_move is not None and current_move[1] != current_move[2]:
            branch, old, at = current_move
            writes, before = checkout_changes(
                ws, repo.commit(old).tree, repo.commit(at).tree, "Pulling",
                "Nothing was changed here; run 'gitspace snapshot' to record them, then pull "
                "again.")
            refs.insert(0, RefMove(f"refs/heads/{branch}", old, at))
        if refs:
            ws.writer.apply(Change(f"gitspace: pull {remote}", COMMITTER, refs, at=at,
                                   files=writes, before=before))
    return report


def rightly_named(repo: GitRepo, remote: str, refs: dict[str, str],
                  notes: list[str]) -> dict[str, str]:
    """The refs of ``refs`` ({ref: object}, fetched) this clone may take: those it has, and each
    new branch or checkpoint whose name the naming rule (``refnames.refusal``, the rule a branch
    or checkpoint made here follows) accepts, reading as no op recorded here or brought by the
    fetch. Every other one stays on the remote, with a note in ``notes`` saying why."""
    have = {r for r, _, _ in repo.refs("refs/heads") + repo.refs("refs/tags")}
    new = {ref: sha for ref, sha in refs.items() if ref not in have}
    ops = opnames.incoming(repo, new.values()) if any(
        opnames.PART.fullmatch(ref.rsplit("/", 1)[-1].upper()) for ref in new) else set()
    taken = {ref: sha for ref, sha in refs.items() if ref in have}
    for ref, sha in new.items():
        kind = "checkpoint" if ref.startswith(TAGS) else "branch"
        name = ref.removeprefix(refnames.PREFIXES[kind])
        why = refnames.refusal(repo, kind, name, (), ops)
        if why is None:
            taken[ref] = sha
        else:
            notes.append(f"{_short(ref)} on {remote} was not taken: {why}. It stays on "
                         f"{remote}; rename it there to share it.")
    return taken


def _plan_pull(
    ws: Workspace, remote: str, wanted: dict[str, str], report: SyncReport, owned: str | None
) -> tuple[list[tuple[str, str | None, str]], tuple[str, str, str] | None]:
    """Every ref move the pull makes, checked before any is made; refuses as a whole."""
    repo = ws.repo
    current = repo.head_branch()
    held = {w.branch: w.path for w in repo.worktrees() if w.branch and w.path != repo.root}
    moves: list[tuple[str, str | None, str]] = []
    current_move = None
    refusals = []
    local = {r: sha for r, sha, _ in repo.refs("refs/heads") + repo.refs("refs/tags")}
    for ref, new in wanted.items():
        old = local.get(ref)  # one for-each-ref above, not a read per ref
        name = _short(ref)
        if old == new:
            continue
        clash = _name_clash(ref, local) if old is None else None
        if clash is not None:
            refusals.append(f"{name} on {remote} cannot be created here, where "
                            f"{_short(clash)} exists (git cannot have a ref both as a name and "
                            "as a folder of names): rename yours with 'git branch -m'")
            continue
        if ref.startswith(TAGS):
            if old is None:
                moves.append((ref, None, new))
                report.moved.append((ref, "new"))
            else:
                refusals.append(f"{name} exists here at another commit than on {remote}")
            continue
        if old is not None and repo.is_ancestor(new, old):
            report.notes.append(f"{name} has ops {remote} does not have yet ('gitspace push' "
                                "shares them).")
        elif old is not None and not repo.is_ancestor(old, new):
            refusals.append(f"{name} here and on {remote} both have ops the other lacks "
                            f"(theirs end at {new[:12]}, which is fetched)")
        elif name == current and name == owned:
            current_move = (name, old or new, new)
            report.moved.append((ref, f"{(old or '')[:12]}..{new[:12]} (fast-forward)"))
        elif name == current:
            report.notes.append(f"{name} is checked out in your own checkout, which gitspace "
                                "never changes: run 'git pull --ff-only' there.")
        elif name in held:
            report.notes.append(f"{name} is checked out in {held[name]}: run 'gitspace -C "
                                f"{held[name]} pull' there.")
        else:
            moves.append((ref, old, new))
            report.moved.append((ref, "new" if old is None else
                                 f"{old[:12]}..{new[:12]} (fast-forward)"))
    if refusals:
        raise Conflict(
            "Pull refused: " + "; ".join(refusals) + ". Nothing was changed here.",
            hint="Keep both lines: give theirs a branch of its own (git branch NEW <commit>) and "
                 "compare with 'gitspace log NEW', or continue yours on a new branch. A clashing "
                 "checkpoint: rename yours (git tag gitspace/NEW gitspace/OLD; git tag -d "
                 "gitspace/OLD), then pull again.",
        )
    return moves, current_move


def _name_clash(ref: str, local: Iterable[str]) -> str | None:
    """A local ref that makes ``ref`` impossible to create: one of its folders, or inside it."""
    parts = ref.split("/")
    names = set(local)
    for n in range(2, len(parts)):
        if "/".join(parts[:n]) in names:
            return "/".join(parts[:n])
    return next((r for r in local if r.startswith(ref + "/")), None)
