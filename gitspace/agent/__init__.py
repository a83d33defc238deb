"""The agent runtime: a model (or a scripted policy) working a workspace through its tools.

``loop`` is the tool loop, ``session`` its durable conversation, ``history`` compaction and the
pairing checker, ``definitions`` the model-facing tool list, ``plan`` and ``memory`` the tools
that keep a plan and long-term memory as files, ``clients`` the model clients (the Anthropic SDK,
imported lazily) and ``policies`` the offline scripted players. Nothing here imports anthropic at
module level.
"""
