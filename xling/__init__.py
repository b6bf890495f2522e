"""xling: named-entity recognition for low-resource languages with MAD-X adapters."""

__version__ = "0.1.0"

from xling.lazy import lazy_exports

# `from xling import Tagger` without importing torch for `xling --version`; `OnnxTagger` imports no torch at all.
__getattr__ = lazy_exports({"Tagger": "xling.tagging.tagger", "OnnxTagger": "xling.tagging.onnx_tagger"})
