"""The agent runtime: a model (or a scripted policy) working a workspace through its tools.

``loop`` is the tool loop, ``session`` its durable conversation, ``compaction`` the pairing rule,
its checker and conversation compaction, ``model`` the message shapes, ``definitions`` the
model-facing tool list (read from the tool registry: the plan and memory tools live in
``gitspace.tools``), ``clients`` the model clients (the Anthropic SDK, imported lazily),
``runner`` the choice of client, ``sdk`` adapters for the SDK's own tool runner, ``transcript``
the opt-in commit of a conversation, and ``policies`` the offline scripted players. Nothing here
imports anthropic at module level.
"""
