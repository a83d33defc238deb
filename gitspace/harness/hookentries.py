"""Recognising gitspace's own hook entries in a harness's settings file, whatever the harness.

Invariant: an entry is gitspace's exactly when its command runs ``gitspace hook NAME`` (the
program word is ``gitspace`` or ends in ``/gitspace``, as ``python -m gitspace`` and an absolute
path both do). Both layouts the harnesses use are read: ``{"hooks": {EVENT: [{"matcher",
"hooks": [{"command"}]}]}}`` (Claude Code, Codex, Gemini CLI) and ``{"hooks": {EVENT:
[{"command"}]}}`` (Cursor). Nothing else in the file is looked at or changed.
"""

from __future__ import annotations

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
    return False


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
            if isinstance(group, dict) and runs_gitspace_hook(group.get("command")):
                removed += 1
                continue
            inner = group.get("hooks") if isinstance(group, dict) else None
            if isinstance(inner, list):
                rest = [h for h in inner if not (isinstance(h, dict)
                                                 and runs_gitspace_hook(h.get("command")))]
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
