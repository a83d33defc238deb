"""Two runs side by side: a fork (``gitspace run --fork``, or ``gitspace fork`` of a harness's
session) and the run it forked from.

The page shows, from the op the fork started after, each run's ops in two columns (oldest
first), then the files: every file that differs between the two runs' latest points, side by
side. A fork of gitspace's own loop is read from its session file (``forked_from``) and the
ledger, each run's ops being its branch's. A harness's fork is read from the fork's record
(``harness/forkrecords.py``) and the ledger, each run's ops being its session's: in a workspace
they sit on two branches, in a person's own checkout on one line, told apart by session. A
branch that is gone, or a session that is not a fork, shows a placeholder saying so.
"""

from __future__ import annotations

from ..agent import fork as forking
from ..agent import session as sessions
from ..core import diffs, timeline
from ..core.timeline import Filters, LogEntry
from ..errors import GitspaceError
from ..harness import forkrecords
from ..harness.naming import title as harness_title
from ..storage.ledger import short_id
from .context import Context
from .diffview import files_table
from .diffview import render as render_diff
from .html import Html, join, link, tag
from .layout import args_line, badge, op_link, page, placeholder, session_name, when

OPS_SHOWN = 500  # per side


def render(ctx: Context, session_id: str) -> Html:
    title = f"Fork {session_id}"
    record = None if sessions.exists(ctx.root, session_id) else forkrecords.of(ctx.repo.gitdir,
                                                                                session_id)
    if record is not None:
        return _harness(ctx, record)
    try:
        fork = sessions.Session.load(ctx.root, session_id)
    except GitspaceError as e:
        return page(title, placeholder("This session cannot be read:", str(e), kind="error"),
                    **ctx.shell("/sessions"))  # type: ignore[arg-type]
    origin = forking.origin(fork)
    if origin is None:
        return page(title, placeholder("Not a fork:", f"session {fork.id} was not started with "
                                       "'gitspace run --fork'."), **ctx.shell("/sessions"))  # type: ignore[arg-type]
    base = str(origin["commit"])
    sides = [(f"the original: session {session_name(str(origin.get('session')))}",
              origin.get("branch"), origin.get("session")),
             (f"the fork: session {session_name(fork.id)}", fork.branch, fork.id)]
    columns, tips = [], []
    for label, branch, sid in sides:
        tip = ctx.repo.read_ref(f"refs/heads/{branch}") if branch else None
        tips.append(tip)
        columns.append(tag("div", tag("h2", label), _ops(ctx, branch, tip, base, sid),
                           class_="side"))
    parts = [tag("h1", "Two runs from one op"),
             tag("p", "Session ", link(f"/session/{fork.id}", session_name(fork.id)),
                 " forked session ", link(f"/session/{origin.get('session')}",
                                          session_name(str(origin.get("session")))),
                 " right after op ", link(f"/op/{base}", short_id(str(origin.get("op"))),
                                          title=str(origin.get("op")), class_="sha"), ".",
                 class_="muted"),
             tag("div", *columns, class_="side-by-side")]
    if tips[0] and tips[1]:
        found = diffs.between(ctx.repo, tips[0], tips[1])
        parts += [tag("h2", f"Files: {len(found)} differ between the two branches"),
                  files_table(found), render_diff(found, True, file_links=(tips[0], tips[1]))]
    return page(title, join(parts), **ctx.shell("/sessions"))  # type: ignore[arg-type]


def _ops(ctx: Context, branch: str | None, tip: str | None, base: str, sid: object) -> Html:
    if branch is None or tip is None:
        return placeholder("No branch:", f"the branch {branch or '?'} is not here any more.",
                           kind="warn")
    if not ctx.repo.is_ancestor(base, tip):
        return placeholder("Moved:", f"{branch} no longer contains the op the fork started "
                           "after.", kind="warn")
    newest_first = timeline.query(ctx.repo, tip, limit=OPS_SHOWN, count=False).entries
    cut = next((i for i, e in enumerate(newest_first) if e.commit == base), len(newest_first))
    entries = newest_first[:cut]
    rows = [_row(e, sid) for e in reversed(entries)]
    head = tag("p", tag("code", branch), f": {len(entries)} op(s) after the fork point",
               class_="muted")
    if not rows:
        return join([head, placeholder("Nothing yet:", "no op since the fork point.")])
    return join([head, tag("table", tag("tbody", *rows), class_="timeline")])


def _row(e: LogEntry, sid: object) -> Html:
    op = e.op
    if op is None:
        return tag("tr", tag("td", op_link(e, when(e.time))), tag("td", op_link(e)),
                   tag("td", badge("commit")), tag("td", e.subject))
    mine = "" if op.session == sid else " (another session)"
    return tag("tr", tag("td", op_link(e, when(e.time))), tag("td", op_link(e)),
               tag("td", op.tool + mine),
               tag("td", tag("code", args_line(op))))


def _harness(ctx: Context, r: forkrecords.ForkRecord) -> Html:
    """A harness's session and its fork: each column the ops of one session after the point."""
    who = harness_title(r.harness)
    originals = _after(ctx, _of_session(ctx, r.from_session), r.commit)
    forked = _of_session(ctx, r.session)
    columns = []
    for label, sid, entries in ((f"the original: {who} session {r.from_session}",
                                 r.from_session, originals),
                                (f"the fork: {who} session {r.session}", r.session, forked)):
        rows = [_row(e, sid) for e in reversed(entries)]
        head = tag("p", f"{len(entries)} op(s) after the fork point", class_="muted")
        body = tag("table", tag("tbody", *rows), class_="timeline") if rows else placeholder(
            "Nothing yet:", "no op since the fork point.")
        columns.append(tag("div", tag("h2", label), head, body, class_="side"))
    where = (f"on the new branch {r.branch}" if r.branch else
             f"in your own checkout, on {r.line}" + (f" after op {short_id(r.fork_op)}"
                                                     if r.fork_op else ""))
    parts = [tag("h1", "Two runs from one op"),
             tag("p", f"{who} session ", link(f"/session/{r.session}", r.session),
                 " forked session ", link(f"/session/{r.from_session}", r.from_session),
                 " right after op ", link(f"/op/{r.commit}", short_id(r.op), title=r.op,
                                          class_="sha"), f", {where}. Continue it with ",
                 tag("code", r.command), ".", class_="muted"),
             tag("div", *columns, class_="side-by-side")]
    tips = (originals[0].commit if originals else r.commit, forked[0].commit if forked else r.at)
    found = diffs.between(ctx.repo, *tips)
    parts += [tag("h2", f"Files: {len(found)} differ between the two runs' latest ops"),
              files_table(found), render_diff(found, True, file_links=tips)]
    return page(f"Fork {r.session}", join(parts), **ctx.shell("/sessions"))  # type: ignore[arg-type]


def _of_session(ctx: Context, session: str) -> list[LogEntry]:
    """The session's ops on every branch and line, newest first."""
    return timeline.query(ctx.repo, None, Filters(session=session), limit=OPS_SHOWN,
                          first_parent=False, count=False).entries


def _after(ctx: Context, entries: list[LogEntry], base: str) -> list[LogEntry]:
    """Those of ``entries`` that came after commit ``base`` (descend from it)."""
    if not entries or not ctx.repo.is_ancestor(base, entries[0].commit):
        return []
    later = set(ctx.repo.read_git("rev-list", f"{base}..{entries[0].commit}").decode().split())
    return [e for e in entries if e.commit in later]
