"""A fast start for tagging with the embedded model: its BERT encoder in plain torch (`encoder`) and its tokenizer
from `tokenizer.json` (`tokenizer`, without torch). Names load from their module on first use."""

from xling.lazy import lazy_exports

__getattr__ = lazy_exports(
    {
        "LightBert": "xling.models.light.encoder",
        "LightConfig": "xling.models.light.encoder",
        "load_light_encoder": "xling.models.light.encoder",
        "mapped_safetensors": "xling.models.light.encoder",
        "Encoded": "xling.models.light.tokenizer",
        "LightTokenizer": "xling.models.light.tokenizer",
        "PieceVocabulary": "xling.models.light.tokenizer",
    }
)
