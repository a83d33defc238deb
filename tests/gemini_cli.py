"""The real Gemini CLI for tests: installed by ``make test``, run hermetically against the fake.

``make test`` (target ``gemini-cli``) installs ``@google/gemini-cli`` from npm into
``.cache/gemini-cli/`` of this checkout. A test that needs it FAILS when it is missing, never
skips.

Each run is ``gemini -p PROMPT --approval-mode yolo -o json`` (write tools run without a prompt
only in yolo mode) with:
- ``GEMINI_API_KEY`` and ``GOOGLE_GEMINI_BASE_URL`` at the fake Gemini API;
- HOME in a temporary folder whose ``.gemini/settings.json`` picks API-key auth (without it
  Gemini CLI exits 41) and turns usage statistics and telemetry off;
- ``GEMINI_CLI_TRUST_WORKSPACE=true`` (an untrusted folder exits 55; ``--skip-trust`` would keep
  user hooks but drop a project's);
- every proxy variable at the fake, which fails the test on any attempt to reach another host;
- ``--session-id`` (new) or ``--resume`` (a later turn of the same session).
"""

from __future__ import annotations

import json
import subprocess
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fake_gemini import FakeGemini
from fake_server import ROOT, hermetic_env, installed, run_gitspace

GEMINI = ROOT / ".cache" / "gemini-cli" / "node_modules" / ".bin" / "gemini"
SETTINGS = {"security": {"auth": {"selectedType": "gemini-api-key"}},
            "privacy": {"usageStatisticsEnabled": False}, "telemetry": {"enabled": False}}


def gemini_binary() -> Path:
    """The installed ``gemini``; fails the test (with the fix) when it is missing."""
    return installed(GEMINI, "Gemini CLI", "gemini-cli")


def new_session() -> str:
    return str(uuid.uuid4())


@dataclass
class Outcome:
    """One finished ``gemini -p`` run."""

    proc: subprocess.CompletedProcess[str]
    result: dict[str, Any] = field(default_factory=dict)


@dataclass
class Gemini:
    fake: FakeGemini
    home: Path

    def __post_init__(self) -> None:
        (self.home / ".gemini").mkdir(parents=True, exist_ok=True)
        (self.home / ".gemini" / "settings.json").write_text(json.dumps(SETTINGS, indent=2))

    def env(self, extra: dict[str, str | None] | None = None) -> dict[str, str]:
        return hermetic_env(self.home, self.fake, {
            "GEMINI_API_KEY": "test-key-not-secret",
            "GOOGLE_GEMINI_BASE_URL": self.fake.base_url,
            "GEMINI_CLI_TRUST_WORKSPACE": "true",
            "NO_COLOR": "1",
            **(extra or {}),
        })

    def run(self, cwd: Path, prompt: str, *, session: str, resume: bool = False,
            env: dict[str, str | None] | None = None, timeout: float = 120) -> Outcome:
        """One turn of ``gemini -p`` in ``cwd``; the session is new, or resumed."""
        command = [str(gemini_binary()), "-p", prompt, "--approval-mode", "yolo", "-o", "json",
                   *(["--resume", session] if resume else ["--session-id", session])]
        proc = subprocess.run(command, cwd=cwd, env=self.env(env), capture_output=True,
                              text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        try:
            result = json.loads(proc.stdout) if proc.stdout.strip() else {}
        except ValueError:
            result = {}
        return Outcome(proc, result if isinstance(result, dict) else {})

    def run_ok(self, cwd: Path, prompt: str, **options: Any) -> Outcome:
        out = self.run(cwd, prompt, **options)
        assert out.proc.returncode == 0 and "error" not in out.result, (
            f"gemini -p failed ({out.proc.returncode}):\n{out.proc.stdout}\n{out.proc.stderr}")
        return out

    def settings(self) -> dict[str, Any]:
        return json.loads((self.home / ".gemini" / "settings.json").read_text())

    def transcripts(self) -> list[Path]:
        return sorted((self.home / ".gemini" / "tmp").glob("*/chats/session-*.jsonl"))

    def gitspace(self, root: Path, *args: str, check: bool = True
                 ) -> subprocess.CompletedProcess[str]:
        """gitspace beside this Gemini CLI: its HOME (where its user settings are)."""
        return run_gitspace(self.env(), root, *args, check=check)


@pytest.fixture
def gemini(fake_gemini: FakeGemini, tmp_path_factory: pytest.TempPathFactory) -> Gemini:
    """Gemini CLI wired to the fake Gemini API, with a HOME of its own."""
    gemini_binary()
    return Gemini(fake_gemini, tmp_path_factory.mktemp("gemini-home"))
