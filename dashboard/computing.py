"""A session's computing: its CPU budget (what its computations spent in the last minute,
against the server's ``[interaction] cpu_seconds_per_minute``) and the progress bars of its
long computations, which stop the run when its tab has closed."""

from __future__ import annotations

import contextlib
import threading
import time
from collections import deque
from typing import TYPE_CHECKING

import streamlit as st

from dashboard import state
from dashboard.server_settings import interaction_caps

if TYPE_CHECKING:
    from collections.abc import Callable


class CpuBudget:
    """The computing time one session spent in the last minute, against the server's budget
    (``[interaction] cpu_seconds_per_minute``): the CPU time of the session's script thread
    (``time.thread_time``) around each computation of its views (:func:`metered`), and the
    CPU time of every helper thread the engine starts for the session's run (the resamples'
    draw and index generator, the setting's intervals, the curves, the tables and values
    built ahead, the warm-ups after a refinement: :mod:`metrics_core.cpu_account`), each
    measured inside its thread and charged when it ends. What another session computed and
    this one reads from the shared cache is not counted. Over the budget, the session's
    views show point values and the intervals it has (no new bootstrap) until the minute's
    spending falls below it."""

    WINDOW = 60.0

    def __init__(self) -> None:
        self._spent: deque = deque()  # (monotonic time at the end, CPU seconds)
        self._lock = threading.Lock()

    def charge(self, seconds: float, now: float | None = None) -> None:
        with self._lock:
            self._spent.append((time.monotonic() if now is None else now, max(seconds, 0.0)))

    def used(self, now: float | None = None) -> float:
        """CPU seconds of the last :attr:`WINDOW` seconds."""
        now = time.monotonic() if now is None else now
        with self._lock:
            while self._spent and self._spent[0][0] < now - self.WINDOW:
                self._spent.popleft()
            return sum(s for _, s in self._spent)

    def wait(self, limit: float, now: float | None = None) -> float:
        """Seconds until the minute's spending is below ``limit`` again (0: it is)."""
        now = time.monotonic() if now is None else now
        used = self.used(now)
        if used < limit:
            return 0.0
        with self._lock:
            for at, spent in self._spent:
                used -= spent
                if used < limit:
                    return max(at + self.WINDOW - now, 0.0)
        return self.WINDOW


class Turns:
    """Interactive runs first: a process-wide priority of the sessions' runs that answer a
    person (a page drawn after a move or a click: :meth:`interactive`) over the work computed
    ahead on helper threads (the warm-ups after a refinement, which no one waits for).

    The server's threads share one interpreter lock and two cores: a helper thread that
    computes a bootstrap takes its turns beside a move's run, which then waits for it (many
    times over, as a run gives the lock up at every I/O and every blocking call). Work
    computed ahead calls :meth:`wait_turn` between its batches: while another thread's
    interactive run is in flight it waits (at most ``most`` seconds a batch, so it still
    ends while the server is busy), and the run has the interpreter and the cores to itself.
    A run waiting for a value another thread computes is no longer interactive
    (``interactive(False)`` around the wait): the work it waits for does not give way to it.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._depth: dict[int, int] = {}  # thread id -> interactive runs entered (>0)

    @contextlib.contextmanager
    def interactive(self, on: bool = True):
        """This thread's run is interactive inside (``on=False``: it is not, e.g. while it
        waits for another thread's computation or computes a refinement with progress)."""
        tid = threading.get_ident()
        with self._cond:
            before = self._depth.get(tid, 0)
            self._put(tid, before + 1 if on else 0)
        try:
            yield
        finally:
            with self._cond:
                self._put(tid, before)
                self._cond.notify_all()

    def _put(self, tid: int, depth: int) -> None:
        if depth:
            self._depth[tid] = depth
        else:
            self._depth.pop(tid, None)

    def others(self) -> int:
        """Interactive runs of other threads in flight now."""
        tid = threading.get_ident()
        with self._cond:
            return len(self._depth) - (tid in self._depth)

    def wait_turn(self, most: float) -> float:
        """Wait while another thread's interactive run is in flight, at most ``most`` seconds;
        the seconds waited."""
        tid = threading.get_ident()
        start = time.monotonic()
        with self._cond:
            self._cond.wait_for(lambda: not self._depth.keys() - {tid}, timeout=most)
        return time.monotonic() - start


#: The server's :class:`Turns` (thread ids only: no session's data).
TURNS = Turns()

#: Most seconds work computed ahead waits for interactive runs per batch.
AHEAD_WAIT = 0.5


def interactive(on: bool = True):
    """:meth:`Turns.interactive` of the server's :data:`TURNS`."""
    return TURNS.interactive(on)


def ahead_progress(done: int, total: int) -> None:
    """The progress callback of work computed ahead (no bar): between its batches it gives
    way to the interactive runs in flight (:meth:`Turns.wait_turn`)."""
    TURNS.wait_turn(AHEAD_WAIT)


def cpu_budget() -> CpuBudget:
    """The session's :class:`CpuBudget` (made on first use)."""
    meter = st.session_state.get(state.CPU_BUDGET)
    if meter is None:
        meter = st.session_state[state.CPU_BUDGET] = CpuBudget()
    return meter


def over_budget() -> str | None:
    """The message to show when this session has spent its computing budget, else None."""
    limit = float(interaction_caps()["cpu_seconds_per_minute"])
    meter = cpu_budget()
    used = meter.used()
    if used < limit:
        return None
    return (f"This session used {used:.0f} s of computing time in the last minute; this "
            f"server gives each session {limit:g} s a minute ([interaction] "
            f"cpu_seconds_per_minute). Until it falls below that (about "
            f"{max(meter.wait(limit), 1):.0f} s), new settings show point values and "
            f"intervals computed already; nothing else is computed.")


@contextlib.contextmanager
def metered(meter: CpuBudget | None = None):
    """Charge ``meter`` (the session's :class:`CpuBudget` when not given) with the
    computation inside (also when it fails or is stopped): this thread's CPU time, and that
    of the helper threads started inside, when each ends (:func:`charged_to_session`)."""
    meter = cpu_budget() if meter is None else meter
    start = time.thread_time()
    try:
        with charged_to_session(meter):
            yield
    finally:
        meter.charge(time.thread_time() - start)


def charged_to_session(meter: CpuBudget | None = None):
    """A context in which the helper threads started (by the engine or the app) pay their CPU
    time to ``meter`` (the session's :class:`CpuBudget` when not given) when they end; this
    thread's own time is not measured (:func:`metered` does)."""
    from metrics_core.cpu_account import charged_to

    return charged_to((cpu_budget() if meter is None else meter).charge)


def serving() -> bool:
    """Whether a Streamlit server serves this app, with sessions that can share what is
    computed ahead for a bundled demo; not AppTest (whose runtime is a stand-in without
    sessions) nor a plain call."""
    from dashboard.idle import session_manager

    return session_manager() is not None


def stop_if_closed() -> None:
    """Stop this script run when its browser tab has gone (the session is no longer
    connected): a long computation's progress callback calls this at every update, so no
    work goes on for a closed tab beyond one batch (Streamlit asks a disconnected session's
    run to stop too; this does not depend on it)."""
    from streamlit import runtime
    from streamlit.runtime.scriptrunner import get_script_run_ctx
    from streamlit.runtime.scriptrunner_utils.exceptions import StopException

    ctx = get_script_run_ctx()
    if ctx is None or not runtime.exists():  # no server (AppTest, a plain call)
        return
    if not runtime.get_instance().is_active_session(ctx.session_id):
        raise StopException()


def bar_progress(bar, text_of) -> Callable[[int, int], None]:
    """A bootstrap's progress callback that updates ``bar`` with ``text_of(done, total)`` at
    most four times a second (each update is a message and a redraw in the browser, and the
    point where a new move stops this run), and stops the run when its tab has closed."""
    last = [0.0]

    def progress(done: int, total: int) -> None:
        stop_if_closed()
        now = time.monotonic()
        if now - last[0] >= 0.25 or done >= total:
            last[0] = now
            bar.progress(min(done / max(total, 1), 1.0), text=text_of(done, total))

    return progress


class StepProgress:
    """The progress callback of a computation in named steps (``stage(name)``:
    metrics_core.progress.stage), drawn as a bar in ``slot`` (an ``st.empty()``) at its first
    update only, so nothing shows when the result is at hand; the bar says ``text``, the step
    and its resamples, and stops the run when its tab has closed (:func:`bar_progress`).
    :meth:`done` takes the bar away."""

    def __init__(self, slot, text: str):
        self._slot, self._text, self._step = slot, text, ""
        self._update: Callable[[int, int], None] | None = None

    def stage(self, name: str) -> None:
        self._step = name

    def __call__(self, done: int, total: int) -> None:
        if self._update is None:
            bar = self._slot.progress(0.0, text=self._text + "…")
            self._update = bar_progress(bar, lambda d, t: f"{self._text}: {self._step}"
                                                          f"{', ' if self._step else ''}"
                                                          f"{d:,} of {t:,} resamples")
        self._update(done, total)

    def done(self) -> None:
        self._slot.empty()
