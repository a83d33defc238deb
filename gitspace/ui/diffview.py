"""Diffs as HTML: unified or side by side, highlighted for each file's language.

Invariant: every file of a diff gets a section, and a file whose change cannot be shown as lines
(binary, too long, a submodule, a mode change only) says so in a placeholder instead of vanishing.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..core.diffs import FileDiff, Hunk, Line
from .highlight import lines as highlighted
from .html import Html, esc, file_url, join, link, tag
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
            title += [" ", link(file_url(new, f.new_path), "file", class_="rel")]
            title += [" ", link(file_url(new, f.new_path, blame=1), "blame", class_="rel")]
        if f.old_path and old:
            title += [" ", link(file_url(old, f.old_path), "before", class_="rel")]
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
        # The columns' widths, given before the first row (a hunk header spanning them all):
        # a fixed table takes them from there, never from that row.
        lines = [tag("col", class_="ln"), tag("col", class_="code")]
        cols = tag("colgroup", *(lines * 2 if split else [tag("col", class_="ln"), *lines]))
        parts.append(tag("table", cols, table, class_="diff split" if split else "diff"))
    if f.note and not f.binary:
        parts.append(placeholder("Cut short:", f.note, kind="warn"))
    return tag("section", tag("h3", *title), *parts, class_="filediff",
               id=anchor_id("f-" + f.path))


def _coded(f: FileDiff, hunk: Hunk, plain: bool) -> Iterator[tuple[Line, Html, Html]]:
    """Each line of the hunk with its highlighted text on the old side and on the new side (the
    sides are highlighted whole, so multi-line strings and comments colour right)."""
    old = "\n".join(line.text for line in hunk.lines if line.kind in " -")
    new = "\n".join(line.text for line in hunk.lines if line.kind in " +")
    if plain:
        olds, news = [esc(t) for t in old.split("\n")], [esc(t) for t in new.split("\n")]
    else:
        olds = highlighted(old, f.old_path or f.path)
        news = highlighted(new, f.new_path or f.path)
    o = n = 0
    for line in hunk.lines:
        left = olds[o] if line.kind in " -" else Html("")
        right = news[n] if line.kind in " +" else Html("")
        o += line.kind in " -"
        n += line.kind in " +"
        yield line, left, right


def _unified(f: FileDiff, plain: bool) -> Html:
    rows: list[Html] = []
    for hunk in f.hunks:
        rows.append(tag("tr", tag("td", hunk.header, colspan=3), class_="hunk"))
        for line, left, right in _coded(f, hunk, plain):
            if line.kind == "\\":
                rows.append(tag("tr", tag("td", ""), tag("td", ""),
                                tag("td", line.text.strip(), class_="nonl"), class_="meta"))
            else:
                rows.append(_row(line, left if line.kind == "-" else right))
    return tag("tbody", *rows)


def _row(line: Line, code: Html) -> Html:
    kind = {"+": "add", "-": "del"}.get(line.kind, "ctx")
    return tag("tr", tag("td", line.old or "", class_="ln"), tag("td", line.new or "", class_="ln"),
               tag("td", tag("span", line.kind, class_="mark"), tag("span", code, class_="hl code")),
               class_=kind)


def _split(f: FileDiff, plain: bool) -> Html:
    rows: list[Html] = []
    for hunk in f.hunks:
        rows.append(tag("tr", tag("td", hunk.header, colspan=4), class_="hunk"))
        removed: list[tuple[Line, Html]] = []
        added: list[tuple[Line, Html]] = []
        for line, left, right in _coded(f, hunk, plain):
            if line.kind == "-":
                removed.append((line, left))
            elif line.kind == "+":
                added.append((line, right))
            elif line.kind == " ":
                rows += _paired(removed, added)
                removed, added = [], []
                rows.append(tag("tr", *_half((line, left), "ctx", "old"),
                                *_half((line, right), "ctx", "new")))
        rows += _paired(removed, added)
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
