"""Recording a harness's tool calls in a person's own checkout, where nothing of theirs moves.

Where the ops go and how the line follows the person: ``core/line.py``. What this module keeps:

- **Nothing of the person's is written**: not ``.git/index`` (git runs against the private
  index, ``storage/privateindex.py``), not HEAD, a branch, the stash, a tag or a work-tree
  file. Objects go into their object store, the line and turn refs under ``refs/gitspace/``,
  everything else under ``<git dir>/gitspace/``.
- **What is read**: the files a file tool names (Write, Edit...), before and after it runs;
  for a scan (a shell command's end, a turn's start or end, catching up) the paths one
  ``git status`` against the private index reports, and the paths the line changed since that
  index was last brought up to date. Never a file over the size cap (refused before it is
  opened), never one a filter owns (Git LFS: its smudged content), never an ignored one that the
  line does not already track, never an excluded one (``core/exclude.py``).
- **Bounded cost**: a file tool's call reads its own files and the trees on their paths, and
  starts one ``git ls-files`` per file in its before hook (is it ignored, or a filter's?);
  nothing walks the work tree. A shell command costs one ``git status`` (at its end) plus the
  commit; the private index is rewritten only at a turn's start and end (``SYNC_AT``).
- **Each call's diff is its own**: a file tool's before hook keeps what its files held; a
  difference from the line is the person's and is committed first as an ``external`` op by
  their git identity. A shell command's before hook only marks the moment it started; at its
  end a changed file whose ctime is older than that mark was changed before it ran (the
  person's), a newer one by it. (A file both the person and the command changed since the last
  scan is the command's: the scan cannot split one file.)
- **Crashes**: the line's ref moves by compare-and-swap after every object is written; the
  private index is brought up to date after the ref moved, and the model (``line.Model``) last.
  A hook killed anywhere leaves a mark that makes the next call scan first, so what the killed
  call saw is recorded then, as the person's.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from ..core import exclude, line
from ..core.identity import Identity, external_edit
from ..errors import FileRefused, GitspaceError, NotFound, PathRefused
from ..storage import ledger, lockfile, opchain, privateindex
from ..storage.files import Files
from ..storage.gitrepo import GitRepo
from ..storage.objects import Entry
from . import state
from .calls import free_turn_name, recorded_args, subject, title, token, turn_name
from .events import Call, Event, Options, Recorded
from .prepare import relative, running

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ..core.writer import Writer

# The private index is brought up to date at a turn's start and end, and by a scan that found
# more than this many paths to look at: git rewrites a whole index file to change one entry, so
# a shell command's scan leaves it be (its paths are looked at again, a few, until then).
SYNC_AT = 256


def pending(repo: GitRepo, options: Options) -> tuple[list[str], list[str]] | None:
    """What recording in place has not recorded yet: (paths, notes on files it will not read);
    None before the line has started. Read-only: no object is written, and git may not even
    refresh the private index (a hook holding the checkout's lock may be writing it)."""
    model = line.load(repo.gitdir)
    index = privateindex.path(repo.gitdir)
    if model is None or model.index_at is None or not index.exists():
        return None
    try:
        here = line.where(repo)
        tree = repo.commit(model.tip).tree
        if not line.continues(model, here):
            tree = line.derive(repo, tree, model.base, here.head)
        known_at = repo.commit(model.index_at).tree
    except (NotFound, GitspaceError):
        return None
    candidates = set(privateindex.changed(repo, index, refresh=False))
    candidates |= {c.path for c in repo.diff_trees(known_at, tree)}
    excluded = exclude.load(repo.commondir)
    files = Files(repo.root)
    found, skipped = [], []
    for rel in sorted(candidates - privateindex.filtered(repo, candidates)):
        if excluded.match(rel):
            continue
        try:
            got = files.read(rel, limit=options.max_file_bytes)
        except (FileRefused, PathRefused) as e:
            skipped.append(f"{rel} ({e.message})")
            continue
        entry = None if got is None else Entry(got[1], repo.hash_object("blob", got[0]))
        if entry != repo.entry_at(tree, rel):
            found.append(rel)
    return found, skipped


class Recorder:
    """One after hook (or turn edge) under the checkout's lock: follow the person, catch up,
    record the call, publish."""

    def __init__(self, writer: Writer, event: Event, options: Options, missed: str | None,
                 act: Callable[[Recorder], Any] | None = None) -> None:
        """Record ``event`` through ``writer``, whose lock the caller holds."""
        self.writer, self.repo = writer, (repo := writer.repo)
        self.event, self.options, self.missed = event, options, missed
        self.act = act  # a command the person runs (undo, rewind): what it does on the line
        self.gitdir = repo.gitdir
        self.files = Files(repo.root)
        self.excluded = exclude.load(repo.commondir)
        self.outcome = Recorded()
        self.index = privateindex.path(repo.gitdir)
        self.scanned: set[str] = set()  # paths the private index must be brought up to date on
        self.touched: set[str] = set()
        self._person: tuple[Any, str] | None = None
        self.session = token(event.session)
        self.moved = False  # the person ran git since the last call (moved HEAD, stashed)
        self.writes: dict[str, Any] = {}  # work-tree files to write (undo, rewind only)
        self.before: dict[str, Any] = {}

    # -- the call ----------------------------------------------------------------------------

    def run(self) -> Recorded:
        event, call = self.event, self.event.call
        self.here = here = line.where(self.repo)
        model = self._model(line.load(self.gitdir), here)
        key = running(event, call).key if call is not None else None
        self.others = [r for r in state.running(self.gitdir) if r.key != key]
        self.busy = {rel for r in self.others if not r.shell for rel in r.before}
        started = _started_ns(self.gitdir, key) if key else None
        announced = state.retire(self.gitdir, key) if key else None
        shell = call is not None and call.paths is None
        # (rewind --all overwrites every file: what the person changed is found, and kept, first)
        scan = event.kind in ("prompt", "stop", "scan") or shell or model is None \
            or bool(self.missed) or bool(event.kind == "rewind" and event.extra.get("all"))
        mine = self._named(call) if call is not None and call.paths is not None else []

        self.stash = self.repo.read_ref("refs/stash")
        self.start(model, here)
        if model is not None and model.stash != self.stash:
            self.moved = True

        def by_the_call(entry: Entry | None, ctime: int) -> bool:  # a shell command's change?
            if not shell or started is None:
                return False
            if entry is None and self.moved:  # gone after the person ran git between calls
                return False
            return ctime >= started  # (a file that is gone: its folder's ctime)

        after: dict[str, Entry | None] = {}
        if scan:
            found = self._scan(model, set(mine), by_the_call)
            before = {p: e for p, (e, ctime) in found.items() if not by_the_call(e, ctime)}
            if before:
                self._external(before, self._outside_note())
            after = {p: e for p, (e, ctime) in found.items() if by_the_call(e, ctime)}
        if self.act is not None:
            self.outcome.taken = self.act(self)
        elif event.kind in ("prompt", "stop"):
            self._turn(event)
        elif shell and call is not None:
            if after:
                self._call_op(call, after, self._overlap_note())
        elif call is not None:
            self._file_call(call, mine, announced)
        self._publish(model, scan)
        if event.kind == "stop":
            self._mark_turn()
        return self.outcome

    def _model(self, model: line.Model | None, here: line.Where) -> line.Model | None:
        """The model, checked against the line (a crash between a ref move and the model's save
        leaves the model behind its line: the line wins)."""
        repo = self.repo
        if model is not None and not all(repo.has_object(s) for s in (model.tip, model.base)):
            model = None
        if model is not None and model.ref == here.ref and here.tip is not None \
                and model.tip != here.tip:
            base = line.base_of(repo, here.tip)
            model = line.Model(here.ref, here.tip, base, model.index_at) if base else None
        if model is None and here.tip is not None:
            base = line.base_of(repo, here.tip)
            if base is not None and base == here.head:
                return line.Model(here.ref, here.tip, base, None)
        return model

    def start(self, model: line.Model | None, here: line.Where) -> None:
        """Find the commit the call's ops go on: the line's tip, or a follow op made now."""
        repo = self.repo
        self.model = model
        if line.continues(model, here):
            assert model is not None
            self.parent = model.tip
            self.tree = repo.commit(model.tip).tree
            return
        self.parent = here.tip or here.head
        self.tree = repo.commit(self.parent).tree
        if model is None:
            return  # the scan finds the work tree; the follow op is made then (_follow_scanned)
        tree = line.derive(repo, repo.commit(model.tip).tree, model.base, here.head)
        self._follow(tree, model)

    def _follow(self, tree: str, since: line.Model | None) -> None:
        person, agent = self.person()
        commit = line.follow(self.repo, self.here, tree, since, person, agent)
        self.moved = True
        self.parent, self.tree = commit, tree
        self.outcome.ops.append(_op_id(self.repo, commit))

    # -- scanning ----------------------------------------------------------------------------

    def _scan(self, model: line.Model | None, exclude_paths: set[str],
              by_the_call: Any) -> dict[str, tuple[Entry | None, int]]:
        """Every path whose work-tree file differs from the line: {path: (entry, ctime)}. With
        no model yet, what the person had (all of it but what ``by_the_call``) starts the line
        as a follow op, and only the call's part is returned."""
        repo = self.repo
        known_at = None
        if model is not None and model.index_at and self.index.exists():
            try:
                known_at = repo.commit(model.index_at).tree
            except NotFound:
                known_at = None
        _break_stale(self.index.with_name("index.lock"), repo)
        if known_at is None:
            line.own_folder(repo.gitdir)
            known_at = privateindex.rebuild(repo, self.index)
        if model is None:  # no line to compare with yet: the person's index is the start
            self.tree = known_at
        candidates = set(privateindex.changed(repo, self.index))
        candidates |= {c.path for c in repo.diff_trees(known_at, self.tree)}
        self.scanned |= candidates
        ours = {p for p in candidates if p not in self.busy and p not in exclude_paths}
        filtered = privateindex.filtered(repo, ours)
        skipped: list[str] = []
        found: dict[str, tuple[Entry | None, int]] = {}
        for rel in sorted(ours - filtered):
            if self.excluded.match(rel):
                continue
            seen = self._read(rel, skipped)
            if seen is not None and seen[0] != repo.entry_at(self.tree, rel):
                found[rel] = seen
        self._skipped(skipped)
        if model is None:
            theirs = {p: e for p, (e, ctime) in found.items() if not by_the_call(e, ctime)}
            start = repo.update_tree(known_at, theirs)
            self.tree = repo.commit(self.parent).tree
            if start != self.tree or self.here.tip is None:
                self._follow(start, None)
            found = {p: seen for p, seen in found.items() if p not in theirs}
        return found

    def _read(self, rel: str, skipped: list[str]) -> tuple[Entry | None, int] | None:
        stats: dict[str, os.stat_result] = {}
        try:
            got = self.files.read(rel, limit=self.options.max_file_bytes, stats=stats)
        except (FileRefused, PathRefused) as e:
            st = stats.get(rel)
            skipped.append(f"{rel} ({st.st_size:,} bytes)" if st is not None
                           and st.st_size > self.options.max_file_bytes else f"{rel} ({e})")
            return None
        except OSError:
            return None
        if got is None:
            return None, _gone_ns(self.repo.root, rel)
        st = stats.get(rel)
        return Entry(got[1], self.repo.write_blob(got[0])), st.st_ctime_ns if st else 0

    def _skipped(self, skipped: list[str]) -> None:
        if skipped:
            self.outcome.notes.append("Not recorded (over the size cap, or not a plain file): "
                                      + "; ".join(skipped[:20])
                                      + (f" and {len(skipped) - 20} more" if len(skipped) > 20
                                         else "") + ".")

    # -- a file tool -------------------------------------------------------------------------

    def _named(self, call: Call) -> list[str]:
        mine: list[str] = []
        for given in call.paths or ():
            rel = relative(self.repo.root, self.event.cwd, given)
            if rel is None:
                self.outcome.notes.append(f"{given} is outside this checkout (or a path gitspace "
                                          "does not record); it was not recorded.")
            elif self.excluded.match(rel):
                self.outcome.notes.append(f"{rel} is excluded from recording "
                                          "(gitspace exclude); it was not recorded.")
            else:
                mine.append(rel)
        return mine

    def _file_call(self, call: Call, mine: list[str], announced: state.Running | None) -> None:
        repo = self.repo
        outside: dict[str, Entry | None] = {}
        if announced is not None:
            for rel, (sha, mode) in announced.before.items():
                if rel not in mine or rel in self.touched:
                    continue
                pre = Entry(mode, sha) if sha else None
                if (pre is None or repo.has_object(pre.sha)) and pre != repo.entry_at(self.tree,
                                                                                     rel):
                    outside[rel] = pre
        if outside and announced is not None:
            self._external(outside, " ".join(f"Outside changes found before {announced.tool} "
                                             f"{announced.use_id or ''}".split()) + ".")
        changes: dict[str, Entry | None] = {}
        skipped: list[str] = []
        for rel in mine:
            tracked = repo.entry_at(self.tree, rel) is not None
            read_before = announced is not None and (announced.before.get(rel) or [None])[0]
            if self.files.stat(rel) is not None and not read_before and not privateindex.readable(
                    repo.root, repo.gitdir, repo.commondir, rel, tracked):
                continue  # ignored, or a filter's (Git LFS): never read (the before hook asked
                #           git already when it could read the file then: no second process)
            seen = self._read(rel, skipped)
            if seen is not None and seen[0] != repo.entry_at(self.tree, rel):
                changes[rel] = seen[0]
        self._skipped(skipped)
        if changes:
            self._call_op(call, changes, "")

    # -- commits -----------------------------------------------------------------------------

    def person(self) -> tuple[Any, str]:
        from ..core import person as people  # (only when the person's own op is made)

        if self._person is None:
            who = people.person(self.repo, self.options.author)
            self._person = (who, people.token(who.name))
        return self._person

    def _external(self, changes: dict[str, Entry | None], note: str) -> None:
        person, agent = self.person()
        op, subject_line, body = external_edit(list(changes), note, agent, self.session)
        self._commit(op, changes, subject_line, body, person)

    def _call_op(self, call: Call, changes: dict[str, Entry | None], note: str) -> None:
        event = self.event
        who = Identity(call.tool, tool_use_id=token(call.use_id), agent=event.agent,
                       session=self.session, source="harness")
        op = who.op(recorded_args(self.repo, event.cwd, call, changes),
                    paths=tuple(sorted(changes)), path_count=len(changes))
        body = [self._where()]
        if call.error or event.kind == "failed":
            body.append(f"The call failed ({call.error or 'no reason given'}); these are the "
                        "changes it left.")
        if note:
            body.append(note)
        self._commit(op, changes, subject(call, changes), "\n".join(body), who.author)

    def _commit(self, op: ledger.Op, changes: dict[str, Entry | None], subject_line: str,
                body: str, ident: Any) -> None:
        tree = self.repo.update_tree(self.tree, changes)
        message = opchain.message(self.repo, self.parent, op, subject_line, body)
        self.parent = self.repo.write_commit(tree, [self.parent], message, ident, line.COMMITTER)
        self.tree = tree
        self.touched |= set(changes)
        self.outcome.ops.append(op.op_id)

    def _where(self) -> str:
        event = self.event
        known = state.turn(self.gitdir, event.agent, event.session)
        turn = f", turn {known.number} (prompt {known.prompt_id})" if known and known.prompt_id \
            else f", turn {known.number}" if known else ""
        where = f" on branch {self.here.branch}" if self.here.branch else " (HEAD detached)"
        return (f"{title(event.agent)} session {event.session or '(none given)'}{turn}, in your "
                f"own checkout{where}.")

    def _outside_note(self) -> str:
        event = self.event
        if self.missed:
            return f"Changes an earlier hook call could not record ({self.missed})."
        if event.kind == "scan":
            return "Outside changes found when recording was turned on again."
        if self.act is not None:
            return f"Your changes found before {event.kind}."
        if event.kind in ("prompt", "stop"):
            number = state.turn(self.gitdir, event.agent, event.session)
            when = "began" if event.kind == "prompt" else "ended"
            return (f"Outside changes found when turn{' ' + str(number.number) if number else ''}"
                    f" of {title(event.agent)} session {event.session} {when}.")
        call = event.call
        what = f"{call.tool} {call.use_id or ''}".strip() if call else "this call"
        return f"Outside changes found before {what}."

    def _overlap_note(self) -> str:
        overlap = [r for r in self.others if r.shell]
        if not overlap:
            return ""
        return ("Other commands ran at the same time (" + ", ".join(
            f"{r.tool} {r.use_id or ''}".strip() for r in overlap)
            + "); what they changed while this one ran is recorded here too.")

    # -- turns -------------------------------------------------------------------------------

    def _turn(self, event: Event) -> None:
        if event.kind == "prompt":
            state.turn_at(self.gitdir, event, self._marks)

    def _marks(self) -> int:
        return len(turn_marks(self.repo, self.event.agent, self.event.session or ""))

    def _mark_turn(self) -> None:
        event = self.event
        known = state.turn_at(self.gitdir, event, self._marks)
        name = free_turn_name(event.agent, event.session, known.number if known else 1,
                              lambda name: self.repo.read_ref(line.TURNS + name) is not None)
        tip = self.repo.read_ref(self.here.ref) or self.here.head
        line.move(self.writer, [(line.TURNS + name, None, tip)])
        self.outcome.checkpoint = name

    # -- publishing --------------------------------------------------------------------------

    # -- what undo and rewind use (inplace_undo) --------------------------------------------

    def record_external(self, changes: dict[str, Entry | None], note: str) -> None:
        self._external(changes, note)

    def record(self, op: ledger.Op, changes: dict[str, Entry | None], subject_line: str,
               body: str, ident: Any) -> None:
        self._commit(op, changes, subject_line, body, ident)

    def write_files(self, writes: dict[str, Any], before: dict[str, Any]) -> None:
        """Have ``_publish`` write these work-tree files with the line's move (undo, rewind)."""
        self.writes, self.before = writes, before

    def _publish(self, model: line.Model | None, scanned: bool) -> None:
        repo, here = self.repo, self.here
        new = self.parent
        if new != (here.tip or here.head):  # (a lock a killed hook left: the writer's recovery)
            if self.writes:
                line.move_with_files(self.writer, here.ref, here.tip, new, self.writes,
                                     self.before)
            else:
                line.move(self.writer, [(here.ref, here.tip, new)])
        index_at = model.index_at if model is not None else None
        if scanned and (index_at is None or self.event.kind in ("prompt", "stop", "scan")
                        or len(self.scanned | self.touched) > SYNC_AT):
            entries = {p: repo.entry_at(self.tree, p) for p in self.scanned | self.touched}
            privateindex.set_entries(repo, self.index, entries)
            # (set_entries clears the flag: git must still never filter a Git LFS file for us)
            lfs = privateindex.filtered(repo, [p for p, e in entries.items() if e is not None])
            privateindex.skip_worktree(repo, self.index, lfs)
            index_at = new
        line.save(self.gitdir, line.Model(here.ref, new, here.head, index_at, self.stash))
        repo.maybe_pack()


def turn_marks(repo: GitRepo, agent: str, session: str) -> list[tuple[str, str]]:
    """The turn marks of one session: (name, commit)."""
    prefix = turn_name(agent, session, 0)[: -len("turn-0")]
    return [(ref[len(line.TURNS):], tip) for ref, tip, _ in repo.refs(line.TURNS.rstrip("/"))
            if ref[len(line.TURNS):].startswith(prefix)]


def _op_id(repo: GitRepo, commit: str) -> str:
    op = ledger.parse_message(repo.commit(commit).message)
    assert op is not None
    return op.op_id


def _started_ns(gitdir: Path, key: str) -> int | None:
    """When the before hook announced call ``key``, on the file system's own clock."""
    try:
        return os.lstat(gitdir / state.FOLDER / "inflight" / f"{key}.json").st_mtime_ns
    except OSError:
        return None


def _gone_ns(root: Path, rel: str) -> int:
    """For a file that is gone: the ctime of the nearest folder above it that is still there
    (removing a file changes its folder's ctime)."""
    parts = rel.split("/")[:-1]
    while True:
        try:
            return os.lstat(os.path.join(root, *parts)).st_ctime_ns
        except OSError:
            if not parts:
                return time.time_ns()
            parts.pop()


def _break_stale(lock: Path, repo: GitRepo, wait: float = 0.5) -> None:
    """Under the checkout's own lock a lock file of a ref or index only gitspace writes is a
    crashed gitspace's, unless a live git process may hold it (``git gc`` packs refs)."""
    deadline = time.monotonic() + wait
    while lock.exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    if lock.exists() and not lockfile.git_running_in({repo.root, repo.gitdir, repo.commondir}):
        lock.unlink(missing_ok=True)
