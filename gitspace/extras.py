"""Optional extras: what each needs, and the error that names the install command.

Invariant: a feature behind an extra checks for its packages (``require``) before importing any
of them, so a missing package is an expected error (exit 1) naming the exact
``pip install 'gitspace[EXTRA]'`` to run, never a ModuleNotFoundError reported as a bug.
``for_missing`` maps a ModuleNotFoundError that slipped past a check to the same error.
"""

from __future__ import annotations

import importlib.util

from .errors import Unsupported

# extra -> (what it enables, the top-level modules it needs). Keep in step with pyproject.toml.
EXTRAS: dict[str, tuple[str, tuple[str, ...]]] = {
    "agent": ("running Claude ('gitspace run' with a model)", ("anthropic",)),
    "mcp": ("the MCP server ('gitspace mcp')", ("mcp", "anyio", "uvicorn")),
    "watch": ("recording outside edits as they happen ('gitspace watch', 'run --watch')",
              ("watchdog",)),
    "ui": ("the web view ('gitspace ui')", ("starlette", "uvicorn", "pygments")),
    "secrets": ("showing or exporting a prompt, which is first cleared of secrets",
                ("detect_secrets",)),
}
# A module only one extra brings in (anyio and uvicorn come with several, so they name none).
_OWNER = {"anthropic": "agent", "mcp": "mcp", "watchdog": "watch", "starlette": "ui",
          "pygments": "ui", "detect_secrets": "secrets"}


def missing_error(extra: str, module: str) -> Unsupported:
    what = EXTRAS[extra][0] if extra in EXTRAS else f"the {extra} extra"
    return Unsupported(
        f"{what[0].upper() + what[1:]} needs the Python package {module!r}, which is not "
        "installed.",
        hint=f"Install it with: pip install 'gitspace[{extra}]' (or 'gitspace[all]' for every "
             "extra; pipx and uv tool take the same name).")


def require(extra: str) -> None:
    """Raise Unsupported naming the install command unless every package of ``extra`` imports."""
    for module in EXTRAS[extra][1]:
        if importlib.util.find_spec(module) is None:
            raise missing_error(extra, module)


def for_missing(error: ModuleNotFoundError) -> Unsupported | None:
    """The expected error for a missing optional package, or None (then it is a bug)."""
    top = (error.name or "").split(".")[0]
    if top in _OWNER:
        return missing_error(_OWNER[top], top)
    if any(top in modules for _, modules in EXTRAS.values()):
        return Unsupported(f"The Python package {top!r} is not installed.",
                           hint="Install the extras with: pip install 'gitspace[all]'.")
    return None
