"""Commands that run agents: demo, run, sessions."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from .. import config
from ..errors import BadArguments
from .common import JsonOpt, echo, open_workspace, render, start_watcher


def demo(
    directory: Annotated[Optional[Path], typer.Option("--dir", help="A new folder for the copy.")] = None,  # noqa: UP045,E501
    model: Annotated[Optional[str], typer.Option(help="Let Claude play instead (needs ANTHROPIC_API_KEY).")] = None,  # noqa: UP045,E501
) -> None:
    """Two agents (maze, journal) on a fresh copy of the sample workspace, then its history."""
    from ..agent.demo import run_demo

    key = config.anthropic_api_key()
    if model and not key:
        raise BadArguments("--model needs ANTHROPIC_API_KEY.", hint="Drop --model to run offline.")
    run_demo(directory, echo, model=model, api_key=key, base_url=config.anthropic_base_url())


def run(
    task: Annotated[Optional[str], typer.Argument(  # noqa: UP045
        help="What the agent should do (with --resume: the session's next message).")] = None,
    policy: Annotated[Optional[str], typer.Option(help="Offline scripted policy: maze or journal.")] = None,  # noqa: UP045,E501
    model: Annotated[Optional[str], typer.Option(help="Claude model (needs ANTHROPIC_API_KEY).")] = None,  # noqa: UP045,E501
    max_steps: Annotated[int, typer.Option(min=1, help="Model calls allowed in this run.")] = 40,
    resume: Annotated[Optional[str], typer.Option(help="Continue this saved session.")] = None,  # noqa: UP045
    budget: Annotated[int, typer.Option(min=2000,
                                        help="Conversation characters before compaction.")] = 60_000,
    commit_transcript: Annotated[bool, typer.Option(
        help="Also commit the conversation to transcripts/ (it may hold sensitive text).")] = False,
    watch_edits: Annotated[bool, typer.Option("--watch", help=(
        "Also record outside edits (shell tools, people) as ops while the run lasts."))] = False,
    as_json: JsonOpt = False,
) -> None:
    """Run an agent on the workspace: Claude with an API key, else an offline scripted policy.
    ``--resume SESSION "next message"`` continues a finished session with a new message."""
    from ..agent import runner
    from ..agent.loop import Loop, Options
    from ..agent.session import Session

    if task is None and resume is None:
        raise BadArguments("Give a TASK, or --resume SESSION to continue one (with a TASK: the "
                           "session's next message).")
    real = {"api_key": config.anthropic_api_key(), "base_url": config.anthropic_base_url()}
    with open_workspace() as ws:
        ws.require_owned("run an agent")  # before any model call: every write would be refused
        if resume:
            saved = Session.load(ws.root, resume)
            client = runner.client_for_session(saved, policy=policy, model=model, **real)
        else:
            client = runner.make_client(policy=policy, model=model, **real)
        label = getattr(client, "label", None) or f"model {client.name}"
        if not as_json:
            echo(f"Running {label} on {ws.root} (up to {max_steps} model calls).")

        def show(event: Any) -> None:
            line = runner.describe(event)
            if line and not as_json:
                echo(line)

        loop = Loop(ws, client, Options(max_steps=max_steps, budget=budget), show)
        watcher = start_watcher(ws.root, quiet=as_json) if watch_edits else None
        try:
            outcome = loop.resume(resume, task) if resume else loop.start(task or "")
        finally:
            if watcher is not None:
                watcher.stop()
        render().outcome(outcome, as_json)
        if commit_transcript:  # after the outcome, so a refused transcript cannot hide it
            from ..agent.transcript import commit_transcript as commit

            committed = commit(ws, outcome.session)
            if not as_json:
                echo(committed.text)
    if not outcome.ok:
        raise typer.Exit(1)


def sessions(as_json: JsonOpt = False) -> None:
    """List the saved agent sessions of this workspace (newest last)."""
    from ..agent.session import listing

    with open_workspace() as ws:
        render().sessions(listing(ws.root), as_json)
