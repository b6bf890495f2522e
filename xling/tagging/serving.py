"""`xling serve`: a tagger behind HTTP, the texts of concurrent requests tagged together in model batches.

    GET  /        what is served: the model, the adapters' setup, the labels, the batches run so far
    POST /        {"inputs": TEXT} -> [{entity_group, score, word, start, end}, ...] (the shape of Transformers'
                  token-classification pipeline and of the Hub's inference API); {"inputs": [TEXT, ...]} -> a list
                  of such lists, in order; "parameters": {"aggregation_strategy": simple | first | none,
                  "ignore_labels": [...]} as the pipeline takes them

The main thread runs the model (torch's CPU kernels ran at half speed from another thread, 2 cores, PyTorch
2.14), the requests are answered in threads of their own: each request's texts join a queue, and the main thread
tags what has come (waiting `wait_ms` for more after the first) as one call, so that sixteen clients sending a
sentence each cost a few model batches, not sixteen. A text over `MAX_LINE_CHARS` is tagged in pieces and comes back whole, its offsets into
the text. The checks of `xling.web` guard every request; the body is at most `MAX_BODY`.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future

from xling.errors import XlingError
from xling.tagging.base import TaggedText, TextTagger, shown_score
from xling.tagging.options import ServeOptions
from xling.web import Refused, json_body, refusal, server_on

MAX_BODY = 1024 * 1024  # bytes: a few hundred sentences
MAX_TEXTS = 256  # texts in one request


class Batcher:
    """Tags the texts of many callers as one list: `submit` blocks its caller until its own results are ready,
    while the thread in `run` gathers what the others submitted meanwhile (up to `size` texts) into one call."""

    def __init__(self, tag: Callable[[list[str]], list[TaggedText]], size: int, wait: float):
        self.tag, self.size, self.wait = tag, size, wait
        self.jobs: queue.Queue[tuple[list[str], Future] | None] = queue.Queue()
        self.batches = self.texts = 0
        self.busy = False  # the last call gathered several jobs: more are likely to come within `wait`
        self.lock, self.closed = threading.Lock(), False
        self.thread: threading.Thread | None = None

    def start(self) -> Batcher:
        """`run` in a thread of its own."""
        self.thread = threading.Thread(target=self.run, name="xling-batcher", daemon=True)
        self.thread.start()
        return self

    def submit(self, texts: list[str]) -> list[TaggedText]:
        done: Future = Future()
        with self.lock:
            if self.closed:
                raise Refused("the server is stopping", 503)
            self.jobs.put((texts, done))
        return done.result()

    def close(self) -> None:
        """No job is taken after this call; `run` returns once those before it are done."""
        with self.lock:
            self.closed = True
            self.jobs.put(None)
        if self.thread is not None:
            self.thread.join()

    def _gather(self, taken: list[tuple[list[str], Future]]) -> bool:
        """Into `taken` (the first job), those that come within `wait` of it (none after it when the last call had
        one job only), up to `size` texts; whether to stop after them."""
        count, deadline = len(taken[0][0]), time.monotonic() + (self.wait if self.busy else 0.0)
        while count < self.size:
            try:
                job = self.jobs.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                return False
            if job is None:
                return True
            taken.append(job)
            count += len(job[0])
        return False

    def run(self) -> None:
        """Tag the jobs as they come, until `close`. Ctrl+C anywhere in it refuses every job it has taken and not
        answered (a caller left waiting would hold its request, and the server's stop, for ever)."""
        taken: list[tuple[list[str], Future]] = []
        try:
            while (first := self.jobs.get()) is not None:
                taken = [first]
                stop = self._gather(taken)
                self.busy = len(taken) > 1
                self._answer(taken)
                taken = []
                if stop:
                    return
        except BaseException:
            for _, done in taken:
                if not done.done():
                    done.set_exception(Refused("the server is stopping", 503))
            raise

    def _answer(self, jobs: list[tuple[list[str], Future]]) -> None:
        """The jobs' texts tagged in one call, each caller given its own results (or the call's error)."""
        try:
            results = self.tag([text for texts, _ in jobs for text in texts])
        except Exception as err:  # noqa: BLE001 - the callers answer it; the thread serves on
            for _, done in jobs:
                done.set_exception(err)
            return
        self.batches, self.texts = self.batches + 1, self.texts + len(results)
        start = 0
        for texts, done in jobs:
            done.set_result(results[start : start + len(texts)])
            start += len(texts)


def tagging_function(tagger: TextTagger) -> Callable[[list[str]], list[TaggedText]]:
    """Texts -> results, one each: a long text in pieces merged back, as `xling tag` does a line."""
    return lambda texts: list(tagger.tag_numbered(enumerate(texts, start=1), streaming=False))


def inputs_of(body) -> tuple[list[str], bool]:
    """The texts a request's body asks for, and whether it sent one text (not a list); refused in one line."""
    inputs = body.get("inputs") if isinstance(body, dict) else None
    if isinstance(inputs, str):
        return [inputs], True
    if isinstance(inputs, list) and inputs and all(isinstance(text, str) for text in inputs):
        if len(inputs) > MAX_TEXTS:
            raise Refused(f"at most {MAX_TEXTS} texts a request, not {len(inputs)}: send them in several", 413)
        return inputs, False
    raise Refused('send {"inputs": TEXT} or {"inputs": [TEXT, ...]}, the texts strings', 422)


# Transformers' `aggregation_strategy` values that xling's word tags answer: `simple` and `first` the entities (each
# word is tagged by its first sub-token, then decoded; with `--decoder repair` exactly as `first` groups them),
# `none` each word's tag. `average` and `max` need sub-token scores xling does not keep.
AGGREGATIONS = ("simple", "first", "none")
PARAMETERS = ("aggregation_strategy", "ignore_labels")


def parameters_of(body) -> tuple[str, set[str]]:
    """The pipeline parameters a request's body gives (`{"parameters": {...}}`, as the Hub's inference API sends
    them): the aggregation strategy and the labels left out; refused in one 400 line where xling cannot honour
    them."""
    parameters = body.get("parameters", {}) if isinstance(body, dict) else {}
    if not isinstance(parameters, dict):
        raise Refused('"parameters" must be an object, e.g. {"aggregation_strategy": "simple"}', 400)
    if unknown := sorted(set(parameters) - set(PARAMETERS)):
        raise Refused(f"parameter {unknown[0]!r} is not one xling serves: {', '.join(PARAMETERS)}", 400)
    strategy = parameters.get("aggregation_strategy", "simple")
    if strategy not in AGGREGATIONS:
        raise Refused(
            f"aggregation_strategy {strategy!r} is not one xling serves: {', '.join(AGGREGATIONS)} (average and max "
            "need sub-token scores)",
            400,
        )
    ignored = parameters.get("ignore_labels", ["O"])
    if not (isinstance(ignored, list) and all(isinstance(label, str) for label in ignored)):
        raise Refused('ignore_labels must be a list of labels, e.g. ["O"]', 400)
    return strategy, set(ignored)


def answer(result: TaggedText, strategy: str, ignored: set[str]) -> list[dict]:
    """One text's answer in the pipeline's shape: its entities, or with `none` each word's tag (`index` its
    position, from 1)."""
    if strategy != "none":
        return [span.to_dict() for span in result.spans if span.label not in ignored]
    words = zip(result.tokens, result.tags, result.scores)
    return [
        {
            "entity": tag,
            "score": shown_score(score),
            "index": index,
            "word": token.text,
            "start": token.start,
            "end": token.end,
        }
        for index, (token, tag, score) in enumerate(words, start=1)
        if tag not in ignored
    ]


def create_app(tagger: TextTagger, options: ServeOptions, batcher: Batcher):
    from flask import Flask, jsonify, request

    app = Flask("xling.serve")
    app.config["MAX_CONTENT_LENGTH"] = MAX_BODY
    app.json.ensure_ascii = False  # UTF-8 text as it is, as the Hub's API answers

    @app.before_request
    def guard():
        reason = refusal(options.address, request)
        return (jsonify(error=reason), 403) if reason else None

    @app.errorhandler(Refused)
    def refused(err: Refused):
        return jsonify(error=str(err)), err.status

    @app.errorhandler(413)
    def too_large(_):
        return jsonify(error=f"the request is over {MAX_BODY // 1024} KiB"), 413

    @app.errorhandler(500)
    def failed(err):
        return jsonify(error=f"tagging failed: {getattr(err, 'original_exception', None) or err}"), 500

    @app.get("/")
    def about():
        return jsonify(
            model=options.tagger.model,
            lang=options.tagger.lang,
            setup=str(getattr(tagger, "setup", None)),
            runtime=tagger.runtime,
            labels=tagger.labels,
            batches=batcher.batches,
            texts=batcher.texts,
        )

    @app.post("/")
    def tag():
        body = json_body(request)
        texts, single = inputs_of(body)
        strategy, ignored = parameters_of(body)
        try:
            results = batcher.submit(texts)
        except Refused:  # already says its status (503: stopping)
            raise
        except XlingError as err:
            raise Refused(str(err), 422) from None
        found = [answer(result, strategy, ignored) for result in results]
        return jsonify(found[0] if single else found)

    return app


def serve(options: ServeOptions, announce: Callable[[str], None]) -> None:
    """Load the tagger, then serve until interrupted: the requests in threads, the model in this one."""
    from xling.tagging.files import load_tagger

    options.tagger.check_now()
    tagger = load_tagger(options.tagger)
    batcher = Batcher(tagging_function(tagger), options.max_batch, options.wait_ms / 1000)
    server = server_on(options.address, create_app(tagger, options, batcher))
    # not a daemon: joined below, so that no thread but this one is left as the interpreter exits
    http = threading.Thread(target=server.serve_forever, name="xling-http")
    http.start()
    try:
        announce(options.address.url(server.port, with_token=True))
        batcher.run()  # until Ctrl+C
    except KeyboardInterrupt:
        pass
    finally:
        server.shutdown()  # no new connection; the requests that have come are answered
        batcher.close()
        try:
            batcher.run()
        except KeyboardInterrupt:  # a second Ctrl+C while answering them: stop now, and say what that cost
            raise XlingError("stopped by a second Ctrl+C: the requests in progress got no answer") from None
        finally:
            http.join()  # werkzeug's serve_forever closes the server as it returns, after the requests in progress
