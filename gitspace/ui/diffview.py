"""Diffs as HTML: unified or side by side, highlighted for each file's language.

Invariant: every file of a diff gets a section, and a file whose change cannot be shown as lines
(binary, too long, a submodule, a mode change only) says so in a placeholder instead of vanishing.
"""

from __future__ import annotations

from ..core.diffs import FileDiff, Hunk, Line
from .highlight import lines as highlighted
from .html import Html, esc, join, link, tag
from .layout import anchor_id, placeholder

HIGHLIGHT_LINES = 4_000  # per page: past this, diffs are shown plain (fast, still exact)


def files_table(files: list[FileDiff]) -> Html:
    rows = [tag("tr", tag("td", tag("span", f.status, class_=f"st st-{f.status}")),
                tag("td", link(f"#{anchor_id('f-' + f.path)}", f.path)),
                tag("td", "binary" if f.binary else f"+{f.added} −{f.removed}", class_="nums"))
            for f in files]
    return tag("table", tag("tbody", *rows), class_="files-changed")


def render(files: list[FileDiff], split: bool, *, file_links: tuple[str, str] | None = None) -> Html:
    """Every file's diff. ``file_links``: (old commit, new commit) to link each file's versions."""
    if not files:
        return placeholder("No file changes.", "This commit changes no file (an empty commit, or "
                           "a checkpoint-only step).")
    budget = [HIGHLIGHT_LINES]
    return join(_file(f, split, budget, file_links) for f in files)


def _file(f: FileDiff, split: bool, budget: list[int], file_links: tuple[str, str] | None) -> Html:
    title = [tag("span", f.status, class_=f"st st-{f.status}"), " ", tag("code", f.path)]
    if f.status == "renamed":
        title += [" ← ", tag("code", f.old_path or "")]
    if file_links:
        old, new = file_links
        if f.new_path:
            title += [" ", link(f"/files/{new}/{f.new_path}", "file", class_="rel")]
            title += [" ", link(f"/files/{new}/{f.new_path}?blame=1", "blame", class_="rel")]
        if f.old_path and old:
            title += [" ", link(f"/files/{old}/{f.old_path}", "before", class_="rel")]
    if f.old_mode and f.new_mode and f.old_mode != f.new_mode:
        title += [" ", tag("span", f"mode {f.old_mode} → {f.new_mode}", class_="mode")]
    parts: list[Html] = []
    if f.binary:
        parts.append(placeholder("Binary file:", "its bytes are not shown as text. Open the file "
                                 "view for its size.", kind="note"))
    elif not f.hunks:
        parts.append(placeholder("No line changes:", "only the file's mode or existence changed."))
    else:
        plain = budget[0] <= 0
        budget[0] -= sum(len(h.lines) for h in f.hunks)
        table = _split(f, plain) if split else _unified(f, plain)
        parts.append(tag("table", table, class_="diff split" if split else "diff"))
    if f.note and not f.binary:
        parts.append(placeholder("Cut short:", f.note, kind="warn"))
    return tag("section", tag("h3", *title), *parts, class_="filediff",
               id=anchor_id("f-" + f.path))


def _sides(f: FileDiff, hunk: Hunk, plain: bool) -> tuple[list[Html], list[Html]]:
    """Highlighted text of the hunk's old side (context and removed) and new side."""
    old = "\n".join(line.text for line in hunk.lines if line.kind in " -")
    new = "\n".join(line.text for line in hunk.lines if line.kind in " +")
    if plain:
        return [esc(t) for t in old.split("\n")], [esc(t) for t in new.split("\n")]
    return highlighted(old, f.old_path or f.path), highlighted(new, f.new_path or f.path)


def _unified(f: FileDiff, plain: bool) -> Html:
    rows: list[Html] = []
    for hunk in f.hunks:
        rows.append(tag("tr", tag("td", hunk.header, colspan=3), class_="hunk"))
        old, new = _sides(f, hunk, plain)
        o = n = 0
        for line in hunk.lines:
            if line.kind == "\\":
                rows.append(tag("tr", tag("td", ""), tag("td", ""),
                                tag("td", line.text.strip(), class_="nonl"), class_="meta"))
                continue
            if line.kind == "-":
                code, o = old[o], o + 1
            elif line.kind == "+":
                code, n = new[n], n + 1
            else:
                code, o, n = new[n], o + 1, n + 1
            rows.append(_row(line, code))
    return tag("tbody", *rows)


def _row(line: Line, code: Html) -> Html:
    kind = {"+": "add", "-": "del"}.get(line.kind, "ctx")
    return tag("tr", tag("td", line.old or "", class_="ln"), tag("td", line.new or "", class_="ln"),
               tag("td", tag("span", line.kind if line.kind != " " else " ", class_="mark"),
                   tag("span", code, class_="hl code")),
               class_=kind)


def _split(f: FileDiff, plain: bool) -> Html:
    rows: list[Html] = []
    for hunk in f.hunks:
        rows.append(tag("tr", tag("td", hunk.header, colspan=4), class_="hunk"))
        old, new = _sides(f, hunk, plain)
        o = n = 0
        left: list[tuple[Line, Html]] = []
        right: list[tuple[Line, Html]] = []
        for line in hunk.lines:
            if line.kind == "-":
                left.append((line, old[o]))
                o += 1
            elif line.kind == "+":
                right.append((line, new[n]))
                n += 1
            elif line.kind == " ":
                rows += _paired(left, right)
                left, right = [], []
                rows.append(tag("tr", *_half((line, old[o]), "ctx", "old"),
                                *_half((line, new[n]), "ctx", "new")))
                o, n = o + 1, n + 1
        rows += _paired(left, right)
    return tag("tbody", *rows)


def _paired(left: list[tuple[Line, Html]], right: list[tuple[Line, Html]]) -> list[Html]:
    """A run of removed lines beside the run of added lines that replaced it."""
    return [tag("tr", *_half(left[i] if i < len(left) else None, "del", "old"),
                *_half(right[i] if i < len(right) else None, "add", "new"))
            for i in range(max(len(left), len(right)))]


def _half(item: tuple[Line, Html] | None, kind: str, side: str) -> list[Html]:
    if item is None:
        return [tag("td", "", class_="ln"), tag("td", "", class_="empty")]
    line, code = item
    number = line.old if side == "old" else line.new
    return [tag("td", number or "", class_="ln"), tag("td", tag("span", code, class_="hl code"),
                                                      class_=kind)]
