"""The timeline page: every op of a branch, newest first, a page at a time, with filters.

Each row links what a reader wants next: the op's detail, its agent/session/tool/files as
filters, a restore's checkpoint, an undo's reverted op, a redo's undo.
"""

from __future__ import annotations

from ..agent import calltree
from ..core import timeline
from ..core.timeline import Filters, LogEntry
from ..storage.ledger import Op, short_id
from ..tools.builtins import restoring
from .context import ALL, Context
from .html import Html, join, link, tag, url
from .layout import (
    anchor_id,
    args_line,
    badge,
    op_link,
    page,
    pager,
    placeholder,
    session_name,
    short,
    when,
)

FILTERS = ("agent", "session", "tool", "source", "path", "q")
COLUMNS = ("time", "op", "agent", "tool", "args", "files", "session")


def render(ctx: Context, params: dict[str, str], fragment: bool = False) -> Html:
    branch = params.get("branch") or None
    filters = Filters(agent=params.get("agent") or None, session=params.get("session") or None,
                      tool=params.get("tool") or None, source=params.get("source") or None,
                      path=params.get("path") or None, text=params.get("q") or None)
    offset = _int(params.get("offset"))
    rev = ctx.rev(branch)
    kept = {k: params[k] for k in ("branch", *FILTERS) if params.get(k)}
    live = url("/", **kept, fragment=1) if offset == 0 else None
    shell = ctx.shell("/", live) if not fragment else {}  # the state before reading, not after
    also = ctx.also(branch)
    found = timeline.query(ctx.repo, rev, filters, offset=offset, limit=timeline.PAGE,
                           first_parent=rev is not None and not also, counts=ctx.counts,
                           also=also)
    body = _results(ctx, found, kept)
    if fragment:
        return body
    title = "Timeline" + (f" of {branch}" if branch and branch != ALL else "")
    return page(title, join([tag("h1", title), _form(ctx, params), body]),
                **shell)  # type: ignore[arg-type]


def _results(ctx: Context, found: timeline.Page, kept: dict[str, str]) -> Html:
    noun = "commit" if found.total == 1 else "commits"
    count = tag("p", tag("span", f"{found.total}", id="total", data_total=found.total),
                f" {noun}" + (" match" if len(kept) > ("branch" in kept) else ""), class_="count")
    if not found.entries:
        return join([count, placeholder("No ops here.", "Nothing matches; clear the filters, or "
                                        "wait for an agent to make its first op.")])
    back = ctx.checkpoints()
    depths = calltree.depths([e.op for e in found.entries], calltree.saved_parent(ctx.root))
    rows = [_row(e, back, kept, depths.get(e.op.op_id, 0) if e.op else 0) for e in found.entries]
    head = tag("tr", *[tag("th", h) for h in COLUMNS])
    table = tag("table", tag("thead", head), tag("tbody", *rows), class_="timeline")
    nav = pager("/", kept, found.offset, found.limit, found.total)
    return join([count, nav, table, nav])


def _row(e: LogEntry, checkpoints: dict[str, str], kept: dict[str, str], depth: int = 0) -> Html:
    def filter_link(name: str, value: str, text: str | None = None) -> Html:
        return link(url("/", **{**kept, name: value}), text or value, class_="filter",
                    title=f"only {name} {value}")

    op = e.op
    source = e.source
    if op is None:
        what = join([badge(source, "commit"), " ", tag("span", short(e.subject, 80), class_="subj")])
        agent = tag("span", e.agent, class_="who")
        args = (placeholder("Malformed op:", f"{e.problem} (gitspace verify reports it)",
                            kind="warn") if e.problem
                else placeholder("Not an op:", "no gitspace trailers (a plain git commit)."))
    else:
        what = join([badge(source), " ", filter_link("tool", op.tool)])
        if e.failed is not None:
            what = join([what, " ", tag("span", "failed", class_="badge b-failed",
                                        title=f"the call failed: {e.failed}")])
        if depth:  # made by a delegated agent: under the call, one step per level
            what = tag("span", "↳ ", what, class_=f"called depth-{min(depth, 6)}")
        agent = filter_link("agent", e.agent)
        args = join([tag("code", args_line(op)), _relations(op, checkpoints)])
    files = join([filter_link("path", f) for f in e.files[:3]], ", ")
    if len(e.files) > 3:
        files = join([files, tag("span", f" +{len(e.files) - 3}", class_="more")])
    marks = join(tag("span", f"⚑ {name}", class_="cp") for name in e.checkpoints)
    session = (filter_link("session", op.session, session_name(op.session))
               if op is not None and op.session else "")
    return tag("tr",
               tag("td", op_link(e, when(e.time)), class_="time"),
               tag("td", op_link(e), " ", marks, class_="op"),
               tag("td", agent, class_="who"),
               tag("td", what, class_="tool"),
               tag("td", args, class_="args"),
               tag("td", files, class_="files"),
               tag("td", session, class_="session"),
               id=f"c-{e.commit}", class_=f"src-{source}")


def _relations(op: Op, checkpoints: dict[str, str]) -> Html:
    """Links to the ops this one relates to: restore -> checkpoint, undo -> ops, redo -> undo."""
    parts = []
    if op.tool in restoring():
        name = str(op.args.get(restoring()[op.tool], ""))
        target = checkpoints.get(name)
        parts.append(link(f"/op/{target}", f"↩ back to checkpoint {name}", class_="rel restore")
                     if target else tag("span", f"checkpoint {name} no longer exists",
                                        class_="rel gone"))
    for undone in op.undo_of:
        parts.append(link(f"/op/{undone}", f"↶ reverts {short_id(undone)}", class_="rel undo"))
    if op.redo_of:
        parts.append(link(f"/op/{op.redo_of}", f"↷ re-applies {short_id(op.redo_of)}",
                          class_="rel redo"))
    if op.parent_session and op.parent_tool_use_id:
        parts.append(link(f"/session/{op.parent_session}#{anchor_id(op.parent_tool_use_id)}",
                          f"↳ delegated by {session_name(op.parent_session)}", class_="rel call"))
    return join([" ", *parts]) if parts else Html("")


def _form(ctx: Context, params: dict[str, str]) -> Html:
    current = params.get("branch") or ctx.branch() or ""
    options = [tag("option", b, value=b, selected=b == current) for b in ctx.branches()]
    options.append(tag("option", "all branches", value=ALL, selected=current == ALL))
    sources = [tag("option", "any source", value="")] + [
        tag("option", s, value=s, selected=params.get("source") == s) for s in timeline.SOURCES]

    def field(name: str, label: str, size: int = 14) -> Html:
        return tag("label", label, " ", tag("input", name=name, value=params.get(name, ""),
                                             size=size, placeholder=label))

    return tag("form", tag("select", *options, name="branch", title="branch"),
               field("q", "search", 22), field("agent", "agent"), field("session", "session"),
               field("tool", "tool", 10), tag("select", *sources, name="source"),
               field("path", "path"), tag("button", "Filter", type="submit"),
               link("/", "clear", class_="clear"),
               method="get", action="/", class_="filters")


def _int(text: str | None) -> int:
    try:
        return max(int(text or 0), 0)
    except ValueError:
        return 0
