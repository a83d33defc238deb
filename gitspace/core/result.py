"""What a tool call returns. A leaf: every layer that runs or shows a tool call imports it.

Invariant: ``ok`` is False exactly when the call failed, and then ``error`` holds the expected
error (text is its sentence); an ok call with ``op`` None changed nothing and made no commit.
"""

from __future__ import annotations

from ..errors import GitspaceError
from ..storage.records import field, record

UNCHANGED = "unchanged: the files already hold that content, so no op was recorded."


@record()
class Result:
    """What a tool call returns: ``text`` is what a model would be shown."""

    ok: bool
    text: str
    tool: str
    op: str | None = None
    commit: str | None = None
    changed: list[str] = field(default_factory=list)
    external_op: str | None = None
    error: GitspaceError | None = None
    notes: list[str] = field(default_factory=list)  # for the person at the terminal, not a model

    @property
    def unchanged(self) -> bool:
        return self.ok and self.op is None
