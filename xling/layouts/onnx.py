"""The `onnx` layout: a whole tagger, `Stack(LANG, ADAPTER)`, as one ONNX graph for ONNX Runtime
(`xling.tagging.onnx_export`), pushed as the folder the export wrote."""

from __future__ import annotations

from pathlib import Path

from xling.errors import XlingError
from xling.exporting import ExportOptions, PushOptions
from xling.names import is_hub_name, is_path
from xling.roles import FUSION
from xling.workspace import Workspace


def export(options: ExportOptions, workspace: Workspace) -> str:
    from xling.tagging.onnx_export import export_onnx
    from xling.tagging.onnx_tagger import ExportedFrom
    from xling.tagging.tagger import Tagger

    lang = options.tagger.lang
    named = not (is_path(options.adapter) or is_hub_name(options.adapter))  # a directory or Hub name: a task adapter
    fusion = options.adapter if named and workspace.adapter_dir(FUSION, options.adapter).is_dir() else None
    tagger = Tagger.load(
        options.tagger, task_adapter=None if fusion else options.adapter, fusion=fusion, precision="fp32"
    )
    check = None
    if options.check_data:
        from xling.data.sources import load_ner

        sentences = load_ner(options.check_data, "validation")
        check = ([s.tokens for s in sentences], [s.tags for s in sentences])
    source = ExportedFrom(model=options.tagger.model, lang=lang, adapter=options.adapter, fusion=bool(fusion))
    export_onnx(
        tagger, Path(options.target), int8=options.int8, check=check, overwrite=options.overwrite, source=source
    )
    return f"xling tag --runtime onnx --task-adapter {options.target} --lang {lang} FILE"


def push_folder(options: PushOptions, staging: Path) -> tuple[Path, dict[str, str]]:
    from xling.tagging.onnx_tagger import OnnxConfig, is_onnx_folder
    from xling.train.cards.common import CARD_FILE
    from xling.train.cards.onnx import onnx_card

    folder = Path(options.adapter)
    if not is_onnx_folder(folder):
        raise XlingError(
            f"{folder} is not an ONNX folder; write one with: xling export ADAPTER {folder} --format onnx --lang LANG"
        )
    return folder, {CARD_FILE: onnx_card(OnnxConfig.read(folder), options.repo_id)}
