"""Recording another harness's tool calls as ops: one op per call that changed files.

Invariants:
- A call's op is an ordinary op (one commit on the branch, ref/index moved by the same
  ``Writer.apply``), of source ``harness``: tool and input as the harness gave them,
  agent = the harness, its session and tool-use id, and the paths it changed
  (``Gitspace-Paths``). A call that changed nothing records nothing, failed or not; a failed
  call that still changed files (a shell command that wrote, then exited 1) is recorded and says
  it failed.
- Outside edits are never folded into a call's op. A file tool's before hook keeps what its
  files held (``state.Running.before``, blobs written then); at its after hook a difference from
  the branch is committed first as its own ``external`` op. A shell command's before hook
  commits every pending outside change first; its op is then what changed while it ran. Changes
  by people between calls become external ops at the next shell command, turn start or turn end.
- Concurrency: every commit happens under the workspace lock, and the branch moves by
  compare-and-swap, so concurrent hook calls (parallel calls, subagents, several sessions) never
  lose an op. A shell command never claims a file that a running file tool announced; shell
  commands that overlap in time cannot be told apart, so the first to finish records what both
  changed so far and says so in its message.
- Failure: any error leaves the workspace as it was (the op transaction's guarantees) and marks
  the worktree ``missed``; the next hook call commits whatever was left pending as an external op
  before anything else, so nothing is lost and nothing is counted twice.
- The transcript is never read, except with ``commit_transcript`` (the user's opt-in), and then
  only the file Claude Code names for this very session.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ..core import exclude, owner, userfiles
from ..core.identity import author_of
from ..core.transaction import commit_external, entry_of
from ..core.workspace import Workspace
from ..core.writer import COMMITTER, Change, RefMove
from ..errors import FileRefused, GitspaceError, NotAWorkspace, PathRefused
from ..storage import bounded, ledger, opchain
from ..storage.gitrepo import GitRepo
from ..storage.objects import Entry
from . import state
from .calls import TURN, free_turn_name, plain_name, recorded_args, subject, title, token, turn_name
from .events import Call, Event, Options, Recorded, RecordingOnly
from .prepare import announce, check_cwd, relative, running


def handle(event: Event, start: Path, options: Options) -> Recorded:
    """Apply one hook event to the workspace containing ``start``."""
    if event.kind == "ignored":
        return Recorded()
    try:
        repo = GitRepo.locate(start)
    except NotAWorkspace:
        if options.quiet_outside:
            return Recorded()
        raise
    try:
        if not owner.owns(repo):
            if options.quiet_outside:
                return Recorded()
            raise owner.refuse(repo, "record the tool calls of " + title(event.agent))
        check_cwd(repo.root, event)
        if event.kind == "before" and event.call is not None:
            announce(repo.root, repo.gitdir, repo.commondir, event, options)
            return Recorded()
        ws = Workspace(repo, tools=RecordingOnly(), agent=event.agent,
                       session=token(event.session), max_file_bytes=options.max_file_bytes)
        try:
            return Recorder(ws, event, options).run()
        except BaseException as e:
            state.mark_missed(repo.gitdir, f"{type(e).__name__}: {e}")
            raise
    finally:
        repo.close()


def note_failure(start: Path, reason: str) -> None:
    """A hook call failed before it could record anything: have the next one catch up."""
    try:
        repo = GitRepo.locate(start)
    except GitspaceError:
        return
    try:
        if owner.owns(repo):
            state.mark_missed(repo.gitdir, reason)
    finally:
        repo.close()


class Recorder:
    """One full hook call under the workspace lock: external ops first, then the call's op."""

    def __init__(self, ws: Workspace, event: Event, options: Options) -> None:
        self.ws, self.repo, self.event, self.options = ws, ws.repo, event, options
        self.gitdir = ws.repo.gitdir
        self.outcome = Recorded()
        self.touched: dict[str, None] = {}
        self.stats: dict[str, os.stat_result] = {}
        self.writes: dict[str, tuple[bytes, int] | None] = {}

    # -- the call ----------------------------------------------------------------------------

    def run(self) -> Recorded:
        with self.ws.writer.locked(self.options.lock_timeout):
            self.branch = self.ws.branch()
            self.tip = self.parent = self.ws.tip()
            self.tree = self.repo.commit(self.tip).tree
            key = running(self.event, self.event.call).key if self.event.call else None
            self.others = [r for r in state.running(self.gitdir) if r.key != key]
            if self.event.kind == "stop":
                self.others = self._ended(self.others)
            # Files a running file tool is writing: never anyone else's change. (A running
            # shell's files are what they held before it started: outside edits.)
            self.busy = {rel for r in self.others if not r.shell for rel in r.before}
            kind, call = self.event.kind, self.event.call
            if kind in ("prompt", "stop"):
                self._turn_edge()
            elif call is not None and call.paths is None:
                self._after_shell(call, key)
            elif call is not None:
                self._after_file_call(call, key)
            self._publish()
        if kind == "stop":
            self._checkpoint()
        return self.outcome

    def _ended(self, calls: list[state.Running]) -> list[state.Running]:
        """At a turn's end no call of its session runs any more: one still announced lost its
        after hook (a payload refused, a harness killed). Forget it, so that what it changed is
        recorded now, as an outside change, rather than wait for it until it goes stale."""
        event, still = self.event, []
        for r in calls:
            if r.agent == event.agent and r.session == event.session:
                state.retire(self.gitdir, r.key)
            else:
                still.append(r)
        return still

    def _after_shell(self, call: Call, key: str | None) -> None:
        announced = state.retire(self.gitdir, key) if key else None
        for started in [announced, *(r for r in self.others if r.shell)]:
            if started is not None and started.before:
                self._separate(started)
        changes, skipped = self._pending()
        state.clear_missed(self.gitdir)  # everything pending is recorded now (or running)
        if changes:
            overlap = [r for r in self.others if r.shell]
            note = ("Other commands ran at the same time ("
                    + ", ".join(f"{r.tool} {r.use_id or ''}".strip() for r in overlap)
                    + "); what they changed while this one ran is recorded here too."
                    ) if overlap else ""
            self._call_op(call, changes, note)
        self._skipped(skipped)

    def _after_file_call(self, call: Call, key: str | None) -> None:
        assert call.paths is not None
        mine: list[str] = []
        excluded = exclude.load(self.repo.commondir)
        for given in call.paths:
            rel = relative(self.repo.root, self.event.cwd, given)
            if rel is None:
                self.outcome.notes.append(f"{given} is outside the workspace (or a path gitspace "
                                          "does not record); it was not recorded.")
            elif excluded.match(rel):
                self.outcome.notes.append(f"{rel} is excluded from recording (gitspace "
                                          "exclude); it was not recorded.")
            else:
                mine.append(rel)
        announced = state.retire(self.gitdir, key) if key else None
        mine = self._not_ignored(mine, announced)
        self._catch_up(exclude=set(mine))
        if announced is not None:
            self._separate(announced, only=set(mine))
        changes: dict[str, Entry | None] = {}
        for rel in mine:
            try:
                entry = entry_of(self.repo, self.ws.files.read(
                    rel, limit=self.ws.max_file_bytes, stats=self.stats), write=True)
            except (FileRefused, PathRefused) as e:
                self.outcome.notes.append(str(e))
                continue
            if entry != self.repo.entry_at(self.tree, rel):
                changes[rel] = entry
        if changes:
            self._call_op(call, changes, "")

    def _not_ignored(self, rels: list[str], announced: state.Running | None) -> list[str]:
        """``rels`` but the files of the user's among them: an ignored file the call found there
        (an ``.env`` it edited) is never recorded. A file the call made where nothing was is
        its own, as a tool's is. Asking git costs a process, so it is asked only about paths
        the branch does not hold that held something before the call (or may have)."""
        before = announced.before if announced is not None else {}
        untracked = [rel for rel in rels if self.repo.entry_at(self.tree, rel) is None
                     and (rel not in before or before[rel][0] is not None)]
        ignored = userfiles.ignored(self.repo, untracked) if untracked else set()
        for rel in sorted(ignored):
            self.outcome.notes.append(f"{rel} is ignored by .gitignore: a file of yours, not "
                                      "recorded.")
        return [rel for rel in rels if rel not in ignored]

    def _separate(self, announced: state.Running, only: set[str] | None = None) -> None:
        """Commit what the call's files held before it ran, where that differs from the branch,
        as an outside edit of its own (files a running file tool announced are not ours)."""
        outside: dict[str, Entry | None] = {}
        for rel, (sha, mode) in announced.before.items():
            if (only is not None and rel not in only) or rel in self.busy or rel in self.touched:
                continue
            pre = Entry(mode, sha) if sha else None
            if (pre is None or self.repo.has_object(pre.sha)) \
                    and pre != self.repo.entry_at(self.tree, rel):
                outside[rel] = pre
        if outside:
            self._external(outside, " ".join(f"Outside changes found before {announced.tool} "
                                             f"{announced.use_id or ''}".split()) + ".")

    def _turn_edge(self) -> None:
        event = self.event
        known = state.turn_at(self.gitdir, event, self._marks) if event.kind == "prompt" \
            else state.turn(self.gitdir, event.agent, event.session)
        number = f" {known.number}" if known else ""
        when = "began" if event.kind == "prompt" else "ended"
        if not any(r.shell for r in self.others):
            self._outside(set(), f"Outside changes found when turn{number} of "
                                 f"{title(event.agent)} session {event.session} {when}.")
        if event.kind == "stop" and self.options.commit_transcript:
            self._transcript()

    # -- pieces ------------------------------------------------------------------------------

    def _pending(self, exclude: frozenset[str] | set[str] = frozenset(),
                 ) -> tuple[dict[str, Entry | None], list[str]]:
        """Every pending change not announced by a running file tool (nor in ``exclude``)."""
        from ..core.snapshot import pending_changes

        found, skipped = pending_changes(self.ws, write=True)
        changes = {}
        for rel, (entry, st) in found.items():
            if rel in self.busy or rel in exclude or rel in self.touched:
                continue
            if entry != self.repo.entry_at(self.tree, rel):
                changes[rel] = entry
                if st is not None:
                    self.stats[rel] = st
        return changes, skipped

    def _outside(self, exclude: set[str], note: str) -> None:
        """Commit every pending outside change (minus ``exclude``) as one external op."""
        changes, skipped = self._pending(exclude)
        if changes:
            self._external(changes, note)
        self._skipped(skipped)
        state.clear_missed(self.gitdir)

    def _catch_up(self, exclude: set[str]) -> None:
        """After a failed hook call: record what it left pending before this call's op."""
        reason = state.missed(self.gitdir)
        if reason is not None:
            self._outside(exclude, f"Changes an earlier hook call could not record ({reason}).")

    def _skipped(self, skipped: list[str]) -> None:
        if skipped:
            self.outcome.notes.append("Not recorded: " + "; ".join(skipped) + ".")

    def _external(self, changes: dict[str, Entry | None], note: str) -> None:
        commit, tree, op_id = commit_external(self.ws, self.parent, self.tree, changes, note,
                                              session=self.ws.session)
        self._advance(commit, tree, op_id, changes)

    def _call_op(self, call: Call, changes: dict[str, Entry | None], note: str) -> None:
        event = self.event
        who = self.ws.identity(call.tool, tool_use_id=token(call.use_id), source="harness")
        op = who.op(recorded_args(self.repo, event.cwd, call, changes),
                    paths=tuple(sorted(changes)), path_count=len(changes))
        body = [self._where()]
        if call.error or event.kind == "failed":
            body.append(f"The call failed ({call.error or 'no reason given'}); these are the "
                        "changes it left.")
        if note:
            body.append(note)
        self._commit(op, changes, subject(call, changes), "\n".join(body), who.author)

    def _where(self) -> str:
        event = self.event
        known = state.turn(self.gitdir, event.agent, event.session)
        turn = f", turn {known.number} (prompt {known.prompt_id})" if known and known.prompt_id \
            else f", turn {known.number}" if known else ""
        return f"{title(event.agent)} session {event.session or '(none given)'}{turn}."

    def _commit(self, op: ledger.Op, changes: dict[str, Entry | None], subject_line: str,
                body: str, ident: Any) -> None:
        tree = self.repo.update_tree(self.tree, changes)
        message = opchain.message(self.repo, self.parent, op, subject_line, body)
        commit = self.repo.write_commit(tree, [self.parent], message, ident, COMMITTER)
        self._advance(commit, tree, op.op_id, changes)

    def _advance(self, commit: str, tree: str, op_id: str,
                 changes: dict[str, Entry | None]) -> None:
        self.parent, self.tree = commit, tree
        self.touched.update(dict.fromkeys(changes))
        self.outcome.ops.append(op_id)

    def _publish(self) -> None:
        if self.parent == self.tip:
            return
        before: dict[str, tuple[bytes, int] | None] = dict.fromkeys(self.touched)
        known = {rel: st for rel, st in self.stats.items() if rel not in self.writes}
        self.ws.writer.apply(Change("gitspace: harness", author_of(self.ws.agent),
                                    [RefMove(f"refs/heads/{self.branch}", self.tip, self.parent)],
                                    at=self.parent, files=self.writes, before=before, known=known))
        # The new tip sits on an owned one by first parent: the next before hook's cheap
        # ``known_owned`` then holds, and it takes the fast path (no walk, no git process).
        owner.remember(self.repo)
        self.repo.maybe_pack()

    # -- turns -------------------------------------------------------------------------------

    def _transcript(self) -> None:
        event = self.event
        path = Path(event.transcript) if event.transcript else None
        if path is None or not event.session or path.name != f"{event.session}.jsonl":
            self.outcome.notes.append("No transcript of this session was named, so none was "
                                      "committed.")
            return
        try:  # a harness named it: a fifo or a link to /dev/zero must not hold the lock for ever
            raw = bounded.read_named(path, self.ws.max_file_bytes, what="The transcript")
        except GitspaceError as e:
            self.outcome.notes.append(f"{e.message} It was not committed.")
            return
        try:
            entries = [json.loads(line) for line in (raw or b"").decode("utf-8").splitlines()
                       if line.strip()]
        except (ValueError, RecursionError) as e:
            self.outcome.notes.append(f"The transcript {path} could not be read ({e}); it was not "
                                      "committed.")
            return
        if raw is None:
            self.outcome.notes.append(f"The transcript {path} does not exist; it was not "
                                      "committed.")
            return
        rel = f"transcripts/{plain_name(event.agent)}-{plain_name(event.session)}.json"
        data = json.dumps({"harness": event.agent, "session": event.session, "entries": entries},
                          ensure_ascii=False, indent=1).encode() + b"\n"
        if len(data) > self.ws.max_file_bytes:
            self.outcome.notes.append(f"The transcript is {len(data):,} bytes, over the "
                                      f"{self.ws.max_file_bytes:,}-byte cap; it was not committed.")
            return
        entry = entry_of(self.repo, (data, 0o100644), write=True)
        if entry == self.repo.entry_at(self.tree, rel):
            return
        who = self.ws.identity("transcript", source="transcript")
        op = who.op({"path": rel, "session": event.session})
        self.writes[rel] = (data, 0o100644)
        self._commit(op, {rel: entry}, f"transcript {event.session}",
                     f"The conversation of {title(event.agent)} session {event.session}, "
                     "committed on request (--commit-transcript).", who.author)

    def _checkpoint(self) -> None:
        from ..core import checkpoints

        event = self.event
        known = state.turn_at(self.gitdir, event, self._marks)
        number = known.number if known else 1
        name = free_turn_name(event.agent, event.session, number, lambda name: self.repo.read_ref(
            checkpoints.PREFIX + name) is not None)
        transcript = (f" Transcript (not committed): {event.transcript}." if event.transcript
                      and not self.options.commit_transcript else "")
        prompt = f" (prompt {known.prompt_id})" if known and known.prompt_id else ""
        message = (f"{title(event.agent)} session {event.session or '(none given)'}, turn "
                   f"{number}{prompt} ended.{transcript}")
        self.outcome.checkpoint = checkpoints.create(self.ws, self.ws.identity("checkpoint"),
                                                     name, message).name


    def _marks(self) -> int:
        return len(turn_checkpoints(self.ws, self.event.agent, self.event.session or ""))


def turn_checkpoints(ws: Workspace, agent: str, session: str) -> list[Any]:
    """The turn checkpoints of one session (``checkpoints.Checkpoint``s)."""
    from ..core import checkpoints

    prefix = turn_name(agent, session, 0)[: -len("-turn-0")]
    return [c for c in checkpoints.listing(ws)
            if (m := TURN.fullmatch(c.name)) and m.group("prefix") == prefix]
