"""Several tabs and people on one annotation session: retries taken once, conflicts refused with a choice,
each person's own stream, undo and history, and logs from before answer ids still replayed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.browser import needs_chromium
from tests.test_annotation import add_batch, make_session, page_client
from xling.annotation.options import AnnotateOptions
from xling.annotation.records import Answer
from xling.annotation.session import ANSWERS_FILE, Session
from xling.data.conll import read_conll
from xling.errors import XlingError

PER = [{"start": 0, "end": 1, "label": "PER"}]
LOC = [{"start": 2, "end": 3, "label": "LOC"}]


class Person:
    """A page of one named person: every change carries the name, every read asks for that person's view."""

    def __init__(self, client, name: str):
        self.client, self.name = client, name

    def post(self, path: str, json: dict):
        return self.client.post(path, json=json | {"annotator": self.name})

    def get(self, path: str):
        return self.client.get(path + ("&" if "?" in path else "?") + f"annotator={self.name}")


@pytest.fixture
def team(tmp_path):
    """Two people's pages on one session served without --annotator: Ana's and Beto's."""
    from xling.annotation.server import create_app

    directory = make_session(tmp_path)
    client = page_client(create_app(Session(directory), AnnotateOptions(session="qu", retrain=False)), directory)
    return Person(client, "Ana"), Person(client, "Beto"), directory


def answer(item: str, spans: list, request: str, tab: str, version: int | None = 0, **more) -> dict:
    return {"item": item, "spans": spans, "judged": None, "id": request, "tab": tab, "version": version} | more


def log(directory) -> list[dict]:
    return [json.loads(line) for line in (directory / ANSWERS_FILE).read_text().splitlines()]


def test_a_retried_answer_is_taken_once_and_undo_then_takes_it_back(team):
    ana, _, directory = team
    for _ in range(2):  # the server saved it, the reply was lost, the page sends it again
        reply = ana.post("/api/answer", json=answer("s1", PER, "r1", "tab-a"))
        assert reply.status_code == 200 and reply.get_json()["taken"] == {"item": "s1", "version": 1}
    assert len(log(directory)) == 1
    undone = ana.post("/api/undo", json={"id": "u1", "tab": "tab-a"}).get_json()
    assert undone["undone"]["spans"] == PER and undone["version"] == 2  # what was answered comes back
    assert ana.post("/api/undo", json={"id": "u1", "tab": "tab-a"}).get_json()["undone"]["id"] == "r1"  # retried
    assert len(log(directory)) == 2 and "s1" not in Session(directory).answers


def test_an_answer_to_an_item_answered_elsewhere_is_refused_until_it_says_replace(team):
    ana, beto, directory = team
    assert beto.post("/api/answer", json=answer("s1", PER, "b1", "tab-b")).status_code == 200
    stale = ana.post("/api/answer", json=answer("s1", [], "a1", "tab-a"))  # Ana saw version 0
    refusal = stale.get_json()
    assert stale.status_code == 409 and "answered by Beto meanwhile" in refusal["error"]
    assert refusal["answer"]["spans"] == PER and refusal["answer"]["annotator"] == "Beto" and refusal["version"] == 1
    assert read_conll(directory / "gold.conll")[0].tags[0] == "B-PER"  # Beto's answer stands
    again = ana.post("/api/answer", json=answer("s1", [], "a2", "tab-a", version=1, replace=True))
    assert again.status_code == 200 and read_conll(directory / "gold.conll")[0].tags[0] == "O"
    assert log(directory)[-1]["replaces"] == "b1"
    # an answer by another tab of the same person says "in another tab"
    beto_seen = ana.post("/api/answer", json=answer("s1", PER, "a3", "tab-c", version=1))
    assert beto_seen.status_code == 409 and "in another tab" in beto_seen.get_json()["error"]
    # and so does one by the same named person's other tab
    beto.post("/api/answer", json=answer("s2", PER, "b2", "tab-b"))
    own = beto.post("/api/answer", json=answer("s2", [], "b3", "tab-d"))
    assert own.status_code == 409 and "in another tab" in own.get_json()["error"]


def test_a_skip_blocks_nobody_an_answer_takes_its_place(team):
    ana, beto, directory = team
    beto.post("/api/answer", json={"item": "s1", "skip": True, "id": "b1", "tab": "tab-b", "version": 0})
    assert ana.post("/api/answer", json=answer("s1", PER, "a1", "tab-a")).status_code == 200
    assert log(directory)[-1]["replaces"] == "b1" and isinstance(Session(directory).answers["s1"], Answer)


def test_two_named_people_without_overlap_are_never_given_the_same_sentence(tmp_path, monkeypatch):
    """Each person holds up to HOLD sentences, claimed as their queue is read, and nobody else is shown them,
    across a restart; a holder silent for HOLD_SECONDS lets them go."""
    from xling.annotation import team as routing
    from xling.annotation.server import create_app

    monkeypatch.setattr(routing, "HOLD", 3)
    directory = make_session(tmp_path)
    header, *items = [json.loads(line) for line in (directory / "batches" / "0001.jsonl").read_text().splitlines()]
    add_batch(directory, [items[0] | {"id": f"m{n}"} for n in range(8)])

    def people():
        client = page_client(create_app(Session(directory), AnnotateOptions(session="qu", retrain=False)), directory)
        return Person(client, "Ana"), Person(client, "Beto")

    ana, beto = people()
    queues = {p.name: [i["id"] for i in p.get("/api/state").get_json()["queue"]] for p in (ana, beto)}
    assert queues == {"Ana": ["m0", "m1", "m2"], "Beto": ["m3", "m4", "m5"]}
    assert ana.get("/api/state").get_json()["progress"]["waiting"] == 8  # the session's, not Ana's 3
    refused = 0
    for step in range(8):  # they answer in turns, each the first of their own queue, as two pages would
        person = (ana, beto)[step % 2]
        queue = [i["id"] for i in person.get("/api/state").get_json()["queue"]]
        if queue:
            reply = person.post("/api/answer", json=answer(queue[0], [], f"{person.name}-{step}", person.name))
            refused += reply.status_code != 200
            assert not set(reply.get_json()["queue"]) & {e["item"] for e in log(directory)}
        if step == 3:
            ana, beto = people()  # a restart keeps who holds what
    assert refused == 0 and len(log(directory)) == 8
    assert ana.get("/api/state").get_json()["progress"]["waiting"] == 0
    by_person = {p: {e["item"] for e in log(directory) if e["annotator"] == p} for p in ("Ana", "Beto")}
    assert not by_person["Ana"] & by_person["Beto"] and len(by_person["Ana"]) == 4
    monkeypatch.setattr(routing, "HOLD_SECONDS", 0)  # Beto away: what he holds goes to whoever asks
    add_batch(directory, [items[0] | {"id": f"n{n}"} for n in range(4)])
    ana, beto = people()
    assert [i["id"] for i in beto.get("/api/state").get_json()["queue"]] == ["n0", "n1", "n2"]
    assert [i["id"] for i in ana.get("/api/state").get_json()["queue"]] == ["n0", "n1", "n2"]


def test_undo_takes_back_the_persons_own_answers_one_by_one_from_any_tab(team):
    ana, beto, directory = team
    ana.post("/api/answer", json=answer("s1", PER, "a1", "tab-a"))
    ana.post("/api/answer", json=answer("s3", [], "a2", "tab-z"))
    beto.post("/api/answer", json=answer("s2", LOC[:0], "b1", "tab-b"))
    assert ana.post("/api/undo", json={"id": "u1", "tab": "tab-a"}).get_json()["undone"]["item"] == "s3"
    assert ana.post("/api/undo", json={"id": "u2", "tab": "tab-a"}).get_json()["undone"]["item"] == "s1"
    assert ana.post("/api/undo", json={"id": "u3", "tab": "tab-a"}).get_json()["undone"] is None
    assert list(Session(directory).answers) == ["s2"]  # Beto's answer is untouched


def test_the_history_lists_the_persons_last_answers_in_every_browser_and_an_edit_replaces_one(team):
    ana, beto, directory = team
    ana.post("/api/answer", json=answer("s1", PER, "a1", "tab-a"))
    ana.post("/api/answer", json=answer("s3", [], "a2", "tab-a"))
    ana.post("/api/answer", json={"item": "s4", "skip": True, "id": "a3", "tab": "tab-a", "version": 0})
    beto.post("/api/answer", json=answer("s2", [], "b1", "tab-b"))
    reply = ana.get("/api/history").get_json()  # any tab or browser of Ana's: no tab id asked
    history = reply["history"]
    assert reply["total"] == 3 and [
        h["item"]["id"] for h in ana.get("/api/history?offset=2").get_json()["history"]
    ] == ["s1"]
    assert [(h["item"]["id"], h["version"]) for h in history] == [("s4", 1), ("s3", 1), ("s1", 1)]
    assert history[2]["answer"]["spans"] == PER and history[2]["item"]["text"] == "Juan rimarqan Limapi ."
    edited = ana.post("/api/answer", json=answer("s1", PER + LOC, "a4", "tab-a", version=1))
    assert edited.status_code == 200 and log(directory)[-1]["replaces"] == "a1"
    assert ana.get("/api/history").get_json()["history"][0]["answer"]["spans"] == PER + LOC
    assert read_conll(directory / "gold.conll")[0].tags == ["B-PER", "O", "B-LOC", "O"]


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ({"item": "s1", "spans": PER, "judged": None, "time": 1}, "a logged answer carries its id"),
        ({"id": "u1", "undo": True, "item": "s2", "time": 3}, "'undo' takes text, not True"),
        ({"id": "u1", "undo": "a1", "time": 3}, "missing settings item"),
    ],
)
def test_a_log_line_without_its_id_or_item_is_refused_naming_the_file_and_line(tmp_path, line, said):
    directory = make_session(tmp_path)
    first = {"id": "a1", "item": "s2", "spans": [], "judged": None, "time": 2}
    (directory / ANSWERS_FILE).write_text(json.dumps(first) + "\n" + json.dumps(line) + "\n")
    with pytest.raises(XlingError) as refused:
        Session(directory)
    assert f"{directory / ANSWERS_FILE}:2: " in str(refused.value) and said in str(refused.value)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [("id", "", "id must be text"), ("tab", 7, "'tab' takes text"), ("version", -1, "version must be")]
    + [("version", True, "'version' takes a whole number"), ("replace", "yes", "'replace' takes true or false")]
    + [("spans", [{"start": 0, "end": 1, "label": "PER", "why": ["x"]}], "'spans' takes a list of tables")]
    + [("colour", "red", "unknown settings 'colour'")],
)
def test_bad_request_ids_and_versions_are_refused_in_one_line(team, field, value, message):
    ana, _, directory = team
    reply = ana.post("/api/answer", json=answer("s1", PER, "r1", "tab-a") | {field: value})
    assert reply.status_code == 400 and message in reply.get_json()["error"]
    assert not (directory / ANSWERS_FILE).exists() or not log(directory)


@needs_chromium
def test_in_chromium_two_tabs_race_and_the_stale_one_is_asked_not_obeyed(tmp_path):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    from tests.browser import chromium, press, served, wait_for

    directory = make_session(tmp_path)
    with (
        served(Session(directory), AnnotateOptions(session="qu", retrain=False, annotator="Ana")) as address,
        chromium() as driver,
    ):
        driver.get(address)
        first = driver.current_window_handle
        driver.switch_to.new_window("tab")
        driver.get(address)
        second = driver.current_window_handle
        for tab in (first, second):
            driver.switch_to.window(tab)
            wait_for(driver, "window.xlingPage.item && window.xlingPage.item.id === 's1'")
        # tab A removes the wrong LOC on "Limapi" and accepts; tab B accepts the stale suggestion
        driver.switch_to.window(first)
        press(driver, Keys.ARROW_RIGHT, Keys.ARROW_RIGHT, "x", Keys.ENTER)
        wait_for(
            driver,
            "window.xlingPage.pending.length === 0 && window.xlingPage.item && window.xlingPage.item.id === 's2'",
        )
        driver.switch_to.window(second)
        press(driver, Keys.ENTER)
        wait_for(driver, "window.xlingPage.conflicts.length === 1")
        assert "answered in another tab meanwhile" in driver.find_element("id", "conflicts").text
        assert read_conll(directory / "gold.conll")[0].tags == ["B-PER", "O", "O", "O"]  # A's answer stands
        driver.find_element("css selector", "#conflicts button.keep").click()
        wait_for(driver, "window.xlingPage.conflicts.length === 0")
        # keys with Ctrl, Alt or Meta are the browser's: they neither accept nor skip
        for modifier in (Keys.CONTROL, Keys.ALT):
            for key in ("a", "s", Keys.ENTER):
                ActionChains(driver).key_down(modifier).send_keys(key).key_up(modifier).perform()
        assert driver.execute_script("return window.xlingPage.item.id") == "s2"
        press(driver, "s")
        wait_for(
            driver,
            "window.xlingPage.pending.length === 0 && window.xlingPage.item && window.xlingPage.item.id === 's3'",
        )
        driver.switch_to.window(first)  # a skip asks nobody: A's answer to s2 takes its place
        wait_for(driver, "window.xlingPage.item && window.xlingPage.item.id === 's2'")
        press(driver, Keys.ENTER)
        wait_for(
            driver,
            "window.xlingPage.pending.length === 0 && window.xlingPage.item && window.xlingPage.item.id === 's3'",
        )
        assert driver.execute_script("return window.xlingPage.conflicts.length") == 0
    events = log(directory)
    assert [e["item"] for e in events] == ["s1", "s2", "s2"] and events[1]["skip"] and events[2]["replaces"]
    assert [len(s.tokens) for s in read_conll(directory / "gold.conll")] == [4, 12]


@pytest.mark.slow
def test_a_server_killed_during_a_round_is_restarted_and_waits_for_that_round_instead_of_starting_another(tmp_path):
    import subprocess
    import time
    import urllib.request

    from tests.test_annotation import free_port, kill_9, post, start_server

    directory = make_session(tmp_path)
    port = free_port()

    def start() -> subprocess.Popen:
        return start_server(tmp_path, port, "--retrain-every", "1", run=("tests.stub_round", "serve"))

    def state() -> dict:
        return json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/api/state", timeout=5))

    server = start()
    try:
        assert post(port, "/api/answer", answer("s1", PER, "a1", "tab-a"), directory)["retraining"]["running"]
    finally:
        kill_9(server)
    server = start()  # the round goes on without its server
    try:
        assert state()["retraining"]["running"] and state()["retraining"]["elapsed"] is not None
        post(port, "/api/answer", answer("s2", [], "a2", "tab-a"), directory)  # would start a round: one runs
        for _ in range(200):
            if not state()["retraining"]["running"]:
                break
            time.sleep(0.1)
        done = state()
    finally:
        server.terminate()
        server.wait()
    assert len((directory / "launches").read_text().splitlines()) == 1  # one round ran
    assert [r["round"] for r in done["retraining"]["rounds"]] == [1] and not done["retraining"]["running"]
    assert [item["id"] for item in done["queue"]] == ["s3", "s4"] and Session(directory).headers[-1].adapter == "stub"


def test_a_failed_round_shows_one_line_a_person_can_act_on(tmp_path):
    import time

    from xling.annotation.server import create_app

    directory = make_session(tmp_path)
    options = AnnotateOptions(session="qu", retrain_every=1, workspace=str(tmp_path), annotator="Ana")  # no --dev
    api = page_client(create_app(Session(directory), options), directory)
    api.post("/api/answer", json=answer("s1", PER, "a1", "tab-a"))
    for _ in range(300):
        status = api.get("/api/state").get_json()["retraining"]
        if not status["running"]:
            break
        time.sleep(0.1)
    said = "no dev data: give --dev FILE, or label at least 10 whole sentences (correct mode) first"
    for _ in range(50):  # the waiting thread writes the round's line just after the process ends
        if api.get("/api/state").get_json()["retraining"]["failed"]:
            break
        time.sleep(0.1)
    assert api.get("/api/state").get_json()["retraining"]["failed"] == said, (directory / "retrain.log").read_text()
    # a restart still says so, and starts no round again until as many new answers as start one have come
    again = page_client(create_app(Session(directory), options), directory)
    status = again.get("/api/state").get_json()["retraining"]
    assert status["failed"] == said and not status["running"] and status["rounds"] == []
    again.post("/api/answer", json=answer("s1", [], "a2", "tab-a", version=1, replace=True))  # the same count
    assert not again.get("/api/state").get_json()["retraining"]["running"]


def test_agreement_on_a_planted_two_person_session_is_the_value_computed_by_hand(tmp_path):
    directory = make_session(tmp_path)
    session = Session(directory)
    session.overlap = 1.0  # every sentence answered by two people, as `xling annotate --overlap 1` serves it
    given = {
        ("s1", "Ana"): PER + LOC,  # Juan PER, Limapi LOC
        ("s1", "Beto"): PER,
        ("s3", "Ana"): [{"start": 0, "end": 1, "label": "PER"}, {"start": 1, "end": 2, "label": "LOC"}],
        ("s3", "Beto"): [{"start": 0, "end": 2, "label": "ORG"}],  # "Maria Punupi" an organisation
    }
    for number, ((item, person), spans) in enumerate(given.items()):
        session.record(answer(item, spans, f"r{number}", f"tab-{person}"), person)
    # entities: Ana 4, Beto 2, shared 1 (Juan PER): F1 = 2 x 1 / (4 + 2) = 1/3.
    # words (7): agreeing on Juan, rimarqan, ".", tiyan: observed 4/7; Ana's tags B-PER 2, O 3, B-LOC 2 and
    # Beto's B-PER 1, O 4, B-ORG 1, I-ORG 1: chance (2 x 1 + 3 x 4) / 49 = 2/7; kappa = (4/7 - 2/7) / (5/7) = 0.4
    agreement = Session(directory).agreement()
    assert agreement["items"] == 2 and len(agreement["pairs"]) == 1
    pair = agreement["pairs"][0]
    assert pair["people"] == ["Ana", "Beto"] and (pair["sentences"], pair["words"]) == (2, 7)
    assert pair["entity_f1"] == pytest.approx(1 / 3) and pair["kappa"] == pytest.approx(0.4)
    low, high = pair["entity_f1_interval"]
    assert 0 <= low <= 1 / 3 <= high <= 1 and pair["kappa_interval"][0] <= 0.4 <= pair["kappa_interval"][1]
    assert pair["per_type"] == {
        "LOC": {"first": 2, "second": 0, "both": 0, "f1": 0.0},
        "ORG": {"first": 0, "second": 1, "both": 0, "f1": 0.0},
        "PER": {"first": 2, "second": 1, "both": 1, "f1": pytest.approx(2 / 3)},
    }


def test_with_overlap_a_shared_item_waits_for_a_second_person_and_a_review_settles_their_disagreement(tmp_path):
    from xling.annotation.server import create_app
    from xling.annotation.team import answered_twice

    assert 450 < sum(answered_twice(f"item-{n}", 0.5) for n in range(1000)) < 550  # the share, by hash
    directory = make_session(tmp_path)
    options = AnnotateOptions(session="qu", retrain=False, overlap=1.0)
    api = page_client(create_app(Session(directory), options), directory)
    ana, beto = {"annotator": "Ana"}, {"annotator": "Beto"}
    reply = api.post("/api/answer", json=answer("s1", PER + LOC, "a1", "tab-a") | ana).get_json()
    assert "s1" not in reply["queue"]  # done for Ana ...
    beto_queue = api.get("/api/state?annotator=Beto").get_json()["queue"]
    assert beto_queue[0]["id"] == "s1" and beto_queue[0]["version"] == 1  # ... not yet for Beto
    second = api.post("/api/answer", json=answer("s1", PER, "b1", "tab-b", version=1) | beto)
    assert second.status_code == 200 and "s1" not in second.get_json()["queue"]
    assert "s1" not in [i["id"] for i in api.get("/api/state?annotator=Cusi").get_json()["queue"]]  # two answered
    assert read_conll(directory / "gold.conll")[0].tags == ["B-PER", "O", "B-LOC", "O"]  # the first answer's
    review = api.get("/api/review").get_json()
    assert [d["item"]["id"] for d in review["disagreements"]] == ["s1"] and review["agreement"]["items"] == 1
    assert [a["annotator"] for a in review["disagreements"][0]["answers"]] == ["Ana", "Beto"]
    settle = {"id": "v1", "item": "s1", "choose": "b1", "annotator": "Cusi"}
    assert api.post("/api/adjudicate", json=settle).status_code == 200
    assert read_conll(directory / "gold.conll")[0].tags == ["B-PER", "O", "O", "O"]  # Beto's, as settled
    assert api.get("/api/review").get_json()["disagreements"] == []
    assert log(directory)[-1] | {"time": 0} == {
        "adjudicate": "b1",
        "item": "s1",
        "id": "v1",
        "annotator": "Cusi",
        "time": 0,
    }
    wrong = api.post("/api/adjudicate", json={"id": "v2", "item": "s1", "choose": "zz", "annotator": "Cusi"})
    assert wrong.status_code == 404 and "no answer in force" in wrong.get_json()["error"]


def test_two_tabs_racing_on_every_item_lose_and_duplicate_nothing(tmp_path):
    """Two tabs answer all items at once from threads: each item ends with exactly one answer, each refusal
    is a 409 naming the answer in force, and the log holds each accepted answer once."""
    import threading

    from xling.annotation.server import create_app

    directory = make_session(tmp_path)
    header, *items = [json.loads(line) for line in (directory / "batches" / "0001.jsonl").read_text().splitlines()]
    many = [item | {"id": f"m{n}"} for n in range(50) for item in items[:1]]
    add_batch(directory, many)
    app = create_app(Session(directory), AnnotateOptions(session="qu", retrain=False, annotator="Ana"))
    outcomes = {"tab-a": [], "tab-b": []}

    def tab(name: str) -> None:
        client = page_client(app, directory)
        for n in range(50):
            body = answer(f"m{n}", PER if name == "tab-a" else [], f"{name}-{n}", name)  # they differ
            for _ in range(2):  # every request sent twice, as after a lost reply
                reply = client.post("/api/answer", json=body)
            outcomes[name].append((reply.status_code, reply.get_json()))

    threads = [threading.Thread(target=tab, args=(name,)) for name in outcomes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    events = log(directory)
    accepted = [e["id"] for e in events]
    assert len(accepted) == len(set(accepted)) == 50 and {e["item"] for e in events} == {f"m{n}" for n in range(50)}
    for name, results in outcomes.items():
        for n, (status, body) in enumerate(results):
            if f"{name}-{n}" in accepted:
                assert status == 200
            else:  # the other tab's answer stands, and this tab was told which
                assert status == 409 and body["answer"]["id"] != f"{name}-{n}"
    assert len(Session(directory).answers) == 50


def test_an_answer_retried_after_a_kill_9_of_the_server_is_taken_once(tmp_path):
    """The server saved the answer and was killed before replying; the page sends it again to the restarted
    server, which knows the id from the log."""

    from tests.test_annotation import free_port, kill_9, post, start_server

    directory = make_session(tmp_path)
    port = free_port()
    body = answer("s1", PER, "a1", "tab-a")
    server = start_server(tmp_path, port)
    try:
        post(port, "/api/answer", body, directory)
    finally:
        kill_9(server)
    server = start_server(tmp_path, port)
    try:
        again = post(port, "/api/answer", body, directory)
    finally:
        server.terminate()
        server.wait()
    assert again["taken"] == {"item": "s1", "version": 1} and "s1" not in again["queue"]
    assert [e["id"] for e in log(directory)] == ["a1"]


def test_one_persons_session_takes_no_other_name_and_a_shared_one_takes_no_answer_without_one(tmp_path):
    from xling.annotation.server import create_app
    from xling.errors import XlingError

    directory = make_session(tmp_path)
    ana = page_client(
        create_app(Session(directory), AnnotateOptions(session="qu", retrain=False, annotator="Ana")), directory
    )
    refused = ana.post("/api/answer", json=answer("s1", PER, "b1", "tab-b", annotator="Beto"))
    assert refused.status_code == 403 and "Ana's alone" in refused.get_json()["error"]
    assert ana.post("/api/answer", json=answer("s1", PER, "a1", "tab-a")).status_code == 200
    assert log(directory)[-1]["annotator"] == "Ana"  # the one person's, named by the server
    fresh = make_session(tmp_path / "fresh")  # shared from the first person on, before anyone gave a name
    shared = page_client(create_app(Session(fresh), AnnotateOptions(session="qu", retrain=False)), fresh)
    state = shared.get("/api/state").get_json()
    assert state["needs_name"] and state["queue"] == []  # nothing claimed for nobody
    for route, body in (("/api/answer", answer("s2", [], "x1", "tab-x")), ("/api/undo", {"id": "u1", "tab": "x"})):
        nameless = shared.post(route, json=body)
        assert nameless.status_code == 422 and "give your name" in nameless.get_json()["error"]
    assert shared.get("/api/history").status_code == 422
    assert not (fresh / ANSWERS_FILE).exists() and not (fresh / "claims.jsonl").exists()
    with pytest.raises(XlingError, match="one-person session"):
        AnnotateOptions(session="qu", annotator="Ana", overlap=0.5)


def test_a_conflict_shows_both_answers_and_the_same_labels_are_no_conflict(team):
    ana, beto, directory = team
    beto.post("/api/answer", json=answer("s1", PER, "b1", "tab-b"))
    same = ana.post("/api/answer", json=answer("s1", PER, "a1", "tab-a"))  # Ana saw version 0, answers alike
    assert same.status_code == 200 and len(log(directory)) == 1
    other = ana.post("/api/answer", json=answer("s1", PER + LOC, "a2", "tab-a")).get_json()
    assert other["answer"]["spans"] == PER and other["yours"]["spans"] == PER + LOC
    assert other["item"]["text"] == "Juan rimarqan Limapi ." and other["version"] == 1


def test_undo_says_what_it_restored_and_a_second_undo_keeps_the_correction_it_takes_back(team):
    ana, _, directory = team
    ana.post("/api/answer", json=answer("s1", PER, "a1", "tab-a"))
    ana.post("/api/answer", json=answer("s1", PER + LOC, "a2", "tab-a", version=1))  # a correction
    first = ana.post("/api/undo", json={"id": "u1", "tab": "tab-a"}).get_json()
    assert first["undone"]["id"] == "a2" and first["restored"]["id"] == "a1" and first["item"]["id"] == "s1"
    assert ana.get("/api/history").get_json()["history"][0]["answer"]["id"] == "a1"  # the list is true
    second = ana.post("/api/undo", json={"id": "u2", "tab": "tab-b"}).get_json()  # from another tab: Ana's still
    assert second["undone"]["spans"] == PER and second["restored"] is None and second["version"] == 4
    assert ana.get("/api/history").get_json() == {"history": [], "total": 0}


def test_a_reviewer_settles_a_disagreement_with_an_answer_of_their_own(tmp_path):
    from xling.annotation.server import create_app

    directory = make_session(tmp_path)
    api = page_client(
        create_app(Session(directory), AnnotateOptions(session="qu", retrain=False, overlap=1.0)), directory
    )
    api.post("/api/answer", json=answer("s1", PER + LOC, "a1", "tab-a", annotator="Ana"))
    early = api.post("/api/adjudicate", json={"id": "v0", "item": "s1", "choose": "a1", "annotator": "Cusi"})
    assert early.status_code == 409 and "no two answers" in early.get_json()["error"]
    api.post("/api/answer", json=answer("s1", PER, "b1", "tab-b", version=1, annotator="Beto"))
    own = [{"start": 0, "end": 1, "label": "PER"}, {"start": 2, "end": 3, "label": "ORG"}]
    body = {"id": "v1", "item": "s1", "spans": own, "judged": None, "annotator": "Cusi"}
    assert api.post("/api/adjudicate", json=body).status_code == 200
    assert read_conll(directory / "gold.conll")[0].tags == ["B-PER", "O", "B-ORG", "O"]
    assert api.get("/api/review").get_json()["disagreements"] == []
    assert api.get("/api/state?annotator=Dora").get_json()["queue"][0]["id"] != "s1"  # nobody owes it now


def rounds_launched(tmp_path, monkeypatch, sentences: int) -> tuple[list, Path, Path]:
    """A session of `sentences` new sentences (m0, m1, ...) and a dev file, whose rounds are stand-ins that end at
    once: (a list that grows by one each round launched, the session folder, the dev file)."""
    import sys

    from xling.annotation import retrain

    launched = []
    monkeypatch.setattr(
        retrain, "command", lambda directory, options: launched.append(1) or [sys.executable, "-c", "pass"]
    )
    directory = make_session(tmp_path)
    header, *items = [json.loads(line) for line in (directory / "batches" / "0001.jsonl").read_text().splitlines()]
    batch = [items[0] | {"id": f"m{n}"} for n in range(sentences)]
    add_batch(directory, batch)
    dev = tmp_path / "dev.conll"
    dev.write_text("Juan B-PER\nrimarqan O\n\nLima B-LOC\n\n")
    return launched, directory, dev


def test_a_round_starts_early_enough_that_the_next_batch_comes_before_the_last_sentence(tmp_path, monkeypatch):
    """At the defaults a round starts once a person has HEADROOM sentences left, not when they have none; after
    a failed round it waits for new answers instead."""
    from xling.annotation.server import create_app
    from xling.fileio import append_jsonl

    launched, directory, dev = rounds_launched(tmp_path, monkeypatch, 13)
    options = AnnotateOptions(session="qu", dev=str(dev), workspace=str(tmp_path), annotator="Ana")
    assert options.retrain_every == 25  # the default, more than this batch holds
    api = page_client(create_app(Session(directory), options), directory)
    lefts = []
    for n in range(3):
        reply = api.post("/api/answer", json=answer(f"m{n}", [], f"a{n}", "tab-a")).get_json()
        lefts.append(len(reply["queue"]))
        if launched:
            break
    assert lefts == [12, 11, 10] and len(launched) == 1  # started with ten sentences still to label
    append_jsonl(directory / "rounds.jsonl", {"failed": "planted", "sentences": 3})
    for _ in range(50):  # the stand-in round has ended
        if not api.get("/api/state").get_json()["retraining"]["running"]:
            break
    api.post("/api/answer", json=answer("m3", [], "a3", "tab-a"))
    assert len(launched) == 1  # a failed round is not tried again at every answer


def test_when_rounds_do_not_beat_the_start_the_page_says_what_the_answers_hold(tmp_path):
    from xling.annotation.server import create_app

    directory = make_session(tmp_path)
    rounds = [{"round": 0, "sentences": 0, "f1": 0.5, "adapter": "ner-en"}] + [
        {"round": n, "sentences": n, "f1": 0.4, "previous_f1": 0.5, "kept": False, "adapter": "ner-en"} for n in (1, 2)
    ]
    (directory / "rounds.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rounds))
    api = page_client(
        create_app(Session(directory), AnnotateOptions(session="qu", retrain=False, annotator="Ana")), directory
    )
    for n, item in enumerate(("s1", "s2", "s3")):
        api.post("/api/answer", json=answer(item, [], f"a{n}", "tab-a"))
    advice = api.get("/api/state").get_json()["retraining"]["advice"]
    assert advice.startswith("2 rounds have not beaten the start: the 3 answers so far hold 0 names; too few")


def test_with_overlap_an_answered_once_sentence_stays_owed_across_a_new_batch_and_a_restart(tmp_path):
    from xling.annotation.server import create_app

    directory = make_session(tmp_path)
    options = AnnotateOptions(session="qu", retrain=False, overlap=1.0)
    api = page_client(create_app(Session(directory), options), directory)
    api.post("/api/answer", json=answer("s1", PER, "a1", "tab-a", annotator="Ana"))
    header, *items = [json.loads(line) for line in (directory / "batches" / "0001.jsonl").read_text().splitlines()]
    add_batch(directory, [items[2] | {"id": "n1"}])  # a round's
    restarted = page_client(create_app(Session(directory), options), directory)
    beto = [i["id"] for i in restarted.get("/api/state?annotator=Beto").get_json()["queue"]]
    assert beto == ["n1", "s1"]  # the new batch, then what Beto still owes from the last
    assert [i["id"] for i in restarted.get("/api/state?annotator=Ana").get_json()["queue"]] == ["n1"]
    restarted.post("/api/answer", json=answer("s1", [], "b1", "tab-b", version=1, annotator="Beto"))
    assert "s1" not in [i["id"] for i in restarted.get("/api/state?annotator=Cusi").get_json()["queue"]]
    assert {e["annotator"] for e in log(directory)} == {"Ana", "Beto"} and len(log(directory)) == 2


def test_in_a_shared_session_retrain_every_counts_answers_and_starts_early_only_when_everyone_nears_the_end(
    tmp_path, monkeypatch
):
    """A person's stream holds at most HOLD sentences, so their own count is always near its end: a round starts
    at --retrain-every answers, or early once the session's sentences still to answer fall to HEADROOM."""
    from xling.annotation.server import create_app

    launched, directory, dev = rounds_launched(tmp_path, monkeypatch, 40)
    options = AnnotateOptions(session="qu", dev=str(dev), workspace=str(tmp_path), retrain_every=6)
    client = page_client(create_app(Session(directory), options), directory)
    ana, beto = Person(client, "Ana"), Person(client, "Beto")
    started_at = []
    for n in range(8):
        person = (ana, beto)[n % 2]
        queue = [i["id"] for i in person.get("/api/state").get_json()["queue"]]
        person.post("/api/answer", json=answer(queue[0], [], f"{person.name}{n}", person.name))
        if launched and not started_at:
            started_at.append(n + 1)
    assert started_at == [6] and len(launched) == 1  # at the sixth answer, not the first


def test_a_person_never_settles_their_own_disagreement_and_a_named_reviewer_alone_settles(tmp_path):
    from xling.annotation.server import create_app

    directory = make_session(tmp_path)
    options = AnnotateOptions(session="qu", retrain=False, overlap=1.0)
    api = page_client(create_app(Session(directory), options), directory)
    api.post("/api/answer", json=answer("s1", PER + LOC, "a1", "tab-a", annotator="Ana"))
    api.post("/api/answer", json=answer("s1", PER, "b1", "tab-b", version=1, annotator="Beto"))
    own = api.post("/api/adjudicate", json={"id": "v1", "item": "s1", "choose": "a1", "annotator": "Ana"})
    assert own.status_code == 403 and "Ana answered this sentence" in own.get_json()["error"]
    reviewed = page_client(create_app(Session(directory), _with(options, "Dora")), directory)
    other = reviewed.post("/api/adjudicate", json={"id": "v2", "item": "s1", "choose": "a1", "annotator": "Cusi"})
    assert other.status_code == 403 and "Dora settles" in other.get_json()["error"]
    spans = [{"start": 0, "end": 1, "label": "PER"}, {"start": 2, "end": 3, "label": "ORG"}]
    body = {"id": "v3", "item": "s1", "spans": spans, "judged": None, "annotator": "Dora"}
    assert reviewed.post("/api/adjudicate", json=body).status_code == 200
    pairs = reviewed.get("/api/review").get_json()["agreement"]["pairs"]
    assert [pair["people"] for pair in pairs] == [["Ana", "Beto"]]  # the reviewer's answer is nobody's in agreement
    assert reviewed.get("/api/state?annotator=Ana").get_json()["progress"]["people"] == {"Ana": 1, "Beto": 1}


def _with(options: AnnotateOptions, reviewer: str) -> AnnotateOptions:
    from dataclasses import replace

    return replace(options, reviewer=reviewer)


def test_claims_lapse_once_a_tab_is_idle_and_an_idle_tab_claims_nothing_of_a_new_batch(tmp_path, monkeypatch):
    from xling.annotation import team as routing
    from xling.annotation.server import create_app

    monkeypatch.setattr(routing, "HOLD", 3)
    directory = make_session(tmp_path)
    header, *items = [json.loads(line) for line in (directory / "batches" / "0001.jsonl").read_text().splitlines()]
    add_batch(directory, [items[0] | {"id": f"m{n}"} for n in range(6)])
    client = page_client(create_app(Session(directory), AnnotateOptions(session="qu", retrain=False)), directory)
    ana, beto = Person(client, "Ana"), Person(client, "Beto")
    assert [i["id"] for i in ana.get("/api/state?idle=1").get_json()["queue"]] == []  # away: claims nothing
    assert [i["id"] for i in ana.get("/api/state").get_json()["queue"]] == ["m0", "m1", "m2"]
    clock = routing.time.time()
    monkeypatch.setattr(routing.time, "time", lambda: clock + routing.HOLD_SECONDS + 1)  # Ana pressed no key since
    assert [i["id"] for i in beto.get("/api/state").get_json()["queue"]] == ["m0", "m1", "m2"]


def test_skips_are_no_ones_work_and_overlap_counts_a_sentence_done_once_two_answered(tmp_path):
    from xling.annotation.server import create_app

    directory = make_session(tmp_path)
    options = AnnotateOptions(session="qu", retrain=False, overlap=1.0)
    api = page_client(create_app(Session(directory), options), directory)
    api.post("/api/answer", json=answer("s1", PER, "a1", "tab-a", annotator="Ana"))
    api.post(
        "/api/answer",
        json={"item": "s2", "skip": True, "id": "a2", "tab": "tab-a", "version": 0} | {"annotator": "Ana"},
    )
    progress = api.get("/api/state?annotator=Ana").get_json()["progress"]
    assert progress["people"] == {"Ana": 1}  # the skip is not counted as Ana's work
    assert progress["waiting"] == 4 and progress["halfway"] == 2  # everything still owes a second answer


def test_a_damaged_claims_line_is_left_out_and_named(tmp_path):
    directory = make_session(tmp_path)
    (directory / "claims.jsonl").write_text(
        '{"item": "s1", "annotator": "Ana", "time": "soon"}\n[1]\n{"item": "s2", "annotator": "Beto", "time": 5}\n'
    )
    session = Session(directory)
    assert session.routing.claims == {"s2": ("Beto", 5.0)}
    assert [w.split("claims.jsonl:")[1][:1] for w in session.warnings] == ["1", "2"]


@pytest.mark.parametrize("key", ["annotator", "id", "tab"])
def test_a_lone_surrogate_in_a_request_is_a_400_on_every_route(team, key):
    ana, _, directory = team
    for route, body in (
        ("/api/answer", {"item": "s1", "spans": [], "judged": None, "annotator": "Ana"}),
        ("/api/undo", {"id": "u1", "tab": "t", "annotator": "Ana"}),
        ("/api/adjudicate", {"id": "v1", "item": "s1", "choose": "x", "annotator": "Ana"}),
    ):
        text = json.dumps(body | {key: "SURROGATE"}).replace("SURROGATE", "\\ud800")
        reply = ana.client.post(route, data=text, content_type="application/json")
        assert reply.status_code == 400 and "surrogate" in reply.get_json()["error"], (route, reply.get_json())
    assert not (directory / ANSWERS_FILE).exists()
