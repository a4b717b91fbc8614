"""Invariants over every record of the report (STYLE: one test over the registry of metrics).

- input row order and query order do not change any number (contract §3 tie rule makes the
  ranking order reproducible);
- every rate / probability is within [0, 1], counts add up (contract §10);
- a perfect ranking and perfect probabilities give the best value of every metric.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metrics_core import registry
from metrics_core.config import EvalConfig
from metrics_core.data.dataset import Dataset
from metrics_core.report import Evaluator
from tests.conftest import random_frames


def _values(ev):
    return {r.name: (r.value, r.defined, r.n) for r in ev.records}


def _same(a, b):
    assert a.keys() == b.keys()
    for name in a:
        (va, da, na), (vb, db, nb) = a[name], b[name]
        assert da == db and na == nb, name
        if va is None or vb is None:
            assert va is None and vb is None, name
        else:
            assert math.isclose(va, vb, rel_tol=1e-12, abs_tol=1e-12), (name, va, vb)


configs = st.builds(
    EvalConfig,
    tau_neg=st.sampled_from([0.0, 0.1, 0.3]),
    tau_pos=st.sampled_from([0.3, 0.6, 1.0]),
    threshold=st.sampled_from([0.0, 0.5, 1.0]),
    gamma=st.sampled_from([0.5, 0.9, 1.0]),
    k_min=st.integers(0, 3),
    hard_cap=st.integers(1, 6),
    map_denominator=st.sampled_from(["n_gold", "min_gold_k", "hits"]),
    precision_denominator=st.sampled_from(["k", "min_k_n"]),
    evidence_protocol=st.sampled_from(["positives_only", "all_queries"]),
    ranking_protocol=st.sampled_from(["positives_only", "all_queries"]),
    multilabel_rule=st.sampled_from(["threshold", "screen_in", "alert"]),
    binning=st.sampled_from(["uniform", "quantile"]),
    calibration_view=st.sampled_from(["positive", "top_label"]),
    bootstrap=st.just(0),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), cfg=configs)
def test_row_and_query_order_do_not_change_any_record(seed, cfg):
    if cfg.tau_neg > cfg.tau_pos:
        return
    q, c = random_frames(n_posts=12, seed=seed)
    rng = np.random.default_rng(seed)
    q2 = q.iloc[rng.permutation(len(q))].reset_index(drop=True)
    c2 = c.iloc[rng.permutation(len(c))].reset_index(drop=True)
    a = Evaluator(Dataset.from_frames(q, c)).evaluate(cfg)
    b = Evaluator(Dataset.from_frames(q2, c2)).evaluate(cfg)
    _same(_values(a), _values(b))
    pd.testing.assert_frame_equal(a.per_criterion, b.per_criterion)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), cfg=configs, rate=st.sampled_from([0.0, 0.05, 0.5, 1.0]))
def test_bounds_and_totals_hold_for_every_record(seed, cfg, rate):
    if cfg.tau_neg > cfg.tau_pos:
        return
    q, c = random_frames(n_posts=8, seed=seed, positive_rate=rate)
    ev = Evaluator(Dataset.from_frames(q, c)).evaluate(cfg)
    n = len(q)
    for r in ev.records:
        if r.value is None:
            assert not r.defined, r.name
            continue
        bounds = registry.spec(r.name).bounds
        if bounds is not None:
            assert bounds[0] <= r.value <= bounds[1], (r.name, r.value)
    v = {r.name: r.value for r in ev.records}
    assert v["tp"] + v["fp"] + v["tn"] + v["fn"] == n
    assert v["tp"] + v["fn"] == int(q["has_evidence"].sum())
    rates = v["neg_rate"] + v["uncertain_rate"] + v["pos_rate"]
    assert math.isclose(rates, 1.0, abs_tol=1e-12)
    assert not [ch for ch in ev.checks if ch.passed is False]


def test_perfect_predictions_score_best():
    q, c = random_frames(n_posts=30, seed=9, positive_rate=0.4)
    q["p_has_evidence"] = q["has_evidence"].astype(float)  # perfect, calibrated
    c["score"] = c["is_gold"] * 10.0 + np.arange(len(c)) * 1e-6  # all gold first
    # n_gold = gold found, so a perfect ranking retrieves everything.
    q = q.drop(columns="n_gold")
    ev = Evaluator(Dataset.from_frames(q, c)).evaluate(EvalConfig(bootstrap=0))
    for name in ("auroc", "auprc", "ndcg@10", "mrr", "map@20", "recall@20", "hit@20",
                 "sensitivity", "specificity", "screening_sensitivity", "alert_precision",
                 "exact_match", "micro_f1", "samples_f1", "accuracy"):
        assert ev.record(name).value == 1.0, name
    for name in ("ece", "brier", "hamming_loss", "fpr", "slip_rate", "false_flag_rate"):
        assert ev.record(name).value == 0.0, name
