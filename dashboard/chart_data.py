"""What a live chart sends, made once per object it comes from, for the session.

A move of the gate slider redraws the Gate page's ROC and PR charts (:mod:`dashboard.live_charts`):
their curves, bands and reference lines depend on the evaluation only, their operating points on
the thresholds. :class:`ByObject` keeps what was made from a curve or a band (its frame, then that
frame's Arrow bytes) while that object lives, so a move builds and serialises the three rows of
its operating points alone. It is kept in the session's state (:func:`session_store`), never
between sessions.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable

import pandas as pd
import pyarrow as pa
import streamlit as st

from dashboard import state

__all__ = ["ByObject", "arrow_bytes", "arrow_datasets", "session_store"]


class ByObject:
    """Values made from an object, by the object's identity (a curve holds arrays, so it has no
    hash) and a key: the newest ``kept`` of them; an entry goes when its object goes.

    >>> import numpy as np
    >>> kept, made = ByObject(2), []
    >>> curve = pd.DataFrame({"x": np.arange(3)})
    >>> kept.get(curve, "n", lambda: made.append(1) or len(curve)), kept.get(curve, "n", len)
    (3, 3)
    >>> len(made), len(kept)
    (1, 1)
    >>> del curve
    >>> len(kept)
    0
    """

    def __init__(self, kept: int):
        self._kept = kept
        self._items: OrderedDict = OrderedDict()
        self._lock = threading.RLock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def get(self, obj, key, make: Callable):
        """The value of ``(obj, key)``: kept, or ``make()`` now and kept."""
        k = (id(obj), key)
        with self._lock:
            hit = self._items.get(k)
            if hit is not None and hit[0]() is obj:
                self._items.move_to_end(k)
                return hit[1]
        value = make()
        with self._lock:
            self._items[k] = (weakref.ref(obj, lambda _, k=k: self._drop(k)), value)
            while len(self._items) > self._kept:
                self._items.popitem(last=False)
        return value

    def _drop(self, k) -> None:
        with self._lock:
            self._items.pop(k, None)


def arrow_bytes(frame: pd.DataFrame) -> bytes:
    """``frame`` as the Arrow IPC stream ``st.vega_lite_chart`` sends a named data set as."""
    table = pa.Table.from_pandas(frame, preserve_index=False)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def arrow_datasets(spec: dict, kept: ByObject | None, *, moving: tuple[str, ...] = ("points",)
                   ) -> dict:
    """``spec`` with its named data sets as Arrow bytes (``st.vega_lite_chart`` sends bytes as
    they are): the ``moving`` ones serialised now, the others once per frame in ``kept``."""
    def serialised(name, frame):
        if kept is None or name in moving:
            return arrow_bytes(frame)
        return kept.get(frame, "arrow", lambda: arrow_bytes(frame))

    return {**spec, "datasets": {name: serialised(name, frame)
                                 for name, frame in spec["datasets"].items()}}


def session_store() -> ByObject:
    """This session's :class:`ByObject` (in its state, so nothing passes between sessions)."""
    kept = st.session_state.get(state.CHART_DATA)
    if not isinstance(kept, ByObject):
        kept = st.session_state[state.CHART_DATA] = ByObject(64)
    return kept
