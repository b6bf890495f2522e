"""The generated parts of the docs: the command-line reference (typer's own generator over the `xling` app),
the results page and the README's "what to expect" table (both from the result files under `results/`).

    python -m docs.generate          # write them
    python -m docs.generate --check  # exit 1, naming each, where a checked-in page differs (CI runs this)
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from collections import Counter
from pathlib import Path

from xling.adapters.composition import setup_text
from xling.scoring.cells import difference_cell, interval_cell, sentences_cell

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results"
# the active-learning simulation's files, one per setting, for each pool that answers (bench/active_learning.py)
ACTIVE = {"active-qu/": "WikiANN-qu `silver-pool`", "active-qubert-qu/": "`qubert-qu/train`"}
SPEED = "runtimes/speed.json"  # `bench/runtimes.py`'s timings: a table of their own on the speed page
QUALITY = "runtimes/quality-qu.json"  # its F1 per runtime (also on the results page)
COLD_START = "cold-start/"  # `bench/cold_start.py`'s files, one per machine: their own table on the speed page
SERVE = "serve/"  # `bench/serve_load.py`'s, the same
CORPUS_MAP = "corpus-map/"  # `bench/corpus_map.py`'s: lines/s of the corpus recipes, read as they are
ERRORS = "errors-qu/"  # `xling analyze errors` on each seed's zero-shot stack (recipes/lang-contribution-qu.toml)
PROBES = "probes/probes.json"  # `bench/probes.py`: a table of its own on the results page
ADAPTED = "adapted-encoder-qu/"  # `bench/encoder_curve.py`: adapting the encoder, per budget
ANCHOR = "anchor/"  # `bench/anchor_workload.py` and the library's side of the same workload: docs/speed.md
DEPLOY = "deploy/"  # `bench/deploy_size.py`: the torch-free deploy install against the full one (docs/sharing.md)
MLM_HEAD = "mlm-head/"  # the head's training (`python -m xling.shipping.head`), curves under it (bench/mlm_head_curves)
# The README's table: (what, results file or files, row label). At most six rows. An active-learning row's label
# is "<setting>, <answers> answers", scored on the file's first evaluation set.
EXPECT = [
    (
        "English NER (WikiANN-en dev), `Stack(en, ner-en)`",
        "quality-qu/fp32-cpu.json",
        "wikiann-en dev, Stack(en, ner-en)",
    ),
    (
        "Quechua zero-shot, no Quechua label (qubert-qu/dev), `Stack(qu, ner-en)`",
        "label-free-qubert-qu/results.json",
        "zero-shot Stack(qu, ner-en), qubert-qu/dev, viterbi",
    ),
    (
        "every public Quechua label (qubert-qu/dev), `Stack(qu, ner-qu)`",
        "all-labels-qu/results.json",
        "Stack(qu, ner-qu-all) against the shipped ner-qu, qubert-qu/dev, viterbi",
    ),
    (
        "100 answers, `xling select`'s default `random` (qubert-qu/dev)",
        "active-qubert-qu/random-correct.json",
        "random-correct, 100 answers",
    ),
    ("200 answers, random (qubert-qu/dev)", "active-qubert-qu/random-correct.json", "random-correct, 200 answers"),
    (
        "zero-shot pipeline, minutes a seed: 2 CPU cores; one GPU",
        ["quality-qu/zero-shot-pipeline-xeon.json", "quality-qu/zero-shot-pipeline-h200.json"],
        "zero-shot pipeline, minutes",
    ),
]


def row_sentences(row: dict) -> str:
    """A result row's sentences, and how many of them its task was trained on."""
    return sentences_cell(row.get("sentences"), row.get("seen_in_training"))


def result_files() -> dict[str, dict]:
    return {str(p.relative_to(RESULTS)): json.loads(p.read_text()) for p in sorted(RESULTS.rglob("*.json"))}


def value(row: dict, with_seeds: bool = False) -> str:
    """Mean ± sd over the seeds (F1 in points, minutes as they are) and F1's 95% interval where the run kept its
    sentences' counts, optionally with the per-seed values."""
    metric = row.get("metric", "f1")
    scale = 100 if metric == "f1" else 1
    per_seed = row.get("per_seed")  # none in a seedless recipe's row: one run at the seeds its steps set
    text = f"{scale * row[metric]:.1f}"
    if per_seed and len(per_seed) > 1:
        text += f" ± {scale * row[metric + '_std']:.1f}"
    else:  # a score names its seed; a timing or a seedless recipe's score, that it is one run
        text += f" (seed {per_seed[0]['seed']})" if per_seed and metric == "f1" else " (one run)"
    if metric == "f1":
        text += f" {interval_cell(row['f1_interval'])}" if "f1_interval" in row else " (no interval: earlier protocol)"
    if with_seeds:
        text = " / ".join(f"{scale * s[metric]:.1f}" for s in per_seed or [row]) + f" | {text}"
    return text


def versus(row: dict) -> str:
    return difference_cell(row["versus"]) if "versus" in row else ""


def find_row(files: dict, file: str, label: str) -> dict:
    row = next(r for r in files[file]["rows"] if r["label"] == label)
    return active_row(row, next(iter(files[file]["evaluations"]))) if "scores" in row else row


def active_row(row: dict, evaluation: str) -> dict:
    """An active-learning row on one evaluation set, shaped as a recipe's row."""
    per_seed = [{"seed": s["seed"], "f1": s[evaluation]} for s in row["per_seed"]]
    return row["scores"][evaluation] | {"per_seed": per_seed, "label": row["label"]}


def expect_table(files: dict) -> str:
    lines = ["| what | mean ± sd over seeds [95% interval] | sentences scored | run on |", "|---|---|---|---|"]
    for what, names, label in EXPECT:
        names = [names] if isinstance(names, str) else names  # one cell may hold several runs, ';' between
        rows = [find_row(files, name, label) for name in names]
        values, scored = "; ".join(map(value, rows)), "; ".join(filter(None, map(row_sentences, rows)))
        lines.append(f"| {what} | {values} | {scored} | {'; '.join(files[name]['machine'] for name in names)} |")
    return "\n".join(lines)


def results_page(files: dict) -> str:
    parts = [
        "# Results",
        "",
        "Generated by `python -m docs.generate` from the result files in `results/` (what `xling run` writes as",
        "`results.json`; a test fails when this page differs from them). F1 is seqeval's strict IOB2 entity F1,",
        "per seed and as mean ± standard deviation over the seeds, with its 95% interval (sentences and seeds",
        "resampled) and how many sentences it rests on. The narrative behind these runs and the variants that did",
        "not help are in the [experiment log](experiments.md).",
    ]
    records = {
        name: data
        for name, data in files.items()
        if not name.startswith((*ACTIVE, COLD_START, SERVE, CORPUS_MAP, MLM_HEAD, ERRORS, ADAPTED, DEPLOY, ANCHOR))
        and name not in (SPEED, PROBES)
    }
    earlier = {name: data for name, data in records.items() if not kept_counts(data)}
    for name, data in records.items():
        if name not in earlier:
            parts += record_section(name, data, "##")
    for prefix in ACTIVE:
        parts += learning_curves(files, prefix)
    parts += mlm_head_section(files)
    parts += adapted_encoder_section(files)
    parts += errors_section(files)
    parts += probes_section(files)
    if earlier:
        parts += [
            "",
            "## Records of the earlier protocol",
            "",
            "Timing and equivalence checks whose runs kept no per-sentence counts, so their F1 has no interval; the",
            "Quechua quality figures above supersede them.",
        ]
        for name, data in earlier.items():
            parts += record_section(name, data, "###")
    return "\n".join(parts) + "\n"


def errors_section(files: dict) -> list[str]:
    """Where zero-shot goes wrong: each class of entity per seed and as mean ± sd, and the words wrong spans
    leave out or take in, summed over the seeds."""
    runs = {name: data for name, data in files.items() if name.startswith(ERRORS)}
    if not runs:
        return []
    first = next(iter(runs.values()))
    parts = [
        "",
        f"## Where zero-shot goes wrong: {setup_text(first['setup'])}, decoder {first['decoder']}, {first['data']}",
        "",
        "`xling analyze errors`, the last step of `recipes/lang-contribution-qu.toml` (files: "
        + ", ".join(f"`results/{name}`" for name in runs)
        + f"). Entities over {first['sentences']} sentences: each tagged entity right, of the wrong type (the same",
        "words), of the wrong span (the same type), wrong in both, or spurious; each gold entity no tagged one",
        "overlaps, missed.",
        "",
        "| entities | per seed | mean ± sd |",
        "|---|---|---|",
    ]
    for kind in first["kinds"]:
        counts = [data["kinds"][kind] for data in runs.values()]
        spread = f" ± {statistics.stdev(counts):.1f}" if len(counts) > 1 else ""
        parts.append(f"| {kind} | {' / '.join(map(str, counts))} | {statistics.mean(counts):.1f}{spread} |")
    confused = Counter()
    for data in runs.values():
        for row, gold in zip(data["confusion"], data["types"]):
            confused.update({(gold, tagged): n for n, tagged in zip(row, data["types"]) if gold != tagged})
    common = ", ".join(f"gold {g} tagged {t} {n}" for (g, t), n in confused.most_common(6))
    parts += ["", f"Types confused, over the seeds: {common}"]
    for edge, what in (("left_out", "left out of a gold entity"), ("taken_in", "taken in beside one")):
        summed = Counter()
        for data in runs.values():
            summed.update(dict(data[edge]))
        parts += [
            "",
            f"Words wrong spans {what}, over the seeds: " + ", ".join(f"`{w}` {n}" for w, n in summed.most_common(10)),
        ]
    return parts


def probes_section(files: dict) -> list[str]:
    """`bench/probes.py`'s probes: each held or not, and what xling said."""
    if PROBES not in files:
        return []
    data = files[PROBES]
    parts = [
        "",
        f"## Probes: {data['probes'] - data['bad']} of {data['probes']} held",
        "",
        f"`python -m bench.probes` (`results/{PROBES}`, xling {data['xling_version']}, {data['machine']}): damaged,",
        "huge and contradictory inputs, planted links and malformed requests to `xling annotate`, as",
        "[what xling refuses](refusals.md) lists them. A probe holds when the command finishes, or refuses in one",
        "line that is not `error: unexpected`, within its memory bound and writing nothing outside its workspace;",
        "a request holds when its reply is the expected 4xx or 200, never a 5xx.",
        "",
        "| group | probe | held | seconds | peak MB | what xling said |",
        "|---|---|---|---|---|---|",
    ]
    for o in data["outcomes"]:
        said = o["said"].replace("|", "\\|").replace("\n", " ")[:120]
        measured = f"{o['seconds']:.1f} | {o['peak_mb']:.0f}" if o["peak_mb"] else " | "
        parts.append(f"| {o['group']} | {o['probe']} | {'yes' if o['good'] else '**no**'} | {measured} | {said} |")
    return parts


def kept_counts(data: dict) -> bool:
    """Whether every F1 row of a results file has its interval (the runs kept their sentences' counts)."""
    return all("f1_interval" in r for r in data["rows"] if r.get("metric", "f1") == "f1")


def record_section(name: str, data: dict, heading: str) -> list[str]:
    commit = f", commit {data['commit']}" if data.get("commit") else ""
    parts = [
        "",
        f"{heading} {data['recipe']}: {data['machine']}",
        "",
        f"`results/{name}`, xling {data['xling_version']}{commit}.",
    ]
    if data.get("note"):
        parts += ["", data["note"]]
    typed = any("f1_by_type" in r for r in data["rows"])  # F1 per entity type, where the run kept it
    parts += [
        "",
        "| evaluation | setup | computed in | per seed | mean ± sd [95% interval] | sentences | against baseline |"
        + (" F1 by type |" if typed else ""),
        "|---|---|---|---|---|---|---|" + ("---|" if typed else ""),
    ]
    return parts + [
        f"| {r['label']} | `{setup_text(r['setup'])}` | {r.get('computed_in') or ''} | {value(r, with_seeds=True)} | "
        f"{row_sentences(r)} | {versus(r)} |" + (f" {by_type(r)} |" if typed else "")
        for r in data["rows"]
    ]


def by_type(row: dict) -> str:
    return ", ".join(f"{kind} {100 * f1:.1f}" for kind, f1 in sorted(row.get("f1_by_type", {}).items()))


def learning_curves(files: dict, prefix: str) -> list[str]:
    """The active-learning runs of one pool side by side on each evaluation set (mean ± sd over seeds, 95%
    interval), the words annotated, and each strategy's paired test against random."""
    runs = {Path(name).stem: data for name, data in files.items() if name.startswith(prefix)}
    if not runs:
        return []
    first = next(iter(runs.values()))
    parts = ["", f"## Active learning on Quechua: {ACTIVE[prefix]} answers", ""]
    scored = " and ".join(
        f"`{name}` ({first['rows'][0]['scores'][name]['sentences']} sentences)" for name in first["evaluations"]
    )
    rounds = ", ".join(str(row["sentences"]) for row in first["rows"][1:])
    parts += [
        f"`python -m bench.active_learning` (see [annotation](annotation.md)): the labels of {ACTIVE[prefix]}",
        f"answer each round's sentences (spans mode: spans; answers after each round: {rounds}), the task",
        "adapter is trained again from `ner-en` with early stopping on dev, and the saved adapter is then scored on",
        f"{scored}: F1 mean ± sd over seeds [95% interval, sentences and seeds resampled], with the words annotated",
        "so far.",
        "",
    ]
    parts += [
        f"- `results/{prefix}{name}.json`: seeds {data['seeds']}, {data['machine']}" for name, data in runs.items()
    ]
    by_answers = {name: {r["sentences"]: r for r in data["rows"]} for name, data in runs.items()}
    answers = sorted({n for rows in by_answers.values() for n in rows})
    for evaluation in first["evaluations"]:
        parts += ["", f"### {evaluation}", "", "| answers | " + " | ".join(runs) + " |", "|---" * (len(runs) + 1) + "|"]
        for n in answers:
            cells = [by_answers[name].get(n) for name in runs]
            parts.append(f"| {n} | " + " | ".join(_curve_cell(r, evaluation) if r else "" for r in cells) + " |")
    for key, against in (("versus_random", "random"), ("versus_start", "no answers (the start)")):
        tests = [(name, test) for name, data in runs.items() for test in data.get(key, [])]
        if not tests:
            continue
        parts += ["", f"### Against {against} (paired bootstrap over sentences and seeds)", ""]
        parts += [
            "| strategy | answers | " + " | ".join(first["evaluations"]) + " |",
            "|---|---|" + "---|" * len(first["evaluations"]),
        ]
        for name, test in tests:
            cells = [versus({"versus": test[evaluation]}) for evaluation in first["evaluations"]]
            parts.append(f"| {name} | {test['sentences']} | " + " | ".join(cells) + " |")
    return parts + ["", f"![Learning curves](img/{prefix.rstrip('/')}.png)"]


def mlm_head_section(files: dict) -> list[str]:
    """The shipped masked-LM head: its held-out perplexity per language, and language adapters' perplexity per
    step under it against a fresh head."""
    heads = {name: data for name, data in files.items() if name.startswith(MLM_HEAD) and "held_out_perplexity" in data}
    curves = {name: data for name, data in files.items() if name.startswith(MLM_HEAD) and "languages" in data}
    if not heads:
        return []
    parts = ["", "## The masked-LM head of the embedded encoder", ""]
    for name, data in heads.items():
        langs = ", ".join(f"{lang} {value:,.1f}" for lang, value in data["held_out_perplexity"].items())
        first, last = data["evaluations"][0], data["evaluations"][-1]
        parts += [
            f"`results/{name}` ({data['machine']}, commit {data['commit']}): {data['recipe']['steps']:,} steps of "
            f"{data['recipe']['batch_size']} blocks on the frozen encoder, {data['training_seconds'] / 60:.0f} minutes "
            f"in {data['computed_in']}; held-out perplexity over the whole vocabulary from {first['perplexity']:,.0f} "
            f"(the unigram start) to {last['perplexity']:,.0f}; per language: {langs}.",
        ]
    for name, data in curves.items():
        parts += [
            "",
            f"Language adapters under it against a fresh head (`results/{name}`, `recipes/mlm-head-qu.toml`): "
            "held-out perplexity of the adapter's own language over the whole vocabulary, per seed.",
            "",
            "| adapter | seed | fresh head: start → end | pretrained head: start → end | steps to the fresh head's end |",
            "|---|---|---|---|---|",
        ]
        for lang, seeds in data["languages"].items():
            for seed in seeds:
                fresh, pretrained = seed["fresh"], seed["pretrained"]
                steps = seed["steps_to_fresh_final"]
                parts.append(
                    f"| lang-{lang} | {seed['seed']} | {fresh[0]['perplexity']:,.0f} → {fresh[-1]['perplexity']:,.0f} "
                    f"| {pretrained[0]['perplexity']:,.0f} → {pretrained[-1]['perplexity']:,.0f} "
                    f"| {'not reached' if steps is None else steps} of {fresh[-1]['step']} |"
                )
        parts += ["", "![Perplexity curves](img/mlm-head-curves.png)"]
    return parts


def adapted_encoder_section(files: dict) -> list[str]:
    """Adapting the encoder (`xling train-encoder`): each budget's held-out perplexities and, once its recipe has
    run, zero-shot Quechua and English dev F1, paired against the embedded encoder (budget 0)."""
    curve = files.get(f"{ADAPTED}curve.json")
    if not curve:
        return []
    parts = [
        "",
        "## Adapting the encoder",
        "",
        f"`results/{ADAPTED}curve.json` (`python -m bench.encoder_curve`; {curve['machine']}, commit {curve['commit']}):"
        " `xling train-encoder` (no-embeddings, batch 16) on Quechua text mixed with English and Spanish text and"
        " the AmericasNLP Spanish-Quechua pairs, WikiANN-qu dev and silver-dev kept out; then"
        " `recipes/adapted-encoder-qu.toml` on each encoder (three seeds). Perplexity is held-out, over the whole"
        " vocabulary, before and after.",
        "",
        "| steps | mix (share of rows) | Quechua | English | Spanish | zero-shot and English F1 |",
        "|---|---|---|---|---|---|",
    ]
    for point in curve["points"]:
        encoder = point["encoder"] or {}
        mix = ", ".join(f"{m['name']} {100 * m['share']:.0f}%" for m in encoder.get("mix", [])) or "embedded encoder"
        ppl = encoder.get("held_out_perplexity", {})
        cells = [
            f"{ppl[lang]['before']:,.0f} → {ppl[lang]['after']:,.0f}" if lang in ppl else ""
            for lang in ("qu", "en", "es")
        ]
        scores = "; ".join(f"{row['label']}: {value(row)}{against_base(row)}" for row in point["rows"])
        parts.append(f"| {point['budget']:,} | {mix} | {' | '.join(cells)} | {scores or 'recipe not run yet'} |")
    parts += ["", "![Adapting the encoder](img/adapted-encoder-qu.png)"]
    return parts


def against_base(row: dict) -> str:
    """A row's paired difference to the same row on the embedded encoder, where there is one."""
    return (
        f", against the embedded encoder {difference_cell(row['versus_budget_0'])}" if "versus_budget_0" in row else ""
    )


def _curve_cell(row: dict, evaluation: str) -> str:
    score = row["scores"][evaluation]
    spread = f" ± {100 * score['f1_std']:.1f}" if score["seeds"] > 1 else ""
    words = f" ({row['words']:,.0f} words)" if row["sentences"] else ""
    return f"{100 * score['f1']:.1f}{spread} {interval_cell(score.get('f1_interval'))}{words}"


def runtime_table(files: dict) -> str:
    """`bench/runtimes.py` in one table: lines/s by corpus size, against PyTorch fp32, peak memory and dev F1."""
    if SPEED not in files:
        return "Not measured yet: `python -m bench.runtimes`."
    speed, quality = files[SPEED], files.get(QUALITY, {"rows": []})
    sizes = sorted({r["lines"] for r in speed["rows"]})
    at = {(r["variant"], r["lines"]): r for r in speed["rows"]}
    f1 = {r["label"]: r for r in quality["rows"]}
    dev_sets = sorted({label.rsplit(", ", 1)[0] for label in f1})
    head = (
        f"| runtime | lines/s at {' / '.join(f'{n:,}' for n in sizes)} lines | against PyTorch fp32 | peak memory (MiB)"
    )
    lines = [head + "".join(f" | {d} F1" for d in dev_sets) + " |", "|---" * (4 + len(dev_sets)) + "|"]
    for variant in dict.fromkeys(r["variant"] for r in speed["rows"]):
        rates = " / ".join(f"{at[(variant, n)]['lines_per_s']:.1f}" if (variant, n) in at else "–" for n in sizes)
        both = [n for n in sizes if (variant, n) in at and ("torch-fp32", n) in at]  # sizes both ran
        ratio = "–"
        if both:
            ratio = f"{at[(variant, both[-1])]['lines_per_s'] / at[('torch-fp32', both[-1])]['lines_per_s']:.2f}x"
            ratio += f" at {both[-1]:,}"
        peaks = " / ".join(f"{at[(variant, n)]['peak_mib']:,.0f}" if (variant, n) in at else "–" for n in sizes)
        cells = [value(f1[f"{d}, {variant}"]) if f"{d}, {variant}" in f1 else "–" for d in dev_sets]
        lines.append(f"| {variant} | {rates} | {ratio} | {peaks} | " + " | ".join(cells) + " |")
    note = f"`results/{SPEED}` ({speed['machine']}, xling {speed['xling_version']}, commit {speed['commit']})"
    if quality["rows"]:
        note += f"; F1: `results/{QUALITY}` ({quality['machine']}, seeds {quality['seeds']})"
    costs = [
        f"- {r['label']} against {r['versus']['baseline']} (paired, {row_sentences(r)} sentences): {versus(r)}"
        for r in quality["rows"]
        if "versus" in r
    ]
    ratios = [f"- {r.strip()}" for r in speed["ratios"]]
    return "\n".join([*lines, "", note + "; one run.", "", *ratios, *([""] + costs if costs else [])])


def cold_start_table(files: dict) -> str:
    """`bench/cold_start.py`: a fresh process's wall time and peak memory, against `import torch` in the same run."""
    rows = [
        "| machine | run | seconds (median; min-max) | against `import torch` | peak memory | load average |",
        "|---|---|---|---|---|---|",
    ]
    for name, data in files.items():
        if name.startswith(COLD_START):
            for run, row in data["rows"].items():
                spread = f" ({row['min_seconds']:.2f}-{row['max_seconds']:.2f})" if "min_seconds" in row else ""
                load = "{:.1f}-{:.1f}".format(*row["load_average"]) if "load_average" in row else "not kept"
                rows.append(
                    f"| {data['machine']} | `{run}` | {row['seconds']:.2f}{spread} | "
                    f"{row['ratio_to_import_torch']:.2f}x | {row['peak_gb']:.2f} GB | {load} |"
                )
    return "\n".join(rows)


def serve_table(files: dict) -> str:
    """`bench/serve_load.py`: `xling serve` under concurrent clients against one at a time, and the same tagger's
    batching alone (no HTTP) as the ceiling."""
    rows = [
        "| machine | clients | requests/s | p50 ms | p99 ms | errors | model calls | against one client "
        "| the model alone, no HTTP |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, data in files.items():
        if name.startswith(SERVE):
            for run, against, alone in (
                (data["one_at_a_time"], "1x", "1x"),
                (data["concurrent"], f"{data['speedup']:.2f}x", f"{data['model_alone']['ratio']:.2f}x"),
            ):
                rows.append(
                    f"| {data['machine']} | {run['clients']} | {run['requests_per_second']:.1f} | {run['p50_ms']:.0f} "
                    f"| {run['p99_ms']:.0f} | {run['errors']} of {run['requests']} "
                    f"| {run['model_calls']} | {against} | {alone} |"
                )
    return "\n".join(rows)


def cli_reference() -> str:
    """`typer xling.cli.app utils docs`: typer's generator over the real app."""
    command = [
        sys.executable,
        "-m",
        "typer",
        "xling.cli.app",
        "utils",
        "docs",
        "--name",
        "xling",
        "--title",
        "Commands",
    ]
    return subprocess.run(command, capture_output=True, text=True, check=True, cwd=ROOT).stdout


def with_section(path: Path | str, name: str, section: str) -> str:
    """The text of `path` (or the text itself) with `section` between its markers `<!-- NAME: generated... -->` and
    `<!-- end of NAME -->`."""
    text = path.read_text(encoding="utf-8") if isinstance(path, Path) else path
    start = text.index(f"<!-- {name}: generated by docs/generate.py -->")
    start, end = text.index("\n", start) + 1, text.index(f"<!-- end of {name} -->")
    return text[:start] + section.strip("\n") + "\n" + text[end:]


def corpora_table() -> str:
    """What each catalogued corpus is, where it comes from and its licence: corpora/README.md's table."""
    from xling.data.catalog import describe, load_catalog

    rows = ["| name | what it is | splits | public source | licence |", "|---|---|---|---|---|"]
    for c in describe(load_catalog()):
        unfetched = sorted(set(c.split_sources.values()) - {c.source})
        sources = "; ".join([c.source or "?", *(f"{u} (some splits)" for u in unfetched)])
        rows.append(
            f"| `{c.name}` | {c.description} | {', '.join(c.splits) or c.kind} | {sources} | {c.licence or '?'} |"
        )
    return "\n".join(rows)


def adapters_snippet() -> str:
    """The model card's `adapters` snippet for a task adapter on the embedded default (tested as written)."""
    from xling.roles import TASK
    from xling.train.cards.adapter import library_snippet

    snippet = library_snippet(TASK, "ner-en", None, embedded=True)
    return snippet[snippet.index("```python") :]


def deploy_table(files: dict) -> str:
    """`bench/deploy_size.py`: what a machine that only tags ONNX folders installs, against the full install."""
    data = files[f"{DEPLOY}sizes.json"]
    deploy, full = data["deploy"], data["full"]
    return "\n".join(
        [
            "| install | size | distributions | torch, Transformers |",
            "|---|---|---|---|",
            f"| `pip install -e .` (full) | {full['megabytes'] / 1000:.1f} GB | {len(full['distributions'])} | yes |",
            f"| deploy: `pip install ./deploy` (xling-onnx) | {deploy['megabytes']:.0f} MB "
            f"| {len(deploy['distributions'])} | {', '.join(deploy['training_stack']) or 'none'} |",
            "",
            f"Measured by `python -m bench.deploy_size` (Python {data['python']}, Linux, {data['machine']}, commit "
            f"{data['commit']}): the deploy venv whole, pip included; the full install as the files of every "
            "distribution `pip install -e .` pulls in (torch's default build with its CUDA libraries).",
        ]
    )


def mean(values) -> float:
    return sum(values) / len(values) if isinstance(values, list) else values


TRAINING_PHASES = {
    "lang_qu": "masked-LM step, batch 8 x 128, Quechua",
    "lang_en": "masked-LM step, English",
    "ner_adapter": "NER task adapter step, batch 16",
    "full_ft": "full fine-tuning step, batch 16",
}
TAGGING_RUNS = {
    "runs_xling_length_sorted": "xling's length-sorted batches",
    "runs_tag_words_end_to_end": "`Tagger.tag_words`",
}


def anchor_table(files: dict) -> str:
    """`bench/anchor_workload.py` beside the AdapterHub `adapters` library on the same workload (results/anchor/):
    seconds a step and peak memory of each training phase, and tagging `Stack(qu, ner)` at the library's batches."""
    library, xling = files[f"{ANCHOR}adapters.json"], files[f"{ANCHOR}xling.json"]
    theirs, ours, infer = library["summary"], xling["summary"], xling["phases"]["infer_adapters"]
    rows = ["| phase | `adapters` library | xling | xling / library |", "|---|---|---|---|"]

    def row(title: str, a: float, b: float, unit: str, ratio: str = "{:.2f}") -> None:
        shown = {" s": "{:.3f} s", " MB": "{:,.0f} MB", "": "{:.1f}"}[unit]
        rows.append(f"| {title} | {shown.format(a)} | {shown.format(b)} | {ratio.format(b / a)} |")

    for phase, title in TRAINING_PHASES.items():
        step = mean(theirs[phase]["s_per_step"])
        row(title, step, mean(ours[phase]["s_per_step"]), " s")
        row("its peak memory", theirs[phase]["peak_rss_mb"], ours[phase]["peak_rss_mb"], " MB")
        if f"{phase}_vocab" in ours:
            row("same, xling's `--vocab-from-corpus`", step, mean(ours[f"{phase}_vocab"]["s_per_step"]), " s")
    tagged = mean(theirs["infer_stack_qu_ner_sent_per_s"])
    title = "tagging `Stack(qu, ner)`, 1,000 sentences, the library's batches of 32 (sentences/s)"
    row(title, tagged, mean(ours["infer_stack_qu_ner_sent_per_s"]), "", "{:.2f}x")
    for key, runs in TAGGING_RUNS.items():
        row(
            f"same, {runs}", tagged, mean([run["sentences_per_s"] for run in infer[key]["stack_qu_ner"]]), "", "{:.2f}x"
        )
    row("tagging's peak memory", theirs["infer_adapters_peak_rss_mb"], ours["infer_adapters_peak_rss_mb"], " MB")
    env = library["environment"]
    rows += [
        "",
        f"One run, back to back on {xling['machine']}: the library first, each phase in a fresh process, 2 threads, "
        f"both on torch {env['torch']}; the library with Transformers {env['transformers']} and `adapters` "
        f"{env['adapters']}, xling {xling['xling_version']} (commit {xling['commit']}) with Transformers "
        f"{xling['transformers']} (`--precision {xling['precision']}`: tagging in {infer['precision']} through "
        f"`{infer.get('encoder', 'BertModel')}`, the encoder tagging loads for the embedded model).",
    ]
    return "\n".join(rows)


def families_table() -> str:
    """The encoder families adapters attach to, from their records: docs/models.md's table."""
    from xling.models.families import FAMILIES

    families = {family.title: family for family in FAMILIES.values()}  # one row each, in the records' order
    rows = [
        "| family | `model_type` | layers | LoRA adapts | PEFT export | AdapterHub export |",
        "|---|---|---|---|---|---|",
    ]
    for family in families.values():
        paths = family.paths
        lora = "query, value: thirds of the fused `Wqkv`" if paths.fused_qkv else "query, value"
        rows.append(
            f"| {family.title} | {', '.join(f'`{t}`' for t in family.model_types)} "
            f"| {'pre-LayerNorm' if paths.pre_norm else 'post-LayerNorm'} | {lora} "
            f"| {'yes: one LoRA of `Wqkv`, its B in blocks' if paths.fused_qkv else 'yes'} "
            f"| {f'yes (`{family.adapterhub_class}`)' if family.adapterhub_class else 'no'} |"
        )
    return "\n".join(rows)


def speed_page(files: dict) -> str:
    """docs/speed.md with each of its generated tables in place."""
    text = ROOT / "docs" / "speed.md"
    for section, table in (
        ("anchor", anchor_table),
        ("runtimes", runtime_table),
        ("cold-start", cold_start_table),
        ("serve", serve_table),
    ):
        text = with_section(text, section, table(files))
    return text


def generated() -> dict[Path, str]:
    files = result_files()
    return {
        ROOT / "docs" / "cli.md": cli_reference(),
        ROOT / "docs" / "results.md": results_page(files),
        ROOT / "README.md": with_section(ROOT / "README.md", "what-to-expect", expect_table(files)),
        ROOT / "docs" / "speed.md": speed_page(files),
        ROOT / "corpora" / "README.md": with_section(ROOT / "corpora" / "README.md", "corpora", corpora_table()),
        ROOT / "docs" / "models.md": with_section(ROOT / "docs" / "models.md", "families", families_table()),
        ROOT / "docs" / "sharing.md": with_section(
            with_section(ROOT / "docs" / "sharing.md", "adapters-snippet", adapters_snippet()),
            "deploy-sizes",
            deploy_table(files),
        ),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="Compare instead of writing; exit 1 on a difference.")
    args = parser.parse_args()
    stale = []
    for path, text in generated().items():
        if args.check:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                stale.append(str(path.relative_to(ROOT)))
        else:
            path.write_text(text, encoding="utf-8")
    if stale:
        print(f"not what docs/generate.py makes: {', '.join(stale)}; run python -m docs.generate", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
