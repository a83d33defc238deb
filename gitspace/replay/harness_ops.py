"""Another harness's op, re-checked: its file edits re-done from their input, its commands bounded.

Invariant: ``recheck`` decides one commit of source ``harness`` whose paths ``judge`` already
found to be exactly those its ``Gitspace-Paths`` lists. It never runs the harness: a file tool
it knows (``EDITORS``: Claude Code's Write, Edit and MultiEdit, Gemini CLI's write_file and
replace, Cursor's edits, Codex's apply_patch) is re-done from its recorded input on the replayed
files with the harness's own rules (``edits``, ``apply_patch``), and the tree that gives must be
the commit's. Anything else (a shell command, NotebookEdit, a ``gitspace record`` call) is applied
as recorded: it changed exactly the paths it lists, and nothing more can be known.

Arguments come back as for gitspace's own tools: a ``$blob`` from the object store (a file the
op wrote, as the recorder elides only those, and UTF-8 text), and an ``$omitted`` string (longer
than 4,096 characters and no file's content) from the commit's own files, accepted only when its
SHA-1 and size are the recorded ones. An input that cannot be recovered exactly, or an op whose
file is not one it lists, is a divergence: the op cannot be checked.

Re-doing it costs at most what its ``Budget`` allows (``budget.py``: a multiple of the bytes of
its arguments and of the files it lists, before and after); an op that would cost more is a
divergence too, found before the work that would exceed it is done.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ..storage import ledger
from ..storage.loose import sha1_hex
from ..storage.objects import Commit, Entry
from . import apply_patch, edits
from .budget import Budget, OverBudget
from .edits import Edit, EditResult, Refused
from .judge import Divergence, diverged
from .scratch import Scratch

Files = dict[str, bytes | None]
# What an editor returns: each path it writes mapped to its new content (None: deleted).
Editor = Callable[[dict[str, Any], Files, Budget], dict[str, EditResult | None]]


@dataclass(frozen=True)
class Recheck:
    """``because``: applied as recorded, and why; else re-executed (``divergence`` if it failed)."""

    because: str | None = None
    divergence: Divergence | None = None


def recheck(sc: Scratch, commit: Commit, op: ledger.Op) -> Recheck:
    editor = EDITORS.get((op.agent or "", op.tool))
    if editor is None:
        return Recheck(because="harness command" if op.tool in COMMANDS.get(op.agent or "", ())
                       else "harness op, not re-executable")
    harness = HARNESSES.get(op.agent or "", op.agent or "the harness")
    listed = list(op.paths or ())
    cost = Budget(recorded_size(sc, commit, op, listed))
    try:
        args = recovered(sc, commit, op, listed, cost)
        targets = editor.targets(args, listed)
        before = _targets(sc, targets, listed, op, cost)
    except (Unchecked, Refused, OverBudget) as e:
        return Recheck(divergence=diverged(sc, commit, op, f"its {op.tool} call cannot be "
                                           f"checked: {e}."))
    try:
        after = editor.run(args, before, cost)
    except OverBudget as e:
        return Recheck(divergence=diverged(sc, commit, op, f"its {op.tool} call cannot be "
                                           f"checked: {e}."))
    except Refused as e:
        return Recheck(divergence=diverged(sc, commit, op, f"re-doing {harness}'s {op.tool} from "
                                           f"its recorded input is refused: {e}. {harness} would "
                                           "not have changed the files, so it cannot have made "
                                           "this commit."))
    tree = _replayed_tree(sc, commit, after)
    if tree == commit.tree:
        return Recheck()
    return Recheck(divergence=diverged(sc, commit, op, f"re-doing {harness}'s {op.tool} from its "
                                       "recorded input gives different files than the commit "
                                       "has.", tree))


def recorded_size(sc: Scratch, commit: Commit, op: ledger.Op, listed: list[str]) -> int:
    """The bytes an op recorded: its arguments, and the files it lists before and after."""
    size = len(ledger.canonical_json(op.args))
    for tree in (sc.tree(), commit.tree):
        for path in listed:
            entry = sc.repo.entry_at(tree, path)
            if entry is not None and not entry.is_tree:
                size += len(sc.repo.read_blob(entry.sha))
    return size


def _targets(sc: Scratch, targets: list[str], listed: list[str], op: ledger.Op,
             cost: Budget) -> Files:
    """The files the call writes, as the replayed tree holds them. A path it does not list is
    read only when the op says it changed more paths than it lists (and costs its size)."""
    out: Files = {}
    for path in targets:
        if path not in listed:
            if (op.path_count or 0) <= len(listed):
                raise Unchecked(f"it writes {path[:200]!r}, which is not one of the paths it "
                                "lists")
            entry = sc.repo.entry_at(sc.tree(), path)
            if entry is not None and not entry.is_tree:  # (its size is counted before it is read)
                cost.spend(int(sc.repo.git("cat-file", "-s", entry.sha).decode().strip()))
        out[path] = _file(sc, sc.tree(), path)
    return out


class Unchecked(Exception):  # noqa: N818 (a reason, shown in the divergence)
    """The op's input cannot be recovered exactly, or does not say which file it wrote."""


def _file(sc: Scratch, tree: str, path: str) -> bytes | None:
    entry = sc.repo.entry_at(tree, path)
    if entry is None:
        return None
    if entry.mode not in (0o100644, 0o100755):
        raise Unchecked(f"{path} is not a regular file in the replayed tree")
    return sc.repo.read_blob(entry.sha)


def _replayed_tree(sc: Scratch, commit: Commit, after: dict[str, EditResult | None]) -> str:
    """The replayed files with the editor's results; where a harness version may have written
    either of two contents (``EditResult.also``), the one the commit holds."""
    base = sc.tree()
    changes: dict[str, Entry | None] = {}
    for path, result in after.items():
        if result is None:
            changes[path] = None
            continue
        recorded = sc.repo.entry_at(commit.tree, path)
        data = result.data
        if result.also is not None and recorded is not None \
                and sc.repo.read_blob(recorded.sha) == result.also:
            data = result.also
        old = sc.repo.entry_at(base, path)
        changes[path] = Entry(old.mode if old else 0o100644, sc.repo.write_blob(data))
    return sc.repo.update_tree(base, changes)


# -- arguments -------------------------------------------------------------------------------

def recovered(sc: Scratch, commit: Commit, op: ledger.Op, listed: list[str],
              cost: Budget) -> dict[str, Any]:
    """The op's input with ``$blob`` and ``$omitted`` strings restored (see the docstring)."""
    written = {entry.sha for path in listed
               if (entry := sc.repo.entry_at(commit.tree, path)) is not None}
    args = _blobs(sc, op.args, written, cost)
    omitted = [key for key, value in args.items() if _is_omitted(value)]
    rest = [value for key, value in args.items() if key not in omitted]
    if _has_omitted(rest) or any(key not in RECOVERABLE for key in omitted):
        raise Unchecked("part of its input was not recorded (longer than the ledger keeps, and "
                        "no file's content), and only a file's whole content, an old_string or a "
                        "new_string can be recovered from the commit")
    for key in omitted:
        args[key] = _recover(sc, commit, args, key, listed, cost)
    return args


def _blobs(sc: Scratch, value: Any, written: set[str], cost: Budget) -> Any:
    if isinstance(value, dict) and set(value) == {"$blob", "bytes"}:
        sha = value["$blob"]
        if not (isinstance(sha, str) and ledger.SHA.fullmatch(sha) and sc.repo.has_object(sha)):
            raise Unchecked(f"its elided argument names blob {str(sha)[:12]}, which is not in the "
                          "repository")
        if sha not in written:  # (the recorder elides only a file the call wrote)
            raise Unchecked(f"its elided argument names blob {sha[:12]}, which is none of the "
                            "files it lists as it left them")
        data = sc.repo.read_blob(sha)
        cost.spend(len(data))
        if len(data) != value["bytes"]:
            raise Unchecked(f"its elided argument says {value['bytes']} bytes, but blob {sha[:12]} "
                          f"has {len(data)}")
        try:
            return data.decode("utf-8", "surrogatepass")
        except UnicodeDecodeError:
            raise Unchecked(f"its elided argument names blob {sha[:12]}, which is not UTF-8 text, "
                            "so no harness sent it as a string") from None
    if isinstance(value, dict):
        return {k: _blobs(sc, v, written, cost) for k, v in value.items()}
    if isinstance(value, list):
        return [_blobs(sc, v, written, cost) for v in value]
    return value


def _is_omitted(value: Any) -> bool:
    return isinstance(value, dict) and "$omitted" in value


def _has_omitted(value: Any) -> bool:
    if _is_omitted(value):
        return True
    if isinstance(value, dict):
        value = list(value.values())
    return isinstance(value, list) and any(_has_omitted(v) for v in value)


def _recover(sc: Scratch, commit: Commit, args: dict[str, Any], key: str,
             listed: list[str], cost: Budget) -> str:
    """An omitted ``content``, ``new_string`` or ``old_string``, read from the files around the
    edit and accepted only if it has the recorded SHA-1 and size."""
    want = args[key]
    path = _one_path(args, listed)
    before, after = _file(sc, sc.tree(), path), _file(sc, commit.tree, path)
    if after is None:
        raise Unchecked(f"its {key} was not recorded, and the commit removes {path}")
    cost.spend(2 * (len(before or b"") + len(after)))  # read as text, compared for where it changed
    if key == "content":
        candidates: Iterator[str] = iter([_as_sent(after)])
    else:
        old, new = edits.read_text(before), edits.read_text(after)
        assert new is not None
        candidates = _edit_candidates(old.body if old else "", new.body, args, key)
    for text in candidates:
        data = text.encode("utf-8", "surrogatepass")
        cost.spend(len(data))
        if len(data) == want.get("bytes") and sha1_hex(data) == want.get("$omitted"):
            return text
    raise Unchecked(f"its {key} was not recorded, and no text around the change in {path} has "
                    "the recorded hash and size")


def _as_sent(data: bytes) -> str:
    """A written file's text as a Write sent it: its encoding and byte-order mark undone."""
    text = edits.read_text(data)
    assert text is not None
    raw = data.decode(text.encoding, "surrogatepass")
    return raw[1:] if text.bom else raw


def _edit_candidates(before: str, after: str, args: dict[str, Any], key: str) -> Iterator[str]:
    """The texts an edit's omitted string can be, one at a time (each is as long as the file
    may be): where the edit starts, as long as recorded."""
    old, new, size = args.get("old_string"), args.get("new_string"), args[key].get("bytes")
    if not isinstance(size, int):
        return
    if key == "new_string" and isinstance(old, str) and old:
        at = before.find(old)
        if at >= 0:
            yield from _prefix_of_size(after[at:], size)
        return
    if key == "old_string" and isinstance(new, str):
        # The edit replaced before[i:i + length] by new: the files agree before i and after it.
        length = len(before) - len(after) + len(new)
        if length <= 0 or not length <= size <= 4 * length or (
                before.isascii() and size != length):
            return  # no text of that many characters has that many bytes in UTF-8
        shared = len(posixpath.commonprefix([before, after]))
        tail = len(posixpath.commonprefix([before[::-1], after[::-1]]))
        lowest = max(shared - len(new), len(before) - tail - length, 0)
        if shared - lowest > RECOVERY_TRIES:
            return
        for i in range(shared, lowest - 1, -1):
            if after.startswith(new, i):  # (else the edit did not put new there)
                yield before[i:i + length]


def _prefix_of_size(text: str, size: int) -> list[str]:
    used = 0
    for i, c in enumerate(text):
        if used == size:
            return [text[:i]]
        used += len(c.encode("utf-8", "surrogatepass"))
    return [text] if used == size else []


def _one_path(args: dict[str, Any], listed: list[str]) -> str:
    path = args.get("file_path")
    if isinstance(path, str) and path in listed:
        return path
    if len(listed) == 1:
        return listed[0]  # an absolute file_path the recorder could not make relative
    raise Unchecked(f"its file_path {str(path)[:200]!r} is not one of the paths it lists "
                  f"({', '.join(listed[:5]) or 'none'})")


# -- the editors -----------------------------------------------------------------------------

@dataclass(frozen=True)
class FileTool:
    """A harness's file tool: which paths a call writes, and what it writes there."""

    targets: Callable[[dict[str, Any], list[str]], list[str]]
    run: Editor


def _single(fn: Callable[[dict[str, Any], bytes | None, str, Budget], EditResult]) -> FileTool:
    def targets(args: dict[str, Any], listed: list[str]) -> list[str]:
        args["file_path"] = path = _one_path(args, listed)
        return [path]

    def run(args: dict[str, Any], files: Files, cost: Budget) -> dict[str, EditResult | None]:
        path = args["file_path"]
        return {path: fn(args, files[path], path, cost)}

    return FileTool(targets, run)


def _text(args: dict[str, Any], key: str) -> str:
    value = args.get(key)
    if not isinstance(value, str):
        raise Refused(f"its input has no text {key}")
    return value


def _edit_list(items: Any, every_key: str = "replace_all") -> list[Edit]:
    if not isinstance(items, list) or not all(isinstance(e, dict) for e in items):
        raise Refused("its edits are not a list of objects")
    return [Edit(_text(e, "old_string"), _text(e, "new_string"), e.get(every_key) is True)
            for e in items]


def _claude_edit(args: dict[str, Any], before: bytes | None, path: str, cost: Budget) -> EditResult:
    if "edits" in args:
        return edits.claude_edit(before, path, _edit_list(args["edits"]), cost)
    one = Edit(_text(args, "old_string"), _text(args, "new_string"), args.get("replace_all") is True)
    return edits.claude_edit(before, path, [one], cost)


def _gemini_replace(args: dict[str, Any], before: bytes | None, path: str,
                    cost: Budget) -> EditResult:
    expected = args.get("expected_replacements", 1)
    if not isinstance(expected, int) or isinstance(expected, bool) or expected < 1:
        raise Refused("its expected_replacements is not a positive number")
    return edits.gemini_replace(before, _text(args, "old_string"), _text(args, "new_string"),
                                expected, cost)


def _patch_targets(args: dict[str, Any], listed: list[str]) -> list[str]:
    hunks = apply_patch.parse(_text(args, "command"))
    for hunk in hunks:
        hunk.path = _listed_as(hunk.path, listed)
        hunk.move_to = hunk.move_to and _listed_as(hunk.move_to, listed)
    args["hunks"] = hunks
    return sorted({p for h in hunks for p in (h.path, h.move_to) if p})


def _listed_as(given: str, listed: list[str]) -> str:
    """A patch's path (relative to where Codex ran, or absolute) as the listed path it names."""
    clean = posixpath.normpath(given)
    for path in listed:
        if clean == path or clean.endswith("/" + path):
            return path
    return clean.lstrip("/")  # a path it does not list: the tree comparison reports it


def _patch(args: dict[str, Any], files: Files, cost: Budget) -> dict[str, EditResult | None]:
    return apply_patch.apply(args["hunks"], files, cost)


EDITORS: dict[tuple[str, str], FileTool] = {
    ("claude-code", "Write"): _single(lambda a, b, p, c: edits.claude_write(b, _text(a, "content"),
                                                                         c)),
    ("claude-code", "Edit"): _single(_claude_edit),
    ("claude-code", "MultiEdit"): _single(_claude_edit),
    ("gemini-cli", "write_file"): _single(lambda a, b, p, c: edits.gemini_write(
        b, _text(a, "content"), c)),
    ("gemini-cli", "replace"): _single(_gemini_replace),
    ("cursor", "Edit"): _single(lambda a, b, p, c: edits.cursor_edits(b, _edit_list(a.get("edits")),
                                                                      c)),
    ("codex", "apply_patch"): FileTool(_patch_targets, _patch),
}
# Omitted strings recovered from the commit (a Write's content, an Edit's one replacement), and
# how many places an omitted old_string may start at before recovery gives up.
RECOVERABLE = ("content", "new_string", "old_string")
RECOVERY_TRIES = 4096
# The harnesses' shell tools: applied as recorded, bounded by the paths they list.
COMMANDS = {"claude-code": ("Bash",), "codex": ("Bash",), "gemini-cli": ("run_shell_command",),
            "cursor": ("Shell",)}
HARNESSES = {"claude-code": "Claude Code", "codex": "Codex", "gemini-cli": "Gemini CLI",
             "cursor": "Cursor"}
