"""Who a person is, as their git knows them: the signature their own edits are recorded under.

Invariants:
- A person's edits (``external`` ops) carry their git identity: the commit's author is
  ``user.name <user.email>`` exactly as git reads it from their configuration (repository,
  global, ``include``s: git itself is asked, once per process), and the op's agent trailer is
  ``token(user.name)``, the same name made of the characters a trailer token allows. An
  explicit name (``GITSPACE_AUTHOR``, ``--author``) wins over the configuration.
- Without a configured name the person is ``unknown``: gitspace never invents one from the
  login or the host name, as git would.
"""

from __future__ import annotations

import re
import unicodedata

from ..storage import ledger
from ..storage.gitrepo import GitRepo
from ..storage.objects import Signature

UNKNOWN = "unknown"
_NOT_IN_TOKEN = re.compile(r"[^A-Za-z0-9._:@+=/-]+")


def token(name: str) -> str:
    """``name`` as a ledger token: accents dropped, every other run of characters a token cannot
    hold turned into one ``-`` ("Zoë van Dijk" → "Zoe-van-Dijk"); ``unknown`` when nothing is
    left."""
    plain = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    text = _NOT_IN_TOKEN.sub("-", plain).strip("-._:@+=/")[:200].rstrip("-._:@+=/")
    return text if ledger.TOKEN.fullmatch(text) else UNKNOWN


_cache: dict[str, tuple[str | None, str | None]] = {}


def configured(repo: GitRepo) -> tuple[str | None, str | None]:
    """(user.name, user.email) as git reads them for ``repo``; None for what is not set."""
    key = str(repo.commondir)
    if key not in _cache:
        out = repo.git("config", "--null", "--get-regexp", r"^user\.(name|email)$", check=False)
        found: dict[str, str] = {}
        for record in out.decode("utf-8", "replace").split("\0"):
            name, _, value = record.partition("\n")
            if name in ("user.name", "user.email") and value.strip():
                found[name] = value.strip()  # the last one git lists is the one it uses
        _cache[key] = (found.get("user.name"), found.get("user.email"))
    return _cache[key]


def person(repo: GitRepo, explicit: str | None = None) -> Signature:
    """The identity a person's own edits in ``repo`` are committed as (``explicit``: a name
    someone gave instead, kept as given)."""
    name, email = configured(repo)
    if explicit:
        name = explicit
    name = name or UNKNOWN
    return Signature(name, email or f"{token(name)}@gitspace")


def person_token(repo: GitRepo, explicit: str | None = None) -> str:
    """The agent trailer of a person's edits in ``repo`` (see ``token``)."""
    return token(person(repo, explicit).name)
