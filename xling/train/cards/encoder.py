"""The model card of an encoder `xling train-encoder` adapted."""

from __future__ import annotations

from huggingface_hub import ModelCard, ModelCardData

from xling.train.cards.common import (
    base_model_text,
    data_sources,
    dataset_ids,
    licences,
    public_name,
)
from xling.train.report import RunReport


def encoder_card(report: RunReport) -> str:
    """A `README.md` for an encoder `xling train-encoder` adapted: Hub metadata, its mix, perplexities, use."""
    base, mixed = report.base.hub_id, report.mix or []
    mix = "\n".join(
        f"| {m.name}{' (translation pairs)' if m.translation_pairs else ''} | "
        f"{', '.join(dict.fromkeys(public_name(s) for s in m.data))} | {m.train:,} | {100 * m.share:.1f}% |"
        for m in mixed
    )
    perplexity = "\n".join(
        f"| {lang} | {p['before']:,.1f} | {p['after']:,.1f} |" for lang, p in (report.held_out_perplexity or {}).items()
    )
    languages = sorted({part for m in mixed for part in m.name.split("-")})
    data = ModelCardData(
        language=languages,
        library_name="transformers",
        base_model=base,
        datasets=dataset_ids(data_sources(report)) or None,
        tags=["xling", "masked-lm", "continued-pretraining"],
        pipeline_tag="fill-mask",
        license="apache-2.0",
    )
    name, lang = report.name, report.lang
    body = f"""# {name}

{base_model_text(report.base)}, adapted to {lang} by continued masked-LM training with xling
({report.method}: {report.steps} steps, seed {report.options.training.seed}, computed in
{report.computed_in}, mix temperature {report.temperature}; xling {report.xling_version}, commit
{report.commit or "unknown"}).

| source | data | training lines or pairs | share of the rows |
|---|---|---|---|
{mix}

| held-out perplexity | before | after |
|---|---|---|
{perplexity}

## Use it

As the base model of every xling command (`-m`), with language adapters trained under its own masked-LM head:

```bash
xling train-lang {lang} CORPUS -m {name} --mlm-head pretrained
xling train-task ner --lang en --train corpus:wikiann-en/train --dev corpus:wikiann-en/dev -m {name}
xling tag --lang {lang} -m {name} text.txt
```

(`{name}` the folder's path.) In Transformers it is a masked LM: `pipeline("fill-mask", model="{name}")`.

## Licences

{licences(report)}
"""
    return str(ModelCard(f"---\n{data.to_yaml()}\n---\n\n{body}"))
