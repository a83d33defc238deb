"""Constraint scripts: the header format script authors write, and finding scripts that use it.

Invariant: a script is exposed to an agent only if its declaration is complete and valid. A bad
declaration is an error that names the file and the field; it never stops the other scripts
from loading. How a declared script is run is ``script_runner``'s contract.

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
- ``args`` (required): a JSON Schema of ``"type": "object"`` in the subset ``gitspace.core.schema``
  supports, JSON Schema 2020-12's ``$schema``, ``$defs`` and ``$ref`` included (clients see it as
  written: an MCP client gets the same ``$defs``).
- ``timeout`` (optional): seconds, more than 0 and at most 300; 10 when absent.
- Any other key is an error.

Reporting progress (optional). While it runs, a script may tell the person watching how far it
got, by writing lines of this form to stderr (flush after each; one line, at most 4,096 bytes)::

    gitspace:progress DONE[/TOTAL] [MESSAGE]     e.g.  gitspace:progress 30000/60000 entries copied
    gitspace:log LEVEL MESSAGE                   LEVEL: debug, info, notice, warning or error

``DONE`` and ``TOTAL`` are non-negative numbers in any unit (bytes, entries), ``TOTAL`` above 0;
report a growing ``DONE``, a few dozen times at most over a run (every 5% is plenty). gitspace
takes these lines out of stderr as they arrive (they never appear in an error message) and hands
them to whoever shows the call: an MCP client that sent a ``progressToken`` gets
``notifications/progress``, and log lines arrive as log messages. Anything else on stderr, a
malformed channel line included, stays plain stderr. Run by hand, the lines are simply printed.
``GITSPACE_PROGRESS=1`` in the environment says that someone listens; a script may skip
reporting without it.
``constraints/_common.py``'s ``Progress`` writes them for the built-ins (``split_worklog``, the
first index of a huge log).

Files whose names start with ``_`` or ``.``, symlinks, folders, and files with no header are not
scripts (they can be helpers the scripts share). A file that has a header but a broken one is an
error. Two scripts with the same name in one folder (``peek.py`` and ``peek.sh``) are both errors.
A workspace script replaces a built-in of the same name, and the catalog says so.
"""


from __future__ import annotations

import dataclasses
import json
import math
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ..core import schema
from ..errors import BadArguments, ConstraintError
from ..storage import bounds

HEADER_MARK = "---gitspace---"
HEADER_END = "---"
HEADER_LINES = 80
NAME_PATTERN = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
DESCRIPTION_MAX = 2000
TIMEOUT_DEFAULT = 10.0
TIMEOUT_MAX = 300.0
KEYS = ("name", "description", "example", "mutates", "args", "timeout")
REQUIRED_KEYS = ("name", "description", "example", "mutates", "args")


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
        super().__init__(f"{label(path)}: {problem}", hint=hint or _HINTS.get(field_name))
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



# ---------------------------------------------------------------------------------------------
# reading one declaration


def label(path: Path) -> str:
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
        value = bounds.loads(raw, f"field {key!r}")
    except ValueError as error:
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
