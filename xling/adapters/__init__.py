"""Adapters: bottleneck and invertible adapters, AdapterFusion, composition, save and load."""

from xling.adapters.bottleneck import BottleneckConfig
from xling.adapters.composition import Fuse, Stack
from xling.adapters.fusion import FusionConfig
from xling.adapters.heads import TaggingHead, TaggingHeadConfig
from xling.adapters.model import AdaptedModel, ParameterCount

__all__ = [
    "AdaptedModel",
    "BottleneckConfig",
    "FusionConfig",
    "Fuse",
    "Stack",
    "TaggingHead",
    "TaggingHeadConfig",
    "ParameterCount",
]
