"""Bootstrap intervals of a run's records, through the one bootstrap of :mod:`uncertainty` (§9).

Two sets of statistics share the seeded resamples: the data-only ones here (AUROC, AUPRC,
ECE, Brier, the ranking means, AUROC per criterion), cached per bootstrap / ranking /
calibration settings, and the setting-dependent ones in :mod:`operating_intervals` (evidence
recall / precision, K's statistics, the counting metrics with a bootstrap interval), which
share this module's resample plumbing. Which metrics each set holds comes from the registry
(their interval kind and kernel); the per-post multi-label metrics have their own. Every
interval keeps the number of resamples on which its statistic was defined.
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
from metrics_core.metrics import calibration, multilabel
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
    percentile_ci,
    percentile_cis,
)
from metrics_core.metrics.uncertainty import divide as _ratio
from metrics_core.progress import stage

__all__ = ["Intervals", "batch_rows", "curve_intervals", "data_intervals", "data_intervals_key",
           "discrimination_intervals", "interval_method", "kept_count_matrix",
           "multilabel_intervals", "only_the_setting_left", "post_counts", "query_counts",
           "resampled_units", "start_drawing"]


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


def resampled_units(ev, cfg) -> tuple[int, np.ndarray | None]:
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


def kept_count_matrix(ev, cfg, n_units: int | None = None) -> DrawnCounts | None:
    """The count matrix of ``n_units`` units (default: the run's unit, queries or posts) for
    the run's resamples and seed (:class:`~metrics_core.metrics.uncertainty.DrawnCounts`): drawn
    once on a helper thread and kept (for the process: :class:`_SharedCounts`) when small
    enough (else None: drawn batch by batch where needed)."""
    if n_units is None:
        n_units = resampled_units(ev, cfg)[0]
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
    return kept_count_matrix(ev, cfg)


def post_counts(ev, cfg):
    """The run's post count matrix (the multi-label metrics' and the cohorts' resamples): the
    kept :class:`~metrics_core.metrics.uncertainty.DrawnCounts`, or a :class:`Bootstrap` of
    the posts to draw batch by batch when too large to keep."""
    n_posts = int(ev.ds.posts.size)
    kept = kept_count_matrix(ev, cfg, n_posts)
    return kept if kept is not None else Bootstrap(n_posts, n_resamples=cfg.bootstrap,
                                                    seed=cfg.seed)


def start_drawing(ev, cfg, *, bands: bool = True) -> None:
    """Start drawing the run's resamples (and the multi-label metrics' posts) on helper
    threads, when they are kept, and the score-ordered pass over them
    (:func:`curve_intervals`, data-only) on another as they come: the caller computes the
    point estimates and the other intervals meanwhile (numpy releases the interpreter in the
    pass's gathers and cumulative sums). ``bands`` false: no pass started (the run's records
    read :func:`discrimination_intervals`, without the curves' bands)."""
    if cfg.bootstrap and ev.ds.n_queries and kept_count_matrix(ev, cfg) is not None:
        kept_count_matrix(ev, cfg, int(ev.ds.posts.size))
        # Not again for a setting that leaves them as they are (a threshold move): a thread
        # started only to find the pass done costs the caller its start-up.
        if bands and not ev.computed(("curve_intervals", cfg.bootstrap_config)):
            in_background([lambda: curve_intervals(ev, cfg)], "metrics_core-curves")


def batch_rows(n_columns: int) -> int:
    return max(1, _BATCH_CELLS // max(n_columns, 1))


def _count_batches(ev, cfg, progress) -> Iterator[np.ndarray]:
    """The run's count matrix (units: queries or posts), batch by batch: from the kept
    counts, or drawn here; ``progress(done, total)`` after each batch."""
    n_units, _ = resampled_units(ev, cfg)
    kept = kept_count_matrix(ev, cfg)
    step = batch_rows(ev.ds.n_queries)
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
    n_units, unit_of_row = resampled_units(ev, cfg)
    return bootstrap_cis(statistics, n_units, unit_of_row=unit_of_row,
                         n_resamples=cfg.bootstrap, seed=cfg.seed, unit=cfg.bootstrap_unit,
                         progress=progress, counts=kept_count_matrix(ev, cfg),
                         batch_size=max(1, _PRODUCT_BATCH_CELLS // max(ev.ds.n_queries, 1)))


def interval_method(cfg) -> str:
    return f"bootstrap ({cfg.bootstrap_unit}, {cfg.bootstrap} resamples, seed {cfg.seed})"


#: Grid of the ROC band (FPR) and of the PR band (recall).
BAND_GRID = tuple(np.linspace(0.0, 1.0, 101).tolist())


def _score_layout(ev, cfg) -> tuple[ScoreLayout, list[np.ndarray]]:
    """The queries in score order with their resampled units (:class:`ScoreLayout`), and each
    criterion's positions in that order: what a score-ordered pass over the resamples reads."""
    ds = ev.ds
    order = ev.p_order()
    unit_of_row = resampled_units(ev, cfg)[1]
    layout = ScoreLayout(ds.p.take(order), ds.y.take(order),
                         order if unit_of_row is None else unit_of_row[order])
    crit = ds.criterion_code.take(order)
    return layout, [np.flatnonzero(crit == c) for c in range(len(ds.criteria))]


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
        layout, groups = _score_layout(ev, cfg)
        grid = np.asarray(BAND_GRID)
        kept = kept_count_matrix(ev, cfg)
        if kept is None:
            values = curve_replicates(layout, _count_batches(ev, cfg, progress),
                                      groups=groups, roc_grid=grid, pr_grid=grid,
                                      thresholds=DECISION_THRESHOLDS)
        else:  # batch by batch, by this thread and any that helps (help_curve_pass)
            shared = _SharedPass(kept, batch_rows(ds.n_queries), batch_replicates(
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


def discrimination_intervals(ev, cfg, progress: Callable | None = None) -> dict:
    """``auroc``, ``auprc`` and ``auroc_by_criterion`` of :func:`curve_intervals`, the same
    values, without the curves' bands when those are not computed (nor in the making): the
    score-ordered pass then reads the cumulated weights at the runs of tied scores only (the
    bands' binary searches, one per resample and grid point, are most of the pass). Cached
    per bootstrap settings: the records of the per-group tables' runs, every criterion
    evaluated on its own queries, need no band."""
    key = ("curve_intervals", cfg.bootstrap_config)
    with ev.passes_lock:
        pass_running = cfg.bootstrap_config in ev.passes
    if pass_running or ev.computed(key) or ev.in_the_making(key) is not None:
        help_curve_pass(ev, cfg, progress)
        return curve_intervals(ev, cfg, progress)

    def compute():
        layout, groups = _score_layout(ev, cfg)
        values = curve_replicates(layout, _count_batches(ev, cfg, progress), groups=groups)
        unit = cfg.bootstrap_unit
        return {"auroc": percentile_ci(values["auroc"], unit=unit),
                "auprc": percentile_ci(values["auprc"], unit=unit),
                "auroc_by_criterion": percentile_cis(values["auroc_by_group"], unit=unit)}

    return ev.cached(("discrimination_intervals", cfg.bootstrap_config), compute)


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


def data_intervals(ev, cfg, progress: Callable | None = None, *,
                   bands: bool = True) -> Intervals:
    """Percentile CIs of the data-only metrics (cached per bootstrap settings and variants):
    the registry's data-only means with a bootstrap interval (the ranking means and Brier:
    :func:`~metrics_core.evaluation.kernels.bootstrap_columns`, weighted means), ECE and MCE
    (weighted bin sums), and the score-ordered ones of :func:`curve_intervals` (``bands``
    false: of :func:`discrimination_intervals`, the same values, without computing the
    curves' bands)."""
    if cfg.bootstrap == 0 or ev.ds.n_queries == 0:
        return Intervals(None)

    def compute():
        columns = bootstrap_columns(ev, cfg)
        conf, outcome = ev.calibration_inputs(cfg)
        bins = calibration.bin_matrix(outcome, conf, n_bins=cfg.n_bins, strategy=cfg.binning)
        out = Intervals(interval_method(cfg))
        out.update(_run(ev, cfg, {"linear": _linear_statistic(columns, bins)},
                        stage(progress, "bootstrap (ranking means, Brier, ECE, MCE)")))
        # (computed, or being computed, on the helper thread of start_drawing: the batches
        # it has not taken yet computed here meanwhile)
        if bands:
            curve_progress = stage(progress,
                                   "bootstrap (AUROC, AP, ROC / PR / net-benefit bands)")
            help_curve_pass(ev, cfg, curve_progress)
            curves = curve_intervals(ev, cfg, curve_progress)
        else:
            curves = discrimination_intervals(ev, cfg, stage(progress, "bootstrap (AUROC, AP)"))
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
    for n_units in {resampled_units(ev, cfg)[0], int(ev.ds.posts.size)}:
        if n_units * cfg.bootstrap > KEEP_COUNTS_CELLS or not ev.computed(
                ("bootstrap_counts", n_units, cfg.bootstrap, cfg.seed)):
            return False
    return True


def data_intervals_key(cfg) -> tuple:
    """The evaluator's cache key of :func:`data_intervals` (what they depend on)."""
    return ("bootstrap", cfg.bootstrap_config, cfg.ranking, cfg.calibration)


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
            counts=kept_count_matrix(ev, cfg, n_posts)))
        return out

    # Gold labels and present cells come from the evaluator's data set: keyed by the posts'
    # decisions, a setting change that leaves them as they were (a gate move under the
    # fixed-threshold rule) re-uses the intervals.
    decided = hashlib.sha256(np.ascontiguousarray(predicted.data)).hexdigest()
    return ev.cached(("multilabel_intervals", cfg.bootstrap_config, decided), compute)
