"""storage/bounds.py: the bounds on structure someone else wrote, at their edges.

JSON nests at most ``JSON_DEPTH`` levels (read off the text, brackets inside strings not
counted); a state file's numbers are integers of at most ``INT_DIGITS`` digits or finite floats.
The attacks these bounds stop, through every command, are tests/test_hostile_depth.py.
"""

from __future__ import annotations

import pytest

from gitspace.storage import bounds


def test_json_just_within_the_bound_still_parses_and_one_level_more_does_not() -> None:
    inside = "[" * bounds.JSON_DEPTH + "]" * bounds.JSON_DEPTH
    assert bounds.loads(f'{{"s":"[[[[","a":{inside[1:-1]}}}') is not None  # (brackets in text)
    with pytest.raises(bounds.TooDeep):
        bounds.loads(f'{{"a":{inside}}}')
    with pytest.raises(bounds.OutOfBounds):
        bounds.load_state('{"n": ' + "9" * 19 + "}")
    assert bounds.load_state('{"n": ' + "9" * 18 + "}") == {"n": int("9" * 18)}
    for constant in ("NaN", "Infinity", "1e999"):
        with pytest.raises(bounds.OutOfBounds):
            bounds.load_state(f'{{"n": {constant}}}')
