"""The op detail page: subject, the facts that name it, the diff, the recorded result, the args
and the trailers, in that order: at 1400×900 the diff starts on the first screen.

Each thing is shown once: a long argument (a created file's text, which the diff shows) and the
raw trailer block are folded away (``<details>``), open on a click. An elided argument
(``{"$blob": ..., "bytes": N}``) is shown from the blob the commit holds. A commit without
trailers, or with a malformed trailer block, is still shown: the placeholder says what is wrong,
and the diff is there as for any commit.
"""

from __future__ import annotations

import json
import re
from typing import Any

from ..core import diffs, lookup, timeline
from ..core.timeline import LogEntry
from ..storage import ids, ledger
from ..tools.builtins import restoring
from .context import Context
from .diffview import files_table
from .diffview import render as render_diff
from .html import Html, file_url, join, link, tag, url
from .layout import anchor_id, badge, page, placeholder, session_name, when

BLOB_SHOW = 256 * 1024


def render(ctx: Context, ref: str, params: dict[str, str]) -> Html:
    sha = lookup.resolve(ctx.repo, ref).commit
    e = timeline.entry(ctx.repo, sha)
    split = params.get("view") == "split"
    parent = e.parents[0] if e.parents else None
    files = diffs.between(ctx.repo, parent, sha)
    title = e.subject or "(no subject)"
    toggle = join([
        link(url(f"/op/{sha}"), "unified", class_="on" if not split else None),
        link(url(f"/op/{sha}", view="split"), "side by side", class_="on" if split else None)])
    body = join([
        tag("h1", badge(e.source), " ", title),
        _facts(ctx, e),
        tag("h2", f"Diff ({len(files)} file{'s' if len(files) != 1 else ''})", " ",
            tag("span", toggle, class_="toggle"), id="diff"),
        files_table(files) if len(files) > 1 else Html(""),
        render_diff(files, split, file_links=(parent or "", sha)),
        _result(e),
        _args(ctx, e),
        _trailers(e),
    ])
    return page(title, body, **ctx.shell())  # type: ignore[arg-type]


def _facts(ctx: Context, e: LogEntry) -> Html:
    """What names and places the op, one line each, the short op id first (as ``gitspace log``
    shows it) and the agent by the one name every page uses."""
    op = e.op
    rows: list[tuple[str, Html | str]] = []
    if op is not None:
        rows.append(("op", join([tag("code", e.short, class_="op-short"), " ",
                                 tag("code", op.op_id, class_="muted")])))
    rows.append(("agent", e.agent))
    rows.append(("time", when(e.time)))
    if e.checkpoints:
        rows.append(("checkpoints", join([tag("span", f"⚑ {n}", class_="cp")
                                          for n in e.checkpoints], " ")))
    if op is not None:
        if op.session:
            target = f"/session/{op.session}" + (f"#{anchor_id(op.tool_use_id)}"
                                                 if op.tool_use_id else "")
            rows.append(("session", join([link(target, f"{session_name(op.session)} (the "
                                                       "conversation)", class_="to-session"),
                                          " ", tag("code", op.session, class_="muted")])))
        if e.failed is not None:
            rows.append(("failed", join([badge("failed"), " ", e.failed,
                                         " (the changes it left are recorded)"])))
        rows += _relations(ctx, op)
    parents = join([link(f"/op/{p}", ids.commit(p), class_="sha") for p in e.parents], ", ")
    rows.append(("commit", join([tag("code", e.commit), " · parent " if e.parents else "",
                                 parents, " · ", link(file_url(e.commit), "the tree at this op"),
                                 " · ", link(url("/compare", a=e.parents[0] if e.parents else "",
                                                 b=e.commit), "compare")])))
    return tag("table", tag("tbody", *[tag("tr", tag("th", k), tag("td", v)) for k, v in rows]),
               class_="facts")


def _relations(ctx: Context, op: ledger.Op) -> list[tuple[str, Html | str]]:
    rows: list[tuple[str, Html | str]] = []
    if op.tool in restoring():
        name = str(op.args.get(restoring()[op.tool], ""))
        target = ctx.checkpoints().get(name)
        rows.append(("restored", link(f"/op/{target}", f"checkpoint {name}", class_="rel restore")
                     if target else f"checkpoint {name} (the tag no longer exists)"))
    if op.undo_of:
        rows.append(("reverts", join([link(f"/op/{u}", ledger.short_id(u), class_="rel undo")
                                      for u in op.undo_of], ", ")))
    if op.redo_of:
        rows.append(("re-applies", link(f"/op/{op.redo_of}", ledger.short_id(op.redo_of),
                                        class_="rel redo")))
    return rows


def _trailers(e: LogEntry) -> Html:
    block = _last_paragraph(e.message)
    if e.op is None and e.problem is None:
        return placeholder("Not an op.", "This commit carries no gitspace trailers: a plain git "
                           "commit (made by a person or another tool), shown as git has it.")
    rows = []
    for line in block.splitlines():
        key, sep, value = line.partition(": ")
        rows.append(tag("tr", tag("th", key if sep else "?"), tag("td", tag("code", value if sep
                                                                          else line))))
    table = tag("table", tag("tbody", *rows), class_="trailers")
    if e.problem:  # what is wrong is the point of the page: shown open
        return join([tag("h2", "Trailers"), placeholder(
            "Malformed trailers:", f"{e.problem} gitspace verify reports this commit.",
            kind="warn"), table])
    return tag("details", tag("summary", tag("h2", "Trailers"), " the commit's last paragraph, "
                              "as git has it"), table, class_="trailers")


def _last_paragraph(message: str) -> str:
    paragraphs = [p for p in re.split(r"\n\s*\n", message.strip("\n")) if p.strip()]
    return paragraphs[-1] if len(paragraphs) > 1 else ""


def _args(ctx: Context, e: LogEntry) -> Html:
    if e.op is None:
        return Html("")
    rows = []
    for key, value in sorted(e.op.args.items()):
        shown = _value(ctx, value)
        if _long(value):  # a file's text, say: the diff above shows it, so it is folded here
            shown = tag("details", tag("summary", _size(value)), shown)
        rows.append(tag("tr", tag("th", key), tag("td", shown)))
    if not rows:
        return join([tag("h2", "Args"), tag("p", "No arguments.", class_="muted")])
    return join([tag("h2", "Args"), tag("table", tag("tbody", *rows), class_="args")])


FOLD_AT = 300  # characters (or lines: 5) from which an argument is folded


def _long(value: Any) -> bool:
    if isinstance(value, dict) and set(value) == {"$blob", "bytes"}:
        return True
    return isinstance(value, str) and (len(value) > FOLD_AT or value.count("\n") >= 5)


def _size(value: Any) -> str:
    size = value["bytes"] if isinstance(value, dict) else len(value)
    unit = "bytes" if isinstance(value, dict) else "characters"
    return f"{size:,} {unit}, folded: the diff above shows what they changed"


def _value(ctx: Context, value: Any) -> Html:
    if isinstance(value, dict) and set(value) == {"$blob", "bytes"}:
        return _blob(ctx, str(value["$blob"]), value["bytes"])
    if isinstance(value, str):
        return tag("pre", value, class_="argtext")
    return tag("pre", json.dumps(value, indent=2, ensure_ascii=False), class_="argtext")


def _blob(ctx: Context, sha: str, size: object) -> Html:
    note = tag("p", f"Elided in the trailer ({size} bytes); shown from blob ", tag("code", sha[:12]),
               " in this commit.", class_="muted")
    if not re.fullmatch(r"[0-9a-f]{40,64}", sha):
        return placeholder("Unreadable argument:", "the elided blob id is malformed.", kind="warn")
    proc = ctx.repo.run_git("--no-optional-locks", "cat-file", "blob", sha)
    if proc.returncode != 0:
        return placeholder("Missing blob:", f"{sha} is not in this repository "
                           "(gitspace verify reports it).", kind="warn")
    data = proc.stdout
    if b"\0" in data[:8000]:
        return join([note, placeholder("Binary content:", f"{len(data):,} bytes, not shown.")])
    text = data[:BLOB_SHOW].decode("utf-8", "replace")
    more = (tag("p", f"… {len(data) - BLOB_SHOW:,} more bytes not shown.", class_="muted")
            if len(data) > BLOB_SHOW else "")
    return join([note, tag("pre", text, class_="argtext"), more])


def _result(e: LogEntry) -> Html:
    if e.op is None:
        return Html("")
    text = ledger.result_of(e.message)
    if text is None:
        return join([tag("h2", "Result"), tag("p", "No result recorded (outside changes and "
                                                   "transcripts record none).", class_="muted")])
    return join([tag("h2", "Result"), tag("pre", text, class_="result")])
