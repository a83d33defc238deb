"""The supervisor of one constraint-script run: nothing the script starts outlives the run.

Invariant: when this process exits, every process the script started has been killed and reaped,
however it detached (``setsid``, a double fork, a daemon that closed its pipes), whether the
script exited by itself or the runner stopped it (SIGTERM) or gitspace itself died (the parent-
death signal). It is a Linux child subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``): an orphan
anywhere below it is re-parented to it rather than to init, so it can always find them.

It runs as ``python -I -S supervisor.py STATUS_FD PARENT_PID -- COMMAND...``, standard library only
and without site-packages (it adds ~12 ms to a run, not ~100). It spawns COMMAND in a new session
with stdin/stdout/stderr inherited, and reports on STATUS_FD, one line each:
``error ERRNO`` when COMMAND could not be started, else ``exit WAITSTATUS`` (the script's own).
It never prints: the script's stdout and stderr are the runner's to read.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36


class Stop(Exception):
    """The runner (or the death of gitspace) says the run is over."""


def _stop(signum: int, frame: object) -> None:
    raise Stop()


def _children() -> list[int]:
    """Our live children (orphans of the script's tree land here), from /proc."""
    me = os.getpid()
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue  # it exited while we looked
        fields = stat[stat.rfind(b")") + 2:].split()  # the command name may hold spaces
        if len(fields) > 1 and int(fields[1]) == me:
            found.append(int(name))
    return found


def _reap() -> bool:
    """Reap every child that has exited; False when there are no children left at all."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False
        if pid == 0:
            return True


def kill_everything() -> None:
    """Kill every descendant: children first, then the orphans that re-parent to us, until none."""
    while _reap():
        kids = _children()
        for pid in kids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if not kids:
            time.sleep(0.001)  # a child exited but is not reaped yet, or is being re-parented


def main(argv: list[str]) -> int:
    status_fd, parent = int(argv[1]), int(argv[2])
    command = argv[argv.index("--") + 1:]
    os.set_inheritable(status_fd, False)  # the script must not hold it
    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches gitspace, which stops us
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        os.write(status_fd, f"error {ctypes.get_errno()}\n".encode())
        return 0
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    report = b""
    try:
        if os.getppid() != parent:
            raise Stop()  # gitspace died before the parent-death signal was armed
        try:
            pid = os.posix_spawnp(command[0], command, os.environ, setsid=True,
                                  setsigdef=(signal.SIGTERM, signal.SIGINT))
        except OSError as error:
            report = f"error {error.errno}\n".encode()
            return 0
        while True:
            done, status = os.waitpid(-1, 0)
            if done == pid:
                report = f"exit {status}\n".encode()
                break
    except Stop:
        report = report or b"stopped\n"
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # nothing may interrupt the clean-up
        kill_everything()
        if report:
            os.write(status_fd, report)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
