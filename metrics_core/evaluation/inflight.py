"""Values computed once across threads, and work started ahead on a helper thread.

The evaluator's memo (:meth:`metrics_core.evaluation.evaluator.Evaluator.cached`) and an
evaluation's lazy tables (:class:`metrics_core.evaluation.result.Evaluation`) share both: a helper
thread computes values a caller will need, and a caller asking for a value in the making waits for
it instead of computing it twice.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

from metrics_core.cpu_account import charged

__all__ = ["ComputeOnce", "in_background"]


class ComputeOnce:
    """One computation in flight per key.

    :meth:`get` returns the stored value when there is one; else it computes it, unless
    another thread is computing it already, in which case it waits for that thread and looks
    again. After a failure there, each waiting caller computes the value itself, so it gets the
    error in its own thread. ``lock`` also guards the caller's store.
    """

    def __init__(self):
        self.lock = threading.Lock()
        self.running: dict = {}  # key -> Event set when its computation ends

    def get(self, key, stored: Callable, compute: Callable, store: Callable):
        """``stored(key)`` -> ``(found, value)``, called under :attr:`lock`; ``compute()``
        without it; ``store(key, value)`` under it."""
        while True:
            with self.lock:
                found, value = stored(key)
                if found:
                    return value
                running = self.running.get(key)
                if running is None:
                    done = self.running[key] = threading.Event()
                    break
            running.wait()
        try:
            value = compute()
            with self.lock:
                store(key, value)
            return value
        finally:
            with self.lock:
                del self.running[key]
            done.set()


def in_background(parts: Iterable[Callable], name: str) -> threading.Thread:
    """Call each of ``parts`` in order on a daemon thread, for values a caller will need.

    A failure is left to the caller that needs the value (it computes it again and gets the
    error in its own thread)."""

    def work():
        for part in parts:
            try:
                part()
            except Exception:  # recomputed, and raised, where it is needed
                continue

    thread = threading.Thread(target=charged(work), name=name, daemon=True)
    thread.start()
    return thread
