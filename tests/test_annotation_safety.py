"""The annotation server against other web pages and hostile requests: Host allow-list (DNS rebinding),
cross-site changes (CSRF), bounded bodies, one server per session; fuzzed with Hypothesis and tried in Chromium
from a second origin."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.browser import needs_chromium
from tests.test_annotation import free_port, make_session, page_client, start_server
from xling.annotation.options import AnnotateOptions
from xling.annotation.server import MAX_BODY, create_app
from xling.annotation.session import ANSWERS_FILE, Session
from xling.errors import XlingError
from xling.web import Address

ANSWER = {"item": "s1", "spans": [{"start": 0, "end": 1, "label": "PER"}], "judged": None}


@pytest.fixture
def served_session(tmp_path):
    directory = make_session(tmp_path)
    app = create_app(Session(directory), AnnotateOptions(session="qu", retrain=False, annotator="Ana"))
    return app, directory


def answers(directory) -> list[str]:
    file = directory / ANSWERS_FILE
    return file.read_text().splitlines() if file.exists() else []


@pytest.mark.parametrize("host", ["127.0.0.1:8321", "localhost:8321", "[::1]:8321", "LOCALHOST"])
def test_the_hosts_it_serves_on_are_answered(served_session, host):
    app, directory = served_session
    assert page_client(app, directory).get("/api/state", headers={"Host": host}).status_code == 200


@pytest.mark.parametrize("host", ["attacker.example:8321", "attacker.example", "127.0.0.1.nip.io:8321", "localhost."])
def test_another_host_is_refused_so_a_rebound_name_reads_nothing(served_session, host):
    app, directory = served_session
    api = page_client(app, directory)
    for method, path in [("get", "/api/state"), ("get", "/"), ("get", "/api/gold.conll"), ("post", "/api/undo")]:
        reply = getattr(api, method)(path, headers={"Host": host}, json={} if method == "post" else None)
        assert reply.status_code == 403 and "Qusqu" not in reply.get_data(as_text=True), (method, path)
    assert answers(directory) == []


def test_the_host_given_with_host_is_answered_too(tmp_path):
    directory = make_session(tmp_path)
    options = AnnotateOptions(session="qu", address=Address(host="10.1.2.3", token="s3cret"), retrain=False)
    api = page_client(create_app(Session(directory), options), directory)
    assert api.get("/api/state?token=s3cret", headers={"Host": "10.1.2.3:8321"}).status_code == 200
    assert api.get("/api/state?token=s3cret", headers={"Host": "attacker.example"}).status_code == 403


@pytest.mark.parametrize(
    ("headers", "body", "status", "message"),
    [
        ({"Origin": "http://attacker.example"}, json.dumps(ANSWER), 403, "from http://attacker.example"),
        ({"Referer": "http://attacker.example/page"}, json.dumps(ANSWER), 403, "from http://attacker.example"),
        ({"Origin": "null"}, json.dumps(ANSWER), 403, "from null"),
        ({"X-Xling-Page-Token": ""}, json.dumps(ANSWER), 403, "page's token"),
        ({"X-Xling-Page-Token": "guess"}, json.dumps(ANSWER), 403, "page's token"),
        ({"Content-Type": "application/x-www-form-urlencoded"}, "item=s1", 415, "send JSON"),
        ({"Content-Type": "text/plain"}, json.dumps(ANSWER), 415, "send JSON"),
        ({}, "[" * 30000 + "]" * 30000, 400, "nested too deeply"),
        ({}, "[" * 50_000, 400, "nested too deeply"),
        ({}, '{"item": "s1", "spans": [' + "1," * MAX_BODY + "1]}", 413, "KiB"),
        ({}, '{"item": ', 400, "not JSON"),
        ({}, b'{"item": "\xff"}', 400, "not JSON"),
    ],
)
def test_a_change_from_elsewhere_or_not_json_is_refused_and_nothing_is_written(
    served_session, headers, body, status, message
):
    app, directory = served_session
    api = page_client(app, directory)
    headers = {"Content-Type": "application/json"} | headers
    for path in ("/api/answer", "/api/undo"):
        reply = api.post(path, data=body, headers=headers)
        assert reply.status_code == status and message in reply.get_json()["error"], (path, reply.get_json())
    assert answers(directory) == []


def test_the_page_carries_its_token_and_a_same_origin_change_goes_through(served_session):
    app, directory = served_session
    api = page_client(app, directory)
    html = api.get("/").get_data(as_text=True)
    token = (directory / "page-token").read_text()
    assert f'<meta name="xling-page-token" content="{token}">' in html and len(token) >= 40
    assert (directory / "page-token").stat().st_mode & 0o777 == 0o600
    origin = {"Origin": "http://localhost", "Referer": "http://localhost/"}
    assert api.post("/api/answer", json=ANSWER, headers=origin).status_code == 200
    assert api.post("/api/undo", json={}, headers=origin).get_json()["undone"]["item"] == "s1"


@pytest.mark.parametrize("port", [0, -1, 65536, 70000])
def test_a_port_out_of_range_is_refused(port):
    with pytest.raises(XlingError, match="port must be from 1 to 65535"):
        AnnotateOptions(session="qu", address=Address(port=port))


def test_a_second_server_on_one_session_is_refused_naming_the_first(tmp_path):
    make_session(tmp_path)
    first_port, second_port = free_port(), free_port()
    first = start_server(tmp_path, first_port)
    try:
        command = [sys.executable, "-m", "xling", "annotate", "qu", "-w", str(tmp_path), "--port", str(second_port)]
        second = subprocess.run(command + ["--no-retrain"], capture_output=True, text=True, timeout=60)
    finally:
        first.terminate()
        first.wait()
    lines = second.stderr.strip().splitlines()
    assert second.returncode == 1 and len(lines) == 1, second.stderr
    assert f"already served by xling annotate (pid {first.pid} at http://127.0.0.1:{first_port}/)" in lines[0]


# ---- fuzzed: any body gets 2xx or 4xx, and the log replays to the state the server shows ------------------------

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 20) | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12,
)
SPAN = st.fixed_dictionaries(
    {"start": st.integers(-1, 13), "end": st.integers(-1, 13), "label": st.sampled_from(["PER", "LOC", "X", 1])}
)
ANSWERS = st.fixed_dictionaries(
    {"item": st.sampled_from(["s1", "s2", "s3", "s4", "nope", 3]), "spans": st.lists(SPAN, max_size=3) | JSON_VALUES},
    optional={"judged": st.none() | st.lists(st.integers(-1, 13), max_size=3) | JSON_VALUES, "skip": JSON_VALUES},
)
REQUESTS = st.lists(
    st.tuples(
        st.sampled_from(["/api/answer", "/api/undo", "/api/adjudicate"]), ANSWERS | JSON_VALUES | st.binary(max_size=40)
    ),
    min_size=1,
    max_size=8,
)


@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])  # examples: the profile's
@given(requests=REQUESTS)
def test_any_body_gets_a_4xx_or_is_taken_and_the_log_replays_to_the_same_state(tmp_path_factory, requests):
    directory = make_session(tmp_path_factory.mktemp("fuzz"))
    session = Session(directory)
    api = page_client(create_app(session, AnnotateOptions(session="qu", retrain=False, annotator="Ana")), directory)
    for path, body in requests:
        data = body if isinstance(body, bytes) else json.dumps(body)
        reply = api.post(path, data=data, headers={"Content-Type": "application/json"})
        assert reply.status_code < 500 and "error" in reply.get_json() or reply.status_code == 200, reply.get_json()
    replayed = Session(directory)
    assert replayed.progress() == session.progress() and replayed.answers == session.answers
    assert [item.id for item in replayed.queue()] == [item.id for item in session.queue()]


# ---- never a 500: damaged files, a full disk, odd names, odd bodies --------------------------------------------


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/undo", "[1]"),
        ("/api/adjudicate", "[1]"),
        ("/api/adjudicate", '{"item": ["s1"], "choose": "x"}'),
        ("/api/answer", '{"item": "s1", "version": ' + "9" * 5000 + "}"),
        ("/api/answer", '{"item": "s1", "spans": [], "judged": NaN}'),
    ],
)
def test_a_malformed_body_on_any_route_is_a_400_and_changes_nothing(served_session, path, body):
    app, directory = served_session
    page_client(app, directory).post("/api/answer", json=ANSWER | {"id": "a1"})
    reply = page_client(app, directory).post(path, data=body, headers={"Content-Type": "application/json"})
    assert reply.status_code == 400 and reply.get_json()["error"], reply.get_json()
    assert len(answers(directory)) == 1


def test_a_damaged_round_line_is_skipped_and_named_so_the_page_still_loads(served_session):
    app, directory = served_session
    good = {"round": 0, "sentences": 0, "f1": 0.5, "adapter": "ner-en"}
    lines = [good, "{not json", [1], {"round": "one", "sentences": 3}, {"failed": "out of memory"}]
    (directory / "rounds.jsonl").write_text("".join(f"{json.dumps(r) if r != lines[1] else r}\n" for r in lines))
    state = page_client(app, directory).get("/api/state")
    assert state.status_code == 200
    assert state.get_json()["retraining"]["rounds"] == [good]
    file = directory / "rounds.jsonl"
    assert state.get_json()["warnings"] == [
        f"{file}:2: a damaged line",
        f"{file}:3: expected a JSON object of Round settings, not list",
        f"{file}:4: option 'round' takes a whole number, not 'one'",
        f"{file}:5: missing settings sentences",
    ]


@pytest.mark.parametrize(
    ("file", "text", "said"),
    [
        ("answers.jsonl", "[1]\n", "answers.jsonl:1: send a JSON object"),
        ("answers.jsonl", "{}\n", "answers.jsonl:1:"),
        ("answers.jsonl", '{"item": "s1"\n', "answers.jsonl:1: a damaged line"),
        ("batches/0001.jsonl", "", "0001.jsonl:1: not a batch header"),
        ("batches/0001.jsonl", None, "0001.jsonl:2: unknown settings 'colour'"),
    ],
)
def test_damaged_session_files_stop_the_server_in_one_line_naming_file_and_line(tmp_path, file, text, said):
    directory = make_session(tmp_path)
    if text is None:  # a batch item with a key of no field
        header, first, *rest = (directory / file).read_text().splitlines(keepends=True)
        text = header + json.dumps(json.loads(first) | {"colour": "red"}) + "\n" + "".join(rest)
    (directory / file).write_text(text)
    with pytest.raises(XlingError, match="^" + str(directory).replace("+", "\\+") + ".*") as raised:
        Session(directory)
    assert said in str(raised.value) and "\n" not in str(raised.value)


def test_a_full_disk_is_a_507_and_an_answer_saved_is_never_reported_failed(served_session, monkeypatch):
    import errno

    from xling.annotation import session as sessions

    app, directory = served_session
    api = page_client(app, directory)

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(sessions, "append_jsonl", full)
    refused = api.post("/api/answer", json=ANSWER | {"id": "a1"})
    assert refused.status_code == 507 and "No space left" in refused.get_json()["error"] and not answers(directory)
    monkeypatch.undo()
    monkeypatch.setattr(sessions, "write_text_atomic", full)  # the answer is saved; only gold.conll is not
    taken = api.post("/api/answer", json=ANSWER | {"id": "a1"})
    assert taken.status_code == 200 and len(answers(directory)) == 1
    assert "gold.conll not rewritten: No space left on device" in api.get("/api/state").get_json()["warnings"][0]


def test_a_download_of_a_session_with_any_name_carries_an_rfc_5987_file_name(tmp_path):
    directory = make_session(tmp_path, name="会话ñ")
    api = page_client(create_app(Session(directory), AnnotateOptions(session="会话ñ", retrain=False)), directory)
    reply = api.get("/api/gold.conll")
    disposition = reply.headers["Content-Disposition"]
    assert reply.status_code == 200 and "filename*=UTF-8''%E4%BC%9A%E8%AF%9D%C3%B1.conll" in disposition
    assert 'filename="___.conll"' in disposition


@pytest.mark.parametrize("content", ["", "short", None])
def test_an_empty_short_or_unreadable_token_file_is_made_anew(tmp_path, content):
    from xling.annotation.server import PAGE_TOKEN_FILE, page_token

    directory = make_session(tmp_path)
    file = directory / PAGE_TOKEN_FILE
    if content is None:
        file.write_bytes(b"\xff\xfe")
    else:
        file.write_text(content)
    token = page_token(directory)
    assert len(token) >= 32 and file.read_text() == token and file.stat().st_mode & 0o777 == 0o600
    app = create_app(Session(directory), AnnotateOptions(session="qu", retrain=False, annotator="Ana"))
    unsigned = app.test_client().post("/api/answer", json=ANSWER, headers={"X-Xling-Page-Token": ""})
    assert unsigned.status_code == 403


def test_a_missing_dev_is_said_when_the_server_starts(tmp_path):
    directory = make_session(tmp_path)
    with pytest.raises(XlingError, match="no such file"):
        create_app(Session(directory), AnnotateOptions(session="qu", dev=str(tmp_path / "missing.conll")))


# ---- a real browser on a second origin --------------------------------------------------------------------------

ATTACK = """<!doctype html><html><body>
<iframe name="sink"></iframe>
<form id="form" method="POST" action="{target}api/undo" target="sink"><input name="a" value="b"></form>
<script>
window.results = [];
document.getElementById("form").submit();
const tries = [
  ["api/answer", {{method: "POST", mode: "no-cors", headers: {{"Content-Type": "text/plain"}}, body: '{answer}'}}],
  ["api/undo", {{method: "POST", headers: {{"Content-Type": "application/json"}}, body: "{{}}"}}],
  ["api/undo", {{method: "POST", headers: {{"X-Xling-Page-Token": "guess"}}, body: "{{}}"}}],
  ["api/state", {{}}],
];
Promise.all(tries.map(([path, init]) => fetch("{target}" + path, init)
  .then((r) => r.text()).then((t) => window.results.push("read: " + t))
  .catch((e) => window.results.push("blocked: " + e))))
  .then(() => setTimeout(() => {{ window.done = true; }}, 500));
</script></body></html>"""


@pytest.fixture
def attacker_site():
    """A page on another origin (localhost, another port) that tries to read and change the session."""
    pages: dict[str, str] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            body = pages["attack"].encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield pages, f"http://localhost:{server.server_port}/"
    server.shutdown()


@needs_chromium
def test_in_chromium_a_page_of_another_origin_neither_reads_nor_changes_the_session(tmp_path, attacker_site):
    from tests.browser import chromium, served, wait_for

    directory = make_session(tmp_path)
    session = Session(directory)
    pages, attacker = attacker_site
    with served(session, AnnotateOptions(session="qu", retrain=False, annotator="Ana")) as address:
        page_client(create_app(session, AnnotateOptions(session="qu", retrain=False, annotator="Ana")), directory).post(
            "/api/answer", json=ANSWER
        )
        before = answers(directory)
        pages["attack"] = ATTACK.format(target=address, answer=json.dumps(ANSWER | {"item": "s2"}))
        rebound = address.replace("127.0.0.1", "attacker.example")
        with chromium("--host-resolver-rules=MAP attacker.example 127.0.0.1") as driver:
            driver.get(attacker)
            wait_for(driver, "window.done === true")
            results = driver.execute_script("return window.results")
            driver.get(rebound + "api/state")  # DNS rebinding: the attacker's name now resolves to this machine
            rebound_text = driver.find_element("tag name", "body").text
    assert answers(directory) == before and len(before) == 1
    assert not [r for r in results if "Qusqu" in r or "progress" in r], results
    assert "Qusqu" not in rebound_text and "answers only 127.0.0.1" in rebound_text
