"""What a run hands back: the value's schema, the ``return`` tool made from it, and its check.

Invariants:
- the ``return`` tool's input schema is the value's schema when that is an object schema
  (``"type": "object"``), and otherwise ``{"value": <the schema>}`` (one required field, nothing
  else); the value handed back is the input itself, or its ``value`` field;
- a value is accepted only when it passes the check: the JSON Schema (``core.schema``), or the
  pydantic model or dataclass it came from; a rejected value is answered with the check's own
  sentence, so the model can correct its call;
- a schema the check cannot enforce is refused when the run starts, never half-checked later.

A pydantic model is checked by pydantic (its ``model_json_schema`` is what the model sees). A
dataclass is described field by field (str, int, float, bool, None, lists, dicts, nested
dataclasses and ``X | None``), checked with ``core.schema`` and built with its constructor, so
it needs no pydantic.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..core import schema as jsonschema
from ..errors import BadArguments

RETURN = "return"  # the tool's exact name

DESCRIPTION = (
    "Hand your result back to whoever started you and end this run: call it once, alone, when "
    "the task is done, with the value as its input. Nothing runs after it. If the value does "
    "not fit the schema you get an error saying why; fix it and call return again.")

ANY: dict[str, Any] = {}  # any JSON value


@dataclass(frozen=True)
class Returns:
    """The value a run must return."""

    schema: dict[str, Any]  # the value's own JSON Schema
    kind: Any = None  # the pydantic model or dataclass it came from (None: plain JSON Schema)

    @classmethod
    def of(cls, spec: Any) -> Returns:
        """From a JSON Schema (a dict), a pydantic model class or a dataclass."""
        if isinstance(spec, Returns):
            return spec
        if isinstance(spec, type) and hasattr(spec, "model_json_schema"):
            return cls(dict(spec.model_json_schema()), spec)
        if isinstance(spec, type) and dataclasses.is_dataclass(spec):
            return cls(_dataclass_schema(spec, spec.__name__), spec)
        if not isinstance(spec, Mapping):
            raise BadArguments(
                f"A return value is described by a JSON Schema object, a pydantic model or a "
                f"dataclass, not {type(spec).__name__}.",
                hint='For a number, say {"type": "integer"}.')
        found = dict(copy.deepcopy(spec))
        problems = jsonschema.check_schema(found, where="returns")
        if problems:
            raise BadArguments("The returns schema cannot be enforced: " + " ".join(problems),
                               hint="Use the keywords it lists, or pass a pydantic model.")
        return cls(found)

    @property
    def wrapped(self) -> bool:
        return self.schema.get("type") != "object"

    def input_schema(self) -> dict[str, Any]:
        if not self.wrapped:
            return self.schema
        return {"type": "object", "properties": {"value": self.schema}, "required": ["value"],
                "additionalProperties": False}

    def definition(self) -> dict[str, Any]:
        """The ``return`` tool as the model sees it (sorted like every other definition)."""
        return {"name": RETURN, "description": DESCRIPTION, "input_schema": self.input_schema()}

    def check(self, given: dict[str, Any]) -> Any:
        """The value ``given`` (the tool's input) hands back, as JSON; BadArguments saying what
        is wrong when it does not fit."""
        if self.wrapped and set(given) != {"value"}:
            keys = ", ".join(sorted(given)) or "nothing"
            raise BadArguments(f"return takes one field, value, and was given: {keys}.",
                               hint='Call it as {"value": ...}.')
        value = given["value"] if self.wrapped else given
        if self.kind is not None and hasattr(self.kind, "model_validate"):
            try:  # pydantic's own rules; the value kept is what the model makes of it
                return self.kind.model_validate(value).model_dump(mode="json")
            except ValueError as e:  # pydantic's ValidationError is one
                raise BadArguments(f"The value does not fit {self.kind.__name__}: {e}") from None
        jsonschema.validate(self.schema, value, where="value")
        return value

    def build(self, value: Any) -> Any:
        """The value as the caller asked for it: the model or dataclass instance, or the JSON."""
        if self.kind is None:
            return value
        if hasattr(self.kind, "model_validate"):
            return self.kind.model_validate(value)
        return _build(self.kind, value)


def dumps(value: Any) -> str:
    """A value as the JSON text a caller reads (a parent's tool_result, the CLI's stdout)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# -- dataclasses ------------------------------------------------------------------------------

_SCALARS: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean",
                            type(None): "null"}


def _dataclass_schema(cls: type, where: str) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    properties, required = {}, []
    for f in dataclasses.fields(cls):
        properties[f.name] = _type_schema(hints[f.name], f"{where}.{f.name}")
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            required.append(f.name)
    out: dict[str, Any] = {"type": "object", "properties": properties,
                           "additionalProperties": False}
    if required:
        out["required"] = required
    return out


def _type_schema(hint: Any, where: str) -> dict[str, Any]:
    if hint in _SCALARS:
        return {"type": _SCALARS[hint]}
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _dataclass_schema(hint, where)
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is list and len(args) == 1:
        return {"type": "array", "items": _type_schema(args[0], f"{where}[]")}
    if origin is dict and len(args) == 2 and args[0] is str:
        return {"type": "object", "additionalProperties": _type_schema(args[1], f"{where}{{}}")}
    if origin in (typing.Union, types.UnionType) and type(None) in args and len(args) == 2:
        inner = _type_schema(next(a for a in args if a is not type(None)), where)
        if set(inner) == {"type"} and isinstance(inner["type"], str):
            return {"type": [inner["type"], "null"]}
    raise BadArguments(
        f"{where} has the type {hint!r}, which a return value cannot describe yet.",
        hint="Use str, int, float, bool, lists, dict[str, X], nested dataclasses and "
             "X | None for simple types; or pass a pydantic model.")


def _build(hint: Any, value: Any) -> Any:
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        hints = typing.get_type_hints(hint)
        return hint(**{k: _build(hints[k], v) for k, v in value.items()})
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is list and value is not None:
        return [_build(args[0], v) for v in value]
    if origin is dict and value is not None:
        return {k: _build(args[1], v) for k, v in value.items()}
    if origin in (typing.Union, types.UnionType) and value is not None:
        return _build(next(a for a in args if a is not type(None)), value)
    return value
