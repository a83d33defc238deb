"""Recognising gitspace's own hook entries in a harness's settings file, whatever the harness.

Invariant: an entry is gitspace's exactly when its command runs ``gitspace hook NAME`` (the
program word is ``gitspace`` or ends in ``/gitspace``, as ``python -m gitspace`` and an absolute
path both do; also in the line a ``bash -c`` runs), or when it posts to a resident recorder (``http://127.0.0.1:PORT/hook/NAME``,
harness/resident/). Both layouts the harnesses use are read: ``{"hooks": {EVENT: [{"matcher",
"hooks": [{"command"}]}]}}`` (Claude Code, Codex, Gemini CLI) and ``{"hooks": {EVENT:
[{"command"}]}}`` (Cursor). Nothing else in the file is looked at or changed.
"""

from __future__ import annotations

import re
import shlex
from typing import Any


def runs_gitspace_hook(command: object, name: str | None = None) -> bool:
    """Does ``command`` run ``gitspace hook NAME`` (any NAME when None)?"""
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    for i, word in enumerate(words[:-1]):
        if word == "hook" and (name is None or words[i + 1] == name) and any(
                w == "gitspace" or w.endswith("/gitspace") for w in words[:i]):
            return True
        # (the resident's command: a shell line run by ``bash -c``, ``gitspace hook`` in it)
        if word == "-c" and i > 0 and words[i - 1].endswith("bash") and \
                runs_gitspace_hook(words[i + 1].replace(";", " ; ").replace("|", " | "), name):
            return True
    return False


def is_gitspace_hook(entry: object, name: str | None = None) -> bool:
    """Is this hook entry gitspace's (see the module docstring), for harness ``name`` (any when
    None)?"""
    if not isinstance(entry, dict):
        return False
    if runs_gitspace_hook(entry.get("command"), name):
        return True
    url = entry.get("url")
    if entry.get("type") != "http" or not isinstance(url, str):
        return False
    found = _RESIDENT.fullmatch(url)
    return found is not None and (name is None or found.group(1) == name)


_RESIDENT = re.compile(r"http://127\.0\.0\.1:\d{1,5}/hook/([a-z0-9-]+)(?:\?[a-z&-]*)?")


def without_gitspace_hooks(data: Any) -> tuple[Any, int]:
    """``data`` (a parsed settings file) without gitspace's hook entries, and how many went.
    Groups and events left empty go too; a file left with nothing at all is ``{}``."""
    if not isinstance(data, dict) or not isinstance(data.get("hooks"), dict):
        return data, 0
    removed = 0
    hooks: dict[str, Any] = {}
    for event, groups in data["hooks"].items():
        if not isinstance(groups, list):
            hooks[event] = groups
            continue
        kept = []
        for group in groups:
            if is_gitspace_hook(group):
                removed += 1
                continue
            inner = group.get("hooks") if isinstance(group, dict) else None
            if isinstance(inner, list):
                rest = [h for h in inner if not is_gitspace_hook(h)]
                removed += len(inner) - len(rest)
                if not rest and inner:
                    continue
                group = {**group, "hooks": rest}
            kept.append(group)
        if kept:
            hooks[event] = kept
    out = {k: v for k, v in data.items() if k != "hooks"}
    if hooks:
        out["hooks"] = hooks
    return out, removed
