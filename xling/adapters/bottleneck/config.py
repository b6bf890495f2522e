"""Configuration of bottleneck adapters (Houlsby et al. 2019; Pfeiffer et al. 2020)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from xling.adapters.kind import AdapterKind, check_layers, layer_indices
from xling.errors import XlingError
from xling.options import at_least, comma_ints, opt
from xling.records import from_record

PLACEMENTS = ("pfeiffer", "houlsby")
ACTIVATIONS = ("relu", "gelu", "swish", "silu", "tanh")


def activation(name: str):
    """A new module for non-linearity `name` (torch is imported here, not with the config)."""
    from torch import nn

    return {"relu": nn.ReLU, "gelu": nn.GELU, "swish": nn.SiLU, "silu": nn.SiLU, "tanh": nn.Tanh}[name]()


@dataclass
class BottleneckConfig:
    """One config dataclass; `houlsby` and `pfeiffer` are presets of it.

    placement: `pfeiffer` puts one adapter after the feed-forward block, reading the
      block's layer-normalised output; `houlsby` puts two per layer, after the attention
      output projection and after the feed-forward output, before the residual add.
    reduction_factor: bottleneck size is hidden_size // reduction_factor.
    init_std: weights start from a zero-mean normal truncated at two std, so the
      adapted model starts out (almost) identical to the frozen one.
    train_layer_norms: give the adapter its own copies of the LayerNorms it feeds.
    leave_out: layer indices without adapters.
    share_every: one set of adapter weights serves this many consecutive layers.
    invertible: add the MAD-X invertible adapter on the embedding output.
    """

    placement: str = opt("pfeiffer", hidden=True)
    reduction_factor: float = opt(16, "Bottleneck size is the hidden size divided by this.")
    non_linearity: str = opt("relu", f"Non-linearity in the bottleneck: {', '.join(ACTIVATIONS)}.")
    init_std: float = opt(1e-2, hidden=True)
    train_layer_norms: bool = opt(False, hidden=True)
    leave_out: list[int] = opt(factory=list, help="Comma-separated layer indices without adapters.", parse=comma_ints)
    share_every: int = opt(1, "Share one adapter across this many consecutive layers.")
    invertible: bool = opt(False, hidden=True)
    invertible_reduction_factor: float = opt(2, hidden=True)
    invertible_non_linearity: str = opt("relu", hidden=True)

    def __post_init__(self):
        if self.placement not in PLACEMENTS:
            raise XlingError(f"unknown adapter placement {self.placement!r}; choose one of {', '.join(PLACEMENTS)}")
        for name in (self.non_linearity, self.invertible_non_linearity):
            if name not in ACTIVATIONS:
                raise XlingError(f"unknown non-linearity {name!r}; choose one of {', '.join(ACTIVATIONS)}")
        # below 1 the bottleneck would be wider than the hidden size it reduces
        at_least("reduction_factor", self.reduction_factor, 1)
        at_least("invertible_reduction_factor", self.invertible_reduction_factor, 1)
        at_least("init_std", self.init_std, 0)
        at_least("share_every", self.share_every, 1)
        self.leave_out = layer_indices(self.leave_out)

    def check_fits(self, hidden_size: int, layers: int) -> None:
        """Refused before anything is allocated: a bottleneck of no width, or more layers than the model has."""
        for name in ("reduction_factor", "invertible_reduction_factor"):
            if getattr(self, name) > hidden_size:
                raise XlingError(f"{name} {getattr(self, name)} leaves no bottleneck of the hidden size {hidden_size}")
        check_layers(self.leave_out, layers)
        if self.share_every > layers:
            raise XlingError(f"share-every {self.share_every} is more than the model's {layers} layers")

    @property
    def sites(self) -> tuple[str, ...]:
        """Where in each layer adapters sit: after attention, after the feed-forward block."""
        return ("attn", "ffn") if self.placement == "houlsby" else ("ffn",)

    @property
    def reads_normalised(self) -> bool:
        """Pfeiffer adapters read the sublayer's layer-normalised sum; Houlsby ones the raw projection."""
        return self.placement == "pfeiffer"

    @classmethod
    def preset(cls, name: str, **overrides) -> BottleneckConfig:
        """A preset with some options changed; options given as None keep the preset's value."""
        if name not in PRESETS:
            raise XlingError(f"unknown adapter preset {name!r}; choose one of {', '.join(PRESETS)}")
        return replace(PRESETS[name], **{k: v for k, v in overrides.items() if v is not None})

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict, where: str = "bottleneck adapter config") -> BottleneckConfig:
        return from_record(cls, data, where)


PRESETS = {
    "pfeiffer": BottleneckConfig(placement="pfeiffer", reduction_factor=16, non_linearity="relu"),
    "houlsby": BottleneckConfig(placement="houlsby", reduction_factor=16, non_linearity="swish"),
    # MAD-X language adapter: Pfeiffer placement, reduction 2, plus the invertible adapter.
    "madx-lang": BottleneckConfig(placement="pfeiffer", reduction_factor=2, non_linearity="relu", invertible=True),
    # xling's task adapter: Pfeiffer placement, reduction 8 (above 16 in English and zero-shot F1, 3 seeds).
    "madx-task": BottleneckConfig(placement="pfeiffer", reduction_factor=8, non_linearity="relu"),
    # The "3-shared" variant: one adapter per three consecutive layers.
    "pfeiffer-shared3": BottleneckConfig(
        placement="pfeiffer", reduction_factor=16, non_linearity="relu", share_every=3
    ),
}

KIND = AdapterKind(
    name="bottleneck",
    title="MAD-X bottleneck adapters",
    config=BottleneckConfig,
    module="xling.adapters.bottleneck.layer:BottleneckAdapter",
    adapterhub="xling.adapters.bottleneck.adapterhub",
    presets=PRESETS,
    fusable=True,
)
