from xling.lazy import lazy_exports

_EXPORTS = {
    "BottleneckConfig": "xling.adapters.bottleneck.config",
    "PRESETS": "xling.adapters.bottleneck.config",
    "BottleneckAdapter": "xling.adapters.bottleneck.layer",
    "Bottleneck": "xling.adapters.bottleneck.layer",
}
__getattr__ = lazy_exports(_EXPORTS)
__all__ = list(_EXPORTS)
