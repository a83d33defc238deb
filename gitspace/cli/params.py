"""The parameters of a command that runs without typer: declared once, read by typer and here.

A command on a read's path (``cli/reads.py``, the global options) declares its parameters with
``declare``: each is an ``Option`` or an ``Argument`` holding exactly what ``typer.Option`` and
``typer.Argument`` would be given, beside the function's own defaults. From that one declaration:

- ``for_typer`` makes the command typer registers: the same function, its signature written with
  ``typer.Option``/``typer.Argument``, so help, completion and every error read as typer's own;
- ``parse`` reads the plain cases of a command line without importing typer (the options the
  command declares, their values, its arguments, in any order) and answers None for anything
  else (``-h``, an unknown option, a value typer would refuse, a callback such as ``--version``,
  an argument missing): that run goes to typer, which says what it always said.

Invariant: ``parse`` never accepts a command line typer would refuse, nor reads one differently;
where it could disagree it answers None. ``tests/test_cli_params.py`` holds both readings side by
side on every read command.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum
from pathlib import Path

TYPE_CHECKING = False  # typing is not imported at run time: a read starts without it
if TYPE_CHECKING:
    from typing import Any

Command = Callable[..., None]


class Param:
    """One parameter: its declarations (``-n``, ``--max-count``) and typer's keywords."""

    argument = False

    def __init__(self, *decls: str, type: type | None = None, **extra: Any) -> None:  # noqa: A002
        self.decls, self.type, self.extra = decls, type, extra


class Option(Param):
    """``typer.Option(*decls, **extra)``; ``type``: the value's type when the default (None)
    does not say it."""


class Argument(Param):
    """``typer.Argument(**extra)``."""

    argument = True


def declare(**params: Param) -> Callable[[Command], Command]:
    """Attach ``params`` (by the function's parameter names) to a command."""

    def attach(function: Command) -> Command:
        names = function.__code__.co_varnames[:function.__code__.co_argcount]
        assert set(names) == set(params), f"{function.__name__} declares {sorted(params)}"
        function.__gitspace_params__ = {name: params[name] for name in names}  # type: ignore[attr-defined]
        return function

    return attach


def _declared(function: Command) -> dict[str, tuple[Param, Any, type]]:
    """name -> (its declaration, its default, its value's type)."""
    params: dict[str, Param] = function.__gitspace_params__  # type: ignore[attr-defined]
    defaults = dict(zip(reversed(list(params)), reversed(function.__defaults__ or ()),
                        strict=False))
    out = {}
    for name, param in params.items():
        default = defaults.get(name, ...)
        kind = param.type or (str if default is None or default is ... else
                              Path if isinstance(default, Path) else type(default))
        out[name] = (param, default, kind)
    return out


def for_typer(function: Command) -> Command:
    """``function`` as typer reads a command: its signature spelled with typer's parameters."""
    import functools
    import inspect
    from typing import Annotated, Optional

    import typer

    parameters = []
    for name, (param, default, kind) in _declared(function).items():
        made = (typer.Argument if param.argument else typer.Option)(*param.decls, **param.extra)
        hint = Optional[kind] if default is None else kind  # noqa: UP045 (typer reads Optional)
        parameters.append(inspect.Parameter(
            name, inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=Annotated[hint, made],
            default=inspect.Parameter.empty if default is ... else default))

    @functools.wraps(function)
    def command(**values: Any) -> None:
        function(**values)

    command.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    command.__annotations__ = {}
    return command


def _flags(name: str, param: Param, kind: type) -> dict[str, tuple[str, Any]]:
    """Each spelling of an option -> (its parameter, the value a flag sets, or ... for one that
    takes a value), as typer names them: the declarations given, else ``--name``
    (``--name/--no-name`` for a flag)."""
    decls = param.decls or (f"--{name.replace('_', '-')}",)
    if kind is bool:
        if not param.decls:
            decls = (f"{decls[0]}/--no-{name.replace('_', '-')}",)
        out: dict[str, tuple[str, Any]] = {}
        for decl in decls:
            on, _, off = decl.partition("/")
            out |= {on.strip(): (name, True), **({off.strip(): (name, False)} if off else {})}
        return out
    return {decl: (name, ...) for decl in decls}


def _value(text: str, param: Param, kind: type) -> Any:
    """``text`` as typer would make it the parameter's value; ValueError where typer refuses or
    might read it otherwise."""
    if text.startswith("-") and kind is not int:
        raise ValueError(text)  # an option name given as a value: typer's words, not ours
    if issubclass(kind, Enum):
        return kind(text)
    if kind is int:
        number = int(text, 10)
        low, high = param.extra.get("min"), param.extra.get("max")
        if (low is not None and number < low) or (high is not None and number > high):
            raise ValueError(text)
        return number
    if kind is Path and text:
        return Path(text)
    if kind is str:
        return text
    raise ValueError(text)


def parse(function: Command, args: list[str]) -> dict[str, Any] | None:
    """The values typer would call ``function`` with for ``args``; None when typer should read
    them itself (see the module's docstring)."""
    declared = _declared(function)
    flags: dict[str, tuple[str, Any]] = {}
    for name, (param, _, kind) in declared.items():
        if param.argument:
            continue
        if param.extra.get("callback") or param.extra.get("is_eager"):
            continue  # typer runs it: a command line naming it is typer's
        flags |= _flags(name, param, kind)
    values = {name: default for name, (_, default, _) in declared.items()}
    positional = [name for name, (param, _, _) in declared.items() if param.argument]
    words = iter(args)
    try:
        for word in words:
            if not word.startswith("-") or word == "-":
                if word == "-" or not positional:
                    return None
                name = positional.pop(0)
                values[name] = _value(word, declared[name][0], declared[name][2])
                continue
            spelled, _, attached = word.partition("=") if word.startswith("--") else (word, "", "")
            if spelled not in flags:
                return None  # -h, an unknown option, -n5: typer's
            name, set_to = flags[spelled]
            if set_to is not ...:
                if attached:
                    return None  # --stat=yes
                values[name] = set_to
                continue
            text = attached if "=" in word else next(words)
            values[name] = _value(text, declared[name][0], declared[name][2])
    except (StopIteration, ValueError):
        return None
    if any(value is ... for value in values.values()):
        return None  # a required argument is missing: typer says so
    return values
