"""Progress of the long steps of a run: one callback protocol, a line on stderr for the CLI.

The engine reports through a plain callback, ``progress(done, total)``, called after every
batch of resamples (raising in it cancels the run); the dashboard passes its progress bar.
A callback that also has a ``stage(name)`` method is told when a new step starts (call
:func:`stage` to do that), so it can name what the numbers count.

:class:`StderrProgress` is the command line's: for a step that has run about a second
(:data:`SHOW_AFTER`), it shows the step, the resamples done and the time left, rewritten in
place (``\\r``) on a terminal and ended with the step's time; when stderr is not a terminal, it
writes one line per such step when the step ends. Nothing goes to stdout or into an output
file; ``--quiet`` turns it off.

>>> import io
>>> out = io.StringIO()
>>> clock = iter([0.0, 0.0, 2.0, 4.0, 4.0]).__next__
>>> with StderrProgress(out, clock=clock, tick=None) as progress:
...     progress.stage("bootstrap intervals")
...     progress(5_000, 10_000)
...     progress(10_000, 10_000)
>>> out.getvalue()
'metrics-core: bootstrap intervals: 10,000 resamples in 4.0 s\\n'
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable

__all__ = ["SHOW_AFTER", "StderrProgress", "stage"]

#: Seconds a step runs before its line is shown.
SHOW_AFTER = 1.0
#: Seconds between two redraws of the line on a terminal.
REDRAW_EVERY = 0.2


def stage(progress: Callable | None, name: str) -> Callable | None:
    """Tell ``progress`` that the step ``name`` starts (when it has a ``stage`` method) and
    return it, the callback to hand that step (``None`` stays ``None``)."""
    begin = getattr(progress, "stage", None)
    if begin is not None:
        begin(name)
    return progress


def _seconds(value: float) -> str:
    return f"{value:.1f} s" if value < 60 else f"{int(value // 60)} min {int(value % 60)} s"


class StderrProgress:
    """The command line's progress line (see the module docstring).

    Parameters
    ----------
    stream : text stream, default ``sys.stderr``
    enabled : bool
        ``False`` (``--quiet``): nothing is written.
    clock : callable
        Seconds, monotonic (for tests).
    tick : float or None
        Seconds between redraws of the line by a helper thread, so that a step without
        callbacks (reading the inputs) shows too; ``None``: redrawn only by the callbacks.
    """

    def __init__(self, stream=None, *, enabled: bool = True,
                 clock: Callable[[], float] = time.monotonic, tick: float | None = 0.25):
        self.stream = sys.stderr if stream is None else stream
        self.enabled = enabled
        self.clock = clock
        try:
            self.tty = bool(self.stream.isatty())
        except (AttributeError, ValueError):
            self.tty = False
        self._lock = threading.Lock()
        self._name: str | None = None
        self._started = 0.0
        self._counts: tuple[int, int] | None = None
        self._shown = False
        self._drawn_at = -REDRAW_EVERY
        self._closed = threading.Event()
        self._thread = None
        if enabled and tick is not None:
            self._thread = threading.Thread(target=self._tick, args=(tick,), daemon=True,
                                            name="metrics_core-progress")
            self._thread.start()

    # ---- the callback protocol
    def stage(self, name: str) -> None:
        """End the current step and start ``name``."""
        if not self.enabled:
            return
        with self._lock:
            self._end()
            self._name, self._started, self._counts, self._shown = name, self.clock(), None, False

    def __call__(self, done: int, total: int) -> None:
        """``done`` of ``total`` resamples of the current step."""
        if not self.enabled:
            return
        with self._lock:
            if self._name is None:
                self._name, self._started, self._shown = "bootstrap intervals", self.clock(), False
            self._counts = (int(done), int(total))
            self._draw()

    def close(self) -> None:
        """End the current step (its final line); nothing is written after."""
        self._closed.set()
        if not self.enabled:
            return
        with self._lock:
            self._end()
            self._name = None

    def __enter__(self) -> StderrProgress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- drawing (under the lock)
    def _tick(self, every: float) -> None:
        while not self._closed.wait(every):
            self._tick_once()

    def _tick_once(self) -> None:
        """Redraw the line of a step that reports no counts (its elapsed time)."""
        with self._lock:
            if self.enabled and self._name is not None:
                self._draw()

    def _text(self, elapsed: float, final: bool) -> str:
        text = f"metrics-core: {self._name}"
        if self._counts is None:
            return f"{text}: {_seconds(elapsed)}" if final else f"{text} ({_seconds(elapsed)})"
        done, total = self._counts
        if final:
            return f"{text}: {done:,} resamples in {_seconds(elapsed)}"
        text += f": {done:,}/{total:,} resamples"
        if 0 < done < total:
            text += f", ~{_seconds(elapsed / done * (total - done))} left"
        return text

    def _draw(self) -> None:
        now = self.clock()
        elapsed = now - self._started
        if not self.tty or elapsed < SHOW_AFTER or now - self._drawn_at < REDRAW_EVERY:
            return
        self._write("\r" + self._text(elapsed, final=False) + "\x1b[K")
        self._shown, self._drawn_at = True, now

    def _end(self) -> None:
        if self._name is None:
            return
        elapsed = self.clock() - self._started
        if self._shown:
            self._write("\r" + self._text(elapsed, final=True) + "\x1b[K\n")
        elif elapsed >= SHOW_AFTER:
            self._write(self._text(elapsed, final=True) + "\n")
        self._name = None

    def _write(self, text: str) -> None:
        try:
            self.stream.write(text)
            self.stream.flush()
        except (OSError, ValueError):  # a closed or broken stderr: no progress, no error
            self.enabled = False
