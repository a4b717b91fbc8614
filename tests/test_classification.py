"""Tests of metrics_core.metrics.classification (contract §4, protocol all_queries).

Sources: "contract §N" is section N of docs/CONTRACT.md; "seed 000" is
docs/seeds/000-metric-specification.txt.
"""

from __future__ import annotations

import doctest

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn import metrics as skm

from metrics_core.metrics import classification
from metrics_core.metrics.classification import (
    CurveCounts,
    PrCurve,
    PreparedScores,
    RocCurve,
    Score,
    auroc_auprc_weighted,
    average_precision,
    average_precision_weighted,
    check_binary_inputs,
    pr_points,
    prepare,
    roc_auc,
    roc_auc_weighted,
    roc_points,
    tpr_at_fpr,
)
from metrics_core.metrics.confusion import (
    RATE_NAMES,
    Confusion,
    confusion_at,
    confusion_from_counts,
    confusion_rates,
    confusion_sweep,
)
from metrics_core.report import thinning
from metrics_core.report.thinning import downsample


def random_data(seed: int, n: int = 300, decimals: int = 2, pos_rate: float = 0.3):
    """Labels and scores rounded to ``decimals`` so that scores tie, within and across classes."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < pos_rate).astype(np.int8)
    p = np.clip(rng.normal(0.4 + 0.2 * y, 0.2), 0, 1).round(decimals)
    y[:2] = [0, 1]  # both classes present
    return y, p


def test_doctests():
    assert doctest.testmod(classification).failed == 0
    assert doctest.testmod(thinning).failed == 0


# ------------------------------------------------------------------ hand-worked values
def test_seed000_section8_example():
    # seed 000 §8: y = [1,1,0,0,1], p = [.9,.7,.4,.2,.8] ranks every positive first -> 1.0
    y, p = [1, 1, 0, 0, 1], [0.9, 0.7, 0.4, 0.2, 0.8]
    assert roc_auc(y, p) == Score(1.0, True, None)
    assert average_precision(y, p) == Score(1.0, True, None)


def test_hand_average_precision_and_ties():
    # y sorted by p: 1 (.9), 0 (.8), 1 (.7), 0 (.1): precision at the two hits 1/1 and 2/3,
    # each adds recall 1/2 -> AP = (1 + 2/3) / 2 = 5/6. Pairs (pos, neg): (.9,.8) (.9,.1)
    # (.7,.8) (.7,.1) -> 3 of 4 ordered -> AUROC 0.75.
    y, p = [1, 0, 1, 0], [0.9, 0.8, 0.7, 0.1]
    assert average_precision(y, p).value == pytest.approx(5 / 6, abs=1e-15)
    assert roc_auc(y, p).value == 0.75
    # one positive tied with one negative: the pair counts 1/2; AP has a single threshold
    # with precision 1/2 and recall 1.
    assert roc_auc([1, 0], [0.5, 0.5]).value == 0.5
    assert average_precision([1, 0], [0.5, 0.5]).value == 0.5


@pytest.mark.parametrize(("y", "auprc"), [([1, 1, 1], 1.0), ([0, 0, 0, 0], 0.0)])
def test_one_class_follows_seed000_and_is_flagged(y, auprc):
    p = np.linspace(0.1, 0.9, len(y))
    assert roc_auc(y, p) == Score(0.5, False, "one class")
    assert average_precision(y, p) == Score(auprc, False, "one class")
    assert np.isnan(roc_auc_weighted(y, p, np.ones((2, len(y))))).all()


def test_empty_input_is_undefined():
    s = roc_auc([], [])
    assert np.isnan(s.value) and not s.defined and s.reason == "no samples"
    assert not average_precision([], []).defined


def test_one_class_with_sample_weight_zeroing_a_class():
    y, p = [1, 0, 1], [0.2, 0.5, 0.9]
    s = average_precision(y, p, sample_weight=[1.0, 0.0, 3.0])
    assert s == Score(1.0, False, "one class")


# ----------------------------------------------------------------- agreement with sklearn
@pytest.mark.parametrize("seed", range(8))
def test_auroc_and_ap_equal_sklearn_with_ties(seed):
    y, p = random_data(seed, n=50 + 40 * seed, decimals=1 + seed % 3)
    assert roc_auc(y, p).value == pytest.approx(skm.roc_auc_score(y, p), abs=1e-12)
    assert average_precision(y, p).value == pytest.approx(
        skm.average_precision_score(y, p), abs=1e-12)
    w = np.random.default_rng(seed).random(y.size) * 3
    assert roc_auc(y, p, sample_weight=w).value == pytest.approx(
        skm.roc_auc_score(y, p, sample_weight=w), abs=1e-12)
    assert average_precision(y, p, sample_weight=w).value == pytest.approx(
        skm.average_precision_score(y, p, sample_weight=w), abs=1e-12)


def test_all_scores_tied():
    y = np.array([1, 0, 0, 1, 0])
    p = np.full(5, 0.3)
    assert roc_auc(y, p).value == skm.roc_auc_score(y, p) == 0.5
    assert average_precision(y, p).value == pytest.approx(skm.average_precision_score(y, p))


@pytest.mark.parametrize("seed", range(6))
def test_weighted_kernels_equal_sklearn_on_materialised_resamples(seed):
    y, p = random_data(seed, n=120, decimals=1 + seed % 2)
    rng = np.random.default_rng(100 + seed)
    counts = rng.multinomial(y.size, np.full(y.size, 1 / y.size), size=40)
    counts[0] = 0
    counts[0, y == 1] = 1  # a one-class resample -> nan
    counts[1, :] = 0
    counts[1, [0, 1]] = [3, 2]  # tiny two-class resample
    auc = roc_auc_weighted(y, p, counts)
    ap = average_precision_weighted(y, p, counts.astype(np.float64))
    assert np.isnan(auc[0]) and np.isnan(ap[0])
    both = auroc_auprc_weighted(y, p, counts)
    np.testing.assert_array_equal(both[0], auc)
    np.testing.assert_array_equal(both[1], ap)
    for r in range(1, counts.shape[0]):
        yy, pp = np.repeat(y, counts[r]), np.repeat(p, counts[r])
        assert auc[r] == pytest.approx(skm.roc_auc_score(yy, pp), abs=1e-10)
        assert ap[r] == pytest.approx(skm.average_precision_score(yy, pp), abs=1e-10)


def test_weighted_kernel_spans_chunks(monkeypatch):
    y, p = random_data(3, n=40)
    counts = np.random.default_rng(0).poisson(1.0, size=(30, 40))
    whole = roc_auc_weighted(y, p, counts)
    monkeypatch.setattr(classification, "CHUNK_ELEMENTS", 7 * 40)  # chunks of 7 rows
    auc = roc_auc_weighted(y, p, counts)
    ap = average_precision_weighted(y, p, counts)
    np.testing.assert_array_equal(auc, whole)
    for r in range(30):
        assert auc[r] == pytest.approx(
            skm.roc_auc_score(y, p, sample_weight=counts[r]), abs=1e-12)
        assert ap[r] == pytest.approx(
            skm.average_precision_score(y, p, sample_weight=counts[r]), abs=1e-12)


@pytest.mark.parametrize("seed", range(5))
def test_curves_equal_sklearn(seed):
    y, p = random_data(seed, n=200, decimals=1 + seed % 3)
    roc = roc_points(y, p)
    fpr, tpr, thr = skm.roc_curve(y, p, drop_intermediate=False)
    np.testing.assert_array_equal(roc.fpr, fpr)
    np.testing.assert_array_equal(roc.tpr, tpr)
    np.testing.assert_array_equal(roc.thresholds, thr)
    assert roc.thresholds[0] == np.inf
    pr = pr_points(y, p)
    prec, rec, thr = skm.precision_recall_curve(y, p)
    np.testing.assert_array_equal(pr.precision, prec)
    np.testing.assert_array_equal(pr.recall, rec)
    np.testing.assert_array_equal(pr.thresholds, thr)


def test_curves_of_one_class_are_nan_not_warned():
    roc = roc_points([1, 1, 1], [0.2, 0.4, 0.4])
    assert np.isnan(roc.fpr).all() and roc.tpr[-1] == 1.0
    pr = pr_points([0, 0], [0.2, 0.4])
    assert np.isnan(pr.recall[:-1]).all()  # sklearn would say 1 (and warn): 0/0 here
    np.testing.assert_array_equal(pr.precision, [0.0, 0.0, 1.0])


# --------------------------------------------------------------------------- tpr @ fpr
def seed000_tpr_at_fpr(y, p, target):
    """seed 000 §2.3, literally (with drop_intermediate=False as contract §4 says)."""
    fpr, tpr, thresholds = skm.roc_curve(y, p, drop_intermediate=False)
    idx = np.where(fpr <= target)[0]
    if len(idx) == 0:
        return 0.0, 1.0
    return float(tpr[idx[-1]]), float(thresholds[idx[-1]])


@pytest.mark.parametrize("seed", range(5))
def test_tpr_at_fpr_equals_seed000_code(seed):
    y, p = random_data(seed, n=400, decimals=2 + seed % 2)
    results = tpr_at_fpr(y, p)
    assert [r.target for r in results] == [0.01, 0.03, 0.05, 0.10]
    for r in results:
        assert (r.tpr, r.threshold) == seed000_tpr_at_fpr(y, p, r.target)
        assert r.fpr <= r.target and r.defined


def test_tpr_at_fpr_hand_cases():
    # seed 000 §8 data: FPR stays 0 until every positive is in (threshold 0.7, TPR 1).
    (r,) = tpr_at_fpr([1, 1, 0, 0, 1], [0.9, 0.7, 0.4, 0.2, 0.8], targets=[0.01])
    assert (r.tpr, r.fpr, r.threshold) == (1.0, 0.0, 0.7)
    # the top score is a negative: only the (0, 0) point qualifies, threshold inf
    (r,) = tpr_at_fpr([0, 1, 0], [0.9, 0.5, 0.1], targets=[0.01])
    assert (r.tpr, r.fpr, r.threshold) == (0.0, 0.0, np.inf)
    # no negatives: no index qualifies -> seed 000 fallback (0.0, 1.0), undefined
    (r,) = tpr_at_fpr([1, 1], [0.9, 0.5], targets=[0.05])
    assert (r.tpr, r.threshold, r.defined) == (0.0, 1.0, False) and np.isnan(r.fpr)
    with pytest.raises(ValueError, match="targets"):
        tpr_at_fpr([1, 0], [0.9, 0.5], targets=[1.5])


# ---------------------------------------------------------------------------- confusion
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("threshold", [0.2, 0.35, 0.5, 0.61])
def test_confusion_equals_sklearn(seed, threshold):
    y, p = random_data(seed, n=250)
    pred = (p >= threshold).astype(int)
    c = confusion_at(y, p, threshold=threshold)
    tn, fp, fn, tp = skm.confusion_matrix(y, pred, labels=[0, 1]).ravel()
    assert (c.tp, c.fp, c.tn, c.fn) == (tp, fp, tn, fn)
    assert c.threshold == threshold
    assert c.sensitivity == pytest.approx(skm.recall_score(y, pred), abs=1e-15)
    assert c.precision == pytest.approx(skm.precision_score(y, pred), abs=1e-15)
    assert c.specificity == pytest.approx(skm.recall_score(y, pred, pos_label=0), abs=1e-15)
    assert c.npv == pytest.approx(skm.precision_score(y, pred, pos_label=0), abs=1e-15)
    assert c.fpr == pytest.approx(1 - c.specificity, abs=1e-15)
    assert c.f1 == pytest.approx(skm.f1_score(y, pred), abs=1e-15)
    assert c.mcc == pytest.approx(skm.matthews_corrcoef(y, pred), abs=1e-12)
    assert c.balanced_accuracy == pytest.approx(skm.balanced_accuracy_score(y, pred), abs=1e-15)


def test_confusion_threshold_is_inclusive():
    # positive iff p >= threshold (contract §4): the 0.5 row is predicted positive
    c = confusion_at([1, 0, 0], [0.5, 0.5, 0.49], threshold=0.5)
    assert (c.tp, c.fp, c.tn, c.fn) == (1, 1, 1, 0)


def test_confusion_undefined_ratios_are_nan_not_zero():
    # nothing predicted positive: precision and F1 are 0/0 only if there are no positives
    c = confusion_from_counts(0, 0, 7, 3)
    assert np.isnan(c.precision) and c.f1 == 0.0 and c.sensitivity == 0.0
    assert np.isnan(c.mcc)  # sklearn's matthews_corrcoef would return 0 here
    m = c.metrics()
    assert np.isnan(m["precision"].value) and not m["precision"].defined
    assert m["precision"].reason == "no predicted positives (0/0)"
    assert m["sensitivity"] == Score(0.0)
    # one class, nothing predicted positive: F1 is 0/0
    c = confusion_from_counts(0, 0, 5, 0)
    rates = c.rates()
    for name in ("sensitivity", "precision", "npv", "f1", "mcc", "balanced_accuracy"):
        if name == "npv":
            assert rates[name] == 1.0
        else:
            assert np.isnan(rates[name]), name
    assert {k for k, s in c.metrics().items() if not s.defined} == {
        "sensitivity", "precision", "f1", "mcc", "balanced_accuracy"}


def test_confusion_from_counts_matches_confusion_at():
    y, p = random_data(1)
    c = confusion_at(y, p, threshold=0.4)
    again = confusion_from_counts(c.tp, c.fp, c.tn, c.fn, threshold=0.4)
    assert again == c
    assert again.rates() == c.rates()
    with pytest.raises(ValueError, match="tp must be a non-negative integer"):
        confusion_from_counts(-1, 0, 0, 0)


def test_confusion_sweep_equals_pointwise_counts():
    y, p = random_data(2, decimals=1)
    grid = np.r_[-1.0, np.linspace(0, 1, 21), 2.0, p[:5]]
    sweep = confusion_sweep(y, p, grid)
    for i, t in enumerate(grid):
        pred = p >= t
        assert sweep.tp[i] == np.sum(pred & (y == 1))
        assert sweep.fp[i] == np.sum(pred & (y == 0))
        assert sweep.tn[i] == np.sum(~pred & (y == 0))
        assert sweep.fn[i] == np.sum(~pred & (y == 1))
        assert sweep.at(i) == confusion_at(y, p, threshold=t)
    rates = sweep.rates()
    assert np.isnan(rates["precision"][grid == 2.0]).all()  # nothing predicted positive
    np.testing.assert_array_equal(rates["sensitivity"],
                                  confusion_rates(sweep.tp, sweep.fp, sweep.tn, sweep.fn)[
                                      "sensitivity"])


def test_confusion_rates_are_vectorised():
    rates = confusion_rates([1, 0], [1, 0], [2, 0], [0, 0])
    assert rates["precision"].shape == (2,) and rates["precision"][0] == 0.5
    assert np.isnan(rates["precision"][1]) and set(rates) == set(RATE_NAMES)


# --------------------------------------------------------------------------- downsample
def _distance_to_polyline(x, y, kx, ky, kept):
    """Distance of every original point to the segment between its bracketing kept points."""
    j = np.clip(np.searchsorted(kept, np.arange(x.size), side="right") - 1, 0, kept.size - 2)
    ax, ay, bx, by = kx[j], ky[j], kx[j + 1], ky[j + 1]
    dx, dy = bx - ax, by - ay
    length2 = dx * dx + dy * dy
    t = np.clip(np.divide((x - ax) * dx + (y - ay) * dy, length2, out=np.zeros_like(x),
                          where=length2 > 0), 0, 1)
    return np.hypot(x - (ax + t * dx), y - (ay + t * dy))


@pytest.mark.parametrize("kind", ["roc", "pr"])
def test_downsample_keeps_real_points_and_shape(kind):
    y, p = random_data(7, n=60_000, decimals=6, pos_rate=0.1)
    curve = roc_points(y, p) if kind == "roc" else pr_points(y, p)
    small = downsample(curve, max_points=500)
    assert type(small) is type(curve)
    if kind == "roc":
        x, yy, sx, sy = curve.fpr, curve.tpr, small.fpr, small.tpr
        thr, sthr = curve.thresholds, small.thresholds
    else:
        x, yy, sx, sy = curve.recall, curve.precision, small.recall, small.precision
        thr, sthr = curve.thresholds, small.thresholds
    assert 4 <= sx.size <= 500 < x.size
    # endpoints kept, every kept point is an original operating point with its threshold
    assert (sx[0], sy[0], sx[-1], sy[-1]) == (x[0], yy[0], x[-1], yy[-1])
    kept = np.flatnonzero(np.isin(thr, sthr))
    if kind == "pr":
        kept = np.r_[kept, x.size - 1]  # the final (recall 0, precision 1) point
    np.testing.assert_array_equal(x[kept], sx)
    np.testing.assert_array_equal(yy[kept], sy)
    # documented bound: every point within path_length / pieces of the drawn polyline
    path = np.hypot(np.diff(x), np.diff(yy)).sum()
    bound = path / ((500 - 2) // 2)
    assert _distance_to_polyline(x, yy, sx, sy, kept).max() <= bound + 1e-12


def test_downsample_small_curve_unchanged_and_validation():
    roc = roc_points([1, 0, 1], [0.9, 0.5, 0.1])
    assert downsample(roc, max_points=100) is roc
    with pytest.raises(ValueError, match="max_points"):
        downsample(roc, max_points=3)
    with pytest.raises(ValueError, match="curve"):
        downsample((1, 2), max_points=10)
    assert isinstance(roc, RocCurve) and isinstance(pr_points([1, 0], [0.9, 0.1]), PrCurve)


# ---------------------------------------------------------------------- validation/cache
@pytest.mark.parametrize(("y", "p", "match"), [
    ([0, 2], [0.1, 0.2], "y must be 0/1"),
    ([0, 1], [0.1], "p must have the shape"),
    ([0, 1], [0.1, np.nan], "p must be finite"),
    ([[0, 1]], [[0.1, 0.2]], "y must be 1-D"),
    (["a", "b"], [0.1, 0.2], "y must be 0/1"),
])
def test_bad_inputs_raise_value_error(y, p, match):
    with pytest.raises(ValueError, match=match):
        roc_auc(y, p)


def test_probability_check_and_weights_shape():
    with pytest.raises(ValueError, match=r"probabilities in \[0, 1\]"):
        check_binary_inputs([0, 1], [0.5, 1.5], probability=True)
    with pytest.raises(ValueError, match="sample_weight must be finite and non-negative"):
        roc_auc([0, 1], [0.2, 0.3], sample_weight=[1, -1])
    with pytest.raises(ValueError, match="weights must have shape"):
        roc_auc_weighted([0, 1], [0.2, 0.3], np.ones((2, 3)))


def test_prepared_scores_give_the_same_values_as_arrays():
    y, p = random_data(11)
    prepared = prepare(y, p)
    assert isinstance(prepared, PreparedScores)
    assert (prepared.n, prepared.n_pos) == (y.size, int(y.sum()))
    assert roc_auc(prepared) == roc_auc(y, p)
    assert roc_auc(prepared).value == pytest.approx(skm.roc_auc_score(y, p), abs=1e-12)
    assert average_precision(prepared) == average_precision(y, p)
    w = np.random.default_rng(0).integers(0, 3, y.size).astype(np.float64)
    assert roc_auc(prepared, sample_weight=w) == roc_auc(y, p, sample_weight=w)
    for a, b in ((roc_points(prepared), roc_points(y, p)), (pr_points(prepared), pr_points(y, p))):
        for name in a.__dataclass_fields__:
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert tpr_at_fpr(prepared, targets=(0.01, 0.1)) == tpr_at_fpr(y, p, (0.01, 0.1))
    assert confusion_at(prepared, threshold=0.45) == confusion_at(y, p, threshold=0.45)
    sweep_a = confusion_sweep(prepared, thresholds=[0.2, 0.5])
    sweep_b = confusion_sweep(y, p, [0.2, 0.5])
    np.testing.assert_array_equal(sweep_a.tp, sweep_b.tp)
    np.testing.assert_array_equal(sweep_a.fn, sweep_b.fn)
    counts = np.random.default_rng(1).integers(0, 3, (4, y.size))
    for got, want in zip(auroc_auprc_weighted(prepared, weights=counts),
                         auroc_auprc_weighted(y, p, counts), strict=True):
        np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(roc_auc_weighted(prepared, weights=counts),
                                  roc_auc_weighted(y, p, counts))
    np.testing.assert_array_equal(average_precision_weighted(prepared, weights=counts),
                                  average_precision_weighted(y, p, counts))


def test_prepared_scores_hold_copies_and_nothing_is_cached_between_calls():
    y, p = random_data(5)
    prepared = prepare(y, p)
    first = roc_auc(y, p).value
    p[y == 1] = 1.0  # mutate in place: no earlier sort may be reused
    assert roc_auc(y, p).value == pytest.approx(skm.roc_auc_score(y, p), abs=1e-12)
    assert roc_auc(y, p).value != first
    assert roc_auc(prepared).value == first  # the prepared copy is unaffected
    with pytest.raises(ValueError, match="read-only"):
        prepared.p[0] = 0.5
    curve = roc_points(y, p)
    with pytest.raises(ValueError, match="read-only"):
        curve.fpr[0] = 1.0
    assert not hasattr(classification, "_CACHE")


def test_prepared_scores_argument_errors():
    prepared = prepare([0, 1], [0.2, 0.3])
    with pytest.raises(ValueError, match="either y and p, or a PreparedScores"):
        roc_auc(prepared, [0.2, 0.3])
    with pytest.raises(ValueError, match="p is required unless y is a PreparedScores"):
        roc_points([0, 1])
    with pytest.raises(ValueError, match="weights are required"):
        roc_auc_weighted(prepared)
    with pytest.raises(ValueError, match="thresholds are required"):
        confusion_sweep(prepared)
    with pytest.raises(ValueError, match="weights must have shape"):
        auroc_auprc_weighted(prepared, weights=np.ones((2, 3)))
    with pytest.raises(ValueError, match="y must be 0/1"):
        prepare([0, 2], [0.1, 0.2])


# ------------------------------------------------------------------------- properties
labels_scores = st.integers(1, 40).flatmap(lambda n: st.tuples(
    st.lists(st.integers(0, 1), min_size=n, max_size=n),
    st.lists(st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.5000001, 0.75, 1.0]), min_size=n,
             max_size=n)))


@settings(max_examples=150, deadline=None)
@given(labels_scores, st.floats(-0.1, 1.1), st.randoms(use_true_random=False))
def test_confusion_totals_bounds_and_permutation(data, threshold, rnd):
    y, p = (np.array(v) for v in data)
    c = confusion_at(y, p, threshold=threshold)
    n_pos = int(y.sum())
    assert c.tp + c.tn + c.fp + c.fn == c.n == y.size
    assert c.tp + c.fn == c.n_pos == n_pos
    assert c.tn + c.fp == c.n_neg == y.size - n_pos
    for name, value in c.rates().items():
        lo = -1.0 if name == "mcc" else 0.0
        assert np.isnan(value) or lo - 1e-12 <= value <= 1.0 + 1e-12, name
    if n_pos:
        assert c.sensitivity == c.tp / (c.tp + c.fn)  # contract §10
    perm = np.array(rnd.sample(range(y.size), y.size))
    assert confusion_at(y[perm], p[perm], threshold=threshold) == c


@settings(max_examples=150, deadline=None)
@given(labels_scores, st.randoms(use_true_random=False))
def test_auroc_ap_bounds_and_permutation_invariance(data, rnd):
    y, p = (np.array(v) for v in data)
    perm = np.array(rnd.sample(range(y.size), y.size))
    for metric in (roc_auc, average_precision):
        s = metric(y, p)
        assert 0.0 <= s.value <= 1.0
        assert s.defined == (0 < y.sum() < y.size)
        t = metric(y[perm], p[perm])
        assert t.defined == s.defined and t.value == pytest.approx(s.value, abs=1e-12)
    if 0 < y.sum() < y.size:
        assert roc_auc(y, p).value == pytest.approx(skm.roc_auc_score(y, p), abs=1e-12)
        assert average_precision(y, p).value == pytest.approx(
            skm.average_precision_score(y, p), abs=1e-12)
        roc = roc_points(y, p)
        assert np.all(np.diff(roc.fpr) >= 0) and np.all(np.diff(roc.tpr) >= 0)
        assert roc.fpr[-1] == roc.tpr[-1] == 1.0


def test_confusion_repr_and_counts():
    c = Confusion(3, 1, 5, 2, 0.5)
    assert c.counts() == {"tp": 3, "fp": 1, "tn": 5, "fn": 2, "n": 11, "n_pos": 5, "n_neg": 6}
    # MCC by hand: (3*5 - 1*2) / sqrt(4 * 5 * 6 * 7) = 13 / sqrt(840)
    assert c.mcc == pytest.approx(13 / np.sqrt(840), abs=1e-15)
    assert c.f1 == 6 / 9 and c.ppv == 0.75 and c.npv == 5 / 7
    assert "_rates" not in repr(c)


# --------------------------------------------------------------------------- simplify
def _distance_to_path(px, py, vx, vy) -> np.ndarray:
    """Distance of each point (px, py) to the polyline through the vertices (vx, vy)."""
    ax, ay, bx, by = vx[:-1], vy[:-1], vx[1:], vy[1:]
    dx, dy = bx - ax, by - ay
    length2 = np.where(dx * dx + dy * dy > 0, dx * dx + dy * dy, 1.0)
    out = np.empty(px.size)
    for s in range(0, px.size, 512):
        x, y = px[s:s + 512, None], py[s:s + 512, None]
        t = np.clip(((x - ax) * dx + (y - ay) * dy) / length2, 0.0, 1.0)
        out[s:s + 512] = np.hypot(x - (ax + t * dx), y - (ay + t * dy)).min(axis=1)
    return out


def _step_path(x, y):
    """Vertices of the horizontal-then-vertical step path through the points (plotly's
    line shape "hv", thinning.STEP_SHAPE)."""
    vx = np.r_[x[0], np.repeat(x[1:], 2)]
    vy = np.repeat(y, 2)[:-1]
    return vx, vy


@settings(max_examples=25, deadline=None)
@given(n=st.integers(600, 3000), positives=st.floats(0.05, 0.6), seed=st.integers(0, 10**6),
       decimals=st.sampled_from([2, 3, 6]))
def test_simplified_curves_stay_within_the_tolerance_of_the_exact_ones(n, positives, seed,
                                                                       decimals):
    """The drawn curve keeps real points only (both ends, thresholds aligned), and the exact
    path lies within DRAW_TOLERANCE of the drawn one: ROC as straight segments, PR as the
    horizontal-then-vertical steps the dashboard draws (every corner checked)."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < positives).astype(int)
    y[:2] = (0, 1)
    p = np.round(np.clip(rng.normal(0.35 + 0.3 * y, 0.25), 0, 1), decimals)
    tol = thinning.DRAW_TOLERANCE
    roc = roc_points(y, p)
    drawn = thinning.simplify(roc)
    if roc.fpr.size > thinning.DRAW_WHOLE:
        assert drawn.fpr.size < roc.fpr.size
    where = {t: i for i, t in enumerate(roc.thresholds.tolist())}
    idx = np.array([where[t] for t in drawn.thresholds.tolist()])
    assert idx[0] == 0 and idx[-1] == roc.fpr.size - 1 and np.all(np.diff(idx) > 0)
    np.testing.assert_array_equal(drawn.fpr, roc.fpr[idx])
    np.testing.assert_array_equal(drawn.tpr, roc.tpr[idx])
    assert _distance_to_path(roc.fpr, roc.tpr, drawn.fpr, drawn.tpr).max() <= tol + 1e-12

    pr = pr_points(y, p)
    shown = thinning.simplify(pr)
    where = {t: i for i, t in enumerate(pr.thresholds.tolist())}
    idx = np.array([where[t] for t in shown.thresholds.tolist()] + [pr.recall.size - 1])
    assert idx[0] == 0 and np.all(np.diff(idx) > 0)
    np.testing.assert_array_equal(shown.recall, pr.recall[idx])
    np.testing.assert_array_equal(shown.precision, pr.precision[idx])
    ex, ey = _step_path(pr.recall, pr.precision)
    dx, dy = _step_path(shown.recall, shown.precision)
    assert _distance_to_path(ex, ey, dx, dy).max() <= tol + 1e-12


def test_a_thinned_curve_is_thinned_once():
    """A chart redrawn on every slider move thins the same curve object once."""
    x = np.linspace(0.0, 1.0, 5_001)
    roc = RocCurve(x, np.sqrt(x), np.linspace(1.0, 0.0, 5_001))
    assert thinning.simplify(roc) is thinning.simplify(roc)
    assert thinning.simplify(roc).fpr.size < 200


def test_curve_counts_without_rows_give_the_curves_and_refuse_what_needs_rows():
    """Counts without the rows (an engine's merged counts) are a CurveCounts: the curve kernels
    take them as they take (y, p); the weighted kernels and the confusion sweeps need the rows
    and say so. Hand-worked: scores 0.9 (pos), 0.5 (pos, neg), 0.1 (neg): AUROC = 3.5 / 4."""
    counts = CurveCounts(np.array([0.9, 0.5, 0.1]), np.array([1.0, 2.0, 2.0]),
                         np.array([0.0, 1.0, 2.0]), n_pos=2, n_neg=2)
    y, p = [1, 1, 0, 0], [0.9, 0.5, 0.5, 0.1]
    assert repr(counts) == "CurveCounts(n=4, n_pos=2, n_neg=2)"
    assert roc_auc(counts) == roc_auc(y, p) == Score(0.875)
    assert average_precision(counts) == average_precision(y, p)
    assert tpr_at_fpr(counts) == tpr_at_fpr(y, p)
    assert np.array_equal(roc_points(counts).tpr, roc_points(y, p).tpr)
    assert not hasattr(counts, "blocks")
    with pytest.raises(TypeError, match="the weighted AUROC / AP needs the rows of"):
        roc_auc_weighted(counts, weights=np.ones((1, 4)))
    with pytest.raises(TypeError, match="a confusion sweep needs the rows of"):
        confusion_at(counts, threshold=0.5)
    with pytest.raises(TypeError, match="sample_weight needs the rows of"):
        roc_auc(counts, sample_weight=np.ones(4))
    assert isinstance(prepare(y, p), CurveCounts)
