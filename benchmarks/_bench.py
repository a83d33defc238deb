"""What the benchmarks share: a hermetic git environment and progress lines on stderr."""

from __future__ import annotations

import os
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
