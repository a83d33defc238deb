"""JSON output: the schema version, the fields each command emits, and ``--json=FIELDS``.

Invariant: ``FIELDS`` is the contract docs/json.md documents (tests/test_cli_json.py checks that
the two and the real output agree). Within one ``SCHEMA`` version fields are only ever added;
renaming or removing one, or changing its type, bumps the version. ``--json=a,b`` keeps only the
named fields (``op.tool`` reaches into an object), as ``gh --json a,b`` does; an unknown name is a
usage error that lists the known ones.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported at run time: a read starts without it
if TYPE_CHECKING:
    from typing import Any

SCHEMA = 1

_ENTRY = ["commit", "parents", "time", "author", "agent", "subject", "files", "checkpoints", "op",
          "problem"]
FIELDS: dict[str, list[str]] = {
    "log": _ENTRY,
    "show": _ENTRY,
    "status": ["root", "branch", "detached", "tip", "pending", "too_large", "last_op"],
    "checkpoints": ["name", "commit", "branch", "agent", "time", "message"],
    "branches": ["name", "tip", "current"],
    "result": ["ok", "text", "tool", "op", "op_short", "commit", "changed", "external_op", "notes"],
    "verify": ["ok", "commits", "ops", "foreign", "problems"],
    "sessions": ["session", "session_short", "status", "agent", "client", "scripted", "steps", "task",
                 "parent_session", "parent_tool_use_id", "depth"],
    "session": ["session", "session_short", "status", "agent", "client", "scripted", "steps", "task",
                "parent_session", "parent_tool_use_id", "depth", "answer", "stats", "ops",
                "returns", "value", "children"],
    "run": ["status", "text", "session", "session_short", "calls", "steps", "stats", "exit_code", "value",
            "branch"],
    "tools": ["tools", "notes"],
    "attach": ["agent", "branch", "path", "start", "dirty", "existed", "resumed"],
    "agents": ["agent", "branch", "path", "tip", "ops", "last_op", "last_tool", "last_time"],
    "hooks": ["harness", "scope", "path", "installed", "partial", "command", "too_short", "trust",
              "note"],
    "turns": ["turn", "session", "session_short", "checkpoint", "commit", "time", "message"],
    "taken": ["op", "op_short", "turn", "files", "took_back"],
    "fork": ["session", "command", "cwd", "harness", "forked_from", "branch", "line", "fork_op",
             "files", "took_back", "transcript"],
    "sync": ["remote", "branch", "tip", "pulled", "rebased", "pushed", "dropped", "checkpoints",
             "attempts", "notes", "pushes", "waiting"],
    "replay": ["tip", "base", "total", "start", "reexecuted", "as_recorded", "recorded_why",
               "unverified", "scripts", "empty", "fetched", "onto", "branch", "created",
               "leftover", "ok", "result", "checked", "divergence", "summary"],
    "blame": ["line", "text", "commit", "kind", "author", "harness", "session", "op", "tool",
              "time", "model", "prompt", "key", "source"],
    "provenance": ["range", "commits", "total", "agents", "people"],
}
OP_FIELDS = ["id", "short", "tool", "args", "source", "agent", "session", "session_short",
             "failed", "tool_use_id", "undo_of", "redo_of", "parent_session", "parent_tool_use_id"]


class UnknownField(ValueError):
    """A ``--json=`` name the command does not emit."""


def parse_fields(text: str) -> list[str]:
    fields = [f.strip() for f in text.split(",") if f.strip()]
    if not fields:
        raise UnknownField("--json= needs at least one field name, e.g. --json=commit,op.")
    return fields


def check(kind: str, fields: list[str]) -> None:
    known = FIELDS.get(kind)
    if known is None:
        return
    for name in fields:
        head, _, rest = name.partition(".")
        if head not in known or rest and not (head == "op" and rest in OP_FIELDS):
            raise UnknownField(f"{kind} has no JSON field {name!r}. Fields: {', '.join(known)}"
                               + (f"; op.{{{','.join(OP_FIELDS)}}}" if "op" in known else "")
                               + ".")


def _pick(obj: Any, fields: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in fields:
        head, _, rest = name.partition(".")
        value = obj.get(head) if isinstance(obj, dict) else None
        if rest:
            inner = out.setdefault(head, {} if value is not None else None)
            if isinstance(inner, dict) and isinstance(value, dict):
                inner[rest] = value.get(rest)
        else:
            out[head] = value
    return out


def select(data: Any, fields: list[str] | None) -> Any:
    """``data`` (one object or a list of them) with only ``fields`` kept."""
    if fields is None:
        return data
    if isinstance(data, list):
        return [_pick(item, fields) for item in data]
    return _pick(data, fields)


def dumps(data: Any) -> str:
    import json  # (here: a read without --json never loads it)

    rows = _rows(json, data)
    return rows if rows is not None else json.dumps(data, indent=2, ensure_ascii=False)


_SCALARS = frozenset((str, int, float, bool, type(None)))
_STR = frozenset((str,))


def _rows(json: Any, data: Any) -> str | None:
    """``json.dumps(data, indent=2, ensure_ascii=False)`` exactly, for a list of objects of
    plain values (blame's, a line each); None for anything else. Python writes indented JSON
    in Python, several times slower than its C encoder writes compact JSON: so the C encoder
    writes it, its item separator a line break and the indent of a field. An encoded string
    holds no line break (it is escaped), so ``},<line break>`` followed by ``{`` is found only
    between two objects, where the indent of the list goes in."""
    if type(data) is not list or not data or not all(
            type(row) is dict and row and _SCALARS.issuperset(map(type, row.values()))
            and _STR.issuperset(map(type, row)) for row in data):
        return None
    text = json.dumps(data, ensure_ascii=False, separators=(",\n    ", ": "))
    return "[\n  {\n    " + text[2:-2].replace("},\n    {", "\n  },\n  {\n    ") + "\n  }\n]"
