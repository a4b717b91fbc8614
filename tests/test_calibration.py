"""Tests of metrics_core.metrics.calibration (contract §5).

Sources: "contract §N" is section N of docs/CONTRACT.md; "seed 000" is
docs/seeds/000-metric-specification.txt; "seed 004" is
docs/seeds/004-triage-abstention-metrics.txt.
"""

from __future__ import annotations

import doctest
import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.calibration import calibration_curve
from sklearn.metrics import brier_score_loss

from metrics_core.metrics import calibration
from metrics_core.metrics.calibration import (
    bin_edges,
    brier,
    brier_weighted,
    ece,
    ece_weighted,
    mce,
    mce_weighted,
    reliability_bins,
    top_label,
)
from metrics_core.metrics.uncertainty import wilson_interval


def random_probs(seed: int, n: int = 500, decimals: int | None = None):
    rng = np.random.default_rng(seed)
    p = rng.beta(0.7, 2.0, size=n)
    if decimals is not None:
        p = p.round(decimals)
    y = (rng.random(n) < np.clip(p * 1.2, 0, 1)).astype(np.int8)
    return y, p


def seed000_ece_fixed(y, p, n_bins=10):
    """seed 000 §4.1 loop, with the contract's fix: the last bin is closed at 1.0."""
    edges = np.arange(n_bins + 1) / n_bins
    total = 0.0
    for i in range(n_bins):
        upper = (p <= edges[i + 1]) if i == n_bins - 1 else (p < edges[i + 1])
        mask = (p >= edges[i]) & upper
        if mask.sum() == 0:
            continue
        total += mask.sum() / len(p) * abs(y[mask].mean() - p[mask].mean())
    return total


def test_doctests():
    assert doctest.testmod(calibration).failed == 0


# ------------------------------------------------------------------ hand-worked values
HAND_Y = np.array([0, 0, 1, 1, 1, 0, 1, 0])
HAND_P = np.array([0.05, 0.15, 0.15, 0.45, 0.55, 0.85, 0.95, 1.0])


def test_hand_example_ten_uniform_bins():
    # bin [0, .1): .05 (y 0) -> gap .05;  [.1, .2): .15 (0), .15 (1) -> |.5 - .15| = .35
    # [.4, .5): .45 (1) -> .55;  [.5, .6): .55 (1) -> .45;  [.8, .9): .85 (0) -> .85
    # [.9, 1.0]: .95 (1), 1.0 (0) -> |.5 - .975| = .475
    # ECE = (1*.05 + 2*.35 + 1*.55 + 1*.45 + 1*.85 + 2*.475) / 8 = 3.55 / 8 = 0.44375
    t = reliability_bins(HAND_Y, HAND_P)
    assert t.count.tolist() == [1, 2, 0, 0, 1, 1, 0, 0, 1, 2]
    assert t.positives.tolist() == [0, 1, 0, 0, 1, 1, 0, 0, 0, 1]
    assert t.ece == pytest.approx(3.55 / 8, abs=1e-15)
    assert t.mce == pytest.approx(0.85, abs=1e-15)
    assert ece(HAND_Y, HAND_P) == t.ece and mce(HAND_Y, HAND_P) == t.mce
    assert t.mean_confidence[9] == pytest.approx(0.975)
    assert t.observed_frequency[9] == 0.5
    assert t.gap[9] == pytest.approx(0.5 - 0.975)  # negative: over-confident
    # empty bins: nan statistics (never 0)
    empty = t.count == 0
    for arr in (t.mean_confidence, t.observed_frequency, t.wilson_lo, t.wilson_hi, t.gap):
        assert np.isnan(arr[empty]).all()
    assert t.n == 8 and t.n_bins == 10
    np.testing.assert_allclose(t.lo, np.arange(10) / 10)
    np.testing.assert_allclose(t.hi, np.arange(1, 11) / 10)


def test_probability_one_lands_in_last_bin():
    # seed 000's loop uses p < 1.0 for the last bin and drops p = 1.0: its ECE here is
    # (... + 1*|1 - .95|) / 8 = 2.65 / 8 instead of the contract's 3.55 / 8.
    t = reliability_bins([1], [1.0])
    assert t.count[-1] == 1 and t.count.sum() == 1
    assert t.ece == 0.0
    assert seed000_ece_fixed(HAND_Y, HAND_P) == pytest.approx(3.55 / 8, abs=1e-15)


def test_uniform_edges_are_exact_decimals_left_closed():
    # edges are i / 10, so the float 0.3 is the edge and opens bin [0.3, 0.4);
    # sklearn (linspace edges, searchsorted side="left") puts 0.3 in the bin below.
    edges = bin_edges(None, n_bins=10)
    assert edges[3] == 0.3 and edges[7] == 0.7
    p = np.array([0.0, 0.1, 0.2999999, 0.3, 0.7, 0.9, 0.9999999, 1.0])
    t = reliability_bins(np.zeros(p.size, dtype=int), p)
    assert t.count.tolist() == [1, 1, 1, 1, 0, 0, 0, 1, 0, 3]


def test_wilson_columns():
    y, p = random_probs(1)
    t = reliability_bins(y, p)
    lo, hi = wilson_interval(t.positives, t.count)
    np.testing.assert_array_equal(t.wilson_lo, lo)
    np.testing.assert_array_equal(t.wilson_hi, hi)
    filled = t.count > 0
    assert np.all(t.wilson_lo[filled] <= t.observed_frequency[filled])
    assert np.all(t.observed_frequency[filled] <= t.wilson_hi[filled])


# ------------------------------------------------------------------ agreement/reference
@pytest.mark.parametrize("n_bins", [5, 10, 15])
def test_uniform_bins_match_sklearn_calibration_curve(n_bins):
    y, p = random_probs(n_bins, n=3000)
    # keep away from bin edges, where sklearn's (lo, hi] convention differs from ours
    scaled = p * n_bins
    away = np.abs(scaled - np.round(scaled)) > 1e-6
    y, p = y[away], p[away]
    t = reliability_bins(y, p, n_bins=n_bins)
    prob_true, prob_pred = calibration_curve(y, p, n_bins=n_bins, strategy="uniform")
    filled = t.count > 0
    np.testing.assert_allclose(t.observed_frequency[filled], prob_true, rtol=0, atol=1e-15)
    np.testing.assert_allclose(t.mean_confidence[filled], prob_pred, rtol=0, atol=1e-15)


def test_quantile_bins_match_sklearn_without_ties():
    # 1002 distinct values: the interior quantiles (1001 * i / 10 not integer) fall strictly
    # between data points, so both conventions assign every row to the same bin.
    y, p = random_probs(3, n=1002)
    t = reliability_bins(y, p, strategy="quantile")
    prob_true, prob_pred = calibration_curve(y, p, n_bins=10, strategy="quantile")
    np.testing.assert_allclose(t.observed_frequency, prob_true, rtol=0, atol=1e-15)
    np.testing.assert_allclose(t.mean_confidence, prob_pred, rtol=0, atol=1e-15)
    assert t.count.tolist() == [101, 100, 100, 100, 100, 100, 100, 100, 100, 101]
    assert (t.lo[0], t.hi[-1]) == (p.min(), p.max())


def test_quantile_bins_merge_repeated_edges():
    # 60 % of the scores are 0: the quantiles at 0.1 .. 0.6 all equal 0 and merge
    p = np.r_[np.zeros(60), np.linspace(0.05, 0.95, 40)]
    y = (p > 0.5).astype(int)
    t = reliability_bins(y, p, strategy="quantile")
    assert t.n_bins == 5  # edges 0, then the quantiles at 0.6 .. 1.0
    assert t.count[0] == 60 + int(np.sum((p > 0) & (p < t.hi[0])))
    assert t.count.sum() == 100 and (t.count > 0).all()
    assert np.all(np.diff(np.r_[t.lo, t.hi[-1]]) > 0)
    single = reliability_bins([1, 0], [0.4, 0.4], strategy="quantile")
    assert single.n_bins == 1 and single.count.tolist() == [2]
    assert single.ece == pytest.approx(0.1)


@pytest.mark.parametrize("seed", range(4))
def test_ece_equals_literal_loop(seed):
    y, p = random_probs(seed, decimals=2)  # ties and values on the edges
    for n_bins in (3, 10, 20):
        assert ece(y, p, n_bins=n_bins) == pytest.approx(
            seed000_ece_fixed(y, p, n_bins), abs=1e-12)


@pytest.mark.parametrize("seed", range(3))
def test_brier_equals_sklearn(seed):
    y, p = random_probs(seed)
    assert brier(y, p) == pytest.approx(brier_score_loss(y, p), abs=1e-15)
    assert brier([1, 1], [0.5, 1.0]) == pytest.approx(0.125)  # (0.25 + 0) / 2


# ---------------------------------------------------------------------------- top-label
def test_top_label_hand_example():
    # p >= .5 predicts 1: confidence p; else predicts 0: confidence 1 - p
    conf, correct = top_label([1, 0, 1, 0, 1], [0.9, 0.2, 0.4, 0.5, 0.5])
    np.testing.assert_allclose(conf, [0.9, 0.8, 0.6, 0.5, 0.5])
    assert correct.tolist() == [1, 1, 0, 0, 1]
    conf, correct = top_label([1, 0], [0.3, 0.2], threshold=0.25)
    np.testing.assert_allclose(conf, [0.3, 0.8])
    assert correct.tolist() == [1, 1]


def test_top_label_variant_equals_binning_the_pair():
    y, p = random_probs(5)
    conf, correct = top_label(y, p)
    for strategy in ("uniform", "quantile"):
        assert ece(y, p, top_label=True, strategy=strategy) == ece(correct, conf,
                                                                   strategy=strategy)
        assert mce(y, p, top_label=True, strategy=strategy) == mce(correct, conf,
                                                                   strategy=strategy)
    t = reliability_bins(y, p, top_label=True)
    assert t.top_label and t.count[:5].sum() == 0  # confidences are >= 0.5
    # top-label Brier (seed 004) equals the binary Brier score
    assert brier(correct, conf) == pytest.approx(brier(y, p), abs=1e-15)


# ----------------------------------------------------------------------------- weighted
@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_weighted_equal_materialised_resamples(strategy):
    y, p = random_probs(6, n=80, decimals=2)
    rng = np.random.default_rng(0)
    counts = rng.multinomial(80, np.full(80, 1 / 80), size=25)
    counts[0] = 0  # an empty resample -> nan
    e = ece_weighted(y, p, counts, strategy=strategy)
    m = mce_weighted(y, p, counts, strategy=strategy)
    b = brier_weighted(y, p, counts)
    assert np.isnan(e[0]) and np.isnan(m[0]) and np.isnan(b[0])
    edges = bin_edges(p, strategy=strategy)
    for r in range(1, counts.shape[0]):
        yy, pp = np.repeat(y, counts[r]), np.repeat(p, counts[r])
        assert b[r] == pytest.approx(brier_score_loss(yy, pp), abs=1e-12)
        # literal loop with the full sample's edges (not re-estimated per resample)
        gaps, total = [], 0.0
        for i in range(edges.size - 1):
            upper = pp <= edges[i + 1] if i == edges.size - 2 else pp < edges[i + 1]
            mask = (pp >= edges[i]) & upper
            if mask.any():
                gap = abs(yy[mask].mean() - pp[mask].mean())
                gaps.append(gap)
                total += mask.sum() / pp.size * gap
        assert e[r] == pytest.approx(total, abs=1e-12)
        assert m[r] == pytest.approx(max(gaps), abs=1e-12)
        if strategy == "uniform":
            assert e[r] == pytest.approx(ece(yy, pp), abs=1e-12)
            assert m[r] == pytest.approx(mce(yy, pp), abs=1e-12)


def test_weighted_top_label():
    y, p = random_probs(2, n=50)
    counts = np.random.default_rng(1).poisson(1.0, size=(10, 50))
    conf, correct = top_label(y, p)
    np.testing.assert_allclose(ece_weighted(y, p, counts, top_label=True),
                               ece_weighted(correct, conf, counts), atol=1e-15)


# --------------------------------------------------------------------- edge cases/errors
def test_empty_input():
    assert np.isnan(ece([], [])) and np.isnan(mce([], [])) and np.isnan(brier([], []))
    assert reliability_bins([], []).count.sum() == 0


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"n_bins": 0}, "n_bins must be a positive integer"),
    ({"n_bins": 2.5}, "n_bins must be a positive integer"),
    ({"strategy": "equal"}, "strategy must be one of"),
])
def test_bad_options(kwargs, match):
    with pytest.raises(ValueError, match=match):
        reliability_bins([0, 1], [0.2, 0.8], **kwargs)


def test_probabilities_outside_unit_interval_rejected():
    with pytest.raises(ValueError, match=r"p must be probabilities in \[0, 1\]; rows \[1\]"):
        ece([0, 1], [0.2, 1.2])
    with pytest.raises(ValueError, match="weights must have shape"):
        brier_weighted([0, 1], [0.2, 0.3], np.ones((1, 3)))


# ---------------------------------------------------------------------------- properties
cal_data = st.integers(1, 60).flatmap(lambda n: st.tuples(
    st.lists(st.integers(0, 1), min_size=n, max_size=n),
    st.lists(st.one_of(st.sampled_from([0.0, 0.1, 0.5, 0.9, 1.0]), st.floats(0, 1)),
             min_size=n, max_size=n)))


@settings(max_examples=150, deadline=None)
@given(cal_data, st.sampled_from(["uniform", "quantile"]), st.integers(1, 12),
       st.randoms(use_true_random=False))
def test_calibration_properties(data, strategy, n_bins, rnd):
    y, p = (np.array(v) for v in data)
    t = reliability_bins(y, p, n_bins=n_bins, strategy=strategy)
    assert t.count.sum() == y.size  # nothing dropped, p = 1.0 included
    assert t.positives.sum() == y.sum()
    assert 0.0 <= t.ece <= t.mce + 1e-12 <= 1.0 + 1e-12
    assert 0.0 <= brier(y, p) <= 1.0
    if strategy == "uniform":
        assert t.ece == pytest.approx(seed000_ece_fixed(y, p, n_bins), abs=1e-12)
    perm = np.array(rnd.sample(range(y.size), y.size))
    u = reliability_bins(y[perm], p[perm], n_bins=n_bins, strategy=strategy)
    assert u.count.tolist() == t.count.tolist()
    assert u.ece == pytest.approx(t.ece, abs=1e-12) and u.mce == pytest.approx(t.mce, abs=1e-12)
    assert brier(y[perm], p[perm]) == pytest.approx(brier(y, p), abs=1e-15)


def test_smoothed_calibration_equals_a_statsmodels_glm_on_the_same_spline():
    import statsmodels.api as sm
    from sklearn.preprocessing import SplineTransformer

    from metrics_core.metrics.calibration import smoothed_calibration

    rng = np.random.default_rng(3)
    p = rng.beta(1.2, 4.0, 4000)
    y = (rng.random(4000) < np.clip(1.3 * p ** 1.2, 0, 1)).astype(int)  # miscalibrated
    got = smoothed_calibration(y, p)
    logit = np.log(p / (1 - p))
    spline = SplineTransformer(n_knots=5, degree=3, knots="quantile", include_bias=False,
                               extrapolation="linear").fit(logit[:, None])
    fit = sm.GLM(y, sm.add_constant(spline.transform(logit[:, None])),
                 family=sm.families.Binomial()).fit(tol=1e-12)
    grid = got["p"].to_numpy()
    x = sm.add_constant(spline.transform(np.log(grid / (1 - grid))[:, None]), has_constant="add")
    frame = fit.get_prediction(x).summary_frame(alpha=0.05)
    np.testing.assert_allclose(got["observed"], frame["mean"], atol=1e-6)
    np.testing.assert_allclose(got["lo"], frame["mean_ci_lower"], atol=1e-5)
    np.testing.assert_allclose(got["hi"], frame["mean_ci_upper"], atol=1e-5)
    assert grid[0] == pytest.approx(np.percentile(p, 1))
    assert smoothed_calibration(np.zeros(50), p[:50]).empty


@pytest.mark.parametrize("decimals", [None, 2, 1])
def test_spline_basis_equals_scikit_learns_spline_transformer(decimals):
    from sklearn.preprocessing import SplineTransformer

    from metrics_core.metrics.calibration import bspline_basis, spline_knots

    p = np.random.default_rng(5).beta(1.2, 4.0, 3000)
    if decimals is not None:  # tied values: repeated quantile knots
        p = np.clip(np.round(p, decimals), 0.01, 0.99)
    logit = np.log(p / (1 - p))
    spline = SplineTransformer(n_knots=5, degree=3, knots="quantile", include_bias=False,
                               extrapolation="linear").fit(logit[:, None])
    np.testing.assert_allclose(spline_knots(logit), spline.bsplines_[0].t, atol=1e-12)
    np.testing.assert_allclose(bspline_basis(logit, spline_knots(logit))[:, :-1],
                               spline.transform(logit[:, None]), atol=1e-12)


def test_smoothed_calibration_converges_where_full_newton_steps_overshoot():
    from metrics_core.metrics.calibration import smoothed_calibration

    p = np.linspace(0.01, 0.99, 200)  # sparse outcomes in the tails: full steps diverge
    y = np.random.default_rng(0).random(200) < p
    curve = smoothed_calibration(y, p)
    assert len(curve) == 101 and curve["observed"].between(curve["lo"], curve["hi"]).all()
    assert curve["observed"].is_monotonic_increasing


def test_ece_bands_of_seed_004_judged_on_the_interval():
    from metrics_core.targets import ece_band

    assert ece_band(0.049, (0.01, 0.0499)) == "well calibrated"
    assert ece_band(0.05, (0.05, 0.15)) == "moderately calibrated"
    assert ece_band(0.16, (0.151, 0.2)) == "poorly calibrated"
    assert ece_band(0.14, (0.1, 0.2)) == ("moderately calibrated by the point estimate; the "
                                          "interval reaches poorly calibrated")
    assert ece_band(0.02) == "well calibrated (point estimate, no interval)"


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_smoothed_calibration_never_fails_on_tied_or_degenerate_p(data):
    """Constant, coarse, extreme or mostly-tied p: an empty curve or a finite one with
    lo <= observed <= hi, never an error or a warning (the app shows whatever it returns)."""
    from metrics_core.metrics.calibration import smoothed_calibration

    n = data.draw(st.integers(20, 300))
    pool = data.draw(st.lists(st.sampled_from([0.0, 1e-15, 0.01, 0.2, 0.5, 0.5, 0.7, 0.99, 1.0])
                              | st.floats(0, 1), min_size=1, max_size=12))
    p = np.array(data.draw(st.lists(st.sampled_from(pool), min_size=n, max_size=n)))
    y = np.array(data.draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)))
    curve = smoothed_calibration(y, p)
    if len(curve):
        values = curve.to_numpy()
        assert np.isfinite(values).all()
        assert ((curve["lo"] <= curve["observed"] + 1e-12)
                & (curve["observed"] <= curve["hi"] + 1e-12)).all()


def test_smoothed_calibration_leaves_out_a_tail_without_events():
    """No event below p = 0.3 (separation): the maximum-likelihood curve runs to 0 there; those
    grid points are left out instead of drawn with a zero-width band."""
    from metrics_core.metrics.calibration import smoothed_calibration

    rng = np.random.default_rng(8)
    p = np.r_[rng.uniform(0.0, 0.3, 3000), rng.uniform(0.3, 1.0, 3000)]
    y = (p >= 0.3) & (rng.random(p.size) < p)
    curve = smoothed_calibration(y, p)
    assert 0 < len(curve) < 101
    assert curve["p"].min() > np.percentile(p, 1)  # the first grid points were dropped
    assert (curve["observed"] > 1e-13).all() and (curve["observed"] < 1 - 1e-13).all()
    upper = curve[curve["p"] > 0.5]
    np.testing.assert_allclose(upper["observed"], upper["p"], atol=0.08)  # calibrated above


def test_logistic_calibration_on_p_at_zero_and_one_says_it_has_no_fit():
    """p only 0 and 1 (clipped to the logit bounds): the information matrix is so near
    singular that its inverse has a variance that is not positive. The fit is reported as
    not converged (undefined, no interval), not as a value with a NaN interval and a
    RuntimeWarning (found by tests/test_p_order.py)."""
    rng = np.random.default_rng(5926)
    p = rng.integers(0, 2, 276).astype(np.float64)
    y = (rng.random(276) < p).astype(np.int8)
    y[:2] = [0, 1]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit = calibration.logistic_calibration(y, p)
    assert fit.reason == "the fit did not converge"
    assert math.isnan(fit.slope) and fit.slope_ci is None
    assert fit.in_the_large == pytest.approx(y.sum() / p.sum())


def test_logistic_calibration_of_rows_makes_only_the_fits_asked_for():
    """``parts``: the slope alone is the slope of both fits (1.8176 on the doctest's data, as
    statsmodels' GLM gives it) with no intercept, the intercept alone likewise (0.2004); an
    unknown part is refused."""
    from metrics_core.metrics.calibration import logistic_calibration_of_rows

    y = np.array([0, 1, 1, 0, 1, 0, 1, 0], dtype=float)
    p = np.array([0.2, 0.7, 0.4, 0.6, 0.9, 0.3, 0.5, 0.1])
    order = np.argsort(p)  # distinct p: one row each
    rows = (p[order], y[order], np.ones(p.size))
    kw = {"observed": float(y.sum()), "expected": float(p.sum())}
    both = logistic_calibration_of_rows(*rows, **kw)
    slope = logistic_calibration_of_rows(*rows, **kw, parts=("slope",))
    intercept = logistic_calibration_of_rows(*rows, **kw, parts=("intercept",))
    assert round(both.slope, 4) == 1.8176 and round(both.intercept, 4) == 0.2004
    assert (slope.slope, slope.slope_ci) == (both.slope, both.slope_ci)
    assert math.isnan(slope.intercept) and slope.intercept_ci is None and slope.reason == ""
    assert (intercept.intercept, intercept.intercept_ci) == (both.intercept,
                                                            both.intercept_ci)
    assert math.isnan(intercept.slope) and intercept.slope_ci is None
    with pytest.raises(ValueError, match="parts"):
        logistic_calibration_of_rows(*rows, **kw, parts=("slop",))
