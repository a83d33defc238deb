"""The only module that reads the process environment.

Everything else receives what it needs from here, so a library call never changes behaviour
because of a variable nobody passed to it. Secrets are read here and nowhere else, and are never
put into a child process's environment by the helpers below.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

# Variables a child process (git, a constraint script) may inherit. Everything else is dropped:
# API keys, tokens, and every GIT_* variable that could redirect git to another repository.
_CHILD_ALLOWED = ("PATH", "HOME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "USER", "LOGNAME", "TERM")
_SECRET_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL", "AUTH")
# The ssh agent's socket path is no secret (the keys stay in the agent), and push/pull over ssh
# remotes need it.
_CHILD_PASSTHROUGH = ("SSH_AUTH_SOCK", "SSH_AGENT_PID")


def child_environment(extra: Mapping[str, str] | None = None, *,
                      ssh_agent: bool = True) -> dict[str, str]:
    """A scrubbed environment for a child process: locale and PATH, no secrets, no GIT_*."""
    env = {k: v for k, v in os.environ.items() if k in _CHILD_ALLOWED or k.startswith("LC_")}
    env = {k: v for k, v in env.items() if not any(m in k.upper() for m in _SECRET_MARKERS)}
    if ssh_agent:
        env.update({k: os.environ[k] for k in _CHILD_PASSTHROUGH if k in os.environ})
    if extra:
        env.update(extra)
    return env


def inherited_git_variables() -> list[str]:
    """Names of GIT_* variables in our environment (they must be neutralised for git children)."""
    return [k for k in os.environ if k.startswith("GIT_")]


# GIT_* variables that change where git finds a repository, its git dir, work tree, index or
# objects (``git help git``: "The Git Repository"), and those that can set core.worktree or
# core.bare from the environment. Any other (GIT_SSL_CAINFO, GIT_TRACE, GIT_AUTHOR_NAME...)
# leaves a checkout's layout as its files say.
_LAYOUT = frozenset({
    "GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_INDEX_FILE", "GIT_INDEX_VERSION",
    "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE",
    "GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM", "GIT_DEFAULT_HASH",
    "GIT_IMPLICIT_WORK_TREE", "GIT_PREFIX", "GIT_CONFIG", "GIT_CONFIG_PARAMETERS",
    "GIT_CONFIG_COUNT"})


def git_layout_variables() -> list[str]:
    """Names of inherited GIT_* variables that may change where git finds the repository (its
    git dir, work tree, index, objects): with none set, its files say where everything is."""
    return [k for k in os.environ if k in _LAYOUT
            or k.startswith(("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_"))]


def default_agent() -> str | None:
    """The agent name from GITSPACE_AGENT, if set."""
    return os.environ.get("GITSPACE_AGENT") or None


def anthropic_api_key() -> str | None:
    """The Anthropic API key, if one is configured. Never log or echo the value."""
    return os.environ.get("ANTHROPIC_API_KEY") or None


def anthropic_base_url() -> str | None:
    """An alternative Messages API base URL (the standard SDK variable)."""
    return os.environ.get("ANTHROPIC_BASE_URL") or None


def max_file_bytes(default: int = 1 << 20) -> int:
    """The size cap for files gitspace stages (GITSPACE_MAX_FILE_BYTES, default 1 MiB)."""
    raw = os.environ.get("GITSPACE_MAX_FILE_BYTES")
    if raw and raw.isdigit():
        return int(raw)
    return default


def pack_threshold(default: int = 1024) -> int:
    """Loose objects that trigger a background repack (GITSPACE_PACK_THRESHOLD; 0 turns it off)."""
    raw = os.environ.get("GITSPACE_PACK_THRESHOLD")
    if raw and raw.isdigit():
        return int(raw)
    return default


def default_author() -> str | None:
    """Who outside edits are attributed to (GITSPACE_AUTHOR), if set."""
    return os.environ.get("GITSPACE_AUTHOR") or None


def project_dir(variable: str | None) -> str | None:
    """The project folder a harness runs its hooks for, when it says in ``variable`` (its
    ``HookSpec.project_dir``: Claude Code sets CLAUDE_PROJECT_DIR); the hook's own folder may be a
    subfolder the agent's shell moved to."""
    return (os.environ.get(variable) or None) if variable else None


def resident_environment(extra: Mapping[str, str]) -> dict[str, str]:
    """The environment of a checkout's resident recorder, started by one of its hooks: the hook's
    own (gitspace's settings, HOME for git's identity, PATH), with ``extra`` (each harness's
    project-folder variable naming the checkout: harness/resident/client.py)."""
    return {**os.environ, **extra}


def resident_enabled() -> bool:
    """May hooks hand their calls to a resident recorder, and installs set one up? Not with
    GITSPACE_RESIDENT=off: every hook then records in its own process, as before."""
    return os.environ.get("GITSPACE_RESIDENT", "on").strip().lower() != "off"


def resident_watch_from(default: int = 50_000) -> int:
    """From how many files in a checkout's index its resident recorder watches the work tree
    (GITSPACE_RESIDENT_WATCH_FROM): below, one ``git status`` at a shell's end costs less than
    what watching costs each call (every op's writes under .git are events too)."""
    try:
        return max(0, int(os.environ.get("GITSPACE_RESIDENT_WATCH_FROM", default)))
    except ValueError:
        return default


def resident_idle(default: float = 900.0) -> float:
    """Seconds without a request after which a resident recorder stops
    (GITSPACE_RESIDENT_IDLE)."""
    try:
        return max(0.1, float(os.environ.get("GITSPACE_RESIDENT_IDLE", default)))
    except ValueError:
        return default


def home() -> Path:
    """The user's home folder (HOME), where harnesses keep their user-wide settings."""
    return Path(os.path.expanduser("~"))


def user_config_dir() -> Path:
    """gitspace's folder of per-person settings: $XDG_CONFIG_HOME/gitspace (~/.config/gitspace)."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "gitspace"


def scratch_parent() -> str | None:
    """Where replay's scratch folders go when a person chose: GITSPACE_SCRATCH_DIR, else TMPDIR.
    None: replay picks (a RAM-backed folder when it has room, else the temporary folder)."""
    return os.environ.get("GITSPACE_SCRATCH_DIR") or os.environ.get("TMPDIR") or None


def mcp_token() -> str | None:
    """The bearer token MCP-over-HTTP clients must send (GITSPACE_MCP_TOKEN), if set."""
    return os.environ.get("GITSPACE_MCP_TOKEN") or None


def no_color() -> bool:
    """NO_COLOR (https://no-color.org): set and not empty means no colour unless asked for."""
    return bool(os.environ.get("NO_COLOR"))


def pager_command() -> str | None:
    """The pager for long output on a terminal: GITSPACE_PAGER, else PAGER, else less.
    An empty value or ``cat`` means no pager."""
    for name in ("GITSPACE_PAGER", "PAGER"):
        if name in os.environ:
            value = os.environ[name].strip()
            return None if value in ("", "cat") else value
    return "less"


def pager_environment() -> dict[str, str]:
    """The pager runs as the user's own program, with their environment; like git, less gets
    LESS=FRX (quit if one screen, keep colours, do not clear) unless the user set LESS."""
    env = dict(os.environ)
    env.setdefault("LESS", "FRX")
    env.setdefault("LV", "-c")
    return env


def completing() -> bool:
    """Is the shell asking for completions (typer's _GITSPACE_COMPLETE)? Then the CLI builds
    every command's parameters, so options complete too."""
    return bool(os.environ.get("_GITSPACE_COMPLETE"))
