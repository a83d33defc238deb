"""Files at any op: a folder listing, a file highlighted with line numbers, and its blame (which
op last changed each line). Also the compare page: the changes between any two checkpoints,
branches, ops or commits.
"""

from __future__ import annotations

from ..core import browse, diffs, lookup, timeline
from .context import Context
from .diffview import files_table
from .diffview import render as render_diff
from .highlight import lines as highlighted
from .html import Html, file_url, join, link, tag, url
from .layout import icon, op_link, page, placeholder, short, short_name, when


def render(ctx: Context, rev: str, path: str, params: dict[str, str]) -> Html:
    sha = lookup.resolve(ctx.repo, rev or "HEAD").commit
    entry = timeline.entry(ctx.repo, sha)
    path = path.strip("/")
    crumbs: list[Html | str] = [link(file_url(sha), "/")]
    walked = ""
    for part in [p for p in path.split("/") if p]:
        walked = f"{walked}/{part}" if walked else part
        crumbs += [" ", link(file_url(sha, walked), part), " /"]
    where = tag("p", "At ", op_link(entry), f" ({entry.subject}, "
                f"{when(entry.time)}): ", *crumbs, class_="crumbs")
    if browse.kind(ctx.repo, sha, path) == "tree":
        body = _folder(sha, browse.listing(ctx.repo, sha, path))
    else:
        body = _file(ctx, sha, path, params.get("blame") == "1")
    return page(path or "Files", join([tag("h1", path or "Files"), where, body]),
                **ctx.shell("/files"))  # type: ignore[arg-type]


def _folder(sha: str, items: list[browse.Item]) -> Html:
    if not items:
        return placeholder("Empty folder.", "Nothing is committed here at this op.")
    rows = []
    for item in items:
        rows.append(tag("tr", tag("td", icon(item.kind)), tag("td", link(file_url(sha, item.path),
                                                              item.name + ("/" if item.kind == "tree"
                                                                           else ""))),
                        tag("td", f"{item.size:,}" if item.size is not None else "", class_="nums")))
    return tag("table", tag("tbody", *rows), class_="tree")


def _file(ctx: Context, sha: str, path: str, blame: bool) -> Html:
    found = browse.read(ctx.repo, sha, path)
    toggle = tag("p", link(file_url(sha, path), "file", class_="on" if not blame else None),
                 " · ", link(file_url(sha, path, blame=1), "blame: which op changed each "
                             "line", class_="on" if blame else None),
                 " · ", link(url("/", path=path), "ops that touched it"), class_="toggle")
    if found.kind == "commit":
        return placeholder("A submodule:", "its files live in another repository.")
    if found.kind == "link":
        target = (found.data or b"").decode("utf-8", "replace")
        return join([toggle, placeholder("A symbolic link", f"to {target!r}; the view does not "
                                         "follow links.")])
    if found.data is None:
        return join([toggle, placeholder("Too large to show:", f"{found.size:,} bytes. Read it "
                                         "with git show or the constraint tools.")])
    if found.binary:
        return join([toggle, placeholder("Binary file:", f"{found.size:,} bytes, not shown as "
                                         "text.", kind="note")])
    if blame:
        return join([toggle, _blame(ctx, sha, path)])
    text = found.text or ""
    rows = [tag("tr", tag("td", n, class_="ln", id=f"L{n}"), tag("td", tag("span", code,
                                                                          class_="hl code")))
            for n, code in enumerate(highlighted(text.removesuffix("\n"), path), start=1)]
    return join([toggle, tag("table", tag("tbody", *rows), class_="source")])


def _blame(ctx: Context, sha: str, path: str) -> Html:
    found = browse.blame(ctx.repo, sha, path)
    code = highlighted("\n".join(line.text for line in found), path)
    rows = []
    previous = None
    for line, shown in zip(found, code, strict=False):
        first = line.commit != previous
        previous = line.commit
        who = ""
        if first:
            label = (f"{short_name(line.commit, line.op)} {line.op.tool} · {line.agent}"
                     if line.op else f"{short_name(line.commit, None)} {short(line.subject, 24)}")
            who = link(f"/op/{line.commit}", label, title=line.subject, class_="blame-op",
                       data_op=line.op.op_id if line.op else "")
        rows.append(tag("tr", tag("td", who, class_="blame" + (" first" if first else "")),
                        tag("td", line.number, class_="ln"),
                        tag("td", tag("span", shown, class_="hl code"))))
    if not rows:
        return placeholder("Empty file.", "There are no lines to blame.")
    return tag("table", tag("tbody", *rows), class_="source blame-table")


def compare(ctx: Context, params: dict[str, str]) -> Html:
    a, b = params.get("a", "").strip(), params.get("b", "").strip()
    split = params.get("view") == "split"
    choices = _choices(ctx)
    form = tag("form", tag("label", "from ", _picker("a", a, choices)),
               tag("label", " to ", _picker("b", b, choices)),
               tag("label", " ", tag("input", type="checkbox", name="view", value="split",
                                     checked=split), " side by side"),
               " ", tag("button", "Compare"), method="get", action="/compare",
               class_="filters")
    parts = [tag("h1", "Compare"), form]
    if a and b:
        old, new = lookup.resolve(ctx.repo, a).commit, lookup.resolve(ctx.repo, b).commit
        found = diffs.between(ctx.repo, old, new)
        parts += [tag("p", f"{len(found)} file(s) differ from ",
                      link(f"/op/{old}", a, class_="sha"), " to ", link(f"/op/{new}", b, class_="sha"),
                      ".", id="compare-summary"),
                  files_table(found), render_diff(found, split, file_links=(old, new))]
    else:
        parts.append(tag("p", "Pick two points: checkpoints, branches or recent ops (the address "
                         "takes any op id, the part of one gitspace log shows, or a commit: "
                         "/compare?a=…&b=…).", class_="muted"))
    return page("Compare", join(parts), **ctx.shell("/compare"))  # type: ignore[arg-type]


RECENT = 50  # ops the compare pickers offer beside every checkpoint and branch


def _choices(ctx: Context) -> list[tuple[str, list[tuple[str, str]]]]:
    """What the compare pickers offer, grouped: (group, [(value, label)])."""
    rev, also = ctx.rev(None), ctx.also(None)
    recent = timeline.query(ctx.repo, rev, timeline.Filters(), limit=RECENT, count=False,
                            first_parent=not also, also=also).entries \
        if rev is not None and ctx.repo.rev_parse(rev) is not None else []
    return [("checkpoints", [(n, f"⚑ {n}") for n in sorted(ctx.checkpoints())]),
            ("branches", [(b, f"⎇ {b}") for b in ctx.branches()]),
            ("recent ops", [(e.short, f"{e.short} {short(e.subject, 60)}") for e in recent])]


def _picker(name: str, current: str, choices: list[tuple[str, list[tuple[str, str]]]]) -> Html:
    """A select of every choice; a point given in the address that is none of them (a commit
    the op page's compare link names) is offered first, selected."""
    offered = {value for _, items in choices for value, _ in items}
    options = [tag("option", "pick a point…", value="", selected=not current)]
    if current and current not in offered:
        options.append(tag("option", current, value=current, selected=True))
    options += [tag("optgroup", *[tag("option", label, value=value, selected=value == current)
                                  for value, label in items], label=group)
                for group, items in choices if items]
    return tag("select", *options, name=name, class_="picker")
