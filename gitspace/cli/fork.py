"""``gitspace fork OP``: a harness's session forked at one of its ops (harness/fork.py)."""

from __future__ import annotations

import shlex
from typing import Annotated, Any

import typer

from .common import JsonOpt, echo, emit_json, open_workspace


def fork(
    op: Annotated[str, typer.Argument(metavar="OP", help=(
        "The op to fork at: its id, or the part of it 'gitspace log' shows."))],
    as_json: JsonOpt = False,
) -> None:
    """Fork the harness session that made OP: the files as they were right after it, and a new
    session of that harness whose conversation ends with that call's result (the original is
    left as it was). Prints the command that continues the new session."""
    from ..harness import fork as forking
    from ..harness.events import Options
    from ..harness.naming import title

    with open_workspace() as ws:
        made = forking.fork(ws, op, Options(max_file_bytes=ws.max_file_bytes))
    r = made.record
    if as_json:
        emit_json({"session": r.session, "command": r.command, "cwd": r.cwd,
                   "harness": r.harness, "forked_from": {"session": r.from_session, "op": r.op,
                                                         "commit": r.commit,
                                                         "tool_use_id": r.tool_use_id},
                   "branch": r.branch, "line": r.line, "fork_op": r.fork_op,
                   "files": made.files, "took_back": made.took_back,
                   "transcript": r.transcript}, "fork")
        return
    echo(f"Forked {title(r.harness)} session {r.from_session} right after op {r.op} as the new "
         f"session {r.session}; the original session and its transcript are as they were.")
    echo(_files_line(r, made))
    echo("Continue it with:")
    echo(f"  {_in(r.cwd)}{r.command}")


def _files_line(r: Any, made: Any) -> str:
    if r.branch is not None:
        return (f"The files are on the new branch {r.branch}, as right after that op (checked "
                "out here); the branch you were on is unchanged, and the new session's calls are "
                "recorded on the new branch.")
    if r.fork_op is None:
        return ("Your files already were as right after that op; the new session's calls are "
                f"recorded on {r.line} under its own session id.")
    shown = ", ".join(made.files[:10]) + (f" and {len(made.files) - 10} more"
                                          if len(made.files) > 10 else "")
    return (f"Brought back the files as right after that op ({shown}) as op {r.fork_op}; your "
            f"index and HEAD are as they were ('gitspace undo --op {r.fork_op}' takes it back). "
            f"The new session's calls are recorded on {r.line} under its own session id.")


def _in(cwd: str | None) -> str:
    return f"cd {shlex.quote(cwd)} && " if cwd else ""
