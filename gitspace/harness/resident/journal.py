"""The requests a resident recorder has received and not yet recorded, kept so that none is lost
when it is killed: ``<git dir>/gitspace/resident/journal/``.

Invariants:
- A request is kept (``keep``) before it is recorded and dropped (``done``) once it is; a
  resident killed in between leaves it, and whoever records next in the checkout (a new
  resident, or a hook in its own process) records what was left first, oldest first
  (``replay``), so a call's op still carries its tool-use id.
- A replay records only what records something: a call's end (after, failed), a turn's start
  and end. The recorder knows an event it saw already and records it once
  (``state.seen_before``). A call's start is dropped: announced late, after the tool ran, it
  would take what the tool wrote for what was there before; without it the call's end records
  what changed against the place's tree.
- An entry is one file, written whole (``statefiles``: a temporary file, then a rename), named
  by the time it arrived: a header line (the harness, the hook's flags) and the payload as it
  came. One that cannot be read is dropped, never acted on.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from ...storage import statefiles
from .home import FOLDER

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

JOURNAL = f"{FOLDER}/journal"
RECORDS = ("after", "failed", "prompt", "stop")  # what a replay records (see the docstring)


def keep(gitdir: Path, harness: str, flags: list[str], payload: bytes) -> str:
    """Keep a request until ``done``; its entry's name."""
    name = f"{time.time_ns():020d}-{os.getpid()}-{os.urandom(4).hex()}.json"
    header = json.dumps({"harness": harness, "flags": flags}).encode()
    statefiles.write(gitdir, f"{JOURNAL}/{name}", header + b"\n" + payload)
    return name


def done(gitdir: Path, name: str) -> None:
    statefiles.remove(gitdir, f"{JOURNAL}/{name}")


def left(gitdir: Path) -> list[str]:
    """The entries a killed recorder left, oldest first."""
    try:
        return sorted(n for n in statefiles.names(gitdir, JOURNAL)
                      if n.endswith(".json") and not n.startswith("."))
    except statefiles.StateRefused:
        return []


def replay(gitdir: Path, record: Callable[[str, list[str], bytes], object],
           keep_only: set[str] | None = None) -> int:
    """Record what was left (``record(harness, flags, payload)``), oldest first, each entry
    dropped once recorded; how many were recorded. ``keep_only``: entries not to touch (the
    requests being recorded now)."""
    recorded = 0
    for name in left(gitdir):
        if keep_only is not None and name in keep_only:
            continue
        entry = _read(gitdir, name)
        if entry is not None and _records(*entry):
            record(*entry)
            recorded += 1
        done(gitdir, name)
    return recorded


def _read(gitdir: Path, name: str) -> tuple[str, list[str], bytes] | None:
    from ..payload import MAX_PAYLOAD

    try:
        raw = statefiles.read(gitdir, f"{JOURNAL}/{name}", limit=MAX_PAYLOAD + 4096)
        if raw is None:
            return None
        head, _, payload = raw.partition(b"\n")
        header = json.loads(head)
        harness, flags = header["harness"], header["flags"]
    except (OSError, ValueError, KeyError, TypeError, statefiles.StateRefused):
        return None
    if not isinstance(harness, str) or not isinstance(flags, list) or \
            not all(isinstance(f, str) for f in flags):
        return None
    return harness, flags, payload


def _records(harness: str, flags: list[str], payload: bytes) -> bool:
    """Does this request record something (``RECORDS``)? One that cannot be read does not."""
    from ..adapters import adapter
    from ..payload import parse

    try:
        return adapter(harness).event(parse(payload)).kind in RECORDS
    except Exception:  # noqa: BLE001  (an entry no hook could read: dropped, never acted on)
        return False
