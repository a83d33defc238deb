"""Other agent harnesses (Claude Code, Codex, Gemini CLI, Cursor, any via ``gitspace record``):
their tool calls become ops through the hooks they run.

- ``spec``/``settings``: where each harness keeps its hooks, and merging gitspace's into them;
- ``claude_code``, ``codex``, ``gemini``, ``cursor``, ``generic``: payload → ``events.Event``;
- ``record``: an Event becomes ops (and turn checkpoints) in the workspace; ``state`` is what
  the hook remembers between calls;
- ``hook``: the fast, never-failing entry point the harnesses call.
"""
