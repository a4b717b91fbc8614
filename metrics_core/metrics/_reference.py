"""Reference loops: the metric definitions computed literally, one query at a time.

Private: these are the slow, obviously-correct baselines that the vectorised kernels of
:mod:`metrics_core.metrics.ranking` and :mod:`metrics_core.metrics.dynamic_k` are checked against
(``tests/test_ranking.py``, ``tests/test_dynamic_k.py``, ``tests/test_report.py``) and timed
against (``benchmarks/bench_metrics.py``). They are not part of the public API and are kept
literal on purpose: a Python loop over queries, following the text of the source specifications
(``docs/seeds/``; "seed 000" is ``docs/seeds/000-metric-specification.txt``, "seed 002"
``docs/seeds/002-rag-evaluation-spec.txt``, "seed 003"
``docs/seeds/003-evidence-pipeline-contract.txt``) and of the contract (``docs/CONTRACT.md``
§3 and §7). Do not vectorise them.

- :func:`naive_ranking_per_query`: reference for
  :func:`metrics_core.metrics.ranking.ranking_per_query`.
- :func:`naive_select_k`: reference for :func:`metrics_core.metrics.dynamic_k.select_k`.
- :func:`naive_evidence_per_query`: reference for
  :func:`metrics_core.metrics.dynamic_k.evidence_per_query`.
- :func:`naive_roc_band`, :func:`naive_pr_band`, :func:`naive_decision_curve_bands`: the
  bootstrap bands computed on every resample's weights in full (a cumulative sum of the
  weights sorted by score per resample): references for
  :func:`metrics_core.metrics.curve_replicates.curve_replicates` and the bands built on it.
"""

from __future__ import annotations

import math

import numpy as np

from metrics_core.data.dataset import Dataset
from metrics_core.metrics.dynamic_k import MASS_RULES, check_k_options
from metrics_core.metrics.gate import GateState
from metrics_core.metrics.ranking import (
    DEFAULT_KS,
    GAINS,
    MAP_DENOMINATORS,
    PRECISION_DENOMINATORS,
    check_ks,
    check_n_gold,
    check_option,
    check_relevance,
    metric_names,
)

__all__ = ["naive_decision_curve_bands", "naive_evidence_per_query", "naive_pr_band",
           "naive_ranking_per_query", "naive_roc_band", "naive_select_k"]


# ------------------------------------------------------------------------------ ranking
def naive_ranking_per_query(
    ds: Dataset,
    *,
    ks=DEFAULT_KS,
    precision_denominator: str = "k",
    map_denominator: str = "n_gold",
    gain: str = "binary",
) -> dict[str, np.ndarray]:
    """Reference loop: the seeds' per-query functions applied to every query, one at a time.

    Same signature, result and validation as
    :func:`~metrics_core.metrics.ranking.ranking_per_query`, computed with a plain Python loop that
    follows the seed code literally (seed 000 §1 ``recall_at_k``, ``mrr_at_k``, ``map_at_k``,
    ``ndcg_at_k``; seed 003 §3 ``precision_at_k``, ``mrr_single_query``, ``average_precision_at_k``
    and the graded ``ndcg_at_k``; seed 002 for the ``min_k_n`` and ``hits`` denominators). The gold
    set holds the gold candidates plus placeholders for the gold the list missed, so ``len(gold) ==
    n_gold``. Slow by design: used by the tests and as the benchmark baseline.
    """
    ks = check_ks(ks)
    check_option("precision_denominator", precision_denominator, PRECISION_DENOMINATORS)
    check_option("map_denominator", map_denominator, MAP_DENOMINATORS)
    check_option("gain", gain, GAINS)
    relevance = check_relevance(ds) if gain == "graded" else None
    n_gold_all = check_n_gold(np.asarray(ds.n_gold, dtype=np.int64), ds.n_gold_found)

    out = {name: np.zeros(ds.n_queries) for name in metric_names(ks)}
    for q in range(ds.n_queries):
        sl = ds.candidate_slice(q)
        ranked = list(ds.sent_uid[sl])
        gold = {uid for uid, g in zip(ranked, ds.is_gold[sl], strict=True) if g}
        gold |= {("missed", i) for i in range(int(n_gold_all[q]) - len(gold))}
        rel = None if relevance is None else [int(r) for r in relevance[sl]]
        for k in ks:
            out[f"recall@{k}"][q] = _seed_recall_at_k(gold, ranked, k)
            out[f"precision@{k}"][q] = _seed_precision_at_k(gold, ranked, k,
                                                            precision_denominator)
            out[f"hit@{k}"][q] = _seed_hit_at_k(gold, ranked, k)
            out[f"map@{k}"][q] = _seed_map_at_k(gold, ranked, k, map_denominator)
            out[f"ndcg@{k}"][q] = (_seed_ndcg_at_k(gold, ranked, k) if rel is None
                                   else _seed_graded_ndcg_at_k(gold, rel, k))
            out[f"mrr@{k}"][q] = _seed_mrr_at_k(gold, ranked, k)
        out["mrr"][q] = _seed_mrr(gold, ranked)
    return out


# ----------------------------------------------------------------- seed functions (reference)
def _seed_recall_at_k(gold, ranked, k):
    # seed 000 §1.1
    if not gold:
        return 0.0
    hits = set(ranked[:k]) & gold
    return len(hits) / len(gold)


def _seed_precision_at_k(gold, ranked, k, denominator):
    # seed 003 §3.2 (/ k); seed 002 §3.1.2 (/ min(k, |R|)), 0.0 for an empty list
    retrieved_gold = gold & set(ranked[:k])
    if denominator == "k":
        return len(retrieved_gold) / k
    n = min(k, len(ranked))
    return len(retrieved_gold) / n if n else 0.0


def _seed_hit_at_k(gold, ranked, k):
    # seed 002 §3.1.3
    return 1.0 if gold & set(ranked[:k]) else 0.0


def _seed_mrr_at_k(gold, ranked, k):
    # seed 000 §1.2
    if not gold:
        return 0.0
    for idx, sent_id in enumerate(ranked[:k], start=1):
        if sent_id in gold:
            return 1.0 / idx
    return 0.0


def _seed_mrr(gold, ranked):
    # seed 003 §3.4 mrr_single_query
    for rank, sent_uid in enumerate(ranked, start=1):
        if sent_uid in gold:
            return 1.0 / rank
    return 0.0


def _seed_map_at_k(gold, ranked, k, denominator):
    # seed 000 §1.3 / seed 003 §3.5, with the denominator of the chosen variant
    if not gold:
        return 0.0
    hits = 0
    precision_sum = 0.0
    for idx, sent_id in enumerate(ranked[:k], start=1):
        if sent_id in gold:
            hits += 1
            precision_sum += hits / idx
    if denominator == "n_gold":
        return precision_sum / len(gold)
    if denominator == "min_gold_k":
        return precision_sum / min(len(gold), k)
    return precision_sum / hits if hits else 0.0


def _seed_ndcg_at_k(gold, ranked, k):
    # seed 000 §1.4
    if not gold:
        return 0.0
    dcg = 0.0
    for idx, sent_id in enumerate(ranked[:k], start=1):
        rel = 1.0 if sent_id in gold else 0.0
        dcg += rel / math.log2(idx + 1)
    ideal_hits = min(len(gold), k)
    idcg = sum(1.0 / math.log2(idx + 1) for idx in range(1, ideal_hits + 1))
    return dcg / idcg if idcg > 0 else 0.0


def _seed_graded_ndcg_at_k(gold, relevance, k):
    # seed 003 §3.6 with graded labels: gain 2^rel - 1, ideal = labels sorted descending
    if not gold:
        return 0.0
    dcg = sum((2**rel - 1) / math.log2(i + 2) for i, rel in enumerate(relevance[:k]))
    ideal_relevance = sorted(relevance, reverse=True)[:k]
    idcg = sum((2**rel - 1) / math.log2(i + 2) for i, rel in enumerate(ideal_relevance))
    if idcg == 0:
        return 0.0
    return dcg / idcg


# --------------------------------------------------------------------------- dynamic-K
def naive_select_k(ds: Dataset, states=None, *, mass: str = "softmax", temperature: float = 1.0,
                   gamma: float = 0.9, gamma_uncertain: float = 0.95, k_min: int = 2,
                   hard_cap: int = 10, k_max_ratio: float = 0.5,
                   gate_aware: bool = True) -> np.ndarray:
    """Reference per-query loop for :func:`~metrics_core.metrics.dynamic_k.select_k` (contract §7
    text).

    For each query: masses in rank order (softmax of ``score / T`` after subtracting the
    largest, or ``score``), their running sum normalised by the query's own total (the last
    running sum), ``K_γ`` = first position whose cumulative mass is ``≥ γ``, then the caps and
    the gate-aware policy. Slow by design; used by the tests and the benchmark.
    """
    if mass not in MASS_RULES:
        raise ValueError(f"mass must be one of {MASS_RULES}, got {mass!r}")
    check_k_options(gamma, gamma_uncertain, k_min, hard_cap, k_max_ratio)
    out = np.zeros(ds.n_queries, dtype=np.int64)
    for q in range(ds.n_queries):
        n = int(ds.offsets[q + 1] - ds.offsets[q])
        state = None if states is None else int(states[q])
        if n == 0 or (gate_aware and state == GateState.NEG):
            out[q] = 0
            continue
        target = gamma_uncertain if (gate_aware and state == GateState.UNCERTAIN) else gamma
        s = np.asarray(ds.score[ds.offsets[q]:ds.offsets[q + 1]], dtype=np.float64)
        if mass == "softmax":
            s = s / temperature
            s = np.exp(s - s.max())
        running = np.cumsum(s)
        cum = running / running[-1]
        k_gamma = n
        for i in range(n):
            if cum[i] >= target:
                k_gamma = i + 1
                break
        k_max = min(hard_cap, math.floor(n * k_max_ratio))
        out[q] = min(n, max(k_min, min(k_gamma, k_max)))
    return out


def naive_evidence_per_query(ds: Dataset, k, *,
                             protocol: str = "positives_only") -> tuple[np.ndarray, np.ndarray]:
    """Reference per-query loop for :func:`~metrics_core.metrics.dynamic_k.evidence_per_query` (§7).

    Works on Python sets of sentence ids, one query at a time.
    """
    recall = np.full(ds.n_queries, np.nan)
    precision = np.full(ds.n_queries, np.nan)
    for q in range(ds.n_queries):
        if protocol == "positives_only" and ds.y[q] != 1:
            continue
        sl = ds.candidate_slice(q)
        uids = list(ds.sent_uid[sl])
        gold_found = {u for u, g in zip(uids, ds.is_gold[sl], strict=True) if g}
        n_gold = int(ds.n_gold[q])
        selected = set(uids[: int(k[q])])
        hits = len(gold_found & selected)
        if n_gold > 0:
            recall[q] = hits / n_gold
        elif protocol == "all_queries":
            recall[q] = 1.0 if not selected else 0.0
        if selected:
            precision[q] = hits / len(selected)
        elif protocol == "all_queries":
            precision[q] = 1.0 if n_gold == 0 else 0.0
        else:
            precision[q] = 0.0
    return recall, precision


# ------------------------------------------------------------------- bootstrap curve bands
def _naive_curve_band(y, p, curve, *, n_resamples: int, seed: int, unit_of_row, n_units, grid):
    """Pointwise percentile band of a curve over ``grid``: ``curve(ws, ys, last)`` gets the
    resample weights and labels in descending score order and the mask of the last row of each
    distinct score, and returns ``(b, grid.size)`` values (NaN where undefined)."""
    from metrics_core.metrics.uncertainty import bootstrap_cis

    y = np.asarray(y, dtype=np.float64)
    p = np.asarray(p, dtype=np.float64)
    order = np.argsort(-p, kind="stable")
    ps, ys = p[order], y[order]
    last = np.r_[ps[1:] != ps[:-1], True]  # the last row of each distinct score
    cis = bootstrap_cis({"curve": lambda w: curve(w[:, order], ys, last)}, n_units or y.size,
                        unit_of_row=unit_of_row, n_resamples=n_resamples, seed=seed)["curve"]
    return grid, np.array([c.lo for c in cis]), np.array([c.hi for c in cis])


def naive_roc_band(y, p, *, n_resamples: int, seed: int = 0, unit_of_row=None,
                   n_units: int | None = None, grid=None):
    """Reference for :func:`metrics_core.metrics.bands.roc_band`: per resample, the
    weighted ROC curve from cumulative sums of its weights sorted by score, read at each grid FPR
    (the TPR of the largest point with ``FPR <= grid``), one resample at a time."""
    grid = np.linspace(0.0, 1.0, 101) if grid is None else np.asarray(grid, dtype=np.float64)

    def curve(ws, ys, last):
        tp = np.cumsum(ws * ys, axis=1)[:, last]
        fp = np.cumsum(ws * (1.0 - ys), axis=1)[:, last]
        with np.errstate(invalid="ignore", divide="ignore"):
            tpr = tp / tp[:, -1:]
            fpr = fp / fp[:, -1:]
        out = np.empty((ws.shape[0], grid.size))
        for r in range(ws.shape[0]):
            idx = np.searchsorted(fpr[r], grid, side="right") - 1
            out[r] = np.where(idx >= 0, tpr[r, np.maximum(idx, 0)], 0.0)
            if not np.isfinite(fpr[r, -1]) or not np.isfinite(tpr[r, -1]):
                out[r] = np.nan
        return out

    return _naive_curve_band(y, p, curve, n_resamples=n_resamples, seed=seed,
                             unit_of_row=unit_of_row, n_units=n_units, grid=grid)


def naive_pr_band(y, p, *, n_resamples: int, seed: int = 0, unit_of_row=None,
                  n_units: int | None = None, grid=None):
    """Reference for :func:`metrics_core.metrics.bands.pr_band`: per resample, the
    precision of the first operating point (highest threshold) with recall ``>=`` each grid
    recall."""
    grid = np.linspace(0.0, 1.0, 101) if grid is None else np.asarray(grid, dtype=np.float64)

    def curve(ws, ys, last):
        tp = np.cumsum(ws * ys, axis=1)[:, last]
        predicted = np.cumsum(ws, axis=1)[:, last]
        out = np.full((ws.shape[0], grid.size), np.nan)
        for r in range(ws.shape[0]):
            if tp[r, -1] <= 0:
                continue
            recall = tp[r] / tp[r, -1]
            idx = np.minimum(np.searchsorted(recall, grid, side="left"), recall.size - 1)
            # Points before the first drawn row have no precision: start at the first drawn.
            idx = np.maximum(idx, int(np.argmax(predicted[r] > 0)))
            out[r] = tp[r, idx] / predicted[r, idx]
        return out

    return _naive_curve_band(y, p, curve, n_resamples=n_resamples, seed=seed,
                             unit_of_row=unit_of_row, n_units=n_units, grid=grid)


def naive_decision_curve_bands(y, p, *, n_resamples: int, seed: int, unit_of_row=None,
                               n_units: int | None = None, thresholds=None):
    """Reference for :func:`metrics_core.metrics.decision.decision_curve_bands`: per resample, the
    net benefit at each threshold from suffix sums of its weights sorted by p."""
    from metrics_core.metrics.decision import DECISION_THRESHOLDS, net_benefit
    from metrics_core.metrics.uncertainty import bootstrap_cis

    y = np.asarray(y, dtype=np.float64)
    p = np.asarray(p, dtype=np.float64)
    t = np.asarray(DECISION_THRESHOLDS if thresholds is None else thresholds, dtype=np.float64)
    order = np.argsort(p, kind="stable")
    cis = bootstrap_cis({"nb": lambda w: net_benefit(y, p, t, w, order)[0]},
                        n_units or y.size, unit_of_row=unit_of_row, n_resamples=n_resamples,
                        seed=seed)["nb"]
    return np.array([c.lo for c in cis]), np.array([c.hi for c in cis])
