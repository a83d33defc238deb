"""The sessions list and one session's conversation, each tool call linked to the op it became.

A conversation comes from a saved session (``.gitspace/sessions/<id>.jsonl``, local to the
checkout), from another harness's own transcript whose path its hook recorded here (Claude
Code's JSON lines under the person's home: ``harness/transcripts.py``, read-only and bounded,
never committed), or from a committed transcript (``transcripts/<id>.json`` on the current
branch). Tool
calls and ops are joined by tool-use id, both ways: a call's "op" link opens the op, and the op
page links back to the call's anchor here. A compaction summary is shown where it sits, with the
session's ops whose calls it folded away, so nothing the agent did is hidden by compaction.

Invariant: any file content renders. A damaged file, an unknown block type or a message of the
wrong shape shows a placeholder saying so; the rest of the conversation still shows.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..agent import calltree, transcript
from ..agent import fork as forking
from ..agent import session as sessions
from ..agent.compaction import SUMMARY_MARKER
from ..core import timeline
from ..core.timeline import Filters, LogEntry
from ..errors import GitspaceError
from ..harness import forkrecords, transcripts
from ..harness import state as harness_state
from ..harness.naming import title
from ..storage import ids
from ..tools.builtins import BUILTINS
from .context import Context
from .html import Html, join, link, tag
from .layout import anchor_id, badge, page, placeholder, session_name, short, when

OPS_LIMIT = 5_000
TEXT_SHOW = 20_000  # characters of one block shown before "… N more"


@dataclass
class Conversation:
    id: str
    origin: str  # "saved session" or "committed transcript"
    task: str = ""
    agent: str | None = None
    status: str = "?"
    messages: list[Any] = field(default_factory=list)
    facts: dict[str, object] = field(default_factory=dict)
    problem: str | None = None
    parent: tuple[str, str | None] | None = None  # (session, delegate call) it was delegated by
    value: Any = None  # what it returned
    children: dict[str, str] = field(default_factory=dict)  # delegate call id -> child session
    forked_from: dict[str, str] | None = None  # a fork: what it started from
    forks: list[str] = field(default_factory=list)  # the sessions forked from this one


SHOW_CHILDREN = 3  # delegated sessions listed under a run before "N more" (?all=1: every one)


def index(ctx: Context, params: dict[str, str] | None = None) -> Html:
    every = (params or {}).get("all") == "1"
    saved = sessions.listing(ctx.root)
    tip = ctx.repo.rev_parse("HEAD")
    committed = transcript.committed(ctx.repo, tip) if tip else []
    rows = []
    # Newest run first, each followed by the sessions it delegated to (the tree of calls).
    tops = [s for s, depth in calltree.ordered(saved) if depth == 0][::-1]
    tree = calltree.ordered(saved)
    for s, depth in [row for top in tops for row in _shown(_subtree(tree, top), every)]:
        if s is None:  # the rest of a run's delegated sessions, folded
            rows.append(tag("tr", tag("td", "↳ … ", link("/sessions?all=1", f"{depth} more "
                                                         "delegated sessions"), class_="more"),
                            *[tag("td", "") for _ in range(7)], class_="depth-1 folded"))
            continue
        damaged = s.status == "damaged"
        who = link(f"/session/{s.id}", session_name(s.id), title=s.id)
        rows.append(tag("tr", tag("td", "↳ " if depth else "", who),
                        tag("td", "saved" if not damaged else badge("warn", "damaged")),
                        tag("td", s.agent or ""), tag("td", s.status),
                        tag("td", s.steps if not damaged else ""),
                        tag("td", s.stats.compactions if not damaged else ""),
                        tag("td", short(s.task, 90)),
                        tag("td", when(int(s.created)) if s.created and not damaged else ""),
                        class_=f"depth-{min(depth, 4)}" if depth else None))
    for k in harness_state.sessions(ctx.repo.gitdir):
        rows.append(tag("tr", tag("td", link(f"/session/{k.session}", session_name(k.session),
                                             title=k.session)),
                        tag("td", title(k.agent)), tag("td", k.agent), tag("td", ""),
                        tag("td", f"{k.turns} turn(s)"), tag("td", ""),
                        tag("td", short(transcripts.prompt(k) or "", 90)),
                        tag("td", when(int(k.when)))))
    hooked = {k.session for k in harness_state.sessions(ctx.repo.gitdir)}
    for r in forkrecords.listing(ctx.repo.gitdir):
        if r.session not in hooked:  # a fork not continued yet: its hooks have not seen it
            rows.append(tag("tr", tag("td", link(f"/session/{r.session}", r.session)),
                            tag("td", title(r.harness)), tag("td", r.harness), tag("td", ""),
                            tag("td", "forked"), tag("td", ""),
                            tag("td", "forked from ", link(f"/fork/{r.session}", r.from_session)),
                            tag("td", when(int(r.time)))))
    for sid in committed:
        rows.append(tag("tr", tag("td", link(f"/session/{sid}?from=commit", session_name(sid),
                                             title=sid)),
                        tag("td", "committed"), *[tag("td", "") for _ in range(6)]))
    if not rows:
        body = placeholder("No sessions here.", "A run ('gitspace run', 'gitspace demo') saves its "
                           "conversation in .gitspace/sessions/; --commit-transcript commits it. "
                           "A Claude Code session recorded by the hooks shows from its own "
                           "transcript.")
    else:
        head = tag("tr", *[tag("th", h) for h in ("session", "kind", "agent", "status", "steps",
                                                  "compactions", "task", "started")])
        body = tag("table", tag("thead", head), tag("tbody", *rows), class_="sessions")
    return page("Sessions", join([tag("h1", "Sessions"), body]), **ctx.shell("/sessions"))  # type: ignore[arg-type]


def _shown(rows: list[tuple[Any, int]], every: bool) -> list[tuple[Any, int]]:
    """A run and the sessions it delegated, the first SHOW_CHILDREN of them unless ``every``;
    (None, N) stands for the N left out."""
    if every or len(rows) <= SHOW_CHILDREN + 2:
        return rows
    return [*rows[:SHOW_CHILDREN + 1], (None, len(rows) - SHOW_CHILDREN - 1)]


def _subtree(tree: list[tuple[Any, int]], top: Any) -> list[tuple[Any, int]]:
    """``top`` and the rows below it in ``calltree.ordered`` order, up to the next top."""
    start = next(i for i, (s, _) in enumerate(tree) if s is top)
    end = next((i for i in range(start + 1, len(tree)) if tree[i][1] == 0), len(tree))
    return tree[start:end]


def load(ctx: Context, session_id: str, origin: str | None) -> Conversation:
    """The conversation, or one whose ``problem`` says why it cannot be read."""
    if origin != "commit" and sessions.exists(ctx.root, session_id):
        try:
            s = sessions.Session.load(ctx.root, session_id)
        except GitspaceError as e:
            return Conversation(session_id, "saved session", problem=str(e))
        conv = Conversation(s.id, "saved session", s.task, s.agent, s.status, list(s.messages),
                            {"steps": s.steps, "compactions": s.stats.compactions,
                             "tool calls": s.stats.tool_calls, "client": s.client,
                             "scripted": s.scripted})
        caller, use = calltree.parent_of(s), s.parent_tool_use_id
        conv.parent = (caller, use if isinstance(use, str) else None) if caller else None
        conv.value = s.value if s.status == "returned" else None
        others = sessions.listing(ctx.root)
        conv.children = {c.parent_tool_use_id: c.id for c in others
                         if calltree.parent_of(c) == s.id and isinstance(c.parent_tool_use_id, str)}
        conv.forked_from = forking.origin(s)
        conv.forks = [f.id for f in others if (forking.origin(f) or {}).get("session") == s.id]
        return conv
    recorded = transcripts.known(ctx.repo.gitdir, session_id) if origin != "commit" else None
    made = forkrecords.of(ctx.repo.gitdir, session_id) if origin != "commit" else None
    if recorded is not None or made is not None:
        return _harness(ctx, session_id, recorded, made)
    tip = ctx.repo.rev_parse("HEAD")
    try:
        if tip is None:
            raise GitspaceError("This branch has no commits yet.")
        data = transcript.load_committed(ctx.repo, tip, session_id)
    except GitspaceError as e:
        return Conversation(session_id, "committed transcript",
                            problem=f"No saved session or committed transcript {session_id} "
                                    f"could be read here: {e}")
    return Conversation(session_id, "committed transcript", str(data.get("task", "")),
                        data.get("agent") if isinstance(data.get("agent"), str) else None,
                        str(data.get("status", "?")), data["messages"],
                        {"client": data.get("client"), "scripted": data.get("scripted")})


def _harness(ctx: Context, session_id: str, recorded: harness_state.Known | None,
             made: forkrecords.ForkRecord | None) -> Conversation:
    """A harness's session, from its own transcript: the one its hooks recorded, or for a fork
    not continued yet the one ``gitspace fork`` wrote."""
    agent = recorded.agent if recorded is not None else str(made.harness if made else "")
    path = recorded.transcript if recorded is not None else made.transcript if made else None
    kind = f"{title(agent)} transcript"
    try:
        messages, notes = transcripts.read(path, session_id)
    except GitspaceError as e:
        conv = Conversation(session_id, kind, agent=agent, problem=str(e))
    else:
        status = f"{recorded.turns} turn(s)" if recorded is not None else "forked, not continued"
        conv = Conversation(session_id, kind, "", agent, status, messages,
                            {"read from": path, "notes": " ".join(notes) or None})
    if made is not None:
        conv.forked_from = {"session": made.from_session, "op": made.op}
    conv.forks = [r.session for r in forkrecords.forks_of(ctx.repo.gitdir, session_id)]
    return conv


def render(ctx: Context, session_id: str, origin: str | None) -> Html:
    conv = load(ctx, session_id, origin)
    ops = timeline.query(ctx.repo, None, Filters(session=session_id), limit=OPS_LIMIT,
                         first_parent=False).entries if _token(session_id) else []
    by_use = {e.op.tool_use_id: e for e in ops if e.op and e.op.tool_use_id}
    title = f"Session {session_name(session_id)}"
    facts = [tag("span", conv.origin, class_="badge b-tool"), " ", tag("code", session_id),
             f" · agent {conv.agent or '?'}",
             f" · {conv.status}", f" · {len(ops)} op(s) in the ledger"]
    facts += [f" · {k} {v}" for k, v in conv.facts.items() if v not in (None, "")]
    parts = [tag("h1", title), tag("p", *facts, class_="muted")]
    if conv.task:
        parts.append(tag("p", tag("strong", "Task: "), conv.task))
    if conv.parent is not None:
        caller, use = conv.parent
        parts.append(tag("p", "Delegated by session ",
                         link(f"/session/{caller}#{anchor_id(use or '')}", session_name(caller)),
                         f" (its call {use}).", class_="called"))
    if conv.forked_from:
        start = conv.forked_from
        parts.append(tag("p", "Forked from session ",
                         link(f"/session/{start.get('session')}",
                              session_name(str(start.get("session")))),
                         f" right after op {ids.op(str(start.get('op')))}: ",
                         link(f"/fork/{conv.id}", "the two runs side by side"), ".",
                         class_="called"))
    for fork in conv.forks:
        parts.append(tag("p", "Forked as session ", link(f"/session/{fork}", session_name(fork)),
                         ": ",
                         link(f"/fork/{fork}", "the two runs side by side"), ".",
                         class_="called"))
    if conv.status == "returned":
        parts.append(tag("p", tag("strong", "Returned: "),
                         tag("code", json.dumps(conv.value, ensure_ascii=False))))
    if conv.problem:
        parts.append(placeholder("This conversation cannot be shown:", conv.problem, kind="error"))
        parts.append(_ops_table("The session's ops (from the ledger)", ops))
    else:
        shown = _tool_use_ids(conv.messages)
        folded = [e for e in ops if e.op and e.op.tool_use_id not in shown]
        refused = _tool_use_ids(conv.messages, "tool_result")
        parts.append(tag("div", *[_message(i, m, by_use, folded, conv.children, refused)
                                  for i, m in enumerate(conv.messages)], class_="conversation"))
    return page(title, join(parts), **ctx.shell("/sessions"))  # type: ignore[arg-type]


def _token(value: str) -> bool:
    from ..storage.ledger import TOKEN

    return bool(TOKEN.fullmatch(value))


def _tool_use_ids(messages: list[Any], kind: str = "tool_use") -> set[str]:
    """The ids of the conversation's tool calls; with ``kind="tool_result"``, of the calls whose
    result was an error (``is_error``)."""
    found = set()
    for m in messages:
        content = m.get("content") if isinstance(m, dict) else None
        if isinstance(content, list):
            found |= {str(b.get("id") if kind == "tool_use" else b.get("tool_use_id"))
                      for b in content if isinstance(b, dict) and b.get("type") == kind
                      and (kind == "tool_use" or b.get("is_error"))}
    return found


def _message(i: int, message: Any, by_use: dict[str, LogEntry], folded: list[LogEntry],
             children: dict[str, str] | None = None, refused: set[str] | None = None) -> Html:
    if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
        return placeholder(f"Message {i} is malformed:", "it is not a user or assistant message; "
                           f"it starts {short(repr(message), 120)}", kind="warn")
    role, content = message["role"], message.get("content")
    if isinstance(content, str):
        if content.startswith(SUMMARY_MARKER):
            return _compaction(i, content, folded)
        blocks: list[Html] = [_text(content)]
    elif isinstance(content, list):
        blocks = [_block(b, by_use, children or {}, refused or set()) for b in content]
    else:
        blocks = [placeholder("Unreadable content:", f"{type(content).__name__}, not text or "
                              "blocks.", kind="warn")]
    return tag("div", tag("div", role, class_="role"), *blocks, class_=f"msg {role}",
               id=f"m{i}")


def _compaction(i: int, summary: str, folded: list[LogEntry]) -> Html:
    listed = _ops_table(f"{len(folded)} op(s) whose tool calls this compaction folded away", folded)
    return tag("div", tag("div", "compaction", class_="role"),
               tag("p", "The conversation was compacted here: the middle was folded into this "
                        "summary. The files and the ledger keep the full record.", class_="muted"),
               tag("details", tag("summary", "the summary the model saw"), _text(summary)),
               listed, class_="msg compaction", id=f"m{i}")


def _ops_table(title: str, ops: list[LogEntry]) -> Html:
    if not ops:
        return Html("")
    rows = [tag("tr", tag("td", link(f"/op/{e.commit}", e.op.tool if e.op else "commit")),
                tag("td", short(e.subject, 80)), tag("td", when(e.time)))
            for e in reversed(ops)]
    return tag("details", tag("summary", title), tag("table", tag("tbody", *rows)))


def _block(block: Any, by_use: dict[str, LogEntry], children: dict[str, str] | None = None,
           refused: set[str] | None = None) -> Html:
    if not isinstance(block, dict):
        return placeholder("Unreadable block:", short(repr(block), 120), kind="warn")
    kind = block.get("type")
    if kind == "text":
        return _text(str(block.get("text", "")))
    if kind == "tool_use":
        use_id = str(block.get("id", ""))
        entry = by_use.get(use_id)
        child = (children or {}).get(use_id)
        target = (link(f"/session/{child}", f"→ delegated to session {child}", class_="called")
                  if child else
                  link(f"/op/{entry.commit}", f"→ op {entry.short}", class_="to-op",
                       data_op=entry.commit) if entry
                  else tag("span", _no_op(block, use_id in (refused or set())), class_="muted"))
        args = json.dumps(block.get("input"), indent=1, ensure_ascii=False)
        return tag("div", tag("div", tag("code", str(block.get("name", "?"))), " ", target,
                              " ", tag("span", use_id, class_="muted")),
                   tag("pre", short(args, TEXT_SHOW)), class_="tool-use",
                   id=anchor_id(use_id) or None)
    if kind == "tool_result":
        content = block.get("content")
        if isinstance(content, list):
            content = "\n".join(str(c.get("text", "")) if isinstance(c, dict) else str(c)
                                for c in content)
        error = " error" if block.get("is_error") else ""
        return tag("div", tag("div", "result", " (error)" if error else "", class_="muted"),
                   tag("pre", short(str(content or ""), TEXT_SHOW)), class_="tool-result" + error)
    return placeholder(f"A {short(str(kind), 40)} block:", "not shown here.", kind="note")


def _no_op(block: dict[str, Any], refused: bool) -> str:
    """Why a tool call made no op commit, from how it ended and what the tool is."""
    tool = BUILTINS.get(str(block.get("name", "")))
    given = block.get("input")
    args: dict[str, Any] = given if isinstance(given, dict) else {}
    if refused:
        return "refused: no op (its result says why)"
    if tool is None:
        return "no op: it changed no file"  # a constraint script, or another harness's tool
    if tool.moves_refs:
        return "done: a ref moved (a checkpoint is a tag), and no commit was needed"
    if not tool.writes(args):
        return "read-only: no op"
    return "unchanged: no op (nothing to change)"


def _text(text: str) -> Html:
    return tag("div", short(text, TEXT_SHOW), class_="text")
