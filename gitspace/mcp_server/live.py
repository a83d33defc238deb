"""Live resources: noticing that an op landed, whoever made it, and telling the clients that care.

Invariants:
- Every op lands by moving a ref: the branch (an op, undo, restore, a merge or a pull), HEAD (a
  switch) or a tag (a checkpoint). So polling the few small files that hold those refs notices
  every op, made by any process: this server, another server, the CLI, an agent run, ``watch``.
- The poll is bounded: every POLL seconds, two small reads (HEAD, the branch's loose ref) and
  three stats (packed-refs, the checkpoint tag folder, the workspace's ``constraints/``); no git
  process, no busy loop. Only when one of them changed, or changed within RACY seconds (a file
  system's clock tick can hide a second change), is the workspace read again, in a worker thread.
- A notification goes only to the clients that asked: a connection's ``resources/subscribe``
  (2025 protocol) or a ``subscriptions/listen`` stream (2026, through the SDK's bus); a file
  resource fires when an op changed that file or something under that folder. Ops (and the
  server's warnings) go to a 2025 connection as log messages at or above its
  ``logging/setLevel`` level (info until it sets one). A connection that has gone is forgotten.
"""

from __future__ import annotations

import logging
import os
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from ..core import checkpoints
from ..core.workspace import Workspace
from ..errors import GitspaceError
from ..storage.gitrepo import GitRepo
from ..tools import scripts
from ..tools.registry import all_tools
from . import texts

POLL = 0.25  # seconds between two looks at the refs
RACY = 2.0  # a file changed this recently may change again unseen within one clock tick
LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
DEFAULT_LEVEL = "info"
OPS_SHOWN = 20  # ops of one change logged one by one; the rest are counted
DIFF_CAP = 10_000  # changed paths looked at; past it every file subscription fires
MAX_SUBSCRIPTIONS = 1000  # URIs one connection (or one listen stream) may subscribe to

log = logging.getLogger("gitspace.mcp")


@dataclass(frozen=True)
class State:
    """What the clients can see change: the branch, its tip, the checkpoints, the tool names."""

    branch: str | None
    tip: str | None
    checkpoints: tuple[tuple[str, str], ...]
    tools: tuple[str, ...]
    warnings: tuple[str, ...]  # refused script declarations: the server's standing warnings


@dataclass
class Peer:
    """One 2025-protocol connection: what it subscribed to and the lowest level it hears."""

    connection: Any
    uris: set[str] = field(default_factory=set)
    level: str = DEFAULT_LEVEL


def audible(level: str, threshold: str) -> bool:
    return LEVELS.index(level) >= LEVELS.index(threshold)


def level_named(name: object) -> str:
    if name not in LEVELS:
        raise GitspaceError(f"{name!r} is not a log level.",
                            hint="Use one of " + ", ".join(LEVELS) + ".")
    assert isinstance(name, str)
    return name


class Hub:
    """The peers and listen streams of one server, and the watcher that feeds them."""

    def __init__(self, base: Path, *, in_workspace: Callable[..., Awaitable[Any]]) -> None:
        from mcp.server.subscriptions import InMemorySubscriptionBus

        self.base = base
        self.in_workspace = in_workspace  # runs a function on an open Workspace, one at a time
        self.bus = InMemorySubscriptionBus()
        self.peers: dict[int, Peer] = {}
        self.listened: Counter[str] = Counter()  # URIs open listen streams subscribed to
        self.mine: dict[str, None] = {}  # op ids this server reported itself (newest last)
        self.state: State | None = None
        self.watching = False  # one watcher per server, however many lifespans are open
        repo = GitRepo.open(base)
        try:
            self.gitdir, self.commondir = repo.gitdir, repo.commondir
        finally:
            repo.close()
        self._last: tuple[Any, ...] | None = None

    # -- peers -------------------------------------------------------------------------------

    def peer(self, ctx: Any) -> Peer | None:
        """The 2025-protocol connection ``ctx`` arrived on (None on the 2026 wire: its events go
        through listen streams)."""
        connection = getattr(ctx.session, "_connection", None)  # (the SDK keeps it private)
        if connection is None or not getattr(connection, "has_standalone_channel", False):
            return None
        known = self.peers.get(id(connection))
        if known is None:
            known = self.peers[id(connection)] = Peer(connection)
            connection.exit_stack.callback(self.peers.pop, id(connection), None)
        return known

    def made(self, op_id: str) -> None:
        """This server reported op ``op_id`` itself: the watcher does not log it again."""
        self.mine[op_id] = None
        while len(self.mine) > 1000:
            del self.mine[next(iter(self.mine))]

    def wanted(self) -> set[str]:
        return {u for p in self.peers.values() for u in p.uris} | {u for u, n in
                                                                   self.listened.items() if n}

    # -- watching ----------------------------------------------------------------------------

    def signature(self) -> tuple[Any, ...]:
        """What is polled: the contents of HEAD and the branch's loose ref, and the stats of
        packed-refs, the checkpoint tags' folder and the workspace's constraints folder."""
        head = _read_small(self.gitdir / "HEAD")
        branch_ref = head[5:].strip() if head.startswith(b"ref: ") else b""
        ref = _read_small(self.commondir / os.fsdecode(branch_ref)) if branch_ref.startswith(
            b"refs/heads/") and b".." not in branch_ref else b""
        stats = tuple(_stat(p) for p in (self.commondir / "packed-refs",
                                          self.commondir / checkpoints.PREFIX.rstrip("/"),
                                          self.base / "constraints"))
        return head, ref, stats

    @staticmethod
    def _racy(stats: tuple[Any, ...]) -> bool:
        now = time.time_ns()
        return any(s is not None and now - s[1] < RACY * 1e9 for s in stats)

    async def watch(self) -> None:
        """Poll until cancelled, announcing each change once."""
        import anyio

        while True:
            sig = self.signature()
            if sig != self._last or self._racy(sig[2]):
                scripts_may_differ = (self._last is None or sig[2][2] != self._last[2][2]
                                      or self._racy(sig[2][2:]))
                self._last = sig
                try:
                    await self.refresh(scripts_may_differ)
                except Exception:  # a watcher that dies would silently end every subscription
                    log.exception("the MCP server could not read the workspace's refs")
            await anyio.sleep(POLL)

    async def refresh(self, scripts_may_differ: bool = True) -> None:
        old = self.state
        new = await self.in_workspace(lambda ws: read_state(ws, old, scripts_may_differ))
        self.state = new
        if old is not None and new != old:
            await self.announce(old, new)

    async def announce(self, old: State, new: State) -> None:
        from mcp.server.subscriptions import ResourceUpdated, ToolsListChanged

        uris: set[str] = set()
        if (old.branch, old.tip) != (new.branch, new.tip):
            uris.add(texts.LOG_URI)
            uris |= {u for u in self.wanted() if u.startswith(texts.BRANCH_PREFIX)}
            files = [u for u in self.wanted() if u.startswith(texts.FILE_PREFIX)]
            if files:
                changed = await self.in_workspace(lambda ws: changed_paths(ws, old.tip, new.tip))
                uris |= {u for u in files if touches(changed, unquote(u[len(texts.FILE_PREFIX):]))}
            await self.log_ops(old, new)
        if old.checkpoints != new.checkpoints:
            uris |= {texts.CHECKPOINTS_URI, texts.LOG_URI}  # (the log marks checkpoints)
            uris |= {u for u in self.wanted() if u.startswith(texts.CHECKPOINT_PREFIX)}
        for uri in sorted(uris):
            await self.bus.publish(ResourceUpdated(uri=uri))
            for peer in list(self.peers.values()):
                if uri in peer.uris:
                    await peer.connection.notify("notifications/resources/updated", {"uri": uri})
        if old.tools != new.tools:
            await self.bus.publish(ToolsListChanged())
            for peer in list(self.peers.values()):
                await peer.connection.notify("notifications/tools/list_changed", None)
        for warning in sorted(set(new.warnings) - set(old.warnings)):
            await self.say("warning", warning)

    async def log_ops(self, old: State, new: State) -> None:
        if new.tip is None or not any(audible("info", p.level) for p in self.peers.values()):
            return
        lines = await self.in_workspace(lambda ws: new_ops(ws, old.tip, new.tip, self.mine))
        for line in lines:
            await self.say("info", line)

    async def say(self, level: str, text: str) -> None:
        """A log message to every 2025 connection that hears ``level``."""
        for peer in list(self.peers.values()):
            if audible(level, peer.level):
                await peer.connection.notify("notifications/message", {
                    "level": level, "logger": "gitspace", "data": text})


def read_state(ws: Workspace, old: State | None, scripts_may_differ: bool) -> State:
    if old is not None and not scripts_may_differ:
        tools, warnings = old.tools, old.warnings
    else:
        tools = tuple(all_tools(ws))
        warnings = tuple(str(e) for e in scripts.catalog(ws).errors)
    marks = tuple((c.name, c.commit) for c in checkpoints.listing(ws))
    return State(ws.repo.head_branch(), ws.tip(), marks, tools, warnings)


def changed_paths(ws: Workspace, old: str | None, new: str | None) -> list[str] | None:
    """The files that differ between two commits (None: too many to look at, or unknown)."""
    before = ws.repo.commit(old).tree if old else None
    after = ws.repo.commit(new).tree if new else None
    out = []
    for change in ws.repo.diff_trees(before, after):
        out.append(change.path)
        if len(out) > DIFF_CAP:
            return None
    return out


def touches(changed: list[str] | None, path: str) -> bool:
    """Does a change of ``changed`` alter what ``view`` shows for ``path`` (a file or folder)?"""
    path = path.strip("/")
    if changed is None or path in ("", "."):
        return True
    return any(c == path or c.startswith(path + "/") for c in changed)


def new_ops(ws: Workspace, old: str | None, new: str, mine: dict[str, None]) -> list[str]:
    """One log line for each op between two tips that this server did not report itself."""
    from ..core import timeline

    span = f"{old}..{new}" if old and ws.repo.is_ancestor(old, new) else new
    commits = ws.repo.log(span, OPS_SHOWN + 1)
    entries = [e for e in timeline.entries_of(ws.repo, [c.sha for c in commits[:OPS_SHOWN]])
               if not (e.op and e.op.op_id in mine)]
    branch = ws.repo.head_branch() or "(detached HEAD)"
    lines = [f"op landed on {branch}: {texts.log_line(e)}" for e in reversed(entries)]
    if len(commits) > OPS_SHOWN:
        lines.append(f"... and more ops on {branch}: read {texts.LOG_URI}.")
    if old and span == new:
        lines.insert(0, f"{branch} moved to a tip that does not follow the last one seen (a "
                     "switch, a restore of history, a pull): read the log again.")
    return lines


def _read_small(path: Path) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read(256)
    except OSError:
        return b""


def _stat(path: Path) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns, st.st_size

