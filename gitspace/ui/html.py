"""Building HTML where every piece of text is escaped unless it is already markup.

Invariant: a plain ``str`` that reaches a page is always escaped; only ``Html`` values (made here,
from escaped parts) pass through as markup. Everything the view shows comes from the repository
(agent-written args, file content, commit messages, session files): all of it is hostile text, and
this module is the one place that turns text into markup.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from urllib.parse import quote, urlencode

# Elements that never have content or a closing tag.
_VOID = frozenset({"br", "hr", "img", "input", "link", "meta", "col"})


class Html(str):
    """Markup that is safe to emit as is."""

    __slots__ = ()


def esc(value: object) -> Html:
    """``value`` as text inside markup (markup itself is kept)."""
    if isinstance(value, Html):
        return value
    return Html(html.escape(str(value), quote=True))


def join(parts: Iterable[object], sep: str = "") -> Html:
    return Html(esc(sep).join(_flat(parts)))


def _flat(children: Iterable[object]) -> Iterable[Html]:
    for child in children:
        if child is None or child is False:
            continue
        if isinstance(child, str | int | float):
            yield esc(child)
        else:
            yield from _flat(child)  # type: ignore[arg-type]


def tag(name: str, /, *children: object, **attrs: object) -> Html:
    """``<name attrs>children</name>``. Attribute names take ``_`` for ``-`` and a trailing ``_``
    for Python keywords (``class_``); ``True`` writes a bare attribute, ``None``/``False`` none."""
    parts = [name]
    for key, value in attrs.items():
        if value is None or value is False:
            continue
        key = key.rstrip("_").replace("_", "-")
        parts.append(key if value is True else f'{key}="{esc(value)}"')
    opening = f"<{' '.join(parts)}>"
    if name in _VOID:
        return Html(opening)
    return Html(f"{opening}{join(children)}</{name}>")


def link(href: str, /, *children: object, **attrs: object) -> Html:
    return tag("a", *children, href=href, **attrs)


def url(path: str, /, **params: object) -> str:
    """A path with its query; parameters that are None or empty are left out."""
    kept = {k: str(v) for k, v in params.items() if v is not None and v != ""}
    return path + ("?" + urlencode(kept) if kept else "")


def file_url(commit: str, path: str = "", **params: object) -> str:
    """The files view of ``path`` at ``commit`` (any character a file name may hold is quoted)."""
    return url(f"/files/{commit}" + (f"/{quote(path, safe='/')}" if path else ""), **params)
