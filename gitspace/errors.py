"""One error tree for the whole library.

Every expected failure is a ``GitspaceError`` carrying a sentence that says what happened and,
where there is one, a ``hint`` that says what to do next. Front ends map this tree to exit codes
(expected errors exit 1); anything that is not a ``GitspaceError`` is a bug.
"""

from __future__ import annotations


class GitspaceError(Exception):
    """An expected failure, explained to the person or agent who caused it."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return self.message if not self.hint else f"{self.message}\nHint: {self.hint}"


class NotAWorkspace(GitspaceError):
    """The folder is not a gitspace workspace (or not a git repository at all)."""


class BadArguments(GitspaceError):
    """A tool was called with arguments that do not fit its schema."""


class UnknownTool(GitspaceError):
    """No tool, built-in or constraint script, has that name."""


class PathRefused(GitspaceError):
    """An agent-supplied path points outside the workspace or uses a trick we refuse."""


class FileRefused(GitspaceError):
    """A file is too large, binary, or otherwise not something the tool will handle."""


class ToolFailed(GitspaceError):
    """The tool ran and reports a failure the caller can fix (no match, bad line number...)."""


class Conflict(GitspaceError):
    """The change cannot be applied on top of the current state without losing work."""


class ConcurrentUpdate(GitspaceError):
    """Another writer moved the branch while this op was being prepared."""


class LockTimeout(GitspaceError):
    """Another process held the workspace lock for too long."""


class NotFound(GitspaceError):
    """A checkpoint, branch, op or revision does not exist."""


class LedgerError(GitspaceError):
    """A commit's Gitspace trailer block is malformed."""


class ConstraintError(GitspaceError):
    """A constraint script's declaration is invalid."""
