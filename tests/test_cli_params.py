"""cli/params.py: a read's command line read without typer says what typer would, or nothing.

Every case runs both readings: ``params.parse`` and typer itself, on a command built by
``params.for_typer`` from the same declaration. Where ``parse`` answers, typer must have called
the command with exactly those values; where typer refuses or does something else (help, a
callback), ``parse`` must have answered None, so typer runs it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import typer
from typer.main import get_command

from gitspace.cli import params, reads, shared
from gitspace.cli.options import Color


def _through_typer(command: params.Command, args: list[str]) -> dict[str, Any] | None:
    """The values typer calls ``command`` with for ``args``; None when it does not call it."""
    got: dict[str, Any] = {}

    def record(**values: Any) -> None:
        got.update(values, called=True)

    record.__gitspace_params__ = command.__gitspace_params__  # type: ignore[attr-defined]
    record.__defaults__ = command.__defaults__  # the declaration's defaults, as typer reads them
    app = typer.Typer()
    app.command()(params.for_typer(record))
    try:
        get_command(app).main(args, prog_name="gitspace", standalone_mode=False)
    except (typer.Exit, Exception):  # click's usage errors, an eager callback's exit
        return None
    return {k: v for k, v in got.items() if k != "called"} if got.get("called") else None


CASES: list[tuple[params.Command, list[str], bool]] = [  # (command, args, parse must answer)
    (reads.log, [], True),
    (reads.log, ["-n", "5"], True),
    (reads.log, ["--max-count=7", "--skip", "3"], True),
    (reads.log, ["HEAD~1", "--agent", "bob", "--session=s-1", "--tool", "create"], True),
    (reads.log, ["--source", "harness", "--since", "2 days ago", "--until", "2025-01-31"], True),
    (reads.log, ["--all", "--json", "--format", "{op_short} {tool}"], True),
    (reads.log, ["-n", "3", "-n", "9"], True),  # the last one given wins, as in click
    (reads.log, ["--agent=", "main"], True),
    (reads.log, ["-n5"], False),
    (reads.log, ["-n", "0"], False),
    (reads.log, ["-n", "many"], False),
    (reads.log, ["--skip", "-1"], False),
    (reads.log, ["--source", "nope"], False),
    (reads.log, ["--source", "Harness"], False),
    (reads.log, ["--agent"], False),
    (reads.log, ["--agent", "--all"], False),
    (reads.log, ["a", "b"], False),
    (reads.log, ["--bogus"], False),
    (reads.log, ["-h"], False),
    (reads.log, ["--help"], False),
    (reads.log, ["--all=yes"], False),
    (reads.log, ["-"], False),
    (reads.show, ["HEAD"], True),
    (reads.show, ["--stat", "main", "--json"], True),
    (reads.show, [], False),
    (reads.show, ["a", "b"], False),
    (reads.diff, [], True),
    (reads.diff, ["cp-1"], True),
    (reads.diff, ["cp-1", "cp-2", "--stat"], True),
    (reads.diff, ["a", "b", "c"], False),
    (reads.status, [], True),
    (reads.status, ["--json"], True),
    (reads.status, ["--json", "x"], False),
    (reads.status, ["--no-json"], False),
    (shared.global_options, [], True),
    (shared.global_options, ["-C", "/tmp/x", "--agent", "a", "--color", "never", "--no-pager"],
     True),
    (shared.global_options, ["--color=always"], True),
    (shared.global_options, ["--color", "sometimes"], False),
    (shared.global_options, ["--version"], False),
    (shared.global_options, ["-C"], False),
    (shared.global_options, ["-C", ""], False),
]


@pytest.mark.parametrize(("command", "args", "answers"), CASES,
                         ids=[f"{c.__name__} {' '.join(a)}" for c, a, _ in CASES])
def test_parse_reads_a_command_line_as_typer_does_or_leaves_it_to_typer(
        command: params.Command, args: list[str], answers: bool) -> None:
    parsed = params.parse(command, args)
    assert (parsed is not None) == answers, parsed
    if parsed is not None:
        assert parsed == _through_typer(command, args)


def test_values_have_the_types_typer_gives() -> None:
    log = params.parse(reads.log, ["-n", "5", "--source", "tool"])
    assert log is not None and log["n"] == 5 and log["source"] is reads.Source.tool
    given = params.parse(shared.global_options, ["-C", "sub", "--color", "never"])
    assert given is not None and given["directory"] == Path("sub") and given["color"] is Color.never


def test_every_parameter_of_a_command_is_declared() -> None:
    def undeclared(a: int = 1, b: int = 2) -> None: ...

    with pytest.raises(AssertionError, match="declares"):
        params.declare(a=params.Option())(undeclared)
