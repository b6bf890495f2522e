"""Configuration of AdapterFusion (Pfeiffer et al. 2021)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from xling.errors import XlingError
from xling.options import opt


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
        if self.temperature <= 0:
            raise XlingError("fusion temperature must be positive")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> FusionConfig:
        unknown = set(data) - {f.name for f in fields(cls)}
        if unknown:
            raise XlingError(f"unknown fusion options: {', '.join(sorted(unknown))}")
        return cls(**data)
