"""One error tree for the whole library.

Every expected failure is a ``GitspaceError`` carrying a sentence that says what happened and,
where there is one, a ``hint`` that says what to do next. Front ends map this tree to exit codes
(expected errors exit 1); anything that is not a ``GitspaceError`` is a bug.
"""

from __future__ import annotations

import errno


class GitspaceError(Exception):
    """An expected failure, explained to the person or agent who caused it.

    ``hint`` is worded for whoever called: a model reads it in a tool result. Where the next
    step differs on the command line (a command instead of a tool), ``cli_hint`` says it for a
    person; the CLI shows it instead of ``hint``.
    """

    def __init__(self, message: str, hint: str | None = None, *,
                 cli_hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.cli_hint = cli_hint

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


class SystemRefused(GitspaceError):
    """The operating system refused a read or write: a full disk, a read-only file, no permission."""


# errno -> (what happened, what to do): conditions of the machine, not bugs in gitspace.
_SYSTEM = {
    "ENOSPC": ("the disk is full", "Free some space, then run it again."),
    "EDQUOT": ("the disk quota is used up", "Free some space, then run it again."),
    "EACCES": ("permission was denied", "Check the permissions of that file and its folder."),
    "EPERM": ("the operation is not permitted", "Check the file's permissions and attributes "
              "(an immutable file cannot be changed)."),
    "EROFS": ("the file system is read-only", "Work in a writable folder, or remount it."),
    "ENAMETOOLONG": ("a file name is too long for the system", "Use a shorter path."),
    "EMFILE": ("too many files are open", "Close other programs or raise the limit (ulimit -n)."),
    "ENFILE": ("too many files are open on the system", "Try again when fewer are open."),
    "EFBIG": ("a file is too large for the file system", "Use smaller files."),
    "EIO": ("the disk reported an input/output error", "Check the disk; then run it again."),
    "EINTR": ("a system call was interrupted", "Run it again."),
}


def system_hint(number: int | None) -> str | None:
    """What to do about the machine's error ``number`` (None: not one of the machine's)."""
    found = _SYSTEM.get(errno.errorcode.get(number or 0, ""))
    return found[1] if found else None


def from_os_error(error: OSError, doing: str = "gitspace") -> GitspaceError | None:
    """The expected error for an OSError the machine caused (None: a bug, let it surface)."""
    name = errno.errorcode.get(error.errno or 0, "")
    if name not in _SYSTEM:
        return None
    what, hint = _SYSTEM[name]
    where = f" at {error.filename}" if error.filename else ""
    return SystemRefused(f"{doing} could not finish: {what}{where} ({error.strerror or name}). "
                         "Nothing was half-applied.", hint=hint)


class GitCommandError(GitspaceError):
    """A git plumbing command failed."""


class Unsupported(GitspaceError):
    """Something gitspace cannot work with: an old git, a SHA-256 or reftable repository, a
    missing optional extra."""


class WriteFailed(SystemRefused):
    """The system refused a write gitspace needed (disk full, permissions, an I/O error, an
    interrupted call); what was written so far has been rolled back."""
