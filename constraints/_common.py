"""Plumbing every built-in constraint script shares: arguments, paths, exit codes, output size.

Invariants:
- a script's arguments are checked against the ``args`` schema in its own header block, so the
  declaration the agent reads and the validation the script applies cannot drift apart;
- every path an agent supplies resolves inside the workspace root (the current directory), or the
  script exits 2 before touching anything;
- stdout stays under OUTPUT_BUDGET characters by construction (callers size their lines with
  ``fit``), well below the runner's 16,000-character cap.

Exit codes: 2 = bad input (schema, path, regex), 1 = everything else, including a refusal because
the answer would be too big. Messages go to stderr and say what to do next.

Standard library only; no file in the work tree is ever written from here.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

OUTPUT_BUDGET = 12_000  # characters of body text; headers and footers stay well under 1,000 more


class UsageError(Exception):
    """The caller asked for something malformed or forbidden (exit 2)."""


class Refusal(Exception):
    """The request is well-formed but cannot be answered as asked (exit 1)."""


class Progress:
    """How far a long step got, on gitspace's progress channel (tools/script_header.py): one
    stderr line each time another 1/steps of ``total`` is done, so a client sees the step move
    without being flooded. Call it with the amount done so far; it costs a multiplication."""

    def __init__(self, total: int, message: str, steps: int = 20) -> None:
        self.total, self.message, self.steps, self.last = total, message, steps, -1
        if os.environ.get("GITSPACE_PROGRESS") != "1":
            self.last = steps  # nobody listens (run by hand, or by a front end that shows none)

    def __call__(self, done: int) -> None:
        step = done * self.steps // self.total if self.total > 0 else self.steps
        if step > self.last:
            self.last = step
            sys.stderr.write(f"gitspace:progress {done}/{max(self.total, 1)} {self.message}\n")
            sys.stderr.flush()


def run(main: Callable[[dict[str, Any]], str], script: str) -> NoReturn:
    """Validate the JSON arguments, call ``main``, print its text, exit with the contract's code."""
    try:
        args = validate(read_stdin_json(), header_schema(script))
        out = main(args)
    except UsageError as e:
        _die(2, str(e))
    except Refusal as e:
        _die(1, str(e))
    except OSError as e:
        _die(1, f"{e.strerror or e} ({e.filename or 'file'}). Check the path with stat and retry.")
    sys.stdout.write(out if out.endswith("\n") else out + "\n")
    sys.exit(0)


def _die(code: int, message: str) -> NoReturn:
    sys.stderr.write(message.rstrip() + "\n")
    sys.exit(code)


def read_stdin_json() -> dict[str, Any]:
    raw = sys.stdin.read() if not sys.stdin.isatty() else ""
    if not raw.strip():
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as e:
        raise UsageError(f"Arguments must be one JSON object on stdin; could not parse it: {e}.") \
            from None
    if not isinstance(value, dict):
        raise UsageError('Arguments must be a JSON object, e.g. {"path": "journal/worklog.jsonl"}.')
    return value


def header_schema(script: str) -> dict[str, Any]:
    """The ``args`` schema from the script's own ``---gitspace---`` header block."""
    fields: dict[str, str] = {}
    key = None
    leader = None
    with open(script, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if leader is None:
                if line.endswith("---gitspace---"):
                    leader = line[: -len("---gitspace---")]
                continue
            body = line[len(leader):]
            if body == "---":
                break
            if body.startswith("  ") and key:
                fields[key] += " " + body.strip()
            elif ":" in body:
                key, _, value = body.partition(":")
                key = key.strip()
                fields[key] = value.strip()
    return json.loads(fields["args"])


_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,), "string": (str,), "integer": (int,), "number": (int, float),
    "boolean": (bool,), "array": (list,),
}


def validate(value: Any, schema: dict[str, Any], where: str = "arguments") -> Any:
    """Check ``value`` against the small JSON Schema subset headers may use; fill in defaults."""
    kind = schema.get("type")
    if kind:
        ok = isinstance(value, _TYPES[kind]) and not (kind != "boolean" and isinstance(value, bool))
        if not ok:
            raise UsageError(f"{where} must be of type {kind}, got {json.dumps(value)[:60]}.")
    if "enum" in schema and value not in schema["enum"]:
        raise UsageError(f"{where} must be one of {', '.join(map(str, schema['enum']))}.")
    if kind in ("integer", "number"):
        if "minimum" in schema and value < schema["minimum"]:
            raise UsageError(f"{where} must be at least {schema['minimum']}, got {value}.")
        if "maximum" in schema and value > schema["maximum"]:
            raise UsageError(f"{where} must be at most {schema['maximum']}, got {value}.")
    if kind == "array" and "items" in schema:
        value = [validate(v, schema["items"], f"{where}[{i}]") for i, v in enumerate(value)]
    if kind == "object":
        props = schema.get("properties", {})
        missing = [k for k in schema.get("required", []) if k not in value]
        if missing:
            raise UsageError(f"Missing required argument {missing[0]!r}. Expected: {list(props)}.")
        if schema.get("additionalProperties") is False:
            extra = [k for k in value if k not in props]
            if extra:
                raise UsageError(f"Unknown argument {extra[0]!r}. Allowed: {', '.join(props)}.")
        value = dict(value)
        for name, sub in props.items():
            if name in value:
                value[name] = validate(value[name], sub, name)
            elif "default" in sub:
                value[name] = sub["default"]
    return value


def root() -> Path:
    return Path.cwd().resolve()


def resolve(rel: str, *, must_exist: bool = True) -> Path:
    """An agent-supplied relative path, resolved and proven to stay inside the workspace."""
    if not rel or "\x00" in rel:
        raise UsageError('The path is empty. Give a path relative to the workspace root, '
                         'e.g. "notes".')
    if rel.startswith(("/", "\\", "~")) or re.match(r"^[A-Za-z]:", rel):
        raise UsageError(f"Absolute paths are not allowed: {rel!r}. "
                         "Use a path relative to the workspace root.")
    parts = re.split(r"[\\/]+", rel)
    if ".." in parts:
        raise UsageError(f"'..' is not allowed in paths: {rel!r}. Paths stay inside the workspace.")
    if ".git" in parts:
        raise UsageError(f"{rel!r} is inside .git, which is not part of the workspace's files.")
    base = root()
    target = (base / rel).resolve()  # follows symlinks, so a link pointing outside is caught here
    if target != base and base not in target.parents:
        raise UsageError(f"{rel!r} resolves outside the workspace (a symlink?); "
                         "refusing to follow it.")
    if must_exist and not target.exists():
        raise UsageError(f"No such file or folder: {rel!r}. "
                         "Use stat on a parent folder to see what exists.")
    return target


def open_inside(path: Path, flags: int, *, make_folders: bool = False, doing: str = "write"
                ) -> int:
    """A descriptor of ``path`` (inside the workspace) opened with ``flags``, reached one folder
    at a time from the root without following any link, at the moment of the open: a folder
    swapped for a link after ``resolve`` cannot send a write (or a new folder) elsewhere. Missing
    folders are made when ``make_folders``. A link in the way is a UsageError."""
    parts = path.relative_to(root()).parts
    folder = os.open(root(), os.O_RDONLY | os.O_DIRECTORY)
    try:
        for name in parts[:-1]:
            try:
                inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=folder)
            except FileNotFoundError:
                if not make_folders:
                    raise
                try:
                    os.mkdir(name, 0o755, dir_fd=folder)
                except FileExistsError:
                    pass
                inner = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=folder)
            except OSError as e:
                if e.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise UsageError(f"{display(path)}: {name} is a link or a file, not a "
                                     f"folder; refusing to {doing} through it.") from None
                raise
            os.close(folder)
            folder = inner
        try:
            return os.open(parts[-1], flags | os.O_NOFOLLOW, 0o644, dir_fd=folder)
        except OSError as e:
            if e.errno == errno.ELOOP:
                raise UsageError(f"{display(path)} is a link, not a file; refusing to {doing} "
                                 "through it.") from None
            raise
    finally:
        os.close(folder)


def open_to_read(path: Path) -> Any:
    """``path`` (inside the workspace) opened for reading as a binary file, reached one folder at
    a time from the root without following any link (``open_inside``): a folder swapped for a
    link after ``resolve`` cannot make a read show a file outside. A link, or anything but a
    regular file, is a UsageError; so is a path that no longer lies inside the workspace."""
    try:
        fd = open_inside(path, os.O_RDONLY | os.O_NONBLOCK, doing="read")
    except ValueError:  # resolved through a link swapped in meanwhile: outside the workspace
        raise UsageError(f"{path.name} moved outside the workspace while being read; refusing "
                         "to read it.") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UsageError(f"{display(path)} is not a regular file.")
    return os.fdopen(fd, "rb")


def read_inside(path: Path, limit: int) -> bytes | None:
    """The bytes of ``path`` if the file actually opened lies inside the workspace (None when it
    does not, or is not a regular file, or is over ``limit``). Checked on the open descriptor,
    not on the name: a folder swapped for a link after ``resolve`` cannot send the read
    elsewhere. (Where /proc is missing the name's resolution is checked again after the open.)"""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        try:
            where = Path(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            where = path.resolve()
        base = root()
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit or base not in where.parents:
            return None
        return f.read(limit + 1)[:limit]


def display(path: Path) -> str:
    """A path as the agent should write it back: relative to the workspace root, with slashes."""
    rel = path.relative_to(root()).as_posix()
    return rel or "."


def fit(lines: list[str], budget: int = OUTPUT_BUDGET, floor: int = 60) -> tuple[list[str], int]:
    """Cut every line to an equal share of ``budget`` (never below ``floor``); return the width.

    Callers cap the number of lines at budget // floor, so the total is bounded by construction.
    """
    width = max(floor, min(400, budget // max(1, len(lines))))
    return [clip(line, width) for line in lines], width


def clip(text: str, width: int) -> str:
    text = " ".join(text.split())  # a newline inside a value would break one entry per line
    return text if len(text) <= width else text[: width - 1] + "…"


def human_size(n: int) -> str:
    size = float(n)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{n:,} bytes" if unit == "bytes" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n:,} bytes"
