"""`xling serve`: requests' texts tagged together, answers in the pipeline's shape, the web checks on every
request, and the command itself on the embedded model."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request

import pytest

from tests.test_annotation import free_port
from xling.data.text import MAX_LINE_CHARS
from xling.tagging.options import ServeOptions
from xling.tagging.serving import MAX_TEXTS, Batcher, create_app, tagging_function
from xling.tagging.spec import TaggerSpec
from xling.web import Address


def test_requests_that_come_while_the_model_runs_are_tagged_together_in_order():
    calls, running, release = [], threading.Event(), threading.Event()

    def tag(texts):
        calls.append(list(texts))
        running.set()
        release.wait(5)
        return [text.upper() for text in texts]

    batcher = Batcher(tag, size=64, wait=0.0).start()
    answers = {}

    def ask(texts):
        answers[texts[0]] = batcher.submit(texts)

    first = threading.Thread(target=ask, args=(["a"],))
    first.start()
    running.wait(5)  # the model is busy with "a": what comes now waits, and goes in together
    others = [threading.Thread(target=ask, args=([f"b{i}", f"c{i}"],)) for i in range(4)]
    for thread in others:
        thread.start()
    while batcher.jobs.qsize() < 4:
        time.sleep(0.01)
    release.set()
    for thread in [first, *others]:
        thread.join(5)
    batcher.close()
    assert (
        calls[0] == ["a"] and len(calls) == 2 and sorted(calls[1]) == sorted(f"{x}{i}" for i in range(4) for x in "bc")
    )
    assert answers == {"a": ["A"], **{f"b{i}": [f"B{i}", f"C{i}"] for i in range(4)}}
    assert (batcher.batches, batcher.texts) == (2, 9)


def test_a_failed_batch_fails_its_callers_and_the_next_one_is_served():
    def tag(texts):
        if "bad" in texts:
            raise ValueError("cannot")
        return texts

    batcher = Batcher(tag, size=8, wait=0.0).start()
    with pytest.raises(ValueError, match="cannot"):
        batcher.submit(["bad"])
    assert batcher.submit(["good"]) == ["good"]
    batcher.close()


def test_ctrl_c_while_jobs_are_gathered_refuses_them_instead_of_leaving_their_callers_waiting():
    from xling.web import Refused

    batcher, answers = Batcher(lambda texts: list(texts), 8, 0.0), []

    def call():
        try:
            answers.append(batcher.submit(["Lima"]))
        except Refused as refused:
            answers.append(refused)

    caller = threading.Thread(target=call)
    caller.start()
    while batcher.jobs.empty():
        time.sleep(0.01)
    real_get, gets = batcher.jobs.get, []

    def get(*args, **kwargs):  # Ctrl+C as the first job waits for others to join it
        gets.append(args)
        if len(gets) == 2:
            raise KeyboardInterrupt
        return real_get(*args, **kwargs)

    batcher.jobs.get = get
    with pytest.raises(KeyboardInterrupt):
        batcher.run()
    caller.join(10)
    assert not caller.is_alive() and len(gets) == 2
    assert isinstance(answers[0], Refused) and answers[0].status == 503


@pytest.fixture(scope="module")
def served(trained_workspace):
    """The tiny workspace's `Stack(qu, ner-en)` behind the app (Flask's test client, no socket), and its tagger."""
    from xling.tagging.files import load_tagger

    root, model_dir, _, _ = trained_workspace
    spec = TaggerSpec(lang="qu", task_adapter="ner-en", model=str(model_dir), workspace=str(root / "ws"))
    options = ServeOptions(tagger=spec)
    tagger = load_tagger(spec)
    batcher = Batcher(tagging_function(tagger), options.max_batch, 0.0).start()
    app = create_app(tagger, options, batcher)
    yield app.test_client(), tagger
    batcher.close()


def post(client, body, **headers):
    return client.post("/", data=json.dumps(body), headers={"Content-Type": "application/json", **headers})


def test_a_text_and_a_list_come_back_in_the_pipelines_shape_as_the_tagger_tags_them(served):
    client, tagger = served
    texts = ["Lima llaqtapi Qusqu suyupi", "Maria Lima Peru", "x"]
    expected = [[span.to_dict() for span in spans] for spans in tagger(texts)]
    assert any(expected), "the tiny tagger finds no entity: the comparison would prove nothing"
    single = post(client, {"inputs": texts[0]})
    assert single.status_code == 200 and single.get_json() == expected[0]
    listed = post(client, {"inputs": texts})
    assert listed.get_json() == expected
    assert all(
        set(entity) == {"entity_group", "score", "word", "start", "end"} for e in listed.get_json() for entity in e
    )
    about = client.get("/").get_json()
    assert about["labels"] == tagger.labels and about["texts"] >= 4


def test_the_pipelines_parameters_are_honoured_or_refused_in_one_400_line(served):
    client, tagger = served
    text = "Lima llaqtapi Qusqu suyupi Maria Peru"
    (result,) = tagger.tag_texts([text])
    assert result.spans, "the tiny tagger finds no entity: the comparison would prove nothing"
    for strategy in ("simple", "first"):
        found = post(client, {"inputs": text, "parameters": {"aggregation_strategy": strategy}}).get_json()
        assert found == [span.to_dict() for span in result.spans]
    words = post(client, {"inputs": text, "parameters": {"aggregation_strategy": "none"}}).get_json()
    tagged = [(i, t.text, tag) for i, (t, tag) in enumerate(zip(result.tokens, result.tags), start=1) if tag != "O"]
    assert [(w["index"], w["word"], w["entity"]) for w in words] == tagged and tagged
    assert all(text[w["start"] : w["end"]] == w["word"] for w in words)
    # one rounding for every score served, a word's as an entity's: 4 decimal places
    assert all(w["score"] == round(w["score"], 4) for w in words) and any(w["score"] != 1 for w in words)
    assert all(e["score"] == round(e["score"], 4) for e in found)
    label = result.spans[0].label
    kept = post(client, {"inputs": text, "parameters": {"ignore_labels": ["O", label]}}).get_json()
    assert kept == [span.to_dict() for span in result.spans if span.label != label]
    for parameters, said in (
        ({"aggregation_strategy": "max"}, "aggregation_strategy 'max' is not one xling serves: simple, first, none"),
        ({"stride": 16}, "parameter 'stride' is not one xling serves: aggregation_strategy, ignore_labels"),
        ({"ignore_labels": "O"}, "ignore_labels must be a list of labels"),
    ):
        refused = post(client, {"inputs": text, "parameters": parameters})
        assert refused.status_code == 400 and said in refused.get_json()["error"]
    assert post(client, {"inputs": text, "parameters": [1]}).status_code == 400


def test_a_text_longer_than_a_line_comes_back_whole_with_offsets_into_it(served):
    client, tagger = served
    words = "Lima llaqtapi Qusqu suyupi Maria Peru ".split()
    text = " ".join(words[i % len(words)] for i in range(MAX_LINE_CHARS // 4))
    assert len(text) > MAX_LINE_CHARS
    found = post(client, {"inputs": text}).get_json()
    assert found and max(e["end"] for e in found) > MAX_LINE_CHARS
    assert all(text[e["start"] : e["end"]] == e["word"] for e in found)


@pytest.mark.parametrize(
    ("body", "headers", "status", "said"),
    [
        ({"inputs": 3}, {}, 422, "inputs"),
        ({"inputs": []}, {}, 422, "inputs"),
        ({"inputs": ["a", 1]}, {}, 422, "strings"),
        ({"inputs": ["a"] * (MAX_TEXTS + 1)}, {}, 413, f"at most {MAX_TEXTS}"),
        ({"inputs": "a" * (1024 * 1024)}, {}, 413, "over 1024 KiB"),
        ({"inputs": "a"}, {"Host": "evil.example:8322"}, 403, "answers only 127.0.0.1"),
        ({"inputs": "a"}, {"Origin": "http://evil.example"}, 403, "evil.example"),
        ({"inputs": "a"}, {"Content-Type": "text/plain"}, 415, "send JSON"),
    ],
)
def test_a_request_outside_the_bounds_is_refused_in_one_line(served, body, headers, status, said):
    client, _ = served
    answer = post(client, body, **headers)
    assert answer.status_code == status, answer.get_data(as_text=True)
    assert said in answer.get_json()["error"] and "\n" not in answer.get_json()["error"]


def test_on_every_interface_each_request_needs_the_token(served):
    _, tagger = served
    options = ServeOptions(tagger=TaggerSpec(lang="qu"), address=Address(host="0.0.0.0", token="s3cret-token"))
    batcher = Batcher(tagging_function(tagger), 8, 0.0).start()
    client = create_app(tagger, options, batcher).test_client()
    assert post(client, {"inputs": "Lima"}, Host="10.0.0.5:8322").status_code == 403
    assert (
        post(client, {"inputs": "Lima"}, **{"Host": "10.0.0.5:8322", "X-Xling-Token": "s3cret-token"}).status_code
        == 200
    )
    batcher.close()
    with pytest.raises(Exception, match="--token"):
        Address(host="0.0.0.0")


def test_xling_serve_tags_with_the_embedded_models_shipped_pair_and_stops_on_ctrl_c(tmp_path):
    port = free_port()
    server = started_server(tmp_path, port)
    try:
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/",
            json.dumps({"inputs": ["Lima llaqtapi tiyan.", "Qusqu llaqta Perú suyupi."]}).encode(),
            {"Content-Type": "application/json"},
        )
        found = json.load(urllib.request.urlopen(request, timeout=60))
        names = {e["word"].split()[0] for e in found[0] + found[1]}  # QuBERT-style spans hold "llaqta": "Qusqu llaqta"
        assert len(found) == 2 and names & {"Lima", "Qusqu", "Perú"}
        server.send_signal(signal.SIGINT)
        code, last_words = stopped(server, 60)  # a loaded machine (the suite's other worker training) slows the stop
        assert code == 0 and "stopped" in last_words, f"exit code {code}: {last_words}"
    finally:
        server.kill()


def started_server(tmp_path, port: int) -> subprocess.Popen:
    """`xling serve` on the embedded model's shipped pair, once it has said its address."""
    command = [sys.executable, "-m", "xling", "serve", "--lang", "qu", "--port", str(port), "-w", str(tmp_path / "ws")]
    # faulthandler: should it abort as it exits, its stderr says in which thread
    server = subprocess.Popen(
        command,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ | {"PYTHONFAULTHANDLER": "1"},
        # an xdist worker ignores SIGINT, and a child inherits that: Ctrl+C as a terminal's foreground job has it
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    said = [server.stderr.readline()]
    while f"http://127.0.0.1:{port}/" not in said[-1] and said[-1] and len(said) < 50:
        said.append(server.stderr.readline())  # notices of the adapters loaded come first
    assert f"http://127.0.0.1:{port}/" in said[-1], "".join(said) + server.stderr.read()
    return server


def stopped(server: subprocess.Popen, seconds: float) -> tuple[int, str]:
    """Its exit code and last words, or the test fails with every thread's stack if it has not stopped."""
    try:
        code = server.wait(seconds)
    except subprocess.TimeoutExpired:  # faulthandler dumps every thread's stack on SIGABRT: where it hangs
        server.send_signal(signal.SIGABRT)
        pytest.fail(f"no stop {seconds} s after Ctrl+C; its threads:\n{server.communicate(timeout=30)[1][-6000:]}")
    return code, server.stderr.read()


def test_ctrl_c_with_clients_sending_stops_in_seconds_and_every_request_is_answered_or_refused(tmp_path):
    import http.client

    port, outcomes, go_on = free_port(), [], threading.Event()
    server = started_server(tmp_path, port)

    def client():  # one keep-alive connection, a request after another, as a busy caller sends them
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        body = json.dumps({"inputs": ["Lima llaqtapi tiyan.", "Qusqu llaqta Perú suyupi."] * 8})
        while go_on.is_set():
            try:
                connection.request("POST", "/", body, {"Content-Type": "application/json"})
                response = connection.getresponse()
                response.read()  # the answer read whole: the connection serves the next request
                outcomes.append(response.status)
            except (ConnectionError, http.client.HTTPException, OSError) as err:
                outcomes.append(type(err).__name__)  # the stopped server closed the connection
                connection.close()
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
                time.sleep(0.05)

    go_on.set()
    clients = [threading.Thread(target=client) for _ in range(4)]
    try:
        for thread in clients:
            thread.start()
        while outcomes.count(200) < 8:
            time.sleep(0.05)
        server.send_signal(signal.SIGINT)
        interrupted = time.monotonic()
        code, last_words = stopped(server, 30)
        took = time.monotonic() - interrupted
    finally:
        go_on.clear()
        server.kill()
        for thread in clients:
            thread.join(60)
    assert code == 0 and "stopped" in last_words, f"exit code {code}: {last_words}"
    assert took < 5, f"stopped {took:.1f} s after Ctrl+C"
    assert not any(thread.is_alive() for thread in clients)  # no caller left waiting for an answer
    assert set(outcomes) <= {
        200,
        503,
        "ConnectionRefusedError",
        "ConnectionResetError",
        "RemoteDisconnected",
        "BrokenPipeError",
    }, outcomes


def test_a_request_after_the_server_began_to_stop_is_told_so(served):
    _, tagger = served
    batcher = Batcher(tagging_function(tagger), 8, 0.0)
    batcher.close()  # as Ctrl+C does
    client = create_app(tagger, ServeOptions(tagger=TaggerSpec(lang="qu")), batcher).test_client()
    answer = post(client, {"inputs": "Lima"})
    assert answer.status_code == 503 and answer.get_json()["error"] == "the server is stopping"


def test_a_second_ctrl_c_while_answering_stops_at_once_and_says_so(served, monkeypatch):
    from xling.errors import XlingError
    from xling.tagging import files, serving

    _, tagger = served
    monkeypatch.setattr(files, "load_tagger", lambda spec: tagger)

    def interrupted(self):  # Ctrl+C while serving, and again while the requests in progress are answered
        raise KeyboardInterrupt

    monkeypatch.setattr(Batcher, "run", interrupted)
    options = ServeOptions(tagger=TaggerSpec(lang="qu"), address=Address(port=free_port()))
    announced = []
    with pytest.raises(XlingError, match="stopped by a second Ctrl\\+C: the requests in progress got no answer"):
        serving.serve(options, announced.append)
    assert len(announced) == 1 and "xling-http" not in {t.name for t in threading.enumerate()}  # joined


def test_a_text_gets_the_same_entities_alone_and_in_a_batch_of_others(corpora_root, monkeypatch):
    from xling.data.sources import load_ner
    from xling.tagging.files import load_tagger

    monkeypatch.setenv("XLING_CORPORA", str(corpora_root))  # found beside the clone, not named in the environment

    texts = [" ".join(s.tokens) for s in load_ner("corpus:wikiann-qu/silver-dev", "validation")][:64]
    tag = tagging_function(load_tagger(TaggerSpec(lang="qu")))  # the embedded model, its precision as auto picks
    alone = [[(e.start, e.end, e.label) for e in tag([text])[0].spans] for text in texts]
    together = [[(e.start, e.end, e.label) for e in result.spans] for result in tag(texts)]
    assert together == alone and any(alone)
