"""A retraining round that only sleeps, and `xling annotate` running it: what the restart test needs to kill a
server in the middle of a round without training anything.

    python -m tests.stub_round serve ARGS...       xling annotate ARGS, each round being the stub below
    python -m tests.stub_round round DIR SECONDS   hold the session's round lock, sleep, queue the next batch
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

ROUND_SECONDS = "8"  # long enough for a killed server to be started again during the round


def stub_round(directory: Path, seconds: float) -> None:
    from dataclasses import replace

    from xling.annotation.batches import write_batch
    from xling.annotation.retrain import ROUND_LOCK
    from xling.annotation.session import ROUNDS_FILE, Session
    from xling.fileio import EntryLock, append_jsonl

    lock = EntryLock(directory / ROUND_LOCK, "round")
    with open(directory / "launches", "a") as f:
        f.write(f"{os.getpid()}\n")
    time.sleep(seconds)
    session = Session(directory)
    write_batch(directory, replace(session.headers[0], adapter="stub"), session.queue())
    record = {"round": 1, "sentences": session.progress().answered, "f1": 0.5, "adapter": "stub", "kept": True}
    append_jsonl(directory / ROUNDS_FILE, record | {"total_seconds": seconds})
    lock.release()


def serve(arguments: list[str]) -> None:
    import xling.annotation.retrain as retrain
    from xling.cli import main

    retrain.command = lambda directory, options: [
        sys.executable, "-m", "tests.stub_round", "round", str(directory), ROUND_SECONDS
    ]  # fmt: skip
    sys.argv = ["xling", *arguments]
    main()


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2:])
    else:
        stub_round(Path(sys.argv[2]), float(sys.argv[3]))
