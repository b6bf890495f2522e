"""Commands made from their options dataclass: every field an option (or an argument), its name, help, default,
type and choices read from the dataclass, so that a new field is on the command line with no edit here.

    @command(TagOptions)
    def tag(options: TagOptions):
        '''Tag entities in text...'''          # the command's help

A command's own presentation options (`--json`) follow `options` as ordinary typer parameters.
"""

from __future__ import annotations

import functools
import inspect
import keyword
import types
import typing
from collections.abc import Callable
from dataclasses import fields, is_dataclass
from enum import Enum

import typer

from xling.options import Option, build, defaults, option_name, options_of

# Short flags, the same on every command that has the option.
SHORT = {"model": "-m", "workspace": "-w", "task_adapter": "-t", "output": "-o", "format": "-f"}


def command(cls, only: tuple[str, ...] | None = None, **fixed):
    """Make `run(options, **own)` a typer command whose options are those of `cls` (or `only` these), built into a
    `cls` as a recipe step's are; `fixed` gives options the command does not show (an analysis's name)."""

    def decorate(run: Callable):
        own = [
            p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
            for p in inspect.signature(run, eval_str=True).parameters.values()
        ][1:]
        shown = {name: spec for name, spec in options_of(defaults(cls)).items() if name not in fixed}
        shown = {name: shown[name] for name in only} if only is not None else shown
        # positional ones first, in their order, then the command's own options before those of its bases
        ranks = _base_ranks(cls)
        ordered = sorted(shown.values(), key=lambda spec: (spec.argument or len(shown), ranks.get(spec.name, 0)))
        generated = {_parameter_name(spec): spec.name for spec in ordered}
        leading = _optional_leading(ordered)
        parameters = [_parameter(spec, spec in leading) for spec in ordered] + own

        @functools.wraps(run)
        def typer_command(**values):
            extras = {parameter.name: values.pop(parameter.name) for parameter in own}
            given = {
                generated[name]: value.value if isinstance(value, Enum) else value for name, value in values.items()
            }
            if leading:
                _shift_leading(given, *leading)
            options = build(cls, {**given, **fixed})
            _check_now(options)
            return run(options, **extras)

        typer_command.options_class, typer_command.options_shown = cls, tuple(generated.values())
        typer_command.__signature__ = inspect.Signature(parameters)
        typer_command.__annotations__ = {parameter.name: parameter.annotation for parameter in parameters}
        del typer_command.__wrapped__  # typer reads the signature above, not `run`'s
        return typer_command

    return decorate


def _check_now(options) -> None:
    """The checks that need the files as they are now (a named adapter exists), which recipes cannot make when
    they read their steps: each option group's `check_now`, once the command's options are read."""
    for value in (options, *(getattr(options, f.name) for f in fields(options))):
        if callable(check := getattr(value, "check_now", None)):
            check()


def _base_ranks(cls) -> dict[str, int]:
    """Option name -> how far up the bases of `cls` its field is declared (0: in `cls` itself)."""
    ranks, instance = {}, defaults(cls)
    for f in fields(cls):
        rank = next(i for i, base in enumerate(cls.__mro__) if f.name in vars(base).get("__annotations__", {}))
        value = getattr(instance, f.name)
        ranks.update(dict.fromkeys(options_of(value) if is_dataclass(value) else [option_name(f)], rank))
    return ranks


def _parameter_name(spec: Option) -> str:
    """A keyword (`from`) takes a trailing underscore."""
    return spec.name + "_" if keyword.iskeyword(spec.name) else spec.name


def _optional_leading(ordered: list[Option]) -> tuple[Option, Option] | tuple[()]:
    """An optional first argument with choices before a required one (`[task] {data}`): the command then also
    takes the required one alone (`xling evaluate DATA`), since click would give a lone value to the first."""
    arguments = [spec for spec in ordered if spec.argument]
    if len(arguments) >= 2 and not arguments[0].required and arguments[0].choices and arguments[1].required:
        return arguments[0], arguments[1]
    return ()


def _shift_leading(given: dict, first: Option, second: Option) -> None:
    """A first value that is none of the first argument's choices starts the second (a lone `DATA`, or the first
    of several `CORPUS` files): the first argument then keeps its default."""
    value, rest = given[first.name], given[second.name]
    if value is not None and value not in first.choices:
        if typing.get_origin(_cli_type(second)) is list:
            given[second.name] = [value, *(rest or ())]
        elif rest is None:
            given[second.name] = value
        else:
            raise typer.BadParameter(
                f"{value!r} is not one of {', '.join(map(repr, first.choices))}", param_hint=f"'{first.name}'"
            )
        value = None
    if not given[second.name]:
        raise typer.BadParameter("missing", param_hint=f"'{second.name}'")
    given[first.name] = value or first.default


def _parameter(spec: Option, leading: bool = False) -> inspect.Parameter:
    """`leading`: one of `_optional_leading`'s pair, taken as text and checked by `_shift_leading`."""
    kind, default = inspect.Parameter.KEYWORD_ONLY, _typer_default(spec, leading)
    annotation = str if leading and not spec.required else _cli_type(spec)
    return inspect.Parameter(_parameter_name(spec), kind, default=default, annotation=annotation)


def _typer_default(spec: Option, leading: bool = False):
    if spec.argument:
        if leading:  # the pair's required one may come alone: click sees both as optional
            shown = " (required)" if spec.required else f" (default: {spec.default})"
            return typer.Argument(None, help=spec.help + shown, show_default=False, metavar=f"<{spec.name}>")
        return typer.Argument(... if spec.required else spec.default, help=spec.help, show_default=not spec.required)
    if spec.hint is bool and not spec.switch:
        flags = ()  # typer's --flag/--no-flag pair
    else:
        flags = ("--" + spec.name.replace("_", "-"), *([SHORT[spec.name]] if spec.name in SHORT else []))
    if spec.required:
        return typer.Option(..., *flags, help=spec.help)
    if spec.unset:
        shown = " (default: the preset's)" if spec.from_preset else ""
        default = ",".join(map(str, spec.default)) if isinstance(spec.default, list) else spec.default
        shown = shown or (f" (default: {default})" if spec.default not in (None, [], {}) else "")
        return typer.Option(None, *flags, help=spec.help + shown, show_default=False)
    return typer.Option(spec.default, *flags, help=spec.help)


def _cli_type(spec: Option):
    """The type typer parses: the field's, without None; a list where the field may be one; an Enum of the
    choices where there are some."""
    if spec.choices:
        return _choice_enum(spec.name, spec.choices)
    hint = spec.hint
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        kinds = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        hint = next((arg for arg in kinds if typing.get_origin(arg) is list), kinds[0])
    return hint


@functools.cache
def _choice_enum(name: str, choices: tuple[str, ...]) -> type[Enum]:
    return Enum(name.title().replace("_", ""), {choice: choice for choice in choices}, type=str)
