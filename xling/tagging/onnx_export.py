"""`xling export --format onnx`: a tagger (`Stack(<lang>, <task adapter>)`, or a fusion) as one ONNX graph from
sub-word ids to logits, with dynamic batch and length, for ONNX Runtime (`OnnxTagger`, `xling tag --runtime
onnx`) or any other ONNX consumer.

The folder holds `model.onnx` (fp32, attention as ONNX's `Attention` operator), optionally `model.int8.onnx`
(dynamic int8, 7-bit weights with a scale per output channel; an FFN down-projection whose input carries massive
activations stays fp32), the tokenizer files, a `config.json` with the labels (`id2label`) and
`xling_onnx.json`: what the graph is and how it was checked. On export the graphs run on check sentences beside
the PyTorch tagger, in padded batches as tagging runs them: fp32 must agree within `FP32_TOLERANCE`; int8's tag
agreement (and F1, with labelled check data) is recorded.
"""

from __future__ import annotations

import json
import logging
import warnings
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch

from xling import __version__
from xling.data.fingerprints import trained_on, write_fingerprints
from xling.errors import XlingError
from xling.fileio import atomic_directory, write_json_atomic
from xling.tagging.align import Window, length_batches, padded
from xling.tagging.onnx_tagger import (
    CONFIG_FILE,
    GRAPH_FILES,
    ExportChecks,
    ExportedFrom,
    OnnxConfig,
    OnnxTagger,
    import_onnxruntime,
)
from xling.tagging.predict import max_window, pad_batch, tagger_windows

FP32_TOLERANCE = 1e-4  # largest difference of a logit, fp32 graph against PyTorch
OPSET = 23  # the first with an Attention operator
MASSIVE = 2  # an FFN down-projection input peaking at this many times the layers' median peak stays fp32 in int8
# Sentences the graphs are checked on when no check data is given: a few languages, short and long.
CHECK_SENTENCES = [
    "Machu Picchu llaqtaqa Perú suyupi , Cusco nisqapi kachkan .",
    "Túpac Amaru II nisqaqa 1780 watapi Tinta llaqtapi hatarirqan .",
    "Barack Obama visited Berlin with Angela Merkel in July .",
    "La Universidad Nacional Mayor de San Marcos está en Lima , la capital del Perú .",
    "Qhapaq Ñan nisqaqa Inka Wiraqucha pachapi ruwasqa karqan , Ecuador , Bolivia , Chile , Argentina "
    "suyukunapi ima tarikun , UNESCO nisqataq 2014 watapi Pachantin Kawsay Sapsi nisqaman churarqan .",
]
CHECK_WORDS = [sentence.split() for sentence in CHECK_SENTENCES]


@contextmanager
def quiet(logger: str | None):
    """A logger (None: the root logger) at ERROR meanwhile, then as it was."""
    target = logging.getLogger(logger)
    level = target.level
    target.setLevel(logging.ERROR)
    try:
        yield
    finally:
        target.setLevel(level)


class TaggingGraph(torch.nn.Module):
    """The exported function: sub-word ids and mask -> the head's logits (one pass, no row splitting)."""

    def __init__(self, model, head: str):
        super().__init__()
        self.model, self.head = model, model.heads[head]

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        rows = {}
        if self.model.family.rotary:
            rows["position_ids"] = torch.arange(input_ids.shape[1], device=input_ids.device).expand_as(input_ids)
        return self.head(self.model(input_ids=input_ids, attention_mask=attention_mask, split_rows=False, **rows))


def write_graph(tagger, path: Path) -> None:
    """The tagger's fp32 graph, dynamic in batch and length, exported by torch's ONNX exporter. Attention is
    exported as Transformers' SDPA, which opset 23 writes as one `Attention` operator per layer: ONNX Runtime
    runs it as one kernel, faster on CPUs than eager attention even after ONNX Runtime's offline transformer
    fusions, which only slow this graph down (its session fuses what it can). Models without SDPA (DeBERTa)
    export their eager attention."""
    ids = torch.tensor([[tagger.tokenizer.cls_token_id, 5, 6, 7, tagger.tokenizer.sep_token_id]] * 2)
    batch, length = torch.export.Dim("batch"), torch.export.Dim("length", max=512)
    encoder = tagger.model.encoder
    attention = getattr(encoder.config, "_attn_implementation", None)  # None: the light encoder, SDPA always
    if attention is not None:
        encoder.set_attn_implementation("sdpa" if encoder._supports_sdpa else "eager")
    try:
        # the exporter's notes on optional packages (torchvision) and on its own internals
        with quiet("torch.onnx"), warnings.catch_warnings(), torch.inference_mode(False), torch.no_grad():
            warnings.filterwarnings("ignore", category=UserWarning)
            warnings.filterwarnings("ignore", category=DeprecationWarning)
            warnings.filterwarnings("ignore", category=FutureWarning)
            program = torch.onnx.export(
                TaggingGraph(tagger.model, tagger.head).eval(),
                (ids, torch.ones_like(ids)),
                input_names=["input_ids", "attention_mask"],
                output_names=["logits"],
                dynamic_shapes=({0: batch, 1: length}, {0: batch, 1: length}),
                opset_version=OPSET,
                dynamo=True,
                verbose=False,
            )
    finally:
        if attention is not None:
            encoder.set_attn_implementation(attention)
    program.save(str(path), external_data=False)


def weighted_matmuls(graph) -> list[tuple]:
    """(node, weight shape) of each MatMul by a 2-D weight of the graph."""
    shapes = {weight.name: tuple(weight.dims) for weight in graph.initializer}
    return [
        (node, shapes[node.input[1]])
        for node in graph.node
        if node.op_type == "MatMul" and len(shapes.get(node.input[1], ())) == 2
    ]


def down_projections(graph, hidden_size: int) -> list:
    """The encoder's FFN down-projections: MatMuls whose weight takes a wider input back to the hidden size."""
    return [node for node, (rows, columns) in weighted_matmuls(graph) if rows > columns >= hidden_size]


def massive_inputs(source: Path, hidden_size: int, ids: np.ndarray, mask: np.ndarray) -> list[str]:
    """The FFN down-projections whose input on `ids` (the built-in check sentences) peaks at `MASSIVE` times
    the layers' median peak or more (the "massive activations" of a few channels and tokens). Dynamic int8 takes
    one scale per tensor, so such an input leaves its other values a few levels: these MatMuls stay fp32."""
    import onnx

    ort = import_onnxruntime()
    model = onnx.load(str(source))
    nodes = down_projections(model.graph, hidden_size)
    if len(nodes) < 2:
        return []
    model.graph.output.extend(
        onnx.helper.make_tensor_value_info(node.input[0], onnx.TensorProto.FLOAT, None) for node in nodes
    )
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    values = session.run([node.input[0] for node in nodes], {"input_ids": ids, "attention_mask": mask})
    peaks = [float(np.abs(value[mask.astype(bool)]).max()) for value in values]
    return [node.name for node, peak in zip(nodes, peaks) if peak >= MASSIVE * float(np.median(peaks))]


def quantise(source: Path, target: Path, hidden_size: int, keep_fp32: list[str]) -> None:
    """Dynamic int8 of the encoder's matrix multiplies (weights of at least the hidden size on both sides) but
    `keep_fp32`: int8 weights with a scale per output channel, activations quantised on the fly. The adapters
    and the head stay fp32: they are small, and the adapters are what the language and task changed. Weights
    take 7 bits (`reduce_range`): CPUs without VNNI (AVX2 only) add pairs of uint8 × int8 products in 16 bits,
    which full 8-bit weights overflow (on e5-small, layer 0's up-projection alone then changed 4% of tags)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    graph = onnx.load(str(source)).graph
    encoder = [
        node.name for node, shape in weighted_matmuls(graph) if min(shape) >= hidden_size and node.name not in keep_fp32
    ]
    with quiet(None):  # its advice to pre-process, meant for image models, goes to the root logger
        quantize_dynamic(
            str(source),
            str(target),
            per_channel=True,
            reduce_range=True,
            weight_type=QuantType.QInt8,
            nodes_to_quantize=encoder,
        )


def calibration_batch(tagger) -> tuple[np.ndarray, np.ndarray]:
    """`CHECK_SENTENCES` as one padded batch of sub-word ids and mask (the same whatever the check data)."""
    return padded(tagger_windows(tagger, CHECK_WORDS), tagger.tokenizer.pad_token_id)


def torch_logits(tagger, windows: list[Window]) -> list[np.ndarray]:
    """Per window, the PyTorch tagger's fp32 logits of its real sub-tokens (windows of similar length batched)."""
    logits: list = [None] * len(windows)
    head = tagger.model.heads[tagger.head]
    with torch.inference_mode():
        for batch in length_batches(windows, tagger.batch_size):
            ids, mask = pad_batch([windows[i] for i in batch], tagger.tokenizer.pad_token_id, "cpu")
            out = head(tagger.model(input_ids=ids, attention_mask=mask)).float().numpy()
            for row, index in enumerate(batch):
                logits[index] = out[row, : len(windows[index].input_ids)]
    return logits


def check_graphs(directory: Path, tagger, sentences: list[list[str]], gold: list[list[str]] | None) -> ExportChecks:
    """Run the written graphs beside `tagger` (PyTorch, fp32): the fp32 graph's largest logit difference, the
    int8 graph's tag agreement, and F1 of each with `gold` tags."""
    fp32 = OnnxTagger(directory, precision="fp32", batch_size=tagger.batch_size)
    windows = tagger_windows(tagger, sentences)
    graph = []
    for start in range(0, len(windows), tagger.batch_size):  # in input order: mixed lengths, so padding
        part = windows[start : start + tagger.batch_size]
        logits = fp32.logits(part)
        graph += [logits[i, : len(w.input_ids)] for i, w in enumerate(part)]
    difference = max(float(np.abs(a - b).max()) for a, b in zip(torch_logits(tagger, windows), graph))
    checks = ExportChecks(len(sentences), difference)
    reference = tagger.tag_words(sentences)
    tagged = {"torch-fp32": reference, "onnx-fp32": fp32.tag_words(sentences)}
    if (directory / GRAPH_FILES["int8"]).is_file():
        tagged["onnx-int8"] = OnnxTagger(directory, precision="int8", batch_size=tagger.batch_size).tag_words(sentences)
        pairs = [(a[0], b[0]) for x, y in zip(reference, tagged["onnx-int8"]) for a, b in zip(x, y)]
        checks.int8_tag_agreement = round(sum(a == b for a, b in pairs) / max(len(pairs), 1), 5)
    if gold is not None:
        from seqeval.metrics import f1_score

        for name, predicted in tagged.items():
            checks.f1[name] = round(float(f1_score(gold, [[t for t, _ in s] for s in predicted])), 5)
    return checks


def export_onnx(
    tagger,
    target: Path,
    *,
    int8: bool = False,
    check: tuple[list[list[str]], list[list[str]] | None] | None = None,
    overwrite: bool = False,
    source: ExportedFrom | None = None,
) -> OnnxConfig:
    """Write `tagger` (a PyTorch `Tagger`, fp32) as an ONNX folder at `target`, whole or not at all; `check`:
    (sentences, their gold tags or None) to check the graphs on (default: `CHECK_SENTENCES`); `source`: what it
    was exported from, as named (recorded for its card)."""
    import_onnxruntime()
    with atomic_directory(Path(target), overwrite=overwrite, replaces=(CONFIG_FILE,)) as staging:
        encoder_config = tagger.model.encoder.config
        write_graph(tagger, staging / GRAPH_FILES["fp32"])
        keep_fp32 = []
        if int8:
            fp32, hidden_size = staging / GRAPH_FILES["fp32"], encoder_config.hidden_size
            keep_fp32 = massive_inputs(fp32, hidden_size, *calibration_batch(tagger))
            quantise(fp32, staging / GRAPH_FILES["int8"], hidden_size, keep_fp32)
        tagger.tokenizer.save_pretrained(str(staging))
        if (prints := trained_on(getattr(tagger, "trained_from", []))) is not None:
            write_fingerprints(staging, prints)
        labels = tagger.labels
        hf_config = encoder_config.to_dict() | {"id2label": dict(enumerate(labels))}
        hf_config["label2id"] = {label: i for i, label in enumerate(labels)}
        (staging / "config.json").write_text(json.dumps(hf_config, indent=1) + "\n")
        config = OnnxConfig(
            labels=labels,
            head=tagger.head,
            decoder=tagger.decoder,
            max_window=max_window(tagger.model, tagger.tokenizer),
            pad_token_id=tagger.tokenizer.pad_token_id,
            setup=str(tagger.setup),
            precisions=["fp32", "int8"] if int8 else ["fp32"],
            xling_version=__version__,
            opset=OPSET,
            int8_fp32_nodes=keep_fp32,
            source=source or ExportedFrom(),
        )
        write_json_atomic(staging / CONFIG_FILE, asdict(config))
        sentences, gold = check or (CHECK_WORDS, None)
        checks = check_graphs(staging, tagger, sentences, gold)
        if checks.fp32_max_logit_difference > FP32_TOLERANCE:
            raise XlingError(
                f"the exported graph's logits differ from xling's by up to {checks.fp32_max_logit_difference:.2g} "
                f"(more than {FP32_TOLERANCE:g}); nothing written"
            )
        config.checks = checks
        write_json_atomic(staging / CONFIG_FILE, asdict(config))
    return config
