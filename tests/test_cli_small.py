"""The smaller things a new user tripped over, each as they met it: a missing --returns file, a
tool name one letter off, the help's list of commands, what --version prints, a listing piped
into another program, and the order of ops made in the same second on several branches."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import gitspace_cli

import gitspace


@pytest.fixture
def ws_dir(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    gitspace.init(root, agent="a").close()
    return root


def test_a_missing_returns_file_is_said_to_be_missing(ws_dir: Path) -> None:
    out = gitspace_cli(ws_dir, "run", "x", "--policy", "maze", "--returns", "schema.json")
    assert out.returncode == 1
    assert f"There is no file schema.json ({ws_dir / 'schema.json'})" in out.stderr
    assert "not valid JSON" not in out.stderr and "is not one (" not in out.stderr
    bad = gitspace_cli(ws_dir, "run", "x", "--policy", "maze", "--returns", '{"type": bad}')
    assert bad.returncode == 1 and "the --returns text is not one" in bad.stderr


def test_a_tool_one_letter_off_gets_a_did_you_mean(ws_dir: Path) -> None:
    out = gitspace_cli(ws_dir, "call", "crate", "--args", "{}")
    assert out.returncode == 1 and "There is no tool named 'crate'." in out.stderr
    assert "Did you mean 'create'" in out.stderr


def test_help_groups_the_commands_and_hides_the_hooks_own() -> None:
    from gitspace.cli.commands import COMMANDS, GROUPS, INTERNAL, SECTIONS

    helped = gitspace_cli(".", "--help").stdout
    listed = re.findall(r"^  ([a-z]+)  ", helped, re.M)
    every = [name for name, _ in COMMANDS] + [name for name, _ in GROUPS]
    assert sorted(listed) == sorted(n for n in every if n not in INTERNAL)  # each once
    assert "hook" not in listed and "record" not in listed
    for title, _ in SECTIONS:
        assert f"\n{title}:\n" in helped
    assert "\nCommands:\n" not in helped
    assert sorted(n for _, names in SECTIONS for n in names) == sorted(
        n for n in every if n not in INTERNAL)  # no command left out of the sections
    assert gitspace_cli(".", "hook", "-h").returncode == 0  # still there for the harnesses


def test_version_prints_the_version_and_verify_the_formats(ws_dir: Path) -> None:
    version = gitspace_cli(ws_dir, "--version")
    assert re.fullmatch(r"gitspace \d+\.\d+\.\d+ \(JSON output schema \d+, ledger formats "
                        r"1-\d+: [^)]*\)\n", version.stdout), version.stdout
    verified = gitspace_cli(ws_dir, "verify").stdout
    assert "Read as ledger formats 1-" in verified


def test_listings_into_a_pipe_are_not_padded(ws_dir: Path) -> None:
    tools = gitspace_cli(ws_dir, "tools").stdout
    assert "gitspace call create --args" in tools
    padded = [line for line in tools.splitlines() if line != line.rstrip()]
    assert not padded, padded[:3]


def test_every_branch_lists_ops_of_one_second_in_the_order_they_were_made(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    with gitspace.init(root, agent="a") as ws:
        made = []
        for call in (("create", {"path": "base.md", "file_text": "b\n"}),
                     ("branch", {"name": "zz", "switch": True}),
                     ("create", {"path": "z1.md", "file_text": "1\n"}),
                     ("switch", {"name": "main"}),
                     ("create", {"path": "m1.md", "file_text": "1\n"}),
                     ("branch", {"name": "aa", "switch": True}),
                     ("create", {"path": "a1.md", "file_text": "1\n"}),
                     ("create", {"path": "a2.md", "file_text": "1\n"})):
            result = ws.call(*call)
            assert result.ok, result.text
            if result.op and call[0] == "create":
                made.append(result.op[-8:])
    listed = gitspace_cli(root, "log", "--all", "--format", "{op_short} {tool}").stdout.split()
    ops = [listed[i] for i in range(0, len(listed), 2) if listed[i + 1] == "create"]
    assert ops == made[::-1], (ops, made)  # a1 (a child of m1) is above m1, whatever the clock


PROBE = ("import runpy, sys\nsys.argv = ['gitspace', *sys.argv[1:]]\ntry:\n"
         "    runpy.run_module('gitspace', run_name='__main__')\nfinally:\n"
         "    print('RICH' if 'rich' in sys.modules else 'PLAIN', file=sys.stderr)\n")


@pytest.mark.parametrize("args", [
    ["call", "create", "--args", '{"path": "a :smile: [b]x[/b].md", "file_text": "x\\n"}'],
    ["call", "view", "--args", '{"path": "nowhere :x: [b].md"}'], ["undo"],
    ["restore", "[red]:smile:"]])
def test_a_result_or_an_error_into_a_pipe_says_what_rich_says_without_importing_it(
        ws_dir: Path, args: list[str]) -> None:
    # Into a pipe nothing is coloured, so rich (a third of a command's start) is not imported;
    # on a terminal with colour the same words come through rich, and neither turns an emoji
    # code or markup from history into anything else.
    import os
    import shutil
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("GITSPACE_AGENT", "NO_COLOR")}
    runs = {}
    for colour in ("never", "always"):
        root = ws_dir.parent / f"ws-{colour}"
        shutil.copytree(ws_dir, root, symlinks=True)
        argv = ["-C", str(root), *(["--color", "always"] if colour == "always" else []), *args]
        runs[colour] = subprocess.run([sys.executable, "-c", PROBE, *argv], capture_output=True,
                                      text=True, env=env)
    plain, coloured = runs["never"], runs["always"]
    *said, imported = plain.stderr.splitlines()
    assert imported == "PLAIN", plain.stderr
    *rich_said, imported = coloured.stderr.splitlines()
    assert imported == "RICH", coloured.stderr
    strip = re.compile(r"\x1b\[[0-9;]*m")
    ids = re.compile(r"\b[0-9A-Z]{8}\b|\b[0-9A-Z]{26}\b|\b[0-9a-f]{12}\b")
    assert ids.sub("ID", strip.sub("", coloured.stdout)) == ids.sub("ID", plain.stdout)
    assert [strip.sub("", line) for line in rich_said] == said
    assert ":smile:" in plain.stdout + plain.stderr or ":x:" in plain.stderr or args == ["undo"]
    assert coloured.returncode == plain.returncode
