"""Calls that nest: the ``delegate`` tool runs a child agent and hands its value back.

Invariants:
- A child starts a fresh conversation: its task is the call's ``task`` and nothing of the
  parent's conversation, so the parent's context pays only for the child's value. It works on
  the branch ``delegate/<its session id>``, forked at the parent's current tip, in a linked
  worktree of its own (``<common git dir>/gitspace/delegates/<its session id>``) filled only
  with what the child touches (team/agent_worktrees.py: its start costs the same in a workspace
  of any size), with the
  parent's model (a fresh player, for a scripted policy), the parent's tools, ``return`` (its
  value's schema: the call's ``returns``, by default any JSON value) and ``delegate`` while it is
  less than ``Options.max_depth`` calls deep. Nesting has no special case: a child's child is a
  child. Its session file lies beside its parent's and names the parent's session and call.
- Every op a child makes names the parent's session and tool-use id (ledger format 3).
- The value a child returns is the parent's ``tool_result``, as JSON text. Any other ending (a
  text answer, a limit, a refusal, an API error, a failure to set up or to join) is an
  ``is_error`` result naming the child's session and what became of its ops; the parent's loop
  goes on.
- Joining: a child that returned brings its ops to the parent's branch. When that branch is
  still at the commit the child forked from (the parent waits for its child, so that is the
  usual case) the branch fast-forwards to the child's tip: the child's op commits become the
  parent's history exactly as they were made, so replay re-runs each of them and undo walks
  them like any op. When another writer moved it meanwhile, a merge commit joins them (git's
  own merge of the two tips, not an op, as ``gitspace merge`` makes; replay checks it is one);
  the child's commits are kept as they were rather than re-applied, because re-running a
  child's ops would make new commits (and re-run its scripts) under a value the child computed
  from the old ones. A conflict, or an outside change in the parent's work tree on a path the
  child changed, joins nothing: the error says so and the child's branch is kept. The branch
  and worktree of a joined child are removed; a child that did not return keeps its branch when
  it made ops.
- Crashes: the child's session id is saved in the parent's ``pending`` before anything is made,
  so a resumed parent finds its child rather than starting another. A finished child (any
  status but ``running``) is never run again; a joined one is never joined twice; an unfinished
  one resumes in a worktree made afresh from its branch (its ops are commits, and its session
  knows which ran), so no op is repeated.
"""

from __future__ import annotations

import contextlib
import dataclasses
from pathlib import Path
from typing import Any, Protocol

from ..core import schema
from ..core.identity import author_of
from ..core.result import Result
from ..core.transaction import checkout_changes
from ..core.workspace import Workspace
from ..core.writer import COMMITTER, Change, RefMove
from ..errors import Conflict, GitspaceError, NotFound
from ..storage import ledger, statefiles
from ..storage.gitrepo import GitRepo
from ..storage.objects import Signature
from ..team import agent_worktrees
from .model import Block
from .returns import ANY, Returns, dumps
from .session import UNFINISHED, Session, answer


class Child(Protocol):
    """The child's loop (``loop.Loop``)."""

    def begin(self, session: Session) -> Any: ...

    def proceed(self, session: Session) -> Any: ...


class Parent(Protocol):
    """What a delegate call needs of the loop that makes it (``loop.Loop``, which imports this
    module: so the loop is described here, never imported)."""

    ws: Workspace
    client: Any
    options: Any  # loop.LoopOptions
    sessions: Path

    def spawn(self, ws: Workspace, client: Any, options: Any) -> Child:
        """A loop for a child in ``ws``, its events shown one level deeper than this one's."""
        ...

    def announce(self, step: int, child: Session) -> None:
        """Say that ``child`` starts (a front end's progress line)."""
        ...

DELEGATE = "delegate"  # the tool's exact name
BRANCHES = "delegate/"
FOLDER = "delegates"

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "task": {"type": "string", "minLength": 1, "description": (
            "Everything the sub-agent needs to know: it sees this and the files, not your "
            "conversation.")},
        "returns": {"type": "object", "description": (
            "A JSON Schema of the value it must return (default: any JSON value).")},
        "max_steps": {"type": "integer", "minimum": 1, "description": (
            "Model calls it may make (default: as many as you may).")},
    },
    "required": ["task"],
    "additionalProperties": False,
}
EXAMPLE = {"task": "Count the entries of journal/worklog.jsonl tagged 'incident'.",
           "returns": {"type": "integer"}}
DESCRIPTION = (
    "Hand a self-contained part of your task to a sub-agent with a fresh conversation and wait "
    "for its value, which comes back as this call's result (JSON). It works on a copy of the "
    "files as they are now, and whatever it changes joins your branch when it returns. Use it "
    "for a piece whose details you do not need to keep in your own context, such as "
    "summarising one chunk of a large file.")


def definition() -> dict[str, Any]:
    return {"name": DELEGATE, "description": f"{DESCRIPTION}\nExample: {dumps(EXAMPLE)}",
            "input_schema": SCHEMA}


def call(parent: Parent, s: Session, use: Block) -> Result:
    """Run (or, after a restart, find) the child one ``delegate`` call asks for."""
    args: dict[str, Any] = use["input"]
    try:
        schema.validate(SCHEMA, args, where="delegate", example=EXAMPLE)
        returns = Returns.of(args.get("returns", ANY))
    except GitspaceError as e:
        return Result(False, str(e), DELEGATE, error=e)
    child_id = s.pending.get(use["id"])
    if child_id is None:  # saved before anything is made: a restart finds this child
        child_id = s.pending[use["id"]] = ledger.new_op_id()
        s.save()
    child = None
    try:
        if not ledger.OP_ID.fullmatch(child_id):  # (it names the child's worktree folder)
            raise GitspaceError(f"Session {s.id} names {child_id!r} as this call's child, which "
                                "is no session id gitspace makes; nothing was run.",
                                hint="The session file was changed by hand: start a new run.")
        child = _child(parent, s, use, child_id, returns)
        if child.status in UNFINISHED:
            parent.announce(s.steps, child)
            _run(parent, child, returns, args.get("max_steps"))
        return _answer(parent.ws, child)
    except GitspaceError as e:
        if child is not None and child.status in UNFINISHED:  # it never got going: say so
            child.status = "failed"
            child.save()
            with contextlib.suppress(GitspaceError):
                _clean_up(parent.ws, child, keep_branch=_made_ops(parent.ws, child))
        return Result(False, f"The delegated agent (session {child_id}) could not run: {e}",
                      DELEGATE, error=e)


def _child(parent: Parent, s: Session, use: Block, child_id: str, returns: Returns) -> Session:
    """The child's session: the saved one, or a new one forked at the parent's tip. A saved one
    that is damaged, or is not this call's child on its own branch, is refused, changing
    nothing: its fields name the branch and worktree a child's end removes."""
    try:
        saved = Session.load(parent.sessions, child_id)
    except NotFound:
        saved = None
    if saved is not None:
        if (saved.parent_session, saved.parent_tool_use_id) != (s.id, use["id"]) or (
                saved.branch != BRANCHES + saved.id or saved.base is None):
            raise GitspaceError(
                f"The session file of delegated session {child_id} does not name this call "
                f"({use['id']} of session {s.id}) and its own branch, so it was not acted on.",
                hint=f"Move {saved.path} away to start the call afresh; its ops, if any, are "
                     f"on branch {BRANCHES}{child_id}.")
        return saved
    child = Session.new(parent.sessions, use["input"]["task"], agent=s.agent,
                        client=parent.client.name, scripted=parent.client.scripted,
                        session_id=child_id)
    child.returns = returns.schema
    child.parent_session, child.parent_tool_use_id = s.id, use["id"]
    child.depth = s.depth + 1
    child.branch, child.base = BRANCHES + child_id, parent.ws.tip()
    child.save()
    return child


def _player(client: Any) -> Any:
    """The child's model client: a fresh one when the client keeps per-session state."""
    make = getattr(client, "child", None)
    return make() if callable(make) else client


def _run(parent: Parent, child: Session, returns: Returns, max_steps: int | None) -> None:
    repo = GitRepo.open(_worktree(parent.ws, child))
    files = agent_worktrees.LazyFiles(repo, parent.ws.files, parent.ws.repo.gitdir)
    ws = Workspace(repo, tools=parent.ws.tools, agent=child.agent, files=files,
                   max_file_bytes=parent.ws.max_file_bytes, check_owner=False)
    try:
        options = dataclasses.replace(parent.options, returns=returns,
                                      max_steps=max_steps or parent.options.max_steps)
        player = _player(parent.client)
        loop = parent.spawn(ws, player, options)
        if child.steps:
            loop.proceed(child)
        else:
            child.client_state = player.state()
            loop.begin(child)
    finally:
        ws.close()


def _worktree(ws: Workspace, child: Session) -> Path:
    """The child's worktree, made afresh from its branch (created at the fork when missing):
    whatever a crash left there is not trusted, and nothing there is needed but the branch.
    Only its HEAD is written: the child's files come as it touches them (``LazyFiles``)."""
    assert child.branch is not None and child.base is not None
    repo = ws.repo
    path = statefiles.folder(repo.commondir, "gitspace", FOLDER) / child.id
    _remove_worktree(repo, child.id)  # (first: a link planted there refuses, nothing made)
    ref = f"refs/heads/{child.branch}"
    if repo.read_ref(ref) is None:
        with ws.writer.locked():
            ws.writer.apply(Change(f"gitspace: delegate to session {child.id}",
                                   author_of(child.agent), [RefMove(ref, None, child.base)]))
    agent_worktrees.make(repo, path, child.branch, whole=False)
    return path


def _remove_worktree(repo: GitRepo, name: str) -> None:
    """Remove child ``name``'s worktree and git's record of it (agent_worktrees.discard)."""
    agent_worktrees.discard(repo, f"gitspace/{FOLDER}/{name}")


def _answer(ws: Workspace, child: Session) -> Result:
    """The parent's result for a finished child, joining its ops first when it returned."""
    assert child.branch is not None and child.base is not None
    repo = ws.repo
    ref = f"refs/heads/{child.branch}"
    tip = repo.read_ref(ref)
    if child.status != "returned":
        made = _made_ops(ws, child)
        _clean_up(ws, child, keep_branch=made)
        kept = (f"its ops stay on branch {child.branch}" if made else "it made no op")
        said = answer(child) or "(no answer)"
        return Result(False, (
            f"The delegated agent (session {child.id}) ended without returning a value "
            f"(status {child.status}); {kept}. Its last words: {said}"), DELEGATE)
    if child.joined is None:
        if tip is None:
            return Result(False, f"The delegated agent (session {child.id}) returned, but its "
                                 f"branch {child.branch} is gone, so its ops cannot join.",
                          DELEGATE)
        try:
            child.joined = join(ws, tip, author_of(child.agent), ledger.clean_subject(
                f"join {child.branch}: {child.task}"))
        except Conflict as e:
            _clean_up(ws, child, keep_branch=True)
            return Result(False, (
                f"The delegated agent (session {child.id}) returned {dumps(child.value)}, but "
                f"its ops could not join your branch: {e.message} They stay on branch "
                f"{child.branch}."), DELEGATE, error=e)
        child.save()
    _clean_up(ws, child, keep_branch=False)
    return Result(True, dumps(child.value), DELEGATE)


def _made_ops(ws: Workspace, child: Session) -> bool:
    tip = ws.repo.read_ref(f"refs/heads/{child.branch}")
    return tip is not None and tip != child.base


def _clean_up(ws: Workspace, child: Session, keep_branch: bool) -> None:
    repo = ws.repo
    _remove_worktree(repo, child.id)
    ref = f"refs/heads/{child.branch}"
    tip = repo.read_ref(ref)
    if tip is not None and not keep_branch:
        with ws.writer.locked():
            ws.writer.apply(Change(f"gitspace: session {child.id} done", author_of(child.agent),
                                   [RefMove(ref, tip, None)]))


def join(ws: Workspace, tip: str, author: Signature, message: str) -> str:
    """Bring commit ``tip`` (a child's) into the workspace's branch: a fast-forward when the
    branch is an ancestor of it, else a merge commit by ``author`` (the delegating call's
    agent); the branch's new tip. Conflict, changing
    nothing, when the two conflict or the work tree has unrecorded changes the move would
    overwrite."""
    repo = ws.repo
    with ws.writer.locked():
        branch = ws.branch()
        old = ws.tip()
        if repo.is_ancestor(tip, old):
            return old  # joined already (a restart after the move)
        new = tip
        if not repo.is_ancestor(old, tip):
            merged, conflicts = repo.merge_tree(old, tip)
            if conflicts:
                raise Conflict(f"{branch} changed meanwhile, and merging it conflicts in "
                               f"{', '.join(conflicts[:10])}.")
            new = repo.write_commit(merged, [old, tip], message + "\n", author, COMMITTER)
        writes, before = checkout_changes(
            ws, repo.commit(old).tree, repo.commit(new).tree, f"Joining {message}",
            "Record them (gitspace snapshot), then merge the branch.")
        ws.writer.apply(Change(f"gitspace: {DELEGATE}", author,
                               [RefMove(f"refs/heads/{branch}", old, new)], at=new,
                               files=writes, before=before))
        return new
