"""LoRA adapters (Hu et al. 2021): config, modules and their AdapterHub layout."""

from xling.lazy import lazy_exports

_EXPORTS = {
    "LoraConfig": "xling.adapters.lora.config",
    "LoraAdapter": "xling.adapters.lora.layer",
}
__getattr__ = lazy_exports(_EXPORTS)
__all__ = list(_EXPORTS)
