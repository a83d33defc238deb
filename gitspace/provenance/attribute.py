"""A commit's authorship: which lines of its diff came from which recorded call, as a note.

Invariants:
- Only the lines a commit adds or changes against its first parent are attested (git's own
  diff, line for line): the note of a commit says what that commit brought.
- Each such line is looked up in the *sources*, in order, by content and position
  (``matching``): the line of the checkout (every op it recorded, replayed as an exact blame:
  ``sources.line_history``), then the commits the commit was made from, newest first (the
  commit an amend or a rebase replaced, the one a cherry-pick copied, those a squash joined:
  ``sources.commit_steps``, their notes or their ops). The first source that holds the line with
  a known author names it. A line some source holds with no known author stays unattested
  ("untracked" in the standard's words); a line no source holds is the person's who committed
  it (``h_`` of the committer, their git identity): they changed it since the last recorded call.
- A note is written only for a commit that holds a line of an agent, or one made from commits
  that had notes (their session and prompt records are kept, as the standard asks). Its records
  carry names and ids only (tool, session, model, op, tool-use id, time): never transcript text.
"""

from __future__ import annotations

from ..storage.gitrepo import GitRepo
from ..storage.objects import Commit, Signature
from ..storage.records import field, record
from . import authorship, matching, sources
from .notes import Notes

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence


@record()
class Context:
    """What a commit is attributed from: the line's tip (None: no line), the commits it was made
    from (oldest first), the notes, and how a session's model is found."""

    line: str | None = None
    made_from: Sequence[str] = ()
    notes: Notes | None = None
    model_of: Callable[[str, str], str] | None = None
    person: str | None = None  # who the person is (default: the commit's committer)
    # A line no source holds is the person's (False: not attested, as in a squash someone else
    # made: its committer did not necessarily write it).
    unheld_is_person: bool = True
    extra: list[sources.History] = field(default_factory=list)


def identity(line: str) -> str:
    """``Name <email>`` of a commit's author or committer line."""
    return line.rsplit(" ", 2)[0]


def signature(line: str) -> Signature:
    """The person of a commit's committer line, as git resolved them when they committed (no
    git process asked again)."""
    name, _, email = identity(line).partition(" <")
    return Signature(name, email.rstrip(">"))


def changed_files(repo: GitRepo, commit: Commit) -> dict[str, tuple[list[int], list[bytes]]]:
    """Every text file the commit changes: path → (the numbers of the lines it adds or changes,
    the file's lines)."""
    parent = repo.commit(commit.parents[0]).tree if commit.parents else None
    out = {}
    for change in repo.diff_trees(parent, commit.tree):
        if change.new is None or change.new.mode not in sources.FILES:
            continue
        new = sources.lines_of(repo, change.new.sha)
        old = sources.lines_of(repo, change.old.sha) if change.old is not None and \
            change.old.mode in sources.FILES else []
        if new is None or old is None:
            continue
        lines = matching.added(old, new)
        if lines:
            out[change.path] = (lines, new)
    return out


def note_for(repo: GitRepo, sha: str, context: Context) -> authorship.Note | None:
    """The note commit ``sha`` should carry, or None when it holds no agent's line and was made
    from no noted commit."""
    commit = repo.commit(sha)
    notes = context.notes or Notes(repo)
    files = changed_files(repo, commit)
    person = context.person or identity(commit.committer)
    histories = list(context.extra)
    if context.line is not None and files:
        exclude = commit.parents[0] if commit.parents else None
        histories.insert(0, sources.line_history(repo, context.line, files, exclude))
    made_from = list(context.made_from)
    if made_from:
        histories.append(sources.commit_steps(repo, made_from, files, notes.get))
    attested = {path: _attest(repo, lines, new, path, histories,
                              person if context.unheld_is_person else None)
                for path, (lines, new) in files.items()}
    predecessors = [n for n in (notes.get(s) for s in made_from) if n is not None]
    return _build(sha, attested, histories, predecessors, person, context)


def _attest(repo: GitRepo, lines: list[int], new: list[bytes], path: str,
            histories: list[sources.History], person: str | None) -> dict[int, str]:
    person_key = authorship.human_key(person) if person is not None else None
    versions = []
    for history in histories:
        if path in history.steps:
            version = sources.replay(repo, history.start.get(path), history.steps[path])
            if version is not None:
                versions.append((version, matching.match(version.lines, new)))
    out = {}
    for n in lines:
        held, key = False, None
        for version, matched in versions:
            i = matched[n - 1]
            if i >= 0:
                held = True
                key = version.keys[i]
                if key is not None:
                    break
        if key is not None:
            out[n] = key
        elif not held and person_key is not None:
            out[n] = person_key
    return out


def _build(sha: str, attested: dict[str, dict[int, str]], histories: list[sources.History],
           predecessors: list[authorship.Note], person: str, context: Context
           ) -> authorship.Note | None:
    files: dict[str, dict[str, authorship.Ranges]] = {}
    for path, keys in attested.items():
        by_key: dict[str, list[int]] = {}
        for n, key in keys.items():
            by_key.setdefault(key, []).append(n)
        if by_key:
            files[path] = {k: authorship.to_ranges(v) for k, v in by_key.items()}
    used = {k for entries in files.values() for k in entries}
    calls = {k: c for h in histories for k, c in h.calls.items()}
    if not any(authorship.kind_of(k) == "agent" for k in used) and not predecessors:
        return None
    note = authorship.Note(base=sha, files=files)
    for old in predecessors:  # every record they held is kept (the standard: "preserved")
        note.sessions.update(old.sessions)
        note.prompts.update(old.prompts)
        note.humans.update({k: v for k, v in old.humans.items() if k in used})
        note.traces.update(old.traces)
    for key in sorted(used):
        head, trace = authorship.split_key(key)
        if head.startswith("h_") and head == authorship.human_key(person):
            note.humans[head] = {"author": person}
        call = calls.get(key)
        if call is None or trace is None:
            continue
        model = context.model_of(call.agent, call.session) if context.model_of else "unknown"
        note.sessions[head] = {
            "agent_id": {"tool": sources.harness_tool(call.agent), "id": call.session,
                         "model": model},
            "human_author": person,
        }
        note.traces[trace] = {"op": call.op_id, "tool": call.tool, "agent": call.agent,
                              "session": call.session, "tool_use_id": call.tool_use_id,
                              "time": call.time}
    people = {k: v for h in histories for k, v in h.people.items()}
    for key in used:
        if key.startswith("h_") and key not in note.humans and key in people:
            note.humans[key] = {"author": people[key]}
    return note
