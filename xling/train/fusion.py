"""`xling train-fusion`: AdapterFusion over frozen task adapters, with a language adapter below.

The fusion layer (and the head) train; the fused task adapters and the language adapter
stay frozen: `Stack(<lang>, Fuse(<adapters>))`. If all fused adapters and the data share
one label set, the head starts from the first adapter's head; otherwise it is new.
"""

from __future__ import annotations

import copy
from dataclasses import replace

import torch
from rich.console import Console

from xling.adapters import AdaptedModel, Fuse, Stack
from xling.adapters.composition import lang_adapter_name
from xling.adapters.heads import tagging_head
from xling.adapters.record import AdapterMetadata
from xling.adapters.saving import load, save
from xling.data.labels import label_list, relabel
from xling.data.sources import load_ner, load_scored
from xling.errors import XlingError
from xling.methods import METHODS
from xling.models import load_model
from xling.roles import FUSION, LANG, TASK
from xling.train.config import FusionOptions
from xling.train.progress import TrainingProgress
from xling.train.report import Resolved, RunReport
from xling.train.run import start
from xling.train.token_classification import TaggingObjective
from xling.trained_tasks import TaskRecord


def train_fusion(
    options: FusionOptions, console: Console | None = None, progress: TrainingProgress | None = None
) -> RunReport:
    if len(options.adapters) < 2:
        raise XlingError("fusion needs at least two task adapters (--adapters ner-en,ner-es)")
    console, lang, workspace, run = start(options, FUSION, console)
    name = run.target.name
    records = [TaskRecord.read(workspace.task(a)) for a in options.adapters]
    not_adapters = [r.name for r in records if not METHODS[r.method].adapters]
    if not_adapters:
        raise XlingError(
            f"only task adapters can be fused; {', '.join(not_adapters)} are {records[0].method} baselines"
        )
    train_data = relabel(
        load_ner(options.train, "train", scheme=options.scheme), options.drop_labels, options.label_map
    )
    dev_data = load_scored(options.dev, None, options.drop_labels, options.label_map, options.scheme)
    lang_dir = workspace.lang_adapter(lang) if options.use_lang_adapter else None

    encoder, tokenizer = load_model(options.model)
    model = AdaptedModel(encoder)
    for adapter in options.adapters:
        load(model, workspace.task(adapter), name=adapter, role=TASK)
    torch.manual_seed(options.training.seed)
    fuse = Fuse(*options.adapters)
    model.add_fusion(options.adapters, options.fusion)
    labels = label_list(train_data)
    first_head = model.heads[options.adapters[0]]
    if all(model.heads[a].labels == first_head.labels for a in options.adapters) and set(labels) <= set(
        first_head.labels
    ):
        head = copy.deepcopy(first_head)
    else:
        head = tagging_head(model, labels)
    model.add_head(fuse.name, head)
    setup = (
        Stack(load(model, lang_dir, name=lang_adapter_name(lang), head=False, role=LANG), fuse) if lang_dir else fuse
    )
    counts = model.train_adapter(setup, train=[fuse.name])
    objective = TaggingObjective.from_options(fuse.name, train_data, dev_data, tokenizer, model, options)
    console.print(f"training fusion [bold]{name}[/]: {setup!r}, labels {', '.join(head.labels)}; {counts}")
    recorded = replace(options, name=name, lang=lang)
    resolved = Resolved(labels=head.labels, lang_adapter=str(lang_dir) if lang_dir else None)
    run.train(model, objective, recorded, counts, f"train-fusion {name}", progress, resolved)
    report = run.report(name=name, task=options.task, lang=lang, adapters=options.adapters, model=options.model)
    return run.save(
        report,
        lambda target, extra: save(
            model,
            fuse.name,
            target,
            options.overwrite,
            metadata=AdapterMetadata(task=options.task, lang=lang, name=name, over_lang_adapter=lang_dir is not None),
            extra_files=extra,
        ),
    )
