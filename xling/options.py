"""The one table of defaults: config dataclasses carry each option's default, help and name.

A field declared with `opt` carries its help text and, where the command-line name differs
from the field's, that name (`lr` for `learning_rate`; `no_lang_adapter` for
`use_lang_adapter`, inverted). A nested config (training, masking, fusion, adapter) lends
its options to the outer one, so `TaskAdapterOptions` has `lr`, `epochs`, `reduction_factor`.
The command line takes defaults and help from here, a recipe step's keys are checked
against `options_of`, and both build their dataclass with `build`: a recipe key is always
the command-line option's name.
"""

from __future__ import annotations

import functools
import math
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import MISSING, Field, dataclass, field, fields, is_dataclass, replace

from xling.errors import XlingError
from xling.given_data import DatasetLike


class OptionMeta(typing.TypedDict, total=False):
    """What `opt` records of an option besides its default and help.

    name: the option's name where it is not the field's; invert: the option is the field's negation; parse: turns
    command-line text into the field's value (e.g. a comma list); clears: giving this option resets that field
    unless it is given too (`--epochs` replaces a default number of steps); preset: a nested config that starts
    from this named preset, chosen with the `preset` option; without: options of a nested config that mean nothing
    here; hidden: not an option anywhere; argument: positional on the command line, the Nth; choices: the values it
    takes (or a function naming them, for a registry); required: must be given, though the field has a default (a
    nested config's, which must be constructible); overrides: how a nested config's options show here, as
    `Option` fields by option name (`{"lr": {"help": ...}, "task": {"argument": 1}}`).
    """

    name: str
    invert: bool
    parse: Callable[[str], object]
    clears: str
    preset: str
    without: tuple[str, ...]
    hidden: bool
    argument: int
    choices: tuple[str, ...] | Callable[[], typing.Iterable[str]]
    required: bool
    overrides: Mapping[str, Mapping]


@functools.cache
def type_hints(cls) -> dict:
    """`typing.get_type_hints` of an options class, worked out once: a recipe builds its steps' options many times."""
    return typing.get_type_hints(cls)


def opt(default=MISSING, help: str = "", *, factory=MISSING, **meta: typing.Unpack[OptionMeta]) -> Field:
    """A dataclass field that is also an option (see `OptionMeta` for what else it may say)."""
    if unknown := set(meta) - set(OptionMeta.__annotations__):
        raise TypeError(f"opt() got unknown settings {sorted(unknown)}")
    recorded = {"help": help, **meta}
    return field(default=default, default_factory=factory, metadata={k: v for k, v in recorded.items() if v})


@dataclass(frozen=True)
class Option:
    name: str  # snake_case: the command line's --kebab-case, and the recipe key
    help: str
    default: object
    required: bool = False
    # Left unset on the command line unless given: a preset's value, an option that clears or is cleared by
    # another (--steps, --epochs), a list or table. The dataclass then keeps its default.
    unset: bool = False
    from_preset: bool = False
    switch: bool = False  # a flag that is off unless given (`--no-lang-adapter`), with no negative form
    hint: object = str  # the field's type; text where `parse` reads it
    argument: int = 0  # positional on the command line, the Nth (0: an option)
    choices: tuple[str, ...] = ()


def option_name(f: Field) -> str:
    return f.metadata.get("name", f.name)


def field_value(f: Field, values: Mapping):
    """The value option values give field `f` (parsed, inverted), or None if they do not give it."""
    value = values.get(option_name(f))
    if value is None:
        return None
    if f.metadata.get("parse") and isinstance(value, str):
        try:
            value = f.metadata["parse"](value)
        except XlingError as err:
            raise XlingError(f"option {option_name(f)!r}: {err}") from None
    return not value if f.metadata.get("invert") else value


def options_of(
    config,
    _preset: bool = False,
    _without: tuple[str, ...] = (),
    _unset: bool = False,
    _overrides: Mapping[str, Mapping] | None = None,
) -> dict[str, Option]:
    """Every option of a config instance (its defaults are that instance's values), nested ones included.
    Below a preset every option is left unset unless given, so that the preset (or the nested config's own
    `check_options`) sees which were given."""
    found: dict[str, Option] = {}
    hints = type_hints(type(config))
    paired = {f.name for f in fields(config) if "clears" in f.metadata} | {
        f.metadata["clears"] for f in fields(config) if "clears" in f.metadata
    }
    for f in fields(config):
        meta, value = f.metadata, getattr(config, f.name)
        if meta.get("hidden") or option_name(f) in _without:
            continue
        if is_dataclass(value):
            if "preset" in meta:
                found["preset"] = Option("preset", meta.get("help", ""), meta["preset"], unset=True)
            # a preset gives the values of the nested configs below it that have presets too
            from_preset = "preset" in meta or (_preset and hasattr(type(value), "preset"))
            nested = options_of(
                value, from_preset, meta.get("without", ()), _unset or "preset" in meta, meta.get("overrides")
            )
            found.update(nested)
        else:
            choices = meta.get("choices", ())
            found[option_name(f)] = Option(
                option_name(f),
                meta.get("help", ""),
                not value if meta.get("invert") else value,
                required=is_required(f) or meta.get("required", False),
                unset=_unset or f.name in paired or isinstance(value, (list, dict)),
                from_preset=_preset,
                switch=bool(meta.get("invert")),
                hint=str if "parse" in meta else hints[f.name],
                argument=meta.get("argument", 0),
                choices=tuple(choices() if callable(choices) else choices),
            )
    return {name: replace(option, **(_overrides or {}).get(name, {})) for name, option in found.items()}


def with_options(config, values: Mapping, _without: tuple[str, ...] = ()):
    """`config` with the options in `values` changed; None means "not given", other names are ignored."""
    changes = {}
    hints = type_hints(type(config))
    for f in fields(config):
        meta, current = f.metadata, getattr(config, f.name)
        if meta.get("hidden") or option_name(f) in _without:
            continue
        if is_dataclass(current):
            preset = values.get("preset") if "preset" in meta else None
            base = type(current).preset(preset) if preset else current
            changes[f.name] = with_options(base, values, meta.get("without", ()))
            if hasattr(changes[f.name], "check_options"):  # e.g. options of an adapter kind not chosen
                changes[f.name].check_options(values)
            continue
        if (value := field_value(f, values)) is not None:
            changes[f.name] = check_type(option_name(f), value, hints[f.name])
    for f in fields(config):
        if (cleared := f.metadata.get("clears")) and f.name in changes and cleared not in changes:
            changes[cleared] = None
    return replace(config, **changes)


@functools.cache
def required_options(cls) -> tuple[str, ...]:
    """The options of `cls` that must be given (its nested configs' included), worked out once per class."""
    return tuple(name for name, spec in options_of(defaults(cls)).items() if spec.required)


def defaults(cls):
    """An instance holding every default; options without one (`lang`, `train`, ...) are None."""
    return cls(**{f.name: None for f in fields(cls) if is_required(f)})


def is_required(f: Field) -> bool:
    """A field without a default: an option that must be given, a key a record must have."""
    return f.default is MISSING and f.default_factory is MISSING


def build(cls, values: Mapping):
    """A `cls` from option values, its defaults for the rest; a missing required option is an error."""
    required = [f for f in fields(cls) if is_required(f)]
    missing = [name for name in required_options(cls) if values.get(name) is None]
    if missing:
        raise XlingError(f"missing option(s): {', '.join('--' + m.replace('_', '-') for m in missing)}")
    hints = type_hints(cls)
    given = {f.name: check_type(option_name(f), field_value(f, values), hints[f.name]) for f in required}
    return with_options(cls(**given), values)


def matches(value, hint) -> bool:
    """Whether `value` has type `hint` (str, int, float, bool, None, list[X], dict[K, V] and unions of them)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return any(matches(value, arg) for arg in args)
    if hint is type(None):
        return value is None
    if hint is float:  # a whole number is a float too, a truth value is neither
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if origin is list:
        return isinstance(value, list) and all(matches(item, args[0]) for item in value)
    if origin is dict:
        return isinstance(value, dict) and all(matches(k, args[0]) and matches(v, args[1]) for k, v in value.items())
    return isinstance(value, hint)


def _type_name(hint) -> str:
    names = {str: "text", int: "a whole number", float: "a number", bool: "true or false", type(None): "unset"}
    names |= {list: "a list", DatasetLike: "a datasets.Dataset"}  # `xling.given_data`: data in memory
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return " or ".join(_type_name(arg) for arg in typing.get_args(hint) if arg is not type(None))
    if typing.get_origin(hint) is list:
        return f"a list of {_type_name(typing.get_args(hint)[0]).removeprefix('a ')}s"
    if typing.get_origin(hint) is dict:
        return "a table"
    return names.get(hint, getattr(hint, "__name__", str(hint)))


def check_type(name: str, value, hint):
    """`value` if it has the type that option `name` declares (`hint`), else an error in one line."""
    if value is None or matches(value, hint):
        if hint is float and isinstance(value, int):
            if abs(value) > 2**53:  # beyond what a float holds exactly (and far beyond any sensible setting)
                raise XlingError(f"option {name!r} is out of range: {shown(value)}")
            return float(value)
        return value
    raise XlingError(f"option {name!r} takes {_type_name(hint)}, not {shown(value)}")


def shown(value, limit: int = 80) -> str:
    """`repr(value)` cut to `limit` characters: a message stays one short line whatever a file holds."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 3]}..."


def printable(text: str, limit: int = 200) -> str:
    """`text` as it is if it is short and printable, else `shown` (quoted, escaped, cut)."""
    return text if text.isprintable() and len(text) <= limit else shown(text, limit)


def at_least(name: str, value, low) -> None:
    """Option `name` is unset, or a finite number of at least `low`."""
    if value is not None and not (math.isfinite(value) and value >= low):
        raise XlingError(f"{name.replace('_', '-')} must be at least {low}, not {value}")


MAX_BATCH = 65_536  # sentences or examples in one model batch: past what any accelerator's memory holds
MAX_STEPS = 10**9  # optimiser steps: years of training on any machine
MAX_WINDOW = 8_192  # sub-tokens in one window: beyond every encoder xling loads (512 positions for most)
MAX_SEED = 2**32 - 1  # what numpy's and torch's generators take alike
MAX_SAMPLES = 100_000  # bootstrap resamplings: far past what a 95% interval's third digit needs


def at_most(name: str, value, high) -> None:
    """Option `name` is unset, or at most `high` (work and memory stay bounded; a seed fits its generator)."""
    if value is not None and value > high:
        raise XlingError(f"{name.replace('_', '-')} must be at most {high:,}, not {shown(value)}")


def positive(name: str, value) -> None:
    """Option `name` is unset, or a finite number above zero."""
    if value is not None and not (math.isfinite(value) and value > 0):
        raise XlingError(f"{name.replace('_', '-')} must be a finite number above 0, not {value}")


def comma_list(text: str) -> list[str]:
    """`MISC, DATE` -> ["MISC", "DATE"]."""
    return [part.strip() for part in text.split(",") if part.strip()]


def comma_ints(text: str) -> list[int]:
    """`10,11` -> [10, 11]."""
    try:
        return [int(part) for part in comma_list(text)]
    except ValueError:
        raise XlingError(f"expected comma-separated whole numbers, not {text!r}") from None
