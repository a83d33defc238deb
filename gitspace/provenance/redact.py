"""The secret redactor every prompt text passes before it is shown or exported.

Invariants:
- Built on Yelp's detect-secrets (the ``secrets`` extra, pinned, imported on first use): every
  plugin of its default set runs over the text, line by line, and each secret it reports is
  replaced, with the whole run of non-space characters around it, by ``[REDACTED]``.
- On top of it, a few patterns detect-secrets leaves to entropy (model-provider keys whose
  letters are not random enough to pass its threshold, ``NAME=value`` assignments whose name
  says key, token, secret or password) and long runs of high entropy; they only ever redact
  more, never less.
- Without detect-secrets installed, ``redact`` refuses (``extras.require``) instead of
  showing text only the fallback patterns checked: a prompt is never shown half-checked.
"""

from __future__ import annotations

import math
import re

from .. import extras

MARK = "[REDACTED]"
_PATTERNS = [
    re.compile(r"sk-(?:ant-|proj-)?[A-Za-z0-9_-]{16,}"),  # Anthropic, OpenAI
    re.compile(r"(?:ghp|gho|ghu|ghs|ghr|github_pat)_[A-Za-z0-9_]{20,}"),
    re.compile(r"xox[abposr]-[A-Za-z0-9-]{10,}"),  # Slack
    re.compile(r"AKIA[0-9A-Z]{16}"),
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"),
    re.compile(r"(?i)\b[\w.-]*(?:key|token|secret|passw(?:or)?d|pwd|credential)[\w.-]*"
               r"\s*[:=]\s*['\"]?([^\s'\"]{6,})"),
]
_WORD = re.compile(r"\S+")
_ENTROPY_MIN_LENGTH = 24


def redact(text: str) -> str:
    """``text`` with every secret found replaced by ``[REDACTED]``."""
    extras.require("secrets")
    found: set[str] = set()
    for line in text.splitlines() or [text]:
        found |= _detected(line)
        for pattern in _PATTERNS:
            for m in pattern.finditer(line):
                found.add(m.group(m.lastindex or 0))
        found |= {w for w in _WORD.findall(line) if _random(w)}
    out = text
    for secret in sorted((s for s in found if s), key=len, reverse=True):
        out = re.sub(r"\S*" + re.escape(secret) + r"\S*", MARK, out)
    return out


_plugins: list[object] | None = None


def _detected(line: str) -> set[str]:
    global _plugins
    from detect_secrets.settings import default_settings, get_plugins
    from detect_secrets.util.code_snippet import get_code_snippet

    with default_settings():
        if _plugins is None:
            _plugins = list(get_plugins())
        context = get_code_snippet([line], 1)
        return {s.secret_value for plugin in _plugins
                for s in plugin.analyze_line(filename="prompt", line=line,  # type: ignore[attr-defined]
                                             line_number=1, context=context)
                if s.secret_value}


def _random(word: str) -> bool:
    """A long run of characters as random as a key's (letters, digits and case mixed)."""
    token = word.strip("'\"`,.;:()[]{}<>")
    if len(token) < _ENTROPY_MIN_LENGTH or "/" in token and token.count("/") > 2:
        return False
    classes = sum(bool(re.search(p, token)) for p in ("[a-z]", "[A-Z]", "[0-9]"))
    if classes < 3:
        return False
    counts = {c: token.count(c) for c in set(token)}
    entropy = -sum(n / len(token) * math.log2(n / len(token)) for n in counts.values())
    return entropy > 4.0
