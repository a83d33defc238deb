"""The agent runtime: a model (or a scripted policy) working a workspace through its tools.

``loop`` is the tool loop, ``session`` its durable conversation, ``compaction`` the pairing rule,
its checker and conversation compaction, ``model`` the message shapes, ``definitions`` the
model-facing tool list (read from the tool registry: the plan and memory tools live in
``gitspace.tools``), ``clients`` the model clients (the Anthropic SDK, imported lazily),
``runner`` the choice of client, ``sdk`` adapters for the SDK's own tool runner, ``transcript``
the opt-in commit of a conversation, and ``policies`` the offline scripted players. ``returns``
is the value a run hands back (the ``return`` tool) and ``asking`` the call that waits for it:
``gitspace.agent.ask``. Nothing here imports anthropic at module level, and this package imports
nothing until a name is used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what type checkers see; at run time __getattr__ imports it when first used
    from .asking import Answer, NoValue, ask

__all__ = ["Answer", "NoValue", "ask"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import asking

        return getattr(asking, name)
    raise AttributeError(f"module 'gitspace.agent' has no attribute {name!r}")
