"""`xling serve` under load on loopback: clients each sending one Quechua line a request, one at a time against
16 at once, to `xling serve --lang qu` (the shipped `Stack(qu, ner-qu)` on the embedded model) in a process of
its own. Prints requests per second, p50 and p99 latency and their ratio; checks that every answer came and has
the spans of the one-at-a-time answer for its line (the scores of a batch computed in bf16 move in the third
digit with its padding: the largest difference is reported); writes `results/serve/load.json`. About a minute
on 2 CPU cores; the same tagger without HTTP, one line a call against 16, says how far batching can go here:

    python -m bench.serve_load [--requests 400] [--clients 16]
"""

from __future__ import annotations

import argparse
import gc
import http.client
import json
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

from bench.common import REPO, parsed, quechua_lines, setup_threads
from xling import __version__
from xling.device import machine_name
from xling.provenance import source_commit
from xling.tagging.files import load_tagger
from xling.tagging.options import ServeOptions
from xling.tagging.serving import tagging_function
from xling.tagging.spec import TaggerSpec


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def post(port: int, text: str) -> tuple[float, int, list]:
    """(seconds, status, entities) of one request on a connection of its own, as a client without a pool sends."""
    start = time.perf_counter()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        connection.request("POST", "/", json.dumps({"inputs": text}), {"Content-Type": "application/json"})
        response = connection.getresponse()
        found = json.loads(response.read())
    finally:
        connection.close()
    return time.perf_counter() - start, response.status, found


def load(port: int, lines: list[str], clients: int) -> dict:
    """Every line sent once by `clients` concurrent clients: requests/s, latency percentiles, the answers."""
    start = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        answers = list(pool.map(lambda line: post(port, line), lines))
    seconds = time.perf_counter() - start
    latencies = sorted(a[0] for a in answers)
    return {
        "clients": clients,
        "requests": len(lines),
        "errors": sum(status != 200 for _, status, _ in answers),
        "requests_per_second": round(len(lines) / seconds, 2),
        "p50_ms": round(1000 * statistics.median(latencies), 1),
        "p99_ms": round(1000 * latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))], 1),
        "answers": [found for _, _, found in answers],
    }


def model_alone(lines: list[str], precision: str, clients: int) -> dict:
    """The ceiling batching can reach: the same tagger in this process, lines tagged one at a time against
    `clients` at a time, with no HTTP (before the server starts: never two models computing at once)."""
    setup_threads()
    tag = tagging_function(load_tagger(TaggerSpec(lang="qu", precision=precision)))
    tag(lines[:clients])
    rates = {}
    for size in (1, clients):
        start = time.perf_counter()
        for first in range(0, len(lines), size):
            tag(lines[first : first + size])
        rates[size] = len(lines) / (time.perf_counter() - start)
    return {
        "lines_per_second_one_at_a_time": round(rates[1], 2),
        f"lines_per_second_{clients}_at_a_time": round(rates[clients], 2),
        "ratio": round(rates[clients] / rates[1], 2),
    }


def about_server(port: int) -> dict:
    return json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=120))


def with_model_calls(port: int, run) -> dict:
    """`run()`'s result with the model calls the server made meanwhile."""
    before = about_server(port)["batches"]
    result = run()
    return result | {"model_calls": about_server(port)["batches"] - before}


def spans(entities: list) -> list:
    return [(e["entity_group"], e["start"], e["end"]) for e in entities]


@contextmanager
def running_server(port: int, options: list[str]):
    """`xling serve --lang qu OPTIONS` on `port`, once it answers; stopped by Ctrl+C (SIGINT) on leaving, killed
    if it has not stopped 30 s later. Its output goes to a file of its own (inheriting this script's pipes, a
    server left running would hold its caller waiting for ever), shown when anything failed."""
    command = [sys.executable, "-m", "xling", "serve", "--lang", "qu", "--port", str(port), *options]
    with tempfile.TemporaryFile("w+") as log:
        # Ctrl+C as a terminal's foreground job has it: a process started with SIGINT ignored (an xdist worker, a
        # job put in the background by a shell without job control) passes that on, and the server would not stop
        restore = lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)  # noqa: E731
        server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, preexec_fn=restore)
        try:
            answering(port, server)
            yield
        except BaseException:
            log.seek(0)
            print(f"xling serve said:\n{log.read()[-3000:]}", file=sys.stderr)
            raise
        finally:
            server.send_signal(signal.SIGINT)
            try:
                server.wait(30)
            except subprocess.TimeoutExpired:
                server.kill()
                raise SystemExit("xling serve did not stop within 30 s of Ctrl+C: killed") from None


def answering(port: int, server: subprocess.Popen) -> None:
    for _ in range(1200):
        if server.poll() is not None:
            raise SystemExit(f"xling serve exited with {server.returncode} before answering")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=1).read()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit("xling serve did not answer within 2 minutes")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--precision", default="auto")
    parser.add_argument("--wait-ms", type=float, default=ServeOptions.wait_ms, help="xling serve's --wait-ms")
    parser.add_argument("--json", default=str(REPO / "results" / "serve" / "load.json"))
    smoke_json = Path(tempfile.gettempdir()) / "xling-smoke" / "serve-load.json"
    args = parsed(parser, {"requests": 16, "clients": 4, "json": str(smoke_json)})
    lines = quechua_lines(args.requests, seed=0)
    ceiling = model_alone(lines[:128], args.precision, args.clients)
    gc.collect()
    port = free_port()
    with running_server(port, ["--precision", args.precision, "--wait-ms", str(args.wait_ms)]):
        load(port, lines[:32], 4)  # warm up: threads, allocator, the first batches' shapes
        alone = with_model_calls(port, lambda: load(port, lines, 1))
        together = with_model_calls(port, lambda: load(port, lines, args.clients))
        about = about_server(port)
    first, then = alone.pop("answers"), together.pop("answers")
    result = {
        "machine": machine_name(),
        "xling": __version__,
        "commit": source_commit(),
        "tagger": f"{about['setup']} on {about['model']}",
        "options": {"precision": args.precision, "wait_ms": args.wait_ms},
        "one_at_a_time": alone,
        "concurrent": together,
        "speedup": round(together["requests_per_second"] / alone["requests_per_second"], 2),
        "model_alone": ceiling,
        "answers_with_other_spans": sum(spans(a) != spans(b) for a, b in zip(first, then)),
        "largest_score_difference": max(
            (abs(x["score"] - y["score"]) for a, b in zip(first, then) if spans(a) == spans(b) for x, y in zip(a, b)),
            default=0.0,
        ),
    }
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(result, indent=2) + "\n")
    for name in ("one_at_a_time", "concurrent"):
        row = result[name]
        print(
            f"{row['clients']:>2} client(s): {row['requests_per_second']:7.1f} requests/s, p50 {row['p50_ms']} ms, "
            f"p99 {row['p99_ms']} ms, {row['errors']} errors"
        )
    calls = result["concurrent"]["model_calls"]
    print(
        f"speedup {result['speedup']}x, {calls} model calls for {len(lines)} requests; "
        f"{result['answers_with_other_spans']} answers with other spans; the model alone, no HTTP: "
        f"{ceiling['ratio']}x from 1 to {args.clients} lines a call"
    )


if __name__ == "__main__":
    main()
