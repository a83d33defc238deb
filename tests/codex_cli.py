"""The real Codex CLI for tests, run offline against the fake Responses API (tests/fake_openai.py).

Codex is installed from npm (``@openai/codex``) into ``.cache/codex/`` of this checkout; a test
that needs it FAILS when it is missing, never skips. Each run is ``codex exec`` with HOME (and
``CODEX_HOME``, its ``.codex``) in the test's own home, a custom provider in its ``config.toml``
pointing at the fake (``wire_api = "responses"``, no retries), a model Codex knows (one it offers
``apply_patch`` to), every proxy variable at the fake, and hook trust bypassed
(``--dangerously-bypass-hook-trust``, Codex's switch for automation) with the project trusted.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from fake_openai import FakeOpenAI

ROOT = Path(__file__).resolve().parents[1]
CODEX = ROOT / ".cache" / "codex" / "node_modules" / ".bin" / "codex"
MODEL = "gpt-5.5"  # bundled, offers apply_patch (custom) and exec_command
# What Codex would otherwise fetch from the internet on its own: update checks, analytics, the
# plugin marketplace (github.com), feedback.
OFFLINE = """check_for_update_on_startup = false

[analytics]
enabled = false

[feedback]
enabled = false

[features]
plugins = false
apps = false
"""


def codex_binary() -> Path:
    if not os.access(CODEX, os.X_OK):
        pytest.fail(f"Codex is not installed at {CODEX}. Install it with 'npm install --prefix "
                    ".cache/codex @openai/codex' (make test does it).", pytrace=False)
    return CODEX


@dataclass
class Codex:
    fake: FakeOpenAI
    home: Path

    @property
    def codex_home(self) -> Path:
        return self.home / ".codex"

    def configure(self) -> None:
        self.codex_home.mkdir(parents=True, exist_ok=True)
        (self.codex_home / "config.toml").write_text(
            f'model = "{MODEL}"\nmodel_provider = "fake"\n\n[model_providers.fake]\n'
            f'name = "fake"\nbase_url = "{self.fake.base_url}/v1"\nwire_api = "responses"\n'
            'env_key = "FAKE_OPENAI_KEY"\nrequest_max_retries = 0\nstream_max_retries = 0\n'
            + OFFLINE)

    def env(self) -> dict[str, str]:
        proxy = self.fake.base_url
        return {"PATH": os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"]),
                "HOME": str(self.home), "CODEX_HOME": str(self.codex_home), "LANG": "C.UTF-8",
                "FAKE_OPENAI_KEY": "not-a-secret", "HTTPS_PROXY": proxy, "HTTP_PROXY": proxy,
                "https_proxy": proxy, "http_proxy": proxy, "NO_PROXY": "127.0.0.1,localhost",
                "no_proxy": "127.0.0.1,localhost", "GIT_CONFIG_GLOBAL": "/dev/null",
                "GIT_CONFIG_NOSYSTEM": "1", "GITSPACE_PACK_THRESHOLD": "0"}

    def run(self, cwd: Path, prompt: str, resume: str | None = None
            ) -> subprocess.CompletedProcess[str]:
        args = [str(codex_binary()), "exec", "--trust", "--dangerously-bypass-hook-trust",
                "--sandbox", "workspace-write", "--skip-git-repo-check"]
        args += ["resume", resume, prompt] if resume else [prompt]
        proc = subprocess.run(args, cwd=cwd, env=self.env(), capture_output=True, text=True,
                              timeout=180, stdin=subprocess.DEVNULL)
        assert proc.returncode == 0, f"codex exec failed:\n{proc.stdout}\n{proc.stderr}"
        return proc

    def rollouts(self) -> list[Path]:
        return sorted((self.codex_home / "sessions").glob("*/*/*/rollout-*.jsonl"))


@pytest.fixture
def codex(fake_openai: FakeOpenAI, hermetic: Path) -> Codex:
    """Codex wired to the fake Responses API, in the test's own home."""
    codex_binary()
    found = Codex(fake_openai, hermetic)
    found.configure()
    return found
