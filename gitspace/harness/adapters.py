"""Every harness gitspace can wire, in one list of data: ``ADAPTERS``.

Adding a harness is one adapter module in this package and one line here. The module holds
``SPEC`` (a ``spec.HookSpec``: its name and title, where its hook settings live, which of its
events gitspace hears, the variable naming its project folder) and ``event(payload)`` (its hook
payloads as ``events.Event``s). Everything else reads this list: ``gitspace hook NAME`` and
``gitspace hooks install NAME``, their help texts, the titles in op messages.

Importing this module imports no adapter: a hook call imports only its own.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing is not imported at run time: a hook imports this on every call
if TYPE_CHECKING:
    from types import ModuleType

    from .spec import HookSpec

ADAPTERS = {  # harness name (the agent its ops record) → its adapter module
    "claude-code": "claude_code",
    "codex": "codex",
    "gemini-cli": "gemini",
    "cursor": "cursor",
}


def adapter(name: str) -> ModuleType:
    """The adapter module of harness ``name``; BadArguments naming the known ones otherwise."""
    from importlib import import_module

    if name not in ADAPTERS:
        from ..errors import BadArguments

        raise BadArguments(f"gitspace has no hook for {name!r}.",
                           hint="Known harnesses: " + ", ".join(ADAPTERS) + ".")
    return import_module(f".{ADAPTERS[name]}", __package__)


def specs() -> dict[str, HookSpec]:
    """Every harness's HookSpec, by name, in the list's order."""
    return {name: adapter(name).SPEC for name in ADAPTERS}


def title(agent: str) -> str:
    """How people call harness ``agent`` ("Claude Code"); any other agent by its own name."""
    return adapter(agent).SPEC.title if agent in ADAPTERS else agent


def project_dir_variable(agent: str) -> str | None:
    """The environment variable harness ``agent`` sets to its project folder, if it has one."""
    return adapter(agent).SPEC.project_dir if agent in ADAPTERS else None


def listed() -> str:
    """The harness names as a phrase for help texts: "claude-code, codex, ... or cursor"."""
    names = list(ADAPTERS)
    return ", ".join(names[:-1]) + " or " + names[-1]
