"""Terminal rendering for the CLI (rich). Imported only by ``cli``; never by the library."""

from __future__ import annotations

import time
import traceback
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def _when(ts: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


def _args_summary(args: dict[str, Any], width: int = 60) -> str:
    parts = []
    for key, value in sorted(args.items()):
        if isinstance(value, str):
            text = value if len(value) <= 24 else value[:21] + "..."
            parts.append(f"{key}={text!r}")
        elif isinstance(value, dict) and "$blob" in value:
            parts.append(f"{key}=<{value.get('bytes', '?')} bytes>")
        else:
            parts.append(f"{key}={value}")
    line = " ".join(parts)
    return line if len(line) <= width else line[: width - 3] + "..."


def result(res: Any) -> None:
    if res.ok:
        out.print(escape(res.text))
        if res.op:
            extra = f" (after outside changes, op {res.external_op})" if res.external_op else ""
            out.print(f"[dim]op {res.op} commit {res.commit[:12]}{extra}[/dim]")
    else:
        error(res.error or res.text)


def error(e: Any) -> None:
    message = getattr(e, "message", str(e))
    err.print(f"[bold red]error:[/bold red] {escape(message)}")
    hint = getattr(e, "hint", None)
    if hint:
        err.print(f"[yellow]hint:[/yellow] {escape(hint)}")


def bug(e: BaseException) -> None:
    err.print("[bold red]gitspace hit a bug[/bold red] (this is not your fault):")
    err.print(escape("".join(traceback.format_exception_only(type(e), e)).strip()))
    err.print("Please report it with the command you ran.")


def status(data: dict[str, Any]) -> None:
    out.print(f"Workspace {escape(data['root'])}")
    out.print(f"On branch [bold]{escape(data['branch'])}[/bold] at {data['tip'][:12]}")
    if data["pending"]:
        out.print(f"{len(data['pending'])} outside change(s) not yet recorded "
                  "(run 'gitspace snapshot'):")
        for path in data["pending"][:50]:
            out.print(f"  {escape(path)}")
    else:
        out.print("No outside changes: the work tree matches the last op.")
    for note in data["too_large"]:
        out.print(f"[yellow]too large to record:[/yellow] {escape(note)}")


def timeline(entries: list[Any]) -> None:
    table = Table(box=None, pad_edge=False)
    for col in ("time", "op", "agent", "tool", "args", "files", ""):
        table.add_column(col, overflow="fold")
    for e in entries:
        op = e.op
        files = ", ".join(e.files[:3]) + (f" +{len(e.files) - 3}" if len(e.files) > 3 else "")
        marks = " ".join(f"[green]◆ {escape(c)}[/green]" for c in e.checkpoints)
        if e.problem:
            marks += f" [red]malformed: {escape(e.problem)}[/red]"
        table.add_row(
            _when(e.time),
            op.op_id[-8:] if op else e.commit[:8],
            escape(op.agent or "-") if op else escape(e.author),
            escape(op.tool) if op else "[dim]commit[/dim]",
            escape(_args_summary(op.args)) if op else escape(e.subject),
            escape(files),
            marks,
        )
    out.print(table)


def op_detail(e: Any) -> None:
    out.print(f"commit {e.commit}  {_when(e.time)}  {escape(e.author)}")
    if e.op:
        op = e.op
        out.print(f"op {op.op_id}  tool {escape(op.tool)}  source {op.source}  "
                  f"agent {escape(op.agent or '-')}")
        out.print(f"args {escape(_args_summary(op.args, 200))}")
        if op.undo_of:
            out.print(f"undoes {', '.join(op.undo_of)}")
        if op.redo_of:
            out.print(f"redoes {op.redo_of}")
    else:
        out.print(escape(e.subject))


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


def branches(rows: list[Any]) -> None:
    for b in rows:
        mark = "*" if b.current else " "
        out.print(f"{mark} {escape(b.name)}  {b.tip[:12]}")


def tools(found: list[Any], notes: list[str]) -> None:
    table = Table(box=None, pad_edge=False, show_lines=False)
    for col in ("tool", "kind", "description"):
        table.add_column(col, overflow="fold")
    for t in found:
        kind = ("mutates" if t.mutates else "read-only") + ("" if t.origin == "builtin" else
                                                            f", {t.origin}")
        first = t.description.split(". ")[0].rstrip(".") + "."
        table.add_row(escape(t.name), kind, escape(first))
    out.print(table)
    for note in notes:
        out.print(f"[yellow]note:[/yellow] {escape(note)}")


def verify(report: Any) -> None:
    out.print(f"{report.commits} commits, {report.ops} ops, {report.foreign} non-op commits, "
              f"{len(report.problems)} problem(s).")
    if report.ok:
        out.print("[green]Every op parses.[/green]")
    for commit, problem in report.problems:
        out.print(f"[red]{commit[:12]} malformed:[/red] {escape(problem)}")


def outcome(result: Any, as_json: bool = False) -> None:
    s = result.session
    if as_json:
        import json

        out.print_json(json.dumps({"status": result.status, "text": result.text, "session": s.id,
                                   "calls": result.calls, "steps": s.steps,
                                   "stats": vars(s.stats)}))
        return
    colour = "green" if result.ok else "yellow"
    out.print(f"\n[{colour}]{escape(result.status)}[/{colour}] after {result.calls} model call(s) "
              f"this run ({s.steps} in session {s.id}).")
    out.print(escape(result.text))
    st = s.stats
    out.print(f"[dim]{st.tool_calls} tool calls, {st.bytes_read:,} characters of tool results, "
              f"largest {st.largest_result:,}; peak conversation {st.peak_request:,} characters, "
              f"{st.compactions} compaction(s).[/dim]")


def sessions(rows: list[Any], as_json: bool = False) -> None:
    if as_json:
        import json

        out.print_json(json.dumps([{"session": s.id, "status": s.status, "agent": s.agent,
                                    "client": s.client, "scripted": s.scripted, "steps": s.steps,
                                    "task": s.task} for s in rows]))
        return
    if not rows:
        out.print("No saved sessions. Start one with 'gitspace run TASK'.")
        return
    table = Table(box=None, pad_edge=False)
    for col in ("session", "status", "agent", "client", "steps", "task"):
        table.add_column(col, overflow="fold")
    for s in rows:
        client = f"{s.client} (scripted)" if s.scripted else s.client
        table.add_row(s.id, s.status, s.agent or "-", escape(client), str(s.steps),
                      escape(s.task[:60]))
    out.print(table)
