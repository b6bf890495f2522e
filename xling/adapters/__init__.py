"""Adapters: the adapter kinds (bottleneck with the invertible adapter, LoRA), AdapterFusion, composition, save
and load."""

from xling.lazy import lazy_exports

_EXPORTS = {
    "AdaptedModel": "xling.adapters.model",
    "ParameterCount": "xling.adapters.model",
    "BottleneckConfig": "xling.adapters.bottleneck.config",
    "FusionConfig": "xling.adapters.fusion.config",
    "LoraConfig": "xling.adapters.lora.config",
    "Fuse": "xling.adapters.composition",
    "Stack": "xling.adapters.composition",
    "TaggingHead": "xling.adapters.heads",
    "TaggingHeadConfig": "xling.adapters.heads",
}
__getattr__ = lazy_exports(_EXPORTS)
__all__ = list(_EXPORTS)
