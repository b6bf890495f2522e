"""The adapter kinds xling knows, each registered here once; a new kind is a folder (config, layer, AdapterHub
layout) and one line in `KINDS`."""

from __future__ import annotations

from dataclasses import make_dataclass

from xling.adapters.bottleneck.config import KIND as BOTTLENECK
from xling.adapters.kind import AdapterKind
from xling.adapters.lora.config import KIND as LORA
from xling.errors import XlingError
from xling.options import opt, options_of, shown

KINDS: dict[str, AdapterKind] = {kind.name: kind for kind in (BOTTLENECK, LORA)}


def adapter_kind(name: str, where: str = "") -> AdapterKind:
    if not isinstance(name, str) or name not in KINDS:
        raise XlingError(
            f"{where + ': ' if where else ''}unknown adapter kind {shown(name)}; xling has {', '.join(KINDS)}"
        )
    return KINDS[name]


def kind_of(config) -> AdapterKind:
    """The kind whose config `config` is."""
    for kind in KINDS.values():
        if isinstance(config, kind.config):
            return kind
    raise XlingError(
        f"not an adapter config: {config!r} (xling has {', '.join(k.config.__name__ for k in KINDS.values())})"
    )


def describe(config) -> dict:
    """A config as run records keep it: its kind and settings."""
    return {"kind": kind_of(config).name, **config.to_dict()}


def described(record, where: str):
    """The adapter choice a run record keeps as `describe` wrote it, its kind and settings checked."""
    if not isinstance(record, dict):
        raise XlingError(f"{where}: expected a JSON object of an adapter's kind and settings, not {shown(record)}")
    settings = dict(record)
    kind = adapter_kind(settings.pop("kind", None), where)
    return AdapterChoice.of(kind.config.from_dict(settings, where))


class _Choice:
    """Which kind of adapter a command trains (the `adapter_kind` option) and each kind's settings, of which only
    the chosen kind's are used; `preset` starts from a named config of any kind (and chooses that kind)."""

    def __post_init__(self):
        adapter_kind(self.kind)

    @property
    def config(self):
        """The chosen kind's config."""
        return getattr(self, self.kind)

    def check_options(self, values) -> None:
        """Refuse options (command-line values, recipe keys) of a kind other than the chosen one: they would
        change nothing."""
        preset = values.get("preset")
        if preset and preset not in KINDS[self.kind].presets:
            raise XlingError(f"preset {preset!r} is not a {self.kind} adapter's (--adapter-kind {self.kind})")
        for kind in KINDS.values():
            given = [name for name in options_of(getattr(self, kind.name)) if values.get(name) is not None]
            if kind.name != self.kind and given:
                flags = ", ".join("--" + name.replace("_", "-") for name in given)
                raise XlingError(f"{flags}: options of {kind.name} adapters, but the adapter is {self.kind}")

    @classmethod
    def of(cls, config):
        """The choice of `config`'s kind, with `config` for it (the Python API may pass a kind's config)."""
        if isinstance(config, cls):
            return config
        name = kind_of(config).name
        return cls(kind=name, **{name: config})

    @classmethod
    def preset(cls, name: str):
        for kind in KINDS.values():
            if name in kind.presets:
                return cls(kind=kind.name, **{kind.name: kind.presets[name]})
        raise XlingError(f"unknown adapter preset {name!r}; choose one of {', '.join(PRESET_NAMES)}")


PRESET_NAMES = [name for kind in KINDS.values() for name in kind.presets]
AdapterChoice = make_dataclass(
    "AdapterChoice",
    [
        (
            "kind",
            str,
            opt("bottleneck", f"Kind of adapter: {' or '.join(KINDS)}.", name="adapter_kind", choices=lambda: KINDS),
        )
    ]
    + [(kind.name, kind.config, opt(factory=kind.config)) for kind in KINDS.values()],
    bases=(_Choice,),
    namespace={"__module__": __name__},
)
PRESET_HELP = f"Adapter preset: {', '.join(PRESET_NAMES)}; the options below change single values of it."


def adapter_option(preset: str):
    """An options dataclass's `adapter` field: the adapter `preset` unless `--preset` or `--adapter-kind` choose
    another, changed by the adapter's own options."""
    return opt(factory=lambda: AdapterChoice.preset(preset), help=PRESET_HELP, preset=preset)
