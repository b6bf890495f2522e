"""What an adapter kind is: its name, config dataclass and module, and what the model may ask of the module.

Each kind lives in its own folder (`bottleneck/`, `lora/`: config, layer, AdapterHub conversion) and is
registered once in `registry.py`; `AdaptedModel`, saving, the options and the command line consult the
registry, never a kind by name.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field

from xling.errors import XlingError
from xling.options import shown

MAX_LAYERS = 1000  # layer indices a config may name; any model xling loads has far fewer


def layer_indices(indices: list[int]) -> list[int]:
    """A config's layer indices (`leave_out`), sorted, each once, from 0 and below MAX_LAYERS."""
    if outside := [i for i in indices if not 0 <= i < MAX_LAYERS]:
        raise XlingError(f"leave-out takes layer indices from 0 to {MAX_LAYERS - 1}, not {outside[0]}")
    return sorted(set(indices))


def check_layers(indices: list[int], layers: int) -> None:
    """Layer indices a config names all lie within the model's `layers`."""
    if outside := [i for i in indices if i >= layers]:
        raise XlingError(f"leave-out names layers {shown(outside)}, but the model has layers 0-{layers - 1}")


@dataclass(frozen=True)
class AdapterKind:
    name: str  # `kind` in xling_adapter.json and the `adapter_kind` option's value (an identifier: a field name)
    title: str  # what it is, for people (model cards)
    config: type  # its config dataclass: to_dict, from_dict(data, where), preset(name, **changes),
    # check_fits(hidden_size, layers): sizes bounded by the model, checked before any weight is allocated
    module: str  # "package.module:Class", built as Class(config, model); imported on first use (no torch for --help)
    adapterhub: str  # the module converting it to and from the `adapters` library (see adapters/adapterhub.py)
    presets: dict = field(default_factory=dict)  # named configs, for the `preset` option
    fusable: bool = False  # AdapterFusion can mix its outputs (adapters that add at the LayerNorm sites)

    def build(self, config, model):
        module, _, cls = self.module.partition(":")
        return getattr(importlib.import_module(module), cls)(config, model)

    def conversion(self):
        return importlib.import_module(self.adapterhub)


class AdapterModule:
    """What `AdaptedModel` asks of every adapter module; a kind answers the parts it has, None elsewhere.

    block(layer, site): a module that reads a sublayer's output and whose output is added before its LayerNorm
      (bottleneck adapters). A kind with blocks also says how they are placed: `reads_normalised` (they read the
      normalised sum, else the sublayer's output), `block_sites()` (the sites they are at) and `fused_placement()`
      (what adapters fused together must share).
    layer_norm(layer, site): the adapter's own copy of that LayerNorm, if it trains one.
    projection(layer, target): a module added in parallel to one of the attention's projections (`query`, `key`,
      `value`): the Linear's output gains module(Linear's input) (LoRA).
    invertible: a module on the embedding output, undone before a masked-LM output layer (an attribute, absent
      or None where the kind has none).
    """

    reads_normalised: bool = False

    def block(self, layer: int, site: str):
        return None

    def block_sites(self) -> tuple[str, ...]:
        return ()

    def fused_placement(self) -> tuple:
        return ()

    def layer_norm(self, layer: int, site: str):
        return None

    def projection(self, layer: int, target: str):
        return None
