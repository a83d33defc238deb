"""Terminal rendering for the CLI (rich). Imported only by ``cli``; never by the library. (The
progress of long jobs is ``progressview``; a result or an error into a pipe is ``shared``'s.)

Colour follows ``--color`` and NO_COLOR (``options.colour_on``). Tables never fold a value over
two lines: a column too narrow for its text ends it with an ellipsis, and ``log`` into a pipe
prints whole lines without rich (``lines``). Text from history (subjects, paths, args, reasons,
diffs) is printed only through ``escape``.
"""

from __future__ import annotations

import json
import sys
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Console
from rich.markup import escape as escape_markup
from rich.table import Table
from rich.text import Text

from ..storage import ids, ledger
from . import lines, options, pager


def escape(text: str) -> str:
    """``text`` as rich prints it and as nothing else: its markup escaped, and every character
    a terminal would act on spelled (``lines.visible``), so history's text never moves the
    cursor, retitles the window or hides a line. Every text this module prints goes through it."""
    return escape_markup(lines.visible(text))


def _console(stderr: bool = False) -> Console:
    stream = sys.stderr if stderr else sys.stdout
    on = options.colour_on(stream)
    # Into a pipe or a file nothing is cut to a width: a table row stays one whole line.
    width = None if stream.isatty() else 100_000
    # (emoji=False: a ':name:' in a path or a message is history's text, never a picture)
    return Console(stderr=stderr, highlight=False, emoji=False, soft_wrap=True,
                   force_terminal=on or None,
                   no_color=not on, color_system="auto" if on else None, width=width)


out = _console()
err = _console(stderr=True)


@contextmanager
def paged() -> Iterator[None]:
    """Send ``out`` through the pager (on a terminal) while the block runs."""
    with pager.paged(options.state.pager) as stream:
        if stream is sys.stdout:
            yield
            return
        previous, width = out.file, out.width
        out.file = stream
        out.width = width  # the terminal's, not the pipe's default of 80
        try:
            yield
        finally:
            out.file = previous


def _when(ts: int) -> str:
    return lines.when(ts)


def result(res: Any) -> None:
    if res.ok:
        out.print(escape(res.text))
        if res.op:
            extra = (f" (after outside changes, op {ledger.short_id(res.external_op)})"
                     if res.external_op else "")
            out.print(f"[dim]op {ledger.short_id(res.op)} ({res.op}) commit {res.commit[:12]}"
                      f"{extra}[/dim]")
    else:
        error(res.error or res.text)
    for note in getattr(res, "notes", []):
        err.print(f"[yellow]note:[/yellow] {escape(note)}")


def error(e: Any) -> None:
    message = getattr(e, "message", str(e))
    err.print(f"[bold red]error:[/bold red] {escape(message)}")
    hint = getattr(e, "cli_hint", None) or getattr(e, "hint", None)
    if hint:
        err.print(f"[yellow]hint:[/yellow] {escape(hint)}")


def bug(e: BaseException) -> None:
    err.print("[bold red]gitspace hit a bug[/bold red] (this is not your fault):")
    err.print(escape("".join(traceback.format_exception_only(type(e), e)).strip()))
    err.print("Please report it with the command you ran.")


def _table(columns: list[str], rows: list[list[str]], flexible: tuple[str, ...]) -> Table:
    """A table whose rows never fold: every column gets its whole text when the terminal is
    wide enough; when it is not, only the ``flexible`` columns shrink, widest first, and end
    with an ellipsis."""
    natural = [max([len(name), *(Text.from_markup(r[i]).cell_len for r in rows)])
               for i, name in enumerate(columns)]
    widths = list(natural)
    room = out.width - 2 * (len(columns) - 1)
    shrinkable = [i for i, name in enumerate(columns) if name in flexible]
    while sum(widths) > room:
        widest = max(shrinkable, key=lambda i: widths[i], default=None)
        if widest is None or widths[widest] <= 8:
            break  # too narrow for anything sensible: rich cuts the rest
        widths[widest] -= 1
    table = Table(box=None, pad_edge=False)
    for name, width in zip(columns, widths, strict=True):
        table.add_column(name, no_wrap=True, overflow="ellipsis", width=width)
    for row in rows:
        table.add_row(*row)
    return table


def timeline(entries: list[Any], depths: dict[str, int] | None = None) -> None:
    """The op table for a terminal: one row per op, never folded over two lines; an op a
    delegated agent made has its tool under the call (``depths``: by op id)."""
    rows = []
    depths = depths or {}
    for e in entries:
        op = e.op
        files = ", ".join(e.files[:3]) + (f" +{len(e.files) - 3}" if len(e.files) > 3 else "")
        marks = " ".join(f"[green]◆ {escape(c)}[/green]" for c in e.checkpoints)
        if e.failed is not None:
            marks = f"[red]✗ failed: {escape(lines.one_line(e.failed))}[/red] {marks}".rstrip()
        if e.problem:
            marks += f" [red]malformed: {escape(e.problem)}[/red]"
        rows.append([
            lines.when(e.time),
            e.short,
            escape(e.agent),
            escape(lines.called(op.tool, depths.get(op.op_id, 0))) if op else "[dim]commit[/dim]",
            escape(ledger.args_summary(op.args, 200)) if op else escape(e.subject),
            escape(lines.one_line(files)),
            marks,
        ])
    out.print(_table(["time", "op", "agent", "tool", "args", "files", ""], rows,
                     ("args", "files", "")))
    if not entries:
        out.print("No ops match.")


def checkpoints(rows: list[Any]) -> None:
    if not rows:
        out.print("No checkpoints yet.")
        return
    table = Table(box=None, pad_edge=False)
    for col in ("name", "commit", "branch", "agent", "time", "message"):
        table.add_column(col)
    for c in rows:
        table.add_row(escape(c.name), c.commit[:12], escape(c.branch), escape(c.agent),
                      _when(c.time), escape(c.message))
    out.print(table)


def hooks(rows: list[dict[str, Any]]) -> None:
    table = Table(box=None, pad_edge=False)
    for col in ("harness", "scope", "state", "settings file"):
        table.add_column(col)
    for r in rows:
        state = "installed" if r["installed"] else "partly" if r["partial"] else "-"
        if r.get("too_short"):
            state = "killed (timeout)"
        elif r.get("trust") == "untrusted":
            state += ", not trusted"
        table.add_row(escape(r["harness"]), r["scope"], state, escape(r["path"]))
    out.print(table)
    for r in rows:
        if r.get("note"):
            out.print(escape(f"{r['harness']} ({r['scope']}): {r['note']}"))


def turns(rows: list[dict[str, Any]]) -> None:
    if not rows:
        out.print("No turns recorded yet ('gitspace hooks install claude-code' records them).")
        return
    table = Table(box=None, pad_edge=False)
    for col in ("turn", "mark", "commit", "time"):
        table.add_column(col)
    for r in rows:  # (grouped by session: a number counts the turns of one session)
        table.add_row(f"{r['session_short']} turn {r['turn']}", escape(r["checkpoint"]),
                      ids.commit(r["commit"]), _when(r["time"]))
    out.print(table)


def branches(rows: list[Any]) -> None:
    for b in rows:
        mark = "*" if b.current else " "
        out.print(f"{mark} {escape(b.name)}  {b.tip[:12]}")


def tools(found: list[Any], notes: list[str]) -> None:
    """Each tool: its name, whether it writes, what it does, and its example as a command to
    paste (``gitspace call NAME --args '...'``)."""
    import shlex

    table = Table(box=None, pad_edge=False, show_lines=False)
    for col in ("tool", "kind", "description and example"):
        table.add_column(col, overflow="fold")
    for t in found:
        kind = ("mutates" if t.mutates else "read-only") + ("" if t.origin == "builtin" else
                                                            f", {t.origin}")
        first = t.description.split(". ")[0].rstrip(".") + "."
        example = json.dumps(t.example, ensure_ascii=False) if t.example is not None else "{}"
        call = f"gitspace call {t.name} --args {shlex.quote(example)}"
        if not out.is_terminal:  # into a pipe: whole lines, no table padding them to its width
            out.print(f"{escape(t.name)}  {kind}  {escape(first)}\n    {escape(call)}")
            continue
        table.add_row(escape(t.name), kind, f"{escape(first)}\n[dim]{escape(call)}[/dim]")
    if out.is_terminal:
        out.print(table)
    for note in notes:
        out.print(f"[yellow]note:[/yellow] {escape(note)}")


def verify(report: Any) -> None:
    out.print(f"{report.commits} commits, {report.ops} ops, {report.foreign} non-op commits, "
              f"{len(report.problems)} problem(s).")
    if report.ok:
        out.print("[green]Every op parses.[/green]")
    from ..storage.ledger import formats_note

    out.print(f"[dim]Read as {formats_note()}.[/dim]")
    for commit, problem in report.problems:
        out.print(f"[red]{commit[:12]} malformed:[/red] {escape(problem)}")


def outcome(result: Any, stderr: bool = False) -> None:
    s = result.session
    to = err if stderr else out
    colour = "green" if result.ok else "yellow"
    to.print(f"\n[{colour}]{escape(result.status)}[/{colour}] after {result.calls} model call(s) "
             f"this run ({s.steps} in session {ids.session(s.id)}).")
    to.print(escape(result.text))
    st = s.stats
    to.print(f"[dim]{st.tool_calls} tool calls, {st.bytes_read:,} characters of tool results, "
             f"largest {st.largest_result:,}; peak conversation {st.peak_request:,} characters, "
             f"{st.compactions} compaction(s).[/dim]")


def sessions(rows: list[tuple[Any, int]]) -> None:
    """The sessions as a tree: each one followed by those it delegated to, indented."""
    if not rows:
        out.print("No saved sessions. Start one with 'gitspace run TASK'.")
        return
    cells = [[escape(lines.called(ids.session(s.id), depth)), escape(s.status), escape(s.agent or "-"),
              escape(f"{s.client} (scripted)" if s.scripted else s.client), str(s.steps),
              escape(lines.one_line(s.task))] for s, depth in rows]
    out.print(_table(["session", "status", "agent", "client", "steps", "task"], cells, ("task",)))
    out.print("[dim]'gitspace sessions show ID' shows one run (the id as listed, or any start or "
              "end of it).[/dim]")


def session(s: Any, answer: str, entries: list[Any], children: list[Any]) -> None:
    client = f"{s.client} (scripted)" if s.scripted else s.client
    out.print(f"Session [bold]{ids.session(s.id)}[/bold] ({s.id}): {escape(s.status)}")
    out.print(f"task    {escape(s.task)}")
    if s.parent_session:
        out.print(f"called  by session {ids.session(s.parent_session)} (its delegate call "
                  f"{escape(s.parent_tool_use_id or '?')}), {s.depth} level(s) deep")
    out.print(f"agent   {escape(s.agent or '-')}   client {escape(client)}   "
              f"{s.steps} model call(s)   {s.stats.tool_calls} tool call(s), "
              f"{s.stats.failed_calls} failed")
    st = s.stats
    out.print(f"stats   peak conversation {st.peak_request:,} characters, largest tool result "
              f"{st.largest_result:,}, {st.bytes_read:,} characters read, {st.compactions} "
              f"compaction(s), {st.recovered} recovered after a restart")
    out.print(f"\n{len(entries)} op(s), oldest first:")
    for e in entries:
        out.print("  " + escape(lines.compact(e)), soft_wrap=True)
    if children:
        out.print(f"\nDelegated to {len(children)} session(s):")
        for c in children:
            got = json.dumps(c.value, ensure_ascii=False) if c.status == "returned" else c.status
            out.print(f"  {ids.session(c.id)}  {escape(lines.one_line(got))}  "
                      f"{escape(lines.one_line(c.task))}", soft_wrap=True)
    out.print(f"\nHow it ended ({escape(s.status)}):")
    out.print(escape(answer or "(no final answer was saved)"))
    if s.status == "returned":
        out.print("\nReturned value:")
        out.print(escape(json.dumps(s.value, indent=2, ensure_ascii=False)), soft_wrap=True)


def usage_error(message: str) -> None:
    err.print(f"[bold red]error:[/bold red] {escape(message)}")
    err.print("[yellow]hint:[/yellow] 'gitspace COMMAND -h' shows how a command is used.")


# -- replay ------------------------------------------------------------------------------------

def replay_report(report: Any) -> None:
    _replay_body(report)
    if report.unverified:
        out.print("  The script ops' files were taken as recorded: replay without --no-scripts "
                  "to check them.")
    if report.leftover:
        err.print(f"Could not remove the scratch folder {escape(str(report.leftover))} (a process "
                  "may still be writing to it); delete it by hand.")


def _replay_body(report: Any) -> None:
    from ..replay.summary import sentences

    said = sentences(report.as_json())
    for line in said[:-1]:
        out.print(escape(line))
    if report.fetched:
        out.print(f"  fetched checkpoint(s) {escape(', '.join(report.fetched))} from a remote "
                  "(no tag was created here)")
    colour = "green" if report.ok else "red"
    out.print(f"[{colour}]{escape(said[-1])}[/{colour}]")
    if report.empty:
        out.print("  Pass --allow-empty if that is expected (the range adds only outside edits, "
                  "commands or plain commits); otherwise check --from, and that the clone holds "
                  "the branch's whole history.")
        return
    d = report.divergence
    if d is None:
        return
    out.print(f"  commit {d.commit}")
    if d.op_id:
        out.print(f"  op {ledger.short_id(d.op_id)} ({d.op_id})  tool {escape(d.tool or '-')}")

        args = json.dumps(d.args, ensure_ascii=False)
        out.print(f"  args {escape(args if len(args) <= 300 else args[:297] + '...')}")
    out.print(f"  why: {escape(d.reason)}")
    if d.paths:
        hidden = max(len(d.paths) - 20, 0) + (d.more_paths or 0)
        more = f" and {hidden} more" if hidden else ""
        out.print(f"  paths: {escape(', '.join(d.paths[:20]))}{more}")
    for line in d.diff:
        tint = "green" if line.startswith("+") else "red" if line.startswith("-") else None
        text = escape(line)
        out.print(f"    [{tint}]{text}[/{tint}]" if tint else f"    {text}")


def attached(a: Any) -> None:
    if a.existed:
        out.print(f"Agent {escape(a.name)} is already attached on {escape(a.branch)}; nothing "
                  "was changed.")
    else:
        how = "continues its existing branch" if a.resumed else "has a new branch"
        out.print(f"Attached agent [bold]{escape(a.name)}[/bold]: it {how} "
                  f"{escape(a.branch)} at {a.start[:12]}.")
    out.print(f"Worktree: {escape(str(a.path))}")
    if a.dirty:
        out.print(f"[yellow]note:[/yellow] your checkout has {a.dirty} uncommitted change(s); "
                  "they were not copied (the agent starts from your last commit).")
    out.print(f"Work there with: gitspace -C {escape(str(a.path))} --agent {escape(a.name)} ...")
    out.print(f"(from your checkout, 'gitspace --agent {escape(a.name)} ...' goes there too)")


def agents(rows: list[Any]) -> None:
    if not rows:
        out.print("No agents. Attach one with 'gitspace attach --agent NAME'.")
        return
    table = Table(box=None, pad_edge=False)
    for col in ("agent", "branch", "worktree", "ops", "last op"):
        table.add_column(col, overflow="fold")
    for a in rows:
        last = "-" if a.last is None else (f"{escape(a.last.tool)} {ledger.short_id(a.last.op_id)} "
                                           f"{_when(a.last_time)}")
        where = escape(str(a.path)) if a.path else "[dim]detached[/dim]"
        table.add_row(escape(a.name), escape(a.branch), where, str(a.ops), last)
    out.print(table)
    out.print("[dim]ops: ops on the agent's branch that your checked-out commit does not have."
              "[/dim]")


def merged(m: Any) -> None:
    if m.commit is None:
        out.print(f"{escape(m.target)} already contains everything on {escape(m.branch)}; "
                  "nothing was changed.")
        return
    kind = "one squashed commit" if getattr(m, "squashed", False) else "merge commit"
    out.print(f"Merged {escape(m.branch)} into [bold]{escape(m.target)}[/bold]: {kind} "
              f"{m.commit[:12]}, {len(m.files)} file(s) changed.")
    if m.checkout:
        out.print("Your checkout is on that branch: those files were updated in it, nothing else.")


def detached(d: Any) -> None:
    out.print(f"Detached agent {escape(d.name)}: removed {escape(str(d.path))}; branch "
              f"{escape(d.branch)} kept at {d.tip[:12]}.")
    if d.discarded:
        out.print(f"[yellow]discarded[/yellow] unrecorded changes: {escape(', '.join(d.discarded))}")
    if getattr(d, "ignored", None):
        out.print(f"Deleted ignored files with it: {escape(', '.join(d.ignored))}")
    if d.sessions:
        out.print(f"Session files moved to {escape(str(d.sessions))}.")


def synced(report: Any, verb: str) -> None:
    if not report.moved:
        out.print(f"Nothing to {verb}: {escape(report.remote)} and this clone agree.")
    for ref, what in report.moved:
        name = ref.removeprefix("refs/heads/")
        if name.startswith("refs/tags/gitspace/"):
            name = "checkpoint " + name[len("refs/tags/gitspace/"):]
        out.print(f"{verb}ed {escape(name)}: {escape(what)}")
    for note in report.notes:
        out.print(f"[yellow]note:[/yellow] {escape(note)}")


def fleet_synced(done: Any) -> None:
    """One sync of a fleet branch: what came, what was re-run, what went."""
    where = f"{escape(done.branch)} with {escape(done.remote)}"
    if not done.changed:
        out.print(f"{where}: already in sync at {done.tip[:12]}.")
    else:
        parts = []
        if done.pulled:
            parts.append(f"{done.pulled} commit(s) from {escape(done.remote)}")
        if done.rebased:
            parts.append(f"{done.rebased} unpushed commit(s) re-run on top of them")
        if done.pushed:
            parts.append(f"{done.pushed} pushed")
        tries = f" ({done.attempts} attempts: other clones pushed meanwhile)" \
            if done.attempts > 1 else ""
        if getattr(done, "waiting", 0):
            tries += f"; its push waits for this clone's turn (next look in {done.waiting:.1f} s)"
        out.print(f"Synced {where} at {done.tip[:12]}: {', '.join(parts) or 'checkpoints only'}"
                  f"{tries}.")
    for op_id, commit in done.dropped:
        out.print(f"dropped op {ledger.short_id(op_id)} ({op_id}); its commit {commit[:12]} "
                  "stays in the reflog")
    if done.checkpoints:
        out.print("checkpoints: " + ", ".join(escape(c) for c in done.checkpoints))
    for note in done.notes:
        out.print(f"[yellow]note:[/yellow] {escape(note)}")


def sync_event(event: Any) -> None:
    if event.synced is not None:
        fleet_synced(event.synced)
    else:
        err.print(f"[yellow]{escape(event.kind)}:[/yellow] {escape(event.text)}")
