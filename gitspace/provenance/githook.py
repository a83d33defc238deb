"""What git's hooks run (``githooks``): the note of each commit the person makes with plain git,
there when the git command returns.

- ``post-commit``: the new commit's note, from the checkout's line, and from the commit it
  copies when it is a cherry-pick (``CHERRY_PICK_HEAD``) or from those a ``merge --squash``
  joined (``post-merge`` kept them). Skipped while a rebase runs and for an amend: their
  ``post-rewrite`` follows with every old and new commit.
- ``post-rewrite amend|rebase``: each new commit's note from the commit(s) it replaces (several:
  a squash or fixup) and the line, so lines a rebase moved are attributed where they are now.
- ``post-merge 1`` (a squash merge): which commits it joined, for the commit that follows.
- ``pre-push REMOTE URL``: when a branch goes out and the notes changed since they last went
  there, merge the remote's notes into ours (``travel``) and exit 0, so that the hook pushes
  ``refs/notes/ai`` after the person's refs; 1 otherwise.

Invariants: nothing here prints or raises; every outcome is an exit code (0 but for pre-push's
"nothing to push"). A note that could not be written (the checkout's lock held past ``WAIT``
seconds, anything failing) is queued in ``<git dir>/gitspace/provenance/pending/`` and written
by the next hook that runs, or by ``gitspace gc`` before it prunes anything.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ..core.writer import Writer
    from ..storage.gitrepo import GitRepo
    from .attribute import Context

WAIT = 5.0  # seconds a hook waits for the checkout's lock (a harness's hook may hold it)
PENDING = "gitspace/provenance/pending"
SQUASH = "gitspace/provenance/squash.json"
SQUASH_KEPT = 24 * 3600.0  # a squash merge not committed within a day is forgotten


def main(argv: list[str], stdin: object = None) -> int:
    name, args = (argv[0] if argv else ""), argv[1:]
    data = b""
    if name in ("post-rewrite", "pre-push"):
        source: Any = stdin if stdin is not None else sys.stdin.buffer
        data = source.read()
    return run(name, args, data, Path.cwd())


def run(name: str, args: list[str], data: bytes, start: Path) -> int:
    """What hook ``name`` does in the checkout at ``start``, given its arguments and what git
    wrote to its stdin: its exit code. Run by the hook's own process (``main``) or by the
    checkout's resident recorder, which a hook asks first (``harness/resident/server.py``)."""
    try:
        from ..storage.gitrepo import GitRepo

        repo = GitRepo.locate(start)
    except Exception:  # noqa: BLE001  (a hook never fails the person's git)
        return 1 if name == "pre-push" else 0
    try:
        if name == "post-commit":
            post_commit(repo)
        elif name == "post-rewrite":
            post_rewrite(repo, args[0] if args else "", data.decode("ascii", "replace"))
        elif name == "post-merge":
            post_merge(repo, args[:1] == ["1"])
        elif name == "pre-push":
            return pre_push(repo, args[0] if args else "origin", data.decode("ascii", "replace"))
        return 0
    except Exception:  # noqa: BLE001  (queued or dropped: never the person's git's problem)
        return 1 if name == "pre-push" else 0
    finally:
        repo.close()


# -- the hooks -----------------------------------------------------------------------------

def post_commit(repo: GitRepo) -> None:
    if _rebasing(repo) or _last_action(repo).startswith("commit (amend)"):
        return
    head = repo.read_ref("HEAD")
    if head is None:
        return
    made_from: list[str] = []
    picked = _pseudo_ref(repo, "CHERRY_PICK_HEAD")
    if picked is not None:
        made_from = [picked]
    else:
        made_from = _squashed(repo, head)
    if not made_from and not _recorded_here(repo) and not _queued(repo):
        return  # no call recorded for this branch, nothing copied: no note, nothing loaded
    write(repo, {head: made_from})


def post_rewrite(repo: GitRepo, kind: str, pairs: str) -> None:
    replaced: dict[str, list[str]] = {}
    for row in pairs.splitlines():
        parts = row.split()
        if len(parts) >= 2 and parts[0] != parts[1] and all(_sha(p) for p in parts[:2]):
            replaced.setdefault(parts[1], []).append(parts[0])
    if replaced:
        write(repo, replaced)


def post_merge(repo: GitRepo, squash: bool) -> None:
    from ..storage import statefiles

    if not squash:
        return
    try:
        text = (repo.gitdir / "SQUASH_MSG").read_text(errors="replace")
    except OSError:
        return
    commits = [line.split()[1] for line in text.splitlines()
               if line.startswith("commit ") and len(line.split()) >= 2 and _sha(line.split()[1])]
    head = repo.read_ref("HEAD")
    if commits and head:
        statefiles.write(repo.gitdir, SQUASH, json.dumps(
            {"head": head, "commits": list(reversed(commits)), "time": time.time()}).encode())


def pre_push(repo: GitRepo, remote: str, refs: str) -> int:
    branches = [row.split() for row in refs.splitlines()]
    if not any(len(r) == 4 and r[0].startswith("refs/heads/") and set(r[1]) != {"0"}
               for r in branches):
        return 1
    from . import travel

    return 0 if travel.prepare_push(repo, remote) else 1


# -- writing -------------------------------------------------------------------------------

def write(repo: GitRepo, commits: dict[str, list[str]]) -> None:
    """Write the note of each commit (→ the commits it was made from), after any still queued;
    queue them instead when that cannot be done now."""
    todo = {**_queued(repo), **commits}
    try:
        written = compute_and_put(repo, todo)
    except Exception:
        for sha, made_from in commits.items():
            _queue(repo, sha, made_from)
        raise
    for sha in todo:
        if sha not in commits or sha in written:
            _unqueue(repo, sha)


def flush(repo: GitRepo, writer: Writer) -> None:
    """Write the notes still queued (the caller holds ``writer``'s lock)."""
    todo = _queued(repo)
    for sha in compute_and_put(repo, todo, writer):
        _unqueue(repo, sha)


def compute_and_put(repo: GitRepo, todo: dict[str, list[str]],
                    writer: Writer | None = None) -> set[str]:
    """Compute and write the notes of ``todo`` (commit → made from); the commits done.
    ``writer``: the checkout's, its lock held by the caller (else it is taken here)."""
    from ..core.writer import Writer
    from ..errors import LockTimeout

    if not todo:
        return set()
    if writer is not None:
        return _compute_and_put(writer, todo)
    own = Writer(repo)
    busy = LockTimeout(f"The checkout's lock was held for {WAIT:.0f} s.",
                       hint="The note is written by the next hook or 'gitspace gc'.")
    with own.locked(WAIT, busy):
        return _compute_and_put(own, todo)


def _compute_and_put(writer: Writer, todo: dict[str, list[str]]) -> set[str]:
    from ..errors import GitspaceError
    from . import attribute, authorship, notes
    from .sessions import Transcripts

    repo = writer.repo
    current = notes.Notes(repo)
    context = line_context(repo, current, Transcripts(repo.gitdir).model)
    texts: dict[str, str | None] = {}
    for sha, made_from in todo.items():
        if not repo.has_object(sha):
            continue  # (a commit gone since it was queued: nothing to note)
        context.made_from = [m for m in made_from if repo.has_object(m)]
        try:
            note = attribute.note_for(repo, sha, context)
        except GitspaceError:
            continue  # (history gitspace cannot read: that commit gets no note)
        if note is not None:
            texts[sha] = authorship.dump(note)
    if texts:  # by the person who committed, as git knew them then
        who = attribute.signature(repo.commit(next(iter(texts))).committer)
        notes.put(writer, who, texts, "authorship of " + ", ".join(s[:10] for s in list(texts)[:5]))
    return set(todo)


def line_context(repo: GitRepo, current: object, model_of: object) -> Context:
    """Where this checkout's calls are recorded: the line of the branch it is on."""
    from ..core.linerefs import ref_for
    from .attribute import Context

    line = repo.read_ref(ref_for(repo.head_branch(), repo.gitdir))
    return Context(line=line, notes=current, model_of=model_of)  # type: ignore[arg-type]


# -- the queue and the state of git ----------------------------------------------------------

def _queued(repo: GitRepo) -> dict[str, list[str]]:
    from ..storage import statefiles

    out: dict[str, list[str]] = {}
    try:
        names = statefiles.names(repo.gitdir, PENDING)
    except statefiles.StateRefused:
        return out
    for name in names[:256]:
        try:
            data = json.loads(statefiles.read(repo.gitdir, f"{PENDING}/{name}") or b"null")
        except (ValueError, OSError, statefiles.StateRefused):
            data = None
        sha = name.removesuffix(".json")
        if _sha(sha) and isinstance(data, list) and all(isinstance(m, str) and _sha(m)
                                                        for m in data):
            out[sha] = data
    return out


def _queue(repo: GitRepo, sha: str, made_from: list[str]) -> None:
    from ..storage import statefiles

    try:
        statefiles.write(repo.gitdir, f"{PENDING}/{sha}.json", json.dumps(made_from).encode())
    except Exception:  # noqa: BLE001  (the queue itself may be what failed)
        pass


def _unqueue(repo: GitRepo, sha: str) -> None:
    from ..storage import statefiles

    try:
        statefiles.remove(repo.gitdir, f"{PENDING}/{sha}.json")
    except Exception:  # noqa: BLE001
        pass


def _squashed(repo: GitRepo, head: str) -> list[str]:
    """The commits a squash merge joined, when the commit just made is the one that follows it."""
    from ..storage import statefiles

    try:
        data = json.loads(statefiles.read(repo.gitdir, SQUASH) or b"null")
    except (ValueError, OSError, statefiles.StateRefused):
        data = None
    if data is None:
        return []
    statefiles.remove(repo.gitdir, SQUASH)
    if not isinstance(data, dict) or not isinstance(data.get("commits"), list):
        return []
    parents = repo.commit(head).parents
    fresh = isinstance(data.get("time"), float | int) and time.time() - data["time"] < SQUASH_KEPT
    if not parents or data.get("head") != parents[0] or not fresh:
        return []
    return [c for c in data["commits"] if isinstance(c, str) and _sha(c)]


def _recorded_here(repo: GitRepo) -> bool:
    from ..core.linerefs import ref_for

    return repo.read_ref(ref_for(repo.head_branch(), repo.gitdir)) is not None


def _rebasing(repo: GitRepo) -> bool:
    return (repo.gitdir / "rebase-merge").is_dir() or (repo.gitdir / "rebase-apply").is_dir()


def _last_action(repo: GitRepo) -> str:
    """What the last line of HEAD's reflog says git did (``commit (amend): ...``)."""
    try:
        with open(repo.gitdir / "logs" / "HEAD", "rb") as f:
            f.seek(max(0, os.fstat(f.fileno()).st_size - 4096))
            last = f.read().rstrip(b"\n").rsplit(b"\n", 1)[-1]
    except OSError:
        return ""
    return last.partition(b"\t")[2].decode("utf-8", "replace")


def _pseudo_ref(repo: GitRepo, name: str) -> str | None:
    try:
        text = (repo.gitdir / name).read_text().strip()
    except OSError:
        return None
    return text if _sha(text) else None


def _sha(text: str) -> bool:
    return len(text) == 40 and all(c in "0123456789abcdef" for c in text)
