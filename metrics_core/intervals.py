"""Bootstrap intervals of a run's records, through the one bootstrap of :mod:`uncertainty` (§9).

Two sets of statistics share the seeded resamples: the data-only ones (AUROC, AUPRC, ECE,
Brier, the ranking means, AUROC per criterion), cached per bootstrap / ranking / calibration
settings, and the setting-dependent means (evidence recall / precision, mean K). Every interval
keeps the number of resamples on which its statistic was defined.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import numpy as np

from metrics_core import calibration, classification, gate, multilabel, outcomes
from metrics_core.classification import confusion_rates
from metrics_core.uncertainty import (
    CI,
    Bootstrap,
    _ratio,
    bootstrap_cis,
    indicator_matrix,
    weighted_int_quantiles,
    weighted_means,
)

__all__ = ["Intervals", "data_intervals", "multilabel_intervals", "operating_intervals"]


class Intervals(dict):
    """Metric name -> :class:`~metrics_core.uncertainty.CI`, plus the method that made them."""

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


def _kept_counts(ev, cfg, n_units: int):
    """The count matrix of ``n_units`` units for the run's resamples and seed, drawn once per
    evaluator and kept when small enough (else None: drawn batch by batch)."""
    if n_units * cfg.bootstrap > KEEP_COUNTS_CELLS:
        return None
    return ev._memo(("bootstrap_counts", n_units, cfg.bootstrap, cfg.seed),
                    lambda: Bootstrap(n_units, n_resamples=cfg.bootstrap,
                                      seed=cfg.seed).compact_counts())


def _run(ev, cfg, statistics: dict, progress) -> dict:
    ds = ev.ds
    unit_of_row = ds.post_code if cfg.bootstrap_unit == "post" else None
    n_units = int(ds.posts.size) if unit_of_row is not None else ds.n_queries
    return bootstrap_cis(statistics, n_units, unit_of_row=unit_of_row,
                         n_resamples=cfg.bootstrap, seed=cfg.seed, unit=cfg.bootstrap_unit,
                         progress=progress, counts=_kept_counts(ev, cfg, n_units))


def _method(cfg) -> str:
    return f"bootstrap ({cfg.bootstrap_unit}, {cfg.bootstrap} resamples, seed {cfg.seed})"


def data_intervals(ev, cfg, progress: Callable | None = None) -> Intervals:
    """Percentile CIs of the data-only metrics (cached per bootstrap settings and variants)."""
    if cfg.bootstrap == 0 or ev.ds.n_queries == 0:
        return Intervals(None)

    def compute():
        ds = ev.ds
        y, p = ds.y, ds.p
        rk, rmask = ev.ranking(cfg), ev.ranking_mask(cfg)
        columns = {name: (values, rmask) for name, values in rk.items()
                   if not name.startswith("hit@")}
        columns["brier"] = ((p - y) ** 2, None)
        conf, outcome = ev.calibration_inputs(cfg)
        crit = ds.criterion_code
        members = [crit == c for c in range(len(ds.criteria))]
        prepared = ev.prepared()
        by_criterion = [classification.prepare(y[m], p[m]) for m in members]

        def discrimination(w):
            return np.stack(classification.auroc_auprc_weighted(prepared, weights=w), axis=1)

        discrimination.names = ("auroc", "auprc")
        statistics = {
            "means": weighted_means(columns),
            "discrimination": discrimination,
            "ece": lambda w: calibration.ece_weighted(outcome, conf, w, n_bins=cfg.n_bins,
                                                      strategy=cfg.binning),
            "mce": lambda w: calibration.mce_weighted(outcome, conf, w, n_bins=cfg.n_bins,
                                                      strategy=cfg.binning),
            "auroc_by_criterion": lambda w: np.stack(
                [classification.roc_auc_weighted(s, weights=w[:, m])
                 for s, m in zip(by_criterion, members, strict=True)],
                axis=1),
        }
        out = Intervals(_method(cfg))
        out.update(_run(ev, cfg, statistics, progress))
        return out

    key = ("bootstrap", cfg.bootstrap_config, cfg.ranking, cfg.calibration)
    return ev._memo(key, compute)


def operating_statistic(y, inter) -> Callable:
    """One statistic for every setting-dependent metric, from one matrix product per batch.

    Its columns (``names``): the means of §7 (evidence recall / precision over the evidence
    mask, mean K, workload per 1,000), K's median and P90 (numpy's linear quantiles of the
    resample, from its weighted K histogram), F1 / MCC / balanced accuracy at τ (§4) and the
    F1 / MCC / balanced accuracy of the gate's abstention view (§6), each a ratio of the
    resample's weighted outcome table. Equal to computing each on the repeated rows.
    """
    y = np.asarray(y, dtype=np.int64)
    k = np.asarray(inter.k, dtype=np.int64)
    emask = np.asarray(inter.emask, dtype=bool)
    means = np.stack([np.where(emask, np.nan_to_num(inter.rec), 0.0),
                      np.where(emask, np.nan_to_num(inter.prec), 0.0), emask.astype(float),
                      k.astype(np.float64), 1000.0 * k, np.ones(k.size)], axis=1)
    three_way = gate.states_to_prediction(inter.states).astype(np.int64)
    conf = indicator_matrix((np.asarray(inter.pred, dtype=np.int64) + 1) * 2 + y, 6)
    abst = indicator_matrix((three_way + 1) * 2 + y, 6)
    n_k = int(k.max()) + 1 if k.size else 1
    columns = np.concatenate([means, conf, abst, indicator_matrix(k, n_k)], axis=1)
    quantiles = weighted_int_quantiles(k, (0.5, 0.9))

    def statistic(w: np.ndarray) -> np.ndarray:
        sums = w @ columns
        recall_num, precision_num, e_den, k_sum, work_sum, n = sums[:, :6].T
        confusion = confusion_rates(*outcomes.confusion_cells(sums[:, 6:12].reshape(-1, 3, 2)))
        abstention = outcomes.abstention_ratios(sums[:, 12:18].reshape(-1, 3, 2))
        median_p90 = quantiles.from_histogram(sums[:, 18:])
        return np.column_stack([
            _ratio(recall_num, e_den), _ratio(precision_num, e_den), _ratio(k_sum, n),
            _ratio(work_sum, n), median_p90[:, 0], median_p90[:, 1],
            confusion["f1"], confusion["mcc"], confusion["balanced_accuracy"],
            abstention["f1_pos"], abstention["f1_neg"], abstention["balanced_accuracy"],
            abstention["mcc"]])

    statistic.names = ("evidence_recall", "evidence_precision", "mean_k", "workload_per_1000",
                       "median_k", "p90_k", "f1", "mcc", "balanced_accuracy", "f1_pos",
                       "f1_neg", "balanced_accuracy_answered", "mcc_answered")
    return statistic


def operating_intervals(ev, cfg, inter, progress: Callable | None = None) -> Intervals:
    """Percentile CIs of the setting-dependent metrics (:func:`operating_statistic`).

    The count matrix is the data set's (drawn once per seed); a setting change re-weights."""
    if cfg.bootstrap == 0 or ev.ds.n_queries == 0:
        return Intervals(None)
    out = Intervals(_method(cfg))
    out.update(_run(ev, cfg, {"operating": operating_statistic(ev.ds.y, inter)}, progress))
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
            n_resamples=cfg.bootstrap, seed=cfg.seed, unit="post", progress=progress,
            counts=_kept_counts(ev, cfg, n_posts)))
        return out

    # Gold labels and present cells come from the evaluator's data set: keyed by the posts'
    # decisions, a setting change that leaves them as they were (a gate move under the
    # fixed-threshold rule) re-uses the intervals.
    decided = hashlib.sha256(np.ascontiguousarray(predicted.data)).hexdigest()
    return ev._memo(("multilabel_intervals", cfg.bootstrap_config, decided), compute)
