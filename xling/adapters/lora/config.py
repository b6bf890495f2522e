"""Configuration of LoRA adapters (Hu et al. 2021): low-rank updates of the attention's projections."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from xling.adapters.kind import AdapterKind, check_layers, layer_indices
from xling.errors import XlingError
from xling.options import at_least, comma_ints, comma_list, opt, positive
from xling.records import from_record

TARGETS = ("query", "key", "value")


@dataclass
class LoraConfig:
    """A projection W of the attention gains (alpha / rank) * B A, as a path beside W (never merged into it):
    A (rank x in) starts Kaiming-uniform, B (out x rank) at zero, so training starts from the frozen model.

    targets: which of the attention's projections are adapted (query and value, as in the paper).
    leave_out: layer indices without LoRA.
    """

    rank: int = opt(8, "LoRA: rank of the update.", name="lora_rank")
    alpha: float = opt(8, "LoRA: the update is scaled by alpha / rank.", name="lora_alpha")
    dropout: float = opt(0.0, "LoRA: dropout on the update's input while training.", name="lora_dropout")
    targets: list[str] = opt(
        factory=lambda: ["query", "value"],
        help=f"LoRA: comma-separated projections to adapt: {', '.join(TARGETS)}.",
        name="lora_targets",
        parse=comma_list,
    )
    leave_out: list[int] = opt(factory=list, hidden=True, parse=comma_ints)

    def __post_init__(self):
        at_least("lora_rank", self.rank, 1)
        positive("lora_alpha", self.alpha)
        if not 0 <= self.dropout < 1:
            raise XlingError(f"lora-dropout must be between 0 and 1, not {self.dropout}")
        if not self.targets or any(t not in TARGETS for t in self.targets):
            raise XlingError(f"lora-targets takes some of {', '.join(TARGETS)}, not {','.join(self.targets)!r}")
        self.targets = [t for t in TARGETS if t in self.targets]
        self.leave_out = layer_indices(self.leave_out)

    def check_fits(self, hidden_size: int, layers: int) -> None:
        """Refused before anything is allocated: a rank above the hidden size, more layers than the model has."""
        if self.rank > hidden_size:
            raise XlingError(f"lora-rank {self.rank} is above the model's hidden size {hidden_size}")
        check_layers(self.leave_out, layers)

    @property
    def scaling(self) -> float:
        return self.alpha / self.rank

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict, where: str = "LoRA config") -> LoraConfig:
        return from_record(cls, data, where)


KIND = AdapterKind(
    name="lora",
    title="LoRA (low-rank updates of the attention's projections)",
    config=LoraConfig,
    module="xling.adapters.lora.layer:LoraAdapter",
    adapterhub="xling.adapters.lora.adapterhub",
)
