"""storage/records.py: what record classes promise (they stand in for dataclasses on the hook's
path: the objects, the ledger, the writer, the index, the harness's events)."""

from __future__ import annotations

import pytest

from gitspace.harness.events import Call, Recorded
from gitspace.storage.records import field, record, replace


@record(frozen=True)
class Point:
    x: int
    y: int = 0
    tags: list[str] = field(default_factory=list)


@record(frozen=True)
class Pair:
    a: int
    b: str


@record(frozen=True)
class Marked:
    a: int
    note: str | None = field(default=None, compare=False)


def test_fields_defaults_equality_and_repr() -> None:
    p = Point(1, tags=["a"])
    assert (p.x, p.y, p.tags) == (1, 0, ["a"])
    assert p == Point(1, 0, ["a"]) and p != Point(2) and p != (1, 0, ["a"])
    assert repr(p) == "Point(x=1, y=0, tags=['a'])"
    assert Point(1).tags is not Point(1).tags  # a factory makes a new value each time
    assert Recorded().notes is not Recorded().notes


def test_frozen_records_refuse_changes_and_hash_by_value() -> None:
    p = Point(1)
    with pytest.raises(TypeError):
        hash(p)  # a list field: unhashable, as a frozen dataclass's
    with pytest.raises(AttributeError, match="frozen Point"):
        p.x = 2  # type: ignore[misc]
    with pytest.raises(AttributeError):
        del p.x  # type: ignore[misc]
    assert hash(Pair(1, "a")) == hash(Pair(1, "a")) and len({Pair(1, "a"), Pair(1, "a")}) == 1
    outcome = Recorded()
    outcome.checkpoint = "x"  # not frozen: assignable, and unhashable as a dataclass would be
    with pytest.raises(TypeError):
        hash(outcome)


def test_a_field_left_out_of_comparison() -> None:
    assert Marked(1, "x") == Marked(1, "y") and hash(Marked(1, "x")) == hash(Marked(1))
    assert Marked(1) != Marked(2) and Marked(1, "x").note == "x" and Marked.note is None


def test_bad_arguments_are_type_errors() -> None:
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'x'"):
        Point()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'z'"):
        Point(1, z=2)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="multiple values for argument 'x'"):
        Point(1, x=2)  # type: ignore[misc]
    with pytest.raises(TypeError, match="positional arguments but 5 were given"):
        Point(1, 2, [], 4)  # type: ignore[call-arg]


def test_records_on_the_hook_path_import_no_dataclasses_or_typing() -> None:
    """What the records are for: an in-place after hook's imports (the ledger, the objects,
    the writer, the index) pull in neither ``dataclasses`` nor ``typing``."""
    import subprocess
    import sys

    code = ("import sys, gitspace.harness.hook, gitspace.harness.route, "
            "gitspace.harness.recorder, gitspace.harness.inplace.place; "
            "print(sorted({'dataclasses', 'typing', 'inspect'} & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_replace_copies_with_changes() -> None:
    call = Call("Edit", {"file_path": "a"}, ("a",), "toolu_1")
    failed = replace(call, error="no match")
    assert failed.error == "no match" and call.error is None
    assert (failed.tool, failed.args, failed.paths, failed.use_id) == (
        "Edit", {"file_path": "a"}, ("a",), "toolu_1")
    with pytest.raises(TypeError):
        replace(call, nonsense=1)
