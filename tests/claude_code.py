"""The real Claude Code CLI for tests: installed by ``make test``, run hermetically against the fake.

``make test`` (target ``claude-code``) installs ``@anthropic-ai/claude-code`` from npm into
``.cache/claude-code/`` of this checkout. A test that needs it FAILS when it is missing, never
skips: a green suite means the harness was really driven.

Each run is ``claude -p PROMPT`` with:
- ``ANTHROPIC_BASE_URL`` at the fake Messages API on 127.0.0.1 and a dummy key;
- HOME in a temporary folder (Claude Code keeps its session transcripts under it), so nothing of
  the machine's own Claude Code setup is read or written;
- no network: non-essential traffic off, and every proxy variable pointing at the fake, which fails
  the test on any attempt to reach another host;
- ``--session-id`` (or ``--resume``) so the fake can play one script per session;
- ``--permission-mode acceptEdits`` with ``--allowedTools`` (as root, Claude Code refuses its
  bypass-permissions mode).
"""

from __future__ import annotations

import json
import subprocess
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fake_anthropic import FakeAnthropic
from fake_server import ROOT, hermetic_env, installed

CLAUDE = ROOT / ".cache" / "claude-code" / "node_modules" / ".bin" / "claude"
TOOLS = ("Write", "Edit", "Bash")


def claude_binary() -> Path:
    """The installed ``claude``; fails the test (with the fix) when it is missing."""
    return installed(CLAUDE, "Claude Code", "claude-code")


def new_session() -> str:
    return str(uuid.uuid4())


@dataclass
class Outcome:
    """One finished ``claude -p`` run."""

    proc: subprocess.CompletedProcess[str]
    result: dict[str, Any] = field(default_factory=dict)

    @property
    def session(self) -> str:
        return str(self.result.get("session_id", ""))


@dataclass
class ClaudeCode:
    fake: FakeAnthropic
    home: Path

    def env(self, extra: dict[str, str | None] | None = None) -> dict[str, str]:
        """Claude Code's environment; ``extra`` adds variables (None removes one)."""
        return hermetic_env(self.home, self.fake, {
            "ANTHROPIC_BASE_URL": self.fake.base_url,
            "ANTHROPIC_API_KEY": "sk-test-not-secret",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1",
            **(extra or {}),
        })

    def run(self, cwd: Path, prompt: str, *, session: str, resume: bool = False,
            tools: tuple[str, ...] = TOOLS, env: dict[str, str | None] | None = None,
            timeout: float = 120) -> Outcome:
        """Run one turn of ``claude -p`` in ``cwd``; the session is new, or resumed."""
        args = [str(claude_binary()), "-p", prompt, "--output-format", "json",
                "--permission-mode", "acceptEdits", "--allowedTools", " ".join(tools)]
        args += ["--resume", session] if resume else ["--session-id", session]
        proc = subprocess.run(args, cwd=cwd, env=self.env(env), capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)
        try:
            result = json.loads(proc.stdout.strip().splitlines()[-1]) if proc.stdout.strip() else {}
        except ValueError:
            result = {}
        return Outcome(proc, result)

    def run_ok(self, cwd: Path, prompt: str, **options: Any) -> Outcome:
        out = self.run(cwd, prompt, **options)
        assert out.proc.returncode == 0 and not out.result.get("is_error"), (
            f"claude -p failed ({out.proc.returncode}):\n{out.proc.stdout}\n{out.proc.stderr}")
        return out

    def transcripts(self) -> list[Path]:
        return sorted((self.home / ".claude" / "projects").glob("*/*.jsonl"))


@pytest.fixture
def claude_code(fake_api: FakeAnthropic, tmp_path_factory: pytest.TempPathFactory) -> ClaudeCode:
    """Claude Code wired to the fake Messages API, with a HOME of its own."""
    claude_binary()
    return ClaudeCode(fake_api, tmp_path_factory.mktemp("claude-home"))
