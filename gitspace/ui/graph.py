"""The graph page: branches and attempts as an SVG drawn on the server (no script).

One row per commit, newest at the top; each attempt and each branch has a lane. Restores are
curves back to the checkpoint they restored, undo and redo are dashed curves to what they revert,
merges join lanes. Dead ends are crossed out and greyed; the way out (from each branch tip back
to the root, through the checkpoints it restored) is drawn bold.

A long quiet run (more than FOLD_OVER commits one after another on one lane, none a checkpoint,
a branch tip, a dead end or the end of any link but its parent's) is folded to its first two
commits, one row that says what it holds, and its last: so the first screen shows the shape of
the work (the maze's junctions and restores), not thirty summaries in a row. ``?unfold=1`` (the
fold row's link) draws every commit. Each commit is named by its short op id, as the CLI names it.
"""

from __future__ import annotations

import zlib

from ..core import attempts, timeline
from ..tools.builtins import restoring
from .context import ALL, Context
from .html import Html, join, link, tag, url
from .layout import page, placeholder, short, short_name, when

WINDOW = 300
FOLD_OVER = 8  # a quiet run longer than this is folded (FOLD_KEEP commits stay at each end)
FOLD_KEEP = (2, 1)
ROW, LANE, TOP, LEFT = 26, 22, 18, 16
PALETTE = ("#2563eb", "#16a34a", "#d97706", "#9333ea", "#dc2626", "#0891b2", "#db2777", "#65a30d")


def render(ctx: Context, params: dict[str, str], fragment: bool = False) -> Html:
    branch = params.get("branch") or ALL
    rev = ctx.rev(branch)
    kept = {"branch": branch} if branch != ALL else {}
    unfold = params.get("unfold") == "1"
    if unfold:
        kept["unfold"] = "1"
    live = url("/graph", **kept, fragment=1) if not params.get("offset") else None
    shell = ctx.shell("/graph", live) if not fragment else {}  # the state before reading
    offset = int(params["offset"]) if params.get("offset", "").isdigit() else 0
    revs = timeline.every_line() if rev is None else [rev, *ctx.also(params.get("branch"))]
    has_commits = bool(ctx.branches()) if rev is None else ctx.repo.rev_parse(rev) is not None
    rows = timeline.briefs(ctx.repo, ["--date-order", f"--skip={offset}", f"-n{WINDOW + 1}",
                                      *revs, "--"]) if has_commits else []
    older, rows = len(rows) > WINDOW, rows[:WINDOW]
    if not rows:
        body = placeholder("No commits yet.", "The graph appears with the first op.")
    else:
        drawn = attempts.layout(rows, ctx.checkpoints(), ctx.tips(), restoring())
        nav = _nav(kept, offset, older)
        shown, folds = (drawn, {}) if unfold else fold(drawn)
        unfolding = url("/graph", **{**kept, "unfold": "1"})
        marked = ctx.turn_marks()
        body = join([_legend(drawn, marked if ctx.in_place() else None), nav,
                     tag("div", svg(shown, folds, unfolding, marked), class_="graph-wrap"), nav])
    if fragment:
        return body
    options = [tag("option", "all branches", value=ALL, selected=branch == ALL)]
    options += [tag("option", b, value=b, selected=b == branch) for b in ctx.branches()]
    form = tag("form", tag("select", *options, name="branch"), tag("button", "Show"),
               method="get", action="/graph", class_="filters")
    return page("Graph", join([tag("h1", "Graph"), form, body]), **shell)  # type: ignore[arg-type]


def _nav(kept: dict[str, str], offset: int, older: bool) -> Html:
    newer = (link(url("/graph", **kept, offset=max(offset - WINDOW, 0) or None), "‹ newer")
             if offset else tag("span", "‹ newer", class_="off"))
    back = (link(url("/graph", **kept, offset=offset + WINDOW), "older ›") if older
            else tag("span", "older ›", class_="off"))
    shown = tag("span", f"commits {offset + 1:,}–{offset + WINDOW:,}" if older
                else f"from commit {offset + 1:,}", class_="range")
    return tag("div", newer, shown, back, class_="pager")


def _legend(drawn: attempts.Layout, turns: dict[str, list[str]] | None = None) -> Html:
    """The counts of what the graph draws; ``turns`` (in a person's own checkout, where there
    are no checkpoints): the turn marks by commit, counted instead."""
    restores = sum(1 for link_ in drawn.links if link_.kind == "restore")
    dead = sum(1 for n in drawn.nodes if n.dead_end)
    marks = sum(len(n.checkpoints) for n in drawn.nodes)
    undos = sum(1 for link_ in drawn.links if link_.kind in ("undo", "redo"))
    merges = sum(1 for link_ in drawn.links if link_.kind == "merge")
    shown = {n.brief.commit for n in drawn.nodes}
    kind = (f"{sum(len(v) for c, v in turns.items() if c in shown)} turn marks"
            if turns is not None else f"{marks} checkpoints")
    facts = [f"{len(drawn.nodes)} commits", kind, f"{restores} restores",
             f"{dead} dead ends", f"{undos} undo/redo", f"{merges} merges"]
    return tag("p", join([tag("span", f, class_="fact") for f in facts], " · "),
               " — ", tag("span", "bold: the way out", class_="way"), ", ",
               tag("span", "grey: abandoned attempts, ✕ where each ended", class_="dead"),
               class_="legend", id="graph-facts",
               data_checkpoints=marks, data_dead_ends=dead, data_restores=restores)


def _colour(name: str | None) -> str:
    return PALETTE[zlib.crc32((name or "").encode()) % len(PALETTE)]


def _xy(lane: int, row: int) -> tuple[int, int]:
    return LEFT + lane * LANE, TOP + row * ROW


def _quiet(drawn: attempts.Layout) -> set[int]:
    """The rows a fold may hide: nothing marks them, and only parent lines touch them."""
    linked = {row for ln in drawn.links if ln.kind != "parent"
              for row in (ln.source, ln.target) if row is not None}
    parents: dict[int, int] = {}
    for ln in drawn.links:
        if ln.kind == "parent":
            parents[ln.source] = parents.get(ln.source, 0) + 1
    return {n.row for n in drawn.nodes if not (n.checkpoints or n.branches or n.dead_end)
            and n.row not in linked and parents.get(n.row, 0) <= 1}


def fold(drawn: attempts.Layout) -> tuple[attempts.Layout, dict[int, list[attempts.Node]]]:
    """``drawn`` with its long quiet runs folded (see the module docstring): the layout to draw,
    and each fold row with the commits it stands for."""
    quiet, by_row = _quiet(drawn), {n.row: n for n in drawn.nodes}
    runs: list[list[int]] = []
    for n in drawn.nodes:  # rows in order, newest first
        run = runs[-1] if runs else None
        if n.row in quiet and run and run[-1] == n.row - 1 and by_row[run[-1]].lane == n.lane:
            run.append(n.row)
        elif n.row in quiet:
            runs.append([n.row])
    hidden: dict[int, int] = {}  # hidden row -> the first row of its fold
    for run in runs:
        if len(run) > FOLD_OVER:
            middle = run[FOLD_KEEP[0]:len(run) - FOLD_KEEP[1]]
            hidden.update(dict.fromkeys(middle, middle[0]))
    if not hidden:
        return drawn, {}
    new_row: dict[int, int] = {}
    for n in drawn.nodes:
        if n.row not in hidden or hidden[n.row] == n.row:
            new_row[n.row] = len(new_row)
    nodes, folds = [], {}
    for n in drawn.nodes:
        if n.row not in hidden:
            nodes.append(attempts.Node(n.brief, new_row[n.row], n.lane, n.checkpoints,
                                       n.branches, n.dead_end, n.way_out))
        elif hidden[n.row] == n.row:  # the fold's own row, drawn at its first commit's place
            nodes.append(attempts.Node(n.brief, new_row[n.row], n.lane, way_out=n.way_out))
            folds[new_row[n.row]] = [by_row[r] for r in hidden if hidden[r] == n.row]
    at = {old: new_row[hidden.get(old, old)] for old in by_row}
    links = [attempts.Link(ln.kind, at[ln.source], None if ln.target is None else at[ln.target],
                           ln.label) for ln in drawn.links
             if ln.target is None or at[ln.source] != at[ln.target]]
    return attempts.Layout(nodes, links, drawn.lanes), folds


def _fold_label(folded: list[attempts.Node], unfolding: str, x: int, y: int) -> Html:
    """The row a fold leaves: how many commits, by whom, doing what, and the way to see them."""
    names = sorted({n.brief.op.agent if n.brief.op and n.brief.op.agent else n.brief.author
                    for n in folded})
    tools: dict[str, int] = {}
    for n in folded:
        tool = n.brief.op.tool if n.brief.op else "commit"
        tools[tool] = tools.get(tool, 0) + 1
    did = ", ".join(f"{t} ×{k}" for t, k in sorted(tools.items(), key=lambda kv: -kv[1])[:3])
    words = [tag("tspan", f"⋯ {len(folded)} more commits", class_="subj"), " ",
             tag("tspan", f"({did}) · {', '.join(names[:3])}", class_="who"), " ",
             tag("tspan", "show all", class_="br")]
    return link(unfolding, tag("title", "Draw every commit of this run"),
                tag("text", *words, x=x, y=y + 4), class_="label fold")


def svg(drawn: attempts.Layout, folds: dict[int, list[attempts.Node]] | None = None,
        unfolding: str = "/graph?unfold=1", turns: dict[str, list[str]] | None = None) -> Html:
    """The graph; ``turns``: the turn marks by commit, labelled beside their nodes (in place)."""
    folds = folds or {}
    turns = turns or {}
    width = LEFT + drawn.lanes * LANE + 620
    height = TOP + len(drawn.nodes) * ROW + 10
    by_row = {n.row: n for n in drawn.nodes}
    edges, nodes, labels = [], [], []
    for ln in drawn.links:
        edges.append(_edge(ln, by_row, height))
    text_x = LEFT + drawn.lanes * LANE + 12
    for n in drawn.nodes:
        x, y = _xy(n.lane, n.row)
        if n.row in folds:
            nodes.append(tag("path", d=f"M{x} {y - 8}v4M{x} {y - 2}v4M{x} {y + 4}v4",
                             stroke="white", stroke_width=3, class_="fold-gap"))
            labels.append(_fold_label(folds[n.row], unfolding, text_x, y))
            continue
        op = n.brief.op
        agent = op.agent if op is not None and op.agent else n.brief.author
        colour = _colour(agent) if n.way_out else "#cbd5e1"
        shape = tag("circle", cx=x, cy=y, r=6 if n.way_out else 5, fill=colour,
                    stroke="#111827" if n.way_out else "white", stroke_width=2 if n.way_out else 1)
        cross = tag("path", d=f"M{x - 5} {y - 5}L{x + 5} {y + 5}M{x + 5} {y - 5}L{x - 5} {y + 5}",
                    stroke="#b91c1c", stroke_width=2, class_="dead-end") if n.dead_end else ""
        nodes.append(link(f"/op/{n.brief.commit}", shape, cross,
                          tag("title", f"{n.brief.subject}\n{agent} · {when(n.brief.time)}"),
                          class_="node" + (" way-out" if n.way_out else "")
                          + (" is-dead-end" if n.dead_end else ""),
                          data_commit=n.brief.commit))
        words = [tag("tspan", short_name(n.brief.commit, op), class_="sha"), " ",
                 tag("tspan", short(n.brief.subject, 60),
                     class_="subj" + ("" if n.way_out else " off"))]
        words += [" ", tag("tspan", f"· {agent}", class_="who")]
        for name in n.checkpoints:
            words += [" ", tag("tspan", f"⚑ {name}", class_="cp")]
        for name in turns.get(n.brief.commit, []):
            words += [" ", tag("tspan", f"⚑ {name}", class_="cp turn")]
        for b in n.branches:
            words += [" ", tag("tspan", f"⎇ {b}", class_="br")]
        if n.dead_end:
            words += [" ", tag("tspan", "✕ dead end", class_="dead")]
        labels.append(link(f"/op/{n.brief.commit}",
                           tag("text", *words, x=text_x, y=y + 4), class_="label"))
    return tag("svg", tag("g", *edges, class_="edges"), tag("g", *nodes), tag("g", *labels),
               xmlns="http://www.w3.org/2000/svg", width=width, height=height,
               viewBox=f"0 0 {width} {height}", class_="graph", role="img",
               aria_label="commit graph")


def _edge(ln: attempts.Link, by_row: dict[int, attempts.Node], height: int) -> Html:
    src = by_row[ln.source]
    x1, y1 = _xy(src.lane, src.row)
    if ln.target is None:
        if ln.kind not in ("parent", "merge"):
            return Html("")  # what it links to is outside this window; the row's text says it
        return tag("line", x1=x1, y1=y1, x2=x1, y2=height, class_=f"e-{ln.kind} offpage")
    dst = by_row[ln.target]
    x2, y2 = _xy(dst.lane, dst.row)
    if ln.kind in ("parent", "merge"):
        if x1 == x2:
            d = f"M{x1} {y1}L{x2} {y2}"
        else:  # a fork or a merge: leave the lane near the newer commit
            d = f"M{x1} {y1}C{x1} {y1 + ROW * 0.8} {x2} {y1 + ROW * 0.2} {x2} {y1 + ROW}L{x2} {y2}"
        cls = f"e-{ln.kind}" + (" way" if src.way_out and dst.way_out and ln.kind == "parent"
                                else "")
        if ln.kind == "parent" and src.brief.op is not None and src.brief.op.tool in restoring():
            cls = "e-chrono"  # the restore's real parent: history goes on from the dead end
        return tag("path", d=d, class_=cls, fill="none")
    bend = LANE * (1.6 + 0.15 * abs(ln.source - ln.target) ** 0.5)
    side = max(x1, x2) + bend
    d = f"M{x1} {y1}C{side} {y1} {side} {y2} {x2} {y2}"
    title = {"restore": f"restore: back to checkpoint {ln.label}",
             "undo": f"undo: reverts op {ln.label}", "redo": f"redo: re-applies {ln.label}"}
    cls = f"e-{ln.kind}" + (" way" if ln.kind == "restore" and src.way_out else "")
    return tag("path", tag("title", title.get(ln.kind, ln.kind)), d=d, class_=cls, fill="none")
