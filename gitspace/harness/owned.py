"""Recording a harness's calls in a workspace gitspace owns: the ops go straight onto its branch.

What differs from a person's own checkout (``inplace/place.py``), and why:
- the ops go on the checked-out branch, and its index follows them: both are gitspace's, so
  one ``Change`` moves branch, index and any file written (a transcript) together;
- a scan is ``git status`` against that index (``snapshot.pending_changes``), which every op
  keeps current, so it lists only what changed since the last one;
- outside changes are by the person as the workspace names them (``Workspace.external_identity``);
- a turn ends at a checkpoint, an annotated tag every clone and push carries
  (``<agent>-<session>-turn-<n>``);
- a file the call names that git ignores and the branch does not hold is the person's (an
  ``.env`` the agent edited), never recorded; a file the call made where nothing was is its own;
- at a turn's end the session's transcript is committed when the person asked for it
  (``--commit-transcript``): only the file the harness names for this very session, bounded.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..core import checkpoints, owner, userfiles
from ..core.identity import author_of
from ..core.snapshot import pending_changes
from ..core.transaction import entry_of
from ..core.workspace import Workspace
from ..core.writer import Change, RefMove
from ..errors import GitspaceError
from ..storage import bounded
from ..storage.objects import Signature
from . import state
from .naming import TURN, plain_name, title, turn_name
from .recorder import Place, Recorder, gone_ns

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .recorder import Found


class Owned(Place):
    """A workspace's branch as the place of a harness's ops."""

    keeps_shell_before = True
    called = "the workspace"

    def __init__(self, ws: Workspace) -> None:
        self.ws, self.repo = ws, ws.repo

    @contextmanager
    def locked(self, timeout: float) -> Iterator[str | None]:
        with self.ws.writer.locked(timeout):
            yield None  # (a hook killed holding it left the missed mark: recorder.record)

    def start(self, rec: Recorder) -> None:
        self.branch = self.ws.branch()
        rec.parent = self.tip = self.ws.tip()
        rec.tree = self.repo.commit(self.tip).tree

    def scan(self, rec: Recorder, exclude: set[str]) -> Found:
        found, skipped = pending_changes(self.ws, write=True)
        changes: Found = {}
        for rel, (entry, st) in found.items():
            if rel in exclude or rel in rec.touched or entry == self.repo.entry_at(rec.tree, rel):
                continue
            if st is not None:
                rec.stats[rel] = st
            changes[rel] = (entry, st.st_ctime_ns if st is not None
                            else gone_ns(self.repo.root, rel))
        if skipped:
            rec.outcome.notes.append("Not recorded: " + "; ".join(skipped) + ".")
        return changes

    def unreadable(self, rec: Recorder, rels: list[str], announced: state.Running | None
                   ) -> set[str]:
        """Asking git costs a process, so it is asked only about paths the branch does not hold
        that held something before the call (or may have)."""
        before = announced.before if announced is not None else {}
        untracked = [rel for rel in rels if self.repo.entry_at(rec.tree, rel) is None
                     and (rel not in before or before[rel][0] is not None)]
        ignored = userfiles.ignored(self.repo, untracked) if untracked else set()
        for rel in sorted(ignored):
            rec.outcome.notes.append(f"{rel} is ignored by .gitignore: a file of yours, not "
                                     "recorded.")
        return ignored

    def person(self) -> tuple[Signature, str]:
        return self.ws.external_identity, self.ws.external_author

    def publish(self, rec: Recorder) -> None:
        if rec.event.kind == "stop" and rec.options.commit_transcript:
            self._transcript(rec)
        if rec.parent == self.tip:
            return
        before: dict[str, Any] = dict.fromkeys(rec.touched)
        known = {rel: st for rel, st in rec.stats.items() if rel not in rec.writes}
        self.ws.writer.apply(Change("gitspace: harness", author_of(rec.event.agent),
                                    [RefMove(f"refs/heads/{self.branch}", self.tip, rec.parent)],
                                    at=rec.parent, files=rec.writes, before=before, known=known))
        # The new tip sits on an owned one by first parent: the next before hook's cheap
        # ``known_owned`` then holds, and it takes the fast path (no walk, no git process).
        owner.remember(self.repo)
        self.repo.maybe_pack()

    def mark_turn(self, rec: Recorder, name: str, message: str) -> str:
        return checkpoints.write(self.ws, self.ws.identity("checkpoint"), name, message).name

    def turn_taken(self, name: str) -> bool:
        return self.repo.read_ref(checkpoints.PREFIX + name) is not None

    def turn_marks(self, agent: str, session: str) -> int:
        return len(turn_checkpoints(self.ws, agent, session))

    def _transcript(self, rec: Recorder) -> None:
        event, notes = rec.event, rec.outcome.notes
        path = Path(event.transcript) if event.transcript else None
        if path is None or not event.session or path.name != f"{event.session}.jsonl":
            notes.append("No transcript of this session was named, so none was committed.")
            return
        try:  # a harness named it: a fifo or a link to /dev/zero must not hold the lock for ever
            raw = bounded.read_named(path, self.ws.max_file_bytes, what="The transcript")
        except GitspaceError as e:
            notes.append(f"{e.message} It was not committed.")
            return
        if raw is None:
            notes.append(f"The transcript {path} does not exist; it was not committed.")
            return
        try:
            entries = [json.loads(line) for line in raw.decode("utf-8").splitlines()
                       if line.strip()]
        except (ValueError, RecursionError) as e:
            notes.append(f"The transcript {path} could not be read ({e}); it was not committed.")
            return
        rel = f"transcripts/{plain_name(event.agent)}-{plain_name(event.session)}.json"
        data = json.dumps({"harness": event.agent, "session": event.session, "entries": entries},
                          ensure_ascii=False, indent=1).encode() + b"\n"
        if len(data) > self.ws.max_file_bytes:
            notes.append(f"The transcript is {len(data):,} bytes, over the "
                         f"{self.ws.max_file_bytes:,}-byte cap; it was not committed.")
            return
        entry = entry_of(self.repo, (data, 0o100644), write=True)
        if entry == self.repo.entry_at(rec.tree, rel):
            return
        who = self.ws.identity("transcript", source="transcript")
        op = who.op({"path": rel, "session": event.session})
        rec.writes[rel] = (data, 0o100644)
        rec.record(op, {rel: entry}, f"transcript {event.session}",
                   f"The conversation of {title(event.agent)} session {event.session}, "
                   "committed on request (--commit-transcript).", who.author)


def turn_checkpoints(ws: Workspace, agent: str, session: str) -> list[checkpoints.Checkpoint]:
    """The turn checkpoints of one session."""
    prefix = turn_name(agent, session, 0)[: -len("-turn-0")]
    return [c for c in checkpoints.listing(ws)
            if (m := TURN.fullmatch(c.name)) and m.group("prefix") == prefix]
