"""The names git treats specially, under every spelling some file system reads as the same name.

Invariant: ``aliases(name, word)`` is true whenever NTFS or HFS+ would open ``name`` as ``word``
(``.git``, ``.gitmodules``, ``.gitattributes``, ``.gitspace``, ``constraints``...). These are
ports of git's ``is_ntfs_dot_generic`` and ``is_hfs_dot_generic`` (path.c, utf8.c), a little
stricter where that costs nothing (``git~2``, Unicode case folds). The path policy
(core/paths.py) and the work-tree writer (files.py) both ask here, so there is one answer.

Refs too: ``ref_refusal`` is git's own ``check-ref-format`` for a ref name, and ``reads_as_id``
says whether a name has the form of an object id or an op id. Every ref gitspace makes or takes
from a remote (checkpoints, branches, turn marks, lines) is named so that both say no
(``core/refnames.py`` adds the names gitspace and git mean something by, and the op ids
recorded here).

And paths as git prints them: ``unquote`` reads a name git wrote C-style between double quotes
(``core.quotePath``: any byte past ASCII, a control character, ``"`` or ``\\``).
"""

from __future__ import annotations

import functools
import re
import unicodedata

# Code points HFS+ ignores in file names (git's next_hfs_char).
_HFS_IGNORED = frozenset(map(chr, (
    0x200C, 0x200D, 0x200E, 0x200F, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E,
    0x206A, 0x206B, 0x206C, 0x206D, 0x206E, 0x206F, 0xFEFF,
)))
# NTFS 8.3 fallback short-name prefixes git knows (is_ntfs_dotgitmodules and friends).
_HASHED_SHORT = {".gitmodules": "gi7eba", ".gitattributes": "gi7d29"}


@functools.lru_cache(maxsize=8192)  # folder names repeat: a checkout asks about each path
def aliases(name: str, word: str) -> bool:
    """Would NTFS or HFS+ open ``name`` as ``word`` (e.g. '.git', '.gitmodules', 'constraints')?"""
    return _ntfs_alias(name, word) or _hfs_alias(name, word)


def _ntfs_alias(name: str, word: str) -> bool:
    # NTFS: ASCII case folded, trailing spaces and dots dropped, ':' starts a stream name
    # (``.git::$INDEX_ALLOCATION`` is the folder .git itself).
    tail = r"[ .]*(?::.*)?"
    if re.fullmatch(re.escape(word) + tail, name, re.I | re.A | re.S):
        return True
    stem = word.lstrip(".")
    # 8.3 short names: the first six characters then ~1..~4 (GIT~1, CONSTR~1, GITMOD~1).
    if re.fullmatch(re.escape(stem[:6]) + "~[1-4]" + tail, name, re.I | re.A | re.S):
        return True
    hashed = _HASHED_SHORT.get(word)
    if hashed is None:
        return False
    # The fall-back short name: up to six characters of a hash, '~', then digits (gi7eba~1).
    head = name[:8]
    for k in range(7):
        if re.fullmatch(re.escape(hashed[:k]) + f"~[1-9][0-9]{{{6 - k}}}", head, re.I | re.A):
            return re.fullmatch(tail, name[8:], re.S) is not None
    return False


def _hfs_alias(name: str, word: str) -> bool:
    # HFS+: ignorable code points dropped and case folded (Unicode folds too: stricter than git).
    kept = "".join(c for c in name if c not in _HFS_IGNORED)
    return kept.casefold() == word or unicodedata.normalize("NFKC", kept).casefold() == word


def is_dotgit(name: str) -> bool:
    """Is this one path component a spelling of ``.git`` on some file system?"""
    return aliases(name, ".git")


_REF_CHARS = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]")
_OP_ID = re.compile(r"[0-9A-HJKMNP-TV-Z]{26}")  # = ledger.OP_ID, in any case (below)
_OBJECT_ID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}", re.I)


def ref_refusal(ref: str) -> str | None:
    """Why ``git check-ref-format`` would refuse ``ref`` (a full name, ``refs/...``), in a
    clause, or None when git accepts it."""
    if _REF_CHARS.search(ref):
        return "it holds a space, a control character or one of ~ ^ : ? * [ \\"
    if "@{" in ref or ref == "@":
        return "it holds '@{'"
    if ref_parts_refused(ref):
        return ("it has an empty part, a part starting with '.' or ending in '.' or '.lock', or "
                "'..'")
    return None


def reads_as_id(name: str) -> bool:
    """Does ``name`` have the form of an object id (40 or 64 hex digits) or of an op id (26
    characters of Crockford base32, in any case)?"""
    return bool(_OBJECT_ID.fullmatch(name) or _OP_ID.fullmatch(name.upper()))


def ref_parts_refused(name: str) -> bool:
    """Would ``git check-ref-format`` refuse ``name`` for one of its slash-separated parts: an
    empty one, one starting with '.' or ending in '.' or '.lock', or a '..' anywhere? (The
    character rules are each caller's: they differ by what the name is for.)"""
    return ".." in name or any(not p or p.startswith(".") or p.endswith((".lock", "."))
                               for p in name.split("/"))


_ESCAPES = {ord("n"): 10, ord("t"): 9, ord('"'): 34, ord("\\"): 92, ord("a"): 7, ord("b"): 8,
            ord("f"): 12, ord("r"): 13, ord("v"): 11}
_OCTAL = re.compile(rb"[0-7]{3}")


def unquote(raw: bytes) -> bytes:
    """The bytes of a name git quoted, given what is between its quotes (``\\303\\251`` is é)."""
    out = bytearray()
    i = 0
    while i < len(raw):
        c = raw[i]
        if c == 92 and i + 1 < len(raw):
            if _OCTAL.fullmatch(raw, i + 1, i + 4):
                out.append(int(raw[i + 1:i + 4], 8) & 0xFF)
                i += 4
                continue
            out.append(_ESCAPES.get(raw[i + 1], raw[i + 1]))
            i += 2
            continue
        out.append(c)
        i += 1
    return bytes(out)


def unquoted_path(text: str) -> str:
    """A path as git printed it (quoted or not), read back: surrogate-escaped where it is not
    UTF-8, as every path gitspace reads from git is."""
    if len(text) < 2 or text[0] != '"' or text[-1] != '"':
        return text
    return unquote(text[1:-1].encode("utf-8", "surrogateescape")).decode("utf-8",
                                                                          "surrogateescape")
