"""The README is a newcomer's one screen, and the generated pages are what the command line and the result files
make (`python -m docs.generate`)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MISSION = ("xling train-lang qu ", "xling train-task ner --lang en", "xling tag --lang qu ")


def test_the_readme_is_short_names_no_local_folder_and_opens_with_the_mission():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200
    assert not [line for line in lines if "../shared" in line]
    first = "\n".join(lines[:80])
    assert all(command in first for command in MISSION)
    assert 'pip install -e ".[dev]" && ruff check . && ruff format --check . && pytest -q' in first


def test_the_generated_pages_are_up_to_date():
    from docs.generate import generated

    stale = [str(p.relative_to(ROOT)) for p, text in generated().items() if p.read_text(encoding="utf-8") != text]
    assert not stale, f"run python -m docs.generate: {stale}"


def test_the_results_table_follows_the_result_files(tmp_path, monkeypatch):
    import json

    import docs.generate as generate

    for file in (ROOT / "results").rglob("*.json"):
        copy = tmp_path / file.relative_to(ROOT / "results")
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_text(file.read_text())
    changed = tmp_path / "label-free-qubert-qu" / "results.json"
    data = json.loads(changed.read_text())
    label = "zero-shot Stack(qu, ner-en), qubert-qu/dev, viterbi"
    zero_shot = next(row for row in data["rows"] if row["label"] == label)
    zero_shot |= {"f1": 0.123, "f1_std": 0.016, "f1_interval": [0.1, 0.15]}
    changed.write_text(json.dumps(data))
    monkeypatch.setattr(generate, "RESULTS", tmp_path)
    table = generate.expect_table(generate.result_files())
    what = "Quechua zero-shot, no Quechua label (qubert-qu/dev), `Stack(qu, ner-en)`"
    assert f"| {what} | 12.3 ± 1.6 [10.0, 15.0] | 701 |" in table


def test_records_without_intervals_are_set_apart_on_the_results_page():
    from docs.generate import results_page

    def record(recipe: str, **score) -> dict:
        row = {"label": "zero-shot", "setup": "Stack('lang-qu', 'ner-en')", "per_seed": [{"seed": 1, "f1": 0.5}]}
        row |= {"f1": 0.5, "f1_std": 0.0, "sentences": 392, **score}
        return {"recipe": recipe, "machine": "a CPU", "xling_version": "0.1.0", "rows": [row]}

    files = {"old.json": record("old run"), "new.json": record("new run", f1_interval=[0.45, 0.55])}
    page = results_page(files)
    earlier = page.index("## Records of the earlier protocol")
    assert page.index("## new run: a CPU") < earlier < page.index("### old run: a CPU")
    assert "50.0 (seed 1) [45.0, 55.0]" in page[:earlier]
    assert "50.0 (seed 1) (no interval: earlier protocol)" in page[earlier:]
    seedless = record("seedless run", f1_interval=[0.45, 0.55])  # a recipe whose steps set their own seeds
    del seedless["rows"][0]["per_seed"]
    assert "| 50.0 | 50.0 (one run) [45.0, 55.0] | 392 |" in results_page({"soups.json": seedless})


def readme_commands() -> list[list[str]]:
    """Every `xling ...` command line the README's code blocks show (continued lines joined, comments, pipes and
    redirections aside), as its words."""
    import re
    import shlex

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = []
    for block in re.findall(r"```[a-z]*\n(.*?)```", text, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            for part in re.split(r"&&|\|", line.split("  #")[0]):
                part = part.strip().removeprefix("$ ").split(">")[0].strip()
                if part.startswith("xling "):
                    commands.append(shlex.split(part))
    return commands


GROUPS = ("models", "corpora", "analyze")  # commands whose second word is a subcommand


def test_every_command_the_readme_shows_parses_with_its_options_and_every_shipped_name_resolves():
    import re

    from typer.testing import CliRunner

    from xling.cli.app import app
    from xling.workspace import Workspace

    commands = readme_commands()
    assert len(commands) >= 15 and ["xling", "tag", "--lang", "qu", "-"] in commands
    for words in commands:
        path = words[1:3] if words[1] in GROUPS else words[1:2]
        shown = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "400"}, terminal_width=400)
        assert shown.exit_code == 0, f"{' '.join(words)}: {shown.output}"
        options = [w.split("=")[0] for w in words[len(path) + 1 :] if re.fullmatch(r"--?[a-z][a-z-]*(=.*)?", w)]
        unknown = [o for o in options if not re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", shown.output)]
        assert not unknown, f"{' '.join(words)}: {unknown} not among `xling {' '.join(path)}`'s options"
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    shipped_paragraph = text[text.index("xling ships") : text.index("They tag when")]
    named = set(re.findall(r"`((?:ner-)?[a-z]{2,3})`", shipped_paragraph))
    shipped = {name for _, name, _ in Workspace(None, "e5-small").shipped()}
    assert named == {"qu", "en", "ner-en", "ner-qu"} and named <= shipped, (named, shipped)


def test_models_list_and_the_docs_name_the_same_model_families():
    from tests.tiny import run_xling
    from xling.models.families import FAMILIES, SUPPORTED

    assert set(SUPPORTED) == {f.title for f in FAMILIES.values() if f.paths is not None}
    listing = " ".join(run_xling("models", "list", env={"COLUMNS": "400"}).stdout.split())
    docs = " ".join((Path(__file__).resolve().parents[1] / "docs" / "models.md").read_text().split())
    assert [title for title in SUPPORTED if title not in listing or title not in docs] == []
