"""Installed without an extra, the commands that need it say which ``pip install`` to run and
exit 1; nothing else notices. A package is made missing through Python's own import seam: a
``None`` in ``sys.modules`` is exactly what ``import`` and ``find_spec`` see for an absent one.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import gitspace

RUN_WITHOUT = """
import sys
for name in sys.argv[1].split(","):
    sys.modules[name] = None
sys.argv = ["gitspace", *sys.argv[2:]]
from gitspace.cli import main
main()
"""


def without(missing: str, cwd: Path, *args: str,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "GITSPACE_AGENT")}
    return subprocess.run([sys.executable, "-c", RUN_WITHOUT, missing, "-C", str(cwd), *args],
                          capture_output=True, text=True, timeout=60, env={**base, **(env or {})},
                          stdin=subprocess.DEVNULL)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    gitspace.init(tmp_path / "ws").close()
    return tmp_path / "ws"


@pytest.mark.parametrize(("missing", "argv", "extra"), [
    ("mcp,anyio", ["mcp"], "mcp"),
    ("watchdog", ["watch"], "watch"),
    ("watchdog", ["run", "Escape the maze", "--policy", "maze", "--watch"], "watch"),
    ("anthropic", ["run", "Tidy", "--model", "claude-test"], "agent"),
    ("starlette,uvicorn", ["ui"], "ui"),
])
def test_a_missing_extra_names_its_install_command(root: Path, missing: str, argv: list[str],
                                                   extra: str) -> None:
    out = without(missing, root, *argv, env={"ANTHROPIC_API_KEY": "sk-test-not-used"})
    assert out.returncode == 1, out.stdout + out.stderr
    assert f"pip install 'gitspace[{extra}]'" in out.stderr
    assert "Traceback" not in out.stderr and "bug" not in out.stderr


def test_commands_that_need_no_extra_do_not_notice(root: Path) -> None:
    everything = "anthropic,mcp,anyio,watchdog,starlette,uvicorn,pygments"
    for argv in (["status"], ["log"], ["tools"], ["run", "Escape the maze", "--policy", "maze"]):
        out = without(everything, root, *argv)
        assert out.returncode in (0, 4), (argv, out.stderr)  # 4: the maze policy has no maze here
        assert "pip install" not in out.stderr, argv
