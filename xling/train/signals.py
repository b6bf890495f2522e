"""Ctrl-C and SIGTERM during training: the run stops between two steps, where its checkpoint is exact."""

from __future__ import annotations

import signal
import threading


class StopSignals:
    """Ctrl-C and SIGTERM stop training at the end of the step under way, not inside it: a step cut short would
    leave a batch drawn but never trained, or weights updated for a step not yet counted, and the checkpoint would
    not be the state of any uninterrupted run. A second signal stops at once. Signals a process ignores (a
    background job's SIGINT) stay ignored; outside the main thread nothing is installed."""

    def __enter__(self):
        self.received: int | None = None
        self.previous = {}
        if threading.current_thread() is threading.main_thread():
            for number in (signal.SIGINT, signal.SIGTERM):
                if signal.getsignal(number) is not signal.SIG_IGN:
                    self.previous[number] = signal.signal(number, self._handle)
        return self

    def _handle(self, number, frame) -> None:
        if self.received is not None:
            raise KeyboardInterrupt
        self.received = number

    def act(self) -> None:
        """Leave as the signal would have: Ctrl-C as KeyboardInterrupt, SIGTERM with its exit status."""
        if self.received == signal.SIGTERM:
            raise SystemExit(128 + signal.SIGTERM)
        raise KeyboardInterrupt

    def __exit__(self, *exc) -> None:
        for number, handler in self.previous.items():
            signal.signal(number, handler)
