"""The backend of Anthropic's memory tool (``memory_20250818``): long-term memory is the workspace
folder ``memories/``, so every memory is a versioned file.

Invariants:
- a model path is ``/memories`` or starts with ``/memories/``; it is canonicalised and names a
  location inside ``memories/``, reached without following any symbolic link. Anything else is
  refused before a file is touched.
- create, str_replace, insert, delete and rename are each exactly one op (tool ``memory``, the
  command's fields as args, large texts elided to their blob hash); view never locks or commits.
- results and errors read exactly like the SDK's reference backend
  (``anthropic.lib.tools.BetaLocalFilesystemMemoryTool``), so a model meets what it was trained
  on; reads are bounded like every gitspace view.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core import paths
from ..core.identity import Identity
from ..core.result import Result
from ..core.transaction import Outcome, Stage, Txn
from ..core.workspace import Workspace
from ..errors import BadArguments, FileRefused, PathRefused, ToolFailed
from ..storage import ledger
from ..storage.files import OWNER_ONLY_FOLDER
from .registry import builtin, integer, obj, string
from .text import LISTING_CAP, VIEW_CAP, decode, numbered, refuse_binary

FOLDER = OWNER_ONLY_FOLDER  # files 0600, folders 0700, as the SDK's backend makes them
MODEL_ROOT = "/memories"
MAX_LINES = 999_999
PATH_HINT = "Memory paths look like /memories/notes.md or /memories/projects/maze.md."

# What each command needs, with a call that works (shown when a field is missing).
EXAMPLES: dict[str, dict[str, Any]] = {
    "view": {"command": "view", "path": "/memories"},
    "create": {"command": "create", "path": "/memories/notes.md", "file_text": "# Notes\n"},
    "str_replace": {"command": "str_replace", "path": "/memories/notes.md",
                    "old_str": "maze: unsolved", "new_str": "maze: solved"},
    "insert": {"command": "insert", "path": "/memories/notes.md", "insert_line": 1,
               "insert_text": "- the exit is east\n"},
    "delete": {"command": "delete", "path": "/memories/old.md"},
    "rename": {"command": "rename", "old_path": "/memories/draft.md",
               "new_path": "/memories/final.md"},
}


# -- paths ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Location:
    """A memory path three ways: as the model sees it, relative to the workspace, on disk."""

    shown: str  # canonical model path: "/memories/a/b.md"
    rel: str  # "memories/a/b.md"
    full: Path

    @property
    def is_root(self) -> bool:
        return self.rel == FOLDER


def locate(ws: Workspace, path: object) -> Location:
    """Canonicalise a model path, or refuse it (PathRefused) before anything is touched."""
    if not isinstance(path, str):
        raise BadArguments(f"A memory path must be a string, not {type(path).__name__}.",
                           hint=PATH_HINT)
    if path != MODEL_ROOT and not path.startswith(MODEL_ROOT + "/"):
        raise PathRefused(f"Path must start with /memories, got: {path}")
    parts: list[str] = []
    for part in path[len(MODEL_ROOT):].split("/"):
        if part == "..":
            if not parts:
                raise PathRefused(f"Path {path} would escape /memories directory")
            parts.pop()
        elif part not in ("", "."):
            parts.append(part)
    sub = "/".join(parts)
    if sub:
        try:
            sub = paths.normalize(sub)
        except PathRefused as e:
            # normalize says why in the tail of its sentence; the model should see its own path.
            why = e.message.rpartition(" was refused: ")[2]
            raise PathRefused(f"The path {path} was refused: {why}", hint=PATH_HINT) from None
    rel = f"{FOLDER}/{sub}" if sub else FOLDER
    try:
        paths.check_length(ws.root, rel, path)
        paths.check_writable(rel, path)
    except PathRefused as e:
        raise PathRefused(e.message, hint=PATH_HINT) from None
    ws.files.whole(FOLDER)  # (a delegated child's work tree fills as it is touched: this is read whole)
    _refuse_links(ws.root, rel, path)
    return Location(f"{MODEL_ROOT}/{sub}" if sub else MODEL_ROOT, rel, ws.root / rel)


def _refuse_links(root: Path, rel: str, path: str) -> None:
    folder = Path(os.path.realpath(root)) / FOLDER
    current = root
    for part in rel.split("/"):
        current = current / part
        if not os.path.islink(current):
            continue
        target = Path(os.path.realpath(current))
        if target != folder and folder not in target.parents:
            # The SDK's wording: it resolves links first, so a link out reads as an escape.
            raise PathRefused(f"Path {path} would escape /memories directory")
        raise PathRefused(
            f"The path {path} was refused: {current.relative_to(root)} is a symbolic link, and "
            "memory paths never follow links.",
            hint=PATH_HINT,
        )


# -- the tool ---------------------------------------------------------------------------------


@builtin(
    "memory",
    "Your long-term memory: files under /memories that outlast this conversation. At the start of "
    "a task, view /memories to see what you recorded before; as you learn something worth "
    "keeping, record it (create, str_replace, insert) and keep the folder tidy (delete, rename). "
    "Every change is one commit in the workspace's history.",
    EXAMPLES["view"],
    obj(
        ["command"],
        command=string("What to do.", enum=list(EXAMPLES)),
        path=string("A path inside /memories, e.g. '/memories/notes.md'."),
        view_range={"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2,
                    "description": "view: [start, end] lines, 1-based; end -1 means to the end."},
        file_text=string("create: the content of the new file."),
        old_str=string("str_replace: the exact text to replace; it must occur once."),
        new_str=string("str_replace: the replacement text."),
        insert_line=integer("insert: the line after which to insert; 0 for the top."),
        insert_text=string("insert: the text to insert."),
        old_path=string("rename: the file or folder to move."),
        new_path=string("rename: where to move it; must not exist yet."),
    ),
    mutates=True,
    wire_type="memory_20250818",
    reads_only=lambda args: args.get("command") == "view",
)
def memory(ws: Workspace, args: dict[str, Any], who: Identity) -> Result:
    command = args["command"]
    missing = [f for f in EXAMPLES[command] if f not in args]
    if missing:
        raise BadArguments(
            f"The memory {command} command needs {' and '.join(missing)}, which "
            f"{'was' if len(missing) == 1 else 'were'} not given.",
            hint=f"A valid call looks like: {json.dumps(EXAMPLES[command])}",
        )
    if command == "view":
        return Result(ok=True, text=view(ws, args), tool=who.tool)
    refuse_binary(args, "file_text", "new_str", "insert_text")
    return _COMMANDS[command](ws, args, who)


def _op(ws: Workspace, args: dict[str, Any], stage: Stage, who: Identity) -> Result:
    """Run ``stage`` as one memory op recording ``args``. Only a create's long ``file_text`` is
    elided to its blob: that blob is the created file, so the commit itself proves it. Any other
    text (old_str, new_str, insert_text) is recorded whole, or the ledger could not say what the op
    did."""
    record = dict(args)
    if args["command"] == "create" and isinstance(record.get("file_text"), str):
        blob = ws.repo.hash_object("blob", record["file_text"].encode("utf-8"))
        record = ledger.elide(record, "file_text", blob)
    return ws.transact(who.op(record), stage, who.author)


# -- view (read-only) -------------------------------------------------------------------------


def view(ws: Workspace, args: dict[str, Any]) -> str:
    where = locate(ws, args["path"])
    try:
        st = os.lstat(where.full)
    except (FileNotFoundError, NotADirectoryError):
        if where.is_root:  # memories/ appears with the first memory
            return _listing(where, 0, [])
        raise ToolFailed(f"The path {where.shown} does not exist. Please provide a valid path.") \
            from None
    if stat.S_ISDIR(st.st_mode):
        return _listing(where, st.st_size, _entries(where.full, ""))
    if not stat.S_ISREG(st.st_mode):
        raise ToolFailed(f"Unsupported file type for {where.shown}")
    if st.st_size > ws.max_file_bytes:
        raise FileRefused(f"{where.shown} is {st.st_size:,} bytes, too large to view.",
                          hint="Split it into smaller memory files.")
    lines = decode(where.shown, where.full.read_bytes()).split("\n")
    if len(lines) > MAX_LINES:
        raise ToolFailed(f"File {where.shown} exceeds maximum line limit of 999,999 lines.")
    start, end = 0, len(lines)
    if "view_range" in args:
        first, last = args["view_range"]
        start = max(1, first) - 1
        end = len(lines) if last == -1 else last
    body = numbered(lines[start:end], start + 1)
    if len(body) > VIEW_CAP:
        shown = max(1, len(lines[start:end]))
        fit = max(1, VIEW_CAP * shown // len(body) - 1)
        raise FileRefused(
            f"{where.shown} has {len(lines):,} lines; lines {start + 1}-{start + shown} take "
            f"{len(body):,} characters, over the {VIEW_CAP:,}-character view cap.",
            hint=f"Page through it with view_range, about {fit} lines at a time, e.g. "
            f"[{start + 1}, {start + fit}].",
        )
    return f"Here's the content of {where.shown} with line numbers:\n{body}"


def _entries(folder: Path, prefix: str, depth: int = 1) -> list[tuple[int, str]]:
    """(size, path) of the visible files and folders up to two levels below ``folder``.

    Links are skipped, never followed: a memory listing shows only what is inside memories/."""
    found: list[tuple[int, str]] = []
    try:
        children = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return found
    for child in children:
        if child.name.startswith(".") or child.is_symlink():
            continue
        name = f"{prefix}{child.name}"
        try:
            size = child.stat(follow_symlinks=False).st_size
        except OSError:  # removed while we looked: a listing is a snapshot
            continue
        if child.is_dir(follow_symlinks=False):
            found.append((size, f"{name}/"))
            if depth < 2:
                found += _entries(Path(child.path), f"{name}/", depth + 1)
        elif child.is_file(follow_symlinks=False):
            found.append((size, name))
    return found


def _listing(where: Location, size: int, entries: list[tuple[int, str]]) -> str:
    rows = [f"{_size(size)}\t{where.shown}"]
    rows += [f"{_size(n)}\t{where.shown}/{name}" for n, name in entries[:LISTING_CAP]]
    if len(entries) > LISTING_CAP:
        rows.append(f"... and {len(entries) - LISTING_CAP} more; view a subfolder to see them.")
    return (f"Here're the files and directories up to 2 levels deep in {where.shown}, excluding "
            "hidden items:\n" + "\n".join(rows))


def _size(n: int) -> str:
    """Sizes as the SDK writes them: 0B, 512B, 4.0K, 1.5M."""
    if n == 0:
        return "0B"
    unit = min((n.bit_length() - 1) // 10, 3)
    value = n / 1024**unit
    number = str(int(value)) if value == int(value) else f"{value:.1f}"
    return number + "BKMG"[unit]


# -- mutations ------------------------------------------------------------------------------


def _file_text(txn: Txn, where: Location) -> str:
    if where.full.is_dir():
        raise ToolFailed(f"The path {where.shown} is not a file.")
    data = txn.read(where.rel)
    if data is None:
        raise ToolFailed(f"The path {where.shown} does not exist. Please provide a valid path.")
    return decode(where.shown, data)


def _members(ws: Workspace, txn: Txn, where: Location) -> list[str]:
    """The files a path stands for: itself, every file under a folder, or none if absent."""
    entry = txn.entry(where.rel)
    if where.full.is_dir() or (entry is not None and entry.is_tree):
        tracked = {f"{where.rel}/{p}" for p, _ in ws.repo.walk_files(entry.sha)} \
            if entry is not None and entry.is_tree else set()
        on_disk = set()
        for folder, dirs, names in os.walk(where.full):
            # os.walk lists a link to a folder among dirs without entering it: it is a file here.
            for name in names + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
                on_disk.add(Path(folder, name).relative_to(ws.root).as_posix())
        return sorted(tracked | on_disk)
    if os.path.lexists(where.full) or entry is not None:
        return [where.rel]
    return []


def create(ws: Workspace, args: dict[str, Any], who: Identity) -> Result:
    where = locate(ws, args["path"])
    if where.is_root:
        raise ToolFailed("/memories is the memory folder itself; create a file inside it.",
                         hint="For example: /memories/notes.md.")
    data = args["file_text"].encode("utf-8")

    def stage(txn: Txn) -> Outcome:
        if where.full.is_dir() or txn.read(where.rel) is not None:
            raise ToolFailed(f"File {where.shown} already exists")
        txn.write(where.rel, data)
        return Outcome(f"File created successfully at: {where.shown}",
                       f"memory create {where.shown}")

    return _op(ws, {"command": "create", "path": where.shown, "file_text": args["file_text"]},
               stage, who)


def str_replace(ws: Workspace, args: dict[str, Any], who: Identity) -> Result:
    where = locate(ws, args["path"])
    old, new = args["old_str"], args["new_str"]
    if not old:
        raise BadArguments("old_str is empty, so there is nothing to replace.",
                           hint="Copy the exact text to change from a view of the file.")

    def stage(txn: Txn) -> Outcome:
        text = _file_text(txn, where)
        count = text.count(old)
        if count == 0:
            raise ToolFailed(f"No replacement was performed, old_str `{old}` did not appear "
                             f"verbatim in {where.shown}.")
        if count > 1:
            found, at = [], text.find(old)
            while at != -1:  # overlapping matches too, as the SDK lists them
                found.append(text.count("\n", 0, at) + 1)
                at = text.find(old, at + 1)
            raise ToolFailed(f"No replacement was performed. Multiple occurrences of old_str "
                             f"`{old}` in lines: {', '.join(map(str, found))}. Please ensure it "
                             "is unique")
        changed = text.count("\n", 0, text.find(old))
        result = text.replace(old, new, 1)
        txn.write(where.rel, result.encode("utf-8"))
        lines = result.split("\n")
        low, high = max(0, changed - 2), min(len(lines), changed + 3)
        return Outcome("The memory file has been edited. Here is the snippet showing the change "
                       f"(with line numbers):\n{numbered(lines[low:high], low + 1)}",
                       f"memory str_replace {where.shown}")

    return _op(ws, {"command": "str_replace", "path": where.shown, "old_str": old,
                    "new_str": new}, stage, who)


def insert(ws: Workspace, args: dict[str, Any], who: Identity) -> Result:
    where = locate(ws, args["path"])
    at, text_in = args["insert_line"], args["insert_text"]

    def stage(txn: Txn) -> Outcome:
        lines = _file_text(txn, where).split("\n")
        if lines[-1] == "":
            lines.pop()
        if not 0 <= at <= len(lines):
            raise ToolFailed(f"Invalid `insert_line` parameter: {at}. It should be within the "
                             f"range [0, {len(lines)}].")
        lines.insert(at, text_in.rstrip("\n"))
        result = "\n".join(lines)
        txn.write(where.rel, (result if result.endswith("\n") else result + "\n").encode("utf-8"))
        return Outcome(f"The file {where.shown} has been edited.",
                       f"memory insert {where.shown}:{at}")

    return _op(ws, {"command": "insert", "path": where.shown, "insert_line": at,
                    "insert_text": text_in}, stage, who)


def delete(ws: Workspace, args: dict[str, Any], who: Identity) -> Result:
    where = locate(ws, args["path"])
    if where.is_root:
        raise PathRefused("Cannot delete the /memories directory itself")

    def stage(txn: Txn) -> Outcome:
        victims = _members(ws, txn, where)
        if not victims:
            raise ToolFailed(f"The path {where.shown} does not exist")
        for victim in victims:
            txn.read(victim)
            txn.delete(victim)
        return Outcome(f"Successfully deleted {where.shown}", f"memory delete {where.shown}")

    return _op(ws, {"command": "delete", "path": where.shown}, stage, who)


def rename(ws: Workspace, args: dict[str, Any], who: Identity) -> Result:
    src, dst = locate(ws, args["old_path"]), locate(ws, args["new_path"])
    if src.is_root:
        raise PathRefused("Cannot rename the /memories directory itself")

    def stage(txn: Txn) -> Outcome:
        if dst.is_root or os.path.lexists(dst.full) or txn.entry(dst.rel) is not None:
            raise ToolFailed(f"The destination {dst.shown} already exists")
        if dst.rel.startswith(src.rel + "/"):
            raise ToolFailed(f"Cannot move {src.shown} into itself ({dst.shown}).")
        moves = _members(ws, txn, src)
        if not moves:
            raise ToolFailed(f"The path {src.shown} does not exist")
        for old in moves:
            data = txn.read(old)
            if data is None:
                continue
            new = dst.rel + old[len(src.rel):]
            mode = txn.mode(old)
            txn.delete(old)
            txn.read(new)
            txn.write(new, data, mode)
        return Outcome(f"Successfully renamed {src.shown} to {dst.shown}",
                       f"memory rename {src.shown} -> {dst.shown}")

    return _op(ws, {"command": "rename", "old_path": src.shown, "new_path": dst.shown}, stage, who)


_COMMANDS: dict[str, Callable[..., Result]] = {
    "create": create, "str_replace": str_replace, "insert": insert, "delete": delete,
    "rename": rename,
}
