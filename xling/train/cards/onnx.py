"""The model card of a whole tagger exported as ONNX graphs (`xling export --format onnx`) and pushed to the Hub."""

from __future__ import annotations

from huggingface_hub import ModelCard, ModelCardData

from xling.models.loading import hub_id
from xling.tagging.onnx_tagger import GRAPH_FILES, OnnxConfig


def onnx_card(config: OnnxConfig, repo_id: str) -> str:
    """A `README.md` for an ONNX folder in repository `repo_id`: Hub metadata, what the graphs compute, how xling
    and ONNX Runtime tag with it, and its checks."""
    base, lang = hub_id(config.source.model or ""), config.source.lang
    data = ModelCardData(
        language=[lang] if lang else None,
        library_name="onnx",
        base_model=base,
        tags=["xling", "onnx", "named-entity-recognition"],
        pipeline_tag="token-classification",
        license="apache-2.0",
    )
    graphs = ", ".join(f"`{GRAPH_FILES[p]}` ({p})" for p in config.precisions)
    checks = config.checks
    checked = (
        f" On export its fp32 logits agreed with xling's PyTorch tagger within "
        f"{checks.fp32_max_logit_difference:.1g} on {checks.sentences} check sentences."
        if checks.fp32_max_logit_difference is not None
        else ""
    )
    body = f"""# {repo_id.split("/")[-1]}

An xling tagger, `{config.setup}` on {base or "its base model"}, exported whole as ONNX graphs: {graphs}, from
sub-word ids and attention mask to the logits of the tags {", ".join(config.labels)}; the tokenizer's files,
`config.json` (`id2label`) and `xling_onnx.json` (labels, decoder `{config.decoder}`, the longest window of
{config.max_window} sub-tokens).{checked}

```bash
xling tag --runtime onnx --task-adapter hf:{repo_id} --lang {lang or "LANG"} FILE    # --precision int8: the int8 graph
```

```python
from xling import OnnxTagger
from huggingface_hub import snapshot_download

tagger = OnnxTagger(snapshot_download("{repo_id}"))
print(tagger("Qusqu llaqtaqa Perú suyupi kachkan."))
```

Neither needs torch or Transformers: ONNX Runtime runs the graphs.

## Licences

- xling's code: Apache-2.0
- base model: see the base model's card
"""
    return str(ModelCard(f"---\n{data.to_yaml()}\n---\n\n{body}"))
