"""The page shell every view shares, and the small pieces views repeat (times, op badges, links,
placeholders, pagination).

Invariant: pages load only this server's own assets (``/static/...``): no CDN, no font service,
no inline script or style, which the Content-Security-Policy in ``app`` enforces.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from ..core.timeline import LogEntry
from ..storage import ids
from ..storage.ledger import Op, args_summary
from .html import Html, join, link, tag, url

NAV = (("/", "Timeline"), ("/graph", "Graph"), ("/sessions", "Sessions"), ("/files", "Files"),
       ("/compare", "Compare"))


def page(title: str, body: Html, *, root: Path, branch: str | None, active: str = "",
         live: str | None = None, state: str | None = None) -> Html:
    """A whole HTML document. ``live``: the URL of a fragment that replaces ``#live`` whenever a
    ref moves (see static/live.js); ``state``: the refs' state token the page was drawn at."""
    nav = join(link(href, label, class_="on" if href == active else None) for href, label in NAV)
    head = tag("head", Html('<meta charset="utf-8">'),
               Html('<meta name="viewport" content="width=device-width, initial-scale=1">'),
               tag("title", f"{title} · gitspace"),
               Html('<link rel="stylesheet" href="/static/style.css">'),
               Html('<link rel="stylesheet" href="/static/code.css">'),
               Html('<script src="/static/live.js" defer></script>'))
    where = tag("span", tag("span", str(root), title="workspace"),
                tag("span", f"on {branch}", class_="branch") if branch
                else tag("span", "detached HEAD"),
                tag("span", "", id="live-dot", title="live updates"), class_="where")
    header = tag("header", link("/", "gitspace", class_="brand"), tag("nav", nav), where)
    main = tag("main", tag("div", body, id="live", data_live=live, data_state=state) if live
               else body)
    return Html("<!doctype html>\n" + tag("html", head, tag("body", header, main), lang="en"))


def when(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def op_link(entry: LogEntry, label: str | None = None) -> Html:
    """A link to ``entry``'s op page, named as every page and the CLI name it (``short_name``)."""
    return link(f"/op/{entry.commit}", label or entry.short, class_="sha")


def short_name(commit: str, op: Op | None) -> str:
    """What names a commit on every page: an op's short form, else the commit's (``ids``, as
    ``gitspace log`` shows them)."""
    return ids.op(op.op_id) if op is not None else ids.commit(commit)


def session_name(session: str) -> str:
    """A session id as the pages show it: its short form (``ids``; every command takes it)."""
    return ids.session(session)


# Icons drawn as SVG paths of our own (a 16-unit square): an emoji needs a font many machines
# lack, and shows as a box there.
_ICONS = {
    "tree": "M1 3.5h5l1.5 1.5H15v8.5H1z",  # a folder
    "blob": "M3 1h7l3 3v11H3zM10 1v3h3",  # a page with a folded corner
    "link": "M6 10l4-4M4.5 8.5l-1 1a2.5 2.5 0 0 0 3.5 3.5l1-1M11.5 7.5l1-1a2.5 2.5 0 0 0-3.5-3.5l-1 1",
    "commit": "M2 2h12v12H2zM5 8h6",  # a box: a submodule, another repository
}
_ICON_NAMES = {"tree": "folder", "blob": "file", "link": "symbolic link", "commit": "submodule"}


def icon(kind: str) -> Html:
    """The icon of a folder entry's ``kind`` (tree, blob, link, commit), as inline SVG."""
    kind = kind if kind in _ICONS else "blob"
    return tag("svg", tag("title", _ICON_NAMES[kind]), tag("path", d=_ICONS[kind]),
               viewBox="0 0 16 16", width=16, height=16, class_=f"icon i-{kind}", role="img",
               aria_label=_ICON_NAMES[kind])


def badge(kind: str, text: str | None = None) -> Html:
    return tag("span", text or kind, class_=f"badge b-{kind}")


def args_line(op: Op) -> str:
    return args_summary(op.args, 90)


def placeholder(title: str, text: str, *, kind: str = "note") -> Html:
    """A clear statement of what could not be shown, and why (never a blank or a crash)."""
    return tag("div", tag("strong", title), " ", text, class_=f"placeholder p-{kind}", role="note")


def pager(base: str, params: dict[str, str], offset: int, limit: int, total: int) -> Html:
    if total <= limit:
        return Html("")
    last = max(total - 1, 0) // limit * limit
    parts = []
    for label, at, enabled in (("« newest", 0, offset > 0),
                               ("‹ newer", max(offset - limit, 0), offset > 0),
                               ("older ›", offset + limit, offset + limit < total),
                               ("oldest »", last, offset < last)):
        parts.append(link(url(base, **params, offset=at or None), label) if enabled
                     else tag("span", label, class_="off"))
    shown = f"{offset + 1:,}–{min(offset + limit, total):,} of {total:,}"
    return tag("div", *parts[:2], tag("span", shown, class_="range"), *parts[2:], class_="pager")


def error_page(status: int, message: str, hint: str | None, **shell: object) -> Html:
    body = join([tag("h1", "Nothing to show" if status < 500 else "Something went wrong"),
                 placeholder(message, hint or "", kind="error")])
    return page("Error", body, **shell)  # type: ignore[arg-type]


def anchor_id(text: str) -> str:
    """An element id that is safe in a URL fragment."""
    return "".join(c if c.isalnum() or c in "_-" else "-" for c in text)[:200]

