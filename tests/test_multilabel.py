"""Per-post multi-label metrics (contract §8)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import accuracy_score, f1_score, hamming_loss

from metrics_core.data.dataset import Dataset
from metrics_core.metrics.gate import GateState, assign_states
from metrics_core.metrics.multilabel import decision_labels, multilabel_metrics, post_matrix

NEG, UNC, POS = int(GateState.NEG), int(GateState.UNCERTAIN), int(GateState.POS)


def make_dataset(rows) -> Dataset:
    """rows: (post_id, criterion, y, p); one candidate per query."""
    queries = pd.DataFrame(rows, columns=["post_id", "criterion", "has_evidence",
                                          "p_has_evidence"])
    cands = queries[["post_id", "criterion"]].assign(sent_uid="s0", score=0.0, is_gold=0)
    return Dataset.from_frames(queries, cands)


def test_hand_worked_two_posts():
    # Y = [[1, 0], [0, 0]], Yhat = [[1, 1], [0, 0]]
    m = multilabel_metrics([[1, 0], [0, 0]], [[1, 1], [0, 0]])
    assert m["exact_match"] == 0.5  # post 2 only
    assert m["hamming_loss"] == 0.25 and m["hamming_score"] == 0.75  # 1 wrong cell of 4
    assert m["micro_f1"] == pytest.approx(2 / 3)  # 2·1 / (2·1 + 1 FP + 0 FN)
    assert m["samples_f1"] == pytest.approx(5 / 6)  # post 1: 2/3; post 2: 0/0 -> 1
    assert m["macro_f1"] == 0.5  # criterion 1: 1; criterion 2: 0 / (0 + 1) = 0
    assert m["weighted_f1"] == 1.0  # only criterion 1 has gold positives (weight 1)
    assert (m["n_posts"], m["n_criteria"], m["n_cells"]) == (2, 2, 4)


def test_hand_worked_three_criteria():
    # post a: Y 1 1 0, Yhat 1 0 0 -> TP 1, FN 1 -> F1 2/3
    # post b: Y 0 1 1, Yhat 0 1 1 -> exact, F1 1
    # post c: Y 0 0 0, Yhat 1 0 0 -> FP 1 -> F1 0
    Y = [[1, 1, 0], [0, 1, 1], [0, 0, 0]]
    Yhat = [[1, 0, 0], [0, 1, 1], [1, 0, 0]]
    m = multilabel_metrics(Y, Yhat)
    assert m["exact_match"] == pytest.approx(1 / 3)
    assert m["hamming_loss"] == pytest.approx(2 / 9)
    # pooled: TP 3, FP 1, FN 1 -> 6 / 8
    assert m["micro_f1"] == pytest.approx(0.75)
    assert m["samples_f1"] == pytest.approx((2 / 3 + 1 + 0) / 3)
    # criteria: c1 TP1 FP1 -> 2/3; c2 TP1 FN1 -> 2/3; c3 TP1 -> 1; supports 1, 2, 1
    assert m["macro_f1"] == pytest.approx((2 / 3 + 2 / 3 + 1) / 3)
    assert m["weighted_f1"] == pytest.approx((2 / 3 * 1 + 2 / 3 * 2 + 1 * 1) / 4)


def test_no_gold_anywhere_follows_sklearn():
    # every weight 0: scikit-learn falls back to the unweighted mean (= macro F1)
    Y = np.zeros((3, 4), int)
    Yhat = Y.copy()
    Yhat[0, 1] = 1
    m = multilabel_metrics(Y, Yhat)
    assert m["macro_f1"] == 0.75 and m["weighted_f1"] == 0.75 and m["micro_f1"] == 0.0
    assert m["weighted_f1"] == f1_score(Y, Yhat, average="weighted", zero_division=1.0)
    assert multilabel_metrics(Y, Y)["micro_f1"] == 1.0  # 0/0 -> 1


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_equals_sklearn_on_complete_matrices(data):
    n_posts = data.draw(st.integers(1, 12))
    n_crit = data.draw(st.integers(2, 10))  # one column would be a binary problem for sklearn
    cell = st.lists(st.integers(0, 1), min_size=n_crit, max_size=n_crit)
    Y = np.array(data.draw(st.lists(cell, min_size=n_posts, max_size=n_posts)))
    Yhat = np.array(data.draw(st.lists(cell, min_size=n_posts, max_size=n_posts)))
    m = multilabel_metrics(Y, Yhat)
    for avg in ("micro", "samples", "macro", "weighted"):
        assert m[f"{avg}_f1"] == pytest.approx(
            f1_score(Y, Yhat, average=avg, zero_division=1.0), abs=1e-12), avg
    assert m["hamming_loss"] == pytest.approx(hamming_loss(Y, Yhat), abs=1e-15)
    assert m["exact_match"] == pytest.approx(accuracy_score(Y, Yhat), abs=1e-15)
    assert m["hamming_score"] == pytest.approx(1 - m["hamming_loss"], abs=1e-15)
    # permuting posts or criteria changes nothing
    rows = np.random.default_rng(n_posts).permutation(n_posts)
    cols = np.random.default_rng(n_crit).permutation(n_crit)
    m2 = multilabel_metrics(Y[rows][:, cols], Yhat[rows][:, cols])
    assert m2 == pytest.approx(m, abs=1e-12)
    for key in ("exact_match", "hamming_score", "micro_f1", "samples_f1", "macro_f1",
                "weighted_f1"):
        assert 0.0 <= m[key] <= 1.0


def test_masked_cells_are_left_out():
    # post b lacks criterion 2; the masked cell's values must not matter
    Y = np.array([[1, 0], [1, 1]])
    Yhat = np.array([[1, 0], [1, 0]])
    mask = np.array([[True, True], [True, False]])
    m = multilabel_metrics(Y, Yhat, mask)
    # present cells all agree -> every metric perfect
    assert m["exact_match"] == 1.0 and m["hamming_loss"] == 0.0 and m["n_cells"] == 3
    assert m["micro_f1"] == 1.0 and m["samples_f1"] == 1.0
    # criterion 2: one present cell, no gold, no prediction -> F1 1 (0/0)
    assert m["macro_f1"] == 1.0 and m["weighted_f1"] == 1.0
    Yhat2 = Yhat.copy()
    Yhat2[1, 1] = 1  # a masked cell: no effect
    assert multilabel_metrics(Y, Yhat2, mask) == m
    # equal to sklearn on the complete sub-matrix of present posts x criteria
    assert multilabel_metrics(Y[:, :1], Yhat[:, :1])["hamming_loss"] == 0.0


def test_mask_errors_and_empty():
    with pytest.raises(ValueError, match="same shape"):
        multilabel_metrics([[1, 0]], [[1]])
    with pytest.raises(ValueError, match="0/1"):
        multilabel_metrics([[2, 0]], [[1, 0]])
    with pytest.raises(ValueError, match="mask"):
        multilabel_metrics([[1, 0]], [[1, 0]], mask=[[True]])
    m = multilabel_metrics([[1, 0]], [[1, 0]], mask=[[False, False]])
    assert m["n_cells"] == 0 and np.isnan(m["micro_f1"])


def test_post_matrix_and_decision_rules():
    rows = [("p1", "A.1", 1, 0.7), ("p1", "A.2", 0, 0.5), ("p1", "A.10", 1, 0.2),
            ("p2", "A.1", 0, 0.05), ("p2", "A.10", 0, 0.95)]  # p2 lacks A.2
    ds = make_dataset(rows)
    assert ds.criteria == ("A.1", "A.2", "A.10")
    states = assign_states(ds.p, tau_neg=0.1, tau_pos=0.6)
    # canonical order: (p1, A.1), (p1, A.2), (p1, A.10), (p2, A.1), (p2, A.10)
    assert states.tolist() == [POS, UNC, UNC, NEG, POS]
    thr = decision_labels(ds)  # p >= 0.5
    assert thr.tolist() == [1, 1, 0, 0, 1]
    assert decision_labels(ds, threshold=0.7).tolist() == [1, 0, 0, 0, 1]
    assert decision_labels(ds, rule="screen_in", states=states).tolist() == [1, 1, 1, 0, 1]
    assert decision_labels(ds, rule="alert", states=states).tolist() == [1, 0, 0, 0, 1]
    Y, Yhat, mask = post_matrix(ds, thr)
    assert Y.tolist() == [[1, 0, 1], [0, 0, 0]]
    assert Yhat.tolist() == [[1, 1, 0], [0, 0, 1]]
    assert mask.tolist() == [[True, True, True], [True, False, True]]
    m = multilabel_metrics(Y, Yhat, mask)
    # p1: TP 1, FP 1, FN 1 -> F1 1/2, not exact; p2 (A.1, A.10): FP 1 -> F1 0, not exact
    assert m["exact_match"] == 0.0 and m["samples_f1"] == 0.25
    assert m["hamming_loss"] == 3 / 5  # 3 wrong of 5 present cells
    with pytest.raises(ValueError, match="states are required"):
        decision_labels(ds, rule="alert")
    with pytest.raises(ValueError, match="rule"):
        decision_labels(ds, rule="majority")
    with pytest.raises(ValueError, match="predicted"):
        post_matrix(ds, [1, 0])


def test_weighted_statistic_equals_repeating_posts():
    from metrics_core.metrics.multilabel import MULTILABEL_NAMES, multilabel_weighted

    rng = np.random.default_rng(2)
    gold, pred = rng.integers(0, 2, (40, 5)), rng.integers(0, 2, (40, 5))
    mask = rng.random((40, 5)) > 0.2
    weights = rng.integers(0, 3, (30, 40)).astype(float)
    got = multilabel_weighted(gold, pred, mask)(weights)
    for r, w in enumerate(weights):
        idx = np.repeat(np.arange(40), w.astype(int))
        want = multilabel_metrics(gold[idx], pred[idx], mask[idx])
        assert got[r] == pytest.approx([want[n] for n in MULTILABEL_NAMES], abs=1e-12)


@pytest.mark.parametrize("rule", ["threshold", "screen_in", "alert"])
def test_multilabel_intervals_are_reused_only_for_the_same_post_decisions(rule):
    """A setting change that leaves every post's decisions as they were (a τ_neg move under
    the fixed-threshold or the alert rule) re-uses the multi-label intervals; one that moves
    them (under the screen-in rule) gets its own; both equal a fresh evaluator's."""
    import json

    from metrics_core.config import EvalConfig
    from metrics_core.demo import make_synthetic
    from metrics_core.evaluation.evaluator import Evaluator
    from metrics_core.inputs.loading import load

    queries, candidates = make_synthetic(120, seed=3)
    ds = load(queries, candidates).dataset

    def intervals(evaluation):
        doc = json.loads(evaluation.to_json())
        return {r["name"]: r["ci95"] for r in doc["metrics"] if r["group"] == "multilabel"}

    ev = Evaluator(ds)
    a = ev.evaluate(EvalConfig(bootstrap=300, multilabel_rule=rule, tau_neg=0.05))
    b = ev.evaluate(EvalConfig(bootstrap=300, multilabel_rule=rule, tau_neg=0.4))
    keys = [k for k in ev._cache if k[0] == "multilabel_intervals"]
    assert len(keys) == (2 if rule == "screen_in" else 1)
    for got, tau_neg in ((a, 0.05), (b, 0.4)):
        want = Evaluator(ds).evaluate(EvalConfig(bootstrap=300, multilabel_rule=rule,
                                                 tau_neg=tau_neg))
        assert intervals(got) == intervals(want)
    assert any(ci is not None for ci in intervals(a).values())
    if rule == "screen_in":  # the screened-in decisions moved with τ_neg
        assert intervals(a) != intervals(b)


@pytest.mark.parametrize("shape", [(300, 10), (40, 3), (5, 1)])
def test_weighted_statistic_dense_and_sparse_counts_agree_exactly(shape, monkeypatch):
    """The per-criterion counts as one dense product (few posts x criteria) or as sparse
    products give the same values, bit for bit."""
    from metrics_core.metrics import multilabel as ml

    rng = np.random.default_rng(shape[0])
    y = (rng.random(shape) < 0.2).astype(int)
    yhat = (rng.random(shape) < 0.25).astype(int)
    mask = rng.random(shape) < 0.9
    weights = rng.poisson(1.0, size=(500, shape[0])).astype(np.float64)
    dense = ml.multilabel_weighted(y, yhat, mask)(weights)
    monkeypatch.setattr(ml, "DENSE_CELLS", 0)
    sparse = ml.multilabel_weighted(y, yhat, mask)(weights)
    assert np.array_equal(dense, sparse, equal_nan=True)
