"""`xling annotate`: the labelling page, a Flask app over a `Session`.

    GET  /                 the page (plain HTML and JavaScript in `static/`, no build step)
    GET  /api/state        ?annotator=NAME (&idle=1: the tab's person is away, claim nothing): the session's
                           types, this person's queue, progress, rounds
    POST /api/answer       {item, spans: [{start, end, label}], judged: [start, end] | null} or {item, skip: true},
                           with the request's id, the tab's id, the item version the tab saw and `replace`;
                           the reply carries the queue's ids, so that a tab never shows an item done elsewhere;
                           409 with the answer in force where another tab or person answered it meanwhile
    POST /api/undo         {id, tab, annotator}: take back the person's latest answer; the reply carries what it
                           was, what is in force now and the sentence
    GET  /api/history      ?annotator=NAME&offset=N: the person's answers, newest first, 50 a page, to edit
    GET  /api/review       the items two people answered differently, and agreement per pair of people
    POST /api/adjudicate   {id, item, choose} (the answer that becomes the item's gold one) or {id, item, spans,
                           judged} (the reviewer's own)
    GET  /api/guidelines   the labelling guidelines as HTML (--guidelines, or xling's for NER)
    GET  /api/gold.conll   the answers as CoNLL

An answer is on disk before its request returns. After every `retrain_every` new answers the task adapter is
retrained in a child process (`xling.annotation.retrain`) and its next batch joins the queue.

Every request passes the checks of `xling.web` (the Host it serves on, the --token, JSON only, no other
`Origin`), and a request that changes the session must also carry the session's page token (written into the
page, which no other origin can read); bodies are small and shallow. Every request of the page names its session (`X-Xling-Session`): a tab
of another session once served at this address gets 410. One server per session: two would each keep their own
view.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from dataclasses import replace
from pathlib import Path
from urllib.parse import quote

from flask import Flask, Response, jsonify, request

from xling.annotation.options import AnnotateOptions
from xling.annotation.records import AnswerError, origin
from xling.annotation.retrain import Retrainer
from xling.annotation.session import Progress, Session
from xling.data.conll import conll_text
from xling.errors import XlingError
from xling.fileio import EntryLock
from xling.web import Refused, json_body, server_on
from xling.web import refusal as web_refusal

STATIC = Path(__file__).parent / "static"
MAX_BODY = 64 * 1024  # bytes; an answer is well under 4 KiB
PAGE_TOKEN_FILE = "page-token"
DEFAULT_GUIDELINES = "guidelines-ner.md"
MAX_GUIDELINES = 1024 * 1024  # bytes
PAGE_TOKEN_HEADER = "X-Xling-Page-Token"
SESSION_HEADER = "X-Xling-Session"


def page_token(directory: Path) -> str:
    """The session's page token: made once, kept in the session folder (owner-only), so that a page open across a
    server's restart goes on posting."""
    file = directory / PAGE_TOKEN_FILE
    try:
        token = file.read_text().strip()
    except (OSError, UnicodeDecodeError):
        token = ""
    if len(token) < 32:  # missing, empty, cut short or unreadable: an empty token would turn the check off
        token = secrets.token_urlsafe(32)
        file.unlink(missing_ok=True)
        descriptor = os.open(file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w") as f:
            f.write(token)
    return token


def refusal(options: AnnotateOptions, token: str) -> str | None:
    """Why this request is refused (403), or None: the web checks (the page's script and style need no access
    token: they are no secret), then a change without the page's token."""
    reason = web_refusal(options.address, request, exempt=request.path.startswith("/static/"))
    if reason or request.method in ("GET", "HEAD", "OPTIONS"):
        return reason
    if not hmac.compare_digest(request.headers.get(PAGE_TOKEN_HEADER, "").encode(), token.encode()):
        return "this request lacks the page's token: reload the page"
    return None


def read_guidelines(options: AnnotateOptions) -> str:
    """The guidelines the page shows: the --guidelines file (Markdown, shown as written), or xling's for NER."""
    path = Path(options.guidelines) if options.guidelines else STATIC / DEFAULT_GUIDELINES
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_GUIDELINES + 1)  # never more: the path may be /dev/zero
    except OSError as err:
        raise XlingError(f"cannot read the guidelines {path}: {err.strerror}") from None
    if len(data) > MAX_GUIDELINES:
        raise XlingError(f"the guidelines {path} are over {MAX_GUIDELINES // 1024 // 1024} MB; shorten them")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise XlingError(f"the guidelines {path} are not UTF-8 text") from None


def render_guidelines(text: str) -> str:
    """Markdown as HTML by markdown-it (CommonMark), raw HTML in it shown as text, never run."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False}).render(text)


def person(options: AnnotateOptions, body=None) -> str:
    """Who asks. A one-person session (--annotator) is that person's alone: a request naming someone else is
    refused. A shared one (any other) takes nothing from, and claims nothing for, a person without a name (in the
    body or the address), so that no answer is ever put down to someone who did not give it."""
    given = (body if isinstance(body, dict) else {}).get("annotator") or request.args.get("annotator")
    given = origin({"annotator": given}).get("annotator")  # checked as every record's sender is
    if options.annotator:
        if given and given != options.annotator:
            raise AnswerError(f"this session is {options.annotator}'s alone (xling annotate --annotator)", 403)
        return options.annotator
    if not given:
        raise AnswerError("give your name first: several people may answer this session", 422)
    return given


def reviewer(options: AnnotateOptions, body) -> str:
    """Who settles a disagreement: the --reviewer alone where one is named, else the person asking."""
    who = person(options, body)
    if options.reviewer and who != options.reviewer:
        raise AnswerError(f"{options.reviewer} settles this session's disagreements (xling annotate --reviewer)", 403)
    return who


def progress_of(session: Session, options: AnnotateOptions) -> Progress:
    """The session's progress, how many sentences anyone has still to answer (`waiting`: in a shared session a
    person's own stream holds only their share of them), and how many of those one person has answered and a
    second is still to (`halfway`, with --overlap)."""
    waiting = session.queue(None)
    halfway = sum(1 for item in waiting if item.id in session.slots)
    return replace(session.progress(), waiting=len(waiting), halfway=halfway)


def stream(session: Session, options: AnnotateOptions, who: str, claim: bool = True) -> list:
    """The sentences `who` is to answer: the whole queue in a one-person session, else their own stream (`claim`
    False: without claiming more, for a tab whose person is away)."""
    return session.queue(None if options.annotator else who, claim)


def team_routes(app: Flask, session: Session, options: AnnotateOptions) -> None:
    """A person's history, two people's review, and the guidelines."""
    guidelines = render_guidelines(read_guidelines(options))

    @app.get("/api/history")
    def history():
        offset = request.args.get("offset", "0")
        if not offset.isdigit() or len(offset) > 9:
            raise AnswerError("offset is a whole number from 0", 400)
        return jsonify(session.history(person(options), int(offset)))

    @app.get("/api/review")
    def review():
        return jsonify(disagreements=session.disagreements(), agreement=session.agreement())

    @app.post("/api/adjudicate")
    def adjudicate():
        body = json_body(request)
        settled = session.adjudicate(body, reviewer(options, body))
        return jsonify(settled=settled, progress=progress_of(session, options))

    @app.get("/api/guidelines")
    def guidelines_text():
        return jsonify(guidelines=guidelines)


def answer_routes(app: Flask, session: Session, options: AnnotateOptions, retrainer: Retrainer) -> None:
    """Answers, undo and the answers as CoNLL."""

    @app.post("/api/answer")
    def answer():
        body = json_body(request)
        who = person(options, body)
        taken = session.record(body, who)
        queue, progress = [item.id for item in stream(session, options, who)], progress_of(session, options)
        retrainer.maybe_start(progress.waiting)  # what anyone has left: a person's own stream holds only HOLD
        return jsonify(taken=taken, queue=queue, progress=progress, retraining=retrainer.status())

    @app.post("/api/undo")
    def undo():
        body = json_body(request)  # JSON only: a plain form cannot be sent here from another site
        undone = session.undo(body, person(options, body))
        return jsonify(**undone, progress=progress_of(session, options))

    @app.get("/api/gold.conll")
    def gold():
        text = conll_text(session.gold())
        name = session.directory.name + ".conll"  # RFC 5987: any name, with a plain ASCII one for old clients
        fallback = name.encode("ascii", "replace").decode().replace("?", "_")
        headers = {"Content-Disposition": f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(name)}"}
        return Response(text, mimetype="text/plain; charset=utf-8", headers=headers)


def create_app(session: Session, options: AnnotateOptions) -> Flask:
    app = Flask("xling.annotation", static_folder=str(STATIC), static_url_path="/static")
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY
    retrainer = Retrainer(session, options)
    app.config["retrainer"] = retrainer
    session.overlap = options.overlap  # the session's fact from here on: its queues and answers read it
    token = page_token(session.directory)
    # The page's stored answers are kept under the session's id, and the page sends it with every request: a tab
    # of another session once served at this address is told so (410), never given this one's sentences.
    session_id, instance = hashlib.sha256(f"xling-session:{token}".encode()).hexdigest()[:16], secrets.token_hex(6)

    @app.before_request
    def guard():
        claimed = request.headers.get(SESSION_HEADER)  # first: another session's page token is no reason to drop
        if request.path.startswith("/api/") and claimed is not None and claimed != session_id:
            gone = "this page is of a session no longer served at this address: its unsent answers stay in the browser"
            return jsonify(error=gone, gone=True), 410
        reason = refusal(options, token)
        return (jsonify(error=reason), 403) if reason else None

    @app.errorhandler(Refused)
    def refused(err: Refused):
        return jsonify(error=str(err), **err.details), err.status

    @app.errorhandler(413)
    def too_large(_):
        return jsonify(error=f"the request is over {MAX_BODY // 1024} KiB"), 413

    @app.get("/")
    def page():
        html = (STATIC / "annotate.html").read_text(encoding="utf-8")
        html = html.replace("{{page_token}}", token).replace("{{session_id}}", session_id)  # nothing to escape
        return Response(html, mimetype="text/html", headers={"Cache-Control": "no-store"})

    @app.get("/api/state")
    def state():
        try:
            who, needs_name = person(options), False
        except AnswerError as err:
            if err.status != 422:
                raise
            who, needs_name = None, True
        away = request.args.get("idle") == "1"  # no key pressed in the tab for a while: claims nothing more
        queue = [] if needs_name else stream(session, options, who, claim=not away)
        if who and not away:
            session.seen(who)
        return jsonify(
            session=session.directory.name,
            session_id=session_id,
            instance=instance,
            reviewer=options.reviewer,
            lang=session.options.tagger.lang,
            mode=session.options.mode,
            types=session.types,
            annotator=options.annotator,
            needs_name=needs_name,
            queue=[item.to_dict() | {"version": session.versions.get(item.id, 0)} for item in queue],
            progress=progress_of(session, options),
            retraining=retrainer.status(),
            warnings=session.warnings,
        )

    team_routes(app, session, options)
    answer_routes(app, session, options, retrainer)
    return app


def serve(options: AnnotateOptions, session: Session, announce) -> None:
    """Serve until interrupted (werkzeug's threaded server: one person, a few tabs); one server per session."""
    busy = f"session {session.directory.name!r} is already served by xling annotate ({{holder}}); open that page"
    lock = EntryLock(session.directory / "server", "session", busy=busy + ", or stop that server first")
    try:
        server = server_on(options.address, create_app(session, options))
        address = options.address.url(server.port)
        lock.note(f"pid {os.getpid()} at {address}")
        announce(options.address.url(server.port, with_token=True))
        server.serve_forever()
    finally:
        lock.release()
