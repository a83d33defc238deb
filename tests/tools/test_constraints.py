"""Constraint scripts: declarations, discovery, and the run contract, with real subprocesses."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from gitspace import progress
from gitspace.errors import BadArguments, ConstraintError
from gitspace.tools.script_header import DeclarationError, Script, discover, parse_script, tool_definition
from gitspace.tools.script_runner import run

ARGS = (
    '{"type": "object", "properties": {"path": {"type": "string"}, '
    '"limit": {"type": "integer", "minimum": 1, "default": 5}}, '
    '"required": ["path"], "additionalProperties": false}'
)
FIELDS = {
    "description": "Echo the arguments back. Call this FIRST.",
    "example": '{"path": "notes/a.md"}',
    "mutates": "false",
    "args": ARGS,
}


def header(name: str, **changes: str | None) -> str:
    """A '# ' header block; a change of None drops that field."""
    leader = "# "
    fields: dict[str, str | None] = {"name": name, **FIELDS, **changes}
    lines = [f"{leader}---gitspace---"]
    lines += [f"{leader}{key}: {value}" for key, value in fields.items() if value is not None]
    lines.append(f"{leader}---")
    return "\n".join(lines) + "\n"


def write(folder: Path, filename: str, text: str, executable: bool = False) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / filename
    path.write_text(text)
    path.chmod(0o755 if executable else 0o644)
    return path


def python_script(folder: Path, name: str, body: str, **changes: str | None) -> Script:
    path = write(folder, f"{name}.py", header(name, **changes) + body)
    script = parse_script(path)
    assert script is not None
    return script


def shell_script(folder: Path, name: str, body: str, **changes: str | None) -> Script:
    text = "#!/bin/sh\n" + header(name, **changes) + body
    script = parse_script(write(folder, f"{name}.sh", text, executable=True))
    assert script is not None
    return script


ECHO = "import json, sys\nprint(json.dumps({'got': json.load(sys.stdin)}, sort_keys=True))\n"


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    return tmp_path / "ws" / "constraints"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "ws").mkdir(exist_ok=True)
    return tmp_path / "ws"


# ---------------------------------------------------------------------------------------------
# declarations


def test_python_manifest(folder: Path) -> None:
    script = python_script(folder, "echo", ECHO, timeout="2.5")
    assert script == Script(
        name="echo",
        path=folder / "echo.py",
        description="Echo the arguments back. Call this FIRST.",
        example={"path": "notes/a.md"},
        args_schema=json.loads(ARGS),
        mutates=False,
        timeout=2.5,
        origin="workspace",
        overrides=False,
    )


def test_shell_manifest_defaults_timeout_and_reads_mutates(folder: Path) -> None:
    script = shell_script(folder, "touch_it", "cat\n", mutates="true")
    assert (script.name, script.mutates, script.timeout) == ("touch_it", True, 10.0)


def test_slash_leader_and_continuation_lines(folder: Path) -> None:
    text = (
        "// ---gitspace---\n"
        "// name: tally\n"
        "// description: Count entries.\n"
        "//   Call this FIRST.\n"
        '// example: {"path":\n'
        '//   "x"}\n'
        "//\n"
        "// mutates: false\n"
        '// args: {"type": "object",\n'
        '//    "properties": {"path": {"type": "string"}}}\n'
        "// ---\n"
        "console.log('{}')\n"
    )
    script = parse_script(write(folder, "tally.js", text))
    assert script is not None
    assert script.description == "Count entries. Call this FIRST."
    assert script.example == {"path": "x"}
    assert script.args_schema == {"type": "object", "properties": {"path": {"type": "string"}}}


def test_header_may_start_after_other_lines_and_has_no_header_means_helper(folder: Path) -> None:
    text = "#!/usr/bin/env python3\n'''Docs.'''\nimport sys\n" + header("late") + ECHO
    assert parse_script(write(folder, "late.py", text)) is not None
    assert parse_script(write(folder, "helper.py", "def f():\n    return 1\n")) is None
    beyond = "\n" * 80 + header("far")
    assert parse_script(write(folder, "far.py", beyond)) is None


BAD_CASES = [
    ("noname.py", header("noname").replace("# name: noname\n", ""), "name", "'name' is required"),
    ("other.py", header("peek"), "name", "field 'name' is 'peek' but the file is named 'other.py'"),
    ("Bad.py", header("Bad"), "name", "field 'name' is 'Bad', which is not a valid tool name"),
    ("nodesc.py", header("nodesc", description=""), "description", "field 'description' is"),
    ("long.py", header("long", description="x" * 2001), "description", "2,001 characters long"),
    ("noex.py", header("noex", example=None), "example", "field 'example' is required"),
    ("badjson.py", header("badjson", example="{path: 1}"), "example", "is not valid JSON: "),
    ("notobj.py", header("notobj", example="[1]"), "example", "must be a JSON object"),
    (
        "misfit.py",
        header("misfit", example='{"path": 3}'),
        "example",
        "field 'example' does not fit field 'args': example.path must be a string, got an integer.",
    ),
    ("mut.py", header("mut", mutates="yes"), "mutates", "must be true or false, got 'yes'"),
    ("nomut.py", header("nomut", mutates=None), "mutates", "field 'mutates' is required"),
    ("noargs.py", header("noargs", args=None), "args", "field 'args' is required"),
    ("argstr.py", header("argstr", args='{"type": "string"}'), "args", '"type": "object"'),
    (
        "argkw.py",
        header("argkw", args='{"type": "object", "patternProperties": {}}'),
        "args",
        "field 'args' is not a usable schema: args uses the unsupported keyword "
        "'patternProperties'",
    ),
    ("extra.py", header("extra", author="me"), "author", "unknown field 'author'"),
    ("zero.py", header("zero", timeout="0"), "timeout", "above 0 and at most 300, got '0'."),
    ("big.py", header("big", timeout="301"), "timeout", "at most 300, got '301'."),
    ("word.py", header("word", timeout="soon"), "timeout", "got 'soon'."),
    ("inf.py", header("inf", timeout="inf"), "timeout", "got 'inf'."),
    (
        "leader.py",
        "# ---gitspace---\n# name: leader\n// description: x\n# ---\n",
        "header",
        "line 3 of the ---gitspace--- block does not start with the comment leader '# '",
    ),
    (
        "open.sh",
        "# ---gitspace---\n# name: open\n# description: x\n",
        "header",
        "the ---gitspace--- block that starts on line 1 has no closing '# ---' line",
    ),
    (
        "twice.py",
        header("twice").replace("# ---\n", "# name: twice\n# ---\n"),
        "name",
        "field 'name' is given twice",
    ),
    ("nocolon.py", "# ---gitspace---\n# name twice\n# ---\n", "header", "is not 'key: value'"),
]


@pytest.mark.parametrize(("filename", "text", "field", "fragment"), BAD_CASES)
def test_bad_declaration_names_file_and_field_and_others_load(
    folder: Path, filename: str, text: str, field: str, fragment: str
) -> None:
    python_script(folder, "good", ECHO)
    write(folder, filename, text)
    catalog = discover(None, folder)
    assert list(catalog.scripts) == ["good"]
    assert len(catalog.errors) == 1
    error = catalog.errors[0]
    assert isinstance(error, DeclarationError)
    assert error.field == field
    assert error.path == folder / filename
    assert error.message.startswith(f"constraints/{filename}: ")
    assert fragment in error.message
    assert error.hint


def test_parse_script_raises_for_a_broken_header(folder: Path) -> None:
    with pytest.raises(ConstraintError) as caught:
        parse_script(write(folder, "look.py", header("look", example="{nope")))
    assert caught.value.message.startswith("constraints/look.py: field 'example' is not valid JSON")


# ---------------------------------------------------------------------------------------------
# discovery


def test_discover_skips_helpers_hidden_folders_and_symlinks(tmp_path: Path, folder: Path) -> None:
    python_script(folder, "echo", ECHO)
    write(folder, "_private.py", header("_private"))
    write(folder, ".hidden.py", header("hidden"))
    write(folder, "util.py", "VALUE = 1\n")
    python_script(folder / "nested", "deep", ECHO)
    outside = write(tmp_path / "elsewhere", "linked.py", header("linked") + ECHO)
    (folder / "linked.py").symlink_to(outside)
    catalog = discover(None, folder)
    assert list(catalog.scripts) == ["echo"]
    assert catalog.errors == []
    assert catalog.overridden == []


def test_relative_folder_still_runs_from_the_workspace(
    folder: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    python_script(folder, "echo", ECHO)
    monkeypatch.chdir(folder.parent)
    script = discover(None, Path("constraints")).scripts["echo"]
    assert script.path == folder / "echo.py"
    elsewhere = workspace / "sub"
    elsewhere.mkdir()
    assert run(script, {"path": "a"}, cwd=elsewhere, cache_dir=None).ok


def test_discover_missing_folders_is_empty(tmp_path: Path) -> None:
    catalog = discover(tmp_path / "absent", None)
    assert (catalog.scripts, catalog.errors, catalog.overridden) == ({}, [], [])


def test_same_name_twice_in_one_folder_loads_neither(folder: Path) -> None:
    python_script(folder, "peek", ECHO)
    shell_script(folder, "peek", "cat\n")
    python_script(folder, "zeta", ECHO)
    catalog = discover(None, folder)
    assert list(catalog.scripts) == ["zeta"]
    assert [e.message for e in catalog.errors] == [
        "constraints/peek.py: 2 scripts in constraints/ are named 'peek' (peek.py, peek.sh); "
        "none of them is loaded.",
        "constraints/peek.sh: 2 scripts in constraints/ are named 'peek' (peek.py, peek.sh); "
        "none of them is loaded.",
    ]


def test_workspace_script_overrides_builtin_and_is_reported(tmp_path: Path, folder: Path) -> None:
    builtin = tmp_path / "pkg" / "constraints"
    python_script(builtin, "peek", ECHO, description="Built-in peek.")
    python_script(builtin, "alpha", ECHO)
    python_script(folder, "peek", ECHO, description="Workspace peek.")
    python_script(folder, "beta", ECHO)
    catalog = discover(builtin, folder)
    assert list(catalog.scripts) == ["alpha", "beta", "peek"]
    assert catalog.overridden == ["peek"]
    peek = catalog.scripts["peek"]
    assert (peek.description, peek.origin, peek.overrides) == ("Workspace peek.", "workspace", True)
    alpha = catalog.scripts["alpha"]
    assert (alpha.origin, alpha.overrides) == ("builtin", False)


def test_tool_definition(folder: Path) -> None:
    script = python_script(folder, "echo", ECHO, mutates="true")
    assert tool_definition(script) == {
        "name": "echo",
        "description": "Echo the arguments back. Call this FIRST.\n\n"
        'Example: {"path": "notes/a.md"}',
        "input_schema": json.loads(ARGS),
        "mutates": True,
    }


# ---------------------------------------------------------------------------------------------
# running


def test_args_arrive_as_json_with_defaults(folder: Path, workspace: Path) -> None:
    script = python_script(folder, "echo", ECHO)
    result = run(script, {"path": "é.md"}, cwd=workspace, cache_dir=None)
    assert result.ok
    assert (result.exit_code, result.timed_out, result.truncated) == (0, False, False)
    assert result.text == '{"got": {"limit": 5, "path": "\\u00e9.md"}}\n'
    assert result.message() == result.text
    assert result.stderr_tail == ""


def test_shell_script_gets_the_same_json(folder: Path, workspace: Path) -> None:
    script = shell_script(folder, "cat_args", "cat\n")
    result = run(script, {"path": "a", "limit": 2}, cwd=workspace, cache_dir=None)
    assert json.loads(result.text) == {"path": "a", "limit": 2}


def test_script_runs_in_the_workspace(folder: Path, workspace: Path) -> None:
    script = python_script(folder, "where", "import os\nprint(os.getcwd())\n")
    result = run(script, {"path": "a"}, cwd=workspace, cache_dir=None)
    assert Path(result.text.strip()).resolve() == workspace.resolve()


def test_output_is_capped_with_a_note(folder: Path, workspace: Path) -> None:
    script = python_script(folder, "loud", "import sys\nsys.stdout.write('x' * 100_000)\n")
    result = run(script, {"path": "a"}, cwd=workspace, cache_dir=None)
    assert result.ok and result.truncated
    assert result.text == "x" * 16000 + "\n[output truncated: 84,000 more characters not shown]"
    small = run(script, {"path": "a"}, cwd=workspace, cache_dir=None, output_cap=10)
    assert small.text == "xxxxxxxxxx\n[output truncated: 99,990 more characters not shown]"


def test_output_beyond_the_memory_cap_is_counted_not_kept(folder: Path, workspace: Path) -> None:
    body = "import sys\nfor _ in range(3):\n    sys.stdout.write('y' * (1 << 20))\n"
    script = python_script(folder, "flood", body)
    result = run(script, {"path": "a"}, cwd=workspace, cache_dir=None, output_cap=5)
    hidden = 3 * (1 << 20) - 5
    assert result.text == f"yyyyy\n[output truncated: {hidden:,} more characters not shown]"


def test_large_input_is_fed_without_deadlock(folder: Path, workspace: Path) -> None:
    body = "import json, sys\nprint(len(json.load(sys.stdin)['path']))\n"
    script = python_script(folder, "size", body)
    result = run(script, {"path": "p" * 500_000}, cwd=workspace, cache_dir=None)
    assert result.text == "500000\n"


def _alive(pid: int) -> bool:
    # A killed child may linger as a zombie until its new parent reaps it; that is dead too.
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _wait_dead(pid: int, seconds: float = 3.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


def test_timeout_kills_the_whole_group(folder: Path, workspace: Path) -> None:
    body = "sleep 30 &\necho $! > child.pid\necho started\nsleep 30\n"
    script = shell_script(folder, "sleepy", body, timeout="1")
    result = run(script, {"path": "a"}, cwd=workspace, cache_dir=None)
    assert result.timed_out and not result.ok
    assert 0.9 <= result.duration < 5
    assert result.text == "started\n"
    assert result.message() == "sleepy timed out after 1 s and was stopped."
    child = int((workspace / "child.pid").read_text())
    assert _wait_dead(child)


def test_background_child_does_not_hold_up_a_finished_script(folder: Path, workspace: Path) -> None:
    body = "sleep 30 &\necho $! > child.pid\necho done\n"
    script = shell_script(folder, "quick", body, timeout="20")
    result = run(script, {"path": "a"}, cwd=workspace, cache_dir=None)
    assert result.ok and not result.timed_out
    assert result.text == "done\n"
    assert result.duration < 5
    assert _wait_dead(int((workspace / "child.pid").read_text()))


def test_nonzero_exit_carries_code_and_stderr_tail(folder: Path, workspace: Path) -> None:
    body = "import sys\nsys.stderr.write('z' * 5000 + 'no such path: a\\n')\nsys.exit(2)\n"
    script = python_script(folder, "fails", body)
    result = run(script, {"path": "a"}, cwd=workspace, cache_dir=None)
    assert (result.ok, result.exit_code, result.timed_out) == (False, 2, False)
    assert len(result.stderr_tail) == 2000
    assert result.stderr_tail.endswith("z" * 100 + "no such path: a\n")
    assert result.message() == f"fails exited with code 2: {'z' * 1984}no such path: a"


def test_failure_without_stderr_and_death_by_signal(folder: Path, workspace: Path) -> None:
    quiet = shell_script(folder, "quiet", "exit 3\n")
    assert run(quiet, {"path": "a"}, cwd=workspace, cache_dir=None).message() == (
        "quiet exited with code 3 and printed no error message."
    )
    killed = shell_script(folder, "killed", "kill -9 $$\n")
    result = run(killed, {"path": "a"}, cwd=workspace, cache_dir=None)
    assert result.exit_code == -9
    assert result.message() == "killed was killed by SIGKILL and printed no error message."


def test_environment_is_scrubbed(
    folder: Path, workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
    monkeypatch.setenv("GIT_DIR", "/elsewhere/.git")
    monkeypatch.setenv("SOME_TOKEN", "t0ken")
    body = "import json, os\nprint(json.dumps(dict(os.environ)))\n"
    script = python_script(folder, "env", body)
    cache = tmp_path / "cache"
    extra = {"GITSPACE_AGENT": "maze-runner", "GITSPACE_WORKSPACE": "/spoofed"}
    result = run(script, {"path": "a"}, cwd=workspace, cache_dir=cache, extra_env=extra)
    env = json.loads(result.text)
    assert "ANTHROPIC_API_KEY" not in env
    assert "GIT_DIR" not in env
    assert "SOME_TOKEN" not in env
    assert "sk-ant-secret" not in result.text
    assert env["GITSPACE_WORKSPACE"] == str(workspace)
    assert env["GITSPACE_TOOL"] == "env"
    assert env["GITSPACE_CACHE_DIR"] == str(cache)
    assert env["GITSPACE_AGENT"] == "maze-runner"
    no_cache = json.loads(run(script, {"path": "a"}, cwd=workspace, cache_dir=None).text)
    assert "GITSPACE_CACHE_DIR" not in no_cache


def test_non_executable_python_runs_with_our_interpreter(folder: Path, workspace: Path) -> None:
    script = python_script(folder, "which", "import sys\nprint(sys.executable)\n")
    assert not os.access(script.path, os.X_OK)
    result = run(script, {"path": "a"}, cwd=workspace, cache_dir=None)
    assert result.text == sys.executable + "\n"


def test_non_executable_shell_runs_with_bin_sh(folder: Path, workspace: Path) -> None:
    path = write(folder, "plain.sh", header("plain") + "echo plain\n")
    script = parse_script(path)
    assert script is not None
    assert run(script, {"path": "a"}, cwd=workspace, cache_dir=None).text == "plain\n"


def test_other_non_executable_file_is_refused(folder: Path, workspace: Path) -> None:
    script = parse_script(write(folder, "tally.rb", header("tally") + "puts 1\n"))
    assert script is not None
    with pytest.raises(ConstraintError) as caught:
        run(script, {"path": "a"}, cwd=workspace, cache_dir=None)
    assert caught.value.message == "constraints/tally.rb is not executable; chmod +x it."


def test_executable_without_interpreter_line_is_an_error(folder: Path, workspace: Path) -> None:
    path = write(folder, "binary.bin", header("binary") + "\x00\x01", executable=True)
    script = parse_script(path)
    assert script is not None
    with pytest.raises(ConstraintError) as caught:
        run(script, {"path": "a"}, cwd=workspace, cache_dir=None)
    assert caught.value.message.startswith("constraints/binary.bin could not be started: ")


def test_bad_args_are_refused_before_the_script_starts(folder: Path, workspace: Path) -> None:
    body = "open('started.marker', 'w').close()\n"
    script = python_script(folder, "marks", body)
    for bad in ({}, {"path": 1}, {"path": "a", "limit": 0}, {"path": "a", "lines": 3}):
        with pytest.raises(BadArguments) as caught:
            run(script, bad, cwd=workspace, cache_dir=None)
        assert caught.value.hint == 'A valid call looks like: {"path": "notes/a.md"}'
    assert not (workspace / "started.marker").exists()
    run(script, {"path": "a"}, cwd=workspace, cache_dir=None)
    assert (workspace / "started.marker").exists()  # the marker proves the check above


def test_bad_args_message_names_the_field(folder: Path, workspace: Path) -> None:
    script = python_script(folder, "echo", ECHO)
    with pytest.raises(BadArguments) as caught:
        run(script, {"path": "a", "limit": True}, cwd=workspace, cache_dir=None)
    assert caught.value.message == "args.limit must be an integer of at least 1, got a boolean."


# ---------------------------------------------------------------------------------------------
# the progress channel

REPORTER = r'''
if [ "$GITSPACE_PROGRESS" = 1 ]; then echo "someone listens"; else echo "nobody listens"; fi
echo "plain before" >&2
printf 'gitspace:progress 0/100 starting\n' >&2
printf 'gitspace:prog' >&2; sleep 0.05; printf 'ress 50/100 half way there\n' >&2
printf 'gitspace:progress 100/100\ngitspace:log warning 3 lines skipped\n' >&2
printf 'gitspace:progress 7\n' >&2
printf 'gitspace:progress lots/100 not a number\ngitspace:log loud nope\ngitspace:other x\n' >&2
printf 'gitspace:progress 1/0 a zero total\n' >&2
printf 'gitspace:log info the end without a newline' >&2
exit 3
'''


def test_progress_lines_on_stderr_are_reported_as_they_arrive(folder: Path, workspace: Path) -> None:
    script = shell_script(folder, "reporter", REPORTER)
    heard: list[progress.ProgressEvent] = []
    with progress.listening(heard.append):
        result = run(script, {"path": "a"}, cwd=workspace, cache_dir=None)
    assert [(e.kind, e.done, e.total, e.message, e.level) for e in heard] == [
        ("progress", 0, 100, "starting", "info"),
        ("progress", 50, 100, "half way there", "info"),  # a line split between two writes
        ("progress", 100, 100, "", "info"),
        ("log", 0, None, "3 lines skipped", "warning"),
        ("progress", 7, None, "", "info"),  # no total: a count of units done
        ("log", 0, None, "the end without a newline", "info"),
    ]
    assert result.text == "someone listens\n"
    # The channel's lines are not part of the error; malformed ones stay plain stderr.
    assert result.message() == (
        "reporter exited with code 3: plain before\ngitspace:progress lots/100 not a number\n"
        "gitspace:log loud nope\ngitspace:other x\ngitspace:progress 1/0 a zero total")


def test_without_a_listener_the_channel_costs_nothing_and_says_nobody_listens(
        folder: Path, workspace: Path) -> None:
    script = shell_script(folder, "reporter", REPORTER)
    result = run(script, {"path": "a"}, cwd=workspace, cache_dir=None)
    assert result.text == "nobody listens\n"
    assert "half way" not in result.message() and "plain before" in result.message()


def test_a_listener_that_fails_never_fails_the_call(folder: Path, workspace: Path) -> None:
    def broken(event: progress.ProgressEvent) -> None:
        raise RuntimeError("the client went away")

    script = shell_script(folder, "reporter", REPORTER)
    with progress.listening(broken):
        assert run(script, {"path": "a"}, cwd=workspace, cache_dir=None).exit_code == 3


def test_split_worklog_and_a_first_index_report_their_progress(ws_root: Path) -> None:
    from conftest import REPO

    import gitspace

    sys.path.insert(0, str(REPO / "benchmarks"))
    import gen_worklog

    with gitspace.init(ws_root) as ws:
        gen_worklog.write(ws_root / "big.jsonl", entries=3_000)
        size = (ws_root / "big.jsonl").stat().st_size
        heard: list[progress.ProgressEvent] = []
        with progress.listening(heard.append):
            assert ws.call("peek", {"path": "big.jsonl"}).ok  # its first index
        indexing = [(e.done, e.total) for e in heard]
        assert indexing[-1] == (size, size) and all(t == size for _, t in indexing)
        assert [d for d, _ in indexing] == sorted(d for d, _ in indexing)
        assert heard[0].message == "bytes of big.jsonl indexed"
        heard.clear()
        with progress.listening(heard.append):
            assert ws.call("peek", {"path": "big.jsonl"}).ok
        assert heard == []  # indexed already: nothing to report
        with progress.listening(heard.append):
            assert ws.call("split_worklog", {"path": "big.jsonl"}).ok
        steps = [e.done for e in heard]
        assert 10 <= len(steps) <= 21 and steps == sorted(steps) and steps[-1] == size
        assert heard[0].message == "bytes of big.jsonl copied into segments"
