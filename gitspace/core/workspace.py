"""A workspace: a git work tree that gitspace operates on, and the front door for tool calls.

Invariants: opening a workspace first finishes any change a crash interrupted; every change to
its refs, HEAD, index or files goes through its one writer (``writer.Writer.apply``), and every
mutating tool call through one op transaction (``transaction.run``: one op = one commit, or none
when nothing changed); read-only calls never take the lock and never commit. Ownership
(owner.py) is checked once per write, at its door: ``call`` for tools (the registry checks
before it looks at the arguments), ``snapshot`` for outside changes; ``transact`` trusts its
caller. The library never prints and never reads the environment: identity, limits and the
tools themselves are passed in (``gitspace.open`` wires the built-in tools; this module never
imports them).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Protocol

from ..errors import GitspaceError, NotAWorkspace, from_os_error
from ..storage import ledger
from ..storage.files import Files
from ..storage.gitrepo import GitRepo
from ..storage.objects import FILE_MODE, Signature
from . import person as persons
from . import transaction
from .identity import Identity, author_of
from .result import Result
from .snapshot import pending_changes, snapshot
from .transaction import Outcome, Stage, Txn
from .writer import COMMITTER, Change, RefMove, Writer

DEFAULT_IGNORE = "# gitspace: session transcripts stay local unless you opt in\n.gitspace/\n"


class Tools(Protocol):
    """What a workspace needs of its tool registry (``tools.registry.Registry`` is one)."""

    def run(self, ws: Workspace, who: Identity, args: dict[str, Any]) -> Result: ...


class Workspace:
    """An open workspace. Use as a context manager, or call ``close()``."""

    def __init__(
        self,
        repo: GitRepo,
        *,
        tools: Tools,
        agent: str | None = None,
        session: str | None = None,
        external_author: str | None = None,
        person: str | None = None,
        max_file_bytes: int = 1 << 20,
        pack_threshold: int = 1024,
        check_owner: bool = False,
        durable: bool = False,
        files: Files | None = None,
    ) -> None:
        self.repo = repo
        self.repo.pack_threshold = pack_threshold  # loose objects before a background repack
        self.tools = tools
        self.root = repo.root
        self.agent = ledger.check_token("agent name", agent) if agent else None
        self.session = ledger.check_token("session id", session) if session else None
        # The person at the keyboard (``person``): ``external_author`` is a ledger token a
        # program gives (checked), ``person`` a name someone typed (made a token: "Zoë van Dijk"
        # is Zoe-van-Dijk). Neither: their git user.name, read when first needed.
        self._person: str | None = (
            ledger.check_token("author", external_author) if external_author
            else persons.token(person) if person else None)
        self._named, self._given = person, bool(external_author)  # (as typed, for the author)
        self.max_file_bytes = max_file_bytes
        # Refuse to record ops in a checkout gitspace does not own (see owner.py). ``open`` turns
        # this on; gitspace's own private repositories (replay's scratch) are made owned.
        self._owned: bool | None = None if check_owner else True
        self._checked = check_owner  # ownership was verified, not assumed (see close)
        self.writer = Writer(repo, durable=durable, files=files)
        self.files = self.writer.files  # the work tree's files, read never through a link
        self.writer.recover()

    # -- lifecycle ---------------------------------------------------------------------------

    def close(self) -> None:
        if self._owned and self._checked:
            from . import owner

            owner.remember(self.repo)  # the next process checks only the ops made since
        self.repo.close()

    def __enter__(self) -> Workspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def person(self) -> str:
        """The person at the keyboard, as a ledger token: who outside edits and the ops made with
        no agent are by. As given, else their git ``user.name`` (read when first needed), else
        ``unknown`` (see person.py)."""
        if self._person is None:
            self._person = persons.person_token(self.repo)
        return self._person

    @property
    def external_author(self) -> str:
        """Who outside changes are attributed to: the person."""
        return self.person

    @property
    def external_identity(self) -> Signature:
        """The author of outside changes: the person as their git knows them (``person.person``:
        ``user.name <user.email>`` exactly, or the name typed for them); a token a program gave
        (``external_author``) as ``NAME <NAME@gitspace>``."""
        if self._given:
            return author_of(self.external_author)
        return persons.person(self.repo, self._named)

    @property
    def owned(self) -> bool:
        """Does gitspace own this checkout (an agent's worktree or a workspace)? See owner.py."""
        if self._owned is None:
            from . import owner

            self._owned = owner.owns(self.repo)
        return self._owned

    def require_owned(self, action: str = "record ops") -> None:
        """Refuse, changing nothing, when this checkout is the user's own."""
        if not self.owned:
            from . import owner

            raise owner.refuse(self.repo, action)

    # -- state -------------------------------------------------------------------------------

    def branch(self) -> str:
        branch = self.repo.head_branch()
        if branch is None:
            raise GitspaceError(
                "HEAD is detached, so there is no branch to record ops on.",
                hint="Run 'gitspace switch BRANCH' (or 'git switch BRANCH') first.",
            )
        return branch

    def tip(self) -> str:
        tip = self.repo.read_ref(f"refs/heads/{self.branch()}")
        if tip is None:
            raise GitspaceError(f"Branch {self.branch()} has no commits yet.")
        return tip

    def tree(self) -> str:
        return self.repo.commit(self.tip()).tree

    # -- ops ---------------------------------------------------------------------------------

    def identity(self, tool: str, **fields: Any) -> Identity:
        """The identity of a call of ``tool`` that enters here: this workspace's agent and
        session, unless ``fields`` say otherwise (``op_id``, ``tool_use_id``, ``source``...). A
        call with no agent is the person's: it carries their name (``person``), its author."""
        merged = {"agent": self.agent, "session": self.session, **fields}
        if merged["agent"] is None:
            merged.setdefault("person", self.person)
            merged.setdefault("signature", self.external_identity)
        return Identity(tool, **merged)

    def transact(self, op: ledger.Op, stage: Stage, author: Signature) -> Result:
        """Run ``stage(txn) -> Outcome`` as one op (the caller has checked ownership), authored
        by ``author`` (the call's: ``Identity.author``)."""
        return transaction.run(self, op, stage, author)

    def call(
        self,
        tool: str,
        args: dict[str, Any] | None = None,
        *,
        tool_use_id: str | None = None,
        op_id: str | None = None,
    ) -> Result:
        """Run any tool exactly as an agent would, as this workspace's agent and session.
        Expected failures come back as ok=False."""
        return self.call_as(self.identity(tool, tool_use_id=tool_use_id, op_id=op_id), args)

    def call_as(self, who: Identity, args: dict[str, Any] | None = None) -> Result:
        """Run the call ``who`` names with ``args``: the one door every tool call goes through."""
        try:
            return self.tools.run(self, who, dict(args or {}))
        except GitspaceError as e:
            return Result(ok=False, text=str(e), tool=who.tool, error=e)
        except OSError as e:  # a full disk, a read-only file: the machine's, not a bug
            expected = from_os_error(e, f"The {who.tool} call")
            if expected is None:
                raise
            return Result(ok=False, text=str(expected), tool=who.tool, error=expected)

    def snapshot(self, message: str | None = None) -> Result:
        """Commit every pending outside change (not ignored, under the size cap) as one op
        (``message``: its subject line, instead of "external edit of ...")."""
        self.require_owned("commit outside changes")
        return snapshot(self, message)


def _open_repo(path: Path) -> GitRepo:
    if not path.exists():
        raise NotAWorkspace(f"{path} does not exist.", hint="Create it with 'gitspace init DIR'.")
    return GitRepo.open(path)


def open(path: str | os.PathLike[str] = ".", **options: Any) -> Workspace:  # noqa: A001
    """Open the workspace containing ``path``, finishing any op a crash interrupted.

    Any checkout opens, for reading; ops are refused in one gitspace does not own (owner.py).
    """
    options.setdefault("check_owner", True)
    return Workspace(_open_repo(Path(path)), **options)


def init(path: str | os.PathLike[str], *, branch: str = "main", **options: Any) -> Workspace:
    """Make ``path`` a new workspace; files already there become its first commit."""
    target = Path(path)
    if (target / ".git").exists():
        raise GitspaceError(
            f"{target} is already a git repository, so it cannot become a new workspace.",
            hint=f"To record an agent in it as it is, run 'gitspace -C {target} hooks install "
                 "claude-code' (in place: nothing of yours moves); 'gitspace attach --agent "
                 "NAME' gives an agent a worktree of its own; or pick an empty folder.",
        )
    repo = GitRepo.init(target, branch)
    ws = Workspace(repo, **options)
    try:
        if ws.files.stat(".gitignore") is None:  # a link there is the user's: kept
            ws.files.put(".gitignore", (DEFAULT_IGNORE.encode(), FILE_MODE))
        _first_commit(ws, branch)
    except BaseException:
        ws.close()
        raise
    return ws


def _first_commit(ws: Workspace, branch: str) -> None:
    changes, skipped = pending_changes(ws, initial=True, write=True)
    tree = ws.repo.update_tree(None, {rel: entry for rel, (entry, _) in changes.items()})
    who = ws.identity("init", source="init")
    op = who.op({"files": len(changes)})
    body = "Skipped:\n" + "\n".join(skipped) if skipped else ""
    commit = ws.repo.write_commit(tree, [], ledger.encode_message(op, "init workspace", body),
                                  who.author, COMMITTER)
    known = {rel: st for rel, (_, st) in changes.items() if st is not None}
    with ws.writer.locked():
        ws.writer.apply(Change("gitspace: init", who.author,
                               [RefMove(f"refs/heads/{branch}", None, commit)], at=commit,
                               before=dict.fromkeys(changes), known=known, finish_if_failed=True))


__all__ = ["Identity", "Outcome", "Result", "Tools", "Txn", "Workspace", "init", "open"]
