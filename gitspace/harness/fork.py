"""``gitspace fork OP``: a harness's session forked at one of its ops, files and conversation.

What a fork makes, for an op a harness's call made (Claude Code's and Codex's: a harness's
``HookSpec.forker`` names the module that writes its forked transcript, ``HookSpec.no_fork`` says
why another one is refused):
- the files as they were right after that op. In a workspace gitspace owns, as ``gitspace run
  --fork`` does for its own loop: a new branch ``fork/<op>`` at the op's commit, checked out in
  one change of the writer (refused, changing nothing, when an outside change is in the way);
  the new session's calls are then recorded on that branch, the original's stays as it was. In a
  person's own checkout, where their HEAD, index and branch never move: one op on the line that
  changes work-tree files only (``inplace/fork.py``), after which the new session's calls are
  recorded, under the new session's id;
- a new session of that harness: its transcript is the original's up to and including that
  call's result, written as a new file beside the original (``storage/foreign.py``: never
  through a link, never over a file, mode 600), with a new session id; the original session and
  its transcript are only read. What continues it is the harness's own resume command.

The transcript is the person's private data: read bounded (``forkcut.READ_LIMIT``) and never
through a link, written only beside the original, never committed, and nothing of it goes into
the fork's record (``forkrecords``) but ids and paths.

Order, so that a refusal anywhere changes nothing: every check first (the op, the session, its
transcript and the call in it, no harness call running here, what the files' part refuses);
then the new transcript is written, then the files change (a failure there removes the new
transcript again); the record last.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from types import ModuleType

from ..core import branches, linerefs, lookup
from ..core.transaction import checkout_changes
from ..core.workspace import Workspace
from ..errors import BadArguments, FileRefused
from ..storage import foreign, ledger
from . import adapters, forkrecords, state, transcripts
from .events import Event, Options
from .forkcut import READ_LIMIT, Cut, Refused
from .inplace import line
from .inplace.fork import Made, busy
from .naming import title


@dataclass(frozen=True)
class Point:
    """Where a fork starts: the op, its commit, and the harness module that forks its session."""

    op: ledger.Op
    commit: str
    forker: ModuleType
    transcript: Path


@dataclass(frozen=True)
class Forked:
    """A fork made: the new session and how to continue it, and where its files are."""

    record: forkrecords.ForkRecord
    files: list[str]  # in place: the files the fork's op wrote (a workspace: its branch's)
    took_back: list[str]  # in place: the ops it took back


def point(ws: Workspace, text: str) -> Point:
    """The fork point ``text`` names (an op id or a part of one), or why there is none."""
    repo = ws.repo
    text = text.strip()
    _not_a_session(repo.gitdir, text)
    found = lookup.find_op(repo, lookup.op_id(repo, text))
    if found is None or found.op is None or found.where != "commit":
        raise BadArguments(f"Op {text} made no commit of its own, so there is no point right "
                           "after it to fork from.", hint="Fork at the op before or after it.")
    op = found.op
    spec = adapters.adapter(op.agent).SPEC if op.agent in adapters.ADAPTERS else None
    if op.source == "harness" and (spec is None or spec.forker is None):
        why = spec.no_fork if spec is not None and spec.no_fork else (
            f"{op.agent} is not a harness gitspace knows how to fork")
        raise Refused(f"gitspace cannot fork {title(str(op.agent))} sessions: {why}.",
                      hint="Bring the files back with 'gitspace rewind "
                           f"{op.op_id}' instead (the conversation stays the harness's).")
    if op.source != "harness" or not op.session or not op.tool_use_id or not op.agent:
        hint = (f"It is gitspace's own agent's: 'gitspace run --fork {op.op_id} TASK' forks it."
                if op.source == "tool" and op.session else
                "Fork an op a harness's call made ('gitspace log' shows who made each).")
        raise BadArguments(f"Op {op.op_id} ({op.tool}) was not made by a call of a harness "
                           "session, so there is no harness conversation to fork.", hint=hint)
    forker = import_module(f".{adapters.adapter(op.agent).SPEC.forker}", __package__)
    forker.check_session(op.session)
    known = transcripts.known(repo.gitdir, op.session)
    if known is None or not known.transcript:
        raise Refused(f"The hooks recorded no transcript of {title(op.agent)} session "
                      f"{op.session} in this checkout, so there is no conversation to copy.",
                      hint="Fork where the session ran, with gitspace's hooks installed.")
    path = Path(known.transcript)
    forker.check_path(path, op.session)
    return Point(op, found.commit, forker, path)


def fork(ws: Workspace, text: str, options: Options, new: str | None = None) -> Forked:
    """Fork the session of the op ``text`` names (see the module docstring); ``new``: the new
    session's id (a fresh UUID when None)."""
    at = point(ws, text)
    busy(state.running(ws.repo.gitdir))
    in_place = not ws.owned
    if in_place and not linerefs.in_place(ws.repo):
        raise Refused(f"{ws.root} is neither a workspace gitspace owns nor a checkout where it "
                      "records in place, so the files cannot be brought back here.",
                      hint="Fork where the session was recorded.")
    new = new or at.forker.new_session()
    what = f"{title(str(at.op.agent))}'s transcript"
    with foreign.Folder(at.transcript.parent, what) as folder:
        data = _read(folder, at.transcript.name, what)
        cut: Cut = at.forker.cut(data, str(at.op.session), str(at.op.tool_use_id), at.op.tool,
                                 new, at.transcript.name)
        forkrecords.ready(ws.repo.gitdir)  # (so that the record can be written at the end)
        written: list[str] = []

        def write() -> None:  # once the files' part has passed its checks
            folder.create(cut.name, cut.data)
            written.append(cut.name)

        try:
            made = _files_in_place(ws, at, new, options, write) if in_place else None
            branch = None if in_place else _files_in_workspace(ws, at, write)
        except BaseException:
            for name in written:
                folder.remove(name)
            raise
    record = forkrecords.ForkRecord(
        harness=str(at.op.agent), session=cut.session, from_session=str(at.op.session),
        op=at.op.op_id, commit=at.commit, tool_use_id=str(at.op.tool_use_id),
        transcript=str(at.transcript.parent / cut.name), cwd=cut.cwd, command=cut.command,
        branch=branch, line=line.where(ws.repo).ref if in_place else None,
        fork_op=made.op if made else None, at=made.tip if made else at.commit)
    forkrecords.save(ws.repo.gitdir, record)
    return Forked(record, made.files if made else [], made.took_back if made else [])


def _not_a_session(gitdir: Path, text: str) -> None:
    sessions = {k.session for k in state.sessions(gitdir)} | {
        r.session for r in forkrecords.listing(gitdir)}
    if text in sessions:
        raise BadArguments(f"{text} names a session, not an op: a fork starts right after one "
                           "op of it.", hint=f"'gitspace log --session {text}' lists its ops; "
                                             "fork at one of them.")


def _read(folder: foreign.Folder, name: str, what: str) -> bytes:
    try:
        data = folder.read(name, READ_LIMIT)
    except FileRefused as e:
        raise Refused(f"{e.message} Nothing was forked.",
                      hint="gitspace forks a transcript that is a regular file of at most "
                           f"{READ_LIMIT >> 20} MiB.") from None
    if data is None:
        raise Refused(f"{what} {folder.path / name} is gone, so there is no conversation to "
                      "fork. Nothing was changed.",
                      hint="Fork a session whose transcript is still there.")
    return data


def _files_in_workspace(ws: Workspace, at: Point, write: Callable[[], None]) -> str:
    name = branches.fork_name(ws, at.op.op_id)
    # What the branch's checkout refuses (an outside change in the way), asked before the
    # transcript is written, and again by the checkout itself, under the lock.
    checkout_changes(ws, ws.repo.commit(ws.tip()).tree, ws.repo.commit(at.commit).tree,
                     f"Forking at op {at.op.op_id}", "Run 'gitspace snapshot' to record them "
                     "first (or move them away), then fork again.")
    write()
    branches.create(ws, ws.identity("fork"), name, at.commit, switch=True)
    return name


def _files_in_place(ws: Workspace, at: Point, new: str, options: Options,
                    write: Callable[[], None]) -> Made:
    from .inplace.fork import act
    from .route import IN_PLACE, record_in

    args = {"op": at.op.op_id, "session": str(at.op.session), "harness": str(at.op.agent),
            "new_session": new}
    event = Event("fork", "gitspace", cwd=str(ws.root))
    made = record_in(IN_PLACE, ws.repo, event, options, act=act(at.commit, args, new, write)).taken
    assert isinstance(made, Made)
    return made
