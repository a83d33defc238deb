"""``gitspace hook NAME`` and ``gitspace record``: the commands a harness runs, kept fast and safe.

Invariants:
- ``gitspace hook NAME`` never blocks or breaks the harness: it reads one JSON payload on stdin,
  and whatever happens (bad JSON, a payload for another folder, a locked or broken workspace, a
  bug) it exits 0, saying why on stderr; a failure marks the worktree so the next hook call
  records what was left as an outside edit. ``gitspace record`` is a command for people and
  scripts: bad input exits 1 with a sentence, as every other command does.
- The import path is small: this module and what ``record`` needs, never typer, rich or the CLI,
  and GitPython only when an object must be read from a pack (see ``storage.objects``).
- The payload is read and checked by ``payload.py`` (a size cap, depth, places that cannot be,
  text that is no Unicode) before anything acts on it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from .adapters import ADAPTERS, adapter, project_dir_variable

TYPE_CHECKING = False  # typing is not imported at run time: this runs on every tool call
if TYPE_CHECKING:
    from typing import Any, TextIO

USAGE = ("usage: gitspace hook {" + ",".join(ADAPTERS) + "} [--quiet-outside] "
         "[--commit-transcript] < payload.json\n       gitspace record < call.json")


def main(argv: list[str], stdin: Any = None, stdout: TextIO | None = None,
         stderr: TextIO | None = None, cwd: str | None = None) -> int:
    """Run ``hook NAME ...`` or ``record`` (``argv`` starts with the command); the exit code.
    ``cwd``: the folder to record in when the payload names none (``gitspace -C DIR``)."""
    stdin = stdin if stdin is not None else sys.stdin.buffer
    out, err = stdout or sys.stdout, stderr or sys.stderr
    command, rest = (argv[0] if argv else ""), argv[1:]
    flags = {a for a in rest if a.startswith("--")}
    names = [a for a in rest if not a.startswith("--")]
    known = {"--quiet-outside", "--commit-transcript"}
    if command not in ("hook", "record") or (command == "hook" and len(names) != 1) \
            or (command == "record" and names) or flags - known:
        err.write(USAGE + "\n")
        return 0 if command == "hook" else 2  # exit 2 would block a harness's tool call
    hook = command == "hook"
    name = names[0] if hook else "generic"
    try:
        spec_stdout = adapter(name).SPEC.stdout if hook else ""
    except Exception as e:  # noqa: BLE001  (an unknown harness: say so, never break it)
        err.write(f"gitspace: {e}\n")
        return 0 if hook else 2
    code = _run(name, hook, flags, stdin, err, None if hook else out, cwd, resident=hook)
    if spec_stdout:
        out.write(spec_stdout + "\n")
    return code


def run(name: str, flags: set[str], payload: bytes, err: TextIO, cwd: str | None = None,
        changed: frozenset[str] | None = None) -> int:
    """One hook call of harness ``name`` on ``payload``, recorded in this process exactly as
    ``gitspace hook NAME`` records it: how the resident recorder records (harness/resident/);
    ``changed``: what its watcher saw change since the last scan (``Options.changed``)."""
    import io

    return _run(name, True, flags, io.BytesIO(payload), err, None, cwd, changed=changed)


def _run(name: str, hook: bool, flags: set[str], stdin: Any, err: TextIO,
         out: TextIO | None = None, cwd: str | None = None, resident: bool = False,
         changed: frozenset[str] | None = None) -> int:
    """One hook call (``out``: where ``record`` says what it recorded; a hook says nothing).
    ``resident``: hand it to the checkout's resident recorder when one answers, and otherwise
    first record what a killed one left (harness/resident/client.py)."""
    import io

    from .. import config
    from ..errors import GitspaceError
    from .events import NothingRecorded, Options, PayloadRefused
    from .payload import MAX_PAYLOAD
    from .payload import read as read_payload

    start = Path(cwd or os.getcwd())
    session = ""
    try:
        raw = stdin.read(MAX_PAYLOAD + 1)
        payload = read_payload(io.BytesIO(raw))  # the one validator of what harnesses send
        module = adapter(name) if hook else __import__(
            f"{__package__}.generic", fromlist=["event"])
        event = module.event(payload)
        session = event.session or ""
        if not hook and event.kind == "ignored":
            raise PayloadRefused(event.note, hint="See 'gitspace record --help'.")
        project = config.project_dir(project_dir_variable(event.agent))
        start = Path(project or event.cwd or start)
        if resident and config.resident_enabled():
            from .resident import client

            notes = client.forward(start, name, sorted(flags), raw)
            if notes is not None:
                err.write(notes)
                return 0
            said = client.without(start, name, sorted(flags), event,
                                  lambda harness, kept, left: run(harness, set(kept), left,
                                                                  io.StringIO(), str(start)))
            if said and _first_time(start, session, "resident"):
                err.write(f"gitspace: {said}\n")
        options = Options(quiet_outside="--quiet-outside" in flags,
                          commit_transcript="--commit-transcript" in flags,
                          max_file_bytes=config.max_file_bytes(), author=config.default_author(),
                          changed=changed)
        from .route import handle

        outcome = handle(event, start, options, asked=not hook)
        for note in outcome.notes:
            err.write(f"gitspace: {note}\n")
        if out is not None:
            out.write(_recorded(event, outcome) + "\n")
        return 0
    except NothingRecorded as e:  # said once, plainly: not a failure to catch up on
        if not hook or _first_time(start, session):
            err.write(f"gitspace: {e}\n")
        return 0 if hook else 1
    except GitspaceError as e:
        err.write(f"gitspace: {e}\n" + ("gitspace: nothing was lost: the next call records what "
                                         "this one could not.\n" if hook else ""))
        _note_failure(start, str(e))
        return 0 if hook else 1
    except Exception as e:  # noqa: BLE001  (a hook must never break its harness)
        err.write(f"gitspace: unexpected {type(e).__name__}: {e}. This is a bug in gitspace; the "
                  "next call records what this one could not.\n")
        _note_failure(start, f"{type(e).__name__}: {e}")
        return 0 if hook else 3


def _recorded(event: Any, outcome: Any) -> str:
    """What ``gitspace record`` says it did: the ops it made, by the short id log shows."""
    from ..storage.ledger import short_id

    if outcome.ops:
        shown = ", ".join(f"{short_id(op)} ({op})" for op in outcome.ops)
        tool = event.call.tool if event.call is not None else "the call"
        return f"Recorded {tool} as op {shown}." if len(outcome.ops) == 1 \
            else f"Recorded {len(outcome.ops)} ops: {shown}."
    if event.kind == "before":
        return "Noted the call's start; its after phase records what it changed."
    return "unchanged: the call changed no file, so no op was recorded."


def _first_time(start: Path, session: str, what: str = "nothing") -> bool:
    """Has this hook not said ``what`` yet, for this folder and session (that it records nothing
    here, that the resident recorder was not running)? It says each once: the mark is a file in
    a folder of the user's temporary directory."""
    import hashlib
    import stat
    import tempfile

    base = Path(tempfile.gettempdir()) / f"gitspace-{os.getuid()}"
    key = f"{start.resolve()}\0{session}" + ("" if what == "nothing" else f"\0{what}")
    mark = base / "said" / hashlib.sha1(key.encode()).hexdigest()
    try:
        for folder in (base, base / "said"):
            try:
                os.mkdir(folder, 0o700)
            except FileExistsError:
                pass
            # A folder everyone may write in: only one of the person's own, that no one else
            # can change, holds the mark (anything else planted there is never written into).
            st = os.lstat(folder)
            if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
                return True
        os.close(os.open(mark, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
    except FileExistsError:
        return False
    except OSError:
        return True
    return True


def _note_failure(start: Path, reason: str) -> None:
    """Mark the worktree for the next call to catch up, if that can be done at all (the note's
    own folder may be what failed)."""
    from .route import note_failure

    try:
        note_failure(start, reason)
    except Exception:  # noqa: BLE001  (a hook must never break its harness)
        pass
