"""Cold start: `echo LINE | xling tag --lang qu -` in a fresh process (the model already converted), its wall time
and peak memory, against `python -c "import torch"` in the same run; and `Tagger.load("qu")` plus one line from
Python. Each is run `--rounds` times in turn; the min / median / max are printed with the median's ratio to the
torch import, beside the load average (1 minute) as each round started: a figure taken while other work ran on
the machine shows as one (the start took 2-3.7x `import torch` on a busy machine, 1.1x alone).

    python -m bench.cold_start [--rounds 5] [--json results/cold-start/NAME.json]

The workspace is an empty folder, so the adapters shipped with xling tag; a second of work a start.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import parsed
from xling.device import machine_name

LINE = "Qusqu llaqtaqa Perú suyupi kachkan."
PYTHON_API = "from xling import Tagger; Tagger.load('qu')(" + repr(LINE) + ")"


def seconds(command: list[str], stdin: str, cwd: str) -> float:
    start = time.perf_counter()
    subprocess.run(command, input=stdin, capture_output=True, text=True, check=True, cwd=cwd)
    return time.perf_counter() - start


def peak_gb(command: list[str], stdin: str, cwd: str) -> float:
    """The command's peak resident memory, as its parent (a fresh Python) sees it when it has ended."""
    wrapper = (
        "import resource, subprocess, sys; subprocess.run(sys.argv[1:], input=sys.stdin.read(), text=True, "
        "capture_output=True, check=True); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    done = subprocess.run(
        [sys.executable, "-c", wrapper, *command], input=stdin, capture_output=True, text=True, cwd=cwd
    )
    return int(done.stdout.strip()) / 2**20  # ru_maxrss is in KiB on Linux


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", type=Path, help="write the figures to this result file")
    args = parsed(parser, {"rounds": 1, "json": None})
    xling = str(Path(sys.executable).with_name("xling"))
    commands = {
        "import torch": ([sys.executable, "-c", "import torch"], ""),
        "xling tag --lang qu -": ([xling, "tag", "--lang", "qu", "-"], LINE + "\n"),
        "Tagger.load('qu') and one line": ([sys.executable, "-c", PYTHON_API], ""),
    }
    with tempfile.TemporaryDirectory() as empty:  # no ./xling-workspace there: the adapters shipped with xling tag
        for command, stdin in commands.values():  # the model converted, its files in the page cache
            seconds(command, stdin, empty)
        times: dict[str, list[float]] = {name: [] for name in commands}
        loads: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.rounds):
            for name, (command, stdin) in commands.items():
                loads[name].append(os.getloadavg()[0])
                times[name].append(seconds(command, stdin, empty))
        peaks = {name: peak_gb(command, stdin, empty) for name, (command, stdin) in commands.items()}
    torch_seconds = statistics.median(times["import torch"])
    rows = {
        name: {
            "seconds": statistics.median(values),
            "min_seconds": min(values),
            "max_seconds": max(values),
            "ratio_to_import_torch": statistics.median(values) / torch_seconds,
            "peak_gb": peaks[name],
            "load_average": [min(loads[name]), max(loads[name])],
        }
        for name, values in times.items()
    }
    print(f"{os.cpu_count()} CPUs; load average (1 min) as each round started, lowest to highest")
    for name, row in rows.items():
        print(
            f"{name:34} {row['min_seconds']:5.2f} / {row['seconds']:5.2f} / {row['max_seconds']:5.2f} s  "
            f"({row['ratio_to_import_torch']:.2f}x import torch)  peak {row['peak_gb']:.2f} GB  "
            f"load {row['load_average'][0]:.1f}-{row['load_average'][1]:.1f}"
        )
    if args.json:
        machine = machine_name()
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(
            json.dumps(
                {"bench": "cold_start", "rounds": args.rounds, "machine": machine, "line": LINE, "rows": rows}, indent=2
            )
            + "\n"
        )


if __name__ == "__main__":
    main()
