"""Running a constraint script: its arguments in, its bounded answer out.

Invariant: a script runs only with arguments that fit its declared schema, and what comes back
is bounded (output capped, time capped); when the call returns, nothing the script started is
still running, however it detached.

How a script is run: the arguments arrive as one JSON object on stdin (with schema defaults
filled in); the working directory is the workspace root; the environment holds only PATH, locale
and the like (never API keys, tokens or ``GIT_*``) plus ``GITSPACE_WORKSPACE``, ``GITSPACE_TOOL``
and ``GITSPACE_CACHE_DIR`` (a folder the script may use for caches, when there is one), and
``GITSPACE_PROGRESS=1`` when a front end shows the call's progress (script_header.py); a
mutating script also gets ``GITSPACE_NOW`` (Unix seconds), the time to use as "now": it is the op
commit's time, so a replay hands the script the same moment. Stdout is the result the agent sees,
capped; exit code 0 means success and anything else is an error whose message is the end of
stderr. Lines on stderr that follow the progress channel (``gitspace:progress``, ``gitspace:log``:
tools/script_header.py) are reported as they arrive (gitspace/progress.py) and are not part of
that message. An executable file is run directly (mind its ``#!`` line); a ``.py`` file or one whose
``#!`` names python runs on gitspace's own interpreter, a non-executable ``.sh`` on ``/bin/sh``.

Ending every process the script started. Killing the script's process group is not enough: a
grandchild that calls ``setsid`` (or double-forks into a daemon) leaves the group and would go on
writing after the call returned. On Linux every run therefore goes through a small supervisor
process (supervisor.py) that makes itself a *child subreaper* (``prctl(PR_SET_CHILD_SUBREAPER)``):
whatever detaches below it is re-parented to it, not to init, so when the script exits, or at the
deadline, it kills and reaps every descendant before it exits itself. We chose the subreaper
over a cgroup because it needs no privileges, no writable cgroup hierarchy (containers and CI
runners rarely delegate one) and no systemd, costs one extra process (~12 ms of interpreter
start), and also covers the script that exits normally but leaves a daemon behind. Its limit: a
process the script asks some *other* service to start (``systemd-run``, ``at``, a container
daemon) is that service's child, not the script's. Elsewhere (macOS) there is no subreaper, and
the script's process group is killed as before.
"""


from __future__ import annotations

import json
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from .. import config, progress
from ..core import schema
from ..errors import ConstraintError
from .script_header import Script, label

STREAM_CAP = 1 << 20  # bytes of stdout kept in memory; the rest is counted, not stored
STDERR_KEEP = 64 * 1024  # bytes of stderr tail kept; only the last 2,000 characters are shown
STDERR_TAIL = 2000
CHANNEL = b"gitspace:"  # the start of a progress-channel line on stderr
LINE_CAP = 4096  # bytes of one stderr line looked at for the channel; longer lines are plain text


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
    started_run = _start(script, cwd, _environment(script, cwd, cache_dir, extra_env))
    try:
        out, err, timed_out = _communicate(started_run.proc, payload.encode("utf-8"),
                                           script.timeout)
        code = _script_exit(script, started_run)
    finally:
        if started_run.status is not None:
            try:
                os.close(started_run.status)
            except OSError:
                pass  # (already closed by _script_exit)
    exit_code = code if code is not None else -signal.SIGKILL
    text, truncated = _cap_text(out, output_cap)
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
    if progress.active():
        contract["GITSPACE_PROGRESS"] = "1"  # someone shows this call's progress
    return config.child_environment({**(extra_env or {}), **contract}, ssh_agent=False)


def _command(script: Script) -> list[str]:
    # A Python script runs on our own interpreter: `env python3` may find a slow shim (pyenv adds
    # ~80 ms a call here) or a different Python than the one gitspace runs on.
    if script.path.suffix == ".py" or _python_shebang(script.path):
        # The built-ins use the standard library alone: -S skips site-packages (and the editable
        # install's import hooks), a third of a built-in's start-up time.
        return [sys.executable, *(["-S"] if script.origin == "builtin" else []), str(script.path)]
    if os.access(script.path, os.X_OK):
        return [str(script.path)]
    if script.path.suffix == ".py":
        return [sys.executable, str(script.path)]
    if script.path.suffix == ".sh":
        return ["/bin/sh", str(script.path)]
    raise ConstraintError(
        f"{label(script.path)} is not executable; chmod +x it.",
        hint="Only .py and .sh scripts run without the executable bit (with Python and /bin/sh).",
    )


def _python_shebang(path: Path) -> bool:
    with open(path, "rb") as handle:
        first = handle.readline(200)
    return first.startswith(b"#!") and b"python" in first


SUPERVISOR = Path(__file__).with_name("supervisor.py")
# Is prctl(PR_SET_CHILD_SUBREAPER) there? Linux only; decided once per process.
SUBREAPER = sys.platform.startswith("linux")
_STOP_GRACE = 5.0  # seconds the supervisor gets to kill and reap the script's processes


@dataclass
class _Run:
    """A started script: the process gitspace waits for, and where the supervisor reports."""

    proc: subprocess.Popen[bytes]
    status: int | None  # read end of the supervisor's status pipe (None: no supervisor)


def _start(script: Script, cwd: Path, env: dict[str, str]) -> _Run:
    command = _command(script)
    status_r = status_w = None
    if SUBREAPER:
        status_r, status_w = os.pipe()
        command = [sys.executable, "-I", "-S", str(SUPERVISOR), str(status_w), str(os.getpid()),
                   "--", *command]
    try:
        proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
            bufsize=0,
            # Its own process group: without a supervisor, a timeout kills the group.
            start_new_session=True,
            pass_fds=() if status_w is None else (status_w,),
        )
    except OSError as error:
        if status_r is not None:
            os.close(status_r)
        raise _not_started(script, error.errno) from None
    finally:
        if status_w is not None:
            os.close(status_w)
    return _Run(proc, status_r)


def _not_started(script: Script, code: int | None) -> ConstraintError:
    reason = os.strerror(code) if code else "unknown error"
    return ConstraintError(
        f"{label(script.path)} could not be started: {reason}.",
        hint="Check its #! line (e.g. #!/bin/sh or #!/usr/bin/env python3) "
        "and that the interpreter is installed.",
    )


def _script_exit(script: Script, run: _Run) -> int | None:
    """The script's own exit code, as the supervisor reports it (None: it was stopped)."""
    if run.status is None:
        return run.proc.returncode
    with os.fdopen(run.status, "rb") as pipe:
        word, _, value = pipe.read(64).decode().partition(" ")
    if word == "error":
        raise _not_started(script, int(value))
    if word == "exit":
        return os.waitstatus_to_exitcode(int(value))
    return None


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


class _Stderr(_Capture):
    """The stderr tail, with the progress channel's lines reported as they arrive instead."""

    def __init__(self) -> None:
        super().__init__(STDERR_KEEP, keep_tail=True)
        self.partial = b""

    def add(self, chunk: bytes) -> None:
        lines = (self.partial + chunk).split(b"\n")
        self.partial = lines.pop()
        kept = b"".join(line + b"\n" for line in lines if not _reported(line))
        if len(self.partial) > LINE_CAP:  # no channel line is that long: plain text
            kept, self.partial = kept + self.partial, b""
        if kept:
            super().add(kept)

    def close(self) -> None:
        """The script is done: an unfinished last line is plain text (or a report)."""
        if self.partial and not _reported(self.partial):
            super().add(self.partial)
        self.partial = b""


def _reported(line: bytes) -> bool:
    """Report ``line`` if it is a progress-channel line (True), else leave it (False)."""
    if not line.startswith(CHANNEL) or len(line) > LINE_CAP:
        return False
    kind, _, rest = line[len(CHANNEL):].decode("utf-8", "replace").rstrip("\r").partition(" ")
    if kind == "progress":
        amount, _, message = rest.strip().partition(" ")
        done, slash, total = amount.partition("/")
        try:
            numbers = float(done), float(total) if slash else None
        except ValueError:
            return False
        return progress.report(numbers[0], numbers[1], message.strip())
    if kind == "log":
        level, _, message = rest.strip().partition(" ")
        return progress.log(level, message.strip())
    return False


def _communicate(
    proc: subprocess.Popen[bytes], payload: bytes, timeout: float
) -> tuple[_Capture, _Stderr, bool]:
    """Feed stdin, drain stdout and stderr, and stop the process group at the deadline."""
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    out, err = _Capture(STREAM_CAP), _Stderr()
    deadline = time.monotonic() + timeout
    try:
        _pump(proc, payload, out, err, deadline)
        err.close()
        timed_out = not _wait(proc, deadline)
    finally:
        _stop(proc)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            stream.close()
    return out, err, timed_out


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """End the run: the supervisor kills and reaps what the script left; without one (or if it
    does not finish in time), the process group is killed."""
    if SUBREAPER and proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=_STOP_GRACE)
        except subprocess.TimeoutExpired:
            pass
    # Whatever is left in the script's group (no supervisor, or one that did not finish).
    _kill_group(proc)
    proc.wait()


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
            if readers and proc.poll() is not None and not SUBREAPER:
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
