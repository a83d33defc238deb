"""The command that replays a branch's ops to check them, or onto another base."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from .common import JsonOpt, emit_json, open_workspace, progress_shown, render


def replay(
    branch: Annotated[Optional[str], typer.Argument(help="Branch or revision (default: the current branch).")] = None,  # noqa: UP045,E501
    start: Annotated[Optional[str], typer.Option("--from", help="Replay only the ops this revision does not contain (those after it, when it is on the branch).")] = None,  # noqa: UP045,E501
    onto: Annotated[Optional[str], typer.Option("--onto", help="Re-run the ops on this revision instead, into a new branch.")] = None,  # noqa: UP045,E501
    new_branch: Annotated[Optional[str], typer.Option("--branch", help="With --onto: the branch to create.")] = None,  # noqa: UP045,E501
    no_scripts: Annotated[bool, typer.Option("--no-scripts", help="Do not run the workspace's constraint scripts; count their ops as not verified.")] = False,  # noqa: E501
    allow_empty: Annotated[bool, typer.Option("--allow-empty", help="Succeed even when no op was re-executed (by default that fails on a branch that has ops).")] = False,  # noqa: E501
    as_json: JsonOpt = False,
) -> None:
    """Re-run a branch's ops in a scratch copy; exit 1 at the first that does not rebuild its commit.

    Replay runs the constraint scripts recorded in the branch with your privileges: replay only
    branches you would run code from, or pass --no-scripts.
    """
    from ..core import lookup
    from ..errors import GitspaceError
    from ..replay.engine import BadRange
    from ..replay.engine import replay as run_replay
    from ..replay.onto import replay_onto
    from ..replay.scratch import BadNewBranch

    with open_workspace() as ws:
        def rev(name: str, hint: str) -> str:
            try:
                return lookup.resolve(ws.repo, name).commit
            except GitspaceError as e:
                raise typer.BadParameter(e.message, param_hint=hint) from None

        tip = rev(branch or ws.repo.head_branch() or "HEAD", "BRANCH")
        base = rev(start, "--from") if start else None
        target = rev(onto, "--onto") if onto else None
        if (target is None) != (new_branch is None):
            raise typer.BadParameter("--onto and --branch go together: --onto REV --branch NEW.",
                                     param_hint="--onto/--branch")
        if target is not None and no_scripts:
            raise typer.BadParameter("--onto re-runs every op to build the new branch, so it "
                                     "cannot leave scripts unrun; drop --no-scripts.",
                                     param_hint="--no-scripts")
        with progress_shown():
            try:
                if target is not None and new_branch is not None:
                    report = replay_onto(ws, tip, target, new_branch, base)
                else:
                    report = run_replay(ws, tip, base, scripts=not no_scripts,
                                        allow_empty=allow_empty)
            except BadRange as e:
                raise typer.BadParameter(str(e), param_hint=e.option) from None
            except BadNewBranch as e:
                raise typer.BadParameter(str(e), param_hint="--branch") from None
    if as_json:
        from ..replay.summary import sentences

        data = report.as_json()
        emit_json({**data, "summary": sentences(data)}, "replay")
    else:
        render().replay_report(report)
    if not report.ok:
        raise typer.Exit(1)
