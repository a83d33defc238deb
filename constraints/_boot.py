"""Start-up for the built-in scripts: the cache folder, and where compiled bytecode may go.

Invariant: nothing here, nor anything imported after it, writes inside the work tree proper. The
cache folder is ``$GITSPACE_CACHE_DIR`` when it lies outside the work tree (the current folder)
or inside its ``.git`` folder (gitspace gives ``.git/gitspace/cache``); anywhere else it is not
used. Compiling _worklog.py on every call costs more than answering from its index, so compiled
bytecode goes to ``<cache folder>/pycache`` (Python's ``pycache_prefix``), never beside the
scripts, which may sit in a work tree. Without a usable cache folder nothing is written.
"""

from __future__ import annotations

import os
import sys


def cache_folder() -> str | None:
    """The cache folder gitspace gave, or None when there is none or it is in the work tree."""
    folder = os.environ.get("GITSPACE_CACHE_DIR")
    if not folder:
        return None
    cache = os.path.realpath(folder)
    base = os.path.realpath(os.getcwd())
    if cache == base:
        return None
    inside = os.path.relpath(cache, base)
    if not inside.startswith(os.pardir) and inside.split(os.sep)[0] != ".git":
        return None  # a cache in the work tree proper would show up as an outside edit
    return cache


def _standard_modules() -> None:
    """Import what the scripts use from the standard library before the prefix is set: they
    keep their own compiled files, rather than a second copy under the cache folder."""
    import bisect  # noqa: F401
    import collections.abc  # noqa: F401
    import datetime  # noqa: F401
    import hashlib  # noqa: F401
    import json  # noqa: F401
    import pathlib  # noqa: F401
    import re  # noqa: F401
    import typing  # noqa: F401


_cache = cache_folder()
if _cache is not None:
    _standard_modules()
    sys.pycache_prefix = os.path.join(_cache, "pycache")
    sys.dont_write_bytecode = False
