"""`python -m xling` for the distributed tests, with hooks that a launcher's processes cannot take otherwise.

Dropout is off (every module stays in eval mode), so that a two-process run and a one-process
run can be compared weight for weight. Each process appends the number of rows of every
micro-batch it trains on to `$XLING_TEST_ROWS/rows-RANK.txt` and the precision of every autocast
it enters to `precision-RANK.txt` there; `XLING_TEST_CRASH_AT=N` kills the process at its N-th
micro-batch, as kill -9 would, and `XLING_TEST_BF16_SPEEDUPS=A,B` makes process 0 measure bf16 as
A times faster than fp32 and process 1 as B times.
"""

import os

import torch

from xling import device
from xling.cli import main
from xling.train import loop

RANK = int(os.environ.get("RANK", "0"))
if "XLING_TEST_BF16_SPEEDUPS" in os.environ:
    speedup = float(os.environ["XLING_TEST_BF16_SPEEDUPS"].split(",")[RANK])
    device.cpu_bf16_speedup = lambda: speedup
_autocast = loop.autocast


def recording_autocast(device_type, precision):
    with open(os.path.join(os.environ["XLING_TEST_ROWS"], f"precision-{RANK}.txt"), "a") as f:
        f.write(f"{precision}\n")
    return _autocast(device_type, precision)


_train_mode = torch.nn.Module.train
torch.nn.Module.train = lambda self, mode=True: _train_mode(self, False)
_shard = loop._shard
_calls = 0


def recording_shard(batch, rank, world):
    global _calls
    _calls += 1
    if _calls == int(os.environ.get("XLING_TEST_CRASH_AT", "0")):
        os._exit(9)
    shard = _shard(batch, rank, world)
    with open(os.path.join(os.environ["XLING_TEST_ROWS"], f"rows-{rank}.txt"), "a") as f:
        f.write(f"{len(shard['labels'])}\n")
    return shard


loop._shard = recording_shard
loop.autocast = recording_autocast
main()
