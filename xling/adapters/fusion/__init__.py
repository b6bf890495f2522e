from xling.lazy import lazy_exports

_EXPORTS = {
    "FusionConfig": "xling.adapters.fusion.config",
    "AdapterFusion": "xling.adapters.fusion.layer",
    "FusionLayer": "xling.adapters.fusion.layer",
}
__getattr__ = lazy_exports(_EXPORTS)
__all__ = list(_EXPORTS)
