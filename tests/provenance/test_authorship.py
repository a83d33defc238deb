"""provenance/authorship.py: the Git AI Standard v3.0.0 note, read and written.

``notes/spec-*.txt`` are the complete examples of the standard (sections 1.2.5 to 1.2.7 of
``specs/git_ai_standard_v3.0.0.md`` in git-ai-project/git-ai), ``notes/git-ai-*.txt`` the notes
the reference implementation's own serialization snapshots hold: each parses, says what the
standard says it says, and is written back the same.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gitspace.provenance import authorship
from gitspace.provenance.authorship import Note, NoteRefused, dump, parse

NOTES = Path(__file__).parent / "notes"


def test_the_standards_complete_examples_parse_as_it_reads_them() -> None:
    sessions = parse((NOTES / "spec-1.2.5-sessions.txt").read_text())
    assert sessions.files["src/main.rs"] == {
        "s_c9883b05a2487d::t_9f8e7d6c5b4a32": [(1, 10), (15, 20)],
        "s_c9883b05a2487d::t_a1b2c3d4e5f678": [(25, 25), (30, 35)],
        "h_31dce776f88375": [(42, 50)]}
    assert sessions.key_at("src/main.rs", 16) == "s_c9883b05a2487d::t_9f8e7d6c5b4a32"
    assert sessions.key_at("src/main.rs", 11) is None  # untracked
    assert sessions.record_of("s_e7f2a90b31cc48::t_deadbeef012345")["agent_id"]["tool"] == "claude"
    assert sessions.record_of("h_31dce776f88375") == {"author": "Developer <dev@example.com>"}
    assert sessions.base == "7734793b756b3921c88db5375a8c156e9532447b"
    legacy = parse((NOTES / "spec-1.2.6-legacy.txt").read_text())
    assert legacy.record_of("abcd1234abcd1234")["total_additions"] == 25
    assert legacy.files["src/lib.rs"] == {"abcd1234abcd1234": [(1, 50)]}
    mixed = parse((NOTES / "spec-1.2.7-mixed.txt").read_text())
    assert {authorship.kind_of(k) for k in mixed.keys()} == {"agent", "person"}
    assert mixed.record_of("abcd1234abcd1234")["agent_id"]["id"] == "old_session_id"


@pytest.mark.parametrize("name", sorted(p.name for p in NOTES.glob("*.txt")))
def test_every_example_is_written_back_as_it_reads(name: str) -> None:
    note = parse((NOTES / name).read_text())
    text = dump(note)
    assert parse(text) == note
    assert json.loads(text.split("---\n", 1)[1])["schema_version"] == "authorship/3.0.0"


def test_the_reference_implementations_quoted_paths_and_its_own_keys_read() -> None:
    note = parse((NOTES / "git-ai-file-names-with-spaces.txt").read_text())
    assert set(note.files) == {"src/my file.rs", "docs/README (copy).md",
                               "test/file-with-dashes.js"}
    assert note.key_at("docs/README (copy).md", 5) == "c9883b05a2487d6d"
    odd = parse((NOTES / "git-ai-expected-format.txt").read_text())  # keys of no prefix it knows
    assert odd.files["src/file.xyz"]["xyzAbc"] == [(1, 2), (19, 222)]


def test_keys_are_derived_as_the_standard_says() -> None:
    # The human hash of the standard's own test (git-ai's authorship_log_serialization.rs).
    assert authorship.human_key("Alice Smith <alice@example.com>") == "h_31dce776f88375"
    session = authorship.session_key("claude", "session_123")
    assert session.startswith("s_") and len(session) == 16
    assert session == authorship.session_key("claude", "session_123")
    assert session != authorship.session_key("codex", "session_123")
    trace = authorship.trace_key("01JF3Q7Z0A8K3M2N4P5R6S7T8V")
    assert trace.startswith("t_") and len(trace) == 16
    assert trace != authorship.trace_key("01JF3Q7Z0A8K3M2N4P5R6S7T8W")
    assert authorship.split_key(f"{session}::{trace}") == (session, trace)


@pytest.mark.parametrize("path", ["src/my file.py", "a\tb.txt", '"quoted".txt', 'say "hi" now.md',
                                  "---", " leading", "trailing ", "naïve.py", "a\x0cb",
                                  "line\nbreak.txt", "carriage\rreturn", "bad-\udcff-utf8"])
def test_every_path_git_can_hold_round_trips(path: str) -> None:
    key = "s_c9883b05a2487d::t_9f8e7d6c5b4a32"
    note = Note("0" * 40, {path: {key: [(1, 3)]}, "plain.py": {key: [(2, 2)]}})
    text = dump(note)
    text.encode("utf-8")  # always UTF-8 text: a line break or undecodable byte goes elsewhere
    assert parse(text).files == note.files
    section = text.split("\n---\n")[0].split("\n")
    assert section[0] != "---"  # the divider is never a path's line
    if "\n" not in path and "\r" not in path and "\udcff" not in path:
        assert f"  {key} 1-3" in section  # listed where every reader looks


def test_ranges_are_written_merged_and_read_strictly() -> None:
    assert authorship.to_ranges({5, 1, 2, 3, 9}) == [(1, 3), (5, 5), (9, 9)]
    assert authorship.format_ranges([(1, 3), (5, 5)]) == "1-3,5"
    assert authorship.parse_ranges("1,2,19-222") == [(1, 2), (19, 222)]
    for bad in ("0", "3-1", "1,,2", "a", "1 -2", "5,3", "1-99999999999", "-1", "1-2-3"):
        with pytest.raises(NoteRefused):
            authorship.parse_ranges(bad)


HOSTILE = [
    ("no divider", "src/a.py\n  h_31dce776f88375 1\n{}", "no line '---'"),
    ("metadata no JSON", "---\nnot json", "not JSON"),
    ("metadata a list", "---\n[]", "not a JSON object"),
    ("deep JSON", "---\n" + "[" * 100_000 + "]" * 100_000, "not JSON"),
    ("other schema", '---\n{"schema_version": "authorship/2.0.0", "base_commit_sha": "", '
                     '"prompts": {}}', "of schema"),
    ("no prompts", '---\n{"schema_version": "authorship/3.0.0", "base_commit_sha": ""}',
     "no prompts"),
    ("entry first", '  h_31dce776f88375 1\n---\n{}', "before any file path"),
    ("entry without ranges", 'a.py\n  h_31dce776f88375\n---\n{}', "malformed entry"),
    ("huge range", 'a.py\n  k 1-99999999999\n---\n{}', "not N or N-M"),
    ("session without agent", '---\n{"schema_version": "authorship/3.0.0", "base_commit_sha": '
                              '"", "prompts": {}, "sessions": {"s_x": {}}}', "agent_id"),
    ("sessions a string", '---\n{"schema_version": "authorship/3.0.0", "base_commit_sha": "", '
                          '"prompts": {}, "sessions": "x"}', "not an object"),
]


@pytest.mark.parametrize(("what", "text", "says"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_a_hostile_note_is_refused_with_a_sentence(what: str, text: str, says: str) -> None:
    with pytest.raises(NoteRefused, match=says) as refused:
        parse(text)
    assert refused.value.message.startswith("The authorship note ") and refused.value.hint


def test_a_note_too_large_or_not_utf8_is_refused_before_parsing() -> None:
    with pytest.raises(NoteRefused, match="more than the 16 MiB"):
        parse(b"x" * (authorship.NOTE_CAP + 1))
    with pytest.raises(NoteRefused, match="not UTF-8"):
        parse(b"\xff\xfe---\n{}")


def test_a_hostile_range_costs_nothing_to_hold() -> None:
    """A range up to the largest line number is kept as two numbers, never expanded."""
    note = parse('a.py\n  k 1-2147483647\n---\n{"schema_version": "authorship/3.0.0", '
                 '"base_commit_sha": "", "prompts": {}}')
    assert note.key_at("a.py", 2_000_000_000) == "k"
    assert authorship.count(note.files["a.py"]["k"]) == 2147483647


def test_fields_another_tool_wrote_are_kept_when_a_note_is_written_again() -> None:
    text = ('a.py\n  h_31dce776f88375 1\n---\n{"schema_version": "authorship/3.0.0", '
            '"git_ai_version": "1.4.5", "base_commit_sha": "b", "prompts": {}, "future": [1], '
            '"humans": {"h_31dce776f88375": {"author": "A <a@x>", "ide": "zed"}}}')
    again = json.loads(dump(parse(text)).split("---\n", 1)[1])
    assert again["git_ai_version"] == "1.4.5" and again["future"] == [1]
    assert again["humans"]["h_31dce776f88375"]["ide"] == "zed"


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(["k1", "k2", "k3"]),
                       st.lists(st.tuples(st.integers(1, 40), st.integers(0, 12)), max_size=5)),
       st.integers(1, 45), st.integers(0, 20))
def test_the_keys_of_a_run_of_lines_are_those_key_at_gives_each(
        drawn: dict[str, list[tuple[int, int]]], first: int, count: int) -> None:
    # (blame asks a hunk's keys at once; overlapping keys, as a hostile note has them, too)
    entries = {key: authorship.parse_ranges(",".join(f"{a}-{a + n}" for a, n in sorted(ranges)))
               for key, ranges in drawn.items() if ranges}
    note = authorship.Note(files={"f": entries})
    assert authorship.keys_in(entries, first, count) == [
        note.key_at("f", n) for n in range(first, first + count)]
