"""The JSON Schema subset: every keyword, and messages that name the field."""

from __future__ import annotations

from typing import Any

import pytest

from gitspace.core.schema import apply_defaults, check_schema, describe, validate
from gitspace.errors import BadArguments

VIEW = {
    "type": "object",
    "properties": {
        "path": {"type": "string", "minLength": 1},
        "view_range": {"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 2},
        "mode": {"enum": ["head", "tail"]},
    },
    "required": ["path"],
    "additionalProperties": False,
}


def message(schema: dict[str, Any], value: object, **kwargs: Any) -> str:
    with pytest.raises(BadArguments) as caught:
        validate(schema, value, **kwargs)
    return caught.value.message


def test_valid_values_pass() -> None:
    validate(VIEW, {"path": "a.md", "view_range": [1, 5], "mode": "tail"})
    validate(VIEW, {"path": "a.md"})


@pytest.mark.parametrize(
    ("kind", "good", "bad", "got"),
    [
        ("string", "x", 1, "an integer"),
        ("integer", 3, 3.5, "a number"),
        ("integer", -7, "7", "a string"),
        ("number", 2.5, None, "null"),
        ("number", 2, [], "an array"),
        ("boolean", False, 0, "an integer"),
        ("array", [], {}, "an object"),
        ("object", {}, [], "an array"),
        ("null", None, False, "a boolean"),
    ],
)
def test_each_type(kind: str, good: object, bad: object, got: str) -> None:
    validate({"type": kind}, good)
    noun = {"integer": "an integer", "array": "an array", "object": "an object"}.get(kind)
    noun = noun or ("null" if kind == "null" else f"a {kind}")
    assert message({"type": kind}, bad, where="args.x") == f"args.x must be {noun}, got {got}."


@pytest.mark.parametrize(("kind", "noun"), [("integer", "an integer"), ("number", "a number")])
def test_bool_is_not_an_integer_or_number(kind: str, noun: str) -> None:
    assert message({"type": kind}, True) == f"args must be {noun}, got a boolean."


def test_float_with_zero_fraction_is_not_an_integer() -> None:
    assert message({"type": "integer"}, 3.0) == "args must be an integer, got a number."


def test_nan_is_not_a_number() -> None:
    assert (
        message({"type": "number"}, float("nan"))
        == "args must be a number, got NaN or Infinity, which JSON does not allow."
    )


def test_list_of_types() -> None:
    schema = {"type": ["string", "null"]}
    validate(schema, None)
    validate(schema, "x")
    assert message(schema, 4) == "args must be a string or null, got an integer."


def test_message_names_nested_field_and_expected_shape() -> None:
    assert (
        message(VIEW, {"path": "a", "view_range": "1-5"})
        == "args.view_range must be an array of 2 integers, got a string."
    )
    assert (
        message(VIEW, {"path": "a", "view_range": [1, 2, 3]})
        == "args.view_range must be an array of 2 integers, got 3 items."
    )
    assert (
        message(VIEW, {"path": "a", "view_range": [1, True]})
        == "args.view_range[1] must be an integer, got a boolean."
    )


def test_required() -> None:
    assert message(VIEW, {}) == "args.path is required but was not given."


def test_additional_properties_false_names_unknown_and_allowed() -> None:
    assert (
        message(VIEW, {"path": "a", "lines": 3})
        == "args has unknown field 'lines'; the allowed fields are: path, view_range, mode."
    )
    assert (
        message(VIEW, {"path": "a", "z": 1, "b": 2})
        == "args has unknown fields 'b', 'z'; the allowed fields are: path, view_range, mode."
    )


def test_additional_properties_schema_and_default_true() -> None:
    schema = {"type": "object", "additionalProperties": {"type": "integer"}}
    validate(schema, {"a": 1})
    assert message(schema, {"a": "x"}) == "args.a must be an integer, got a string."
    validate({"type": "object", "properties": {}}, {"anything": [1]})


def test_enum() -> None:
    assert (
        message(VIEW, {"path": "a", "mode": "middle"})
        == 'args.mode must be one of "head", "tail", got "middle".'
    )


def test_enum_does_not_confuse_true_with_one() -> None:
    assert message({"enum": [1, 2]}, True) == "args must be one of 1, 2, got true."
    validate({"enum": [True]}, True)


def test_minimum_and_maximum() -> None:
    schema = {"type": "integer", "minimum": 1, "maximum": 10}
    validate(schema, 1)
    validate(schema, 10)
    assert message(schema, 0, where="args.n") == "args.n must be at least 1, got 0."
    assert message(schema, 11, where="args.n") == "args.n must be at most 10, got 11."
    assert describe(schema) == "an integer from 1 to 10"


def test_min_and_max_length() -> None:
    schema = {"type": "string", "minLength": 2, "maxLength": 3}
    validate(schema, "ab")
    assert message(schema, "a") == "args must be at least 2 characters long, got 1."
    assert message(schema, "abcd") == "args must be at most 3 characters long, got 4."


def test_min_and_max_items() -> None:
    schema = {"type": "array", "minItems": 1, "maxItems": 2}
    validate(schema, [1])
    assert message(schema, []) == "args must be an array of 1 to 2 items, got 0 items."
    assert message(schema, [1, 2, 3]) == "args must be an array of 1 to 2 items, got 3 items."


def test_items_reports_the_index() -> None:
    schema = {"type": "array", "items": {"type": "string"}}
    assert (
        message(schema, ["a", 2], where="args.tags")
        == "args.tags[1] must be a string, got an integer."
    )


def test_description_and_default_do_not_affect_validation() -> None:
    validate({"type": "integer", "description": "a count", "default": 3}, 5)


def test_hint_shows_the_example() -> None:
    with pytest.raises(BadArguments) as caught:
        validate(VIEW, {}, example={"path": "notes/todo.md"})
    assert caught.value.hint == 'A valid call looks like: {"path": "notes/todo.md"}'
    with pytest.raises(BadArguments) as caught:
        validate(VIEW, {})
    assert caught.value.hint is None


def test_check_schema_accepts_a_good_schema() -> None:
    assert check_schema(VIEW) == []


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        ([], "schema must be a JSON object, got an array."),
        ({"type": "str"}, "schema.type must be one of object, string, integer, number, boolean, "
         'array, null (or a list of distinct types), got "str".'),
        ({"type": []}, "schema.type must be one of object, string, integer, number, boolean, "
         "array, null (or a list of distinct types), got [].",),
        ({"minimum": "1"}, 'schema.minimum must be a number, got "1".'),
        ({"maxLength": -1}, "schema.maxLength must be a non-negative integer, got -1."),
        ({"minItems": True}, "schema.minItems must be a non-negative integer, got true."),
        ({"minimum": 5, "maximum": 1}, "schema.minimum is greater than schema.maximum; "
         "nothing can match."),
        ({"properties": []}, "schema.properties must be an object mapping names to schemas."),
        ({"required": "path"}, "schema.required must be an array of field names."),
        ({"properties": {}, "required": ["x"]}, "schema.required names 'x', which is not in "
         "schema.properties."),
        ({"additionalProperties": "no"}, "schema.additionalProperties must be true, false or a "
         "schema."),
        ({"enum": []}, "schema.enum must be a non-empty array of allowed values."),
        ({"description": 3}, "schema.description must be a string."),
        ({"type": "integer", "default": "x"}, "schema.default must be an integer, got a string."),
    ],
)  # fmt: skip
def test_check_schema_problems(bad: object, problem: str) -> None:
    assert check_schema(bad) == [problem]


def test_check_schema_unknown_keyword_nested() -> None:
    problems = check_schema(
        {"type": "object", "properties": {"p": {"type": "string", "format": "uri"}}}, where="args"
    )
    assert len(problems) == 1
    assert problems[0].startswith(
        "args.properties.p uses the unsupported keyword 'format'; supported keywords are: "
    )


def test_check_schema_items() -> None:
    assert check_schema({"type": "array", "items": {"type": "nope"}}) == [
        "schema.items.type must be one of object, string, integer, number, boolean, array, null "
        '(or a list of distinct types), got "nope".'
    ]


def test_apply_defaults() -> None:
    schema = {
        "type": "object",
        "properties": {
            "limit": {"type": "integer", "default": 20},
            "tags": {"type": "array", "default": []},
            "opts": {"type": "object", "properties": {"deep": {"default": False}}},
        },
    }
    args = {"limit": 5, "opts": {}}
    filled = apply_defaults(schema, args)
    assert filled == {"limit": 5, "tags": [], "opts": {"deep": False}}
    assert args == {"limit": 5, "opts": {}}  # not modified
    filled["tags"].append("x")
    assert apply_defaults(schema, {})["tags"] == []  # defaults are not shared between calls


# -- JSON Schema 2020-12: $schema, $defs, $ref -----------------------------------------------

ADDRESSED = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string", "minLength": 1},
                           "country": {"type": "string", "default": "FR"}},
            "required": ["city"],
            "additionalProperties": False,
        },
        "node": {  # recursive: a tree of names
            "type": "object",
            "properties": {"name": {"type": "string"},
                           "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
            "required": ["name"],
        },
        "a/b~c": {"type": "integer"},
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "home": {"$ref": "#/$defs/address", "description": "where they live",
                 "required": ["street"]},
        "tree": {"$ref": "#/$defs/node"},
        "count": {"$ref": "#/$defs/a~1b~0c"},
    },
    "additionalProperties": False,
}


def test_a_2020_12_schema_with_defs_and_refs_is_usable() -> None:
    assert check_schema(ADDRESSED) == []
    validate(ADDRESSED, {"name": "Ada", "address": {"city": "Paris"}, "count": 3,
                         "tree": {"name": "r", "children": [{"name": "c", "children": []}]}})


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ({"address": {"street": "x"}}, "args.address.city is required but was not given."),
        ({"address": {"city": ""}}, "args.address.city must be at least 1 character long, got 0."),
        ({"address": {"city": "P", "zip": 1}}, "args.address has unknown field 'zip'; the allowed "
         "fields are: street, city, country."),
        ({"address": "Paris"}, "args.address must be an object, got a string."),
        ({"home": {"city": "P"}}, "args.home.street is required but was not given."),  # a sibling
        ({"tree": {"name": "r", "children": [{"children": []}]}},
         "args.tree.children[0].name is required but was not given."),
        ({"count": "3"}, "args.count must be an integer, got a string."),
        ({"nickname": "x"}, "args has unknown field 'nickname'; the allowed fields are: name, "
         "address, home, tree, count."),
    ],
)  # fmt: skip
def test_a_2020_12_schema_refuses_with_the_field_named(value: dict[str, Any], problem: str) -> None:
    assert message(ADDRESSED, value) == problem


def test_defaults_come_through_a_ref() -> None:
    assert apply_defaults(ADDRESSED, {"address": {"city": "P"}}) == {
        "address": {"city": "P", "country": "FR"}}


@pytest.mark.parametrize(
    ("bad", "problem"),
    [
        ({"$schema": "http://json-schema.org/draft-07/schema#"},
         "schema.$schema must be 'https://json-schema.org/draft/2020-12/schema' (JSON Schema "
         '2020-12), got "http://json-schema.org/draft-07/schema#".'),
        ({"$defs": []}, "schema.$defs must be an object mapping names to schemas."),
        ({"properties": {"a": {"$ref": "#/$defs/missing"}}},
         'schema.properties.a.$ref is "#/$defs/missing", which names no schema: gitspace '
         "resolves '#' (the root) and '#/$defs/NAME' (defined here: none)."),
        ({"$defs": {"x": {}}, "properties": {"a": {"$ref": "other.json#/x"}}},
         'schema.properties.a.$ref is "other.json#/x", which names no schema: gitspace '
         "resolves '#' (the root) and '#/$defs/NAME' (defined here: #/$defs/x)."),
        ({"properties": {"a": {"$defs": {}}}},
         "schema.properties.a uses '$defs', which gitspace takes only at the root of a schema."),
        ({"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}},
         "schema: #/$defs/a refers to itself without describing a value "
         "(#/$defs/a -> #/$defs/b -> #/$defs/a)."),
        ({"$ref": "#"}, "schema: # refers to itself without describing a value (# -> #)."),
        ({"$defs": {"a": {"type": "strin"}}}, "schema.$defs.a.type must be one of object, string, "
         "integer, number, boolean, array, null (or a list of distinct types), got \"strin\"."),
    ],
)  # fmt: skip
def test_2020_12_declaration_problems(bad: object, problem: str) -> None:
    assert check_schema(bad) == [problem]
