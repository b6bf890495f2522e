from xling.adapters.fusion.config import FusionConfig
from xling.adapters.fusion.layer import AdapterFusion, FusionLayer

__all__ = ["FusionConfig", "AdapterFusion", "FusionLayer"]
