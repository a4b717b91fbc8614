"""The server-wide memory budget for uploaded data, across every browser session.

Each file is held to the per-file limits (``[limits]``); the budget bounds their sum over the
sessions of one server process (``[memory] upload_budget_bytes`` in the server's settings file,
:func:`dashboard.server_settings.memory_budget`). :class:`UploadBudget` counts, per session, the
bytes its uploads hold (:func:`held_bytes`: the uploaded files and the data sets read from them;
the data source's upload, the Compare page's runs and the RAG page's file, each under a
:class:`Holder` of its own); a load that would take the total past the budget is refused with an
:class:`~metrics_core.errors.InputError` naming the budget and the amounts, and the session
keeps what it showed before.

A session's entry is keyed by its :class:`Holder`, an empty object kept in the session's state:
a new upload replaces the entry, going back to the demo releases it, and when the session ends
its state and the holder go, and the entry with them (a weak reference). The registry holds
numbers only: no data, no file name, no user.
"""

from __future__ import annotations

import gc
import sys
import threading
import weakref

import numpy as np
import pandas as pd

from metrics_core.errors import InputError

__all__ = ["Holder", "UploadBudget", "held_bytes", "size_text"]

#: Bytes of an empty Python string (a string read from Arrow costs this plus its characters).
_STR_BYTES = sys.getsizeof("")
#: Values of an object array looked at to estimate the size of its strings.
_SAMPLE = 1_000
#: How deep :func:`held_bytes` follows containers and attributes.
_DEPTH = 8


class Holder:
    """One session's key in the budget (kept in its state; gone when the session ends)."""

    __slots__ = ("__weakref__",)


def size_text(nbytes: int) -> str:
    """A byte count for people, with the exact count.

    >>> size_text(1_610_612_736), size_text(2_048), size_text(12)
    ('1.5 GiB (1,610,612,736 bytes)', '2.0 KiB (2,048 bytes)', '12 bytes')
    """
    if nbytes < 1024:
        return f"{nbytes:,} bytes"
    value, unit = float(nbytes), "bytes"
    for unit in ("KiB", "MiB", "GiB", "TiB"):  # noqa: B007  (the last unit divided by is kept)
        value /= 1024
        if value < 1024:
            break
    return f"{value:.1f} {unit} ({nbytes:,} bytes)"


def held_bytes(value) -> int:
    """Estimated bytes ``value`` holds: arrays, frames, Arrow columns, strings and the Python
    strings of object arrays (estimated from a sample of up to 1,000), found through
    containers and objects' attributes (a loaded data set, its exclusions, a triage file, the
    samples of a RAG file), each object once. Strings a data set keeps in Arrow until they are
    first read count as read, since a page may read them.

    >>> held_bytes({"a": np.zeros(10), "b": [np.ones(4, dtype=np.int8), b"xyz"]})
    87
    >>> big = np.zeros(100)
    >>> held_bytes([big, big, {"again": big}])   # one array, counted once
    800
    """
    seen: set[int] = set()

    def size(value, depth: int) -> int:
        if value is None or depth > _DEPTH or id(value) in seen:
            return 0
        seen.add(id(value))
        if isinstance(value, str):
            return sys.getsizeof(value)
        if isinstance(value, bytes | bytearray | memoryview):
            return len(value)
        if isinstance(value, np.ndarray):
            n = int(value.nbytes)
            if value.dtype == object and value.size:
                flat = value.ravel()
                sample = flat[:: max(1, flat.size // _SAMPLE)][:_SAMPLE]
                n += int(sum(sys.getsizeof(v) for v in sample) / len(sample) * flat.size)
            return n
        if isinstance(value, pd.DataFrame | pd.Series | pd.Index):
            usage = value.memory_usage(deep=False)
            return int(usage.sum()) if isinstance(usage, pd.Series) else int(usage)
        order, arrow = getattr(value, "order", None), getattr(value, "values", None)
        if isinstance(order, np.ndarray) and hasattr(arrow, "nbytes") and hasattr(
                value, "materialise"):  # strings kept in Arrow until first read
            per_string = arrow.nbytes / max(len(arrow), 1)
            return int(order.nbytes + arrow.nbytes
                       + order.size * (8 + _STR_BYTES + per_string))
        if hasattr(value, "nbytes") and hasattr(value, "type"):  # an Arrow array
            return int(value.nbytes)
        if isinstance(value, dict):
            return sum(size(v, depth + 1) for v in value.values())
        if isinstance(value, list | tuple | set | frozenset):
            return sum(size(v, depth + 1) for v in value)
        fields = getattr(value, "__dict__", None)
        if fields is None and hasattr(value, "__slots__"):
            fields = {k: getattr(value, k, None) for k in value.__slots__}
        return 0 if fields is None else sum(size(v, depth + 1) for v in fields.values())

    return size(value, 0)


class UploadBudget:
    """Bytes held by the uploads of every session of this process, against a budget.

    >>> budget, a, b = UploadBudget(), Holder(), Holder()
    >>> budget.claim(a, 600, 1_000, name="a.csv")
    >>> try:
    ...     budget.claim(b, 500, 1_000, name="b.csv")
    ... except InputError as exc:
    ...     print(exc.render().split("; ")[1])
    600 bytes are held now and this upload needs 500 bytes, 100 bytes over
    >>> budget.claim(a, 900, 1_000, name="a2.csv")  # a replaces its own upload
    >>> budget.held(), budget.release(a), budget.held()
    (900, None, 0)
    >>> del b; budget.held()
    0

    A session that ended with its state in a reference cycle is collected before a refusal:

    >>> state = {"holder": Holder()}; state["self"] = state
    >>> budget.claim(state["holder"], 800, 1_000, name="c.csv")
    >>> del state
    >>> budget.claim(a, 900, 1_000, name="d.csv"); budget.held()
    900
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._held: weakref.WeakKeyDictionary[Holder, int] = weakref.WeakKeyDictionary()

    def held(self, *, besides: Holder | None = None) -> int:
        """Bytes held by every session (but ``besides``'s)."""
        with self._lock:
            return sum(n for h, n in list(self._held.items()) if h is not besides)

    def _refusal(self, held: int, nbytes: int, budget: int, name: str) -> InputError:
        return InputError(
            f"this server holds at most {size_text(budget)} of uploaded data across all "
            "sessions (its memory budget, [memory] upload_budget_bytes of the server's "
            f"settings); {size_text(held)} are held now and this upload needs "
            f"{size_text(nbytes)}, {size_text(held + nbytes - budget)} over",
            file=name, code="too_large",
            hint="try again when others have closed their uploads, or with smaller files")

    def _room(self, holder: Holder, nbytes: int, budget: int) -> bool:
        """Whether ``holder``'s ``nbytes`` fit; before saying no, the garbage collector runs
        once, so that sessions that have ended (their state in reference cycles not yet
        collected) release their share first."""
        if self.held(besides=holder) + nbytes <= budget:
            return True
        gc.collect()
        return self.held(besides=holder) + nbytes <= budget

    def check(self, holder: Holder, nbytes: int, budget: int, *, name: str) -> None:
        """Raise the refusal if ``holder``'s upload of ``nbytes`` would pass the budget (the
        bytes it holds now are replaced, so they do not count)."""
        if not self._room(holder, nbytes, budget):
            raise self._refusal(self.held(besides=holder), nbytes, budget, name)

    def claim(self, holder: Holder, nbytes: int, budget: int, *, name: str) -> None:
        """Record that ``holder`` holds ``nbytes`` (in place of what it held), or raise the
        refusal and record nothing."""
        self._room(holder, nbytes, budget)   # collects ended sessions when short of room
        with self._lock:
            held = sum(n for h, n in list(self._held.items()) if h is not holder)
            if held + nbytes > budget:
                raise self._refusal(held, nbytes, budget, name)
            self._held[holder] = nbytes

    def release(self, holder: Holder) -> None:
        """``holder`` holds no upload any more."""
        with self._lock:
            self._held.pop(holder, None)
