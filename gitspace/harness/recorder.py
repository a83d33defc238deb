"""One recorder for a harness's calls: the flow every hook event takes, wherever it is recorded.

An event is recorded on a *place*: a workspace gitspace owns (``owned.py``: the ops go on its
branch) or a person's own checkout (``inplace/place.py``: on a line beside their branch, where
nothing of theirs moves). The router (``route.py``) picks the place once; this module is
everything the two have in common, and ``Place`` is the short list of what differs.

Invariants:
- One op per call that changed files: tool and input as the harness gave them (paths made
  relative, long strings elided: ``naming.recorded_args``), agent = the harness, its session and
  tool-use id, the paths it changed. A call that changed nothing records nothing, failed or not;
  a failed call that still changed files is recorded and says it failed.
- Outside edits are never folded into a call's op. A file tool's before hook keeps what its
  files held (``state.Running.before``): a difference from the place's tree is committed first,
  as the person's own op. A shell command's op is what changed while it ran: a path whose
  before-state its hook kept (a workspace keeps them) is split exactly; any other path is the
  command's when it changed at or after the command started (its ctime), else the person's.
  Shell commands that overlap in time cannot be told apart: the first to finish records what all
  of them changed since the earliest began, and says so. A running file tool's files are never
  anyone else's change.
- A turn's end closes every call of its session that is still announced: a call the harness
  sent no after hook for (a failed ``apply_patch``, a command still running when Codex handed
  back) gets its own op with its own call id, saying so, instead of being folded into the
  person's changes.
- An event delivered twice (a harness whose hooks are installed in two settings files) is
  recorded once: a call's after hook, a turn's start and its end each leave a mark, and the same
  event again finds it.
- Everything happens under the place's lock, and the place's refs move by compare-and-swap, so
  concurrent hook calls never lose an op; the turn's mark is made under the same lock, with a
  name chosen there.
- Failure: while a call records, the place is marked as interrupted; a hook killed anywhere
  leaves the mark, and an error leaves it with its reason. The next call scans first and
  records whatever was left pending as the person's change: nothing is lost, nothing counted
  twice. A refused command the person ran (undo, rewind) changed nothing and leaves the marks as
  it found them.
"""

from __future__ import annotations

import os
import time

from ..core.identity import Identity, external_edit
from ..errors import FileRefused, GitspaceError, PathRefused
from ..storage import ledger, opchain
from ..storage.files import Files
from ..storage.objects import Entry
from . import state
from .announce import relative, running
from .events import Call, Event, Options, Recorded
from .naming import free_turn_name, recorded_args, subject, title, token

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from contextlib import AbstractContextManager
    from typing import Any

    from ..storage.gitrepo import GitRepo
    from ..storage.objects import Signature

    Found = dict[str, tuple[Entry | None, int]]  # a scan: path → (what it holds, its ctime, ns)

INTERRUPTED = "a hook call was interrupted before it finished"


class Place:
    """Where a hook event is recorded: what differs between a workspace and a person's checkout.
    Each method says why it differs; everything else is ``Recorder``'s, written once."""

    repo: GitRepo
    # A workspace's before hook keeps what a shell command's dirty files held (one ``git
    # status`` of an index gitspace keeps current); in a person's checkout that status would
    # list all their uncommitted work, so only the moment the command started is kept.
    keeps_shell_before = False
    called = "this checkout"  # how messages name it

    def locked(self, timeout: float) -> AbstractContextManager[str | None]:
        """Hold the place's lock; yields why the last recording was cut short when a hook died
        holding it (None: nothing to catch up on)."""
        raise NotImplementedError

    def start(self, rec: Recorder) -> None:
        """Set ``rec.parent`` and ``rec.tree``: where the event's ops go (a person's checkout
        first catches its line up with what they did since: a follow op)."""
        raise NotImplementedError

    def must_scan(self, rec: Recorder) -> bool:
        """Must this event scan the work tree even for a file tool (a line not started yet)?"""
        return False

    def scan(self, rec: Recorder, exclude: set[str]) -> Found:
        """Every pending path (but ``exclude``) whose file differs from ``rec.tree``."""
        raise NotImplementedError

    def outside(self, rec: Recorder, changes: dict[str, Entry | None], note: str) -> None:
        """Commit what a scan found the person changed, as their own op (a line that starts now
        takes it as its start instead)."""
        if changes:
            rec.record_external(changes, note)

    def unreadable(self, rec: Recorder, rels: list[str], announced: state.Running | None
                   ) -> set[str]:
        """Of a file tool's files, those that are the person's alone (ignored, a filter's),
        never read or recorded."""
        raise NotImplementedError

    def person(self) -> tuple[Signature, str]:
        """Who outside changes are by: their commit author and the agent trailer token."""
        raise NotImplementedError

    def where(self, rec: Recorder) -> str:
        """The end of an op message's first line of context ("" or ", in your own ...")."""
        return ""

    def publish(self, rec: Recorder) -> None:
        """Move the place's ref to ``rec.parent`` (files ``rec.writes`` with it), and what it
        keeps beside (an index, a model)."""
        raise NotImplementedError

    def mark_turn(self, rec: Recorder, name: str, message: str) -> str:
        """Mark the end of a turn at the place's tip (the lock is held); the mark's name."""
        raise NotImplementedError

    def turn_taken(self, name: str) -> bool:
        raise NotImplementedError

    def turn_marks(self, agent: str, session: str) -> int:
        """How many turn marks of this session exist (a session counted afresh continues
        after them)."""
        raise NotImplementedError

    def finish(self, rec: Recorder) -> None:
        """What the place does after the lock is left (a turn's end may start a gc)."""


def record(place: Place, event: Event, options: Options,
           act: Callable[[Recorder], Any] | None = None) -> Recorded:
    """Record ``event`` on ``place`` under its lock. ``act``: what a command the person runs
    there (undo, rewind) does, with the line started; what it returns is the outcome's
    ``taken``."""
    gitdir = place.repo.gitdir
    with place.locked(options.lock_timeout) as killed:
        caught_up = state.missed(gitdir) or killed
        state.mark_missed(gitdir, INTERRUPTED)  # cleared once this event is recorded
        try:
            rec = Recorder(place, event, options, caught_up, act)
            outcome = rec.run()
        except GitspaceError:
            if act is None:
                raise
            if caught_up:  # a refusal changed nothing: as much to catch up on as before
                state.mark_missed(gitdir, caught_up)
            else:
                state.clear_missed(gitdir)
            raise
        except BaseException as e:
            state.mark_missed(gitdir, f"{type(e).__name__}: {e}")
            raise
        state.clear_missed(gitdir)
    place.finish(rec)
    return outcome


class Recorder:
    """One event under the place's lock: catch up, record the call, mark the turn, publish."""

    def __init__(self, place: Place, event: Event, options: Options, missed: str | None,
                 act: Callable[[Recorder], Any] | None = None) -> None:
        self.place, self.repo = place, (repo := place.repo)
        self.event, self.options, self.missed, self.act = event, options, missed, act
        self.gitdir = repo.gitdir
        self.files = Files(repo.root)
        from ..core import exclude

        self.excluded = exclude.load(repo.commondir)
        self.outcome = Recorded()
        self.session = token(event.session)
        self.touched: set[str] = set()
        self.stats: dict[str, os.stat_result] = {}  # stats taken before the files were hashed
        self.writes: dict[str, Any] = {}  # work-tree files the publish writes (undo, rewind)
        self.before: dict[str, Any] = {}  # what those paths hold now
        self.scanned: set[str] = set()  # paths a scan looked at (the private index's to update)
        self.moved = False  # the person ran git since the last call (committed, switched...)
        self.parent = self.tree = ""

    # -- the event ---------------------------------------------------------------------------

    def run(self) -> Recorded:
        event, call = self.event, self.event.call
        key = running(event, call).key if call is not None else None
        if key is not None and state.started_ns(self.gitdir, key) is None \
                and state.seen_before(self.gitdir, event, ""):
            return self._twice()
        self.others = [r for r in state.running(self.gitdir) if r.key != key]
        self.since = {r.key: state.started_ns(self.gitdir, r.key) for r in self.others}
        ended = self._ended() if event.kind == "stop" else []
        self.busy = {rel for r in self.others if not r.shell for rel in r.before}
        started = state.started_ns(self.gitdir, key) if key else None
        announced = state.retire(self.gitdir, key) if key else None
        shell = call is not None and call.paths is None
        mine = self._named(call) if call is not None and call.paths is not None else []
        self.place.start(self)
        if call is None and state.seen_before(self.gitdir, event, self.parent):
            return self._twice()
        self.busy |= self._release()  # (what is still held is no one else's change)
        if event.kind == "prompt":  # counted first: what is found now is named after it
            state.turn_at(self.gitdir, event, self._marks)
        scan = (event.kind in ("prompt", "stop", "scan") or shell or bool(self.missed)
                or self.place.must_scan(self) or bool(event.kind == "rewind"
                                                       and event.extra.get("all")))
        claims = self._claims(call if shell else None, announced, started, ended)
        claimed: dict[str, dict[str, Entry | None]] = {}
        if scan:
            ended_files = {rel for r in ended if not r.shell for rel in r.before}
            claimed = self._catch_up(self.place.scan(self, {*mine, *self.busy, *ended_files}),
                                     claims)
        if self.act is not None:
            self.outcome.taken = self.act(self)
        elif call is not None and not shell:
            self._file_call(call, mine, announced)
        for claim in claims:  # (what went in as the person's before it ran is no change now)
            changes = {rel: entry for rel, entry in claimed.get(claim.key, {}).items()
                       if entry != self.repo.entry_at(self.tree, rel)}
            if changes:
                self._call_op(claim.call, changes, claim.note)
        for r in ended:
            if not r.shell:
                self._ended_file_call(r)
        self.place.publish(self)
        if event.kind == "stop":
            self._mark_turn()
        state.saw(self.gitdir, event, self.parent)
        return self.outcome

    def _twice(self) -> Recorded:
        self.outcome.notes.append(f"This {self.event.kind} event was recorded already (the "
                                  "harness delivered it twice); it was not counted again.")
        return self.outcome

    def _ended(self) -> list[state.Running]:
        """At a turn's end no call of its session runs any more: the ones still announced got
        no after hook. They are retired here, and recorded as their own ops below."""
        event, ended, still = self.event, [], []
        for r in self.others:
            if r.agent == event.agent and r.session == event.session:
                state.retire(self.gitdir, r.key)
                ended.append(r)
            else:
                still.append(r)
        self.others = still
        return ended

    # -- who changed what ----------------------------------------------------------------------

    def _claims(self, call: Call | None, announced: state.Running | None, started: int | None,
                ended: list[state.Running]) -> list[_Claim]:
        """The shell commands that may claim what a scan finds: this call (with every command
        running beside it, whose changes it cannot tell apart from its own), or at a turn's end
        the session's commands that never reported back."""
        running_shells = [r for r in self.others if r.shell]
        if call is not None:
            # (a command whose before hook never came claims whatever is pending: 0)
            since = min([s for s in (started, *(self.since.get(r.key) for r in running_shells))
                         if s is not None], default=0)
            before = dict(announced.before) if announced is not None else {}
            for r in running_shells:
                before = {**r.before, **before}
            note = ("Other commands ran at the same time (" + ", ".join(
                f"{r.tool} {r.use_id or ''}".strip() for r in running_shells)
                + "); what they changed while this one ran is recorded here too."
                ) if running_shells else ""
            return [_Claim("call", call, since, before, note)]
        claims = [_Claim(r.key, _as_call(r), self.since.get(r.key), dict(r.before), _NO_AFTER)
                  for r in ended if r.shell]
        # A command still running (another session's) keeps what changed since it began.
        claims += [_Claim(r.key, None, self.since.get(r.key), dict(r.before), "")
                   for r in running_shells]
        return sorted(claims, key=lambda c: c.since or 0)

    def _catch_up(self, found: Found, claims: list[_Claim]) -> dict[str, dict[str, Entry | None]]:
        """Split what a scan found: a claimed command's changes (by key) are returned; what was
        there before any of them began is committed now as the person's op."""
        outside: dict[str, Entry | None] = {}
        claimed: dict[str, dict[str, Entry | None]] = {}
        for claim in claims:  # what a command's before hook kept: the person's before it ran
            for rel, (sha, mode) in claim.before.items():
                pre = Entry(mode, sha) if sha else None
                if rel in found and rel not in self.busy and rel not in outside and (
                        pre is None or self.repo.has_object(pre.sha)) \
                        and pre != self.repo.entry_at(self.tree, rel):
                    outside[rel] = pre
        for rel, (entry, ctime) in found.items():
            owner = self._claimant(claims, rel, entry, ctime)
            if owner is not None:
                if owner.call is not None:
                    claimed.setdefault(owner.key, {})[rel] = entry
            elif rel not in outside:
                outside[rel] = entry
        self.place.outside(self, outside, self._outside_note())
        return claimed

    def _claimant(self, claims: list[_Claim], rel: str, entry: Entry | None,
                  ctime: int) -> _Claim | None:
        for claim in claims:
            if rel in claim.before:
                return claim  # its before-state went in first; what changed since is its own
            if claim.since is None or (entry is None and self.moved):
                continue  # (a file gone after the person ran git between calls is theirs)
            if ctime >= claim.since:
                return claim
        return None

    # -- a file tool ---------------------------------------------------------------------------

    def _named(self, call: Call) -> list[str]:
        mine: list[str] = []
        for given in call.paths or ():
            rel = relative(self.repo.root, self.event.cwd, given)
            if rel is None:
                self.outcome.notes.append(f"{given} is outside {self.place.called} (or a path "
                                          "gitspace does not record); it was not recorded.")
            elif self.excluded.match(rel):
                self.outcome.notes.append(f"{rel} is excluded from recording "
                                          "(gitspace exclude); it was not recorded.")
            else:
                mine.append(rel)
        return mine

    def _file_call(self, call: Call, mine: list[str], announced: state.Running | None,
                   note: str = "") -> None:
        repo = self.repo
        mine = [rel for rel in mine if rel not in self.place.unreadable(self, mine, announced)]
        outside: dict[str, Entry | None] = {}
        if announced is not None:  # what its files held before it ran, if not what we hold
            for rel, (sha, mode) in announced.before.items():
                if rel not in mine or rel in self.touched or rel in self.busy:
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
            seen = self.read(rel, skipped)
            if seen is not None and seen[0] != repo.entry_at(self.tree, rel):
                changes[rel] = seen[0]
        self._skipped(skipped)
        if changes:
            self._call_op(call, changes, note)

    def _ended_file_call(self, r: state.Running) -> None:
        """A file tool of the ended turn that never reported back: what its files hold now is its
        change (the person's before it ran went in first)."""
        call = _as_call(r)
        self._file_call(call, [rel for rel in r.before if not self.excluded.match(rel)], r,
                        _NO_AFTER)

    def read(self, rel: str, skipped: list[str]) -> tuple[Entry | None, int] | None:
        """What work-tree path ``rel`` holds as an entry (its blob written) and its ctime; None
        when it cannot be read (over the cap, not a plain file: noted in ``skipped``)."""
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
            return None, gone_ns(self.repo.root, rel)
        st = stats.get(rel)
        if st is not None:
            self.stats[rel] = st
        return Entry(got[1], self.repo.write_blob(got[0])), st.st_ctime_ns if st else 0

    def _skipped(self, skipped: list[str]) -> None:
        if skipped:
            self.outcome.notes.append("Not recorded (over the size cap, or not a plain file): "
                                      + "; ".join(skipped[:20])
                                      + (f" and {len(skipped) - 20} more" if len(skipped) > 20
                                         else "") + ".")

    # -- commits -----------------------------------------------------------------------------

    def _external(self, changes: dict[str, Entry | None], note: str) -> None:
        person, agent = self.place.person()
        op, subject_line, body = external_edit(list(changes), note, agent, self.session)
        self.record(op, changes, subject_line, body, person)

    def record_external(self, changes: dict[str, Entry | None], note: str) -> None:
        """Commit ``changes`` as the person's own op (what undo and rewind find in their way)."""
        self._external(changes, note)

    def _call_op(self, call: Call | None, changes: dict[str, Entry | None], note: str,
                 held: state.Held | None = None) -> None:
        assert call is not None
        event = self.event
        if held is None and self._holds(call):
            self._hold(call, changes, note)
            return
        agent, session = (held.agent, token(held.session)) if held else (event.agent,
                                                                          self.session)
        who = Identity(call.tool, tool_use_id=token(call.use_id), agent=agent, session=session,
                       source="harness")
        op = who.op(recorded_args(self.repo, event.cwd, call, changes),
                    paths=tuple(sorted(changes)), path_count=len(changes))
        body = [self._where(held)]
        if call.error or (event.kind == "failed" and call is event.call):
            body.append(f"The call failed ({call.error or 'no reason given'}); these are the "
                        "changes it left.")
        if note:
            body.append(note)
        self.record(op, changes, subject(call, changes), "\n".join(body), who.author)

    def record(self, op: ledger.Op, changes: dict[str, Entry | None], subject_line: str,
               body: str, ident: Signature) -> None:
        """Write the commit of ``op`` (its blobs written already) on ``self.parent``; the
        place's ref moves to it when the event is published."""
        from ..core.writer import COMMITTER

        tree = self.repo.update_tree(self.tree, changes)
        message = opchain.message(self.repo, self.parent, op, subject_line, body)
        self.parent = self.repo.write_commit(tree, [self.parent], message, ident, COMMITTER)
        self.tree = tree
        self.touched |= set(changes)
        self.outcome.ops.append(op.op_id)

    def write_files(self, writes: dict[str, Any], before: dict[str, Any]) -> None:
        """Have the publish write these work-tree files with the ref's move (undo, rewind)."""
        self.writes, self.before = writes, before

    def person(self) -> tuple[Signature, str]:
        return self.place.person()

    def _where(self, held: state.Held | None = None) -> str:
        agent, session = (held.agent, held.session) if held else (self.event.agent,
                                                                  self.event.session)
        known = state.turn(self.gitdir, agent, session)
        turn = f", turn {known.number} (prompt {known.prompt_id})" if known and known.prompt_id \
            else f", turn {known.number}" if known else ""
        return (f"{title(agent)} session {session or '(none given)'}{turn}"
                f"{self.place.where(self)}.")

    # -- ops held until the harness names the call --------------------------------------------

    def _holds(self, call: Call) -> bool:
        """Does this call's op wait for its id (a harness that names it only afterwards)?"""
        from .adapters import ADAPTERS, adapter

        event = self.event
        return (call is event.call and not call.use_id and event.kind in ("after", "failed")
                and event.agent in ADAPTERS and adapter(event.agent).SPEC.late_ids)

    def _hold(self, call: Call, changes: dict[str, Entry | None], note: str) -> None:
        event = self.event
        error = call.error or ("no reason given" if event.kind == "failed" else None)
        key = state.call_key(event.agent, event.session, None, call.tool,
                             {"args": call.args, "at": time.time_ns()})
        state.hold(self.gitdir, state.Held(
            key, event.agent, event.session, call.tool, call.args,
            list(call.paths) if call.paths is not None else None,
            {rel: [e.sha, e.mode] if e is not None else [None, 0] for rel, e in changes.items()},
            error, note, event.transcript, time.time()))

    def _release(self) -> set[str]:
        """Write the held ops whose id their harness has named since (and, at any event of
        their own session, every one of it: with its id when named, else without); the paths
        the ops still held change."""
        from .adapters import ADAPTERS, adapter

        event, still = self.event, set()
        for h in state.held(self.gitdir):
            mine = h.agent == event.agent and h.session == event.session
            taken = state.ids_taken(self.gitdir, h.agent, h.session)
            use_id = adapter(h.agent).late_id(h.transcript, h.session, h.tool, h.args, taken) \
                if h.agent in ADAPTERS and adapter(h.agent).SPEC.late_ids else None
            if use_id is None and not mine and time.time() - h.when < state.HOLD_MAX:
                still |= set(h.changes)
                continue
            state.release(self.gitdir, h.key)
            if use_id is not None:
                state.took_id(self.gitdir, h.agent, h.session, use_id)
            changes = {rel: Entry(mode, sha) if sha else None
                       for rel, (sha, mode) in h.changes.items()}
            changes = {rel: e for rel, e in changes.items()
                       if (e is None or self.repo.has_object(e.sha))
                       and e != self.repo.entry_at(self.tree, rel)}
            if changes:
                paths = tuple(h.paths) if h.paths is not None else None
                self._call_op(Call(h.tool, h.args, paths, use_id, h.error), changes, h.note, h)
        return still

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

    # -- turns -------------------------------------------------------------------------------

    def _marks(self) -> int:
        return self.place.turn_marks(self.event.agent, self.event.session or "")

    def _mark_turn(self) -> None:
        event = self.event
        known = state.turn_at(self.gitdir, event, self._marks)
        number = known.number if known else 1
        name = free_turn_name(event.agent, event.session, number, self.place.turn_taken)
        transcript = (f" Transcript (not committed): {event.transcript}." if event.transcript
                      and not self.options.commit_transcript else "")
        prompt = f" (prompt {known.prompt_id})" if known and known.prompt_id else ""
        message = (f"{title(event.agent)} session {event.session or '(none given)'}, turn "
                   f"{number}{prompt} ended.{transcript}")
        self.outcome.checkpoint = self.place.mark_turn(self, name, message)


_NO_AFTER = ("The harness sent no after hook for this call (it failed, or was still running when "
             "the turn ended); these are the changes found at the turn's end.")


class _Claim:
    """A shell command that may claim what changed: since when (ns), its kept before-states."""

    __slots__ = ("before", "call", "key", "note", "since")

    def __init__(self, key: str, call: Call | None, since: int | None,
                 before: dict[str, Any], note: str) -> None:
        self.key, self.call, self.since, self.before, self.note = key, call, since, before, note


def _as_call(r: state.Running) -> Call:
    """The call an announcement stands for (its input is what the before hook kept)."""
    return Call(r.tool, dict(r.args or {}), None if r.shell else tuple(r.before), r.use_id)


def gone_ns(root: Any, rel: str) -> int:
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
