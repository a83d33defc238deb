"""A small, strict subset of JSON Schema (2020-12) for tool arguments.

Invariant: a value that passes ``validate`` has exactly the shape its schema describes, and a value
that fails is reported with one sentence that names the field (``args.view_range``) and says what
was expected and what was given, so a model can correct its call without reading any code.

Supported keywords: ``type`` (object, string, integer, number, boolean, array, null, or a list of
them), ``properties``, ``required``, ``additionalProperties``, ``enum``, ``minimum``, ``maximum``,
``minLength``, ``maxLength``, ``minItems``, ``maxItems``, ``items``, the annotations
``description``, ``title``, ``default`` and ``$comment`` (ignored by validation), and from JSON
Schema 2020-12 ``$schema``, ``$defs`` and ``$ref``:

- ``$schema``, at the root only, must be ``https://json-schema.org/draft/2020-12/schema``;
- ``$defs``, at the root only, maps names to schemas;
- ``$ref`` is ``#`` (the root: a recursive shape) or ``#/$defs/NAME`` (``~1`` and ``~0`` stand for
  ``/`` and ``~``, as in a JSON Pointer). As in 2020-12 it applies beside its sibling keywords: a
  value must fit the schema referred to and the rest of its own schema. References that lead only
  to each other without describing a value (``a`` is ``b``, ``b`` is ``a``) are refused.

``check_schema`` rejects every other keyword (and any reference that does not resolve), so a
declaration can never rely on a rule that is silently not enforced.

Deliberate differences from full JSON Schema: ``true``/``false`` are never integers or numbers,
``3.0`` is not an integer (tools index lists with these values), and NaN/Infinity are not numbers.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Mapping
from typing import Any

from gitspace.errors import BadArguments

TYPES = ("object", "string", "integer", "number", "boolean", "array", "null")
KEYWORDS = frozenset(
    {
        "type", "properties", "required", "additionalProperties", "enum",
        "minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems", "items",
        "description", "title", "default", "$comment", "$schema", "$defs", "$ref",
    }
)  # fmt: skip
DIALECT = "https://json-schema.org/draft/2020-12/schema"
_ROOT_ONLY = ("$schema", "$defs")
_COUNT_KEYWORDS = ("minLength", "maxLength", "minItems", "maxItems")

_NOUNS = {
    "object": ("an object", "objects"),
    "string": ("a string", "strings"),
    "integer": ("an integer", "integers"),
    "number": ("a number", "numbers"),
    "boolean": ("a boolean", "booleans"),
    "array": ("an array", "arrays"),
    "null": ("null", "nulls"),
}


# ---------------------------------------------------------------------------------------------
# validate


def validate(
    schema: Mapping[str, Any], value: object, *, where: str = "args", example: object = None
) -> None:
    """Raise ``BadArguments`` naming the first field of ``value`` that does not fit ``schema``."""
    problem = unreadable(value, where) or _first_problem(schema, value, where, schema)
    if problem is not None:
        hint = None if example is None else f"A valid call looks like: {_dump(example)}"
        raise BadArguments(problem, hint=hint)


MAX_DEPTH = 32  # arguments nest a few levels; a deeper value is an attack on recursion


def unreadable(value: object, where: str) -> str | None:
    """A value no tool can take whatever its schema: nested too deep, or holding text that is not
    Unicode (a lone UTF-16 surrogate cannot be encoded, stored or shown). Iterative, so the
    check itself cannot run out of stack."""
    stack: list[tuple[object, str, int]] = [(value, where, 0)]
    while stack:
        item, at, depth = stack.pop()
        if depth > MAX_DEPTH:
            return f"{where} nests more than {MAX_DEPTH} levels deep."
        texts = [item] if isinstance(item, str) else list(item) if isinstance(item, dict) else []
        for text in texts:
            if isinstance(text, str):
                try:
                    text.encode("utf-8")
                except UnicodeEncodeError as e:
                    return (f"{at} holds a lone UTF-16 surrogate (U+{ord(text[e.start]):04X} at "
                            f"character {e.start}), which is not valid Unicode text.")
        if isinstance(item, dict):
            stack += [(v, f"{at}.{k}", depth + 1) for k, v in item.items()]
        elif isinstance(item, list):
            stack += [(v, f"{at}[{i}]", depth + 1) for i, v in enumerate(item)]
    return None


def _first_problem(schema: Mapping[str, Any], value: object, where: str,
                   root: Mapping[str, Any]) -> str | None:
    # 2020-12: the schema a $ref names applies beside its siblings, so the end of the chain is
    # checked first. The chain is followed in a loop, never a call deeper per step: a chain and
    # a value each as deep as allowed would otherwise multiply into the recursion limit.
    for step in reversed(_ref_chain(schema, root)):
        problem = _own_problem(step, value, where, root)
        if problem is not None:
            return problem
    return None


def _ref_chain(schema: Mapping[str, Any], root: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """``schema`` and each schema its ``$ref`` chain leads to, in order (``check_schema`` has
    refused a chain that loops or runs past ``MAX_DEPTH``; one that does here just ends)."""
    chain = [schema]
    while "$ref" in chain[-1] and len(chain) <= MAX_DEPTH + 1:
        target = resolve(root, chain[-1]["$ref"])
        if any(target is seen for seen in chain):
            break
        chain.append(target)
    return chain


def _own_problem(schema: Mapping[str, Any], value: object, where: str,
                 root: Mapping[str, Any]) -> str | None:
    """The first problem of ``value`` against ``schema``'s own keywords (its ``$ref`` aside)."""
    # Type first: every other keyword's message assumes the value has the declared type.
    if "type" in schema and not _has_type(value, schema["type"]):
        return f"{where} must be {describe(schema)}, got {_value_noun(value)}."
    if "enum" in schema and not any(_json_equal(value, item) for item in schema["enum"]):
        return f"{where} must be {describe(schema)}, got {_dump(value)}."
    for check in (_check_number, _check_string):
        problem = check(schema, value, where)
        if problem is not None:
            return problem
    for nested in (_check_array, _check_object):
        problem = nested(schema, value, where, root)
        if problem is not None:
            return problem
    return None


def _check_number(schema: Mapping[str, Any], value: object, where: str) -> str | None:
    if not _is_number(value):
        return None
    assert isinstance(value, int | float)
    if "minimum" in schema and value < schema["minimum"]:
        return f"{where} must be at least {_dump(schema['minimum'])}, got {_dump(value)}."
    if "maximum" in schema and value > schema["maximum"]:
        return f"{where} must be at most {_dump(schema['maximum'])}, got {_dump(value)}."
    return None


def _check_string(schema: Mapping[str, Any], value: object, where: str) -> str | None:
    if not isinstance(value, str):
        return None
    if "minLength" in schema and len(value) < schema["minLength"]:
        n = schema["minLength"]
        return f"{where} must be at least {_plural(n, 'character')} long, got {len(value)}."
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        n = schema["maxLength"]
        return f"{where} must be at most {_plural(n, 'character')} long, got {len(value):,}."
    return None


def _check_array(schema: Mapping[str, Any], value: object, where: str,
                 root: Mapping[str, Any]) -> str | None:
    if not isinstance(value, list):
        return None
    low, high = schema.get("minItems"), schema.get("maxItems")
    if (low is not None and len(value) < low) or (high is not None and len(value) > high):
        return f"{where} must be {describe(schema)}, got {_plural(len(value), 'item')}."
    items = schema.get("items")
    if isinstance(items, Mapping):
        for index, item in enumerate(value):
            problem = _first_problem(items, item, f"{where}[{index}]", root)
            if problem is not None:
                return problem
    return None


def _check_object(schema: Mapping[str, Any], value: object, where: str,
                  root: Mapping[str, Any]) -> str | None:
    if not isinstance(value, dict):
        return None
    properties: Mapping[str, Any] = schema.get("properties", {})
    for name in schema.get("required", []):
        if name not in value:
            return f"{where}.{name} is required but was not given."
    problem = _check_unknown_keys(schema, value, where, root)
    if problem is not None:
        return problem
    for name, subschema in properties.items():
        if name in value:
            problem = _first_problem(subschema, value[name], f"{where}.{name}", root)
            if problem is not None:
                return problem
    return None


def _check_unknown_keys(schema: Mapping[str, Any], value: dict[str, Any], where: str,
                        root: Mapping[str, Any]) -> str | None:
    properties: Mapping[str, Any] = schema.get("properties", {})
    extra = sorted(key for key in value if key not in properties)
    additional = schema.get("additionalProperties", True)
    if not extra or additional is True:
        return None
    if additional is False:
        allowed = ", ".join(properties) if properties else "none"
        names = ", ".join(repr(key) for key in extra)
        word = "field" if len(extra) == 1 else "fields"
        return f"{where} has unknown {word} {names}; the allowed fields are: {allowed}."
    for key in extra:
        problem = _first_problem(additional, value[key], f"{where}.{key}", root)
        if problem is not None:
            return problem
    return None


# ---------------------------------------------------------------------------------------------
# describing schemas and values in words


def describe(schema: Mapping[str, Any]) -> str:
    """What a value of ``schema`` is, as a noun phrase: "an array of 2 integers"."""
    if "enum" in schema:
        return "one of " + ", ".join(_dump(item) for item in schema["enum"])
    types = _types(schema)
    if len(types) != 1:
        return " or ".join(_NOUNS[t][0] for t in types if t in _NOUNS) or "a JSON value"
    kind = types[0]
    if kind == "array":
        return _describe_array(schema)
    if kind in ("integer", "number"):
        return _NOUNS[kind][0] + _describe_range(schema)
    return _NOUNS.get(kind, ("a JSON value", ""))[0]


def _describe_array(schema: Mapping[str, Any]) -> str:
    items = schema.get("items")
    item_types = _types(items) if isinstance(items, Mapping) else []
    plural = _NOUNS[item_types[0]][1] if len(item_types) == 1 and item_types[0] in _NOUNS else ""
    low, high = schema.get("minItems"), schema.get("maxItems")
    noun = plural or "items"
    if low is not None and low == high:
        count = f"{low} {noun if low != 1 else noun.removesuffix('s')}"
    elif low is not None and high is not None:
        count = f"{low} to {high} {noun}"
    elif low is not None:
        count = f"at least {low} {noun if low != 1 else noun.removesuffix('s')}"
    elif high is not None:
        count = f"at most {high} {noun if high != 1 else noun.removesuffix('s')}"
    else:
        return f"an array of {plural}" if plural else "an array"
    return f"an array of {count}"


def _describe_range(schema: Mapping[str, Any]) -> str:
    low, high = schema.get("minimum"), schema.get("maximum")
    if low is not None and high is not None:
        return f" from {_dump(low)} to {_dump(high)}"
    if low is not None:
        return f" of at least {_dump(low)}"
    if high is not None:
        return f" of at most {_dump(high)}"
    return ""


def _value_noun(value: object) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN or Infinity, which JSON does not allow"
    for kind in ("boolean", "integer", "number", "string", "array", "object", "null"):
        if _is(value, kind):
            return _NOUNS[kind][0]
    return type(value).__name__


def _plural(count: int, word: str) -> str:
    return f"{count:,} {word}" + ("" if count == 1 else "s")


def _dump(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=repr)


# ---------------------------------------------------------------------------------------------
# types


def _types(schema: Mapping[str, Any]) -> list[str]:
    declared = schema.get("type")
    if isinstance(declared, str):
        return [declared]
    if isinstance(declared, list):
        return [t for t in declared if isinstance(t, str)]
    return []


def _has_type(value: object, declared: object) -> bool:
    kinds = [declared] if isinstance(declared, str) else declared
    return isinstance(kinds, list) and any(_is(value, kind) for kind in kinds)


def _is(value: object, kind: object) -> bool:
    # bool is a subclass of int in Python; in a tool call `true` is never a count or an index.
    if kind == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return _is_number(value)
    checks: dict[object, type | tuple[type, ...]] = {
        "object": dict, "string": str, "boolean": bool, "array": list, "null": type(None),
    }  # fmt: skip
    expected = checks.get(kind)
    return expected is not None and isinstance(value, expected)


def _is_number(value: object) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and math.isfinite(value)


def _json_equal(a: object, b: object) -> bool:
    # Python says True == 1 and 1 == 1.0; JSON enum membership must not confuse true with 1.
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[k], b[k]) for k in a)
    return a == b


# ---------------------------------------------------------------------------------------------
# check_schema


def check_schema(schema: object, *, where: str = "schema") -> list[str]:
    """Problems with ``schema`` itself, one sentence each; an empty list means it is usable."""
    if not isinstance(schema, Mapping):
        return [f"{where} must be a JSON object, got {_value_noun(schema)}."]
    deep = unreadable(schema, where)  # (before anything recursive walks it)
    if deep is not None:
        return [deep]
    problems = _check_root(schema, where)
    problems += _check(schema, where, schema, at_root=True)
    if not problems:
        problems += _ref_cycles(schema, where)
    return problems


def _check(schema: object, where: str, root: Mapping[str, Any], *, at_root: bool = False
           ) -> list[str]:
    if not isinstance(schema, Mapping):
        return [f"{where} must be a JSON object, got {_value_noun(schema)}."]
    problems = [
        f"{where} uses the unsupported keyword {key!r}; supported keywords are: "
        + ", ".join(sorted(KEYWORDS))
        + "."
        for key in schema
        if key not in KEYWORDS
    ]
    problems += [f"{where} uses {key!r}, which gitspace takes only at the root of a schema."
                 for key in _ROOT_ONLY if key in schema and not at_root]
    problems += _check_type_keyword(schema, where)
    problems += _check_bounds(schema, where)
    problems += _check_object_keywords(schema, where, root)
    problems += _check_misc_keywords(schema, where, root)
    if not problems and "default" in schema:
        problem = _first_problem(schema, schema["default"], f"{where}.default", root)
        if problem is not None:
            problems.append(problem)
    return problems


def _check_root(schema: Mapping[str, Any], where: str) -> list[str]:
    problems = []
    if "$schema" in schema and schema["$schema"] != DIALECT:
        problems.append(f"{where}.$schema must be {DIALECT!r} (JSON Schema 2020-12), got "
                        f"{_dump(schema['$schema'])}.")
    defs = schema.get("$defs", {})
    if not isinstance(defs, Mapping):
        return [*problems, f"{where}.$defs must be an object mapping names to schemas."]
    for name, subschema in defs.items():
        problems += _check(subschema, f"{where}.$defs.{name}", schema)
    return problems


def resolve(root: Mapping[str, Any], ref: object) -> Mapping[str, Any]:
    """The schema ``ref`` names inside ``root`` ("#" or "#/$defs/NAME"); KeyError if none."""
    if ref == "#":
        return root
    prefix = "#/$defs/"
    if not isinstance(ref, str) or not ref.startswith(prefix) or "/" in ref[len(prefix):]:
        raise KeyError(ref)
    name = ref[len(prefix):].replace("~1", "/").replace("~0", "~")
    defs = root.get("$defs")
    target = defs.get(name) if isinstance(defs, Mapping) else None
    if not isinstance(target, Mapping):
        raise KeyError(ref)
    return target


def _check_ref(schema: Mapping[str, Any], where: str, root: Mapping[str, Any]) -> list[str]:
    if "$ref" not in schema:
        return []
    try:
        resolve(root, schema["$ref"])
    except KeyError:
        names = ", ".join(f"#/$defs/{n}" for n in root.get("$defs", {}) or {}) or "none"
        return [f"{where}.$ref is {_dump(schema['$ref'])}, which names no schema: gitspace "
                f"resolves '#' (the root) and '#/$defs/NAME' (defined here: {names})."]
    return []


def _ref_cycles(root: Mapping[str, Any], where: str) -> list[str]:
    """References that lead back to themselves without describing a value at any step."""
    problems = []
    starts = [("#", root), *((f"#/$defs/{n}", d) for n, d in (root.get("$defs") or {}).items())]
    reported: set[str] = set()
    for name, start in starts:
        if name in reported:
            continue  # (one sentence per cycle)
        seen = [name]
        schema = start
        while "$ref" in schema:
            ref = schema["$ref"]
            if ref in seen:
                chain = " -> ".join([*seen, ref])
                reported.update(seen)
                problems.append(f"{where}: {name} refers to itself without describing a "
                                f"value ({chain}).")
                break
            if len(seen) > MAX_DEPTH:  # (each step is a call deeper when a value is checked)
                reported.update(seen)
                problems.append(f"{where}: {name} refers through more than {MAX_DEPTH} "
                                "$refs in a row before describing a value.")
                break
            seen.append(ref)
            schema = resolve(root, ref)
    return problems


def _check_type_keyword(schema: Mapping[str, Any], where: str) -> list[str]:
    if "type" not in schema:
        return []
    declared = schema["type"]
    kinds = declared if isinstance(declared, list) else [declared]
    bad = [kind for kind in kinds if kind not in TYPES]
    if not kinds or bad or (isinstance(declared, list) and len(set(kinds)) != len(kinds)):
        return [
            f"{where}.type must be one of {', '.join(TYPES)} (or a list of distinct types), "
            f"got {_dump(declared)}."
        ]
    return []


def _check_bounds(schema: Mapping[str, Any], where: str) -> list[str]:
    problems = []
    for key in ("minimum", "maximum"):
        if key in schema and not _is_number(schema[key]):
            problems.append(f"{where}.{key} must be a number, got {_dump(schema[key])}.")
    for key in _COUNT_KEYWORDS:
        value = schema.get(key)
        if key in schema and not (_is(value, "integer") and isinstance(value, int) and value >= 0):
            problems.append(f"{where}.{key} must be a non-negative integer, got {_dump(value)}.")
    if problems:
        return problems
    for low, high in (("minimum", "maximum"), ("minLength", "maxLength"), ("minItems", "maxItems")):
        if low in schema and high in schema and schema[low] > schema[high]:
            problems.append(f"{where}.{low} is greater than {where}.{high}; nothing can match.")
    return problems


def _check_object_keywords(schema: Mapping[str, Any], where: str,
                           root: Mapping[str, Any]) -> list[str]:
    problems: list[str] = []
    properties = schema.get("properties", {})
    if not isinstance(properties, Mapping):
        problems.append(f"{where}.properties must be an object mapping names to schemas.")
        properties = {}
    for name, subschema in properties.items():
        problems += _check(subschema, f"{where}.properties.{name}", root)
    required = schema.get("required", [])
    if not (isinstance(required, list) and all(isinstance(n, str) for n in required)):
        problems.append(f"{where}.required must be an array of field names.")
    elif len(set(required)) != len(required):
        problems.append(f"{where}.required lists a field more than once.")
    elif "properties" in schema:
        missing = [name for name in required if name not in properties]
        if missing:
            problems.append(
                f"{where}.required names {', '.join(map(repr, missing))}, "
                f"which {'is' if len(missing) == 1 else 'are'} not in {where}.properties."
            )
    additional = schema.get("additionalProperties", True)
    if isinstance(additional, Mapping):
        problems += _check(additional, f"{where}.additionalProperties", root)
    elif not isinstance(additional, bool):
        problems.append(f"{where}.additionalProperties must be true, false or a schema.")
    return problems


def _check_misc_keywords(schema: Mapping[str, Any], where: str,
                         root: Mapping[str, Any]) -> list[str]:
    problems = _check_ref(schema, where, root)
    if "items" in schema:
        problems += _check(schema["items"], f"{where}.items", root)
    if "enum" in schema and not (isinstance(schema["enum"], list) and schema["enum"]):
        problems.append(f"{where}.enum must be a non-empty array of allowed values.")
    for key in ("description", "title", "$comment"):
        if key in schema and not isinstance(schema[key], str):
            problems.append(f"{where}.{key} must be a string.")
    return problems


# ---------------------------------------------------------------------------------------------
# apply_defaults


def apply_defaults(schema: Mapping[str, Any], args: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``args`` with each absent property that declares a ``default`` filled in.

    Nested objects that are present get their own defaults too, and a property given by a
    ``$ref`` gets those of the schema referred to (its own ``default`` wins). ``args`` is never
    modified and defaults are deep-copied, so a mutable default is never shared between calls.
    """
    return _with_defaults(schema, args, schema)


def _with_defaults(schema: Mapping[str, Any], args: Mapping[str, Any],
                   root: Mapping[str, Any]) -> dict[str, Any]:
    result = dict(args)
    for name, subschema in _followed(schema, root).get("properties", {}).items():
        if not isinstance(subschema, Mapping):
            continue
        subschema = _followed(subschema, root)
        if name not in result and "default" in subschema:
            result[name] = copy.deepcopy(subschema["default"])
        elif isinstance(result.get(name), dict) and "properties" in subschema:
            result[name] = _with_defaults(subschema, result[name], root)
    return result


def _followed(schema: Mapping[str, Any], root: Mapping[str, Any]) -> Mapping[str, Any]:
    """``schema`` with what its ``$ref`` chain adds (its own keywords win); check_schema has
    made sure the chain resolves and ends."""
    merged = dict(schema)
    seen: set[object] = set()
    while "$ref" in schema and schema["$ref"] not in seen:
        seen.add(schema["$ref"])
        try:
            schema = resolve(root, schema["$ref"])
        except KeyError:
            break
        merged = {**schema, **merged}
    return merged
