"""Bootstrap intervals of a run's records, through the one bootstrap of :mod:`uncertainty` (§9).

Two sets of statistics share the seeded resamples: the data-only ones (AUROC, AUPRC, ECE,
Brier, the ranking means, AUROC per criterion), cached per bootstrap / ranking / calibration
settings, and the setting-dependent ones (evidence recall / precision, K's statistics, the
counting metrics with a bootstrap interval). Which metrics each set holds comes from the
registry (their interval kind and kernel); the per-post multi-label metrics have their own.
Every interval keeps the number of resamples on which its statistic was defined.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from types import MappingProxyType

import numpy as np

from metrics_core import registry
from metrics_core.evaluation.inflight import in_background
from metrics_core.evaluation.kernels import bootstrap_columns
from metrics_core.metrics import calibration, gate, multilabel, outcomes
from metrics_core.metrics.curve_replicates import (
    ScoreLayout,
    batch_replicates,
    curve_replicates,
    joined,
)
from metrics_core.metrics.uncertainty import (
    CI,
    Bootstrap,
    DrawnCounts,
    bootstrap_cis,
    bootstrap_sums,
    indicator_matrix,
    percentile_ci,
    percentile_cis,
    weighted_int_quantiles,
)
from metrics_core.metrics.uncertainty import divide as _ratio
from metrics_core.progress import stage

__all__ = ["Intervals", "curve_intervals", "data_intervals", "data_intervals_key",
           "multilabel_intervals", "only_the_setting_left", "operating_intervals",
           "post_counts", "query_counts", "start_drawing"]


class Intervals(dict):
    """Metric name -> :class:`~metrics_core.metrics.uncertainty.CI`, plus the method that made
    them."""

    def __init__(self, method: str | None = None):
        super().__init__()
        self.method = method

    def pair(self, name: str) -> tuple[tuple[float, float] | None, int | None]:
        """``((lo, hi), n_valid)`` of ``name``; ``(None, n_valid)`` when no resample was valid."""
        ci = self.get(name)
        if not isinstance(ci, CI):
            return None, None
        return ((float(ci.lo), float(ci.hi)) if ci.defined else None), ci.n_valid


#: Count matrices up to this many cells are drawn once and kept (uint8: one byte a cell), so
#: a setting change re-weights instead of resampling.
KEEP_COUNTS_CELLS = 256 << 20

#: Weight-matrix cells per batch of the passes over the resamples (~1M: cache-sized).
_BATCH_CELLS = 1 << 20


def _units(ev, cfg) -> tuple[int, np.ndarray | None]:
    """(number of resampling units, unit of every query or None for the query unit)."""
    ds = ev.ds
    if cfg.bootstrap_unit == "post":
        return int(ds.posts.size), ds.post_code
    return ds.n_queries, None


class _SharedCounts:
    """Count matrices kept for the whole process, keyed by (units, resamples, seed): the
    draw depends on nothing else (contract §9), so the evaluators of one data set's criteria
    (each of the same size, as the demo's), of its posts and of other data sets of the same
    size share one draw. Least recently used first out beyond :data:`SHARED_COUNTS_CELLS`;
    a draw that failed is drawn again."""

    def __init__(self, cells: int):
        self.cells = cells
        self.lock = threading.Lock()
        self.kept: OrderedDict[tuple, DrawnCounts] = OrderedDict()

    def get(self, n_units: int, n_resamples: int, seed: int) -> DrawnCounts:
        key = (n_units, n_resamples, seed)
        with self.lock:
            found = self.kept.get(key)
            if found is None or found.failed:
                found = self.kept[key] = DrawnCounts(Bootstrap(n_units, n_resamples=n_resamples,
                                                               seed=seed))
            self.kept.move_to_end(key)
            while len(self.kept) > 1 and sum(a * b for a, b, _ in self.kept) > self.cells:
                self.kept.popitem(last=False)
            return found


#: Cells (one byte each) of the count matrices kept for the process.
SHARED_COUNTS_CELLS = 256 << 20
_SHARED_COUNTS = _SharedCounts(SHARED_COUNTS_CELLS)


def _kept_counts(ev, cfg, n_units: int | None = None) -> DrawnCounts | None:
    """The count matrix of ``n_units`` units (default: the run's unit, queries or posts) for
    the run's resamples and seed (:class:`~metrics_core.metrics.uncertainty.DrawnCounts`): drawn
    once on a helper thread and kept (for the process: :class:`_SharedCounts`) when small
    enough (else None: drawn batch by batch where needed)."""
    if n_units is None:
        n_units = _units(ev, cfg)[0]
    if n_units * cfg.bootstrap > KEEP_COUNTS_CELLS:
        return None
    return ev.cached(("bootstrap_counts", n_units, cfg.bootstrap, cfg.seed),
                     lambda: _SHARED_COUNTS.get(n_units, cfg.bootstrap, cfg.seed))


def query_counts(ev, cfg) -> DrawnCounts | None:
    """The run's count matrix of the queries when it is kept (the query unit, small enough),
    else None: read by the statistics that resample queries with the run's seed (the gate's
    risk–coverage areas: its first resamples) instead of drawing them again."""
    if not cfg.bootstrap or cfg.bootstrap_unit != "query" or not ev.ds.n_queries:
        return None
    return _kept_counts(ev, cfg)


def post_counts(ev, cfg):
    """The run's post count matrix (the multi-label metrics' and the cohorts' resamples): the
    kept :class:`~metrics_core.metrics.uncertainty.DrawnCounts`, or a :class:`Bootstrap` of
    the posts to draw batch by batch when too large to keep."""
    n_posts = int(ev.ds.posts.size)
    kept = _kept_counts(ev, cfg, n_posts)
    return kept if kept is not None else Bootstrap(n_posts, n_resamples=cfg.bootstrap,
                                                    seed=cfg.seed)


def start_drawing(ev, cfg) -> None:
    """Start drawing the run's resamples (and the multi-label metrics' posts) on helper
    threads, when they are kept, and the score-ordered pass over them
    (:func:`curve_intervals`, data-only) on another as they come: the caller computes the
    point estimates and the other intervals meanwhile (numpy releases the interpreter in the
    pass's gathers and cumulative sums)."""
    if cfg.bootstrap and ev.ds.n_queries and _kept_counts(ev, cfg) is not None:
        _kept_counts(ev, cfg, int(ev.ds.posts.size))
        # Not again for a setting that leaves them as they are (a threshold move): a thread
        # started only to find the pass done costs the caller its start-up.
        if not ev.computed(("curve_intervals", cfg.bootstrap_config)):
            in_background([lambda: curve_intervals(ev, cfg)], "metrics_core-curves")


def _batch_rows(n_columns: int) -> int:
    return max(1, _BATCH_CELLS // max(n_columns, 1))


def _count_batches(ev, cfg, progress) -> Iterator[np.ndarray]:
    """The run's count matrix (units: queries or posts), batch by batch: from the kept
    counts, or drawn here; ``progress(done, total)`` after each batch."""
    n_units, _ = _units(ev, cfg)
    kept = _kept_counts(ev, cfg)
    step = _batch_rows(ev.ds.n_queries)
    batches = kept.batches(step) if kept is not None else Bootstrap(
        n_units, n_resamples=cfg.bootstrap, seed=cfg.seed, batch_size=step).count_batches()
    done = 0
    for batch in batches:
        yield batch
        done += batch.shape[0]
        if progress is not None:
            progress(done, cfg.bootstrap)


#: Weight-matrix cells per batch of the passes whose statistics are matrix products (a few
#: large products rather than many small ones: BLAS's threads meet less often; a row's
#: product does not depend on how many rows are multiplied with it).
_PRODUCT_BATCH_CELLS = 1 << 22


def _run(ev, cfg, statistics: dict, progress) -> dict:
    n_units, unit_of_row = _units(ev, cfg)
    return bootstrap_cis(statistics, n_units, unit_of_row=unit_of_row,
                         n_resamples=cfg.bootstrap, seed=cfg.seed, unit=cfg.bootstrap_unit,
                         progress=progress, counts=_kept_counts(ev, cfg),
                         batch_size=max(1, _PRODUCT_BATCH_CELLS // max(ev.ds.n_queries, 1)))


def _method(cfg) -> str:
    return f"bootstrap ({cfg.bootstrap_unit}, {cfg.bootstrap} resamples, seed {cfg.seed})"


#: Grid of the ROC band (FPR) and of the PR band (recall).
BAND_GRID = tuple(np.linspace(0.0, 1.0, 101).tolist())


def curve_intervals(ev, cfg, progress: Callable | None = None) -> dict:
    """Percentile CIs of the score-ordered statistics, from one pass over the resamples
    (:func:`metrics_core.metrics.curve_replicates.curve_replicates`; data-only, cached per bootstrap
    settings): ``auroc``, ``auprc`` and ``auroc_by_criterion`` (a tuple, one per criterion) as
    :class:`~metrics_core.metrics.uncertainty.CI`, and the pointwise bands ``roc`` (TPR over the FPR
    grid :data:`BAND_GRID`), ``pr`` (precision over the recall grid) and ``net_benefit`` (over
    :data:`~metrics_core.metrics.decision.DECISION_THRESHOLDS`) as ``(lo, hi)`` arrays."""
    from metrics_core.metrics.decision import DECISION_THRESHOLDS

    def compute():
        ds = ev.ds
        order = ev.p_order()
        unit_of_row = _units(ev, cfg)[1]
        layout = ScoreLayout(ds.p.take(order), ds.y.take(order),
                             order if unit_of_row is None else unit_of_row[order])
        crit = ds.criterion_code.take(order)
        groups = [np.flatnonzero(crit == c) for c in range(len(ds.criteria))]
        grid = np.asarray(BAND_GRID)
        kept = _kept_counts(ev, cfg)
        if kept is None:
            values = curve_replicates(layout, _count_batches(ev, cfg, progress),
                                      groups=groups, roc_grid=grid, pr_grid=grid,
                                      thresholds=DECISION_THRESHOLDS)
        else:  # batch by batch, by this thread and any that helps (help_curve_pass)
            shared = _SharedPass(kept, _batch_rows(ds.n_queries), batch_replicates(
                layout, groups=groups, roc_grid=grid, pr_grid=grid,
                thresholds=DECISION_THRESHOLDS))
            key = cfg.bootstrap_config
            with ev.passes_lock:
                ev.passes[key] = shared
            try:
                shared.work(progress)
                values = joined(shared.parts())
            finally:
                with ev.passes_lock:
                    if ev.passes.get(key) is shared:
                        del ev.passes[key]
        unit = cfg.bootstrap_unit

        def cis(matrix):
            return percentile_cis(matrix, unit=unit)

        def band(matrix):
            both = cis(matrix)
            return np.array([c.lo for c in both]), np.array([c.hi for c in both])

        return {"auroc": percentile_ci(values["auroc"], unit=unit),
                "auprc": percentile_ci(values["auprc"], unit=unit),
                "auroc_by_criterion": cis(values["auroc_by_group"]),
                "roc": band(values["roc"]), "pr": band(values["pr"]),
                "net_benefit": band(values["net_benefit"])}

    return ev.cached(("curve_intervals", cfg.bootstrap_config), compute)


class _SharedPass:
    """The batches of one pass over a kept count matrix, each taken by the next thread that
    asks (:meth:`work`): the thread that started the pass and any that would otherwise wait
    for it (:func:`help_curve_pass`). Each batch's values depend on its rows only, so the
    result (:meth:`parts`, in batch order) is the one thread's."""

    def __init__(self, counts: DrawnCounts, step: int, compute: Callable):
        self.counts, self.step, self.compute = counts, step, compute
        self.n_batches = -(-counts.shape[0] // step)
        self._parts: list = [None] * self.n_batches
        self._next = self._finished = 0
        self._error: BaseException | None = None
        self._ready = threading.Condition()

    def work(self, progress: Callable | None = None) -> None:
        """Compute batches until none is left to take; ``progress(done, total)`` after each
        (the rows of the batches finished, by every thread)."""
        total = self.counts.shape[0]
        while True:
            with self._ready:
                if self._next >= self.n_batches or self._error is not None:
                    return
                i = self._next
                self._next += 1
            try:
                part = self.compute(self.counts.rows(i * self.step, (i + 1) * self.step))
            except BaseException as err:
                with self._ready:
                    self._error = err
                    self._ready.notify_all()
                raise
            with self._ready:
                self._parts[i] = part
                self._finished += 1
                done = min(total, self._finished * self.step)
                self._ready.notify_all()
            if progress is not None:
                progress(done, total)

    def parts(self) -> list:
        """Every batch's values in order, once every batch is done (a thread's failure on
        one of them raised here)."""
        with self._ready:
            while self._finished < self.n_batches and self._error is None:
                self._ready.wait()
            if self._error is not None:
                raise RuntimeError("a batch of the pass failed") from self._error
            return list(self._parts)




def help_curve_pass(ev, cfg, progress: Callable | None = None) -> None:
    """Take batches of the score-ordered pass of :func:`curve_intervals` that is in progress
    on another thread (started by :func:`start_drawing`), until none is left: a caller about
    to wait for its result computes part of it instead (a no-op when no pass is running)."""
    with ev.passes_lock:
        shared = ev.passes.get(cfg.bootstrap_config)
    if shared is not None:
        shared.work(progress)


#: The reliability bins' metrics with a bootstrap interval (the registry's ``reliability``
#: kernels: ECE, MCE) and how each resample's value comes from its weighted bin sums (``count``
#: and ``residual`` per bin, the total weight).
RELIABILITY_FROM_SUMS = MappingProxyType({
    "ece": lambda count, residual, total: calibration.ece_from_sums(residual, total),
    "mce": lambda count, residual, total: calibration.mce_from_sums(count, residual),
})
BOOTSTRAP_RELIABILITY = tuple(s.name for s in registry.kernels(source="reliability")
                              if s.interval == "bootstrap")
for _name in BOOTSTRAP_RELIABILITY:
    if (registry.spec(_name).kernel.field or _name) not in RELIABILITY_FROM_SUMS:
        raise ValueError(f"{_name}: no bootstrap of the reliability field from the bin sums")


def _linear_statistic(columns: dict, bins: np.ndarray):
    """Statistic of the weighted means of ``columns`` (name -> ``(values, mask)``, as
    :func:`~metrics_core.metrics.uncertainty.weighted_means`) and of the reliability metrics
    (:data:`BOOTSTRAP_RELIABILITY`) on the bin matrix ``bins``
    (:func:`~metrics_core.metrics.calibration.bin_matrix`), on one batch of weights: one
    product of the weights with the columns, the bin matrix (ECE and MCE share it) and each
    distinct mask (its weighted count: whole numbers, exact in any order)."""
    names = tuple(columns)
    n = bins.shape[0]
    num = np.zeros((n, len(names)))
    distinct: dict[bytes, int] = {}  # each distinct mask (by its packed bits) -> its column
    mask_columns: list[np.ndarray] = [np.ones(n)]  # column 0: every row (the total weight)
    which = np.empty(len(names), dtype=np.int64)
    for j, name in enumerate(names):
        values, mask = columns[name]
        mask = np.ones(n, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
        key = np.packbits(mask).tobytes() if not mask.all() else b""
        if key not in distinct:
            distinct[key] = len(mask_columns) if key else 0
            if key:
                mask_columns.append(mask.astype(np.float64))
        which[j] = distinct[key]
        num[:, j] = np.where(mask, np.nan_to_num(np.asarray(values, np.float64)), 0.0)
    # One product per batch: the weights (the batch's largest array) are read once.
    k = bins.shape[1] // 2
    m = len(mask_columns)
    right = np.concatenate([np.stack(mask_columns, axis=1), num, bins], axis=1)

    def statistic(weights: np.ndarray) -> np.ndarray:
        sums = weights @ right
        counted, total = sums[:, :m], sums[:, 0]
        means = _ratio(sums[:, m:m + len(names)], counted[:, which])
        count, residual = sums[:, m + len(names):m + len(names) + k], sums[:, m + len(names) + k:]
        return np.column_stack([means, *(
            RELIABILITY_FROM_SUMS[registry.spec(name).kernel.field or name](count, residual,
                                                                           total)
            for name in BOOTSTRAP_RELIABILITY)])

    statistic.names = (*names, *BOOTSTRAP_RELIABILITY)
    return statistic


#: The discrimination metrics with a bootstrap interval (the registry's ``discrimination``
#: kernels that are no family: AUROC, AUPRC), from the score-ordered pass of
#: :func:`curve_intervals`.
BOOTSTRAP_SCORED = tuple(s.name for s in registry.kernels(source="discrimination")
                         if s.interval == "bootstrap")
for _name in BOOTSTRAP_SCORED:
    if _name not in ("auroc", "auprc"):
        raise ValueError(f"{_name}: no bootstrap of it in the score-ordered pass")


def data_intervals(ev, cfg, progress: Callable | None = None) -> Intervals:
    """Percentile CIs of the data-only metrics (cached per bootstrap settings and variants):
    the registry's data-only means with a bootstrap interval (the ranking means and Brier:
    :func:`~metrics_core.evaluation.kernels.bootstrap_columns`, weighted means), ECE and MCE
    (weighted bin sums), and the score-ordered ones of :func:`curve_intervals`."""
    if cfg.bootstrap == 0 or ev.ds.n_queries == 0:
        return Intervals(None)

    def compute():
        columns = bootstrap_columns(ev, cfg)
        conf, outcome = ev.calibration_inputs(cfg)
        bins = calibration.bin_matrix(outcome, conf, n_bins=cfg.n_bins, strategy=cfg.binning)
        out = Intervals(_method(cfg))
        out.update(_run(ev, cfg, {"linear": _linear_statistic(columns, bins)},
                        stage(progress, "bootstrap (ranking means, Brier, ECE, MCE)")))
        # (computed, or being computed, on the helper thread of start_drawing: the batches
        # it has not taken yet computed here meanwhile)
        curve_progress = stage(progress, "bootstrap (AUROC, AP, ROC / PR / net-benefit bands)")
        help_curve_pass(ev, cfg, curve_progress)
        curves = curve_intervals(ev, cfg, curve_progress)
        # (the registry's discrimination metrics with a bootstrap interval, and AUROC's per
        # criterion for the per-criterion table's interval columns)
        out.update({name: curves[name] for name in (*BOOTSTRAP_SCORED, "auroc_by_criterion")})
        return out

    return ev.cached(data_intervals_key(cfg), compute)


def only_the_setting_left(ev, cfg) -> bool:
    """Whether :meth:`Evaluator.evaluate` of ``cfg`` has only the setting's own intervals left
    to compute (the operating and multi-label ones, over kept count matrices): the data's
    intervals are made and the resamples of the run's unit and of the posts are kept. So after
    a threshold move: tens of milliseconds, where the data's intervals take seconds."""
    if not cfg.bootstrap or ev.ds.n_queries == 0:
        return True
    if not ev.computed(data_intervals_key(cfg)):
        return False
    for n_units in {_units(ev, cfg)[0], int(ev.ds.posts.size)}:
        if n_units * cfg.bootstrap > KEEP_COUNTS_CELLS or not ev.computed(
                ("bootstrap_counts", n_units, cfg.bootstrap, cfg.seed)):
            return False
    return True


def data_intervals_key(cfg) -> tuple:
    """The evaluator's cache key of :func:`data_intervals` (what they depend on)."""
    return ("bootstrap", cfg.bootstrap_config, cfg.ranking, cfg.calibration)


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


def _category_sums(batches, codes: np.ndarray, n_codes: int, n_resamples: int,
                   progress=None) -> np.ndarray:
    """Every resample's weight per category, ``(n_resamples, n_codes)``: per batch of weights
    (columns: the rows ``codes`` describes), the columns gathered category by category and
    summed per run (whole numbers)."""
    out = np.zeros((n_resamples, n_codes))
    if not codes.size:
        return out
    order = np.argsort(codes, kind="stable")
    ordered = codes[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    present = ordered[starts]
    start = 0
    for batch in batches:
        stop = start + batch.shape[0]
        out[start:stop, present] = np.add.reduceat(np.take(batch, order, axis=1), starts,
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


def _weights_f(by_unit: np.ndarray, units: np.ndarray) -> np.ndarray:
    """The counts of ``units`` (rows of :meth:`DrawnCounts.by_unit`) as float64 weights
    ``(n_resamples, len(units))`` in column-major order: the layout of ``counts[:, units]``
    (numpy's indexing puts the indexed axis first in memory), which the block products have
    always been made with (BLAS's sums depend on the layout)."""
    return np.take(by_unit, units, axis=0).astype(np.float64).T


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
                step = _batch_rows(floats.shape[0])
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
                self.pair_sums += _weights_f(counts.by_unit(), units) @ delta  # whole numbers
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
        by_unit = counts.by_unit()
        for b in stale:
            rows = self.blocks[b]
            units = rows if unit_of_row is None else unit_of_row[rows]
            self.block_sums[b] = _weights_f(by_unit, units) @ floats[rows]
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
        step = _batch_rows(y.size)
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
            delta = (_integer_columns(y[rows], *(s[rows] for s in sources), width)
                     - _integer_columns(y[rows], *(s[rows] for s in self.sources), width))
            units = rows if unit_of_row is None else unit_of_row[rows]
            sums += np.take(counts.by_unit(), units, axis=0).T.astype(np.float64) @ delta
        return sums[:, :_N_FIXED + n_k]  # the columns cut off are all zero


def operating_intervals(ev, cfg, inter, progress: Callable | None = None) -> Intervals:
    """Percentile CIs of the setting-dependent metrics (:data:`OPERATING_NAMES`), from the
    resamples' weighted column sums.

    The count matrix is the data set's (drawn once per seed); a setting change re-weights, and
    with the count matrix kept (:func:`_kept_counts`), updates the previous setting's sums by
    what changed (:class:`_KeptSums`): the same intervals as a fresh evaluator's."""
    if cfg.bootstrap == 0 or ev.ds.n_queries == 0:
        return Intervals(None)
    progress = stage(progress, "bootstrap (operating metrics)")
    ds = ev.ds
    y = np.asarray(ds.y, dtype=np.int64)
    n_units, unit_of_row = _units(ev, cfg)
    kept_counts = _kept_counts(ev, cfg)
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
                step = _batch_rows(ds.n_queries)
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
    out = Intervals(_method(cfg))
    out.update(zip(OPERATING_NAMES, percentile_cis(values, unit=cfg.bootstrap_unit),
                   strict=True))
    return out


def multilabel_intervals(ev, cfg, matrix, predicted, mask,
                         progress: Callable | None = None) -> Intervals:
    """Percentile CIs of the multi-label metrics (§8), resampling posts whatever the
    bootstrap unit: the metrics are per post."""
    n_posts = int(matrix.shape[0])
    if cfg.bootstrap == 0 or n_posts == 0:
        return Intervals(None)

    def compute():
        out = Intervals(f"bootstrap (post, {cfg.bootstrap} resamples, seed {cfg.seed})")
        out.update(bootstrap_cis(
            {"multilabel": multilabel.multilabel_weighted(matrix, predicted, mask)}, n_posts,
            n_resamples=cfg.bootstrap, seed=cfg.seed, unit="post",
            progress=stage(progress, "bootstrap (multi-label metrics)"),
            counts=_kept_counts(ev, cfg, n_posts)))
        return out

    # Gold labels and present cells come from the evaluator's data set: keyed by the posts'
    # decisions, a setting change that leaves them as they were (a gate move under the
    # fixed-threshold rule) re-uses the intervals.
    decided = hashlib.sha256(np.ascontiguousarray(predicted.data)).hexdigest()
    return ev.cached(("multilabel_intervals", cfg.bootstrap_config, decided), compute)
