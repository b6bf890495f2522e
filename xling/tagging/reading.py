"""Input in chunks that never wait for more than is at hand.

A thread reads ahead into a bounded queue; each chunk takes what has arrived, up to its size. A large file
fills the queue while the model works, so chunks come full; a slow pipe (someone typing, a producer that
writes a line now and then) gets each line's result as soon as that line is in, not after a whole batch.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable, Iterator

# How long a chunk waits for one more item before it goes as it is: short against a model batch, long
# enough for a reader thread that was merely not scheduled yet.
_GRACE_S = 0.02


class _Failed:
    def __init__(self, error: BaseException):
        self.error = error


_END = object()


def ready_chunks(items: Iterable, sizes: Iterator[int], ahead: int) -> Iterator[list]:
    """`items` in lists, the next one of at most `next(sizes)`, holding at least one item and otherwise only
    those already read; at most `ahead` items are read ahead. An error while reading comes out in order."""
    pending: queue.Queue = queue.Queue(maxsize=ahead)
    stop = threading.Event()

    def offer(item) -> bool:
        """Queue `item`, waiting while the queue is full; False once the consumer has gone."""
        while not stop.is_set():
            try:
                pending.put(item, timeout=0.1)
                return True
            except queue.Full:
                pass
        return False

    def read() -> None:
        try:
            for item in items:
                if not offer(item):
                    return
        except BaseException as error:  # handed to the consumer, which raises it
            offer(_Failed(error))
            return
        offer(_END)

    threading.Thread(target=read, daemon=True, name="xling-read-ahead").start()
    try:
        for size in sizes:
            chunk, item = [], pending.get()
            while item is not _END and not isinstance(item, _Failed):
                chunk.append(item)
                if len(chunk) == size:
                    break
                try:
                    item = pending.get(timeout=_GRACE_S)
                except queue.Empty:
                    break
            if chunk:
                yield chunk
            if item is _END:
                return
            if isinstance(item, _Failed):
                raise item.error
    finally:
        stop.set()  # a consumer that stops early releases the reader
