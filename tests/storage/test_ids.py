"""The short form of each kind of id (``gitspace/storage/ids.py``), and every form of a session's
id taken back."""

from __future__ import annotations

from gitspace.storage import ids

ONE = "3d7682ec-1111-4222-8333-444455556666"  # Claude Code's ids: UUIDs of version 4
ULID = "01M8XWDZ0708M4W7DVE4C9N00R"  # gitspace's own


def test_each_kind_has_one_short_form() -> None:
    assert ids.op(ULID) == "E4C9N00R" and ids.commit("ab" * 20) == "abababababab"
    assert ids.session(ONE) == "s-3d7682ec"  # a random UUID: its start
    assert ids.session(ULID) == "s-E4C9N00R"  # gitspace's own: the random end, as an op's
    assert ids.session("019d036d-c7fa-72d2-b6fd-78878bfe34e4") == "s-8bfe34e4"  # v7: time first
    assert ids.turn(ONE, 2) == "s-3d7682ec turn 2"
    for form in (ONE, "s-3d7682ec", "3d7682ec", "3d76", "s-3d76", "claude-code-3d7682ec",
                 "55556666"):
        assert ids.names_session(form, ONE), form
    for form in ("s-", "", "84836b81", "claude-code-84836b81", "x-3d7682e"):
        assert not ids.names_session(form, ONE), form


def test_a_session_never_reads_as_an_op() -> None:
    assert ids.looks_like_session(ids.session(ULID)) and not ids.looks_like_session(ids.op(ULID))
    assert ids.session(ULID) != ids.op(ULID) and ids.session_part(ids.session(ULID)) == ids.op(ULID)
