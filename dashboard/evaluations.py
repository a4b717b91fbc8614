"""Where a view's evaluations are kept: the last few of a session's upload in its own state
(never shared), the bundled demos' in one cache shared by every session (the data are
synthetic), bounded in number and bytes; one asked for while another session computes it is
waited for, not computed twice."""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING

import streamlit as st

from dashboard import budget, state
from dashboard.server_settings import shared_cache_budget
from metrics_core.config import EvalConfig
from metrics_core.report import Evaluation

if TYPE_CHECKING:
    from collections.abc import Callable


#: Evaluations kept per session (the last few settings, for instant back-and-forth).
_EVALUATIONS_KEPT = 3


class Evaluations:
    """The last few evaluations, newest last, keyed by (source token, configuration): at most
    ``kept`` of them and about ``max_bytes`` (:func:`dashboard.budget.held_bytes` of each when
    stored; the newest is always kept). Safe to share between the threads of several
    sessions: an evaluation asked for while another session computes it is waited for, not
    computed again (:meth:`compute`)."""

    def __init__(self, kept: int, max_bytes: int | None = None):
        from metrics_core.evaluation.inflight import ComputeOnce

        self._kept = kept
        self._max_bytes = max_bytes
        self._items: OrderedDict = OrderedDict()
        self._sizes: dict = {}
        self._once = ComputeOnce()
        self._lock = self._once.lock
        self._seen: set = set()

    def nbytes(self) -> int:
        """Bytes held by the evaluations kept (as estimated when each was stored)."""
        with self._lock:
            return sum(self._sizes.values())

    def compute(self, key, make, *, poll=None):
        """The evaluation of ``key``: kept, in the making by another thread (waited for), or
        made now by ``make()`` and kept. ``poll()`` is called a few times a second while
        another thread makes it (a Streamlit call there lets a new move stop this run instead
        of waiting for another session's computation to end)."""
        while poll is not None:
            with self._lock:
                running = None if key in self._items else self._once.running.get(key)
            if running is None:
                break
            while not running.wait(0.25):
                poll()

        def stored(k):
            found = self._items.get(k)
            if found is not None:
                self._items.move_to_end(k)
            return found is not None, found

        return self._once.get(key, stored, make, self._store)

    def first_time(self, key) -> bool:
        """True the first time ``key`` is asked about (work started once per key)."""
        with self._lock:
            if key in self._seen:
                return False
            self._seen.add(key)
            return True

    def __contains__(self, key) -> bool:
        with self._lock:
            return key in self._items

    def __iter__(self):
        with self._lock:
            return iter(list(self._items))

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def get(self, key):
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found

    def put(self, key, evaluation) -> None:
        with self._lock:
            self._store(key, evaluation)

    def _store(self, key, evaluation) -> None:
        """Keep ``evaluation`` (the lock held)."""
        self._items[key] = evaluation
        self._items.move_to_end(key)
        self._sizes[key] = budget.held_bytes(evaluation) if self._max_bytes else 0
        while len(self._items) > 1 and (
                len(self._items) > self._kept
                or (self._max_bytes and sum(self._sizes.values()) > self._max_bytes)):
            old, _ = self._items.popitem(last=False)
            self._sizes.pop(old, None)


#: Evaluations of the bundled demos kept for every session (the data are synthetic and the
#: same for everyone: the second person to open a view gets it from memory).
_SHARED_KEPT = 24


@st.cache_resource(show_spinner=False)
def _shared_demo_evaluations() -> Evaluations:
    return Evaluations(_SHARED_KEPT, shared_cache_budget())


def shared(source) -> bool:
    """Whether what is computed from ``source`` serves every session: a bundled demo's own
    gold (synthetic data, the same for everyone); never an upload or an adjudicated gold."""
    return source.kind == "demo" and getattr(source, "adjudicated", None) is None


def memo_of(source) -> Evaluations:
    """Where the evaluations of ``source`` are kept: shared between sessions for a demo, in
    the session alone for an upload or an adjudicated gold (never shared)."""
    if shared(source):
        return _shared_demo_evaluations()
    memo = st.session_state.get(state.EVALUATIONS)
    if not isinstance(memo, Evaluations):
        memo = st.session_state[state.EVALUATIONS] = Evaluations(_EVALUATIONS_KEPT)
    return memo


def evaluations_of(source) -> Callable[..., Evaluation]:
    """A function giving the evaluation of ``source`` at exactly a configuration (filters
    included), from the same kept evaluations as the views' (computed when called if it is
    not kept): the original gold's beside an adjudicated view, at the resamples that view has.
    It holds what it needs, so a download can call it on click, outside the session's run."""
    memo, evaluator = memo_of(source), source.evaluator()

    def at(config: EvalConfig, progress: Callable[[int, int], None] | None = None):
        return memo.compute((source.token, config),
                            lambda: evaluator.evaluate(config, progress=progress))

    return at
