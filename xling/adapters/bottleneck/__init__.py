from xling.adapters.bottleneck.config import PRESETS, BottleneckConfig
from xling.adapters.bottleneck.layer import Bottleneck, BottleneckAdapter

__all__ = ["BottleneckConfig", "BottleneckAdapter", "Bottleneck", "PRESETS"]
