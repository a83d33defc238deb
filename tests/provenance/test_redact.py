"""provenance/redact.py: every prompt shown or exported passes detect-secrets (and a few patterns
it leaves to entropy) first; without detect-secrets nothing is shown half-checked."""

from __future__ import annotations

import sys

import pytest

from gitspace.errors import Unsupported
from gitspace.provenance.redact import MARK, redact

SECRETS = [
    "AKIAIOSFODNN7EXAMPLE",  # AWS (detect-secrets' own plugin)
    "ghp_abcdefghijklmnopqrstuvwxyz0123456789",  # GitHub
    "sk-ant-api03-Zq8XbW2mN5vR7tY1uI3oP6aS9dF4gH0jK",  # Anthropic
    "sk-proj-abcdEFGH1234ijklMNOP5678qrstUVWX",  # OpenAI
    "xoxb-123456789012-abcdefghijklmn",  # Slack
    "Zx9Qw2Er7Ty5Ui3Op1As8Df6Gh4Jk0Lm",  # random enough to be a key
]


@pytest.mark.parametrize("secret", SECRETS)
def test_each_kind_of_secret_is_redacted(secret: str) -> None:
    shown = redact(f"please deploy with {secret} now")
    assert secret not in shown and MARK in shown
    assert shown.startswith("please deploy with ") and shown.endswith(" now")


def test_assignments_and_keywords_are_redacted_and_ordinary_words_kept() -> None:
    assert "hunter2hunter2" not in redact('password = "hunter2hunter2"')
    assert "s3cr3t-value" not in redact("export API_TOKEN=s3cr3t-value")
    plain = "Fix the bug in src/app.py, then add a test for parse_config() and README.md"
    assert redact(plain) == plain


def test_without_detect_secrets_no_prompt_is_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "detect_secrets", None)
    with pytest.raises(Unsupported, match=r"pip install 'gitspace\[secrets\]'"):
        redact("anything")
