"""What a recorded harness call is called: subjects, recorded arguments, titles, turn names.

The one recorder (``recorder.py``) writes the same op for the same call wherever it records it
(replay re-executes these: tool name as given, input as args, paths relative to the checkout).
Light: the standard library and the ledger only.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable

from ..storage import ids, ledger
from ..storage.gitrepo import GitRepo
from ..storage.objects import Entry
from . import adapters
from .announce import relative
from .events import Call

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

ARGS_CAP = 64 * 1024  # a whole input beyond this is recorded as its hash and size only
PATH_KEYS = ("file_path", "notebook_path", "path")


def title(agent: str) -> str:
    """How people call harness ``agent`` (its adapter's title: ``adapters.py``)."""
    return adapters.title(agent)


def token(value: str | None) -> str | None:
    return value if value is not None and ledger.TOKEN.fullmatch(value) else None


def plain_name(text: str) -> str:
    """``text`` (a harness's or session's name: anyone's) as a part of a file or ref name: letters,
    digits, ``._-`` only, never two dots in a row (git refuses ``..`` in a ref), never starting or
    ending with a dot or dash, at most 40 characters."""
    plain = re.sub(r"\.{2,}", ".", re.sub(r"[^A-Za-z0-9._-]", "-", text))
    return plain[:40].strip(".-") or "x"


def turn_name(agent: str, session: str | None, number: int) -> str:
    """The checkpoint a turn ends at: ``<agent>-<the session's 8 of its short form>-turn-<n>``
    (``ids.session_body``: a UUID's first 8, a ULID's last 8), a name git accepts whatever the
    harness sent (``gitnames.ref_refusal``)."""
    from ..storage.gitnames import ref_refusal

    middle = f"-{plain_name(ids.session_body(session))}" if session else ""
    name = f"{plain_name(agent)}{middle}-turn-{number}"
    assert ref_refusal(f"refs/gitspace/turns/{name}") is None, name  # (plain_name makes it so)
    return name


def free_turn_name(agent: str, session: str | None, number: int,
                   taken: Callable[[str], bool]) -> str:
    """``turn_name``, with ``.2``, ``.3``... after it while ``taken(name)`` (a session whose
    turns were counted afresh)."""
    base = turn_name(agent, session, number)
    name, k = base, 1
    while taken(name):
        k += 1
        name = f"{base}.{k}"
    return name


TURN = re.compile(r"(?P<prefix>.+)-turn-(?P<number>\d+)(?:\.\d+)?")


def subject(call: Call, changes: dict[str, Entry | None]) -> str:
    command = call.args.get("command")
    if call.paths is None and isinstance(command, str):
        return f"{call.tool}: {command}"
    first = sorted(changes)[0]
    more = f" and {len(changes) - 1} more" if len(changes) > 1 else ""
    return f"{call.tool} {first}{more}"


def recorded_args(repo: GitRepo, cwd: str | None, call: Call,
                  changes: dict[str, Entry | None]) -> dict[str, Any]:
    """The call's input as the ledger keeps it: workspace paths made relative, long strings
    elided to the blob that holds them or to their hash (ledger format 2)."""
    blobs = {e.sha for e in changes.values() if e is not None}

    def keep(value: Any, key: str | None = None) -> Any:
        if isinstance(value, str):
            if key in PATH_KEYS and os.path.isabs(value):
                rel = relative(repo.root, cwd, value)
                return rel if rel is not None else value
            if len(value) <= ledger.ARG_LIMIT:
                return value
            data = value.encode("utf-8", "surrogatepass")
            sha = repo.hash_object("blob", data)
            return ({"$blob": sha, "bytes": len(data)} if sha in blobs else ledger.omit(value))
        if isinstance(value, dict):
            return {str(k): keep(v, str(k)) for k, v in value.items()}
        if isinstance(value, list):
            return [keep(v) for v in value]
        return value

    args = keep(call.args)
    size = len(ledger.canonical_json(args))
    if size > ARGS_CAP:
        return {"input": ledger.omit(ledger.canonical_json(call.args))}
    return args
