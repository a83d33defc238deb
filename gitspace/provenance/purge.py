"""``gitspace purge PATH``: take a file (a secret an agent wrote) out of everything gitspace keeps.

What gitspace keeps of a file recorded in place: its versions in the trees of the ops on every
line, the arguments and results of the calls that wrote it (a ``Write``'s content sits in its
op's trailer), the private index's entry, and the objects themselves. ``purge``:

- rewrites every line (``refs/gitspace/lines/*``, ``refs/gitspace/detached/*``) from its first
  op: each op's tree without PATH (a folder: all in it); each op that changed PATH keeps its
  record (tool, session, call id, the paths) but its arguments other than paths become
  ``{"$purged": N}`` and its result paragraph goes. Authors, committers and times stay as they
  were; the person's own commits, which a line starts from, are not touched;
- moves the lines and the turn marks on them in one change of the writer, and drops what the
  recorder cached about the work tree (its model and private index: remade by the next call);
- deletes each blob of PATH that nothing else reaches any more (no ref, reflog, the index): a
  loose one at once, a packed one after ``git repack -A -d`` has loosened it.

PATH is then excluded from recording (``core/exclude.py``), so no later scan takes it again. A
blob the person's own history, index or stash still holds stays, and ``Purged.kept`` says so:
it is theirs (``git filter-repo`` takes a file out of their history). Notes hold line numbers,
never content, and stay. In a workspace gitspace owns, the ops are the branch's own history,
which purge does not rewrite (it says so).
"""

from __future__ import annotations

import os

from ..core import exclude, linerefs
from ..core.writer import COMMITTER, Change, RefMove, Writer
from ..errors import BadArguments, GitspaceError, LockTimeout
from ..storage import ledger, loose, privateindex, statefiles
from ..storage.gitrepo import GitRepo
from ..storage.objects import Commit
from ..storage.records import field, record, replace

PATH_KEYS = ("file_path", "path", "paths", "notebook_path", "old_path", "new_path")
_WALK = 100_000


@record()
class Purged:
    path: str
    lines: list[str] = field(default_factory=list)  # the lines rewritten
    ops: int = 0  # ops whose record was purged
    deleted: list[str] = field(default_factory=list)  # blobs removed from the object store
    kept: list[str] = field(default_factory=list)  # blobs something of the person's still holds


def purge(repo: GitRepo, path: str) -> Purged:
    path = path.strip("/")
    if not path or path.startswith(".git/") or path == ".git" or ".." in path.split("/"):
        raise BadArguments(f"{path!r} is no path of the work tree.",
                           hint="Name the file as the work tree's top sees it (src/.env).")
    if not linerefs.lines(repo):
        raise GitspaceError(f"Nothing is recorded in place in {repo.root}, so gitspace keeps no "
                            f"copy of {path} here.", hint=(
                                "In a workspace gitspace owns, the ops are the branch's own "
                                "history: rewrite it with git (git filter-repo)."))
    writer = Writer(repo)
    out = Purged(path)
    busy = LockTimeout("A gitspace hook held this checkout's lock for 30 s.",
                       hint="Run 'gitspace purge' again when the agent is idle.")
    with writer.locked(30.0, busy):
        mapping: dict[str, str] = {}
        blobs: set[str] = set()
        moves = []
        for ref, tip in linerefs.lines(repo):
            new = _rewrite(repo, tip, path, mapping, blobs, out)
            if new != tip:
                moves.append(RefMove(ref, tip, new))
                out.lines.append(ref)
        for name, tip in linerefs.turn_marks(repo).items():
            if tip in mapping:
                moves.append(RefMove(linerefs.TURNS + name, tip, mapping[tip]))
        if moves:
            writer.apply(Change("gitspace: purge", COMMITTER, moves))
            _forget_cache(repo)
        _delete(repo, blobs, out)
        exclude.add(repo.commondir, [_pattern(path)])  # never recorded again
    return out


def _pattern(path: str) -> str:
    """``path`` as a gitignore pattern that matches it alone."""
    escaped = "".join("\\" + c if c in "*?[]\\!#" else c for c in path)
    return "/" + (escaped[:-1] + "\\ " if escaped.endswith(" ") else escaped)


def _rewrite(repo: GitRepo, tip: str, path: str, mapping: dict[str, str], blobs: set[str],
             out: Purged) -> str:
    chain: list[Commit] = []
    sha: str | None = tip
    for _ in range(_WALK):
        if sha is None:
            break
        commit = repo.commit(sha)
        if ledger.op_or_none(commit.message) is None:
            break  # the person's commit the line starts from
        chain.append(commit)
        sha = commit.parents[0] if commit.parents else None
    parent = sha
    changed = False
    for commit in reversed(chain):
        tree = _without(repo, commit.tree, path, blobs)
        message = commit.message
        prior = repo.commit(commit.parents[0]).tree if commit.parents else None
        if prior is not None and any(_under(c.path, path)
                                     for c in repo.diff_trees(prior, commit.tree)):
            message = _purged_message(commit.message)
            out.ops += 1
        if tree == commit.tree and message == commit.message and parent == (
                commit.parents[0] if commit.parents else None):
            mapping[commit.sha] = commit.sha
            parent = commit.sha
            continue
        changed = True
        text = f"tree {tree}\n" + (f"parent {parent}\n" if parent else "") + \
            f"author {commit.author}\ncommitter {commit.committer}\n\n{message}"
        new = repo.write_object("commit", text.encode("utf-8", "surrogateescape"))
        mapping[commit.sha] = new
        parent = new
    return parent if changed and parent else tip


def _under(candidate: str, path: str) -> bool:
    return candidate == path or candidate.startswith(path + "/")


def _without(repo: GitRepo, tree: str, path: str, blobs: set[str]) -> str:
    entry = repo.entry_at(tree, path)
    if entry is None:
        return tree
    if entry.is_tree:
        blobs.update(e.sha for _, e in repo.walk_files(entry.sha))
    else:
        blobs.add(entry.sha)
    return repo.update_tree(tree, {path: None})


def _purged_message(message: str) -> str:
    op = ledger.op_or_none(message)
    if op is None:
        return message
    args = {k: (v if k in PATH_KEYS else {"$purged": len(ledger.canonical_json(v))})
            for k, v in op.args.items()}
    subject = message.split("\n", 1)[0]
    body = ("Purged by 'gitspace purge': the arguments and result of this call are gone; the "
            "call itself stays on record.")
    return ledger.encode_message(replace(op, args=args), subject, body)


def _forget_cache(repo: GitRepo) -> None:
    """The recorder's model and private index name the old commits: the next call remakes them
    (a scan), as after any loss of its cache."""
    statefiles.remove(repo.gitdir, linerefs.MODEL)
    try:
        os.unlink(privateindex.path(repo.gitdir))
    except FileNotFoundError:
        pass


def _delete(repo: GitRepo, blobs: set[str], out: Purged) -> None:
    if not blobs:
        return
    reached = set(repo.git("rev-list", "--objects", "--no-object-names", "--all", "--reflog",
                           "--indexed-objects").decode().split())
    for blob in sorted(blobs):
        if blob in reached:
            out.kept.append(blob)
    doomed = sorted(blobs - reached)
    if not doomed:
        return
    if any(loose.object_path(repo.objects, b) is None or not os.path.exists(
            str(loose.object_path(repo.objects, b))) for b in doomed):
        repo.git("-c", "gc.auto=0", "repack", "-A", "-d", "-q")  # packed ones become loose
    for blob in doomed:
        found = loose.object_path(repo.objects, blob)
        if found is not None:
            try:
                os.unlink(found)
                out.deleted.append(blob)
            except FileNotFoundError:
                pass


