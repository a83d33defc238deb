"""Asking git whether ``git fsck --strict`` would accept a special file before it is committed.

Invariant: ``refusal`` writes nothing into any repository. It packs the blob and a one-entry tree
naming it into a throw-away pack in a temporary folder and lets ``git index-pack --strict`` run
git's own checks on it, so the rules for ``.gitmodules`` (submodule names, paths, URLs, update
commands) and ``.gitattributes`` (line length, size) are git's, not a copy that could drift.
Only those files have content rules; gitspace calls this for them alone (~15 ms each).
"""

from __future__ import annotations

import hashlib
import struct
import subprocess
import tempfile
import zlib
from pathlib import Path

from .. import config

_BLOB, _TREE = 3, 2


def _object(kind: int, data: bytes) -> bytes:
    """One undeltified pack entry: the type-and-size header, then the zlib'd data."""
    size = len(data)
    first = (kind << 4) | (size & 0x0F)
    size >>= 4
    header = bytearray()
    while size:
        header.append(first | 0x80)
        first = size & 0x7F
        size >>= 7
    header.append(first)
    return bytes(header) + zlib.compress(data)


def _pack(name: str, data: bytes) -> bytes:
    blob_id = hashlib.sha1(b"blob %d\0" % len(data) + data).digest()
    tree = b"100644 " + name.encode("utf-8", "surrogateescape") + b"\0" + blob_id
    body = b"PACK" + struct.pack(">II", 2, 2) + _object(_BLOB, data) + _object(_TREE, tree)
    return body + hashlib.sha1(body).digest()


def refusal(name: str, data: bytes) -> str | None:
    """What git fsck says about ``data`` as a file called ``name`` (e.g. '.gitmodules'), or None
    when it accepts it."""
    with tempfile.TemporaryDirectory(prefix="gitspace-fsck-") as folder:
        base = Path(folder)
        # An empty repository for git to stand in (outside one, git 2.39's index-pack crashes on
        # a .gitmodules it cannot parse): three entries are all git looks for.
        (base / "objects").mkdir()
        (base / "refs").mkdir()
        (base / "HEAD").write_text("ref: refs/heads/main\n")
        pack = base / "check.pack"
        pack.write_bytes(_pack(name, data))
        env = config.child_environment({"GIT_DIR": folder, "GIT_CONFIG_NOSYSTEM": "1",
                                        "GIT_CONFIG_GLOBAL": "/dev/null"})
        proc = subprocess.run(["git", "index-pack", "--strict", "-o", str(base / "check.idx"),
                               str(pack)], cwd=folder, env=env, capture_output=True)
    if proc.returncode == 0:
        return None
    for line in proc.stderr.decode("utf-8", "replace").splitlines():
        if line.startswith("error: "):
            # "error: object <id>: gitmodulesUrl: disallowed submodule url: ..."
            return "git fsck says " + line.split(": ", 2)[-1].strip()
    return "git fsck rejects it"
