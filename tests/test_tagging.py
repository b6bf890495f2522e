"""Tagging raw text: words and offsets, spans, the Tagger API and the tag command."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import threading
import time
from itertools import repeat

import numpy as np
import pytest
from rich.console import Console

from tests.tiny import run_xling
from xling import Tagger
from xling.cli.progress import counted_bar
from xling.data.iob2 import entities
from xling.errors import XlingError
from xling.tagging import align
from xling.tagging.align import Window, length_batches
from xling.tagging.base import Span, TaggedText, spans_from_tags
from xling.tagging.output import KNOWN, PALETTE, colour, render, to_html
from xling.tagging.predict import predict_probabilities
from xling.tagging.reading import ready_chunks
from xling.tagging.words import split_sentences, tokenize


def test_words_keep_quechua_apostrophes_and_offsets():
    text = "Tayta Inti p'unchawpi k'anchan, mamaqa ch'aki q’umir wayk'un 3,5 km."
    tokens = tokenize(text)
    assert [t.text for t in tokens] == [
        "Tayta",
        "Inti",
        "p'unchawpi",
        "k'anchan",
        ",",
        "mamaqa",
        "ch'aki",
        "q’umir",
        "wayk'un",
        "3,5",
        "km",
        ".",
    ]
    assert all(text[t.start : t.end] == t.text for t in tokens)
    assert [t.text for t in tokenize("¿Imaynallam kachkanki?")] == ["¿", "Imaynallam", "kachkanki", "?"]


def test_sentence_split_keeps_offsets():
    text = "Qusqu llaqtapi tiyani. Lima hatun llaqtam! ¿Imaynallam? 2024 watapi."
    spans = split_sentences(text)
    assert [text[a:b] for a, b in spans] == [
        "Qusqu llaqtapi tiyani.",
        "Lima hatun llaqtam!",
        "¿Imaynallam?",
        "2024 watapi.",
    ]


def test_spans_from_tags():
    text = "Juan Perez Qusqupi"
    tokens = tokenize(text)
    spans = spans_from_tags(text, tokens, ["B-PER", "I-PER", "B-LOC"], [0.9, 0.7, 0.6])
    assert [(s.text, s.label, s.start, s.end, s.score) for s in spans] == [
        ("Juan Perez", "PER", 0, 10, 0.8),
        ("Qusqupi", "LOC", 11, 18, 0.6),
    ]


@pytest.fixture(scope="module")
def tagger(trained_workspace):
    root, model_dir, _, _ = trained_workspace
    return Tagger.load(lang="qu", task="ner", task_adapter="ner-en", model=str(model_dir), workspace=str(root / "ws"))


def test_task_adapter_resolution(tmp_path):
    from xling.workspace import Workspace

    # the embedded model's empty workspace: the shipped ner-qu, else ner-en; nothing is shipped for another model
    assert Workspace(str(tmp_path / "embedded"), "e5-small").task_adapter_name("ner", "qu") == "ner-qu"
    assert Workspace(str(tmp_path / "embedded"), "e5-small").task_adapter_name("ner", "es") == "ner-en"
    workspace = Workspace(str(tmp_path), "org/another-model")
    tasks = workspace.model_dir / "task"
    with pytest.raises(XlingError, match="no ner-qu or ner-en task adapter .* xling ships none for org/another-model"):
        workspace.task_adapter_name("ner", "qu", None)
    (tasks / "ner-lora").mkdir(parents=True)  # a stray experiment, the only adapter there is: never the default
    with pytest.raises(XlingError, match="name one with -t"):
        workspace.task_adapter_name("ner", "qu", None)
    (tasks / "ner-en").mkdir()
    assert workspace.task_adapter_name("ner", "qu", None) == "ner-en"  # zero-shot from English
    (tasks / "ner-qu").mkdir()
    assert workspace.task_adapter_name("ner", "qu", None) == "ner-qu"  # trained on the language itself
    assert workspace.task_adapter_name("ner", "qu", "ner-es") == "ner-es"


def test_tagger_api(tagger):
    assert repr(tagger.setup) == "Stack('lang-qu', 'ner-en')"  # zero-shot: ner-en under the Quechua adapter
    spans = tagger("juan lima the city of qusqu")
    assert spans and all(s.label in {"PER", "LOC"} and 0 < s.score <= 1 for s in spans)
    assert all("juan lima the city of qusqu"[s.start : s.end] == s.text for s in spans)
    assert tagger(["juan lima the city of qusqu", "maria of peru"]) == [spans, tagger("maria of peru")]
    first = spans[0].to_dict()
    assert first == {
        "entity_group": spans[0].label,
        "score": spans[0].score,
        "word": spans[0].text,
        "start": spans[0].start,
        "end": spans[0].end,
    }
    streamed = list(tagger.pipe(["juan lima", "", "runa " * 400 + "maria"], batch_size=2))
    assert [r.text for r in streamed] == ["juan lima", "", "runa " * 400 + "maria"]
    assert streamed[1].spans == [] and len(streamed[2].tags) == 401  # long line: windowed, nothing dropped
    texts = [f"juan {'runa ' * n}lima" for n in range(40)]  # reads of 16 model batches: same tags as one call
    assert [r.tags for r in tagger.pipe(texts)] == [r.tags for r in tagger.tag_texts(texts)]
    with pytest.raises(XlingError, match="batch-size must be at least 1"):
        next(tagger.pipe(texts, batch_size=0))


def test_length_batches_keep_both_the_batch_size_and_the_token_cap():
    lengths = (5, 300, 7, 6, 40, 8, 600)
    windows = [Window(0, [1] * n, [-1] * n) for n in lengths]
    assert length_batches(windows, 3) == [[0, 3, 2], [5, 4, 1], [6]]  # sorted by length, 3 at most
    # capped at 100 padded tokens: 3 x 7 fits, 3 x 300 does not; a window longer than the cap goes alone
    assert length_batches(windows, 3, max_tokens=100) == [[0, 3, 2], [5, 4], [1], [6]]


def test_token_cap_changes_the_batches_not_the_predictions(trained_workspace, monkeypatch):
    root, model_dir, _, _ = trained_workspace
    tagger = Tagger.load(
        lang="qu", task_adapter="ner-en", model=str(model_dir), workspace=str(root / "ws"), device="cpu"
    )
    sentences = [("runa " * n + "juan lima").split() for n in (1, 30, 2, 12, 60, 3)]
    forwards = []
    hook = tagger.model.register_forward_hook(lambda module, args, output: forwards.append(1))
    whole = predict_probabilities(tagger.model, tagger.tokenizer, sentences, tagger.head, batch_size=8)
    assert len(forwards) == 1  # all six in one batch
    monkeypatch.setattr(align, "CPU_MAX_TOKENS", 64)
    capped = predict_probabilities(tagger.model, tagger.tokenizer, sentences, tagger.head, batch_size=8)
    hook.remove()
    assert len(forwards) > 3  # at least three batches under the cap
    assert all(a.shape == b.shape and np.allclose(a, b, atol=1e-5) for a, b in zip(whole, capped))


def test_html_is_self_contained_with_legend(tagger):
    page = to_html(tagger.tag_texts(["juan lima the city", "maria of peru"]))
    assert page.startswith("<!doctype html>") and "<mark" in page and 'class="legend"' in page
    assert "http://" not in page and "https://" not in page and "<script" not in page


def test_pretty_output_marks_entities_without_colour():
    text = "Túpac Amaru llaqtapi, Qusqu"
    spans = [Span(0, 11, "Túpac Amaru", "PER", 0.9), Span(22, 27, "Qusqu", "LOC", 0.8)]
    results = [TaggedText(text, [], [], [], spans), TaggedText("", [], [], [], [])]
    assert render(results, "pretty") == "[Túpac Amaru](PER) llaqtapi, [Qusqu](LOC)\n\n"


def run_tag(trained_workspace, *args, stdin=None):
    root, model_dir, _, _ = trained_workspace
    return run_xling("tag", *args, "--model", model_dir, "-w", root / "ws", input=stdin)


@pytest.mark.slow
def test_jsonl_records_carry_their_id_or_line_and_a_long_line_comes_back_whole(trained_workspace, tmp_path):
    records = tmp_path / "in.jsonl"
    rows = [{"id": "doc-7", "text": "juan lima the city", "source": "wiki"}, {"text": "maria of peru"}]
    records.write_text("\n".join(json.dumps(r) for r in rows) + "\n\n", encoding="utf-8")
    done = run_tag(trained_workspace, str(records), "--lang", "qu", "--jsonl", "-f", "jsonl")
    assert done.returncode == 0, done.stderr
    out = [json.loads(line) for line in done.stdout.splitlines()]
    assert list(out[0]) == ["id", "text", "entities", "source"] and out[0]["id"] == "doc-7"
    assert out[0]["source"] == "wiki" and out[1]["line"] == 2 and out[1]["text"] == "maria of peru"
    long_line = " ".join(["juan lima the city of qusqu maria of peru"] * 400)  # over 10,000 characters
    plain = tmp_path / "in.txt"
    plain.write_text(f"runa wasi\n{long_line}\n", encoding="utf-8")
    done = run_tag(trained_workspace, str(plain), "--lang", "qu", "-f", "jsonl")
    out = [json.loads(line) for line in done.stdout.splitlines()]
    assert [r["line"] for r in out] == [1, 2] and out[1]["text"] == long_line  # one record, not three pieces
    assert out[1]["entities"] and all(long_line[e["start"] : e["end"]] == e["word"] for e in out[1]["entities"])
    assert max(e["start"] for e in out[1]["entities"]) > 10_000  # offsets into the line, not into a piece
    book = " ".join(["juan lima the city of qusqu maria of peru"] * 1700)  # over 64 KiB: read in pieces
    (tmp_path / "book.txt").write_text(f"{book}\nruna\n", encoding="utf-8")
    (tmp_path / "book.jsonl").write_text(json.dumps({"id": "b", "text": book}) + "\n", encoding="utf-8")
    for source, given in (("book.txt", []), ("book.jsonl", ["--jsonl"])):  # into a file: tagged block by block
        done = run_tag(trained_workspace, tmp_path / source, "--lang", "qu", *given, "-o", tmp_path / f"{source}.jsonl")
        assert done.returncode == 0, done.stderr
        out = [json.loads(line) for line in (tmp_path / f"{source}.jsonl").read_text().splitlines()]
        assert out[0]["text"] == book and len(out) == (1 if given else 2) and out[0]["entities"][-1]["end"] > 65_536
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "juan"}\n{"id": 3}\n', encoding="utf-8")
    refused = run_tag(trained_workspace, str(bad), "--lang", "qu", "--jsonl")
    assert refused.returncode == 1 and refused.stderr.strip().splitlines()[-1] == (
        f'error: {bad}:2: a JSON record needs "text", a string (and may have "id")'
    )


@pytest.mark.slow
def test_tag_command_formats(trained_workspace, tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("juan lima the city\n\nmaria of peru. runa wasi qusqu\n", encoding="utf-8")
    jsonl = run_tag(trained_workspace, str(source), "--lang", "qu", "-f", "jsonl")
    assert jsonl.returncode == 0, jsonl.stderr
    rows = [json.loads(line) for line in jsonl.stdout.splitlines()]
    assert [r["text"] for r in rows] == ["juan lima the city", "", "maria of peru. runa wasi qusqu"]
    conll = run_tag(trained_workspace, "-", "--lang", "qu", "-f", "conll", "--paragraphs", stdin=source.read_text())
    assert conll.returncode == 0 and conll.stdout.splitlines()[0].split("\t")[0] == "juan"
    pre = tmp_path / "pre.conll"
    pre.write_text("juan\nlima\n\nmaria\n")
    tokens = run_tag(trained_workspace, str(pre), "--lang", "qu", "--conll", "-f", "jsonl")
    assert [json.loads(line)["text"] for line in tokens.stdout.splitlines()] == ["juan lima", "maria"]
    out = tmp_path / "out.html"
    page = run_tag(trained_workspace, str(source), "--lang", "qu", "-f", "html", "-o", str(out))
    assert page.returncode == 0 and out.read_text().startswith("<!doctype html>")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.txt", "out.html", "pre.conll"]  # no temporary left


def test_conll_input_keeps_its_columns_and_skips_document_markers(trained_workspace, tmp_path):
    """`tag --conll` as other tools write CoNLL: `-DOCSTART-` is no sentence, and each line comes back with every
    column it had (POS, a gold tag) and the predicted tag after them, to standard output and into a file alike."""
    given = tmp_path / "given.conll"
    given.write_text(
        "-DOCSTART- -X- O O\n\njuan NNP B-PER\nlima NNP B-LOC\n\n-DOCSTART- -X- O O\n\nqu:maria NNP B-PER\n",
        encoding="utf-8",
    )
    streamed = run_tag(trained_workspace, str(given), "--lang", "qu", "--conll", "-f", "conll")
    assert streamed.returncode == 0, streamed.stderr
    written = tmp_path / "tagged.conll"
    into_file = run_tag(trained_workspace, str(given), "--lang", "qu", "--conll", "-o", str(written))
    assert into_file.returncode == 0, into_file.stderr
    for text in (streamed.stdout, written.read_text(encoding="utf-8")):
        sentences = [[line.split("\t") for line in block.splitlines()] for block in text.strip("\n").split("\n\n")]
        assert [[row[:3] for row in rows] for rows in sentences] == [
            [["juan", "NNP", "B-PER"], ["lima", "NNP", "B-LOC"]],
            [["qu:maria", "NNP", "B-PER"]],
        ]
        assert all(
            len(row) == 4 and (row[3] == "O" or row[3][:2] in ("B-", "I-")) for rows in sentences for row in rows
        )
    jsonl = run_tag(trained_workspace, str(given), "--lang", "qu", "--conll", "-f", "jsonl")
    assert [json.loads(line)["text"] for line in jsonl.stdout.splitlines()] == ["juan lima", "maria"]


def test_tag_streams_results_before_its_input_ends(trained_workspace):
    root, model_dir, _, _ = trained_workspace
    command = [sys.executable, "-m", "xling", "tag", "-", "--lang", "qu", "-f", "jsonl"]  # batches of 32
    command += ["--model", str(model_dir), "-w", str(root / "ws")]
    with subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as tagging:
        watchdog = threading.Timer(120, tagging.kill)  # a tag that waits for more input never answers
        watchdog.start()
        tagging.stdin.write("juan lima\n")
        tagging.stdin.flush()  # and left open: one line of a batch of 32, and the input has not ended
        first = json.loads(tagging.stdout.readline())["text"]
        tagging.stdin.write("maria of peru\nruna wasi\n")
        tagging.stdin.close()
        rest = [json.loads(line)["text"] for line in tagging.stdout]
        watchdog.cancel()
    assert first == "juan lima" and rest == ["maria of peru", "runa wasi"] and tagging.returncode == 0


def test_ready_chunks_take_what_has_come_and_pass_errors_on_in_order():
    assert list(ready_chunks(range(7), iter([2, 2, 4]), ahead=8)) == [[0, 1], [2, 3], [4, 5, 6]]

    def slow():
        yield "a"
        time.sleep(0.5)  # a chunk of 10 does not wait for this
        yield "b"
        raise XlingError("<stdin>:3: not UTF-8 text")

    chunks = ready_chunks(slow(), repeat(10), ahead=4)
    assert next(chunks) == ["a"] and next(chunks) == ["b"]
    with pytest.raises(XlingError, match="stdin>:3"):
        next(chunks)


def test_counted_bar_passes_everything_through_and_counts_its_units_with_rate_and_time_left():
    shown = io.StringIO()
    console = Console(file=shown, force_terminal=True, width=120)
    blocks = [["a", "b"], ["c"], ["d", "e", "f"]]
    assert list(counted_bar(iter(blocks), 6, "tagging", console, "lines", len)) == blocks
    assert all(part in shown.getvalue() for part in ("6/6", "lines,", "lines/s", "left"))


@pytest.mark.parametrize("output", [None, "out.jsonl"])
def test_tagging_a_file_counts_its_lines_whether_streamed_or_in_blocks(trained_workspace, tmp_path, output):
    """600 lines are 600 on the bar: streamed to standard output result by result, and into a file block by block
    (two blocks of up to 512), each block counted by its lines."""
    from xling.tagging.files import tag_file
    from xling.tagging.options import TagOptions
    from xling.tagging.spec import TaggerSpec

    root, model_dir, _, _ = trained_workspace
    source = tmp_path / "in.txt"
    source.write_text("".join(f"juan lima {i}\n" for i in range(600)), encoding="utf-8")
    spec = TaggerSpec(lang="qu", model=str(model_dir), workspace=str(root / "ws"))
    target = str(tmp_path / output) if output else None
    seen = []

    def progress(items, total, unit, size):
        for item in items:
            seen.append(size(item))
            yield item
        seen.append((total, unit))

    quiet = Console(file=io.StringIO())
    tag_file(TagOptions(input=str(source), output=target, format="jsonl", tagger=spec), quiet, progress)
    assert seen[-1] == (600, "lines") and sum(seen[:-1]) == 600
    assert len(seen) - 1 == (2 if output else 600)


def test_the_python_api_shows_no_transformers_bar_and_leaves_its_setting_as_it_was(trained_workspace, capfd):
    from transformers.utils import logging

    root, model_dir, _, _ = trained_workspace
    logging.enable_progress_bar()
    Tagger.load(lang="qu", model=str(model_dir), workspace=str(root / "ws"))
    said = capfd.readouterr()
    assert "Loading weights" not in said.err + said.out and "%|" not in said.err
    assert logging.is_progress_bar_enabled()


def test_badge_colours_meet_wcag_aa_with_white_text():
    def luminance(colour: str) -> float:
        channels = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
        linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]

    assert all((1.05 / (luminance(c) + 0.05)) >= 4.5 for c in PALETTE)
    assert colour("DATE") == colour("DATE") in PALETTE[len(KNOWN) :]  # other types: stable, not a known type's


@pytest.mark.parametrize(
    "case, expected",
    [
        ("missing-lang", "no language adapter for 'de'"),
        ("missing-task", "no task adapter 'ner-xx'"),
        ("bad-input", "not UTF-8"),
    ],
)
def test_tag_errors_write_no_output(trained_workspace, tmp_path, case, expected):
    source = tmp_path / "in.txt"
    source.write_bytes(b"juan \xff lima\n" if case == "bad-input" else b"juan lima\n")
    args = {
        "missing-lang": ["--lang", "de"],
        "missing-task": ["--lang", "qu", "-t", "ner-xx"],
        "bad-input": ["--lang", "qu"],
    }[case]
    result = run_tag(trained_workspace, str(source), *args, "-o", str(tmp_path / "out.jsonl"), "-f", "jsonl")
    assert result.returncode == 1 and expected in result.stderr.strip().splitlines()[-1]
    assert not (tmp_path / "out.jsonl").exists()
    if case == "missing-lang":
        assert "xling train-lang de" in result.stderr


def test_adapter_of_another_base_model_is_refused(trained_workspace, tmp_path):
    from tests.tiny import save_tiny_model

    other = save_tiny_model("bert", tmp_path / "tinybert", seed=7)
    root = trained_workspace[0]
    source = tmp_path / "in.txt"
    source.write_text("juan lima\n")
    result = run_xling(
        "tag",
        source,
        "--lang",
        "qu",
        "--model",
        other,
        "-w",
        root / "ws",
        "-o",
        tmp_path / "out.txt",
    )
    assert result.returncode == 1 and "does not fit" in result.stderr and not (tmp_path / "out.txt").exists()


def test_pretokenised_sentences_keep_their_tokens(tagger):
    sentences = [["juan", "lima", "the", "city"], ["maria"]]
    tagged = tagger.tag_tokens(sentences)
    assert [r.text for r in tagged] == ["juan lima the city", "maria"]
    assert [[t.text for t in r.tokens] for r in tagged] == sentences
    assert [r.tags for r in tagged] == [[tag for tag, _ in s] for s in tagger.tag_words(sentences)]
    assert all(r.text[s.start : s.end] == s.text for r in tagged for s in r.spans)


def test_tagger_spacy_component_and_command_give_the_same_entities(trained_workspace, tagger, tmp_path):
    spacy = pytest.importorskip("spacy")  # the optional extra: pip install xling[spacy]
    root, model_dir, _, _ = trained_workspace
    texts = ["juan lima the city of qusqu", "maria of peru", "runa wasi qusqu llaqtapi"]
    source = tmp_path / "in.txt"
    source.write_text("\n".join(texts) + "\n", encoding="utf-8")
    command = run_tag(trained_workspace, str(source), "--lang", "qu", "-t", "ner-en", "-f", "jsonl")
    from_command = [
        [(e["start"], e["end"], e["entity_group"]) for e in json.loads(row)["entities"]]
        for row in command.stdout.splitlines()
    ]
    from_api = [[(s.start, s.end, s.label) for s in spans] for spans in tagger(texts)]
    nlp = spacy.blank("xx")
    config = {"lang": "qu", "task_adapter": "ner-en", "model": str(model_dir), "workspace": str(root / "ws")}
    nlp.add_pipe("xling_ner", config=config)  # found through the spacy_factories entry point
    from_spacy = [[(e.start_char, e.end_char, e.label_) for e in doc.ents] for doc in nlp.pipe(texts)]
    assert any(from_command) and from_command == from_api == from_spacy
    assert [[(e.start_char, e.end_char, e.label_) for e in nlp(texts[0]).ents]] == from_spacy[:1]


FORKED = """
import json, spacy
nlp = spacy.blank("xx")
nlp.add_pipe("xling_ner", config={"lang": "qu"})  # the embedded default with the shipped adapters
texts = ["Qusqu llaqtaqa Peru suyupi kachkan.", "Tupac Amaru Tinta llaqtapi paqarirqan.", "Lima", "Juan Qusqupi"]
alone = [[(e.start_char, e.end_char, e.label_) for e in doc.ents] for doc in nlp.pipe(texts)]  # loads it here
two = [[(e.start_char, e.end_char, e.label_) for e in doc.ents] for doc in nlp.pipe(texts, n_process=2)]
print(json.dumps([alone, two]))
"""


def test_a_pipeline_whose_tagger_loaded_before_tags_in_two_processes(tmp_path):
    pytest.importorskip("spacy")
    import os
    import signal

    # forked after the tagger computed, each child hung in the parent's thread pools until killed
    started = subprocess.Popen(
        [sys.executable, "-c", FORKED], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
        start_new_session=True,  # its workers are killed with it
        env={**os.environ, "OMP_NUM_THREADS": str(max(2, os.cpu_count() or 2))},  # a thread pool to inherit
    )  # fmt: skip
    try:
        out, err = started.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(started.pid, signal.SIGKILL)
        raise
    assert started.returncode == 0, err[-2000:]
    alone, two = json.loads(out.splitlines()[-1])
    assert any(alone) and two == alone


def spacy_pipeline(trained_workspace, *before: str, **settings):
    """A blank pipeline with `before` components ahead of `xling_ner` (an entity ruler, a sentencizer)."""
    spacy = pytest.importorskip("spacy")
    root, model_dir, _, _ = trained_workspace
    nlp = spacy.blank("xx")
    for name in before:
        component = nlp.add_pipe(name)
        if name == "entity_ruler":
            component.add_patterns(RULES)
    config = {"lang": "qu", "task_adapter": "ner-en", "model": str(model_dir), "workspace": str(root / "ws")}
    nlp.add_pipe("xling_ner", config=config | settings)
    return nlp


RULED = "juan lima the city of qusqu maria of peru"
RULES = [{"label": "NAME", "pattern": "juan"}, {"label": "CITY", "pattern": "lima"}]  # xling tags juan, not lima


def entity_list(doc) -> list[tuple[str, str]]:
    return [(e.text, e.label_) for e in doc.ents]


def test_a_ruler_before_xling_keeps_its_entities_and_xling_adds_the_others(trained_workspace):
    alone = entity_list(spacy_pipeline(trained_workspace)(RULED))
    assert ("juan", "PER") in alone and ("maria", "PER") in alone and not any(t == "lima" for t, _ in alone)
    ruled = entity_list(spacy_pipeline(trained_workspace, "entity_ruler")(RULED))
    assert ruled == [("juan", "NAME"), ("lima", "CITY")] + [e for e in alone if e[0] != "juan"]
    replaced = entity_list(spacy_pipeline(trained_workspace, "entity_ruler", overwrite_ents=True)(RULED))
    assert replaced == [("juan", "PER"), ("lima", "CITY")] + [e for e in alone if e[0] != "juan"]


def test_a_ruler_after_xling_adds_beside_its_entities_or_overwrites_them(trained_workspace):
    nlp = spacy_pipeline(trained_workspace)
    alone = entity_list(nlp(RULED))
    ruler = nlp.add_pipe("entity_ruler", last=True)
    ruler.add_patterns(RULES)
    assert entity_list(nlp(RULED)) == [("juan", "PER"), ("lima", "CITY")] + [e for e in alone if e[0] != "juan"]
    ruler.overwrite = True
    assert entity_list(nlp(RULED)) == [("juan", "NAME"), ("lima", "CITY")] + [e for e in alone if e[0] != "juan"]


def test_an_earlier_entity_equal_to_one_of_xlings_keeps_its_own_score_none(trained_workspace):
    alone = spacy_pipeline(trained_workspace)(RULED)
    juan = next(e for e in alone.ents if e.text == "juan")
    assert juan.label_ == "PER" and juan._.score is not None  # xling's own, scored
    nlp = spacy_pipeline(trained_workspace)
    ruler = nlp.add_pipe("entity_ruler", first=True)
    ruler.add_patterns([{"label": "PER", "pattern": "juan"}])  # the same span and label as xling's
    doc = nlp(RULED)
    assert [e._.score for e in doc.ents if e.text == "juan"] == [None]
    assert all(e._.score is not None for e in doc.ents if e.text != "juan")


@pytest.mark.parametrize(
    "setting, said",
    [({"batch_size": 0}, "batch-size must be at least 1"), ({"task_adapter": "nope"}, "no task adapter 'nope'")],
)
def test_a_bad_component_config_is_refused_at_add_pipe(trained_workspace, setting, said):
    spacy = pytest.importorskip("spacy")
    root, model_dir, _, _ = trained_workspace
    config = {"lang": "qu", "task_adapter": "ner-en", "model": str(model_dir), "workspace": str(root / "ws")}
    with pytest.raises(XlingError) as refused:
        spacy.blank("xx").add_pipe("xling_ner", config=config | setting)
    assert str(refused.value).startswith("the xling_ner component's config: ") and said in str(refused.value)


def test_xling_tags_spacys_own_tokens_and_sentences(trained_workspace, tagger):
    nlp = spacy_pipeline(trained_workspace, "sentencizer", paragraphs=True)
    text = "juan-lima the city, of qusqu.  Maria of peru!"
    doc = nlp(text)
    sentences = [[t.text for t in sentence if not t.is_space] for sentence in doc.sents]
    assert len(sentences) == 2 and "juan-lima" not in sentences[0]  # spaCy's cut, not xling's
    expected = []
    for sentence, words in zip(doc.sents, tagger.tag_words(sentences)):
        kept = [t.i for t in sentence if not t.is_space]
        expected += [(kept[a], kept[b - 1] + 1, kind) for kind, a, b in entities([tag for tag, _ in words])]
    assert expected and [(e.start, e.end, e.label_) for e in doc.ents] == expected


def test_nlp_evaluate_scores_xling_entities(trained_workspace):
    from spacy.training import Example

    nlp = spacy_pipeline(trained_workspace)
    predicted = nlp(RULED)
    gold = {"entities": [(e.start_char, e.end_char, e.label_) for e in predicted.ents][:1]}
    scores = nlp.evaluate([Example.from_dict(nlp.make_doc(RULED), gold)])
    assert {"ents_p", "ents_r", "ents_f", "ents_per_type"} <= set(scores)
    assert scores["ents_r"] == 1.0 and scores["ents_p"] == pytest.approx(1 / len(predicted.ents))


def test_the_decoder_a_task_was_trained_with_is_used_unless_another_is_given(copied_workspace):
    from xling.train.config import TaskAdapterOptions, TrainConfig
    from xling.train.task import train_task_adapter
    from xling.trained_tasks import TaskRecord

    workspace, model_dir, model_folder, dev = copied_workspace
    assert TaskRecord.read(model_folder / "task" / "ner-en").decoder == "viterbi"
    training = TrainConfig(max_steps=2, batch_size=8, eval_every=None)
    given = dict(lang="en", train=str(dev), dev=str(dev), name="split-en", decoder="split", training=training)
    train_task_adapter(TaskAdapterOptions(**given, model=str(model_dir), workspace=str(workspace)))
    assert TaskRecord.read(model_folder / "task" / "split-en").decoder == "split"
    load = dict(lang="en", task_adapter="split-en", model=str(model_dir), workspace=str(workspace))
    assert Tagger.load(**load).decoder == "split"
    assert Tagger.load(**load, decoder="viterbi").decoder == "viterbi"
    tagged = run_xling(
        "evaluate", "ner", dev, "--lang", "en", "-t", "split-en", "-w", workspace, "-m", model_dir, "--json"
    )
    assert json.loads(tagged.stdout)["decoder"] == "split"


def test_a_saved_spacy_pipeline_carries_its_adapters_and_scores_to_a_fresh_directory(copied_workspace, tmp_path):
    spacy = pytest.importorskip("spacy")
    import shutil

    workspace, model_dir, _, _ = copied_workspace
    nlp = spacy.blank("xx")
    nlp.add_pipe("xling_ner", config={"lang": "qu", "model": str(model_dir), "workspace": str(workspace)})
    text = "juan lima the city of qusqu maria of peru"
    before = [(e.start_char, e.end_char, e.label_, e._.score) for e in nlp(text).ents]
    assert before and all(0 < score <= 1 for *_, score in before)
    nlp.to_disk(tmp_path / "saved")
    shutil.move(tmp_path / "saved", tmp_path / "moved")
    shutil.rmtree(workspace)  # the workspace it was made from is gone
    loaded = spacy.load(tmp_path / "moved")
    assert [(e.start_char, e.end_char, e.label_, e._.score) for e in loaded(text).ents] == before
    assert str(workspace) not in (tmp_path / "moved" / "xling_ner" / "xling.json").read_text()
    assert str(workspace) not in (tmp_path / "moved" / "config.cfg").read_text()  # what spacy package ships
    meta = json.loads((tmp_path / "moved" / "meta.json").read_text())
    assert meta["requirements"][0].startswith("xling[spacy]>=") and "not on PyPI" in meta["notes"]


BOUND = "ONEDNN_PRIMITIVE_CACHE_CAPACITY"  # oneDNN's environment variable


def test_a_cpu_tagger_bounds_onednn_s_kernel_cache_unless_the_user_did(trained_workspace, monkeypatch):
    """oneDNN reads the bound once, at the process's first kernel: a tagger sets it as it loads, before timing bf16
    (where `auto` may run the first kernels; xling.device)."""
    import os

    import xling.device
    from xling.device import KERNELS_KEPT

    root, model_dir, _, _ = trained_workspace
    where = {"lang": "qu", "task_adapter": "ner-en", "model": str(model_dir), "workspace": str(root / "ws")}
    seen = []
    monkeypatch.setattr(xling.device, "cpu_bf16_speedup", lambda: seen.append(os.environ.get(BOUND)) or 0.0)
    monkeypatch.delenv(BOUND, raising=False)
    Tagger.load(**where, device="cpu")
    assert seen and set(seen) == {KERNELS_KEPT["tagging"]}
    monkeypatch.setenv(BOUND, "256")
    Tagger.load(**where, device="cpu")
    assert os.environ[BOUND] == "256"
