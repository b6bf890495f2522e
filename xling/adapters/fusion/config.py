"""Configuration of AdapterFusion (Pfeiffer et al. 2021)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from xling.options import at_least, opt, positive
from xling.records import from_record


@dataclass
class FusionConfig:
    """temperature: softmax temperature over the fused adapters (1 = plain softmax).
    value_penalty: weight of the L2 penalty that pulls each value matrix towards identity;
      the training loop adds it to the loss.
    init_std: std of the random query and key matrices.
    value_noise: std of the noise added to the identity value matrices at initialisation.
    """

    temperature: float = opt(1.0, "Softmax temperature over the fused adapters.")
    value_penalty: float = opt(0.01, "Weight of the L2 pull of the value matrices towards identity.")
    init_std: float = opt(0.02, hidden=True)
    value_noise: float = opt(1e-6, hidden=True)

    def __post_init__(self):
        positive("temperature", self.temperature)
        for name in ("value_penalty", "init_std", "value_noise"):
            at_least(name, getattr(self, name), 0)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict, where: str = "fusion config") -> FusionConfig:
        return from_record(cls, data, where)
