"""storage/lockfile.py: git's lock-file protocol and gitspace's process lock.

``replace`` writes under ``<name>.lock`` and renames it over: a lock someone holds is waited for
and never taken; a failure under the lock (its check, the write) leaves the file as it was and
no lock behind. ``flocked`` is one holder at a time, refuses a link, and is released by the
kernel when its holder dies. ``git_running_in`` sees a live git process in a folder.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from gitspace import faults
from gitspace.storage import lockfile
from gitspace.storage.statefiles import StateRefused


def test_replace_writes_whole_or_leaves_the_file(tmp_path: Path) -> None:
    path = tmp_path / "ref"
    path.write_bytes(b"old\n")
    lockfile.replace(path, b"new\n")
    assert path.read_bytes() == b"new\n" and not (tmp_path / "ref.lock").exists()

    def refuse() -> None:
        raise ValueError("the compare failed")

    with pytest.raises(ValueError):
        lockfile.replace(path, b"newer\n", under_lock=refuse)
    with faults.inject("ref.update", errno.EIO), pytest.raises(OSError):
        lockfile.replace(path, b"newer\n", point="ref.update")
    assert path.read_bytes() == b"new\n" and os.listdir(tmp_path) == ["ref"]


def test_a_held_lock_file_is_waited_for_and_never_taken(tmp_path: Path) -> None:
    path = tmp_path / "index"
    path.write_bytes(b"theirs\n")
    (tmp_path / "index.lock").write_bytes(b"git is writing\n")
    with pytest.raises(lockfile.Locked):
        lockfile.replace(path, b"ours\n", wait=0.05)
    assert path.read_bytes() == b"theirs\n"
    assert (tmp_path / "index.lock").read_bytes() == b"git is writing\n"


HOLD = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from gitspace.storage import lockfile
    with lockfile.flocked(Path(sys.argv[1]), "lock", 1.0, RuntimeError("busy")):
        print("held", flush=True)
        time.sleep(60)
""")


def test_flocked_is_one_holder_at_a_time_and_dies_with_it(tmp_path: Path) -> None:
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path)], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        busy = TimeoutError("another process holds it")
        with pytest.raises(TimeoutError), lockfile.flocked(tmp_path, "lock", 0.05, busy):
            pass
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    with lockfile.flocked(tmp_path, "lock", 5.0, TimeoutError("stale")):  # the kernel let it go
        pass
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(StateRefused), lockfile.flocked(tmp_path, "link", 0.05, TimeoutError()):
        pass
    assert not (tmp_path / "elsewhere").exists()


def test_git_running_in_sees_a_live_git_process(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    assert lockfile.git_running_in([tmp_path]) is False
    # git waiting on its input (hash-object --stdin) is a git process at work in the folder.
    proc = subprocess.Popen(["git", "hash-object", "--stdin"], cwd=tmp_path,
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    try:
        # Popen returns (vfork) a moment before the kernel names the child git: wait for that.
        comm = Path(f"/proc/{proc.pid}/comm")
        deadline = time.monotonic() + 10
        while comm.read_text().strip() != "git" and time.monotonic() < deadline:
            time.sleep(0.001)
        assert lockfile.git_running_in([tmp_path]) is True
        assert lockfile.git_running_in([tmp_path / "elsewhere"]) is False
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait()
