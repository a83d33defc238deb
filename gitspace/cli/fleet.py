"""CLI for a fleet on one branch: ``gitspace sync [REMOTE]`` (once, or ``--watch``)."""

from __future__ import annotations

import dataclasses
import signal
import threading
from typing import Annotated, Optional

import typer

from .common import JsonOpt, echo, emit_json, open_workspace, progress_shown, render


def sync(
    remote: Annotated[str, typer.Argument(help="A remote's name (see 'git remote -v').")] = "origin",
    drop: Annotated[Optional[list[str]], typer.Option("--drop", help="Leave out this unpushed op (by id) that no longer applies (repeatable).")] = None,  # noqa: UP045,E501
    watch: Annotated[bool, typer.Option("--watch", help="Keep syncing: after every op, and every --every seconds; offline, ops queue here.")] = False,  # noqa: E501
    every: Annotated[float, typer.Option(min=0.1, help="With --watch: seconds between syncs that bring other clones' ops.")] = 5.0,  # noqa: E501
    as_json: JsonOpt = False,
) -> None:
    """Share this branch with REMOTE's: re-run unpushed ops on top of theirs, push; never forced."""
    from ..team.sync import sync as sync_once

    with open_workspace() as ws:
        if not watch:
            done = sync_once(ws, remote, drop=tuple(drop or ()))
            if as_json:
                emit_json(dataclasses.asdict(done), "sync")
            else:
                render().fleet_synced(done)
            return
        if drop:
            raise typer.BadParameter("--drop is a one-time decision; run it without --watch.",
                                     param_hint="--drop")
        _watch(ws, remote, every, as_json)


def _watch(ws: object, remote: str, every: float, as_json: bool) -> None:
    from ..team.sync_watch import SyncEvent, watch

    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set())
                for sig in (signal.SIGINT, signal.SIGTERM)}

    def show(event: SyncEvent) -> None:
        if as_json:
            emit_json({"kind": event.kind, "text": event.text, "queued": event.queued,
                        "synced": event.synced and dataclasses.asdict(event.synced)})
        else:
            render().sync_event(event)

    try:
        if not as_json:
            echo(f"Syncing with {remote} after every op and every {every:g} s; Ctrl-C or "
                       "SIGTERM stops (between syncs).")
        with progress_shown():
            watch(ws, remote, every=every, stop=stop, on_event=show)  # type: ignore[arg-type]
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
