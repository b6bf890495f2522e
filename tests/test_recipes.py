"""Recipes, the corpora catalogue and the demo's data sources."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rich.console import Console

from tests.tiny import run_xling
from xling.data.catalog import load_catalog
from xling.data.fetch import resolve
from xling.errors import XlingError
from xling.recipes.planning import validate
from xling.recipes.reading import read_recipe
from xling.recipes.running import run_recipe
from xling.workspace import Workspace

REPO = Path(__file__).resolve().parent.parent


def write_recipe(path: Path, model: Path, workspace: Path, steps: str) -> Path:
    path.write_text(
        f'[recipe]\nname = "tiny"\nmodel = "{model}"\nworkspace = "{workspace}"\n\n{steps}', encoding="utf-8"
    )
    return path


def english_step(train: Path, dev: Path) -> str:
    """ner-en-nolang in one epoch: the task adapter a recipe test's later steps use."""
    return f'''
[[step]]
title = "ner-en"
run = "train-task"
lang = "en"
no_lang_adapter = true
train = "{train}"
dev = "{dev}"
epochs = 1
batch_size = 16
'''


def dry_run(recipe: Path, *extra: str) -> str:
    """`xling run RECIPE --dry-run`'s plan."""
    result = run_xling("run", str(recipe), "--dry-run", *extra, env={"COLUMNS": "200"})
    assert result.returncode == 0, result.stderr
    return result.stderr


def pipeline_steps(train: Path, dev: Path, epochs: int) -> str:
    """A tiny pipeline: an English language adapter, ner-en over it, and its dev evaluation."""
    return f'''
[[step]]
title = "lang-en"
run = "train-lang"
lang = "en"
corpus = ["{train}"]
steps = 4
seq_len = 32
batch_size = 4

[[step]]
title = "ner-en"
run = "train-task"
lang = "en"
train = "{train}"
dev = "{dev}"
epochs = {epochs}
batch_size = 16
lr = 5e-3

[[step]]
title = "dev"
run = "evaluate"
data = "{dev}"
lang = "en"
label = "tiny dev"
'''


def test_validation_reports_every_problem_with_file_and_step(tmp_path, trained_workspace):
    _, model_dir, train, dev = trained_workspace
    recipe = write_recipe(
        tmp_path / "bad.toml",
        model_dir,
        tmp_path / "ws",
        f'''
[[step]]
title = "lang"
run = "train-lang"
lang = "qu"
corpus = ["{tmp_path / "missing.txt"}"]
stepz = 10

[[step]]
title = "task"
run = "train-task"
lang = "de"
train = "{train}"
dev = "{dev}"

[[step]]
title = "eval"
run = "evaluate"
data = "{dev}"
lang = "qu"
task_adapter = "ner-xx"

[[step]]
title = "by path"
run = "evaluate"
data = "hf:conll2003::validation"
lang = "qu"
lang_adapter = "{tmp_path / "no-such-adapter"}"
task_adapter = "hf:org/ner-en"
''',
    )
    with pytest.raises(XlingError) as error:
        validate(read_recipe(recipe), Workspace(str(tmp_path / "ws"), str(model_dir)))
    message = str(error.value)
    assert "bad.toml: step 1 (lang): unknown key 'stepz'" in message
    assert "step 1 (lang): key 'corpus'" in message and "missing.txt not found" in message
    assert "step 2 (task): needs the lang adapter 'de'" in message
    assert "step 3 (eval): needs the task adapter 'ner-xx'" in message
    # adapters named by path are checked as folders, Hub adapters and datasets are fetched when the step runs
    assert f"step 4 (by path): the lang adapter {tmp_path / 'no-such-adapter'} is not a directory" in message
    assert "has 5 problems:" in message


def test_validation_asks_an_unreachable_hub_once_per_corpus(tmp_path, trained_workspace, monkeypatch):
    """Offline, each step naming a corpus would otherwise wait through the hub client's retries again."""
    from xling.data import fetch

    _, model_dir, _, _ = trained_workspace
    monkeypatch.setenv("XLING_CORPORA", str(tmp_path / "no-corpora"))
    monkeypatch.setenv("XLING_HOME", str(tmp_path / "home"))  # an empty corpus cache
    tries = []

    def unreachable(corpus, folder, console):
        tries.append(corpus.name)
        raise OSError("Name or service not known")

    monkeypatch.setattr(fetch, "_fetch_files", unreachable)
    steps = "".join(
        f'\n[[step]]\ntitle = "lang {n}"\nrun = "train-lang"\nlang = "qu"\ncorpus = ["corpus:quechua-text"]\n'
        for n in range(3)
    )
    recipe = write_recipe(tmp_path / "offline.toml", model_dir, tmp_path / "ws", steps)
    with pytest.raises(XlingError) as error:
        validate(read_recipe(recipe), Workspace(str(tmp_path / "ws"), str(model_dir)))
    assert tries == ["quechua-text"]
    assert str(error.value).count("cannot fetch corpus quechua-text") == 3


def test_recipe_runs_then_skips_finished_steps(tmp_path, trained_workspace):
    _, model_dir, train, dev = trained_workspace
    workspace = tmp_path / "ws"
    recipe = write_recipe(
        tmp_path / "tiny.toml",
        model_dir,
        workspace,
        pipeline_steps(train, dev, epochs=2)
        + f'''
[[step]]
title = "tags"
run = "tag"
input = "{dev}"
lang = "en"
format = "jsonl"
output = "tags.jsonl"
''',
    )
    statuses, console = [], Console(record=True, width=200)
    results = run_recipe(recipe, console=console, on_step=lambda step, status: statuses.append(status))
    assert statuses == ["ran"] * 4
    assert [r.label for r in results] == ["tiny dev"] and 0 <= results[0].f1 <= 1
    low, high = results[0].f1_interval  # the results table's interval, from the same counts
    said = f"tiny dev: F1 {100 * results[0].f1:.1f} [{100 * low:.1f}, {100 * high:.1f}] (precision"
    assert said in console.export_text()  # each evaluate step says its interval as it runs
    out = workspace / "tinybert" / "results" / "tiny"
    assert "| tiny dev |" in (out / "results.md").read_text()
    assert json.loads((out / "results.json").read_text())["rows"][0]["f1"] == results[0].f1
    assert (out / "tags.jsonl").read_text().count("\n") > 10  # relative outputs go beside the results
    statuses.clear()
    again = run_recipe(recipe, on_step=lambda step, status: statuses.append(status))
    assert statuses == ["skipped"] * 4 and again == results
    # An edited step runs again, and so does everything that used its output; the rest is kept.
    recipe.write_text(recipe.read_text().replace("epochs = 2", "epochs = 1"), encoding="utf-8")
    statuses.clear()
    run_recipe(recipe, on_step=lambda step, status: statuses.append(status))
    assert statuses == ["skipped", "ran", "ran", "ran"]
    assert (
        json.loads((workspace / "tinybert" / "task" / "ner-en" / "report.json").read_text())["training"]["epochs"] == 1
    )


def test_catalogue_resolves_local_then_hub(tmp_path, monkeypatch):
    catalog = load_catalog()
    assert {"wikiann-en", "wikiann-qu", "conll2002-es", "quechua-text"} <= set(catalog)
    monkeypatch.setenv("XLING_CORPORA", str(tmp_path))
    (tmp_path / "ner" / "wikiann-qu").mkdir(parents=True)
    (tmp_path / "ner" / "wikiann-qu" / "dev").write_text("qu:Lima\tB-LOC\n")
    assert resolve("corpus:wikiann-qu/dev", catalog) == str(tmp_path / "ner" / "wikiann-qu" / "dev")
    assert resolve("plain/path.txt", catalog) == "plain/path.txt"
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # not here: fetched from the hub on first use, which fails offline
    with pytest.raises(XlingError, match="cannot fetch corpus quechua-text from hf-files:Llamacha/monolingual-quechua"):
        resolve("corpus:quechua-text", catalog)
    with pytest.raises(XlingError, match="unknown corpus"):
        resolve("corpus:nope/train", catalog)
    with pytest.raises(XlingError, match="no split"):
        resolve("corpus:wikiann-qu/test", catalog)
    from xling.data.sources import load_ner
    from xling.data.text import expand_sources

    # every command takes the names, not only recipes: training and evaluation data, and text corpora
    assert load_ner("corpus:wikiann-qu/dev")[0].tags == ["B-LOC"]
    (tmp_path / "text" / "qu").mkdir(parents=True)
    (tmp_path / "text" / "qu" / "a.txt").write_text("Qusqu llaqta\n")
    assert expand_sources(["corpus:quechua-text"]) == [tmp_path / "text" / "qu" / "a.txt"]


def test_corpora_list_shows_what_is_here(corpora_root):
    result = run_xling("corpora", "list", env={"XLING_CORPORA": str(corpora_root), "COLUMNS": "200"})
    assert result.returncode == 0
    line = next(row for row in result.stdout.splitlines() if "wikiann-qu" in row)
    assert "train, dev, extra" in line


@pytest.mark.parametrize("recipe", sorted(p.name for p in (REPO / "recipes").glob("*.toml")))
def test_shipped_recipes_validate(recipe, corpora_root, monkeypatch, tmp_path):
    from xling.data.catalog import corpus_cache, local_path

    monkeypatch.setenv("XLING_CORPORA", str(corpora_root))
    monkeypatch.setenv("XLING_HOME", str(tmp_path / "home"))
    for corpus in load_catalog().values():  # fetched on first use, not among the development corpora: stand-ins
        if corpus.kind == "parallel" and local_path(corpus, None) is None:
            (corpus_cache() / corpus.local).mkdir(parents=True)
            for name in corpus.files:
                (corpus_cache() / corpus.local / name).write_text("Lima llaqta\n")
    parsed = read_recipe(REPO / "recipes" / recipe)
    validate(parsed, Workspace(str(tmp_path), parsed.model))


def test_demo_uses_local_corpora_and_validates(corpora_root, monkeypatch, tmp_path):
    from xling.demo import demo_recipe, demo_sources

    monkeypatch.setenv("XLING_CORPORA", str(corpora_root))
    sources = demo_sources(Console())
    assert sources.source.startswith("local corpora")
    recipe = demo_recipe(sources, tmp_path / "demo")
    validate(recipe, Workspace(recipe.workspace, recipe.model))
    assert [s.run for s in recipe.steps] == [
        "train-lang",
        "train-lang",
        "train-task",
        "evaluate",
        "evaluate",
        "evaluate",
        "tag",
    ]


def test_seeds_run_each_training_step_per_seed_and_report_mean_and_spread(tmp_path, trained_workspace):
    _, model_dir, train, dev = trained_workspace
    workspace = tmp_path / "ws"
    recipe = write_recipe(tmp_path / "seeded.toml", model_dir, workspace, pipeline_steps(train, dev, epochs=1))
    statuses = []
    rows = run_recipe(recipe, seeds=[1, 2], on_step=lambda step, status: statuses.append(status))
    assert statuses == ["ran"] * 6
    for seed in (1, 2):
        report = json.loads((workspace / f"seed-{seed}" / "tinybert" / "task" / "ner-en" / "report.json").read_text())
        assert report["training"]["seed"] == seed
    per_seed = [
        json.loads((workspace / f"seed-{s}" / "tinybert" / "results" / "tiny" / "dev.json").read_text())["f1"]
        for s in (1, 2)
    ]
    [row] = rows
    assert [r.seed for r in row.per_seed] == [1, 2] and [r.f1 for r in row.per_seed] == per_seed
    assert row.f1 == pytest.approx(sum(per_seed) / 2) and row.adapters == ["ner-en"]  # what the cards match
    assert row.f1_std == pytest.approx(abs(per_seed[0] - per_seed[1]) / 2**0.5)
    table = (workspace / "tinybert" / "results" / "tiny" / "results.md").read_text()
    assert "| F1 seed 1 | F1 seed 2 |" in table
    assert f"| {100 * row.f1:.1f} ± {100 * row.f1_std:.1f} |" in table
    saved = json.loads((workspace / "tinybert" / "results" / "tiny" / "results.json").read_text())
    assert saved["rows"] == [row.to_record()] and saved["recipe"] == "tiny" and saved["machine"]
    for seed, own in zip((1, 2), per_seed):  # each seed's task adapter carries the recipe's scores of it
        adapter = workspace / f"seed-{seed}" / "tinybert" / "task" / "ner-en"
        [evaluation] = json.loads((adapter / "report.json").read_text())["evaluations"]
        assert evaluation["f1"] == own and evaluation["seeds"] == [1, 2] and evaluation["f1_mean"] == row.f1
        card = (adapter / "README.md").read_text()
        assert "## Evaluations (recipe tiny)" in card and f"| {100 * own:.1f} | {100 * row.f1:.1f} ± " in card


def test_a_dry_run_fetches_no_corpus_and_lists_problems_in_one_readable_line(tmp_path, trained_workspace):
    _, model_dir, train, dev = trained_workspace
    recipe = write_recipe(
        tmp_path / "plan.toml",
        model_dir,
        tmp_path / "ws",
        f"""
{english_step(train, dev)}
[[step]]
title = "wikiann"
run = "evaluate"
data = "corpus:wikiann-qu/dev"
lang = "en"
task_adapter = "ner-en-nolang"
no_lang_adapter = true
""",
    )
    offline = {"XLING_CORPORA": str(tmp_path / "no-corpora"), "XLING_HOME": str(tmp_path / "home")}
    offline |= {"HF_ENDPOINT": "http://127.0.0.1:9", "HF_HUB_OFFLINE": "0"}  # a fetch would fail: none is tried
    planned = run_xling("run", str(recipe), "--dry-run", env=offline | {"COLUMNS": "200"})
    assert planned.returncode == 0, planned.stderr
    assert "step 2/2 wikiann (evaluate): run: not run yet" in planned.stderr
    assert not (tmp_path / "home" / "corpora").exists()
    broken = recipe.read_text().replace('lang = "en"', 'lang = "de"').replace("batch_size", "batch_sise")
    recipe.write_text(broken, encoding="utf-8")
    refused = run_xling("run", str(recipe), "--dry-run", env=offline)
    (line,) = refused.stderr.strip().splitlines()
    assert refused.returncode == 1 and "has 2 problems: (1) " in line and "; (2) " in line and "\\n" not in line


def test_dry_run_prints_the_plan_and_runs_nothing(tmp_path, trained_workspace):
    _, model_dir, train, dev = trained_workspace
    workspace = tmp_path / "ws"
    recipe = write_recipe(
        tmp_path / "plan.toml",
        model_dir,
        workspace,
        f'''
{english_step(train, dev)}
[[step]]
title = "dev"
run = "evaluate"
data = "{dev}"
lang = "en"
task_adapter = "ner-en-nolang"
no_lang_adapter = true
''',
    )

    out = dry_run(recipe, "--seeds", "4,5")
    assert "tiny seed 4: workspace" in out and "tiny seed 5: workspace" in out
    assert out.count("step 1/2 ner-en (train-task): run: not run yet") == 2
    assert not workspace.exists()
    run_recipe(recipe)
    assert "step 1/2 ner-en (train-task): skip: done" in dry_run(
        recipe
    ) and "step 2/2 dev (evaluate): skip: done" in dry_run(recipe)
    recipe.write_text(recipe.read_text().replace("epochs = 1", "epochs = 2"), encoding="utf-8")
    out = dry_run(recipe)
    assert "step 1/2 ner-en (train-task): run: its options changed since it ran" in out
    assert "step 2/2 dev (evaluate): run: ner-en-nolang will be retrained before it" in out


def test_seeds_refuse_a_step_seed_and_bad_values(tmp_path, trained_workspace):
    _, model_dir, train, dev = trained_workspace
    steps = f'[[step]]\ntitle = "t"\nrun = "train-task"\nlang = "en"\nno_lang_adapter = true\ntrain = "{train}"\ndev = "{dev}"\nseed = 3\n'
    recipe = write_recipe(tmp_path / "clash.toml", model_dir, tmp_path / "ws", steps)
    with pytest.raises(XlingError, match=r"clash.toml: step 1 \(t\): key 'seed' conflicts with the recipe's seeds"):
        run_recipe(recipe, seeds=[1, 2])
    bad = tmp_path / "bad.toml"
    bad.write_text('[recipe]\nseeds = "1,2"\n')
    with pytest.raises(XlingError, match="option .seeds. takes a list of whole numbers"):
        read_recipe(bad)
    result = run_xling("run", str(recipe), "--seeds", "one")
    assert (
        result.returncode == 1 and "option 'seeds': expected comma-separated whole numbers, not 'one'" in result.stderr
    )


def test_the_planner_finds_a_steps_task_adapter_as_tag_does(tmp_path, copied_workspace, trained_workspace):
    import shutil

    from xling.recipes.kinds import requires
    from xling.roles import TASK

    ws, model_dir, model_folder, dev = copied_workspace
    train = trained_workspace[2]
    shutil.rmtree(model_folder / "task" / "ner-qu", ignore_errors=True)  # other tests may have trained one
    steps = f"""
[[step]]
title = "before"
run = "evaluate"
data = "{dev}"
lang = "qu"

[[step]]
title = "ner-qu"
run = "train-task"
lang = "qu"
train = "{train}"
dev = "{dev}"
init_from = "ner-en"

[[step]]
title = "after"
run = "evaluate"
data = "{dev}"
lang = "qu"
"""
    recipe = read_recipe(write_recipe(tmp_path / "r.toml", model_dir, ws, steps))
    workspace = Workspace(str(ws), str(model_dir))
    validate(recipe, workspace)
    before, _, after = recipe.steps
    # as `xling tag --lang qu` would: ner-en until a step trains ner-qu, ner-qu from then on
    assert (TASK, "ner-en") in requires(before, recipe, workspace)
    assert (TASK, "ner-qu") in requires(after, recipe, workspace)
    assert workspace.task_adapter_name("ner", "qu", planned={"ner-qu"}) == "ner-qu"


def test_a_step_records_the_corpus_names_it_was_given_so_cards_name_them(
    tmp_path, copied_workspace, corpora_root, monkeypatch
):
    monkeypatch.setenv("XLING_CORPORA", str(corpora_root))
    workspace, model_dir, _, _ = copied_workspace
    step = """
[[step]]
title = "ner-qu"
run = "train-task"
name = "ner-qu-named"
lang = "qu"
train = "corpus:wikiann-qu/train"
dev = "corpus:wikiann-qu/dev"
train_limit = 20
dev_limit = 10
epochs = 1
"""
    run_recipe(write_recipe(tmp_path / "named.toml", model_dir, workspace, step))
    adapter = workspace / model_dir.name / "task" / "ner-qu-named"  # a name no other test trains
    options = json.loads((adapter / "report.json").read_text())["options"]
    assert (options["train"], options["dev"]) == ("corpus:wikiann-qu/train", "corpus:wikiann-qu/dev")
    card = (adapter / "README.md").read_text()
    assert "| training data | corpus:wikiann-qu/train" in card and "data, corpus:wikiann-qu/train: WikiANN" in card


def test_a_later_step_trains_on_a_file_an_earlier_step_wrote_and_follows_it_when_it_is_written_again(
    tmp_path, trained_workspace
):
    _, model_dir, train, dev = trained_workspace
    recipe = write_recipe(
        tmp_path / "silver.toml",
        model_dir,
        tmp_path / "ws",
        f'''
{english_step(train, dev)}
[[step]]
title = "silver"
run = "tag"
input = "{train}"
conll = true
lang = "en"
task_adapter = "ner-en-nolang"
no_lang_adapter = true
format = "conll"
output = "silver/train.conll"

[[step]]
title = "ner-silver"
run = "train-task"
lang = "en"
no_lang_adapter = true
name = "ner-silver"
train = "results:silver/train.conll"
dev = "{dev}"
epochs = 1
batch_size = 16
''',
    )
    run_recipe(recipe)
    silver = tmp_path / "ws" / model_dir.name / "results" / "tiny" / "silver" / "train.conll"
    trained = json.loads((tmp_path / "ws" / model_dir.name / "task" / "ner-silver" / "report.json").read_text())
    assert trained["options"]["train"] == str(silver) and silver.is_file()

    assert "step 3/3 ner-silver (train-task): skip: done" in dry_run(recipe)
    recipe.write_text(recipe.read_text().replace('format = "conll"', 'format = "conll"\ndecoder = "split"'))
    out = dry_run(recipe)
    assert "step 2/3 silver (tag): run: its options changed since it ran" in out
    assert "step 3/3 ner-silver (train-task): run: results:silver/train.conll will be written again before it" in out
    bad = recipe.read_text().replace("results:silver/train.conll", "results:nothing.conll")
    recipe.write_text(bad)
    result = run_xling("run", str(recipe), "--dry-run")
    assert result.returncode == 1 and "no earlier step writes results:nothing.conll" in result.stderr


def test_a_step_reading_its_own_output_and_an_adapter_trained_twice_are_refused_by_the_dry_run(
    tmp_path, trained_workspace
):
    _, model_dir, train, dev = trained_workspace
    reads_itself = f"""
[[step]]
title = "silver"
run = "tag"
input = "results:silver.conll"
lang = "en"
no_lang_adapter = true
task_adapter = "ner-x"
output = "silver.conll"
{english_step(train, dev)}{english_step(train, dev).replace('title = "', 'title = "again ')}"""
    recipe = write_recipe(tmp_path / "loops.toml", model_dir, tmp_path / "ws", reads_itself)
    result = run_xling("run", str(recipe), "--dry-run", env={"COLUMNS": "300"})
    assert result.returncode == 1, result.stderr
    assert "step 1 (silver): key 'input': no earlier step writes results:silver.conll" in result.stderr
    assert "step 3 (again ner-en): trains the task adapter 'ner-en-nolang' again" in result.stderr
