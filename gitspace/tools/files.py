"""Built-in file tools: view, create, str_replace, insert, append, delete, rename, search.

Argument names follow Anthropic's text-editor and memory tools, which models already know. Every
mutating tool is a stage over a ``Txn``; the transaction turns it into one commit (or none).
Reads are bounded: a view that would exceed the cap is refused with the file's size and the
tools to use instead, never silently cut.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import Any

from ..core import paths
from ..core.identity import Identity
from ..core.result import Result
from ..core.transaction import Outcome, Txn
from ..core.workspace import Workspace
from ..errors import FileRefused, GitspaceError, ToolFailed
from ..storage import ledger
from ..storage.files import Files
from ..storage.objects import LINK_MODE
from .registry import PATH, builtin, integer, obj, string
from .text import LISTING_CAP, VIEW_CAP, decode, numbered, refuse_binary

SEARCH_CAP = 50
SEARCH_READ_CAP = 64 << 20  # a file a shown match is checked in is read up to this size


def _target(ws: Workspace, path: object) -> tuple[str, Path]:
    """Resolve a path an edit tool will write (paths.resolve: the one policy, owners included)."""
    return paths.resolve(ws.root, path, write=True)


def _existing(txn: Txn, rel: str) -> str:
    data = txn.read(rel)
    if data is None:
        raise ToolFailed(f"{rel} does not exist.", hint="Create it first with the create tool.",
                         cli_hint="Create it first with 'gitspace call create' "
                                  "('gitspace tools' shows an example).")
    return decode(rel, data)


# -- view -----------------------------------------------------------------------------------


@builtin(
    "view",
    "Show a text file with line numbers, or list a folder (two levels deep). Files are shown "
    f"whole only when they fit in {VIEW_CAP:,} characters; for larger files pass view_range "
    "[start, end] (1-based, end -1 means to the end) or use the constraint tools (peek, range, "
    "grep, stat), which read large files in bounded pieces.",
    {"path": "notes/todo.md", "view_range": [1, 40]},
    obj(["path"], path=PATH, view_range={
        "type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2,
        "description": "[start, end] lines, 1-based; end -1 means to the end of the file."}),
    mutates=False,
)
def view(ws: Workspace, args: dict[str, Any], who: Identity) -> Result:
    rel = paths.resolve(ws.root, args["path"], allow_root=True)[0]
    # Read through the no-follow reader, never by name: the check above is not the read, and a
    # folder swapped for a link in between must not show what lies beyond it.
    files = ws.files
    listing = files.listing(rel)
    if listing is not None:
        return Result(ok=True, text=_listing(files, rel, listing), tool=who.tool)
    st = files.stat(rel) if rel else None
    if st is not None and st.st_size > ws.max_file_bytes:
        raise FileRefused(
            f"{rel} is {st.st_size:,} bytes, too large to view.",
            hint="Use stat, grep, peek or range to read it in bounded pieces.",
        )
    state = files.read(rel, limit=ws.max_file_bytes)
    if state is None or state[1] == LINK_MODE:
        raise ToolFailed(f"{rel} does not exist.", hint="View the folder to see what is there.")
    size = len(state[0])
    lines = decode(rel, state[0]).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    start, end = 1, len(lines)
    if "view_range" in args:
        start, end = args["view_range"]
        end = len(lines) if end == -1 else end
        if not (1 <= start <= max(len(lines), 1)) or end < start or end > len(lines):
            raise ToolFailed(
                f"view_range {args['view_range']} does not fit {rel}, which has {len(lines)} lines.",
                hint=f"Use a range within [1, {len(lines)}], end -1 for 'to the end'.",
            )
    body = numbered(lines[start - 1 : end], start)
    if len(body) > VIEW_CAP:
        per_line = max(1, len(body) // max(1, end - start + 1))
        fit = max(1, VIEW_CAP // per_line - 1)
        raise FileRefused(
            f"{rel} has {len(lines):,} lines and {size:,} bytes; lines {start}-{end} take "
            f"{len(body):,} characters, over the {VIEW_CAP:,}-character view cap.",
            hint=f"Pass view_range with about {fit} lines at a time, e.g. [{start}, "
            f"{start + fit - 1}], or use grep/peek/range/stat.",
        )
    header = f"Here's the content of {rel} with line numbers (lines {start}-{end} of {len(lines)}):"
    return Result(ok=True, text=f"{header}\n{body}", tool=who.tool)


def _listing(files: Files, rel: str, top: list[tuple[str, os.stat_result]]) -> str:
    rows: list[str] = []
    total = 0
    for name, st in top:
        if name.startswith("."):
            continue
        child = f"{rel}/{name}" if rel else name
        items = [(child, st)]
        if stat.S_ISDIR(st.st_mode):
            items += [(f"{child}/{n}", s) for n, s in files.listing(child) or []
                      if not n.startswith(".")]
        for item, st in items:
            total += 1
            if len(rows) < LISTING_CAP:
                folder = stat.S_ISDIR(st.st_mode)
                size = "-" if folder else f"{st.st_size:,}"
                rows.append(f"{size:>10}  {item}{'/' if folder else ''}")
    shown = rel or "."
    more = f"\n... and {total - LISTING_CAP} more" if total > LISTING_CAP else ""
    return (f"Files and folders in {shown}, two levels deep, hidden items excluded "
            f"({total} entries):\n" + "\n".join(rows) + more)


# -- create / edit --------------------------------------------------------------------------


@builtin(
    "create",
    "Create a text file, or replace a file's whole content. Use str_replace or insert to change "
    "part of an existing file.",
    {"path": "notes/plan.md", "file_text": "# Plan\n- explore the maze\n"},
    obj(["path", "file_text"], path=PATH, file_text=string("The complete new content.")),
    mutates=True,
    idempotent=True,
)
def create(ws: Workspace, args: dict[str, Any], who: Identity) -> Result:
    refuse_binary(args, "file_text")
    rel, _ = _target(ws, args["path"])
    data = args["file_text"].encode("utf-8")

    def stage(txn: Txn) -> Outcome:
        existed = txn.read(rel) is not None
        txn.write(rel, data)
        verb = "overwritten" if existed else "created"
        return Outcome(f"File {verb} successfully at: {rel}", f"create {rel}")

    blob = ws.repo.hash_object("blob", data)
    record = ledger.elide({**args, "path": rel}, "file_text", blob)
    return ws.transact(who.op(record), stage, who.author)


@builtin(
    "str_replace",
    "Replace one exact occurrence of old_str with new_str in a file. old_str must match exactly "
    "once (whitespace included); if it matches several times, include more surrounding lines.",
    {"path": "notes/todo.md", "old_str": "- [ ] write tests", "new_str": "- [x] write tests"},
    obj(["path", "old_str", "new_str"], path=PATH, old_str=string("Exact text to find.", minLength=1),
        new_str=string("Replacement text (may be empty).")),
    mutates=True,
)
def str_replace(ws: Workspace, args: dict[str, Any], who: Identity) -> Result:
    refuse_binary(args, "new_str")
    rel, _ = _target(ws, args["path"])
    old, new = args["old_str"], args["new_str"]

    def stage(txn: Txn) -> Outcome:
        text = _existing(txn, rel)
        count = text.count(old)
        if count == 0:
            raise ToolFailed(
                f"No replacement was performed, old_str `{old}` did not appear verbatim in {rel}.",
                hint="View the file to copy the exact text.",
            )
        if count > 1:
            lines = [text.count("\n", 0, m.start()) + 1 for m in re.finditer(re.escape(old), text)]
            raise ToolFailed(
                f"No replacement was performed: old_str appears {count} times in {rel}, at lines "
                f"{', '.join(map(str, lines[:20]))}.",
                hint="Include more surrounding text so it matches exactly once.",
            )
        at = text.index(old)
        result = text.replace(old, new, 1)
        txn.write(rel, result.encode("utf-8"))
        first = result.count("\n", 0, at) + 1
        snippet_lines = result.split("\n")
        lo, hi = max(1, first - 3), min(len(snippet_lines), first + new.count("\n") + 3)
        snippet = numbered(snippet_lines[lo - 1 : hi], lo)
        return Outcome(f"The file {rel} has been edited. Snippet of the change:\n{snippet}",
                       f"str_replace {rel}")

    return ws.transact(who.op({**args, "path": rel}), stage, who.author)


@builtin(
    "insert",
    "Insert text after a given line of a file (0 inserts at the top).",
    {"path": "notes/todo.md", "insert_line": 2, "insert_text": "- [ ] review\n"},
    obj(["path", "insert_line", "insert_text"], path=PATH,
        insert_line=integer("Line after which to insert; 0 for the top.", minimum=0),
        insert_text=string("Text to insert.")),
    mutates=True,
)
def insert(ws: Workspace, args: dict[str, Any], who: Identity) -> Result:
    refuse_binary(args, "insert_text")
    rel, _ = _target(ws, args["path"])
    at, text_in = args["insert_line"], args["insert_text"]

    def stage(txn: Txn) -> Outcome:
        lines = _existing(txn, rel).split("\n")
        trailing = lines[-1] == ""
        count = len(lines) - 1 if trailing else len(lines)
        if at > count:
            raise ToolFailed(
                f"Invalid `insert_line` parameter: {str(at)[:20]}. It should be within the range "
                f"[0, {count}].", hint=f"0 inserts before the first line, {count} after the last.")
        new_lines = text_in[:-1].split("\n") if text_in.endswith("\n") else text_in.split("\n")
        lines[at:at] = new_lines
        txn.write(rel, "\n".join(lines).encode("utf-8"))
        return Outcome(f"The file {rel} has been edited.", f"insert {rel}:{at}")

    return ws.transact(who.op({**args, "path": rel}), stage, who.author)


@builtin(
    "append",
    "Append text to the end of a file, creating it if needed. Nothing is added between the old "
    "end and the text: start the text with a newline if the file may not end with one.",
    {"path": "notes/log.md", "text": "- tried the east corridor: dead end\n"},
    obj(["path", "text"], path=PATH, text=string("Text to append.", minLength=1)),
    mutates=True,
)
def append(ws: Workspace, args: dict[str, Any], who: Identity) -> Result:
    refuse_binary(args, "text")
    rel, _ = _target(ws, args["path"])

    def stage(txn: Txn) -> Outcome:
        current = txn.read(rel)
        if current is not None:
            decode(rel, current)
        txn.write(rel, (current or b"") + args["text"].encode("utf-8"))
        return Outcome(f"Appended {len(args['text']):,} characters to {rel}.", f"append {rel}")

    return ws.transact(who.op({**args, "path": rel}), stage, who.author)


@builtin(
    "delete",
    "Delete a file, or every tracked file under a folder. Untracked files are never deleted. "
    "Deleting is recorded like any op: undo brings the files back.",
    {"path": "notes/old.md"},
    obj(["path"], path=PATH),
    mutates=True,
    idempotent=True,
    destructive=True,
)
def delete(ws: Workspace, args: dict[str, Any], who: Identity) -> Result:
    rel, full = _target(ws, args["path"])

    def stage(txn: Txn) -> Outcome:
        entry = txn.entry(rel)
        if entry is not None and entry.is_tree:
            victims = [f"{rel}/{p}" for p, _ in ws.repo.walk_files(entry.sha)]
        elif entry is not None or full.is_file() or full.is_symlink():
            victims = [rel]
        else:
            raise ToolFailed(f"{rel} does not exist.")
        for victim in victims:
            txn.read(victim)
            txn.delete(victim)
        return Outcome(f"Successfully deleted {rel}" + (f" ({len(victims)} files)"
                       if len(victims) > 1 else ""), f"delete {rel}")

    return ws.transact(who.op({**args, "path": rel}), stage, who.author)


@builtin(
    "rename",
    "Move or rename a file or folder. Refused if the destination exists.",
    {"old_path": "notes/draft.md", "new_path": "notes/final.md"},
    obj(["old_path", "new_path"], old_path=PATH, new_path=PATH),
    mutates=True,
)
def rename(ws: Workspace, args: dict[str, Any], who: Identity) -> Result:
    src, src_full = _target(ws, args["old_path"])
    dst, dst_full = _target(ws, args["new_path"])
    if dst == src or dst.startswith(src + "/"):
        raise ToolFailed(f"Cannot move {src} onto itself or into itself.",
                         hint="Give a new_path outside old_path.")

    def stage(txn: Txn) -> Outcome:
        if dst_full.exists() or dst_full.is_symlink() or txn.entry(dst) is not None:
            raise ToolFailed(f"Error: The destination {dst} already exists")
        entry = txn.entry(src)
        if entry is not None and entry.is_tree:
            moves = [(f"{src}/{p}", f"{dst}/{p}") for p, _ in ws.repo.walk_files(entry.sha)]
        elif src_full.is_file() or src_full.is_symlink() or entry is not None:
            moves = [(src, dst)]
        else:
            raise ToolFailed(f"{src} does not exist.")
        for old, new in moves:
            data = txn.read(old)
            if data is None:
                continue
            mode = txn.mode(old)
            txn.delete(old)
            txn.read(new)
            txn.write(new, data, mode)
        return Outcome(f"Successfully renamed {src} to {dst}", f"rename {src} -> {dst}")

    return ws.transact(who.op({"new_path": dst, "old_path": src}), stage, who.author)


@builtin(
    "search",
    f"Search file contents for a regular expression (POSIX extended). Returns at most {SEARCH_CAP} "
    "matching lines as path:line: text, and says how many more there were.",
    {"pattern": "TODO|FIXME", "path": "notes"},
    obj(["pattern"], pattern=string("Extended regular expression.", minLength=1),
        path=string("Folder or file to search in; the whole workspace when omitted.")),
    mutates=False,
)
def search(ws: Workspace, args: dict[str, Any], who: Identity) -> Result:
    rel = paths.resolve(ws.root, args.get("path", ""), allow_root=True)[0]
    proc = ws.repo.run_git(
        "grep", "--untracked", "-I", "-n", "-z", "-E", "--no-color", "-e", args["pattern"], "--",
        rel or ".",
    )
    if proc.returncode not in (0, 1):
        why = proc.stderr.decode("utf-8", "replace").strip().splitlines() or ["git grep failed"]
        raise ToolFailed(f"The pattern could not be used: {why[-1][:300]}",
                         hint="It is a POSIX extended regular expression: put a backslash before "
                         "( ) [ ] { } . * + ? | ^ $ to match one literally.")
    matches = _grep_matches(proc.stdout)
    if not matches:
        return Result(ok=True, text=f"No matches for {args['pattern']!r}.", tool=who.tool)
    kept, dropped = _as_on_disk(ws, matches[:SEARCH_CAP])
    shown = [_clip(f"{path}:{number}:{line}") for path, number, line in kept]
    more = (f"\n... {len(matches) - SEARCH_CAP} more matches not shown; narrow the pattern or "
            "path." if len(matches) > SEARCH_CAP else "")
    if dropped:
        more += (f"\n({dropped} matching line(s) changed while they were read and are not shown; "
                 "search again.)")
    return Result(ok=True, text=f"{len(matches)} matching lines:\n" + "\n".join(shown) + more,
                  tool=who.tool)


Match = tuple[str, int, bytes]


def _grep_matches(out: bytes) -> list[Match]:
    """``git grep -z -n`` records: path NUL line-number NUL text LF (a path may hold a LF)."""
    found: list[Match] = []
    at = 0
    while at < len(out):
        path_end = out.index(b"\0", at)
        number_end = out.index(b"\0", path_end + 1)
        line_end = out.find(b"\n", number_end + 1)
        line_end = len(out) if line_end < 0 else line_end
        found.append((os.fsdecode(out[at:path_end]), int(out[path_end + 1:number_end]),
                      out[number_end + 1:line_end]))
        at = line_end + 1
    return found


def _as_on_disk(ws: Workspace, matches: list[Match]) -> tuple[list[tuple[str, int, str]], int]:
    """The matches a no-follow read of each file confirms, and how many it did not. git grep
    opens paths as paths: a folder swapped for a link to elsewhere while it runs would let a line
    of some outside file through. Only what the workspace's own file holds is shown."""
    files: dict[str, list[bytes] | None] = {}
    kept: list[tuple[str, int, str]] = []
    for path, number, line in matches:
        if path not in files:
            try:
                state = ws.files.read(path, limit=SEARCH_READ_CAP)
            except GitspaceError:
                state = None
            files[path] = None if state is None or state[1] == LINK_MODE else \
                state[0].split(b"\n")
        lines = files[path]
        if lines is not None and 0 < number <= len(lines) and lines[number - 1] == line:
            shown = path.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
            kept.append((shown, number, line.decode("utf-8", "replace")))
    return kept, len(matches) - len(kept)


def _clip(line: str) -> str:
    return line if len(line) <= 240 else line[:239] + "…"
