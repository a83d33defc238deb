"""Commands that run agents: demo, run, sessions.

``gitspace run`` exits with what happened (RUN_EXIT, also in the README):
0 the agent finished (or returned its value); 4 it could not act (a policy gave up, every tool
call failed, the model refused, or it answered in text when a value was asked for); 5 the run
stopped before the agent finished and can be resumed (--max-steps reached, a reply cut off, the
context window full, an API error); 1, 2, 3 and 130 as for every command.

With ``--returns SCHEMA`` (and when resuming a session started with it) stdout carries the
returned value as JSON and nothing else; progress and any other ending go to stderr.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from .. import config
from ..errors import BadArguments
from ..storage import ids
from . import lines
from .common import (
    JsonOpt,
    echo,
    emit_json,
    here,
    open_workspace,
    progress_shown,
    render,
    start_watcher,
    usage,
)


def demo(
    directory: Annotated[Optional[Path], typer.Option("--dir", help="A new folder for the copy.")] = None,  # noqa: UP045,E501
    model: Annotated[Optional[str], typer.Option(help="Let Claude play instead (needs ANTHROPIC_API_KEY).")] = None,  # noqa: UP045,E501
) -> None:
    """Two agents (maze, journal) on a fresh copy of the sample workspace, then its history."""
    from ..agent.demo import run_demo

    key = config.anthropic_api_key()
    if model and not key:
        raise BadArguments("--model needs ANTHROPIC_API_KEY.", hint="Drop --model to run offline.")
    run_demo(directory, echo, model=model, api_key=key, base_url=config.anthropic_base_url(),
             command=_how_to_call())


def _how_to_call() -> str:
    """How the reader runs this gitspace again: ``gitspace`` when that is it on PATH, else the
    path they ran (``.venv/bin/gitspace`` after ``make demo``), else ``python -m gitspace``."""
    import os
    import shlex
    import shutil

    ran = Path(sys.argv[0])
    found = shutil.which("gitspace")
    if ran.name == "gitspace" and found and os.path.samefile(found, ran):
        return "gitspace"
    if ran.name == "gitspace" and ran.exists():
        inside = ran.absolute().is_relative_to(Path.cwd())
        return shlex.quote(os.path.relpath(ran) if inside else str(ran.absolute()))
    return f"{shlex.quote(sys.executable)} -m gitspace"


def run(
    task: Annotated[Optional[str], typer.Argument(  # noqa: UP045
        help="What the agent should do (with --resume: the session's next message).")] = None,
    policy: Annotated[Optional[str], typer.Option(help="Offline scripted policy: maze, journal or journal-nested.")] = None,  # noqa: UP045,E501
    model: Annotated[Optional[str], typer.Option(help="Claude model (needs ANTHROPIC_API_KEY).")] = None,  # noqa: UP045,E501
    max_steps: Annotated[Optional[int], typer.Option(min=1, help=(  # noqa: UP045
        "Model calls allowed in this run (default: 40 for a model; none for a scripted policy, "
        "which ends by itself)."))] = None,
    resume: Annotated[Optional[str], typer.Option(help="Continue this saved session.")] = None,  # noqa: UP045
    budget: Annotated[int, typer.Option(min=2000,
                                        help="Conversation characters before compaction.")] = 60_000,
    commit_transcript: Annotated[bool, typer.Option(
        help="Also commit the conversation to transcripts/ (it may hold sensitive text).")] = False,
    watch_edits: Annotated[bool, typer.Option("--watch", help=(
        "Also record outside edits (shell tools, people) as ops while the run lasts."))] = False,
    fork: Annotated[Optional[str], typer.Option(  # noqa: UP045
        metavar="OP", help=("Start a new session on a new branch from this op: its files, and "
                            "the conversation up to its result, then TASK."))] = None,
    returns: Annotated[Optional[str], typer.Option(  # noqa: UP045
        metavar="SCHEMA", help=("The run must return a value fitting this JSON Schema (a file, "
                                "or inline JSON): stdout gets only the value, as JSON."))] = None,
    as_json: JsonOpt = False,
) -> None:
    """Run an agent on the workspace: Claude (needs ANTHROPIC_API_KEY), or with --policy an
    offline scripted policy (no key needed). ``--resume SESSION "next message"`` continues a
    finished session with a new message."""
    from ..agent import runner
    from ..agent.loop import Loop, LoopOptions
    from ..agent.returns import Returns, dumps
    from ..agent.session import find

    if task is None and resume is None:
        usage("Give a TASK, or --resume SESSION to continue one (with a TASK: the session's "
              "next message).")
    if fork is not None and (resume is not None or task is None):
        usage("--fork OP takes the new instruction as TASK, and no --resume.")
    real = {"api_key": config.anthropic_api_key(), "base_url": config.anthropic_base_url()}
    wanted = None if returns is None else Returns.of(_schema(returns))
    with open_workspace() as ws:
        ws.require_owned("run an agent")  # before any model call: every write would be refused
        at = None
        if resume:
            saved = find(ws.root, resume)
            client = runner.client_for_session(saved, policy=policy, model=model, **real)
            value_only = saved.returns is not None or wanted is not None
        elif fork is not None:
            from ..agent import fork as forking

            at = forking.point(ws, fork, ws.root)
            client = (runner.make_client(policy=policy, model=model, **real) if policy or model
                      else runner.client_for_session(at.session, **real))
            value_only = wanted is not None
        else:
            client = runner.make_client(policy=policy, model=model, **real)
            value_only = wanted is not None
        label = getattr(client, "label", None) or f"model {client.name}"
        steps = max_steps or (None if client.scripted else MODEL_STEPS)
        to_stderr = value_only and not as_json
        if not as_json:
            limit = f"up to {steps} model calls" if steps else "no limit on model calls"
            echo(f"Running {label} on {ws.root} ({limit}).", err=to_stderr)

        def show(event: Any) -> None:
            line = runner.describe(event)
            if line and not as_json:
                echo(line, err=to_stderr)

        options = LoopOptions(max_steps=steps or sys.maxsize, budget=budget, returns=wanted)
        loop = Loop(ws, client, options, show)
        watcher = start_watcher(ws.root, quiet=as_json) if watch_edits else None
        try:
            with progress_shown():  # (on stderr: stdout stays the value's, or the JSON's)
                if at is not None:
                    outcome = loop.fork(at, task or "", _said_forked(at, to_stderr or as_json))
                else:
                    outcome = loop.resume(resume, task) if resume else loop.start(task or "")
        finally:
            if watcher is not None:
                watcher.stop()
        code = RUN_EXIT.get(outcome.status, 5)
        if as_json:
            session = outcome.session
            emit_json({"status": outcome.status, "text": outcome.text, "session": session.id,
                       "session_short": ids.session(session.id),
                       "calls": outcome.calls, "steps": session.steps, "stats": vars(session.stats),
                       "exit_code": code, "value": outcome.value, "branch": session.branch},
                      "run")
        elif value_only and outcome.status == "returned":
            echo(dumps(outcome.value))
        else:
            render().outcome(outcome, stderr=to_stderr)
        if commit_transcript:  # after the outcome, so a refused transcript cannot hide it
            from ..agent.transcript import commit_transcript as commit

            committed = commit(ws, outcome.session)
            if not as_json:
                echo(committed.text, err=to_stderr)
    if code:
        raise typer.Exit(code)


MODEL_STEPS = 40  # a model's default limit; a scripted policy has none (its script ends it)

# The exit code of `gitspace run` for each outcome status (see the module docstring).
RUN_EXIT = {
    "done": 0, "returned": 0,
    "gave_up": 4, "no_action": 4, "refusal": 4, "no_value": 4,
    "max_steps": 5, "max_tokens": 5, "context_window": 5, "api_error": 5, "stopped": 5,
}


def _said_forked(at: Any, quiet: bool) -> Any:
    """What says where the fork runs, once it is made (on stderr when stdout is for data)."""
    def said(session: Any, branch: str) -> None:
        echo(f"Forked session {ids.session(at.session.id)} after op {ids.op(at.op.op_id)} "
             f"({at.op.tool}) onto the new branch {branch}, as session "
             f"{ids.session(session.id)}; {at.session.branch or 'its branch'} is unchanged.",
             err=quiet)
    return said


def _schema(text: str) -> Any:
    """``--returns``: a file holding a JSON Schema (read as ``--args @FILE`` is: a regular file
    under the cap, never through a link), or the schema itself as JSON."""
    import json
    import os

    from ..errors import GitspaceError
    from ..storage import bounded

    path = here(Path(text))
    source = f"the file {text}"
    try:
        if os.path.lexists(path):
            found = bounded.read_named(path, bounded.JSON_CAP, what="The --returns file")
            text = (found or b"").decode("utf-8")
        elif text.strip()[:1] not in tuple('{["-0123456789tfn'):  # no JSON value starts so
            raise BadArguments(f"There is no file {text} ({path.absolute()}), and "
                               "the text is no JSON Schema either.",
                               hint="Give the path of a file holding a JSON Schema, or the "
                                    """schema itself: --returns '{"type": "integer"}'.""")
        else:
            source = "the --returns text"
        return json.loads(text)
    except GitspaceError as e:
        raise BadArguments(f"--returns: {e.message}", hint=e.hint) from None
    except RecursionError:
        raise BadArguments(f"--returns: {source} nests too deeply to read.",
                           hint="""For example: --returns '{"type": "integer"}'.""") from None
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise BadArguments(f"--returns takes a JSON Schema, inline or as a file, and {source} "
                           f"is not one ({e}).",
                           hint="""For example: --returns '{"type": "integer"}'.""") from None


sessions_app = typer.Typer(
    help="Saved agent sessions: 'gitspace sessions' lists them, 'gitspace sessions show ID' "
         "shows one run's ops in order and how it ended.",
    invoke_without_command=True, rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]})


@sessions_app.callback()
def sessions(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """List the saved agent sessions of this workspace (newest last), each followed by the
    sessions it delegated to."""
    if ctx.invoked_subcommand is not None:
        return
    from ..agent import calltree
    from ..agent.session import listing
    from ..harness.state import sessions as harness_sessions
    from ..harness.transcripts import prompt

    with open_workspace() as ws:
        rows = listing(ws.root)
        others = harness_sessions(ws.repo.gitdir)  # Claude Code's and the others' (their hooks)
        prompts = {k.session: prompt(k) or "" for k in others}  # (local: never committed)
        if as_json:
            emit_json([_session_row(s) for s in rows] + [
                {"session": k.session, "session_short": ids.session(k.session),
                 "status": "recorded", "agent": k.agent, "client": "harness",
                 "scripted": False, "steps": k.turns, "task": prompts[k.session],
                 "parent_session": None, "parent_tool_use_id": None, "depth": 0}
                for k in others], "sessions")
        else:
            if rows or not others:  # (no "No saved sessions" above a harness's sessions)
                render().sessions(calltree.ordered(rows))
            for k in others:
                echo(f"{ids.session(k.session)}  {k.agent}  {k.turns} turn(s)  "
                     f"{lines.one_line(prompts[k.session]) or '(no prompt in its transcript)'}")


def _session_row(s: Any) -> dict[str, Any]:
    return {"session": s.id, "session_short": ids.session(s.id), "status": s.status,
            "agent": s.agent, "client": s.client,
            "scripted": s.scripted, "steps": s.steps, "task": s.task,
            "parent_session": s.parent_session, "parent_tool_use_id": s.parent_tool_use_id,
            "depth": s.depth}


@sessions_app.command("show")
def session_show(
    session_id: Annotated[str, typer.Argument(
        metavar="ID", help="The session: its id, or the start or end of it.")],
    as_json: JsonOpt = False,
) -> None:
    """One run: its task, its ops in order (from every branch) and how it ended."""
    from ..agent.session import answer, find, listing
    from ..core import timeline

    with open_workspace() as ws:
        session = find(ws.root, session_id)
        entries = timeline.query(ws.repo, None, timeline.Filters(session=session.id),
                                 limit=timeline.ALL).entries[::-1]  # every branch, oldest first
        children = sorted((s for s in listing(ws.root) if s.parent_session == session.id),
                          key=lambda s: (s.created, s.id))
        if as_json:
            emit_json({**_session_row(session), "answer": answer(session),
                       "stats": vars(session.stats), "ops": [e.as_json() for e in entries],
                       "returns": session.returns, "value": session.value,
                       "children": [c.id for c in children]}, "session")
            return
        with render().paged():
            render().session(session, answer(session), entries, children)
