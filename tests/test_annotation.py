"""Active learning and the annotation page: the strategies on hand-built probabilities, the session's
append-only answers, the server's API through Flask's test client, and a SIGKILL of the server."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import asdict, replace
from pathlib import Path

import pytest

from tests.browser import needs_chromium
from xling.annotation.batches import BatchHeader, Item, read_batches, start_session, write_batch
from xling.annotation.options import AnnotateOptions, SelectOptions
from xling.annotation.session import ANSWERS_FILE, Session, session_dir
from xling.annotation.strategies import Best, Candidate, entity_spans, pick, rate, sequence_uncertainty
from xling.data.conll import read_conll
from xling.data.schemes import UNJUDGED
from xling.errors import XlingError
from xling.tagging.spec import TaggerSpec
from xling.web import Address
from xling.workspace import Workspace


def candidate(key: str, text: str, tags: list[str], probabilities: list[float]) -> Candidate:
    return Candidate(0.0, key, text, [], tags, probabilities)


# ---- strategies -----------------------------------------------------------------------------------------------


def test_uncertainty_ranks_the_least_sure_sentence_first():
    sure = candidate("a", "Punu llaqta", ["B-LOC", "O"], [0.99, 0.98])
    unsure = candidate("b", "Qusqu llaqta", ["B-LOC", "O"], [0.40, 0.60])
    middling = candidate("c", "Lima llaqta", ["B-LOC", "O"], [0.80, 0.90])
    rated = [rate(c, "uncertainty", "correct", 1) for c in (sure, unsure, middling)]
    best = Best(10)
    for c in rated:
        best.offer(c)
    assert [c.key for c in best.ranked()] == ["b", "c", "a"]
    assert sequence_uncertainty([1.0, 1.0]) == pytest.approx(0.0)
    assert sequence_uncertainty([0.5, 0.5]) == pytest.approx(0.5)


def test_entity_strategy_asks_about_the_least_confident_span_including_a_doubtful_o_run():
    tags = ["B-PER", "I-PER", "O", "O", "B-LOC"]
    probabilities = [0.9, 0.8, 0.4, 0.5, 0.95]
    spans = entity_spans(tags, probabilities)
    assert [(s.start, s.end, s.label) for s in spans] == [(0, 2, "PER"), (2, 4, None), (4, 5, "LOC")]
    rated = rate(candidate("x", "a b c d e", tags, probabilities), "entity", "spans", 1)
    assert (rated.focus.start, rated.focus.end, rated.focus.label) == (2, 4, None)
    assert rated.score == pytest.approx(1 - 0.45)
    nothing = rate(candidate("y", "a b", ["O", "O"], [0.99, 0.99]), "entity", "spans", 1)
    assert nothing.focus is None and nothing.score < 0  # nothing to ask in spans mode: last


def test_a_registered_strategy_is_a_choice_and_a_misspelt_one_is_refused_when_options_are_read():
    from xling.annotation.strategies import STRATEGIES, Strategy, register
    from xling.options import build

    given = {"corpus": "c.txt", "lang": "qu"}
    with pytest.raises(XlingError, match="strategy must be one of random, uncertainty, entity, not 'entities'"):
        build(SelectOptions, {**given, "strategy": "entities"})
    register(Strategy("shortest", lambda c, spans, seed: (-len(c.text), spans[0] if spans else None)))
    try:
        assert build(SelectOptions, {**given, "strategy": "shortest"}).strategy == "shortest"
        long, short = candidate("a", "Punu llaqta", ["B-LOC", "O"], [1, 1]), candidate("b", "Qusqu", ["B-LOC"], [1])
        rated = sorted((rate(c, "shortest", "correct", 1) for c in (long, short)), reverse=True)
        assert [c.key for c in rated] == ["b", "a"] and rated[0].focus.label == "LOC"
    finally:
        del STRATEGIES["shortest"]


def test_random_strategy_is_the_same_on_every_run_and_changes_with_the_seed():
    texts = [f"sentence {i}" for i in range(50)]
    first = [rate(candidate(t, t, ["O"], [0.9]), "random", "correct", 1).score for t in texts]
    again = [rate(candidate(t, t, ["O"], [0.9]), "random", "correct", 1).score for t in texts]
    other = [rate(candidate(t, t, ["O"], [0.9]), "random", "correct", 2).score for t in texts]
    assert first == again and first != other and all(0 <= s < 1 for s in first)


def test_a_sample_of_a_stream_is_uniform_the_same_for_a_seed_and_bounded():
    import random

    from xling.annotation.select import sampled

    draws = [sampled(iter(range(100)), 10, random.Random(f"1:{n}")) for n in range(2000)]
    counts = [sum(value in draw for draw in draws) for value in range(100)]
    assert all(len(draw) == 10 for draw in draws) and 120 < min(counts) and max(counts) < 280  # 200 expected
    assert sampled(iter(range(100)), 10, random.Random("1:0")) == draws[0] and draws[0] != draws[1]
    assert sampled(iter(range(5)), 10, random.Random(0)) == [0, 1, 2, 3, 4]


def test_best_keeps_the_highest_scores_of_a_stream_in_bounded_memory():
    best = Best(3)
    for i in range(1000):
        best.offer(Candidate(float(i % 97), f"k{i}", "t"))
    assert len(best.heap) == 3
    assert [c.score for c in best.ranked()] == [96.0, 96.0, 96.0]


def test_pick_holds_the_type_cap_and_skips_near_duplicates():
    ranked = [
        candidate("1", "Juan rimarqan Limapi", ["B-PER", "O", "B-LOC"], [0.5, 0.9, 0.9]),
        candidate("2", "Juan rimarqan Limapi kunan", ["B-PER", "O", "B-LOC", "O"], [0.5, 0.9, 0.9, 0.9]),
        candidate("3", "Maria puriq", ["B-PER", "O"], [0.6, 0.9]),
        candidate("4", "Pedro takiq", ["B-PER", "O"], [0.6, 0.9]),
        candidate("5", "Punu hatun", ["B-LOC", "O"], [0.7, 0.9]),
    ]
    # 2 repeats 1's words (Jaccard 0.75); 4 would be a third PER
    assert [c.key for c in pick(ranked, 3, per_type_cap=2, mode="correct")] == ["1", "3", "5"]
    # the cap gives way, last, when it alone would leave the batch short; a near-duplicate never comes
    assert [c.key for c in pick(ranked, 5, per_type_cap=2, mode="correct")] == ["1", "3", "5", "4"]


# ---- the session ----------------------------------------------------------------------------------------------

ITEMS = [
    ("s1", "Juan rimarqan Limapi .", ["B-PER", "O", "B-LOC", "O"]),
    ("s2", "<script>alert(1)</script> Qusqu", ["O"] * 11 + ["B-LOC"]),
    ("s3", "Maria Punupi tiyan", ["B-PER", "B-LOC", "O"]),
    ("s4", "Runakuna llamk'anku", ["O", "O"]),
]


def make_session(workspace: Path, mode: str = "correct", name: str = "qu") -> Path:
    """A session as `xling select` leaves it, written by hand (no model)."""
    from xling.tagging.words import tokenize

    options = SelectOptions(
        corpus="corpus.txt", session=name, mode=mode, tagger=TaggerSpec(lang="qu", workspace=str(workspace))
    )
    directory = session_dir(Workspace(str(workspace), options.tagger.model), name)
    start_session(directory, options)
    items = []
    for key, text, tags in ITEMS:
        words = [[t.start, t.end] for t in tokenize(text)]
        assert len(words) == len(tags), text
        focus = {"start": 0, "end": 1, "label": tags[0][2:] or None, "confidence": 0.5} if mode == "spans" else None
        items.append(
            {"id": key, "text": text, "words": words, "tags": tags, "probabilities": [0.7] * len(tags), "focus": focus}
            | {"score": 0.5}
        )
    header = BatchHeader(strategy="entity", mode=mode, adapter="ner-en", types=["LOC", "ORG", "PER"], created=0)
    write_batch(directory, header, [Item(**item) for item in items])
    return directory


def add_batch(directory: Path, items: list[dict]) -> Path:
    """A batch like the session's first, of `items` as a batch file holds them."""
    return write_batch(directory, read_batches(directory).headers[0], [Item(**item) for item in items])


def test_answers_are_replayed_from_the_append_only_file_and_undo_takes_back_the_last(tmp_path):
    directory = make_session(tmp_path)
    session = Session(directory)
    session.record({"item": "s1", "spans": [{"start": 0, "end": 1, "label": "PER"}], "judged": None})
    session.record({"item": "s3", "skip": True})
    session.record({"item": "s2", "spans": [], "judged": None})
    assert session.undo({})["undone"]["item"] == "s2"
    again = Session(directory)  # as after a restart
    assert [i.id for i in again.queue()] == ["s2", "s4"]
    assert len((directory / ANSWERS_FILE).read_text().splitlines()) == 4  # nothing rewritten, the undo added
    gold = read_conll(directory / "gold.conll")
    assert [(s.tokens, s.tags) for s in gold] == [(["Juan", "rimarqan", "Limapi", "."], ["B-PER", "O", "O", "O"])]


def test_spans_mode_leaves_unjudged_words_out_and_a_cut_last_line_is_dropped(tmp_path):
    directory = make_session(tmp_path, mode="spans")
    session = Session(directory)
    session.record({"item": "s3", "spans": [{"start": 1, "end": 2, "label": "LOC"}], "judged": [0, 2]})
    assert session.gold()[0].tags == ["O", "B-LOC", UNJUDGED]
    with open(directory / ANSWERS_FILE, "a") as f:
        f.write('{"item": "s1", "spans": [')  # a kill in the middle of a write
    again = Session(directory)
    assert list(again.answers) == ["s3"]
    again.record({"item": "s1", "spans": [], "judged": [0, 1]})
    assert list(Session(directory).answers) == ["s3", "s1"]


def test_a_session_record_with_the_tagger_options_at_the_top_is_refused_naming_the_file(tmp_path):
    directory = make_session(tmp_path)
    record = json.loads((directory / "session.json").read_text())
    flat = {k: v for k, v in record.items() if k != "tagger"} | record["tagger"]  # not nested: not xling's layout
    (directory / "session.json").write_text(json.dumps(flat))
    with pytest.raises(XlingError, match=r"session\.json: unknown settings 'batch_size, decoder"):
        Session(directory)


def test_a_session_continues_only_with_its_language_and_corpus(tmp_path):
    make_session(tmp_path)
    other = SelectOptions(corpus="other.txt", tagger=TaggerSpec(lang="qu", workspace=str(tmp_path)))
    with pytest.raises(XlingError, match="started with corpus 'corpus.txt'"):
        start_session(session_dir(Workspace(str(tmp_path), other.tagger.model), "qu"), other)


# ---- the server -----------------------------------------------------------------------------------------------


def page_client(app, directory: Path):
    """Flask's test client, sending what the page sends with every request: its token."""
    from xling.annotation.server import page_token

    api = app.test_client()
    api.environ_base["HTTP_X_XLING_PAGE_TOKEN"] = page_token(directory)
    return api


@pytest.fixture
def client(tmp_path):
    from xling.annotation.server import create_app

    directory = make_session(tmp_path)
    app = create_app(Session(directory), AnnotateOptions(session="qu", retrain=False, annotator="Ana"))
    return page_client(app, directory), directory


def test_the_api_gives_a_batch_takes_answers_undoes_and_exports_conll(client):
    api, directory = client
    state = api.get("/api/state").get_json()
    assert [i["id"] for i in state["queue"]] == ["s1", "s2", "s3", "s4"] and state["types"] == ["LOC", "ORG", "PER"]
    assert state["queue"][1]["text"] == "<script>alert(1)</script> Qusqu"  # JSON carries the text as it is
    answer = {"item": "s1", "spans": [{"start": 0, "end": 1, "label": "PER"}, {"start": 2, "end": 3, "label": "LOC"}]}
    reply = api.post("/api/answer", json=answer | {"judged": None})
    assert reply.status_code == 200 and reply.get_json()["progress"]["entities"] == {"PER": 1, "LOC": 1}
    api.post("/api/answer", json={"item": "s4", "spans": [], "judged": None})
    assert api.post("/api/undo", json={}).get_json()["undone"]["item"] == "s4"
    exported = api.get("/api/gold.conll")
    assert exported.status_code == 200
    assert exported.get_data(as_text=True) == "Juan\tB-PER\nrimarqan\tO\nLimapi\tB-LOC\n.\tO\n\n"
    assert [i["id"] for i in api.get("/api/state").get_json()["queue"]] == ["s2", "s3", "s4"]


@pytest.mark.parametrize(
    ("answer", "status", "message"),
    [
        ({"item": "nope", "spans": [], "judged": None}, 404, "no sentence 'nope'"),
        ({"item": "s1", "spans": [{"start": 3, "end": 9, "label": "PER"}], "judged": None}, 400, "within the sentence"),
        ({"item": "s1", "spans": [{"start": 0, "end": "1", "label": "PER"}], "judged": None}, 400, "whole-number"),
        (
            {"item": "s1", "spans": [{"start": 0, "end": 1, "label": "DATE"}], "judged": None},
            422,
            "unknown type 'DATE'",
        ),
        ({"item": "s1", "spans": "PER", "judged": None}, 400, "'spans' takes a list of tables"),
        ({"item": "s1", "spans": [], "judged": [2, 1]}, 400, "judged must be"),
        (
            {"item": "s1", "spans": [{"start": 0, "end": 2, "label": "PER"}, {"start": 1, "end": 3, "label": "LOC"}]},
            422,
            "overlap",
        ),
        (["s1"], 400, "JSON object"),
    ],
)
def test_a_bad_answer_gets_a_clear_4xx_and_is_not_written(client, answer, status, message):
    api, directory = client
    reply = api.post("/api/answer", json=answer)
    assert reply.status_code == status and message in reply.get_json()["error"]
    assert not (directory / ANSWERS_FILE).exists()


def test_with_a_token_every_request_but_the_static_files_must_carry_it(tmp_path):
    from xling.annotation.server import create_app

    directory = make_session(tmp_path)
    options = AnnotateOptions(session="qu", address=Address(host="0.0.0.0", token="s3cret"), retrain=False)
    api = create_app(Session(directory), options).test_client()
    assert api.get("/api/state").status_code == 403
    assert api.get("/?token=wrong").status_code == 403
    assert api.get("/api/state", headers={"X-Xling-Token": "s3cret"}).status_code == 200
    assert api.get("/?token=s3cret").status_code == 200
    assert api.get("/static/annotate.js").status_code == 200
    with pytest.raises(XlingError, match="--token"):
        AnnotateOptions(session="qu", address=Address(host="0.0.0.0"))


# ---- a killed server ------------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(workspace: Path, port: int, *options: str, run: tuple[str, ...] = ("xling",)) -> subprocess.Popen:
    """`xling annotate qu --annotator Ana OPTIONS` (default: --no-retrain) on `port`, once it answers; `run`: the
    module that runs it (`xling`, or a stand-in that patches it)."""
    command = [sys.executable, "-m", *run, "annotate", "qu", "-w", str(workspace), "--port", str(port)]
    command += ["--annotator", "Ana", *(options or ["--no-retrain"])]
    server = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    for _ in range(200):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/state", timeout=1)
            return server
        except OSError:
            time.sleep(0.05)
    server.kill()
    raise AssertionError(server.stderr.read())


def kill_9(server: subprocess.Popen) -> None:
    os.kill(server.pid, signal.SIGKILL)
    server.wait()


def post(port: int, path: str, body: dict, directory: Path) -> dict:
    from xling.annotation.server import PAGE_TOKEN_HEADER, page_token

    headers = {"Content-Type": "application/json", PAGE_TOKEN_HEADER: page_token(directory)}
    request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", json.dumps(body).encode(), headers)
    return json.load(urllib.request.urlopen(request, timeout=5))


def test_sigkill_in_the_middle_of_a_batch_loses_no_answer_and_the_queue_resumes(tmp_path):
    directory = make_session(tmp_path)
    port = free_port()
    server = start_server(tmp_path, port)
    try:
        post(port, "/api/answer", {"item": "s1", "spans": [], "judged": None}, directory)
        answer = {"item": "s2", "spans": [{"start": 11, "end": 12, "label": "LOC"}], "judged": None}
        post(port, "/api/answer", answer, directory)
    finally:
        kill_9(server)
    server = start_server(tmp_path, port)
    try:
        state = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/api/state", timeout=5))
    finally:
        server.terminate()
        server.wait()
    assert state["progress"]["answered"] == 2
    assert [i["id"] for i in state["queue"]] == ["s3", "s4"]


def test_session_options_round_trip_through_session_json(tmp_path):
    directory = make_session(tmp_path)
    assert asdict(Session(directory).options) == json.loads((directory / "session.json").read_text())


# ---- a real browser -------------------------------------------------------------------------------------------


@needs_chromium
def test_a_person_labels_two_sentences_with_the_keyboard_only_in_chromium(tmp_path):
    from selenium.webdriver.common.keys import Keys

    from tests.browser import chromium, press, served, shift_right, shown_text, wait_for

    directory = make_session(tmp_path)
    session = Session(directory)
    with (
        served(session, AnnotateOptions(session="qu", retrain=False, annotator="Ana")) as address,
        chromium() as driver,
    ):
        driver.get(address)
        wait_for(driver, "window.xlingPage.item && window.xlingPage.item.id === 's1'")
        assert shown_text(driver) == "Juan rimarqan Limapi ."
        # s1: the model's LOC on "Limapi" is wrong: to it, remove it, accept the rest
        press(driver, Keys.ARROW_RIGHT, Keys.ARROW_RIGHT, "x", Keys.ENTER)
        wait_for(driver, "window.xlingPage.item && window.xlingPage.item.id === 's2'")
        # the markup in the corpus is shown as text, not run
        assert shown_text(driver) == "<script>alert(1)</script> Qusqu"
        assert driver.execute_script("return document.querySelectorAll('#sentence script').length") == 0
        # s2: "<script>" (words 0-2) as ORG (type 2), keep the suggested LOC, accept
        shift_right(driver)
        shift_right(driver)
        press(driver, "2", Keys.ENTER)
        wait_for(
            driver,
            "window.xlingPage.item && window.xlingPage.item.id === 's3' && window.xlingPage.pending.length === 0",
        )
        # take s2 back: it comes back as answered (the ORG), not as the model proposed; remove the ORG, accept
        press(driver, "u")
        wait_for(driver, "window.xlingPage.item && window.xlingPage.item.id === 's2'")
        assert driver.execute_script("return window.xlingPage.spans.map((s) => s.label)") == ["ORG", "LOC"]
        press(driver, "x", Keys.ENTER)
        wait_for(
            driver,
            "window.xlingPage.item && window.xlingPage.item.id === 's3' && window.xlingPage.pending.length === 0",
        )
        latencies = driver.execute_script("return window.xlingPage.latencies")
    gold = read_conll(directory / "gold.conll")
    assert [s.tags for s in gold] == [["B-PER", "O", "O", "O"], ["O"] * 11 + ["B-LOC"]]
    assert [s.tokens[:3] for s in gold] == [["Juan", "rimarqan", "Limapi"], ["<", "script", ">"]]
    assert len(latencies) >= 9  # every key press was measured (bench/annotate_latency.py reports them)


@needs_chromium
def test_spans_mode_in_chromium_accepts_rejects_and_fixes_one_span_at_a_time(tmp_path):
    from selenium.webdriver.common.keys import Keys

    from tests.browser import chromium, press, served, shift_right, wait_for

    directory = make_session(tmp_path, mode="spans")
    with (
        served(Session(directory), AnnotateOptions(session="qu", retrain=False, annotator="Ana")) as address,
        chromium() as driver,
    ):
        driver.get(address)
        wait_for(driver, "window.xlingPage.item && window.xlingPage.item.id === 's1'")
        press(driver, Keys.ENTER)  # s1: "Juan" is PER, as proposed
        wait_for(driver, "window.xlingPage.item && window.xlingPage.item.id === 's2'")
        press(driver, Keys.ENTER)  # s2: a doubtful word has no type to accept: the page asks for one
        assert "Press its type (1-9), or r if it is none" in driver.find_element("id", "question").text
        press(driver, "r")  # not an entity
        wait_for(driver, "window.xlingPage.item && window.xlingPage.item.id === 's3'")
        shift_right(driver)  # s3: the span is "Maria Punupi", an organisation
        press(driver, "2")
        wait_for(
            driver,
            "window.xlingPage.item && window.xlingPage.item.id === 's4' && window.xlingPage.pending.length === 0",
        )
    gold = [s.tags for s in read_conll(directory / "gold.conll")]
    assert gold == [["B-PER", "?", "?", "?"], ["O"] + ["?"] * 11, ["B-ORG", "I-ORG", "?"]]


# ---- with a model: selection, partial labels, a retraining round ----------------------------------------------


@pytest.fixture
def tiny_session(copied_workspace):
    """`xling select` on the tiny workspace's synthetic sentences, as the command line runs it."""
    from tests.tiny import run_xling

    workspace, model_dir, _, dev = copied_workspace
    corpus = dev.parent / "train"
    found = run_xling("select", corpus, "--lang", "qu", "-w", workspace, "-m", model_dir, "--size", "6")
    assert found.returncode == 0, found.stderr
    assert "6 sentences queued" in found.stderr and "xling annotate qu" in found.stderr
    return workspace, model_dir, corpus, dev


def test_select_queues_pre_tagged_sentences_and_never_an_answered_one_again(tiny_session, monkeypatch):
    from xling.annotation.select import select

    workspace, model_dir, corpus, _ = tiny_session
    session = Session.open(Workspace(str(workspace), str(model_dir)), "qu")
    first = session.queue()
    assert len(first) == 6 and session.headers[0].adapter == "ner-en"
    assert session.types == ["LOC", "PER"]
    assert all(len(item.tags) == len(item.words) == len(item.probabilities) for item in first)
    options = SelectOptions(
        corpus=str(corpus), size=6, tagger=TaggerSpec(lang="qu", workspace=str(workspace), model=str(model_dir))
    )
    for item in first[:3]:
        session.record({"item": item.id, "spans": [], "judged": None})
    import xling.annotation.select as selecting

    tagged, tag = [], selecting.tag_candidates
    monkeypatch.setattr(selecting, "tag_candidates", lambda t, c: tagged.extend(c) or tag(t, c))
    path, size = select(replace(options, strategy="uncertainty", max_sentences=8))
    assert len(tagged) == 8  # of the corpus's sentences, a random 8 are tagged
    second = Session(session.directory)
    assert path.name == "0002.jsonl" and size == 6 and second.headers[1].strategy == "uncertainty"
    queued = [item.id for item in second.queue()]  # the new batch replaces what was left of the first
    assert len(queued) == 6 and not set(queued) & {item.id for item in first[:3]}  # never an answered one again
    scores = [item.score for item in second.queue()]
    assert scores == sorted(scores, reverse=True)  # best first
    # the files the first batch read are the session's: a later round reads them wherever it is started from
    assert second.headers[0].corpus == second.headers[1].corpus == [str(corpus.resolve())]
    corpus.rename(corpus.with_name("moved"))
    try:
        with pytest.raises(XlingError, match=f"the session's corpus file {corpus.resolve()} is gone"):
            select(options)
    finally:
        corpus.with_name("moved").rename(corpus)


def test_spans_mode_sets_the_span_to_ask_about(tiny_session):
    from xling.annotation.select import select

    workspace, model_dir, corpus, _ = tiny_session
    options = SelectOptions(corpus=str(corpus), session="spans", mode="spans", size=4, tagger=TaggerSpec(lang="qu"))
    select(replace(options, tagger=replace(options.tagger, workspace=str(workspace), model=str(model_dir))))
    session = Session.open(Workspace(str(workspace), str(model_dir)), "spans")
    for item in session.queue():
        focus = item.focus
        assert 0 <= focus["start"] < focus["end"] <= len(item.words)


def test_unjudged_words_carry_no_loss_and_are_refused_as_dev_data(tmp_path, trained_workspace):
    from xling.tagging.align import Window, window_labels
    from xling.train.config import TaskAdapterOptions, TrainConfig
    from xling.train.task import train_task_adapter

    labels = {"O": 0, "B-LOC": 1, "I-LOC": 2}
    window = Window(0, [1, 5, 6, 7, 2], [-1, 0, 1, 2, -1])
    assert window_labels(window, ["B-LOC", UNJUDGED, "O"], labels) == [-100, 1, -100, 0, -100]
    root, model_dir, _, dev = trained_workspace
    partial = tmp_path / "partial.conll"
    partial.write_text("juan\tB-PER\nlima\t?\nruna\t?\n\nqusqu\tB-LOC\nwasi\tO\n\n")
    base = dict(lang="qu", model=str(model_dir), workspace=str(root / "ws"), init_from="ner-en")
    training = TrainConfig(epochs=1, batch_size=2, eval_every=None)
    report = train_task_adapter(
        TaskAdapterOptions(train=str(partial), dev=str(dev), name="partial", training=training, **base)
    )
    assert report.train_sentences == 2
    with pytest.raises(XlingError, match="dev data has words not judged"):
        train_task_adapter(
            TaskAdapterOptions(train=str(dev), dev=str(partial), name="refused", training=training, **base)
        )


def test_a_round_keeps_the_better_of_its_adapter_and_the_sessions_so_a_worse_round_changes_nothing(
    tiny_session, monkeypatch
):
    from xling.annotation import retrain
    from xling.annotation.retrain import retrain_round

    workspace, model_dir, _, dev = tiny_session
    session = Session.open(Workspace(str(workspace), str(model_dir)), "qu")
    for item in session.queue():
        spans = [{"start": i, "end": i + 1, "label": t[2:]} for i, t in enumerate(item.tags) if t.startswith("B-")]
        session.record({"item": item.id, "spans": spans, "judged": None})
    options = AnnotateOptions(session="qu", dev=str(dev), epochs=1, workspace=str(workspace), model=str(model_dir))
    judged_on = set()
    monkeypatch.setattr(retrain, "_dev_f1", lambda session, dev, adapter: judged_on.add(dev) or planted[adapter])
    planted = {"ner-en": 0.4, "ner-qu-annotated-candidate": 0.3}  # round 1 scores below the starting adapter
    first = retrain_round(session.directory, options)
    assert first.sentences == 6 and first.train_sentences == 6 and not first.kept
    assert first.adapter == "ner-en" and first.f1 == 0.3 and first.previous_f1 == 0.4
    tasks = workspace / model_dir.name / "task"
    assert not (tasks / "ner-qu-annotated").exists() and not (tasks / "ner-qu-annotated-candidate").exists()
    again = Session(session.directory)
    assert [r.round for r in again.rounds()] == [0, 1] and again.rounds()[0].f1 == 0.4
    assert again.headers[1].adapter == "ner-en" and len(again.queue()) == 6  # chosen with the better adapter
    planted["ner-qu-annotated-candidate"] = 0.5
    assert retrain_round(session.directory, options).kept
    saved = {f.name: f.read_bytes() for f in (tasks / "ner-qu-annotated").iterdir()}
    records = [f for f in (tasks / "ner-qu-annotated").iterdir() if f.suffix in (".json", ".md")]
    assert records and not [f.name for f in records if b"-candidate" in f.read_bytes()]  # its own name
    assert json.loads((tasks / "ner-qu-annotated" / "task.json").read_text())["name"] == "ner-qu-annotated"
    train_before = read_conll(session.directory / "train.conll")
    planted |= {"ner-qu-annotated": 0.5, "ner-qu-annotated-candidate": 0.45}  # a planted worse round
    third = retrain_round(session.directory, replace(options, augment=2))  # two altered copies of each answer
    assert not third.kept and third.adapter == "ner-qu-annotated"
    taught = read_conll(session.directory / "train.conll")
    assert third.train_sentences == 6 and 6 < len(taught) <= 18 and taught[:6] == train_before
    assert {f.name: f.read_bytes() for f in (tasks / "ner-qu-annotated").iterdir()} == saved  # never changed
    assert [r.round for r in Session(session.directory).rounds()] == [0, 1, 2, 3]
    # keep-or-drop is judged on the half of dev that the candidate's epoch was not chosen on
    assert judged_on == {str(session.directory / retrain.JUDGE_FILE)}
    choose, judge = (read_conll(session.directory / f) for f in (retrain.CHOOSE_FILE, retrain.JUDGE_FILE))
    assert choose and judge and not {tuple(s.tokens) for s in choose} & {tuple(s.tokens) for s in judge}
    trained_on = json.loads((tasks / "ner-qu-annotated" / "report.json").read_text())
    assert str(session.directory / retrain.CHOOSE_FILE) in json.dumps(trained_on)


@pytest.mark.slow
def test_the_server_retrains_in_the_background_and_the_next_batch_replaces_the_queue(tiny_session):
    from xling.annotation.server import create_app

    workspace, model_dir, _, dev = tiny_session
    session = Session.open(Workspace(str(workspace), str(model_dir)), "qu")
    options = AnnotateOptions(session="qu", retrain_every=3, dev=str(dev), epochs=1, annotator="Ana")
    app = create_app(session, replace(options, workspace=str(workspace), model=str(model_dir)))
    api = page_client(app, session.directory)
    for item in api.get("/api/state").get_json()["queue"][:3]:
        reply = api.post("/api/answer", json={"item": item["id"], "spans": [], "judged": None}).get_json()
    assert reply["retraining"]["running"]
    retrainer = app.config["retrainer"]
    assert retrainer.process.wait(timeout=300) == 0, (session.directory / "retrain.log").read_text()
    for _ in range(100):  # the waiting thread reads the new batch once the round ends
        state = api.get("/api/state").get_json()
        if state["queue"] and state["queue"][0]["batch"] == 2:
            break
        time.sleep(0.1)
    assert not state["retraining"]["running"] and state["retraining"]["failed"] is None
    assert [r["sentences"] for r in state["retraining"]["rounds"]] == [0, 3]
    assert len(state["queue"]) == 6  # the round's batch replaced the three left of the first


def test_the_simulated_annotator_answers_a_span_widened_to_the_gold_entities_it_touches():
    from bench.active_learning import oracle
    from xling.annotation.strategies import ProposedSpan

    gold = ["B-ORG", "I-ORG", "I-ORG", "O", "B-LOC"]
    asked = Candidate(0.5, "k", "a b c d e", focus=ProposedSpan(1, 2, "PER", 0.4))
    assert oracle(asked, gold, "spans") == ["B-ORG", "I-ORG", "I-ORG", "?", "?"]
    assert oracle(asked, gold, "correct") == gold
    outside = Candidate(0.5, "k", "a b c d e", focus=ProposedSpan(3, 4, None, 0.6))
    assert oracle(outside, gold, "spans") == ["?", "?", "?", "O", "?"]
