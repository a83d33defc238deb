"""What ``gitspace gc`` asks before it prunes a line: did the person's commits absorb every op on
it, and does every commit that absorbed it carry its note?

Invariants:
- A line is absorbed by a commit only when all of this holds: every commit the line followed
  (its follow ops) is that commit or an ancestor of it; no op on it took work back (an undo,
  a redo, a rewind: what it undid never reached a commit); and every path an op on it changed
  holds in the commit exactly what it holds at the line's tip, where a path the line made and
  removed again (a Write of ``.env`` then undone, a file never committed) counts as not held.
- Before a line goes, each commit between the line's start and the absorbing commit that
  changed one of its paths and holds an agent's line has its note: a missing one is computed
  from the line then (``attribute.note_for``) and written first. A line whose notes cannot be
  written stays.
"""

from __future__ import annotations

from ..core.linerefs import FOLLOW
from ..core.writer import Writer
from ..errors import GitspaceError
from ..storage import ledger
from ..storage.gitrepo import GitRepo
from ..storage.records import record
from . import attribute, authorship, sources
from .notes import Notes

WALK = 20_000  # ops of a line looked at (a longer one is left to keep_days)
ABSORBING = 1_000  # commits looked at for missing notes (more: the line stays)


@record()
class Line:
    """A line read back: its ops' commits (newest first), the commit it starts from, the commits
    it followed, the paths its ops changed, and whether an op took work back."""

    commits: list[str]
    root: str | None
    followed: list[str]
    paths: set[str]
    took_back: bool


def read_line(repo: GitRepo, tip: str) -> Line | None:
    found = Line([], None, [], set(), False)
    sha: str | None = tip
    for _ in range(WALK):
        if sha is None:
            return found
        commit = repo.commit(sha)
        op = ledger.op_or_none(commit.message)
        if op is None:
            found.root = sha
            return found
        found.commits.append(sha)
        parent = commit.parents[0] if commit.parents else None
        if op.tool == FOLLOW and op.source == "external":
            followed = op.args.get("commit")
            if isinstance(followed, str) and ledger.SHA.fullmatch(followed):
                found.followed.append(followed)
        else:
            if sources.key_of(op, attribute.identity(commit.author), sha, commit.time)[1]:
                found.took_back = True  # an undo, a redo, a rewind
            before = repo.commit(parent).tree if parent else None
            found.paths |= {c.path for c in repo.diff_trees(before, commit.tree)}
        sha = parent
    return None


def absorbed(repo: GitRepo, tip: str, target: str) -> bool:
    line = read_line(repo, tip)
    if line is None or line.took_back or line.root is None:
        return False
    if any(f != target and not repo.is_ancestor(f, target) for f in line.followed + [line.root]):
        return False
    ours, theirs = repo.commit(tip).tree, repo.commit(target).tree
    start = repo.commit(line.root).tree
    for path in line.paths:
        held = repo.entry_at(ours, path)
        if held != repo.entry_at(theirs, path):
            return False
        if held is None and repo.entry_at(start, path) is None:
            return False  # made and removed on the line: no commit ever held it
    return True


def unnoted(repo: GitRepo, tip: str, target: str, model_of: object = None
            ) -> dict[str, str] | None:
    """The notes (commit → text) that the commits which absorbed line ``tip`` into ``target``
    should carry and do not yet; None when that cannot be known (the line stays then)."""
    line = read_line(repo, tip)
    if line is None or line.root is None:
        return None
    paths = sorted(line.paths)
    if not paths:
        return {}
    stdin = (f"{target}\n^{line.root}\n--\n" + "\n".join(paths) + "\n").encode(
        "utf-8", "surrogateescape")
    proc = repo.run_git("--literal-pathspecs", "rev-list", "--stdin", "--first-parent",
                        f"--max-count={ABSORBING + 1}", input=stdin)
    commits = proc.stdout.decode().split()
    if proc.returncode != 0 or len(commits) > ABSORBING:
        return None
    notes = Notes(repo)
    out = {}
    for sha in reversed(commits):
        if notes.get(sha) is not None or sha in notes.refused:
            continue
        try:
            note = attribute.note_for(repo, sha, attribute.Context(
                line=tip, notes=notes, model_of=model_of))  # type: ignore[arg-type]
        except GitspaceError:
            return None
        if note is not None:
            out[sha] = authorship.dump(note)
    return out




def may_go(writer: Writer, lines: list[tuple[str, str]]) -> set[str]:
    """Of the lines (ref, tip) gc means to prune, those that may go once the notes they prove are
    written:
    the notes hooks left queued, then each line's absorbing commits' (the caller holds the
    writer's lock). An absorbed line whose notes cannot be known or written stays; one pruned
    for its age goes once what can be written is."""
    from ..core import linerefs
    from ..core import person as persons
    from . import githook
    from .notes import put
    from .sessions import Transcripts

    repo = writer.repo
    githook.flush(repo, writer)
    transcripts = Transcripts(repo.gitdir)
    going: set[str] = set()
    for ref, tip in lines:
        branch = linerefs.branch_of(ref)
        target = repo.read_ref(f"refs/heads/{branch}") if branch else None
        texts = unnoted(repo, tip, target, transcripts.model) if target else {}
        absorbing = target is not None and absorbed(repo, tip, target)
        if texts is None:
            if absorbing:
                continue
            texts = {}
        try:
            if texts:
                put(writer, persons.person(repo), texts, f"authorship kept before gc prunes {ref}")
        except GitspaceError:
            continue
        going.add(ref)
    return going
