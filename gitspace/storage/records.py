"""Record classes without importing ``dataclasses``: what a harness's hook path is built of.

A harness runs ``gitspace hook`` before and after every tool call, and importing ``dataclasses``
(which pulls in ``inspect``, ``ast``, ``dis``, ``tokenize``...) costs a fresh process about as
much as everything else an in-place after hook imports (measured: ``benchmarks/hooks.py
--in-place``). ``@record`` does what ``@dataclass`` did for the modules on that path (the
objects, the ledger, the writer, the index): it writes ``__init__`` as source and compiles it
once per class, when the class first builds a value, so building one costs what a dataclass
costs; ``__eq__``, ``__repr__``, (frozen) ``__hash__`` and the refusing ``__setattr__`` are
plain functions over the fields (compiling them too cost a hook about 3 ms). Defaults come from
the class body; ``field(default_factory=...)`` makes a new value for each instance, ``field(default=...,
compare=False)`` leaves a field out of equality and hashing; a ``__post_init__`` the class
defines runs last, as a dataclass's does. ``replace`` copies a record with
some fields changed (``dataclasses.replace`` does not take records). Type checkers read
``record`` as a dataclass decorator (``dataclass_transform``), so calls are checked as before.

Invariant: fields are the class's own annotations, in order; no inheritance of fields, no
``ClassVar``; a field without a default never follows one with a default.
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


class FrozenError(AttributeError):
    """An assignment to a field of a frozen record (``dataclasses.FrozenInstanceError``)."""


_MISSING = object()


class _Field:
    __slots__ = ("compare", "default", "make")

    def __init__(self, default: Any, make: Callable[[], Any] | None, compare: bool) -> None:
        self.default, self.make, self.compare = default, make, compare


def field(*, default: Any = _MISSING, default_factory: Callable[[], Any] | None = None,
          compare: bool = True) -> Any:
    """A field's default (``default``, or one made anew for each instance by
    ``default_factory``) and whether equality and hashing look at it, as
    ``dataclasses.field``."""
    return _Field(default, default_factory, compare)


def _init_source(names: tuple[str, ...], with_default: set[str], made: set[str],
                 post_init: bool = False) -> str:
    """The source of a record class's ``__init__`` (every name in it is a field's or ours;
    field names are identifiers); it ends calling ``__post_init__`` when the class has one."""
    params = ", ".join(f"{n}=_default_{n}" if n in with_default else n for n in names)
    sets = [f"    _set(self, {n!r}, _make_{n}() if {n} is _MISSING else {n})" if n in made
            else f"    _set(self, {n!r}, {n})" for n in names]
    end = "    self.__post_init__()" if post_init else "    pass"
    return "\n".join([f"def __init__(self{', ' if names else ''}{params}):", *sets, end])


def _compared(cls: type, names: tuple[str, ...], compared: list[str], frozen: bool
              ) -> dict[str, Any]:
    """``__eq__``, ``__repr__`` and (frozen) ``__hash__``: plain functions over the fields (only
    ``__init__``, the one called per value in a loop, is worth its compile)."""
    from operator import attrgetter

    key: Callable[[Any], Any] = attrgetter(*compared) if compared else (lambda _: ())

    def __eq__(self: Any, other: Any) -> Any:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return key(self) == key(other)

    def __repr__(self: Any) -> str:
        shown = ", ".join(f"{n}={getattr(self, n)!r}" for n in names)
        return f"{cls.__name__}({shown})"

    made: dict[str, Any] = {"__eq__": __eq__, "__repr__": __repr__}
    if frozen:
        made["__hash__"] = lambda self: hash(key(self))
    for name, method in made.items():
        method.__qualname__ = f"{cls.__qualname__}.{name}"
    return made


@dataclass_transform(field_specifiers=(field,))
def record(*, frozen: bool = False) -> Callable[[type[T]], type[T]]:
    """``@record()`` or ``@record(frozen=True)`` on a class, as ``@dataclass``."""
    def build(cls: type[T]) -> type[T]:
        names = tuple(cls.__dict__.get("__annotations__", {}))
        scope: dict[str, Any] = {"_MISSING": _MISSING,
                                 "_set": object.__setattr__ if frozen else setattr}
        with_default: set[str] = set()
        made: set[str] = set()  # fields with a default_factory
        compared = []
        for name in names:
            given = cls.__dict__.get(name, _MISSING)
            spec = given if isinstance(given, _Field) else _Field(given, None, True)
            if spec.compare:
                compared.append(name)
            if spec.make is not None or spec.default is not _MISSING:
                with_default.add(name)
                scope[f"_default_{name}"] = _MISSING if spec.make else spec.default
                if spec.make is not None:
                    made.add(name)
                    scope[f"_make_{name}"] = spec.make
            if isinstance(given, _Field):
                if spec.make is None and spec.default is not _MISSING:
                    setattr(cls, name, spec.default)
                else:
                    delattr(cls, name)
        source = _init_source(names, with_default, made, "__post_init__" in cls.__dict__)

        def first(self: Any, *args: Any, **kwargs: Any) -> None:
            # Compiled on first use: a class a process never builds costs nothing.
            if vars(cls)["__init__"] is first:
                methods: dict[str, Any] = {}
                exec(source, scope, methods)
                methods["__init__"].__qualname__ = f"{cls.__qualname__}.__init__"
                cls.__init__ = methods["__init__"]  # type: ignore[misc,method-assign]
            vars(cls)["__init__"](self, *args, **kwargs)

        made_now = _compared(cls, names, compared, frozen)
        made_now.update(__init__=first, _fields=names)
        if frozen:
            def __setattr__(self: Any, name: str, value: Any) -> None:
                raise FrozenError(f"cannot assign to field {name!r} of a frozen {cls.__name__}")

            def __delattr__(self: Any, name: str) -> None:
                raise FrozenError(f"cannot delete field {name!r} of a frozen {cls.__name__}")

            made_now.update(__setattr__=__setattr__, __delattr__=__delattr__)
        else:
            made_now["__hash__"] = None  # (unhashable, as a dataclass)
        for name, value in made_now.items():
            setattr(cls, name, value)
        return cls

    return build


def names(cls: type) -> tuple[str, ...]:
    """The field names of the record class ``cls``, in order (``dataclasses.fields``)."""
    found: tuple[str, ...] = vars(cls)["_fields"]
    return found


def replace(obj: T, **changes: Any) -> T:
    """A copy of the record ``obj`` with ``changes``, as ``dataclasses.replace``."""
    fields: tuple[str, ...] = vars(type(obj))["_fields"]
    return type(obj)(**{name: changes.pop(name, getattr(obj, name)) for name in fields},
                     **changes)
