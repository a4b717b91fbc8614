"""Uncertainty of reported numbers: Wilson intervals and the seeded bootstrap (contract §9).

Two tools:

- :func:`wilson_interval` gives the Wilson score interval of a proportion ``k / n``; every
  proportion the project reports carries one (contract §9 of docs/CONTRACT.md).
- :class:`Bootstrap` draws the resamples once per seed as integer *count matrices* (resample x
  unit: how often each unit is drawn). A statistic is then a function of a weight matrix
  (resample x row), so one draw serves every metric: a mean of a per-query array is
  ``W @ v / W.sum(1)`` (:func:`weighted_mean`), a ratio of counts is a ratio of weighted sums
  (:func:`weighted_ratio`), and AUROC / AP / ECE / Brier have weighted kernels in
  :mod:`metrics_core.metrics.classification` and :mod:`metrics_core.metrics.calibration`. Resampling
  by ``post`` (the cluster bootstrap) draws posts and expands their counts to their queries
  (:meth:`Bootstrap.expand`), so the queries of a post always move together.

:func:`bootstrap_ci` / :func:`bootstrap_cis` turn statistics into percentile intervals
(:class:`CI`). A resample on which a statistic is undefined (``nan``, e.g. AUROC of a resample
with one class) is excluded from the percentiles, and the interval reports how many resamples
were valid.
"""

from __future__ import annotations

import functools
import math
import queue
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import KW_ONLY, dataclass
from statistics import NormalDist

import numpy as np

from metrics_core.cpu_account import charged

__all__ = [
    "CI",
    "Bootstrap",
    "DrawnCounts",
    "bootstrap_ci",
    "bootstrap_cis",
    "bootstrap_sums",
    "indicator_matrix",
    "percentile_ci",
    "weighted_int_quantiles",
    "weighted_mean",
    "weighted_means",
    "weighted_ratio",
    "wilson_interval",
]

#: A statistic maps a float64 weight matrix (resamples x rows) to one value per resample.
Statistic = Callable[[np.ndarray], np.ndarray]

#: Elements per drawn batch when ``batch_size`` is not given (~8 MB of float64 weights).
BATCH_ELEMENTS = 1 << 20


# --------------------------------------------------------------------------------- Wilson
@functools.lru_cache(maxsize=16)
def normal_quantile(level: float) -> float:
    """Two-sided normal quantile (the standard library's; importing scipy.stats costs ~0.4 s)."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level!r}")
    return NormalDist().inv_cdf(0.5 + level / 2.0)


def wilson_interval(k, n, *, level: float = 0.95):
    """Wilson score interval of the proportion ``k / n`` (contract §9).

    .. math::

        \\frac{k + z^2/2}{n + z^2}
        \\pm \\frac{z}{n + z^2}\\sqrt{\\frac{k (n - k)}{n} + \\frac{z^2}{4}}

    with ``z`` the normal quantile at ``1 - (1 - level) / 2`` (1.959964 for 95 %).

    Parameters
    ----------
    k, n : int or array-like of int
        Successes and trials (broadcast together); ``0 <= k <= n``.
    level : float, default 0.95
        Confidence level in (0, 1).

    Returns
    -------
    (lo, hi) : tuple of float, or of float64 arrays when an input is an array
        ``(nan, nan)`` where ``n = 0`` (the proportion is undefined). The bounds are exactly 0
        when ``k = 0`` and exactly 1 when ``k = n``.

    Examples
    --------
    >>> lo, hi = wilson_interval(8, 10)
    >>> round(lo, 4), round(hi, 4)
    (0.4902, 0.9433)
    """
    z = normal_quantile(level)
    if type(k) in _WHOLE and type(n) in _WHOLE:  # one proportion: the same operations on floats
        return _wilson_scalar(int(k), int(n), z)
    scalar = np.ndim(k) == 0 and np.ndim(n) == 0
    k_arr = np.asarray(k)
    n_arr = np.asarray(n)
    for name, arr in (("k", k_arr), ("n", n_arr)):
        if arr.dtype.kind == "f":
            if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
                raise ValueError(f"{name} must hold whole numbers, got {arr!r}")
        elif arr.dtype.kind not in "iub":
            raise ValueError(f"{name} must be integer counts, got dtype {arr.dtype}")
    k_f, n_f = np.broadcast_arrays(k_arr.astype(np.float64), n_arr.astype(np.float64))
    if np.any(k_f < 0) or np.any(k_f > n_f):
        raise ValueError("k and n must satisfy 0 <= k <= n")
    z2 = z * z
    with np.errstate(invalid="ignore", divide="ignore"):
        denom = n_f + z2
        center = (k_f + z2 / 2.0) / denom
        half = z * np.sqrt(k_f * (n_f - k_f) / n_f + z2 / 4.0) / denom
        lo = np.where(k_f == 0, 0.0, np.clip(center - half, 0.0, 1.0))
        hi = np.where(k_f == n_f, 1.0, np.clip(center + half, 0.0, 1.0))
    empty = n_f == 0
    lo = np.where(empty, np.nan, lo)
    hi = np.where(empty, np.nan, hi)
    if scalar:
        return float(lo), float(hi)
    return lo, hi


#: Scalar count types of :func:`wilson_interval`'s fast path (a gate move asks for dozens).
_WHOLE = frozenset({int, np.int64, np.int32, np.intp, np.uint64, np.uint32})


def _wilson_scalar(k: int, n: int, z: float) -> tuple[float, float]:
    """:func:`wilson_interval` of one proportion, in the array path's operations and order
    (IEEE doubles both: the same bits), without numpy's per-call overhead."""
    if k < 0 or k > n:
        raise ValueError("k and n must satisfy 0 <= k <= n")
    if n == 0:
        return math.nan, math.nan
    k_f, n_f = float(k), float(n)
    z2 = z * z
    denom = n_f + z2
    center = (k_f + z2 / 2.0) / denom
    half = z * math.sqrt(k_f * (n_f - k_f) / n_f + z2 / 4.0) / denom
    lo = 0.0 if k_f == 0 else min(max(center - half, 0.0), 1.0)
    hi = 1.0 if k_f == n_f else min(max(center + half, 0.0), 1.0)
    return lo, hi


# ------------------------------------------------------------------------------ bootstrap
@dataclass(frozen=True)
class Bootstrap:
    """Seeded bootstrap resamples as integer count matrices (contract §9).

    Resample ``r`` draws ``n_units`` units uniformly with replacement; ``counts[r, u]`` is how
    often unit ``u`` was drawn (each row sums to ``n_units``). The draws come from
    ``numpy.random.Generator(PCG64(seed))`` in resample order, so the same seed gives the same
    matrices whatever ``batch_size`` is.

    Parameters
    ----------
    n_units : int
        Number of resampling units: queries (unit ``query``) or posts (unit ``post``).
    n_resamples : int, default 10_000
    seed : int, default 0
    batch_size : int or None
        Resamples per yielded matrix; by default about a million elements per batch.

    Examples
    --------
    >>> counts = next(Bootstrap(4, n_resamples=3, seed=0).count_batches())
    >>> counts.shape, counts.dtype.name, counts.sum(axis=1).tolist()
    ((3, 4), 'int32', [4, 4, 4])
    """

    n_units: int
    _: KW_ONLY
    n_resamples: int = 10_000
    seed: int = 0
    batch_size: int | None = None

    def __post_init__(self):
        if int(self.n_units) != self.n_units or self.n_units < 1:
            raise ValueError(f"n_units must be a positive integer, got {self.n_units!r}")
        if int(self.n_resamples) != self.n_resamples or self.n_resamples < 1:
            raise ValueError(f"n_resamples must be a positive integer, got {self.n_resamples!r}")
        if self.batch_size is not None and (int(self.batch_size) != self.batch_size
                                            or self.batch_size < 1):
            raise ValueError(f"batch_size must be a positive integer, got {self.batch_size!r}")

    @property
    def resolved_batch_size(self) -> int:
        """Resamples per batch actually used."""
        if self.batch_size is not None:
            return int(min(self.batch_size, self.n_resamples))
        return int(max(1, min(self.n_resamples, BATCH_ELEMENTS // self.n_units)))

    def index_batches(self) -> Iterator[np.ndarray]:
        """Yield the drawn unit indices, int32 ``(b, n_units)`` per batch: resample after
        resample, ``n_units`` draws each (the draw of §9)."""
        n = int(self.n_units)
        rng = np.random.Generator(np.random.PCG64(self.seed))
        step = self.resolved_batch_size
        done = 0
        while done < self.n_resamples:
            b = min(step, self.n_resamples - done)
            yield rng.integers(0, n, size=(b, n), dtype=np.int32)
            done += b

    @staticmethod
    def count_into(idx: np.ndarray, out: np.ndarray) -> None:
        """``out[r]`` = how many times each unit is drawn in ``idx[r]``, cast to ``out``'s
        type (the caller checks that it holds them: :meth:`DrawnCounts` by the row sums).
        A bincount per resample: each works in a cache-sized window, ~3x faster than one
        bincount over the whole batch with row offsets."""
        n = out.shape[1]
        idx = idx.astype(np.intp)  # (bincount's own index type: no conversion per row)
        for r in range(idx.shape[0]):
            out[r] = np.bincount(idx[r], minlength=n)

    def count_batches(self) -> Iterator[np.ndarray]:
        """Yield int32 count matrices of shape ``(b, n_units)``, ``n_resamples`` rows in all."""
        for idx in self.index_batches():
            counts = np.empty(idx.shape, dtype=np.int32)
            self.count_into(idx, counts)
            yield counts

    def counts(self) -> np.ndarray:
        """All count matrices stacked, ``(n_resamples, n_units)`` int32 (small problems only)."""
        return np.concatenate(list(self.count_batches()), axis=0)

    def compact_counts(self) -> np.ndarray:
        """All counts in the smallest unsigned type that holds them (uint8 almost always).

        Drawn once and kept, they let a setting change re-weight per-query arrays without
        drawing again: :func:`bootstrap_cis` takes them as ``counts``.
        """
        parts = []
        for batch in self.count_batches():
            kind = np.uint8 if batch.max(initial=0) <= np.iinfo(np.uint8).max else np.uint16
            parts.append(batch.astype(kind))
        kind = np.result_type(*parts)
        return np.concatenate([part.astype(kind, copy=False) for part in parts], axis=0)

    @staticmethod
    def expand(counts: np.ndarray, unit_of_row) -> np.ndarray:
        """Row weights of the cluster bootstrap: ``counts[:, unit_of_row]``.

        Every row of a unit receives the unit's count, so the rows (queries) of one unit
        (post) always move together.
        """
        unit_of_row = np.asarray(unit_of_row)
        if unit_of_row.ndim != 1 or unit_of_row.dtype.kind not in "iu":
            raise ValueError("unit_of_row must be a 1-D integer array")
        if unit_of_row.size and (unit_of_row.min() < 0 or unit_of_row.max() >= counts.shape[1]):
            raise ValueError(f"unit_of_row must index units 0..{counts.shape[1] - 1}")
        return counts[:, unit_of_row]


class DrawnCounts:
    """The count matrix of a :class:`Bootstrap`, drawn on a helper thread and read while it is
    drawn: a reader of some rows waits only for those (so the statistics of the first
    resamples are computed while the next are drawn, and the draw overlaps whatever the
    caller computes before it needs them).

    The matrix is held in the smallest unsigned type that holds it (uint8 almost always; a
    count above 255 widens it to uint16), equal to :meth:`Bootstrap.compact_counts`; the
    counts of a few units over all resamples (a setting change's update) are gathered from
    its rows (:meth:`unit_weights`), or read from its transpose (:meth:`by_unit`, made on
    first use and then kept).

    ``counts[a:b]`` is :meth:`rows`, so a :class:`DrawnCounts` can stand wherever a count
    matrix is read by row slices (``counts=`` of :func:`bootstrap_cis`).
    """

    def __init__(self, boot: Bootstrap):
        self.shape = (int(boot.n_resamples), int(boot.n_units))
        self._boot = boot
        self._ready = threading.Condition()
        self._done = 0
        self._error: BaseException | None = None
        self._counts = np.empty(self.shape, dtype=np.uint8)
        self._by_unit: np.ndarray | None = None
        self._thread = threading.Thread(target=charged(self._draw), name="metrics_core-draw",
                                        daemon=True)
        self._thread.start()

    @property
    def dtype(self) -> np.dtype:
        return self._counts.dtype

    @property
    def failed(self) -> bool:
        """Whether the draw failed (its readers get the error)."""
        return self._error is not None

    @property
    def ndim(self) -> int:
        return 2

    def _widen(self, start: int) -> None:
        """uint8 -> uint16 (a count above 255): the rows drawn so far copied."""
        wide = np.empty(self.shape, dtype=np.uint16)
        wide[:start] = self._counts[:start]
        self._counts = wide

    def _indices(self) -> Iterator[np.ndarray]:
        """The draw's index batches, generated on one more thread a few batches ahead (the
        generator releases the GIL; counting them does not), so that drawing and counting
        overlap."""
        ahead: queue.Queue = queue.Queue(maxsize=3)
        done, stop = object(), threading.Event()

        def put(item) -> bool:
            while not stop.is_set():  # (the counting thread gone: stop generating)
                try:
                    ahead.put(item, timeout=0.1)
                    return True
                except queue.Full:
                    continue
            return False

        def generate():
            try:
                for idx in self._boot.index_batches():
                    if not put(idx):
                        return
                put(done)
            except BaseException as err:  # raised again on the counting thread
                put(err)

        threading.Thread(target=charged(generate), name="metrics_core-draw-indices",
                         daemon=True).start()
        try:
            while (item := ahead.get()) is not done:
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            stop.set()

    def _draw(self) -> None:
        try:
            start = 0
            n = self.shape[1]
            for idx in self._indices():
                stop = start + idx.shape[0]
                rows = self._counts[start:stop]
                Bootstrap.count_into(idx, rows)
                if (n > np.iinfo(rows.dtype).max
                        and (rows.sum(axis=1, dtype=np.int64) != n).any()):
                    # A count above the type's largest wrapped (each resample's counts sum
                    # to n_units): widen, and count this batch again.
                    with self._ready:
                        self._widen(start)
                    rows = self._counts[start:stop]
                    Bootstrap.count_into(idx, rows)
                with self._ready:
                    self._done = stop
                    self._ready.notify_all()
                start = stop
        except BaseException as err:  # raised again in every reader
            with self._ready:
                self._error = err
                self._ready.notify_all()

    def rows(self, start: int, stop: int) -> np.ndarray:
        """Rows ``start:stop`` of the counts, once drawn."""
        stop = min(stop, self.shape[0])
        with self._ready:
            while self._done < stop and self._error is None:
                self._ready.wait()
            if self._done < stop:
                raise RuntimeError("drawing the bootstrap resamples failed") from self._error
            return self._counts[start:stop]

    def __getitem__(self, key):
        if not isinstance(key, slice) or key.step not in (None, 1):
            raise TypeError("DrawnCounts reads row slices only, e.g. counts[10:20]")
        start, stop, _ = key.indices(self.shape[0])
        return self.rows(start, stop)

    def array(self) -> np.ndarray:
        """The whole matrix (waits until every row is drawn)."""
        return self.rows(0, self.shape[0])

    def by_unit(self) -> np.ndarray:
        """The transpose, ``(n_units, n_resamples)`` C-ordered (waits for every row; made
        once, on the first call)."""
        counts = self.rows(0, self.shape[0])
        with self._ready:
            if self._by_unit is None:
                by_unit = np.empty(self.shape[::-1], dtype=counts.dtype)
                step = 256  # (in blocks of rows: a cache-friendly transpose)
                for start in range(0, self.shape[0], step):
                    by_unit[:, start:start + step] = counts[start:start + step].T
                self._by_unit = by_unit
            return self._by_unit

    def unit_weights(self, units) -> np.ndarray:
        """The counts of ``units`` over every resample as float64 weights ``(n_resamples,
        len(units))`` in column-major order (each unit's resamples contiguous: the layout of
        ``counts[:, units]``, and of :meth:`by_unit`'s rows transposed), gathered from the
        rows block by block (waits for every row). As fast as reading :meth:`by_unit`'s rows,
        without its transpose of the whole matrix: a second of CPU and the matrix's size
        again (0.5 s and 148 MB on the demo at 10,000 resamples), made by the first setting
        change while every reader of the rows waited."""
        units = np.asarray(units, dtype=np.intp)
        counts = self.rows(0, self.shape[0])
        out = np.empty((units.size, self.shape[0]), dtype=np.float64)
        step = 1024  # (rows a block: the gathered block stays in cache while transposed)
        for start in range(0, self.shape[0], step):
            out[:, start:start + step] = np.take(counts[start:start + step], units, axis=1).T
        return out.T

    def batches(self, size: int) -> Iterator[np.ndarray]:
        """Row slices of ``size`` rows, each as soon as it is drawn."""
        for start in range(0, self.shape[0], size):
            yield self.rows(start, start + size)


@dataclass(frozen=True)
class CI:
    """A bootstrap confidence interval (contract §9).

    ``n_valid`` resamples gave a defined statistic; ``n_resamples - n_valid`` were excluded
    (``n_excluded``). ``unit`` is the resampling unit (``"query"`` or ``"post"``).
    ``lo``/``hi`` are ``nan`` when no resample was valid.
    """

    lo: float
    hi: float
    level: float
    n_resamples: int
    n_valid: int
    method: str = "percentile"
    unit: str = "query"

    @property
    def n_excluded(self) -> int:
        return self.n_resamples - self.n_valid

    @property
    def defined(self) -> bool:
        return self.n_valid > 0

    def as_list(self) -> list[float]:
        """``[lo, hi]`` as plain floats (the ``ci95`` field of a metric record, §11)."""
        return [float(self.lo), float(self.hi)]


def percentile_ci(values, *, level: float = 0.95, unit: str = "query") -> CI:
    """Percentile interval of bootstrap replicates; ``nan`` replicates are excluded.

    The endpoints are ``numpy.percentile`` (linear interpolation) of the valid replicates at
    ``50 (1 - level)`` and ``50 (1 + level)`` percent.
    """
    normal_quantile(level)
    values = np.asarray(values, dtype=np.float64).ravel()
    valid = values[~np.isnan(values)]
    if valid.size == 0:
        lo = hi = np.nan
    else:
        lo, hi = np.percentile(valid, [50.0 * (1.0 - level), 50.0 * (1.0 + level)],
                               overwrite_input=True)  # valid: a copy, ours
    return CI(lo=float(lo), hi=float(hi), level=float(level), n_resamples=int(values.size),
              n_valid=int(valid.size), method="percentile", unit=unit)


def percentile_cis(matrix, *, level: float = 0.95, unit: str = "query") -> tuple[CI, ...]:
    """:func:`percentile_ci` of each column of ``matrix`` ``(n_resamples, m)``: the columns
    without ``nan`` in one call (numpy's percentile along an axis takes the same order
    statistics and interpolation as column by column: the same values), the others one by
    one. The columns are copied once, each one's resamples side by side (a partition along
    contiguous memory, in place in the copy: about twice as fast as along the columns)."""
    normal_quantile(level)
    matrix = np.asarray(matrix, dtype=np.float64)
    if matrix.ndim != 2:
        raise ValueError(f"matrix must be 2-D, got shape {matrix.shape}")
    q = [50.0 * (1.0 - level), 50.0 * (1.0 + level)]
    by_column = matrix.T.copy(order="C")  # (m, n_resamples), ours to reorder
    clean = ~np.isnan(by_column).any(axis=1)
    out: list[CI | None] = [None] * matrix.shape[1]
    if clean.any() and matrix.shape[0]:
        columns = np.flatnonzero(clean)
        lo, hi = np.percentile(by_column if columns.size == by_column.shape[0]
                               else by_column[columns], q, axis=1, overwrite_input=True)
        for j, a, b in zip(columns.tolist(), lo.tolist(), hi.tolist(), strict=True):
            out[j] = CI(lo=a, hi=b, level=float(level), n_resamples=int(matrix.shape[0]),
                        n_valid=int(matrix.shape[0]), method="percentile", unit=unit)
    for j in range(matrix.shape[1]):
        if out[j] is None:
            out[j] = percentile_ci(matrix[:, j], level=level, unit=unit)
    return tuple(out)


def bootstrap_cis(statistics: Mapping[str, Statistic], n_units: int, *, unit_of_row=None,
                  n_resamples: int = 10_000, seed: int = 0, level: float = 0.95,
                  batch_size: int | None = None, unit: str | None = None,
                  progress: Callable[[int, int], None] | None = None,
                  counts: np.ndarray | None = None) -> dict:
    """Percentile bootstrap intervals of several statistics over the same resamples (§9).

    The one bootstrap of the project: the report, the dashboard and the benchmarks call it.
    Each batch of count matrices is drawn once and passed (as float64 row weights) to every
    statistic, so the statistics see identical resamples and the result of each equals
    :func:`bootstrap_ci` with the same seed.

    Parameters
    ----------
    statistics : mapping of name -> callable
        ``statistic(weights)`` with ``weights`` float64 of shape ``(b, n_rows)`` returns an
        array of shape ``(b,)``; ``nan`` marks a resample where the statistic is undefined.
        A statistic with a ``names`` attribute (:func:`weighted_means`) returns ``(b, m)``,
        one column per name, and gives one interval per name; any other statistic returning
        ``(b, m)`` gives a tuple of ``m`` intervals (e.g. one per criterion).
    n_units : int
        Resampling units. Without ``unit_of_row`` the units are the rows.
    unit_of_row : array-like of int, optional
        Unit index of every row (e.g. the post of every query): the cluster bootstrap.
    unit : str, optional
        Label stored in the :class:`CI`; default ``"query"``, or ``"post"`` with ``unit_of_row``.
    progress : callable, optional
        ``progress(done, total)`` after every batch; an exception it raises cancels the run.
    counts : array, optional
        The count matrix drawn before (:meth:`Bootstrap.compact_counts` with the same
        ``n_units``, ``n_resamples`` and ``seed``): the same intervals without drawing again.
    """
    if unit is None:
        unit = "query" if unit_of_row is None else "post"
    normal_quantile(level)
    if not statistics:
        return {}
    collected: dict[str, list[np.ndarray]] = {name: [] for name in statistics}
    for weights in _weight_batches(n_units, unit_of_row, n_resamples, seed, batch_size, counts,
                                   progress):
        for name, statistic in statistics.items():
            values = np.asarray(statistic(weights), dtype=np.float64)
            if values.shape[:1] != (weights.shape[0],) or values.ndim > 2:
                raise ValueError(f"statistic {name!r} must return shape ({weights.shape[0]},) "
                                 f"or ({weights.shape[0]}, m), got {values.shape}")
            collected[name].append(values)
    out: dict = {}
    for name, parts in collected.items():
        values = np.concatenate(parts)
        names = getattr(statistics[name], "names", None)
        if values.ndim == 1:
            out[name] = percentile_ci(values, level=level, unit=unit)
        elif names is not None:
            out.update(zip(names, percentile_cis(values, level=level, unit=unit), strict=True))
        else:
            out[name] = percentile_cis(values, level=level, unit=unit)
    return out


def _weight_batches(n_units: int, unit_of_row, n_resamples: int, seed: int,
                   batch_size: int | None, counts: np.ndarray | None,
                   progress: Callable[[int, int], None] | None) -> Iterator[np.ndarray]:
    """The resamples' float64 row weights, batch by batch (:func:`bootstrap_cis`'s draw):
    ``batch_size`` resamples a batch (default: about :data:`BATCH_ELEMENTS` weights), from
    ``counts`` when given; ``progress(done, n_resamples)`` after each batch is used."""
    n_rows = n_units
    if unit_of_row is not None:
        unit_of_row = np.asarray(unit_of_row)
        n_rows = max(n_units, unit_of_row.size)
    if batch_size is None:  # size batches by the weight matrix the statistics receive
        batch_size = max(1, BATCH_ELEMENTS // n_rows)
    boot = Bootstrap(n_units, n_resamples=n_resamples, seed=seed, batch_size=batch_size)
    if counts is not None and counts.shape != (n_resamples, n_units):
        raise ValueError(f"counts must have shape ({n_resamples}, {n_units}), "
                         f"got {counts.shape}")
    batches = boot.count_batches() if counts is None else (
        counts[i:i + batch_size] for i in range(0, n_resamples, batch_size))
    done = 0
    for batch in batches:
        weights = batch.astype(np.float64)
        if unit_of_row is not None:
            weights = Bootstrap.expand(weights, unit_of_row)
        yield weights
        done += batch.shape[0]
        if progress is not None:
            progress(done, n_resamples)


def bootstrap_sums(matrices, n_units: int, *, unit_of_row=None, n_resamples: int = 10_000,
                   seed: int = 0, batch_size: int | None = None,
                   progress: Callable[[int, int], None] | None = None,
                   counts: np.ndarray | None = None) -> list[np.ndarray]:
    """``W @ m`` for each matrix ``m`` of per-row columns: every resample's weighted column
    sums, ``(n_resamples, m.shape[1])`` each, over the resamples of :func:`bootstrap_cis`
    with the same arguments (batch by batch, one product per matrix and batch, so a matrix's
    sums do not depend on the other matrices given with it).

    For statistics that are functions of weighted sums: the sums are drawn once, and the
    statistic is applied to all resamples at once (or the sums are updated, exactly, when a
    few integer-valued rows change: see
    :func:`metrics_core.evaluation.operating_intervals.operating_intervals`).
    """
    matrices = [np.asarray(m, dtype=np.float64) for m in matrices]
    parts: list[list[np.ndarray]] = [[] for _ in matrices]
    for weights in _weight_batches(n_units, unit_of_row, n_resamples, seed, batch_size, counts,
                                   progress):
        for part, matrix in zip(parts, matrices, strict=True):
            part.append(weights @ matrix)
    return [np.concatenate(part, axis=0) if part else np.empty((0, m.shape[1]))
            for part, m in zip(parts, matrices, strict=True)]


def bootstrap_ci(statistic: Statistic, n_units: int, *, unit_of_row=None,
                 n_resamples: int = 10_000, seed: int = 0, level: float = 0.95,
                 batch_size: int | None = None, unit: str | None = None) -> CI:
    """Percentile bootstrap interval of one statistic (contract §9).

    See :func:`bootstrap_cis` for the parameters. Resamples where the statistic is ``nan``
    are excluded; :attr:`CI.n_valid` says how many remained.

    Examples
    --------
    >>> v = np.arange(100.0)
    >>> ci = bootstrap_ci(weighted_mean(v), 100, n_resamples=2000, seed=1)
    >>> bool(ci.lo < 49.5 < ci.hi), ci.n_valid
    (True, 2000)
    """
    name = "statistic"
    return bootstrap_cis({name: statistic}, n_units, unit_of_row=unit_of_row,
                         n_resamples=n_resamples, seed=seed, level=level,
                         batch_size=batch_size, unit=unit)[name]


# ------------------------------------------------------------------- weighted statistics
def divide(num, den) -> np.ndarray:
    """``num / den`` as float64 with ``nan`` where ``den == 0`` (the 0/0 rule of every kernel)."""
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    out = np.full(np.broadcast_shapes(num.shape, den.shape), np.nan)
    np.divide(num, den, out=out, where=den != 0)
    return out


def weighted_mean(values, mask=None) -> Statistic:
    """Statistic: weighted mean of a per-row array over the rows in ``mask``.

    ``statistic(W) = (W[:, mask] @ values[mask]) / W[:, mask].sum(1)``; ``nan`` for a resample
    that draws no row of the mask (e.g. no positive query for a ``positives_only`` metric).
    ``values`` must be defined (not ``nan``) on the mask: choose the mask that excludes the
    queries where a per-query metric is undefined.
    """
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 1:
        raise ValueError("values must be 1-D")
    keep = np.ones(values.shape, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    if keep.shape != values.shape:
        raise ValueError(f"mask must have the shape of values {values.shape}, got {keep.shape}")
    v = np.where(keep, values, 0.0)
    m = keep.astype(np.float64)

    def statistic(weights: np.ndarray) -> np.ndarray:
        return divide(weights @ v, weights @ m)

    return statistic


def weighted_means(columns: Mapping[str, tuple]) -> Statistic:
    """Statistic of several weighted means at once (one matrix product per batch).

    ``columns`` maps a name to ``(values, mask)`` (mask ``None`` = every row); the statistic
    returns ``(b, m)`` and carries ``names``, so :func:`bootstrap_cis` gives one interval per
    name, equal to :func:`weighted_mean` of each column.
    """
    names = tuple(columns)
    first = np.asarray(next(iter(columns.values()))[0]) if names else np.empty(0)
    num = np.zeros((first.size, len(names)))
    den = np.zeros((first.size, len(names)))
    for j, name in enumerate(names):
        values, mask = columns[name]
        keep = np.ones(first.size, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
        num[:, j] = np.where(keep, np.nan_to_num(np.asarray(values, dtype=np.float64)), 0.0)
        den[:, j] = keep

    def statistic(weights: np.ndarray) -> np.ndarray:
        return divide(weights @ num, weights @ den)

    statistic.names = names
    return statistic


def weighted_ratio(num, den) -> Statistic:
    """Statistic: ratio of weighted sums, ``(W @ num) / (W @ den)``; ``nan`` where 0/0.

    A proportion of counts (e.g. sensitivity = TP / (TP + FN)) is ``weighted_ratio(tp_row,
    pos_row)`` with per-row 0/1 indicators.
    """
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    if num.ndim != 1 or num.shape != den.shape:
        raise ValueError("num and den must be 1-D arrays of the same length")

    def statistic(weights: np.ndarray) -> np.ndarray:
        return divide(weights @ num, weights @ den)

    return statistic


def indicator_matrix(index, n_columns: int) -> np.ndarray:
    """One-hot rows: ``out[i, index[i]] = 1``; ``W @ out`` is the weighted count of every
    index value per resample (e.g. the cells of an outcome table, or a histogram)."""
    index = np.asarray(index, dtype=np.int64)
    out = np.zeros((index.size, n_columns))
    out[np.arange(index.size), index] = 1.0
    return out


def weighted_int_quantiles(values, quantiles) -> Statistic:
    """Statistic: numpy's linear quantiles of non-negative integers under integer row weights.

    Row ``r`` equals ``np.quantile(np.repeat(values, weights[r]), quantiles)``: the sample with
    row ``i`` repeated ``weights[r, i]`` times (a bootstrap resample). Built from one weighted
    histogram per resample, so it costs one matrix product. Returns ``(b, len(quantiles))``;
    ``nan`` for an empty resample.

    >>> s = weighted_int_quantiles([0, 2, 3, 5], (0.5, 0.9))
    >>> s(np.array([[1.0, 1, 1, 1], [0, 2, 0, 1]])).round(12).tolist()
    [[2.5, 4.4], [2.0, 4.4]]
    """
    values = np.asarray(values, dtype=np.int64)
    if values.ndim != 1 or (values.size and values.min() < 0):
        raise ValueError("values must be a 1-D array of non-negative integers")
    q = np.asarray(quantiles, dtype=np.float64)
    n_values = int(values.max()) + 1 if values.size else 1
    kept: list[np.ndarray] = []  # the one-hot matrix, built on first use (from_histogram
    # alone, as the report's combined statistic uses it, never needs it)

    def from_histogram(counts: np.ndarray) -> np.ndarray:
        cum = np.rint(np.cumsum(counts, axis=1))  # (b, n_values): counts <= v
        total = cum[:, -1]
        pos = (total[:, None] - 1.0) * q[None, :]  # (b, m) fractional order statistic
        lo = np.floor(pos)

        def order_stat(j):  # value of the j-th smallest (0-based): #{v : cum[v] <= j}
            return (cum[:, None, :] <= j[:, :, None]).sum(axis=2).astype(np.float64)

        a, b = order_stat(lo), order_stat(np.minimum(lo + 1, np.maximum(total - 1, 0)[:, None]))
        out = a + (pos - lo) * (b - a)
        out[total <= 0] = np.nan
        return out

    def statistic(weights: np.ndarray) -> np.ndarray:
        if not kept:
            kept.append(indicator_matrix(values, n_values))
        return from_histogram(weights @ kept[0])

    #: The same from weighted counts per value (``W @ onehot(values)``), computed elsewhere.
    statistic.from_histogram = from_histogram
    return statistic
