"""Record classes for the hook's path, without importing ``dataclasses``.

A harness runs ``gitspace hook`` before and after every tool call, and importing ``dataclasses``
(which pulls in ``inspect``, ``ast``, ``dis``, ``tokenize``...) costs about as much as the rest
of the before hook's imports together. ``@record()`` does what these modules used ``@dataclass``
for, with plain closures: ``__init__`` (positional or keyword arguments; defaults from the class
body; ``field(default_factory=...)`` makes a new value for each instance), ``__eq__`` and
``__repr__`` over the fields, and with ``frozen=True`` no assignment after ``__init__`` (and a
``__hash__``). ``replace`` copies a record with some fields changed. Type checkers read
``record`` as a dataclass decorator (``dataclass_transform``), so calls are checked as before.

Invariant: fields are the class's own annotations, in order; no inheritance of fields.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing itself is not imported at run time (see the docstring)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar, dataclass_transform

    T = TypeVar("T")
else:
    def dataclass_transform(**_: object) -> Callable[[T], T]:
        return lambda decorator: decorator


class _Factory:
    __slots__ = ("make",)

    def __init__(self, make: Callable[[], Any]) -> None:
        self.make = make


def field(*, default_factory: Callable[[], Any]) -> Any:
    """A default made anew for each instance, as ``dataclasses.field(default_factory=...)``."""
    return _Factory(default_factory)


@dataclass_transform(field_specifiers=(field,))
def record(*, frozen: bool = False) -> Callable[[type[T]], type[T]]:
    def build(cls: type[T]) -> type[T]:
        names = tuple(cls.__dict__.get("__annotations__", {}))
        defaults = {n: cls.__dict__[n] for n in names if n in cls.__dict__}
        for name, default in defaults.items():
            if isinstance(default, _Factory):
                delattr(cls, name)
        title = cls.__name__

        def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
            if len(args) > len(names):
                raise TypeError(f"{title}() takes {len(names)} arguments, {len(args)} given")
            values = dict(zip(names, args, strict=False))  # the rest: keywords, defaults
            for key, value in kwargs.items():
                if key not in names or key in values:
                    raise TypeError(f"{title}() got an unexpected or repeated argument {key!r}")
                values[key] = value
            for name in names:
                if name not in values:
                    if name not in defaults:
                        raise TypeError(f"{title}() is missing the argument {name!r}")
                    default = defaults[name]
                    values[name] = default.make() if isinstance(default, _Factory) else default
                object.__setattr__(self, name, values[name])

        def __eq__(self: Any, other: object) -> bool:
            if other.__class__ is not self.__class__:
                return NotImplemented  # type: ignore[no-any-return]
            return all(getattr(self, n) == getattr(other, n) for n in names)

        def __repr__(self: Any) -> str:
            return f"{title}(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in names) + ")"

        def __setattr__(self: Any, name: str, value: Any) -> None:
            raise AttributeError(f"cannot assign to field {name!r} of a frozen {title}")

        def __delattr__(self: Any, name: str) -> None:
            raise AttributeError(f"cannot delete field {name!r} of a frozen {title}")

        def __hash__(self: Any) -> int:
            return hash(tuple(getattr(self, n) for n in names))

        methods: dict[str, Any] = {"__init__": __init__, "__eq__": __eq__,
                                   "__repr__": __repr__, "__hash__": __hash__ if frozen else None,
                                   "_fields": names}
        if frozen:
            methods.update(__setattr__=__setattr__, __delattr__=__delattr__)
        for name, method in methods.items():
            setattr(cls, name, method)
        return cls

    return build


def replace(obj: T, **changes: Any) -> T:
    """A copy of the record ``obj`` with ``changes``, as ``dataclasses.replace``."""
    fields: tuple[str, ...] = vars(type(obj))["_fields"]
    return type(obj)(**{name: changes.pop(name, getattr(obj, name)) for name in fields},
                     **changes)
