"""Commands for other agent harnesses: hooks install/uninstall/status, hook, record, rewind."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from .. import config, progress
from ..harness.adapters import listed
from ..storage import ids
from .common import (
    JsonOpt,
    echo,
    emit_json,
    here,
    in_place,
    open_workspace,
    progress_shown,
    render,
    show_result,
    state,
    usage,
)

HARNESS = Annotated[str, typer.Argument(help=f"{listed()}.")]
hooks_app = typer.Typer(help="Record the tool calls of another agent harness (" + listed() + ").",
                        no_args_is_help=True)

Scope = Annotated[Optional[str], typer.Option(  # noqa: UP045
    help="project (.claude/settings.json, committed), local (.claude/settings.local.json) or "
         "user (every project). Default: project in a workspace; in a checkout of your own, "
         "local for Claude Code and user for the others (your history never sees them).")]


def _program() -> str:
    """How the harness should start gitspace: this very installation, by absolute path."""
    argv0 = Path(sys.argv[0])
    if argv0.name == "gitspace" and os.access(argv0, os.X_OK):
        return shlex.quote(str(argv0.absolute()))
    return f"{shlex.quote(sys.executable)} -m gitspace"


def _start() -> Path:
    from ..team.attach import route

    return Path(route(state.directory, state.agent))


@hooks_app.command("install")
def hooks_install(
    name: HARNESS,
    scope: Scope = None,
    commit_transcript: Annotated[bool, typer.Option(
        help="At each turn's end, also commit the session transcript (it may hold sensitive "
             "text).")] = False,
    trust: Annotated[bool, typer.Option(
        help="Codex only: have Codex trust exactly the hooks just written (as its /hooks "
             "screen does), so that it runs them.")] = False,
) -> None:
    """Make every tool call of the harness an op here (merged into its settings file)."""
    from ..harness import install

    wired = install.install(name, scope, _start(), config.home(), _program(), commit_transcript,
                            trust)
    verb = "Installed" if wired.changed else "Already installed:"
    if not wired.in_place:
        echo(f"{verb} gitspace's {wired.spec.title} hooks in {wired.path}"
             + (f" (recorded as op {ids.op(wired.op)})." if wired.op else "."))
        if wired.scope == "project":
            echo("They run 'gitspace' from the PATH the harness has, in every clone.")
    else:
        echo(f"{verb} gitspace's {wired.spec.title} hooks in {wired.path}"
             + (" (kept out of git through .git/info/exclude)." if wired.excluded else "."))
        echo(f"Recording {wired.spec.title} in place: every tool call that changes files becomes "
             "an op on a line of gitspace's own (refs/gitspace/lines/), and nothing of yours "
             "moves: not your index, HEAD, branches, stash or files. 'gitspace log' shows the "
             "ops.")
        if wired.changed:
            _said_start()
    if wired.review is not None:
        echo(wired.review.note)
    for other in install.elsewhere(wired.spec, wired.scope, _start(), config.home()):
        echo(_twice(wired.spec, other))


def _twice(spec: Any, other: Any) -> str:
    return (f"gitspace's {spec.title} hooks are also in {other}, and {spec.title} runs both: every "
            "event would arrive twice (each turn counted twice). Keep one: 'gitspace hooks "
            f"uninstall {spec.name} --scope SCOPE' removes the other.")


def _said_start() -> None:
    """Say what the line starts from: the checkout as found, uncommitted and untracked files
    copied as they were (so the agent's first op holds only its own change)."""
    from ..core import timeline
    from ..harness.inplace import line
    from ..storage.gitrepo import GitRepo
    from . import lines

    repo = GitRepo.open(_start())
    try:
        tip = line.where(repo).tip
        found = timeline.entry(repo, tip) if tip else None
        if found is None or found.op is None:
            return
        start = {**found.as_json(), "line_start": True}
        echo(f"The line starts from {lines.recorded(start)} (op {found.short}); these stay "
             "yours: 'gitspace status' says what is recorded, and when.")
    finally:
        repo.close()


@hooks_app.command("uninstall")
def hooks_uninstall(name: str, scope: Scope = None) -> None:
    """Remove gitspace's hooks from the harness's settings (other hooks stay)."""
    from ..harness import install

    wired = install.uninstall(name, scope, _start(), config.home())
    echo(f"Removed gitspace's {wired.spec.title} hooks from {wired.path}."
               if wired.changed else f"gitspace's {wired.spec.title} hooks are not in {wired.path}.")


@hooks_app.command("status")
def hooks_status(as_json: JsonOpt = False) -> None:
    """Which harnesses have gitspace's hooks, in which settings files."""
    from ..harness import install

    rows = install.status(_start(), config.home())
    where: dict[str, list[Path]] = {}  # harness -> the settings files holding its hooks
    for spec, _, found, _ in rows:
        if any(found.events.values()):
            where.setdefault(spec.name, []).append(found.path)
    data = [{"harness": spec.name, "scope": scope, "path": str(found.path),
             "installed": found.complete, "partial": not found.complete and any(found.events.values()),
             "command": found.command, "too_short": list(found.short),
             "trust": review.state if review else None,
             "note": _note(spec, found, review, [p for p in where.get(spec.name, [])
                                                 if p != found.path])}
            for spec, scope, found, review in rows]
    emit_json(data, "hooks") if as_json else render().hooks(data)


def _note(spec: Any, found: Any, review: Any, others: list[Any]) -> str | None:
    """What keeps installed hooks from recording, in a sentence; None when nothing does."""
    if others and any(found.events.values()):
        return _twice(spec, others[0])
    if found.short:
        return (f"{spec.title} kills these hooks before they can record: their timeout is too "
                f"short for {', '.join(found.short)} (Gemini CLI reads milliseconds). Run "
                f"'gitspace hooks install {spec.name}' again to fix it.")
    return review.note if review is not None and review.state != "trusted" else None


def hook(
    name: HARNESS,
    quiet_outside: Annotated[bool, typer.Option(help="Say nothing outside a workspace.")] = False,
    commit_transcript: Annotated[bool, typer.Option(help="Commit the transcript at turn end.")] = False,
) -> None:
    """What a harness's hooks run: one hook payload on stdin becomes ops (always exits 0)."""
    from ..harness.hook import main

    flags = ["--quiet-outside"] * quiet_outside + ["--commit-transcript"] * commit_transcript
    raise typer.Exit(main(["hook", name, *flags]))


def record() -> None:
    """Record one tool call of any harness, described by a JSON object on stdin: tool, args,
    agent, session, tool_use_id, paths (the files it wrote; omit for a shell command), cwd,
    phase (before | after | failed; default after)."""
    from ..harness.hook import main

    raise typer.Exit(main(["record"], cwd=str(here())))


def rewind(
    which: Annotated[Optional[str], typer.Argument(  # noqa: UP045
        help="A turn number (of the latest session, or of --session's), a turn's mark, or an "
             "op id.")] = None,
    session: Annotated[Optional[str], typer.Option(help=(  # noqa: UP045
        "The session whose turn the number is (its short form s-..., or any start or end of "
        "its id)."))] = None,
    every_file: Annotated[bool, typer.Option("--all", help=(
        "In a checkout of your own: every file as it was then, not only those the agent "
        "changed (your changes since are recorded first, then overwritten)."))] = False,
    as_json: JsonOpt = False,
) -> None:
    """Restore the files to the end of an earlier turn (or right after an op), as a new op.
    Without an argument, list the turns, each session's in its order."""
    from ..harness import rewind as rewinding
    from ..harness import turns

    with open_workspace() as ws:
        here = in_place(ws) is not None
        marks = turns.listed(ws, here)
        if which is None:
            data = [{"turn": t.number, "session": t.prefix, "session_short": t.session,
                     "checkpoint": t.mark, "commit": t.commit, "time": t.time,
                     "message": t.message} for t in marks]
            emit_json(data, "turns") if as_json else render().turns(data)
            return
        if which.isascii() and which.isdigit():  # ('²' is a digit to isdigit, not to int)
            turn = turns.pick(marks, int(which), session,
                              turns.latest(ws.repo, marks) if marks else None)
            target, named = turn.mark, turn.name
            if not as_json and session is None and len({t.prefix for t in marks}) > 1:
                echo(f"Turn {which} of the latest session, {turn.session} (turns are counted "
                     "in each session; --session picks another).", err=True)
        elif session is not None:
            usage("--session goes with a turn number: 'gitspace rewind N --session S'.")
        else:
            target, named = which, which
        if here:
            _rewind_in_place(ws, target, named, every_file, as_json)
        else:  # (a restore: every file, with --all or not)
            show_result(rewinding.rewind(ws, target), as_json)


def gc(
    keep_days: Annotated[float, typer.Option(help="Prune lines nothing was recorded on for this many days.")] = 30.0,  # noqa: E501
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Say what would go, change nothing.")] = False,  # noqa: E501
    auto: Annotated[bool, typer.Option("--auto", help="Only if no gc ran here in the last day (the background pass).")] = False,  # noqa: E501
) -> None:
    """Prune the lines recorded in your own checkout that your commits absorbed, or that are
    older than --keep-days, and pack what recording wrote (see 'gitspace hooks install')."""
    from ..harness.inplace import gc as linegc
    from ..storage.gitrepo import GitRepo

    repo = GitRepo.open(Path(state.directory))
    try:
        if auto and not linegc.due(repo):
            return
        with progress_shown(not auto):  # (no total: repacking is git's, and says nothing)
            progress.report(0, None, "pruning lines and packing what recording wrote")
            pruned, report = linegc.collect(repo, keep_days, dry_run)
        for p in pruned:
            echo(f"{'would prune' if dry_run else 'pruned'} {p.ref} ({p.why})")
        if report is None:
            return
        if report.turns:
            echo(f"pruned {len(report.turns)} turn mark(s) no line reaches")
        if not pruned:
            echo("Nothing to prune: every line holds work your commits do not.")
        echo("Packed the objects recording wrote." if report.packed else
             "Could not pack the objects recording wrote ('git repack -d' failed).")
    finally:
        repo.close()


def _rewind_in_place(ws: Any, target: str, named: str, every_file: bool, as_json: bool) -> None:
    from ..harness.events import Options
    from ..harness.inplace import commands

    taken = commands.rewind(ws.repo, target, every_file,
                            Options(max_file_bytes=ws.max_file_bytes))
    for note in taken.notes:
        echo(note, err=as_json)
    if as_json:
        emit_json({"op": taken.op, "op_short": ids.op(taken.op) if taken.op else None,
                   "turn": named, "files": taken.files, "took_back": taken.took_back}, "taken")
    elif taken.op is None:
        echo(f"unchanged: your files already are as {named} left them.")
    else:
        echo(f"Rewound {'every file' if every_file else 'the files the agent changed'} to "
             f"{named} ({', '.join(taken.files[:10])}) as op {ids.op(taken.op)}; your index "
             "and HEAD are as they were.")
