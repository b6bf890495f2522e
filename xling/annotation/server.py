"""`xling annotate`: the labelling page, a Flask app over a `Session`.

    GET  /                 the page (plain HTML and JavaScript in `static/`, no build step)
    GET  /api/state        the session: types, queue, progress, retraining rounds
    POST /api/answer       {item, spans: [{start, end, label}], judged: [start, end] | null} or {item, skip: true},
                           with the request's id, the tab's id, the item version the tab saw and `replace`;
                           the reply carries the queue's ids, so that a tab never shows an item done elsewhere;
                           409 with the answer in force where another tab or person answered it meanwhile
    POST /api/undo         {id, tab}: take back this tab's latest answer; the reply carries what it was
    GET  /api/history      ?tab=ID: the tab's last answers, newest first, each with its sentence, to edit
    GET  /api/review       the items two people answered differently, and their agreement
    POST /api/adjudicate   {id, item, choose}: the answer that becomes the item's gold one
    GET  /api/guidelines   the labelling guidelines (--guidelines, or xling's for NER)
    GET  /api/gold.conll   the answers as CoNLL

An answer is on disk before its request returns. After every `retrain_every` new answers the task adapter is
retrained in a child process (`xling.annotation.retrain`) and its next batch joins the queue.

Any web page the annotator opens can send requests to 127.0.0.1, so (as Jupyter and TensorBoard do) the server
answers only a `Host` it serves on (no DNS rebinding), and a request that changes the session must be JSON, carry
the session's page token (written into the page, which no other origin can read) and come from no other
`Origin`; bodies are small and shallow. One server per session: two would each keep their own view.
"""

from __future__ import annotations

import hmac
import json
import os
import secrets
import shlex
import subprocess
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

from flask import Flask, Response, jsonify, request

from xling.annotation.options import AnnotateOptions
from xling.annotation.retrain import ROUND_LOCK, adapter_name, command
from xling.annotation.session import AnswerError, Session
from xling.errors import XlingError
from xling.fileio import EntryLock

STATIC = Path(__file__).parent / "static"
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")
ANY_ADDRESS = ("0.0.0.0", "::", "")  # serving on every interface: only the --token guards it
MAX_BODY = 64 * 1024  # bytes; an answer is well under 4 KiB
MAX_DEPTH = 8  # JSON nesting; an answer's is 3
PAGE_TOKEN_FILE = "page-token"
DEFAULT_GUIDELINES = "guidelines-ner.md"
MAX_GUIDELINES = 256 * 1024  # bytes
PAGE_TOKEN_HEADER = "X-Xling-Page-Token"


class Retrainer:
    """Starts a retraining round once enough new answers have come, one round at a time: a round still running
    from before a restart (it holds the session's round lock) is waited for, not started again."""

    def __init__(self, session: Session, options: AnnotateOptions):
        self.session, self.options = session, options
        self.process: subprocess.Popen | None = None
        self.started: float | None = None
        self.failed: str | None = None
        self.adopted = False
        self.lock = threading.Lock()

    def answers_at_last_round(self) -> int:
        rounds = self.session.rounds()
        return rounds[-1]["sentences"] if rounds else 0

    @property
    def running(self) -> bool:
        if self.process is not None and self.process.poll() is None:
            return True
        held = EntryLock.holder(self.session.directory / ROUND_LOCK) is not None
        if held and not self.adopted:  # started by a server before this one
            self.adopted, self.started = True, (self.session.directory / f"{ROUND_LOCK}.lock").stat().st_mtime
        elif self.adopted and not held:
            self.adopted = False
            self.session.load_batches()  # its batch joins the queue
        return held

    def maybe_start(self) -> None:
        if not self.options.retrain or not self.options.retrain_every:
            return
        with self.lock:
            answered = self.session.progress()["answered"]
            if self.running or answered - self.answers_at_last_round() < self.options.retrain_every:
                return
            log = open(self.session.directory / "retrain.log", "ab")
            self.process = subprocess.Popen(
                command(self.session.directory, self.options), stdout=log, stderr=subprocess.STDOUT
            )
            self.started, self.failed = time.time(), None
            threading.Thread(target=self._wait, args=(self.process, log), daemon=True).start()

    def _wait(self, process: subprocess.Popen, log) -> None:
        code = process.wait()
        log.close()
        if code:
            lines = (self.session.directory / "retrain.log").read_text(errors="replace").strip().splitlines()
            said = next((line for line in reversed(lines) if line.startswith("error: ")), None)
            self.failed = said.removeprefix("error: ") if said else f"exit status {code}: see retrain.log"
        self.session.load_batches()  # the round's next batch replaces the rest of the queue

    def status(self) -> dict:
        running, rounds = self.running, self.session.rounds()
        last = next((r for r in reversed(rounds) if r.get("total_seconds")), None)
        return {
            "running": running,
            "elapsed": round(time.time() - self.started, 1) if running and self.started else None,
            "estimate": last["total_seconds"] if last else None,
            "failed": self.failed,
            "every": self.options.retrain_every if self.options.retrain else None,
            "adapter": adapter_name(self.session, self.options),
            "rounds": rounds,
            "use": self.use(rounds),
        }

    def use(self, rounds: list[dict]) -> str | None:
        """The command that tags with the session's adapter (the best round's), workspace included."""
        if not rounds:
            return None
        spec = self.session.options.tagger
        where = f" -w {shlex.quote(spec.workspace)}" if spec.workspace else ""
        return f"xling tag --lang {spec.lang} -t {rounds[-1]['adapter']}{where} FILE"


def page_token(directory: Path) -> str:
    """The session's page token: made once, kept in the session folder (owner-only), so that a page open across a
    server's restart goes on posting."""
    file = directory / PAGE_TOKEN_FILE
    if not file.is_file():
        descriptor = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(descriptor, "w") as f:
            f.write(secrets.token_urlsafe(32))
    return file.read_text().strip()


def host_name(host: str) -> str:
    """`[::1]:8321` -> `::1`, `LocalHost:8321` -> `localhost`."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def refusal(options: AnnotateOptions, token: str) -> str | None:
    """Why this request is refused (403), or None: another Host, no access token, or a change from elsewhere."""
    if options.host not in ANY_ADDRESS and host_name(request.host) not in (*LOCAL_HOSTS, options.host.lower()):
        return f"this server answers only {options.host}, not {host_name(request.host)!r}"
    if options.token and not request.path.startswith("/static/"):  # the page's script and style are no secret
        given = request.headers.get("X-Xling-Token") or request.args.get("token") or ""
        if not hmac.compare_digest(given.encode(), options.token.encode()):
            return "this page needs its token: open the address xling annotate printed"
    if request.method in ("GET", "HEAD", "OPTIONS"):
        return None
    own = f"{request.scheme}://{request.host}".lower()
    origin = request.headers.get("Origin") or _origin_of(request.headers.get("Referer"))
    if origin is not None and origin.lower() != own:
        return f"a request from {origin} cannot change this session"
    if not hmac.compare_digest(request.headers.get(PAGE_TOKEN_HEADER, "").encode(), token.encode()):
        return "this request lacks the page's token: reload the page"
    return None


def _origin_of(referer: str | None) -> str | None:
    if not referer:
        return None
    parts = urlsplit(referer)
    return f"{parts.scheme}://{parts.netloc}"


def json_body():
    """The request's JSON, refused in one line (4xx) if it is not JSON, too large or too deeply nested."""
    if request.mimetype != "application/json":
        raise AnswerError("send JSON (Content-Type: application/json)", 415)
    data = request.get_data(cache=False)  # over MAX_CONTENT_LENGTH: Flask's 413
    depth, deepest, in_string, escaped = 0, 0, False, False
    for char in data.decode("utf-8", errors="replace"):
        if in_string:
            escaped, in_string = (False, True) if escaped else (char == "\\", char != '"')
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    if deepest > MAX_DEPTH:
        raise AnswerError(f"the JSON is nested deeper than {MAX_DEPTH}", 400)
    try:
        return json.loads(data) if data.strip() else None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise AnswerError(f"the body is not JSON: {err}", 400) from None


def read_guidelines(options: AnnotateOptions) -> str:
    """The guidelines the page shows: the --guidelines file (Markdown, shown as written), or xling's for NER."""
    path = Path(options.guidelines) if options.guidelines else STATIC / DEFAULT_GUIDELINES
    try:
        data = path.read_bytes()
    except OSError as err:
        raise XlingError(f"cannot read the guidelines {path}: {err.strerror}") from None
    if len(data) > MAX_GUIDELINES:
        raise XlingError(f"the guidelines {path} are over {MAX_GUIDELINES // 1024} KiB; shorten them")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise XlingError(f"the guidelines {path} are not UTF-8 text") from None


def person(options: AnnotateOptions, body: dict | None = None) -> str | None:
    """Who asks: the name the page sends (in the body or the address), else --annotator."""
    given = (body if isinstance(body, dict) else {}).get("annotator") or request.args.get("annotator")
    return given if isinstance(given, str) and given else options.annotator


def team_routes(app: Flask, session: Session, options: AnnotateOptions) -> None:
    """A tab's history, two people's review, and the guidelines."""
    guidelines = read_guidelines(options)

    @app.get("/api/history")
    def history():
        return jsonify(history=session.history(request.args.get("tab", "")))

    @app.get("/api/review")
    def review():
        return jsonify(disagreements=session.disagreements(), agreement=session.agreement())

    @app.post("/api/adjudicate")
    def adjudicate():
        settled = session.adjudicate(json_body(), options.annotator)
        return jsonify(settled=settled, progress=session.progress())

    @app.get("/api/guidelines")
    def guidelines_text():
        return jsonify(guidelines=guidelines)


def create_app(session: Session, options: AnnotateOptions) -> Flask:
    app = Flask("xling.annotation", static_folder=str(STATIC), static_url_path="/static")
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY
    retrainer = Retrainer(session, options)
    app.config["retrainer"] = retrainer
    token = page_token(session.directory)

    @app.before_request
    def guard():
        reason = refusal(options, token)
        return (jsonify(error=reason), 403) if reason else None

    @app.errorhandler(AnswerError)
    def refused(err: AnswerError):
        return jsonify(error=str(err), **err.details), err.status

    @app.errorhandler(413)
    def too_large(_):
        return jsonify(error=f"the request is over {MAX_BODY // 1024} KiB"), 413

    @app.get("/")
    def page():
        html = (STATIC / "annotate.html").read_text(encoding="utf-8")
        html = html.replace("{{page_token}}", token)  # URL-safe base64: nothing to escape
        return Response(html, mimetype="text/html", headers={"Cache-Control": "no-store"})

    @app.get("/api/state")
    def state():
        return jsonify(
            session=session.directory.name,
            lang=session.options.tagger.lang,
            mode=session.options.mode,
            types=session.types,
            annotator=options.annotator,
            queue=[
                item.to_dict() | {"version": session.versions.get(item.id, 0)}
                for item in session.queue(person(options))
            ],
            progress=session.progress(),
            retraining=retrainer.status(),
        )

    team_routes(app, session, options)

    @app.post("/api/answer")
    def answer():
        body = json_body()
        taken = session.record(body, options.annotator, options.overlap)
        retrainer.maybe_start()
        queue = [item.id for item in session.queue(person(options, body))]
        return jsonify(taken=taken, queue=queue, progress=session.progress(), retraining=retrainer.status())

    @app.post("/api/undo")
    def undo():
        undone = session.undo(json_body())  # JSON only: a plain form cannot be sent here from another site
        version = session.versions.get(undone["item"], 0) if undone else None
        return jsonify(undone=undone, version=version, progress=session.progress())

    @app.get("/api/gold.conll")
    def gold():
        text = session.export().read_text()
        headers = {"Content-Disposition": f'attachment; filename="{session.directory.name}.conll"'}
        return Response(text, mimetype="text/plain; charset=utf-8", headers=headers)

    return app


def serve(options: AnnotateOptions, session: Session, announce) -> None:
    """Serve until interrupted (werkzeug's threaded server: one person, a few tabs); one server per session."""
    from werkzeug.serving import make_server

    busy = f"session {session.directory.name!r} is already served by xling annotate ({{holder}}); open that page"
    lock = EntryLock(session.directory / "server", "session", busy=busy + ", or stop that server first")
    try:
        try:
            server = make_server(options.host, options.port, create_app(session, options), threaded=True)
        except OSError as err:
            raise XlingError(
                f"cannot serve on {options.host} port {options.port}: {err.strerror}; give another --port"
            ) from None
        host = f"[{options.host}]" if ":" in options.host else options.host
        address = f"http://{host}:{server.port}/"
        lock.note(f"pid {os.getpid()} at {address}")
        announce(address + (f"?token={options.token}" if options.token else ""))
        server.serve_forever()
    finally:
        lock.release()
