"""What the benchmarks share: a hermetic git environment, progress lines on stderr, and how a
report ends (the table, or JSON with the table on stderr; the work folder removed or kept)."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def hermetic(root: Path, **extra: str) -> Path:
    """Point HOME and git's config lookups into ``root``; drop inherited GIT_* variables.

    ``extra`` sets more variables (e.g. GITSPACE_PACK_THRESHOLD="0"). Returns the new HOME.
    """
    home = root / "home"
    home.mkdir()
    for name in [k for k in os.environ if k.startswith("GIT_")]:
        del os.environ[name]
    os.environ.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"),
                      GIT_CONFIG_NOSYSTEM="1", GIT_TERMINAL_PROMPT="0", **extra)
    return home


def emit(table: str, report: object, as_json: bool) -> None:
    """The report: the table on stdout, or JSON on stdout and the table on stderr."""
    if as_json:
        log(table)
        print(json.dumps(report, indent=2))
    else:
        print(table)


def finish(work: Path, keep: bool) -> None:
    """Remove the benchmark's work folder, or say where it was kept."""
    if keep:
        log(f"kept {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
