"""Constraint scripts: discovering them, checking their declarations, and running them.

Invariant: a script is exposed to an agent only if its declaration is complete and valid, it is
run only with arguments that fit its declared schema, and what comes back is bounded (output
capped, memory capped, time capped, the whole process group killed on timeout). A bad declaration
is an error that names the file and the field; it never stops the other scripts from loading.

The header format (the public contract for script authors)
-----------------------------------------------------------

A constraint script is any file in a ``constraints/`` folder (the package's built-ins, or the
workspace's own) that declares itself in a block of comment lines within its first 80 lines::

    #!/usr/bin/env python3
    # ---gitspace---
    # name: peek
    # description: Metadata about a JSON Lines worklog: entry count, time range and tags.
    #   Call this FIRST, before trying to read the file.
    # example: {"path": "journal/worklog.jsonl"}
    # mutates: false
    # args: {"type": "object", "properties": {"path": {"type": "string"}},
    #   "required": ["path"], "additionalProperties": false}
    # timeout: 10
    # ---

Rules:

- The block opens with a line whose text after the comment leader is exactly ``---gitspace---``.
  The leader is whatever precedes it on that line (``# ``, ``// ``, ``-- ``, ``; ``, ``rem ``...),
  so any language's line comments work. The block closes with the leader followed by ``---``.
- Every line in between starts with the same leader and holds ``key: value``. A line that starts
  with the leader and two more spaces continues the previous value (joined with one space). A
  line that is only the leader is ignored.
- ``name`` (required): ``^[a-z][a-z0-9_]{0,63}$`` and equal to the file name without its suffix.
- ``description`` (required): what the tool does and when to call it; at most 2,000 characters.
  The agent reads nothing else about the tool.
- ``example`` (required): a JSON object, a valid call; it must fit ``args``.
- ``mutates`` (required): ``true`` or ``false``. A mutating script's file changes become one op.
- ``args`` (required): a JSON Schema of ``"type": "object"`` in the subset ``gitspace.schema``
  supports.
- ``timeout`` (optional): seconds, more than 0 and at most 300; 10 when absent.
- Any other key is an error.

Files whose names start with ``_`` or ``.``, symlinks, folders, and files with no header are not
scripts (they can be helpers the scripts share). A file that has a header but a broken one is an
error. Two scripts with the same name in one folder (``peek.py`` and ``peek.sh``) are both errors.
A workspace script replaces a built-in of the same name, and the catalog says so.

How a script is run: the arguments arrive as one JSON object on stdin (with schema defaults
filled in); the working directory is the workspace root; the environment holds only PATH, locale
and the like (never API keys, tokens or ``GIT_*``) plus ``GITSPACE_WORKSPACE``, ``GITSPACE_TOOL``
and ``GITSPACE_CACHE_DIR`` (a folder the script may use for caches, when there is one); a
mutating script also gets ``GITSPACE_NOW`` (Unix seconds), the time to use as "now": it is the op
commit's time, so a replay hands the script the same moment. Stdout is
the result the agent sees, capped; exit code 0 means success and anything else is an error whose
message is the end of stderr. An executable file is run directly (mind its ``#!`` line); a
non-executable ``.py`` file runs with the Python running gitspace and ``.sh`` with ``/bin/sh``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import selectors
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal

from gitspace import config, schema
from gitspace.errors import BadArguments, ConstraintError

HEADER_MARK = "---gitspace---"
HEADER_END = "---"
HEADER_LINES = 80
NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
DESCRIPTION_MAX = 2000
TIMEOUT_DEFAULT = 10.0
TIMEOUT_MAX = 300.0
KEYS = ("name", "description", "example", "mutates", "args", "timeout")
REQUIRED_KEYS = ("name", "description", "example", "mutates", "args")
STREAM_CAP = 1 << 20  # bytes of stdout kept in memory; the rest is counted, not stored
STDERR_KEEP = 64 * 1024  # bytes of stderr tail kept; only the last 2,000 characters are shown
STDERR_TAIL = 2000

Origin = Literal["builtin", "workspace"]

_HINTS = {
    "header": "Every line of the block must start with the leader that precedes "
    "'---gitspace---', and the block must end with that leader followed by '---'.",
    "name": "Use lowercase letters, digits and '_' (starting with a letter), "
    "and name the file after the tool, e.g. 'peek.py' for 'name: peek'.",
    "description": "Say what the tool returns and when to call it; the agent reads nothing else.",
    "example": "Write one complete, valid call as a JSON object on the line, "
    'e.g. example: {"path": "journal/worklog.jsonl"}.',
    "mutates": "Write 'mutates: true' if the script changes files, otherwise 'mutates: false'.",
    "args": 'Declare a JSON Schema object, e.g. args: {"type": "object", "properties": '
    '{"path": {"type": "string"}}, "required": ["path"], "additionalProperties": false}.',
    "timeout": f"Give a number of seconds above 0 and at most {TIMEOUT_MAX:g}, e.g. timeout: 10.",
}


class DeclarationError(ConstraintError):
    """A constraint script's header is missing a field, has a bad one, or is malformed."""

    def __init__(self, path: Path, field_name: str, problem: str, hint: str | None = None):
        super().__init__(f"{_label(path)}: {problem}", hint=hint or _HINTS.get(field_name))
        self.path = path
        self.field = field_name


@dataclass(frozen=True)
class Script:
    """One valid constraint script and the interface it declares."""

    name: str
    path: Path
    description: str
    example: dict[str, Any]
    args_schema: dict[str, Any]
    mutates: bool
    timeout: float = TIMEOUT_DEFAULT
    origin: Origin = "workspace"
    overrides: bool = False  # a workspace script that replaces a built-in of the same name


@dataclass(frozen=True)
class Catalog:
    """Every script found, sorted by name, and every declaration that was refused."""

    scripts: dict[str, Script] = field(default_factory=dict)
    errors: list[ConstraintError] = field(default_factory=list)
    overridden: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class RunResult:
    """What a script run produced, bounded: at most ``output_cap`` characters of text."""

    name: str
    ok: bool
    exit_code: int
    text: str
    stderr_tail: str
    timed_out: bool
    duration: float
    timeout: float
    truncated: bool = False

    def message(self) -> str:
        """The text on success; on failure a sentence the agent can act on."""
        if self.ok:
            return self.text
        if self.timed_out:
            return f"{self.name} timed out after {self.timeout:g} s and was stopped."
        said = self.stderr_tail.strip() or self.text.strip()[-STDERR_TAIL:]
        if self.exit_code < 0:
            try:
                signame = signal.Signals(-self.exit_code).name
            except ValueError:
                signame = f"signal {-self.exit_code}"
            head = f"{self.name} was killed by {signame}"
        else:
            head = f"{self.name} exited with code {self.exit_code}"
        return f"{head}: {said}" if said else f"{head} and printed no error message."


# ---------------------------------------------------------------------------------------------
# reading one declaration


def _label(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


def read_header(path: Path) -> dict[str, str] | None:
    """The raw ``key: value`` pairs of ``path``'s header, or None when it has no header."""
    lines = _first_lines(path)
    start = next((i for i, line in enumerate(lines) if line.rstrip().endswith(HEADER_MARK)), None)
    if start is None:
        return None
    leader = lines[start].rstrip()[: -len(HEADER_MARK)]
    values: dict[str, str] = {}
    last_key: str | None = None
    for number, line in enumerate(lines[start + 1 :], start=start + 2):
        text = line.rstrip()
        if text == leader + HEADER_END:
            return values
        if text == leader.rstrip():
            continue  # an empty comment line inside the block
        if not line.startswith(leader):
            raise DeclarationError(
                path,
                "header",
                f"line {number} of the ---gitspace--- block does not start with "
                f"the comment leader {leader!r}, or the block is missing its closing "
                f"{leader + HEADER_END!r} line.",
            )
        last_key = _read_entry(path, number, line[len(leader) :], values, last_key)
    raise DeclarationError(
        path,
        "header",
        f"the ---gitspace--- block that starts on line {start + 1} has no closing "
        f"{leader + HEADER_END!r} line within the first {HEADER_LINES} lines.",
    )


def _first_lines(path: Path) -> list[str]:
    # Bounded read: a huge or binary file in constraints/ must not be loaded whole to find out
    # that it has no header.
    with path.open("rb") as handle:
        head = handle.read(256 * 1024)
    return head.decode("utf-8", errors="replace").splitlines()[:HEADER_LINES]


def _read_entry(
    path: Path, number: int, content: str, values: dict[str, str], last_key: str | None
) -> str:
    """Record one ``key: value`` or continuation line; return the key it belongs to."""
    if content.startswith("  "):
        if last_key is None:
            raise DeclarationError(
                path,
                "header",
                f"line {number} is indented like a continuation line, but no "
                "field comes before it.",
            )
        values[last_key] = f"{values[last_key]} {content.strip()}".strip()
        return last_key
    key, colon, value = content.partition(":")
    key = key.strip()
    if not colon or not key:
        raise DeclarationError(
            path, "header", f"line {number} of the ---gitspace--- block is not 'key: value'."
        )
    if key in values:
        raise DeclarationError(path, key, f"field {key!r} is given twice (line {number}).")
    values[key] = value.strip()
    return key


def parse_script(path: Path, origin: Origin = "workspace") -> Script | None:
    """The script declared in ``path``, None when it has no header; DeclarationError if broken."""
    # Absolute, because the script runs with the workspace as its working directory.
    path = path.absolute()
    values = read_header(path)
    if values is None:
        return None
    unknown = sorted(set(values) - set(KEYS))
    if unknown:
        raise DeclarationError(
            path,
            unknown[0],
            f"unknown field {unknown[0]!r} in the ---gitspace--- block.",
            hint=f"The fields are: {', '.join(KEYS)}.",
        )
    for key in REQUIRED_KEYS:
        if not values.get(key):
            raise DeclarationError(path, key, f"field {key!r} is required but missing or empty.")
    # Checked in the order a reader meets the fields, so the first error is the first problem.
    name = _parse_name(path, values["name"])
    description = _parse_description(path, values["description"])
    mutates = _parse_mutates(path, values["mutates"])
    timeout = _parse_timeout(path, values.get("timeout"))
    args_schema = _parse_args(path, values["args"])
    example = _parse_example(path, values["example"], args_schema)
    return Script(name, path, description, example, args_schema, mutates, timeout, origin)


def _parse_name(path: Path, name: str) -> str:
    if not NAME_PATTERN.match(name):
        raise DeclarationError(
            path,
            "name",
            f"field 'name' is {name!r}, which is not a valid tool name "
            "(lowercase letter first, then lowercase letters, digits or '_', at most 64).",
        )
    if name != path.stem:
        raise DeclarationError(
            path,
            "name",
            f"field 'name' is {name!r} but the file is named {path.name!r}; they must match.",
            hint=f"Rename the file to {name}{path.suffix} or write 'name: {path.stem}'.",
        )
    return name


def _parse_description(path: Path, description: str) -> str:
    if len(description) > DESCRIPTION_MAX:
        raise DeclarationError(
            path,
            "description",
            f"field 'description' is {len(description):,} characters "
            f"long; the limit is {DESCRIPTION_MAX:,}.",
        )
    return description


def _parse_json_object(path: Path, key: str, raw: str) -> dict[str, Any]:
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as error:
        raise DeclarationError(path, key, f"field {key!r} is not valid JSON: {error}.") from None
    if not isinstance(value, dict):
        raise DeclarationError(path, key, f"field {key!r} must be a JSON object, got {raw!r}.")
    return value


def _parse_args(path: Path, raw: str) -> dict[str, Any]:
    args_schema = _parse_json_object(path, "args", raw)
    if args_schema.get("type") != "object":
        raise DeclarationError(
            path,
            "args",
            "field 'args' must be a schema with "
            '"type": "object" (the arguments are one JSON object).',
        )
    problems = schema.check_schema(args_schema, where="args")
    if problems:
        raise DeclarationError(
            path, "args", "field 'args' is not a usable schema: " + " ".join(problems)
        )
    return args_schema


def _parse_example(path: Path, raw: str, args_schema: dict[str, Any]) -> dict[str, Any]:
    example = _parse_json_object(path, "example", raw)
    try:
        schema.validate(args_schema, example, where="example")
    except BadArguments as error:
        raise DeclarationError(
            path, "example", f"field 'example' does not fit field 'args': {error.message}"
        ) from None
    return example


def _parse_mutates(path: Path, raw: str) -> bool:
    if raw not in ("true", "false"):
        raise DeclarationError(
            path, "mutates", f"field 'mutates' must be true or false, got {raw!r}."
        )
    return raw == "true"


def _parse_timeout(path: Path, raw: str | None) -> float:
    if raw is None:
        return TIMEOUT_DEFAULT
    try:
        seconds = float(raw)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and 0 < seconds <= TIMEOUT_MAX):
        raise DeclarationError(
            path,
            "timeout",
            f"field 'timeout' must be a number of seconds above 0 and at most "
            f"{TIMEOUT_MAX:g}, got {raw!r}.",
        )
    return seconds


# ---------------------------------------------------------------------------------------------
# discovery


def discover(builtin_dir: Path | None, workspace_dir: Path | None) -> Catalog:
    """All constraint scripts: the built-ins, then the workspace's, which win on a name clash."""
    builtins, errors = _scan(builtin_dir, "builtin")
    local, local_errors = _scan(workspace_dir, "workspace")
    scripts = dict(builtins)
    overridden = []
    for name, script in local.items():
        if name in scripts:
            overridden.append(name)
            script = dataclasses.replace(script, overrides=True)
        scripts[name] = script
    errors += local_errors
    return Catalog(
        scripts=dict(sorted(scripts.items())),
        errors=errors,
        overridden=sorted(overridden),
    )


def _scan(folder: Path | None, origin: Origin) -> tuple[dict[str, Script], list[ConstraintError]]:
    """The valid scripts directly in ``folder`` by name, and the errors, both in path order."""
    if folder is None or not folder.is_dir():
        return {}, []
    found: dict[str, list[Script]] = {}
    errors: list[ConstraintError] = []
    for path in sorted(folder.iterdir()):
        if path.name.startswith(("_", ".")) or not _is_regular_file(path):
            continue
        try:
            script = parse_script(path, origin)
        except ConstraintError as error:
            errors.append(error)
            continue
        except OSError as error:
            errors.append(DeclarationError(path, "header", f"cannot be read: {error.strerror}."))
            continue
        if script is not None:
            found.setdefault(script.name, []).append(script)
    scripts = {}
    for name, same in found.items():
        if len(same) == 1:
            scripts[name] = same[0]
            continue
        files = ", ".join(s.path.name for s in same)
        errors += [
            DeclarationError(
                s.path,
                "name",
                f"{len(same)} scripts in {s.path.parent.name}/ are named "
                f"{name!r} ({files}); none of them is loaded.",
                hint="Keep one script per name: rename or delete the others.",
            )
            for s in same
        ]
    errors.sort(key=lambda e: str(getattr(e, "path", "")))
    return scripts, errors


def _is_regular_file(path: Path) -> bool:
    # Symlinks are not followed: a link in a workspace's constraints/ must not be able to
    # make gitspace execute a file outside the workspace.
    try:
        return stat.S_ISREG(path.lstat().st_mode)
    except OSError:
        return False


def tool_definition(script: Script) -> dict[str, Any]:
    """A neutral tool description for the registry: name, description, input_schema, mutates."""
    example = json.dumps(script.example, ensure_ascii=False)
    return {
        "name": script.name,
        "description": f"{script.description}\n\nExample: {example}",
        "input_schema": script.args_schema,
        "mutates": script.mutates,
    }


# ---------------------------------------------------------------------------------------------
# running


def run(
    script: Script,
    args: Mapping[str, Any],
    *,
    cwd: Path,
    cache_dir: Path | None,
    extra_env: Mapping[str, str] | None = None,
    output_cap: int = 16000,
) -> RunResult:
    """Run ``script`` with ``args`` (validated first) and return its bounded result."""
    schema.validate(script.args_schema, dict(args), where="args", example=script.example)
    payload = json.dumps(schema.apply_defaults(script.args_schema, args), ensure_ascii=False)
    started = time.monotonic()
    proc = _start(script, cwd, _environment(script, cwd, cache_dir, extra_env))
    out, err, timed_out = _communicate(proc, payload.encode("utf-8"), script.timeout)
    text, truncated = _cap_text(out, output_cap)
    exit_code = proc.returncode
    return RunResult(
        name=script.name,
        ok=exit_code == 0 and not timed_out,
        exit_code=exit_code,
        text=text,
        stderr_tail=bytes(err.data).decode("utf-8", errors="replace")[-STDERR_TAIL:],
        timed_out=timed_out,
        duration=time.monotonic() - started,
        timeout=script.timeout,
        truncated=truncated,
    )


def _environment(
    script: Script, cwd: Path, cache_dir: Path | None, extra_env: Mapping[str, str] | None
) -> dict[str, str]:
    # The contract variables are set last so that extra_env cannot point a script elsewhere.
    contract = {"GITSPACE_WORKSPACE": str(cwd), "GITSPACE_TOOL": script.name}
    if cache_dir is not None:
        contract["GITSPACE_CACHE_DIR"] = str(cache_dir)
    return config.child_environment({**(extra_env or {}), **contract}, ssh_agent=False)


def _command(script: Script) -> list[str]:
    # A Python script runs on our own interpreter: `env python3` may find a slow shim (pyenv adds
    # ~80 ms a call here) or a different Python than the one gitspace runs on.
    if script.path.suffix == ".py" or _python_shebang(script.path):
        return [sys.executable, str(script.path)]
    if os.access(script.path, os.X_OK):
        return [str(script.path)]
    if script.path.suffix == ".py":
        return [sys.executable, str(script.path)]
    if script.path.suffix == ".sh":
        return ["/bin/sh", str(script.path)]
    raise ConstraintError(
        f"{_label(script.path)} is not executable; chmod +x it.",
        hint="Only .py and .sh scripts run without the executable bit (with Python and /bin/sh).",
    )


def _python_shebang(path: Path) -> bool:
    with open(path, "rb") as handle:
        first = handle.readline(200)
    return first.startswith(b"#!") and b"python" in first


def _start(script: Script, cwd: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    try:
        return subprocess.Popen(
            _command(script),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
            bufsize=0,
            # Its own process group, so a timeout can kill everything the script started.
            start_new_session=True,
        )
    except OSError as error:
        raise ConstraintError(
            f"{_label(script.path)} could not be started: {error.strerror}.",
            hint="Check its #! line (e.g. #!/bin/sh or #!/usr/bin/env python3) "
            "and that the interpreter is installed.",
        ) from None


class _Capture:
    """Bytes read from one stream: the head (stdout) or the tail (stderr), bounded either way."""

    def __init__(self, limit: int, keep_tail: bool = False) -> None:
        self.data = bytearray()
        self.limit = limit
        self.keep_tail = keep_tail
        self.dropped = 0

    def add(self, chunk: bytes) -> None:
        if not self.keep_tail:
            room = max(0, self.limit - len(self.data))
            self.data += chunk[:room]
            self.dropped += len(chunk) - min(room, len(chunk))
            return
        self.data += chunk
        if len(self.data) > 2 * self.limit:  # trim rarely: deleting from the front is a copy
            excess = len(self.data) - self.limit
            del self.data[:excess]
            self.dropped += excess


def _communicate(
    proc: subprocess.Popen[bytes], payload: bytes, timeout: float
) -> tuple[_Capture, _Capture, bool]:
    """Feed stdin, drain stdout and stderr, and stop the process group at the deadline."""
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    out, err = _Capture(STREAM_CAP), _Capture(STDERR_KEEP, keep_tail=True)
    deadline = time.monotonic() + timeout
    try:
        _pump(proc, payload, out, err, deadline)
        timed_out = not _wait(proc, deadline)
    finally:
        # Whatever the script left behind in its group (background children) goes too.
        _kill_group(proc)
        proc.wait()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            stream.close()
    return out, err, timed_out


def _pump(
    proc: subprocess.Popen[bytes], payload: bytes, out: _Capture, err: _Capture, deadline: float
) -> None:
    """Move bytes until stdout and stderr are closed, the script has exited, or time is up."""
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    pending = memoryview(payload)
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ, out)
        selector.register(proc.stderr, selectors.EVENT_READ, err)
        os.set_blocking(proc.stdin.fileno(), False)
        selector.register(proc.stdin, selectors.EVENT_WRITE, None)
        readers = 2
        while readers and time.monotonic() < deadline:
            # Wake up now and then: a background child may hold the pipes after the script exits.
            wait = min(deadline - time.monotonic(), 0.1)
            for key, _ in selector.select(max(wait, 0)):
                if key.data is None:
                    pending = _feed(selector, proc.stdin, pending)
                    continue
                chunk = os.read(key.fd, 65536)
                if chunk:
                    key.data.add(chunk)
                else:
                    selector.unregister(key.fileobj)
                    readers -= 1
            if readers and proc.poll() is not None:
                _kill_group(proc)  # the script is done; its leftover children must not stall us


def _feed(selector: selectors.BaseSelector, stdin: IO[bytes], pending: memoryview) -> memoryview:
    """Write what the pipe takes now; stop feeding when done or when the script closed stdin."""
    try:
        written = os.write(stdin.fileno(), pending[:65536])
    except BlockingIOError:
        written = 0  # the pipe is full; the selector says when it has room again
    except BrokenPipeError:
        # The script does not want (the rest of) its input; that is its business.
        written = len(pending)
    pending = pending[written:]
    if not pending:
        selector.unregister(stdin)
        stdin.close()
    return pending


def _wait(proc: subprocess.Popen[bytes], deadline: float) -> bool:
    """True when the script exited before the deadline (it may close its output and go on)."""
    try:
        proc.wait(timeout=max(deadline - time.monotonic(), 0))
        return True
    except subprocess.TimeoutExpired:
        return False


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # the group is already empty


def _cap_text(out: _Capture, output_cap: int) -> tuple[str, bool]:
    text = bytes(out.data).decode("utf-8", errors="replace")
    # Bytes past the memory cap were never decoded; count them as characters (exact for ASCII).
    hidden = max(0, len(text) - output_cap) + out.dropped
    if not hidden:
        return text, False
    shown = text[:output_cap]
    separator = "" if shown.endswith("\n") or not shown else "\n"
    return f"{shown}{separator}[output truncated: {hidden:,} more characters not shown]", True
