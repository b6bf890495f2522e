"""The model card of a LoRA task adapter exported to PEFT's format."""

from __future__ import annotations

from huggingface_hub import ModelCard, ModelCardData

from xling.train.cards.common import (
    is_embedded,
    licences,
)
from xling.train.report import RunReport


def snippet(base: str, labels: list[str], repo_id: str | None) -> str:
    """How PEFT and Transformers' `pipeline()` load the folder `DIR` (or repository `repo_id`). Both build the base
    model from the Hub id the adapter's config names, with the default two labels unless told: the labels go in as
    `id2label`. A local base has no id to name: it is loaded first, then the adapter over it."""
    where = f'"{repo_id}"' if repo_id else '"DIR"'
    id2label = "id2label = {" + ", ".join(f'{i}: "{label}"' for i, label in enumerate(labels)) + "}"
    if base == "BASE_MODEL":
        return f"""from peft import PeftModel
from transformers import AutoModelForTokenClassification

{id2label}
base = AutoModelForTokenClassification.from_pretrained("BASE_MODEL", id2label=id2label)
model = PeftModel.from_pretrained(base, {where})"""
    return f"""from peft import AutoPeftModelForTokenClassification
from transformers import pipeline

{id2label}
model = AutoPeftModelForTokenClassification.from_pretrained({where}, id2label=id2label)
# or a pipeline (first: each word's tag is its first sub-token's, as in xling)
ner = pipeline("token-classification", model={where}, model_kwargs={{"id2label": id2label}}, aggregation_strategy="first")"""


def peft_card(report: RunReport, repo_id: str | None = None) -> str:
    """A `README.md` for a LoRA task adapter exported to PEFT's format: Hub metadata and how PEFT loads it."""
    base = report.base.hub_id or "BASE_MODEL"
    labels = report.labels or []
    data = ModelCardData(
        language=[report.lang] if report.lang else None,
        library_name="peft",
        base_model=None if base == "BASE_MODEL" else base,
        tags=["xling", "lora", "named-entity-recognition"],
        pipeline_tag="token-classification",
        license="apache-2.0",
    )
    note = (
        f" It was trained on xling's embedded encoder, a 4-bit conversion of {base}: on the full-precision model its "
        "scores may differ slightly."
        if is_embedded(report.base)
        else ""
    )
    body = f"""# {report.name}

A LoRA task adapter trained with xling, in PEFT's format (`adapter_config.json`, `adapter_model.safetensors`; the
labels, which PEFT leaves to the base model's config, below and in xling's `head_config.json`).{note}

```python
{snippet(base, labels, repo_id)}
```

In xling: `xling tag --lang {report.lang or "LANG"} -t {f"hf:{repo_id}" if repo_id else "DIR"} FILE`.

## Licences

{licences(report)}
"""
    return str(ModelCard(f"---\n{data.to_yaml()}\n---\n\n{body}"))
