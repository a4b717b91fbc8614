"""Bootstrap intervals of the setting-dependent metrics (§9): evidence recall / precision, K's
statistics and the counting metrics with a bootstrap interval, each resample's value from its
weighted column sums over the seeded resamples of :mod:`intervals` (the same count matrix, kept
across setting changes, so a gate move updates the previous setting's sums by what changed).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np

from metrics_core import registry
from metrics_core.evaluation.intervals import (
    Intervals,
    batch_rows,
    interval_method,
    kept_count_matrix,
    resampled_units,
)
from metrics_core.metrics import gate, outcomes
from metrics_core.metrics.uncertainty import (
    DrawnCounts,
    bootstrap_sums,
    indicator_matrix,
    percentile_cis,
    weighted_int_quantiles,
)
from metrics_core.metrics.uncertainty import divide as _ratio
from metrics_core.progress import stage

__all__ = ["BOOTSTRAP_COUNTING", "BOOTSTRAP_OPERATING", "OPERATING_NAMES", "operating_intervals"]


#: The registry's counting metrics with a bootstrap interval (F1, MCC, ... at τ and of the
#: gate's abstention view, the workup per detection): each resample's value comes from its
#: weighted outcome tables (:func:`_operating_values`).
BOOTSTRAP_COUNTING = tuple(s for s in registry.counting() if s.interval == "bootstrap")

#: The registry's setting-dependent kernels with a bootstrap interval (evidence recall /
#: precision, mean, median and P90 of K, sentences per 1,000: §7), each resample's value from
#: the operating sums: the (source, over, reduce) the sums can give.
OPERATING_REDUCTIONS = (("evidence_recall", "evidence", "mean"),
                        ("evidence_precision", "evidence", "mean"), ("k", "all", "mean"),
                        ("k", "all", "per_1000"), ("k", "all", "median"), ("k", "all", "p90"))
BOOTSTRAP_OPERATING = tuple(s for s in registry.kernels() if s.interval == "bootstrap"
                            and s.kernel.per_query and not s.kernel.data_only)
for _spec in BOOTSTRAP_OPERATING:
    if (_spec.kernel.source, _spec.kernel.over, _spec.kernel.reduce) not in OPERATING_REDUCTIONS:
        raise ValueError(f"{_spec.name}: no bootstrap from the operating sums for its kernel "
                         f"{_spec.kernel}; they give {OPERATING_REDUCTIONS}")

#: The names of the setting-dependent intervals, in the order :func:`_operating_values`
#: returns them.
OPERATING_NAMES = (*(s.name for s in BOOTSTRAP_OPERATING),
                   *(s.name for s in BOOTSTRAP_COUNTING))

#: A setting change that alters the integer columns of at most this share of the queries
#: updates their kept sums by those queries' rows; a larger change sums every row again.
DELTA_MAX_SHARE = 0.25

#: Leading integer columns before the two one-hot outcome tables and the K histogram:
#: evidence mask, K, 1000 K, 1.
_N_LEADING = 4
#: Integer columns before the K histogram: the leading ones and two outcome tables of 6 cells.
_N_FIXED = _N_LEADING + 12


def _float_columns(inter) -> np.ndarray:
    """The two real-valued columns: evidence recall and precision on the evidence mask."""
    emask = np.asarray(inter.emask, dtype=bool)
    return np.stack([np.where(emask, np.nan_to_num(inter.rec), 0.0),
                     np.where(emask, np.nan_to_num(inter.prec), 0.0)], axis=1)


def _sources(inter) -> tuple[np.ndarray, ...]:
    """Per query, the small integers the integer columns are built from: the prediction at
    τ, the gate's three-way prediction, K and the evidence mask."""
    return (np.asarray(inter.pred, dtype=np.int64),
            gate.states_to_prediction(inter.states).astype(np.int64),
            np.asarray(inter.k, dtype=np.int64), np.asarray(inter.emask, dtype=bool))


def _integer_columns(y, pred, three_way, k, emask, n_k: int) -> np.ndarray:
    """The integer-valued columns of some queries: evidence mask, K, 1000 K, 1; the outcome
    table at τ and the gate's abstention table (one-hot, 6 cells each); K's histogram (one-hot,
    ``n_k`` values). Their weighted sums are integers, exact in float64 in any order."""
    return np.concatenate([
        np.stack([emask.astype(np.float64), k.astype(np.float64), 1000.0 * k,
                  np.ones(k.size)], axis=1),
        indicator_matrix((pred + 1) * 2 + y, 6), indicator_matrix((three_way + 1) * 2 + y, 6),
        indicator_matrix(k, n_k)], axis=1)


def _integer_categories(y, pred, three_way, k, emask, n_k: int):
    """The integer columns of :func:`_integer_columns` by category: ``(codes, matrix)``, the
    category of every query (its prediction, gate prediction, label, evidence mask and K)
    and the columns' values of each category. A resample's sums of the columns are its
    weight per category times ``matrix`` (whole numbers: the same sums in any order)."""
    n_codes = 24 * n_k
    codes = ((((pred * 3 + (three_way + 1)) * 2 + y) * 2 + emask.astype(np.int64)) * n_k + k)
    c = np.arange(n_codes)
    c_k, rest = c % n_k, c // n_k
    c_emask, rest = rest % 2, rest // 2
    c_y, rest = rest % 2, rest // 2
    c_three, c_pred = rest % 3 - 1, rest // 3
    return codes, _integer_columns(c_y, c_pred, c_three, c_k, c_emask.astype(bool), n_k)


def _code_runs(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The positions of ``codes`` grouped by code (a stable sort), where each code's run
    starts in that order, and the codes present (ascending): for ``np.add.reduceat``."""
    order = np.argsort(codes, kind="stable")
    ordered = codes[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    return order, starts, ordered[starts]


def _category_sums(batches, codes: np.ndarray, n_codes: int, n_resamples: int,
                   progress=None, *, columns: np.ndarray | None = None) -> np.ndarray:
    """Every resample's weight per category, ``(n_resamples, n_codes)``: per batch of weights
    (columns: the rows ``codes`` describes; ``columns``: the batch's columns of those rows,
    the others not read), the columns gathered category by category and summed per run
    (whole numbers)."""
    out = np.zeros((n_resamples, n_codes))
    if not codes.size:
        return out
    order, starts, present = _code_runs(codes)
    gather = order if columns is None else np.asarray(columns, dtype=np.intp)[order]
    start = 0
    for batch in batches:
        stop = start + batch.shape[0]
        out[start:stop, present] = np.add.reduceat(np.take(batch, gather, axis=1), starts,
                                                   axis=1, dtype=np.int64)
        start = stop
        if progress is not None:
            progress(stop, n_resamples)
    return out


def _joint_category_sums(batches, codes: np.ndarray, n_codes: int, others: np.ndarray,
                         n_others: int, n_resamples: int, progress=None):
    """:func:`_category_sums` of two categories of the same rows, ``codes`` and ``others``,
    from one pass over the weights: each batch's weight per joint category (the few pairs
    of the two that occur), then summed per category of each (whole numbers: the same
    sums as two passes)."""
    by_code = np.zeros((n_resamples, n_codes))
    by_other = np.zeros((n_resamples, n_others))
    if not codes.size:
        return by_code, by_other
    joint = codes.astype(np.int64) * n_others + others
    order = np.argsort(joint, kind="stable")
    ordered = joint[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    present = ordered[starts]  # ascending: by code first
    code_of, other_of = present // n_others, present % n_others
    code_starts = np.flatnonzero(np.r_[True, code_of[1:] != code_of[:-1]])
    other_order = np.argsort(other_of, kind="stable")
    other_sorted = other_of[other_order]
    other_starts = np.flatnonzero(np.r_[True, other_sorted[1:] != other_sorted[:-1]])
    start = 0
    for batch in batches:
        stop = start + batch.shape[0]
        sums = np.add.reduceat(np.take(batch, order, axis=1), starts, axis=1, dtype=np.int64)
        by_code[start:stop, code_of[code_starts]] = np.add.reduceat(sums, code_starts, axis=1)
        by_other[start:stop, other_sorted[other_starts]] = np.add.reduceat(
            np.take(sums, other_order, axis=1), other_starts, axis=1)
        start = stop
        if progress is not None:
            progress(stop, n_resamples)
    return by_code, by_other


def _operating_values(float_sums: np.ndarray, int_sums: np.ndarray) -> np.ndarray:
    """Each resample's value of every :data:`OPERATING_NAMES` metric from its weighted sums:
    the registry's kernels of §7 (:data:`BOOTSTRAP_OPERATING`: evidence recall / precision over
    the evidence mask, mean K, workload per 1,000, K's median and P90, numpy's linear quantiles
    of the resample from its weighted K histogram), and the counting metrics with a bootstrap
    interval
    (:data:`BOOTSTRAP_COUNTING`: F1 / MCC / balanced accuracy at τ, §4, those of the gate's
    abstention view and the workup per detection, §6), each from the resample's weighted
    outcome table at τ or of the gate. Equal to computing each on the repeated rows."""
    recall_num, precision_num = float_sums.T
    e_den, k_sum, work_sum, n = int_sums[:, :_N_LEADING].T
    lead = _N_LEADING
    tables = {"tau": int_sums[:, lead:lead + 6].reshape(-1, 3, 2),
              "gate": int_sums[:, lead + 6:lead + 12].reshape(-1, 3, 2)}
    histogram = int_sums[:, _N_FIXED:]
    quantiles = weighted_int_quantiles(np.arange(histogram.shape[1]), (0.5, 0.9))
    median_p90 = quantiles.from_histogram(histogram)
    reduced = dict(zip(OPERATING_REDUCTIONS, (
        _ratio(recall_num, e_den), _ratio(precision_num, e_den), _ratio(k_sum, n),
        _ratio(work_sum, n), median_p90[:, 0], median_p90[:, 1]), strict=True))
    return np.column_stack([
        *(reduced[s.kernel.source, s.kernel.over, s.kernel.reduce] for s in BOOTSTRAP_OPERATING),
        *(outcomes.counted(tables[s.counting.table], s.counting)[0]
          for s in BOOTSTRAP_COUNTING)])


#: The real-valued columns' sums are kept per block of queries in the order of p (a
#: threshold move changes the K of the queries between the old and the new threshold only,
#: so it touches one or two blocks) when they take many distinct values; see
#: :data:`MAX_VALUE_PAIRS`.
FLOAT_BLOCKS = 64

#: Evidence recall and precision are ratios of small whole numbers (hits over gold, hits over
#: K), so the queries share few distinct (recall, precision) pairs: up to this many, their
#: sums are each resample's whole weight per pair (counted like the integer columns, with no
#: product of the count matrix) times the pair's values.
MAX_VALUE_PAIRS = 2048


def _value_pairs(floats: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of ``floats`` (two columns, no NaN) in lexicographic order and each
    row's index among them."""
    values, codes = np.unique(floats[:, 0] + 1j * floats[:, 1], return_inverse=True)
    return np.stack([values.real, values.imag], axis=1), codes.ravel()


def _weights_f(counts: DrawnCounts, units: np.ndarray) -> np.ndarray:
    """The counts of ``units`` as float64 weights ``(n_resamples, len(units))`` in
    column-major order (:meth:`DrawnCounts.unit_weights`): the layout of ``counts[:, units]``
    (numpy's indexing puts the indexed axis first in memory), which the block products have
    always been made with (BLAS's sums depend on the layout)."""
    return counts.unit_weights(units)


#: A move's changed units are read from a unit-major copy of the counts of the units near
#: them in the order of p (this many on either side of the changed ones), kept for the next
#: moves: a gather of scattered units reads nearly every cache line of the count matrix
#: whatever their number, a kept unit's counts are one contiguous row.
NEAR_UNITS = 1024


class _NearCounts:
    """The counts of some units over every resample, unit by unit (``rows[i]``: the counts
    of ``units[i]``, ascending), gathered from a count matrix's rows: those of the units near
    the last ones asked for, in the order of p."""

    def __init__(self, order: np.ndarray):
        self.rank = np.empty(order.size, dtype=np.int64)
        self.rank[order] = np.arange(order.size)
        self.order = order
        self.counts = None  # the count matrix gathered from (the same while kept)
        self.units = np.empty(0, dtype=np.int64)
        self.rows: np.ndarray | None = None

    def sums(self, counts: DrawnCounts, rows: np.ndarray, unit_of_row, codes: np.ndarray,
             n_codes: int) -> np.ndarray | None:
        """Every resample's weight per code, ``(n_resamples, n_codes)``, of the queries
        ``rows`` (codes ``codes``): whole numbers, those of :func:`_category_sums`. None
        when the rows lie more than :data:`NEAR_UNITS` apart in the order of p (the copy
        kept holds at most three times that many units)."""
        units = rows if unit_of_row is None else unit_of_row[rows]
        where = np.searchsorted(self.units, units)
        if (counts is not self.counts or self.rows is None
                or np.any(where >= self.units.size)
                or np.any(self.units[np.minimum(where, self.units.size - 1)] != units)):
            ranks = self.rank[rows]
            if ranks.max() - ranks.min() >= NEAR_UNITS:
                return None
            near = self.order[max(0, int(ranks.min()) - NEAR_UNITS):
                              int(ranks.max()) + NEAR_UNITS + 1]
            self.counts, self.rows = None, None  # (until gathered: an error leaves none)
            self.units = np.unique(near if unit_of_row is None else unit_of_row[near])
            whole = counts.rows(0, counts.shape[0])
            gathered = np.empty((self.units.size, counts.shape[0]), dtype=whole.dtype)
            step = 1024  # (rows a block: the gathered block stays in cache while transposed)
            for start in range(0, counts.shape[0], step):
                gathered[:, start:start + step] = np.take(whole[start:start + step],
                                                          self.units, axis=1).T
            self.counts, self.rows = counts, gathered
            where = np.searchsorted(self.units, units)
        out = np.zeros((counts.shape[0], n_codes))
        order, starts, present = _code_runs(codes)
        out[:, present] = np.add.reduceat(self.rows[where[order]], starts, axis=0,
                                                  dtype=np.int64).T
        return out


class _KeptSums:
    """The resamples' weighted sums of the operating columns for the last setting, kept per
    evaluator and bootstrap configuration (with the count matrix kept), so that the next
    setting sums only what changed, and gives the sums that summing every row gives:

    - the integer columns through the rows of the queries whose prediction, gate state, K or
      evidence mask changed (their sums are integers: any order gives the same);
    - the real-valued columns (evidence recall and precision): each resample's whole weight
      per distinct (recall, precision) pair, updated by the rows that changed, times the
      pairs' values in one product over the pairs the data holds (the same product a fresh
      evaluator makes); with more than :data:`MAX_VALUE_PAIRS` pairs, per block of queries
      in the order of p, summed always block by block in the same order, so that only the
      blocks holding a changed query are summed again (a threshold move: one or two)."""

    def __init__(self, order: np.ndarray):
        self.lock = threading.Lock()
        self.near = _NearCounts(order)
        self.blocks = np.array_split(order, min(FLOAT_BLOCKS, max(order.size, 1)))
        self.block_of_row = np.empty(order.size, dtype=np.int64)
        for b, rows in enumerate(self.blocks):
            self.block_of_row[rows] = b
        self.floats: np.ndarray | None = None
        self.block_sums: np.ndarray | None = None
        self.pair_column: dict[tuple[float, float], int] = {}  # pair -> column of pair_sums
        self.pair_sums: np.ndarray | None = None  # (n_resamples, pairs seen): whole weights
        self.pair_of_row: np.ndarray | None = None
        self.sources: tuple[np.ndarray, ...] | None = None
        self.int_sums: np.ndarray | None = None
        self.mode: str | None = None  # "pairs" or "blocks": how the last setting was summed
        self.rows_summed = 0  # rows whose weights the last call read (for inspection)
        self.blocks_summed = 0

    def _sums_every_pair(self, floats, values) -> bool:
        """Whether :meth:`float_sums` of ``floats`` (distinct pairs ``values``) sums every
        row's weight per pair (a first setting, or one summed the other way: every row
        summed, as a fresh evaluator sums them)."""
        mode = "pairs" if values.shape[0] <= MAX_VALUE_PAIRS else "blocks"
        return mode == "pairs" and (self.floats is None or self.floats.shape != floats.shape
                                    or self.mode != mode
                                    or len(self.pair_column) > 2 * MAX_VALUE_PAIRS)

    def float_sums(self, floats, counts, unit_of_row, pair_sums=None) -> np.ndarray:
        """The real-valued sums of ``floats``, reading the weights of what changed only.
        ``pair_sums``: every resample's weight per distinct pair of ``floats`` (in
        :func:`_value_pairs`' order), summed already, when every row is summed."""
        values, codes = _value_pairs(floats)
        mode = "pairs" if values.shape[0] <= MAX_VALUE_PAIRS else "blocks"
        first = (self.floats is None or self.floats.shape != floats.shape
                 or self.mode != mode or len(self.pair_column) > 2 * MAX_VALUE_PAIRS)
        self.mode = mode
        if mode == "blocks":
            return self._block_sums(floats, counts, unit_of_row, first)
        self.floats = None  # (until the sums are updated: an error leaves none)
        keys = list(map(tuple, values.tolist()))
        if first:
            self.pair_column = {key: j for j, key in enumerate(keys)}
            if pair_sums is None:
                step = batch_rows(floats.shape[0])
                batches = (b if unit_of_row is None else np.take(b, unit_of_row, axis=1)
                           for b in counts.batches(step))
                pair_sums = _category_sums(batches, codes, len(keys), counts.shape[0])
            self.pair_sums = pair_sums
            self.rows_summed = floats.shape[0]
        else:
            for key in keys:
                self.pair_column.setdefault(key, len(self.pair_column))
            column = np.array([self.pair_column[key] for key in keys], dtype=np.int64)
            new, old = column[codes], self.pair_of_row
            rows = np.flatnonzero(new != old)
            if len(self.pair_column) > self.pair_sums.shape[1]:  # pairs not seen before
                wider = np.zeros((self.pair_sums.shape[0], len(self.pair_column)))
                wider[:, :self.pair_sums.shape[1]] = self.pair_sums
                self.pair_sums = wider
            if rows.size:
                delta = np.zeros((rows.size, self.pair_sums.shape[1]))
                delta[np.arange(rows.size), new[rows]] += 1.0
                delta[np.arange(rows.size), old[rows]] -= 1.0
                units = rows if unit_of_row is None else unit_of_row[rows]
                self.pair_sums += _weights_f(counts, units) @ delta  # whole numbers
            self.rows_summed = int(rows.size)
        column = np.array([self.pair_column[key] for key in keys], dtype=np.int64)
        self.pair_of_row = column[codes]
        self.floats = floats
        # Over the pairs the data holds, in their order: a fresh evaluator's product.
        return np.ascontiguousarray(self.pair_sums[:, column]) @ values

    def _block_sums(self, floats, counts, unit_of_row, first) -> np.ndarray:
        self.pair_sums = self.pair_of_row = None
        if first:
            stale = range(len(self.blocks))
            self.block_sums = np.empty((len(self.blocks), counts.shape[0], floats.shape[1]))
        else:
            changed = np.flatnonzero((floats != self.floats).any(axis=1))
            stale = np.unique(self.block_of_row[changed]).tolist()
        self.blocks_summed = len(stale)
        self.rows_summed = sum(self.blocks[b].size for b in stale)
        self.floats = None  # (until every stale block is summed again: an error leaves none)
        for b in stale:
            rows = self.blocks[b]
            units = rows if unit_of_row is None else unit_of_row[rows]
            self.block_sums[b] = _weights_f(counts, units) @ floats[rows]
        self.floats = floats
        return self._total()

    def _total(self) -> np.ndarray:
        total = self.block_sums[0].copy()
        for part in self.block_sums[1:]:  # always in block order: the same sums
            total += part
        return total

    def every_sum(self, floats, y, sources, n_k, counts: DrawnCounts, unit_of_row,
                  progress) -> tuple[np.ndarray, np.ndarray]:
        """Every block's sums of ``floats`` (the products of :meth:`float_sums`) and the sums
        of the integer columns, by category (:func:`_integer_categories`: no product). When
        the real-valued sums are by pair, both come from one pass over the weights (by the
        joint category: a query's integer category and its pair)."""
        codes, matrix = _integer_categories(y, *sources, n_k)
        step = batch_rows(y.size)
        batches = (b if unit_of_row is None else np.take(b, unit_of_row, axis=1)
                   for b in counts.batches(step))
        values, pairs = _value_pairs(floats)
        if self._sums_every_pair(floats, values):
            by_code, by_pair = _joint_category_sums(batches, codes, matrix.shape[0], pairs,
                                                    values.shape[0], counts.shape[0],
                                                    progress)
            return self.float_sums(floats, counts, unit_of_row, by_pair), by_code @ matrix
        int_sums = _category_sums(batches, codes, matrix.shape[0], counts.shape[0],
                                  progress) @ matrix
        return self.float_sums(floats, counts, unit_of_row), int_sums

    def int_update(self, y, sources, n_k, counts, unit_of_row) -> np.ndarray | None:
        """The integer sums for ``sources`` from the kept ones (None: sum every row)."""
        if self.sources is None:
            return None
        changed = np.zeros(y.size, dtype=bool)
        for new, old in zip(sources, self.sources, strict=True):
            changed |= new != old
        rows = np.flatnonzero(changed)
        if rows.size > DELTA_MAX_SHARE * y.size:
            return None
        kept_k = self.int_sums.shape[1] - _N_FIXED
        width = max(n_k, kept_k)
        sums = np.zeros((self.int_sums.shape[0], _N_FIXED + width))
        sums[:, :self.int_sums.shape[1]] = self.int_sums
        if rows.size:
            # The changed rows by (old category, new category): each resample's whole weight
            # per such pair (gathered from the count matrix's rows as stored, no float copy)
            # times the pair's change of the columns.
            new, matrix = _integer_categories(y[rows], *(s[rows] for s in sources), width)
            old, _ = _integer_categories(y[rows], *(s[rows] for s in self.sources), width)
            moves, pair = np.unique(old * matrix.shape[0] + new, return_inverse=True)
            weights = self.near.sums(counts, rows, unit_of_row, pair.ravel(), moves.size)
            if weights is None:  # (rows far apart: gathered from the count matrix's rows)
                units = rows if unit_of_row is None else unit_of_row[rows]
                weights = _category_sums(counts.batches(batch_rows(units.size)), pair.ravel(),
                                         moves.size, counts.shape[0], columns=units)
            sums += weights @ (matrix[moves % matrix.shape[0]] - matrix[moves // matrix.shape[0]])
        return sums[:, :_N_FIXED + n_k]  # the columns cut off are all zero


def operating_intervals(ev, cfg, inter, progress: Callable | None = None) -> Intervals:
    """Percentile CIs of the setting-dependent metrics (:data:`OPERATING_NAMES`), from the
    resamples' weighted column sums.

    The count matrix is the data set's (drawn once per seed); a setting change re-weights, and
    with the count matrix kept (:func:`kept_count_matrix`), updates the previous setting's sums by
    what changed (:class:`_KeptSums`): the same intervals as a fresh evaluator's."""
    if cfg.bootstrap == 0 or ev.ds.n_queries == 0:
        return Intervals(None)
    progress = stage(progress, "bootstrap (operating metrics)")
    ds = ev.ds
    y = np.asarray(ds.y, dtype=np.int64)
    n_units, unit_of_row = resampled_units(ev, cfg)
    kept_counts = kept_count_matrix(ev, cfg)
    floats = _float_columns(inter)
    sources = _sources(inter)
    n_k = int(sources[2].max()) + 1

    def summed(matrices):
        return bootstrap_sums(matrices, n_units, unit_of_row=unit_of_row,
                              n_resamples=cfg.bootstrap, seed=cfg.seed, progress=progress,
                              counts=kept_counts)

    if kept_counts is None:  # drawn batch by batch: every row summed
        float_sums, int_sums = summed([floats, _integer_columns(y, *sources, n_k)])
    else:
        kept = ev.cached(("operating_sums", cfg.bootstrap_config),
                         lambda: _KeptSums(ev.p_order()))
        with kept.lock:
            int_sums = kept.int_update(y, sources, n_k, kept_counts, unit_of_row)
            if int_sums is not None:
                if progress is not None:
                    progress(cfg.bootstrap, cfg.bootstrap)
                float_sums = kept.float_sums(floats, kept_counts, unit_of_row)
            elif kept.floats is not None and kept.floats.shape == floats.shape:
                codes, matrix = _integer_categories(y, *sources, n_k)
                step = batch_rows(ds.n_queries)
                batches = (b if unit_of_row is None else np.take(b, unit_of_row, axis=1)
                           for b in kept_counts.batches(step))
                int_sums = _category_sums(batches, codes, matrix.shape[0], cfg.bootstrap,
                                          progress) @ matrix
                float_sums = kept.float_sums(floats, kept_counts, unit_of_row)
            else:  # the first setting: every sum, in one pass
                float_sums, int_sums = kept.every_sum(floats, y, sources, n_k, kept_counts,
                                                      unit_of_row, progress)
            kept.sources, kept.int_sums = sources, int_sums
    values = _operating_values(float_sums, int_sums)
    out = Intervals(interval_method(cfg))
    out.update(zip(OPERATING_NAMES, percentile_cis(values, unit=cfg.bootstrap_unit),
                   strict=True))
    return out
