"""`report.json` is one typed record: every run writes its role, and a report is read by its fields, or refused in
one line that names the file."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from xling.errors import XlingError
from xling.fileio import write_json_atomic
from xling.pretrained import PRETRAINED_ROOT
from xling.roles import FUSION, LANG, TASK
from xling.train.report import REPORT_FILE, RunReport


def test_every_training_run_writes_its_role_and_the_report_reads_back_as_it_was(trained_workspace):
    root, model_dir, _, _ = trained_workspace
    workspace = root / "ws" / model_dir.name
    for role, name in ((LANG, "qu"), (TASK, "ner-en")):
        file = workspace / role.name / name / REPORT_FILE
        record = json.loads(file.read_text())
        assert record["role"] == role.name and record["name"] == name
        report = RunReport.read(file.parent)
        assert report.role is role and report.to_record() == record
    assert RunReport.read(workspace / "task" / "ner-en").labels[0] == "O"


def test_the_shipped_adapters_reports_name_their_role():
    folders = sorted(p.parent for p in PRETRAINED_ROOT.glob(f"*/*/*/{REPORT_FILE}"))
    assert len(folders) == 4
    for folder in folders:
        report = RunReport.read(folder)
        assert report.role.name == folder.parent.name and report.name == folder.name and report.lang


def test_a_report_reads_its_options_back_as_its_commands_options():
    """The options a run trained with read as the command's own dataclass, the loop's settings nested in it: a
    reader takes their fields, never a default of its own."""
    from xling.adapters.bottleneck.config import BottleneckConfig
    from xling.train.config import TaskAdapterOptions
    from xling.train.text_config import LanguageAdapterOptions

    shipped = PRETRAINED_ROOT / "multilingual-e5-small"
    task = RunReport.read(shipped / "task" / "ner-qu")
    assert isinstance(task.options, TaskAdapterOptions) and task.options.init_from == "ner-en"
    assert task.options.training.epochs == 10 and task.options.training.seed == 2 and task.dev == task.options.dev
    assert task.options.adapter.kind == task.adapter_kind == "bottleneck"
    assert task.options.adapter.config == BottleneckConfig(reduction_factor=8, placement="pfeiffer")
    assert task.resolved.labels == task.labels and task.resolved.other_lang_adapters == {}
    given = replace(task, options=replace(task.options, lang_adapter="qu-wiki"))
    assert RunReport.from_record(given.to_record(), "again").options.lang_adapter == "qu-wiki"  # an option, kept
    lang = RunReport.read(shipped / "lang" / "qu")
    assert isinstance(lang.options, LanguageAdapterOptions) and lang.options.corpus == ["corpus:quechua-text"]
    assert lang.options.adapter.config.invertible and lang.options.training.max_steps == 300 and lang.dev is None


@pytest.mark.parametrize(
    "change, message",
    [
        ({"role": "language"}, "role must be one of lang, task, fusion, encoder, not 'language'"),
        ({"adapter": "qu"}, "unknown settings 'adapter'"),
        ({"steps": "ten"}, "option 'steps' takes a whole number, not 'ten'"),
        ({"options": {"kind": "task", "lang": "qu"}}, "options: expected a JSON object of a lang run's options"),
        ({"options": {"lang": "qu", "corpus": ["x"], "dropout": 1}}, "options: unknown settings 'dropout'"),
        ({"options": {"lang": "qu", "corpus": ["x"], "adapter": {"kind": "prefix"}}}, "unknown adapter kind 'prefix'"),
        ({"options": {"lang": "qu", "corpus": ["x"]}, "training": {"seed": "two"}}, "option 'seed' takes a whole"),
    ],
)
def test_a_report_of_another_shape_is_refused_in_one_line_naming_its_file(tmp_path, change, message):
    write_json_atomic(tmp_path / REPORT_FILE, {"name": "qu", "role": "lang", "steps": 10} | change)
    with pytest.raises(XlingError) as refused:
        RunReport.read(tmp_path)
    assert str(tmp_path / REPORT_FILE) in str(refused.value) and message in str(refused.value)
    assert "\n" not in str(refused.value)


def test_an_adapter_without_a_report_is_described_by_its_saved_config(tmp_path):
    for folder, config, role in (
        ("lang-qu", {"kind": "bottleneck", "name": "qu", "metadata": {"role": "language"}}, LANG),
        ("ner", {"kind": "lora", "name": "ner", "metadata": {"role": "task", "lang": "en"}}, TASK),
        ("fused", {"kind": "fusion", "name": "fused", "adapters": ["a", "b"]}, FUSION),
    ):
        (tmp_path / folder).mkdir()
        saved = {"xling_version": "0.1.0", "base_model": {"name": "tinybert", "fingerprint": {}}}
        write_json_atomic(tmp_path / folder / "xling_adapter.json", config | saved)
        report = RunReport.read(tmp_path / folder)
        assert (report.name, report.role) == (config["name"], role)
        assert RunReport.from_record(report.to_record(), "again") == report
