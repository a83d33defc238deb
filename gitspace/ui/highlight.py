"""Syntax highlighting on the server with Pygments: code in, one ``Html`` line per source line out.

Invariants: the number of lines out equals the number of lines in (so line numbers and diff rows
stay aligned); every token is escaped; a file Pygments has no lexer for, or one too long to
highlight quickly, comes back as plain escaped lines. The colours are CSS classes (``CSS``), so
the page needs no script and no inline style.
"""

from __future__ import annotations

from functools import lru_cache

from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import TextLexer, get_lexer_for_filename
from pygments.token import STANDARD_TYPES, _TokenType
from pygments.util import ClassNotFound

from .html import Html, esc

MAX_CHARS = 400_000  # past this, text is shown plain: highlighting it would make the page slow
CSS = HtmlFormatter(style="default").get_style_defs(".hl")


@lru_cache(maxsize=256)
def lexer_for(path: str) -> Lexer:
    try:
        return get_lexer_for_filename(path, stripnl=False, stripall=False, ensurenl=False)
    except ClassNotFound:
        return TextLexer(stripnl=False, ensurenl=False)


def _css(ttype: _TokenType) -> str:
    while ttype not in STANDARD_TYPES:
        ttype = ttype.parent
    return STANDARD_TYPES[ttype]


def lines(code: str, path: str) -> list[Html]:
    """``code`` split on newlines, each line highlighted for the language ``path`` suggests."""
    count = code.count("\n") + 1
    if len(code) > MAX_CHARS or isinstance(lexer_for(path), TextLexer):
        return [esc(line) for line in code.split("\n")]
    out: list[Html] = []
    current: list[str] = []
    for ttype, value in lexer_for(path).get_tokens(code):
        css = _css(ttype)
        pieces = value.split("\n")
        for i, piece in enumerate(pieces):
            if i:
                out.append(Html("".join(current)))
                current = []
            if piece:
                current.append(f'<span class="{css}">{esc(piece)}</span>' if css else esc(piece))
    out.append(Html("".join(current)))
    if len(out) != count:  # a lexer that dropped or added a newline: never misalign the lines
        return [esc(line) for line in code.split("\n")]
    return out
