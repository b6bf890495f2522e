"""`xling annotate`: the labelling page, a Flask app over a `Session`.

    GET  /                 the page (plain HTML and JavaScript in `static/`, no build step)
    GET  /api/state        the session: types, queue, progress, retraining rounds
    POST /api/answer       {item, spans: [{start, end, label}], judged: [start, end] | null} or {item, skip: true}
    POST /api/undo         take back the last answer
    GET  /api/gold.conll   the answers as CoNLL

An answer is on disk before its request returns. After every `retrain_every` new answers the task adapter is
retrained in a child process (`xling.annotation.retrain`) and its next batch joins the queue.
"""

from __future__ import annotations

import hmac
import subprocess
import threading
from pathlib import Path

from flask import Flask, Response, jsonify, request, send_from_directory

from xling.annotation.options import AnnotateOptions
from xling.annotation.retrain import adapter_name, command
from xling.annotation.session import AnswerError, Session

STATIC = Path(__file__).parent / "static"


class Retrainer:
    """Starts a retraining round once enough new answers have come, one round at a time."""

    def __init__(self, session: Session, options: AnnotateOptions):
        self.session, self.options = session, options
        self.process: subprocess.Popen | None = None
        self.failed: str | None = None
        self.lock = threading.Lock()

    def answers_at_last_round(self) -> int:
        rounds = self.session.rounds()
        return rounds[-1]["sentences"] if rounds else 0

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

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
            self.failed = None
            threading.Thread(target=self._wait, args=(self.process, log), daemon=True).start()

    def _wait(self, process: subprocess.Popen, log) -> None:
        code = process.wait()
        log.close()
        if code:
            lines = (self.session.directory / "retrain.log").read_text(errors="replace").strip().splitlines()
            self.failed = lines[-1] if lines else f"exit status {code}"
        self.session.load_batches()  # the round's next batch joins the queue

    def status(self) -> dict:
        return {
            "running": self.running,
            "failed": self.failed,
            "every": self.options.retrain_every if self.options.retrain else None,
            "adapter": adapter_name(self.session, self.options),
            "rounds": self.session.rounds(),
        }


def create_app(session: Session, options: AnnotateOptions) -> Flask:
    app = Flask("xling.annotation", static_folder=str(STATIC), static_url_path="/static")
    retrainer = Retrainer(session, options)
    app.config["retrainer"] = retrainer

    @app.before_request
    def check_token():
        if options.token and not request.path.startswith("/static/"):  # the page's script and style are no secret
            given = request.headers.get("X-Xling-Token") or request.args.get("token") or ""
            if not hmac.compare_digest(given.encode(), options.token.encode()):
                return jsonify(error="this page needs its token: open the address xling annotate printed"), 403
        return None

    @app.errorhandler(AnswerError)
    def refused(err: AnswerError):
        return jsonify(error=str(err)), err.status

    @app.get("/")
    def page():
        return send_from_directory(STATIC, "annotate.html")

    @app.get("/api/state")
    def state():
        return jsonify(
            session=session.directory.name,
            lang=session.options.lang,
            mode=session.options.mode,
            types=session.types,
            queue=[item.to_dict() for item in session.queue()],
            progress=session.progress(),
            retraining=retrainer.status(),
        )

    @app.post("/api/answer")
    def answer():
        progress = session.record(request.get_json(silent=True))
        retrainer.maybe_start()
        return jsonify(progress=progress, retraining=retrainer.status())

    @app.post("/api/undo")
    def undo():
        return jsonify(undone=session.undo(), progress=session.progress())

    @app.get("/api/gold.conll")
    def gold():
        text = session.export().read_text()
        headers = {"Content-Disposition": f'attachment; filename="{session.directory.name}.conll"'}
        return Response(text, mimetype="text/plain; charset=utf-8", headers=headers)

    return app


def serve(options: AnnotateOptions, session: Session, announce) -> None:
    """Serve until interrupted (werkzeug's threaded server: one person, a few tabs)."""
    from werkzeug.serving import make_server

    server = make_server(options.host, options.port, create_app(session, options), threaded=True)
    address = f"http://{options.host}:{server.port}/" + (f"?token={options.token}" if options.token else "")
    announce(address)
    server.serve_forever()
