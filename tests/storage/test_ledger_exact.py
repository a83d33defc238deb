"""The ledger's functions exactly: every error's sentence, the recorded answer, op ids, canonical
JSON, subjects, the args summary people read, and elision at its limit. (The round trips and the
forgeries through real commits are in test_ledger.py.)"""

from __future__ import annotations

import re
from typing import Any

import pytest

from gitspace.errors import BadArguments, LedgerError
from gitspace.storage import ledger
from gitspace.storage.ledger import Op, encode_message, parse_message

ID = "01ARZ3NDEKTSV4RRFFQ69G5FAV"
HEAD = f"Gitspace-Format: 1\nGitspace-Op: {ID}\nGitspace-Tool: create\nGitspace-Source: tool\n"


def error_of(block: str) -> str:
    with pytest.raises(LedgerError) as caught:
        parse_message(f"subject\n\n{block}\n")
    return caught.value.message


@pytest.mark.parametrize(("block", "says"), [
    (HEAD + "Gitspace-Args: {}\nGitspace-Mood: happy",
     "Unknown or malformed trailer line 'Gitspace-Mood: happy'."),
    (HEAD + "Gitspace-Args: {}\n" + "X" * 100, f"Unknown or malformed trailer line {'X' * 80!r}."),
    (HEAD + "Gitspace-Args: {}\nGitspace-Args: {}", "Trailer Gitspace-Args appears twice."),
    (HEAD.replace("Gitspace-Tool: create\nGitspace-Source: tool\n",
                  "Gitspace-Source: tool\nGitspace-Tool: create\n") + "Gitspace-Args: {}",
     "Trailers are out of order."),
    (HEAD, "Missing trailer(s): Gitspace-Args."),
    (f"Gitspace-Format: 1\nGitspace-Op: {ID}", "Missing trailer(s): Gitspace-Tool, "
     "Gitspace-Source, Gitspace-Args."),
    (HEAD.replace("Format: 1", "Format: 9") + "Gitspace-Args: {}",
     "Ledger format 9 is newer than this gitspace reads (ledger formats 1-4): a newer gitspace "
     "recorded it."),
    (HEAD.replace("Format: 1", "Format: 09") + "Gitspace-Args: {}", "Unsupported ledger format '09'."),
    (HEAD.replace("Format: 1", "Format: 2") + "Gitspace-Args: {}",
     "An op of source 'tool' is written in format 4, not 2."),
    (HEAD.replace("Format: 1", "Format: 4") + "Gitspace-Args: {}\nGitspace-After: 01arz",
     "Gitspace-After has a malformed op id."),
    (HEAD + "Gitspace-Args: {}\nGitspace-After: " + ID, "Trailer Gitspace-After is not part of "
     "ledger format 1."),
    (HEAD.replace(ID, "01arz") + "Gitspace-Args: {}", "Malformed op id '01arz'."),
    (HEAD.replace("Tool: create", "Tool: Create") + "Gitspace-Args: {}",
     "Malformed tool name 'Create'."),
    (HEAD.replace("Source: tool", "Source: magic") + "Gitspace-Args: {}",
     "Unknown source 'magic'."),
    (HEAD + 'Gitspace-Args: {"a":', "Gitspace-Args is not valid JSON: Expecting value: line 1 "
     "column 6 (char 5)."),
    (HEAD + "Gitspace-Args: [1]", "Gitspace-Args is not a canonical JSON object."),
    (HEAD + 'Gitspace-Args: {"b":1,"a":2}', "Gitspace-Args is not a canonical JSON object."),
    (HEAD + "Gitspace-Args: {}\nGitspace-Agent: -x", "Gitspace-Agent has a malformed value."),
    (HEAD + "Gitspace-Args: {}\nGitspace-Session: -x", "Gitspace-Session has a malformed value."),
    (HEAD + "Gitspace-Args: {}\nGitspace-Tool-Use-Id: -x",
     "Gitspace-Tool-Use-Id has a malformed value."),
    (HEAD + "Gitspace-Args: {}\nGitspace-Undo-Of: " + ID + ",x",
     "Gitspace-Undo-Of has a malformed op id."),
    (HEAD + "Gitspace-Args: {}\nGitspace-Redo-Of: x", "Gitspace-Redo-Of has a malformed op id."),
    (HEAD + "Gitspace-Args: {}\nGitspace-Script: " + "A" * 40,
     "Gitspace-Script is not an object id."),
])
def test_each_malformed_trailer_block_is_named_exactly(block: str, says: str) -> None:
    assert error_of(block) == says


def test_every_optional_trailer_is_read_back() -> None:
    block = (HEAD + 'Gitspace-Args: {"path":"a"}\nGitspace-Agent: a1\nGitspace-Session: s1\n'
             f"Gitspace-Tool-Use-Id: t1\nGitspace-Undo-Of: {ID},{ID}\nGitspace-Redo-Of: {ID}\n"
             f"Gitspace-Script: {'ab' * 20}")
    op = parse_message(f"subject\n\n\n{block}\n\n\n")  # blank lines around: still the last paragraph
    assert op == Op(ID, "create", {"path": "a"}, "tool", "a1", "s1", "t1", (ID, ID), ID, "ab" * 20)


def test_a_block_with_blank_lines_around_it_and_other_paragraphs() -> None:
    assert parse_message(f"\n\nsubject\n\nbody\n\n{HEAD}Gitspace-Args: {{}}\n\n") is not None
    assert parse_message(f"subject\n \n{HEAD}Gitspace-Args: {{}}") is not None  # a space-only line


def test_the_recorded_answer_round_trips_and_is_capped() -> None:
    cap = ledger.RESULT_CAP
    assert ledger.result_body("\n\nanswer\n\n") == "Result:\nanswer"
    assert ledger.result_body(" spaced \n") == "Result:\n spaced "
    long = "x" * (cap + 1234)
    assert ledger.result_body(long) == f"Result:\n{'x' * cap}\n[... 1,234 more characters]"
    op = Op(ID, "create", {})
    for answer in ("one line", "two\nlines", "a\n\nparagraph"):
        message = encode_message(op, "subject", "a body\n\n" + ledger.result_body(answer))
        assert ledger.result_of(message) == answer
    assert ledger.result_of(encode_message(op, "subject")) is None  # no Result paragraph
    assert ledger.result_of("subject\n\nResult:\nno trailers\n") is None
    trailers_first = "subject\n\nGitspace-Format: 1\n\nResult:\nlate\n"
    assert ledger.result_of(trailers_first) is None
    early = f"Result:\nx\n\n{HEAD}"  # at the very start: no blank line before it
    assert ledger.result_of(early) is None


def test_op_ids_encode_the_millisecond() -> None:
    for when in (0.0, 1_700_000_000.123, 2_000_000_000.999):
        op_id = ledger.new_op_id(when)
        value = 0
        for c in op_id:
            value = value * 32 + "0123456789ABCDEFGHJKMNPQRSTVWXYZ".index(c)
        assert value >> 80 == int(when * 1000)
        assert len(op_id) == 26 and ledger.OP_ID.fullmatch(op_id)
    randoms = {ledger.new_op_id(0.0)[10:] for _ in range(50)}
    assert len(randoms) == 50 and all(len(r) == 16 for r in randoms)


def test_canonical_json_is_sorted_compact_and_ascii() -> None:
    assert ledger.canonical_json({"b": 1, "a": [1, {"d": "é", "c": None}]}) == \
        '{"a":[1,{"c":null,"d":"\\u00e9"}],"b":1}'


def test_bad_tokens_and_names_are_refused_with_what_to_use() -> None:
    with pytest.raises(BadArguments) as caught:
        ledger.check_token("agent name", "-rf")
    assert caught.value.message == ("The agent name '-rf' is not allowed: use 1-200 letters, "
                                    "digits and ._:@+=/- starting with a letter or digit.")
    assert caught.value.hint == "Choose a plainer agent name."
    assert ledger.check_token("session id", "a" * 200) == "a" * 200
    for field, kind in (("agent", "agent name"), ("session", "session id"),
                        ("tool_use_id", "tool-use id")):
        with pytest.raises(BadArguments, match=f"^The {kind} 'a b' is not allowed"):
            Op(ID, "create", {}, **{field: "a b"}).trailers()
    with pytest.raises(BadArguments) as bad_tool:
        Op(ID, "Create", {}).trailers()
    assert bad_tool.value.message == "The tool name 'Create' is not valid."
    with pytest.raises(BadArguments) as bad_source:
        Op(ID, "create", {}, source="magic").trailers()
    assert bad_source.value.message == ("The op source 'magic' is not one of ('tool', 'external', "
                                        "'init', 'transcript', 'harness').")


@pytest.mark.parametrize(("text", "subject"), [
    ("a\tb\n c", "a b c"),
    ("bell\x07 and \u200b zero-width", "bell and zero-width"),
    ("x" * 72, "x" * 72),
    ("x" * 73, "x" * 71 + "…"),
    ("  ", ""),
])
def test_subjects_are_one_clean_line_of_at_most_72_characters(text: str, subject: str) -> None:
    assert ledger.clean_subject(text) == subject


def test_an_empty_subject_becomes_the_tool_name() -> None:
    assert encode_message(Op(ID, "create", {}), "\x00\n").startswith("create\n\n")


@pytest.mark.parametrize(("args", "width", "line"), [
    ({"path": "a.md", "text": "one  two\nthree"}, 60, "path='a.md' text='one two three'"),
    ({"s": "x" * 24}, 60, f"s={'x' * 24!r}"),
    ({"s": "x" * 25}, 60, f"s={'x' * 21 + '...'!r}"),
    ({"file_text": {"$blob": "ab" * 20, "bytes": 5000}}, 60, "file_text=<5000 bytes>"),
    ({"file_text": {"$blob": "ab" * 20}}, 60, "file_text=<? bytes>"),
    ({"other": {"k": 1}, "n": 3}, 60, "n=3 other={'k': 1}"),
    ({"a": "x" * 20, "b": "y" * 20}, 24, "a='" + "x" * 18 + "..."),
    ({"a": "x" * 16}, 22, f"a={'x' * 16!r}"),
])
def test_the_args_summary_people_read(args: dict[str, Any], width: int, line: str) -> None:
    assert ledger.args_summary(args, width) == line


def test_args_are_elided_from_4097_characters() -> None:
    blob = "ab" * 20
    assert ledger.elide({"t": "x" * 4096}, "t", blob) == {"t": "x" * 4096}
    assert ledger.elide({"t": "é" * 4097, "p": 1}, "t", blob) == {
        "t": {"$blob": blob, "bytes": 2 * 4097}, "p": 1}
    assert ledger.elide({"t": 5}, "t", blob) == {"t": 5}
    assert ledger.elide({}, "t", blob) == {}


def test_a_trailer_block_that_is_not_the_last_paragraph_is_text() -> None:
    assert parse_message(f"subject\n\n{HEAD}Gitspace-Args: {{}}\n\nmore words\n") is None
    assert re.match("^subject", encode_message(Op(ID, "create", {}), "subject", "  \n"))


def test_a_message_without_a_body_is_the_subject_and_the_trailers() -> None:
    op = Op(ID, "create", {})
    assert encode_message(op, "subject") == f"subject\n\n{op.trailers()}\n"


def test_the_recorded_answer_is_found_at_any_place_and_may_quote_a_trailer() -> None:
    op = Op(ID, "create", {})
    quoting = "see\n\nGitspace-Format: 9 (quoted)"
    assert ledger.result_of(encode_message(op, "s", ledger.result_body(quoting))) == quoting
    assert ledger.result_of(f"\n\nResult:\nfirst\n\n{op.trailers()}\n") == "first"


@pytest.mark.parametrize(("declared", "says"), [
    ("01", "Unsupported ledger format '01'."),
    ("x", "Unsupported ledger format 'x'."),
])
def test_a_format_is_a_plain_number(declared: str, says: str) -> None:
    assert error_of(HEAD.replace("Format: 1", f"Format: {declared}") + "Gitspace-Args: {}") == says


def test_a_rebased_from_that_is_no_commit_id_is_named() -> None:
    block = HEAD + "Gitspace-Args: {}\nGitspace-Rebased-From: " + "g" * 40
    assert error_of(block) == "Gitspace-Rebased-From is not a commit id."


def test_an_op_in_a_format_that_cannot_hold_it_is_refused() -> None:
    with pytest.raises(BadArguments) as harness_in_1:
        Op(ID, "Edit", {}, source="harness", paths=("a",), format=1).trailers()
    assert harness_in_1.value.message == ("The op source 'harness' is not one of ('tool', "
                                          "'external', 'init', 'transcript').")
    for op in (Op(ID, "create", {}, paths=("a",)), Op(ID, "Edit", {}, source="harness")):
        with pytest.raises(BadArguments) as paths:
            op.trailers()
        assert paths.value.message == ("Changed paths are recorded for harness ops, and only "
                                       "for them.")


def test_a_checkpoint_message_and_what_is_read_back() -> None:
    message = ledger.checkpoint_message("  tried\n the  maze ", "cp", "main", "a1", ID)
    assert message == (f"tried the maze\n\nGitspace-Checkpoint: cp\nGitspace-Branch: main\n"
                       f"Gitspace-Agent: a1\nGitspace-Op: {ID}\n")
    assert ledger.parse_checkpoint(message) == ledger.CheckpointNote("cp", "main", "a1", ID,
                                                                     "tried the maze")
    bare = ledger.checkpoint_message("", "cp", "side", "human", None)
    assert bare == "checkpoint cp\n\nGitspace-Checkpoint: cp\nGitspace-Branch: side\n" \
                   "Gitspace-Agent: human\n"
    assert ledger.parse_checkpoint(bare) == ledger.CheckpointNote("cp", "side", "human", None,
                                                                  "checkpoint cp")
    only_name = "by hand\n\nGitspace-Checkpoint: cp\n"  # older tags: the rest unknown
    assert ledger.parse_checkpoint(only_name) == ledger.CheckpointNote("cp", "?", "?", None,
                                                                       "by hand")
    with pytest.raises(BadArguments) as bad:
        ledger.checkpoint_message("", "cp", "main", "a1", "-x")
    assert "op id" in bad.value.message


def test_a_branch_note_names_its_op() -> None:
    assert ledger.branch_note("side", None) == "gitspace: branch side"
    assert ledger.branch_note("side", ID) == f"gitspace: branch side (op {ID})"
    assert ledger.parse_branch_note(ledger.branch_note("side", ID)) == ID
    with pytest.raises(BadArguments) as bad:
        ledger.branch_note("side", "-x")
    assert "op id" in bad.value.message


def test_an_omitted_string_is_hashed_with_its_lone_surrogates() -> None:
    value = "a\udc80"  # (a lone surrogate: a harness may hand one over)
    assert ledger.omit(value) == {"$omitted": ledger.sha1_hex(b"a\xed\xb2\x80"), "bytes": 4}
