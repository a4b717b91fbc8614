"""Tests of metrics_core.metrics.uncertainty: Wilson intervals and the seeded bootstrap (contract
§9)."""

from __future__ import annotations

import doctest

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from metrics_core.metrics import uncertainty
from metrics_core.metrics.uncertainty import (
    CI,
    Bootstrap,
    bootstrap_ci,
    bootstrap_cis,
    percentile_ci,
    percentile_cis,
    weighted_mean,
    weighted_ratio,
    wilson_interval,
)

Z95 = 1.959963984540054  # norm.ppf(0.975)


def test_doctests():
    assert doctest.testmod(uncertainty).failed == 0


# ------------------------------------------------------------------------------ Wilson
def test_wilson_hand_value_8_of_10():
    # z^2 = 3.841458820694125; centre = (8 + z^2/2) / (10 + z^2) = 9.920729 / 13.841459
    # = 0.716740160; half width = z sqrt(8*2/10 + z^2/4) / (10 + z^2)
    # = 1.959964 * sqrt(2.560365) / 13.841459 = 0.226577689; so (0.490162, 0.943318).
    lo, hi = wilson_interval(8, 10)
    assert lo == pytest.approx(0.716740160041133 - 0.226577688504492, abs=1e-12)
    assert hi == pytest.approx(0.716740160041133 + 0.226577688504492, abs=1e-12)
    assert (round(lo, 4), round(hi, 4)) == (0.4902, 0.9433)


def test_wilson_closed_form_at_the_ends():
    # k = 0: centre = half width = (z^2/2) / (n + z^2), so lo = 0 and hi = z^2 / (n + z^2);
    # k = n mirrors it: lo = n / (n + z^2), hi = 1.
    z2 = Z95**2
    lo, hi = wilson_interval(0, 10)
    assert lo == 0.0
    assert hi == pytest.approx(z2 / (10 + z2), abs=1e-15)
    lo, hi = wilson_interval(10, 10)
    assert lo == pytest.approx(10 / (10 + z2), abs=1e-15)
    assert hi == 1.0


def test_wilson_matches_scipy_binomtest():
    for k, n in [(0, 1), (1, 1), (3, 7), (50, 100), (1379, 14770), (1, 1000)]:
        for level in (0.9, 0.95, 0.99):
            ref = stats.binomtest(k, n).proportion_ci(confidence_level=level, method="wilson")
            lo, hi = wilson_interval(k, n, level=level)
            assert lo == pytest.approx(ref.low, abs=1e-12)
            assert hi == pytest.approx(ref.high, abs=1e-12)


def test_wilson_vectorised_and_empty():
    k = np.array([0, 3, 8, 0])
    n = np.array([5, 5, 10, 0])
    lo, hi = wilson_interval(k, n)
    assert lo.shape == hi.shape == (4,)
    for i in range(3):
        assert (lo[i], hi[i]) == wilson_interval(int(k[i]), int(n[i]))
    assert np.isnan(lo[3]) and np.isnan(hi[3])
    lo0, hi0 = wilson_interval(0, 0)
    assert np.isnan(lo0) and np.isnan(hi0)


@pytest.mark.parametrize(("k", "n", "level"), [(5, 4, 0.95), (-1, 4, 0.95), (1, 4, 1.0),
                                               (1, 4, 0.0), (1.5, 4, 0.95)])
def test_wilson_rejects_bad_input(k, n, level):
    with pytest.raises(ValueError, match=r"k|n|level"):
        wilson_interval(k, n, level=level)


@given(n=st.integers(1, 5000), frac=st.floats(0, 1), level=st.sampled_from([0.8, 0.95, 0.99]))
def test_wilson_properties(n, frac, level):
    k = round(frac * n)
    lo, hi = wilson_interval(k, n, level=level)
    assert 0.0 <= lo <= k / n <= hi <= 1.0
    # symmetry: the interval of the failures is the mirror image
    lo_f, hi_f = wilson_interval(n - k, n, level=level)
    assert lo == pytest.approx(1 - hi_f, abs=1e-12)
    assert hi == pytest.approx(1 - lo_f, abs=1e-12)
    # a higher level gives a wider interval
    lo99, hi99 = wilson_interval(k, n, level=0.999)
    assert lo99 <= lo and hi <= hi99


# --------------------------------------------------------------------------- bootstrap
def test_bootstrap_counts_are_the_documented_draw():
    # Literal reading of the docstring: one Generator(PCG64(seed)); resample r draws n units
    # with replacement, counts[r, u] = how often u was drawn.
    n, b, seed = 13, 9, 42
    rng = np.random.Generator(np.random.PCG64(seed))
    expected = np.stack([np.bincount(rng.integers(0, n, size=n, dtype=np.int32), minlength=n)
                         for _ in range(b)])
    got = Bootstrap(n, n_resamples=b, seed=seed, batch_size=b).counts()
    assert got.dtype == np.int32
    np.testing.assert_array_equal(got, expected)


def test_bootstrap_same_seed_same_matrices_any_batch_size():
    ref = Bootstrap(37, n_resamples=101, seed=7).counts()
    assert ref.shape == (101, 37)
    assert (ref.sum(axis=1) == 37).all()
    for batch_size in (1, 2, 10, 33, 101, 500):
        np.testing.assert_array_equal(
            Bootstrap(37, n_resamples=101, seed=7, batch_size=batch_size).counts(), ref)
    assert not np.array_equal(Bootstrap(37, n_resamples=101, seed=8).counts(), ref)
    batches = list(Bootstrap(37, n_resamples=101, seed=7, batch_size=40).count_batches())
    assert [c.shape[0] for c in batches] == [40, 40, 21]


def test_bootstrap_counts_have_multinomial_moments():
    # Each count is Binomial(n, 1/n): mean 1, variance 1 - 1/n. With 4000 x 50 counts the
    # sample variance has standard error ~ sqrt(2/200000) ~ 0.003; allow 5 of them.
    counts = Bootstrap(50, n_resamples=4000, seed=3).counts()
    assert counts.mean() == 1.0  # rows sum to n exactly
    assert counts.var() == pytest.approx(1 - 1 / 50, abs=0.016)


@pytest.mark.parametrize("kwargs", [{"n_units": 0}, {"n_units": 3, "n_resamples": 0},
                                    {"n_units": 3, "batch_size": 0}])
def test_bootstrap_rejects_bad_sizes(kwargs):
    n_units = kwargs.pop("n_units")
    with pytest.raises(ValueError, match="must be a positive integer"):
        Bootstrap(n_units, **kwargs)


def test_bootstrap_ci_of_mean_equals_literal_loop():
    rng = np.random.default_rng(0)
    v = rng.normal(size=40).round(1)
    ci = bootstrap_ci(weighted_mean(v), 40, n_resamples=500, seed=11, batch_size=64)
    counts = Bootstrap(40, n_resamples=500, seed=11).counts()
    means = np.array([np.mean(np.repeat(v, c)) for c in counts])
    lo, hi = np.percentile(means, [2.5, 97.5])
    assert ci.lo == pytest.approx(lo, rel=1e-12, abs=1e-14)
    assert ci.hi == pytest.approx(hi, rel=1e-12, abs=1e-14)
    assert (ci.level, ci.n_resamples, ci.n_valid, ci.method, ci.unit) == (
        0.95, 500, 500, "percentile", "query")
    assert ci.n_excluded == 0 and ci.defined


def test_bootstrap_ci_agrees_with_scipy_percentile_bootstrap():
    # Both estimate the same percentiles of the same bootstrap distribution with different
    # random streams, so they differ by Monte Carlo error only. The q-quantile estimated from
    # B replicates has standard error sqrt(q (1 - q) / B) / f(x_q); the bootstrap distribution
    # of the mean is close to normal with sd s / sqrt(n), so f(x_q) = phi(z_q) sqrt(n) / s.
    # The difference of two independent estimates has sqrt(2) times that error; allow 5 sd.
    rng = np.random.default_rng(123)
    n, b = 2000, 10_000
    x = rng.exponential(size=n)
    ours = bootstrap_ci(weighted_mean(x), n, n_resamples=b, seed=5)
    ref = stats.bootstrap((x,), np.mean, n_resamples=b, method="percentile",
                          confidence_level=0.95, random_state=np.random.default_rng(9),
                          batch=500).confidence_interval
    q = 0.025
    sd_quantile = np.sqrt(q * (1 - q) / b) / stats.norm.pdf(stats.norm.ppf(q)) * (
        x.std(ddof=1) / np.sqrt(n))
    tol = 5 * np.sqrt(2) * sd_quantile
    assert abs(ours.lo - ref.low) < tol
    assert abs(ours.hi - ref.high) < tol
    assert ours.lo < x.mean() < ours.hi


def test_cluster_bootstrap_rows_of_a_unit_move_together():
    unit_of_row = np.array([0, 0, 0, 1, 2, 2, 3, 3, 3, 3])
    seen = []

    def record(weights):
        seen.append(weights.copy())
        return weights.sum(axis=1)

    bootstrap_ci(record, 4, unit_of_row=unit_of_row, n_resamples=300, seed=2, batch_size=70)
    weights = np.concatenate(seen)
    counts = Bootstrap(4, n_resamples=300, seed=2).counts()
    assert weights.dtype == np.float64
    np.testing.assert_array_equal(weights, counts[:, unit_of_row])
    for unit in range(4):
        cols = weights[:, unit_of_row == unit]
        assert (cols == cols[:, :1]).all()  # every row of the unit has the same weight
    np.testing.assert_array_equal(Bootstrap.expand(counts, unit_of_row), weights)


def test_cluster_bootstrap_ci_equals_literal_loop_over_posts():
    rng = np.random.default_rng(4)
    unit_of_row = np.repeat(np.arange(30), rng.integers(1, 5, size=30))
    v = rng.random(unit_of_row.size).round(2)
    ci = bootstrap_ci(weighted_mean(v), 30, unit_of_row=unit_of_row, n_resamples=400, seed=1)
    assert ci.unit == "post"
    counts = Bootstrap(30, n_resamples=400, seed=1).counts()
    means = []
    for c in counts:
        drawn_units = np.repeat(np.arange(30), c)
        rows = np.concatenate([np.flatnonzero(unit_of_row == u) for u in drawn_units])
        means.append(np.mean(v[rows]))
    lo, hi = np.percentile(means, [2.5, 97.5])
    assert (ci.lo, ci.hi) == (pytest.approx(lo, rel=1e-12), pytest.approx(hi, rel=1e-12))


def test_undefined_resamples_are_excluded_and_counted():
    v = np.arange(20.0)
    mask = np.zeros(20, dtype=bool)
    mask[[3, 17]] = True  # mean over two rows: undefined when neither is drawn
    ci = bootstrap_ci(weighted_mean(v, mask), 20, n_resamples=1000, seed=0)
    counts = Bootstrap(20, n_resamples=1000, seed=0).counts()
    drawn = (counts[:, 3] + counts[:, 17]) > 0
    assert ci.n_valid == int(drawn.sum())
    assert 0 < ci.n_excluded == int((~drawn).sum())
    values = (counts[drawn][:, 3] * 3.0 + counts[drawn][:, 17] * 17.0) / (
        counts[drawn][:, 3] + counts[drawn][:, 17])
    lo, hi = np.percentile(values, [2.5, 97.5])
    assert (ci.lo, ci.hi) == (pytest.approx(lo), pytest.approx(hi))


def test_all_resamples_undefined_gives_nan_interval():
    ci = bootstrap_ci(lambda w: np.full(w.shape[0], np.nan), 5, n_resamples=50)
    assert np.isnan(ci.lo) and np.isnan(ci.hi)
    assert ci.n_valid == 0 and not ci.defined


def test_bootstrap_cis_share_resamples_with_bootstrap_ci():
    rng = np.random.default_rng(8)
    v = rng.random(60)
    num = (v > 0.5).astype(float)
    stats_ = {"mean": weighted_mean(v), "rate": weighted_ratio(num, np.ones(60))}
    many = bootstrap_cis(stats_, 60, n_resamples=300, seed=4, batch_size=50)
    for name, statistic in stats_.items():
        assert many[name] == bootstrap_ci(statistic, 60, n_resamples=300, seed=4)


def test_weighted_ratio_equals_ratio_of_materialised_sums():
    rng = np.random.default_rng(2)
    num = rng.integers(0, 2, 25).astype(float)
    den = np.ones(25)
    den[::3] = 0.0
    weights = Bootstrap(25, n_resamples=20, seed=0).counts().astype(float)
    got = weighted_ratio(num, den)(weights)
    for r, c in enumerate(weights.astype(int)):
        assert got[r] == pytest.approx(np.repeat(num, c).sum() / np.repeat(den, c).sum())


def test_statistic_with_wrong_shape_is_rejected():
    with pytest.raises(ValueError, match="must return shape"):
        bootstrap_ci(lambda w: w.sum(), 5, n_resamples=10)


def test_percentile_ci_and_ci_record():
    ci = percentile_ci([1.0, 2.0, np.nan, 3.0, 4.0], level=0.5)
    # valid replicates 1..4; numpy linear percentiles 25 and 75: 1.75 and 3.25
    assert (ci.lo, ci.hi, ci.n_valid, ci.n_resamples) == (1.75, 3.25, 4, 5)
    assert ci.as_list() == [1.75, 3.25]
    assert isinstance(ci, CI)
    with pytest.raises(ValueError, match="level"):
        percentile_ci([1.0], level=95)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(-100, 100), min_size=2, max_size=30), st.integers(0, 1000))
def test_bootstrap_ci_of_mean_lies_within_data_range(values, seed):
    v = np.array(values)
    ci = bootstrap_ci(weighted_mean(v), v.size, n_resamples=200, seed=seed)
    eps = 1e-9 * (1 + np.abs(v).max())
    assert v.min() - eps <= ci.lo <= ci.hi <= v.max() + eps


def test_weighted_int_quantiles_equal_numpy_on_repeated_rows():
    from metrics_core.metrics.uncertainty import weighted_int_quantiles

    rng = np.random.default_rng(1)
    values = rng.integers(0, 11, 300)
    weights = rng.integers(0, 4, (50, 300)).astype(float)
    weights[0] = 0.0  # an empty resample is undefined
    got = weighted_int_quantiles(values, (0.0, 0.5, 0.9, 1.0))(weights)
    assert np.isnan(got[0]).all()
    for r in range(1, 50):
        want = np.quantile(np.repeat(values, weights[r].astype(int)), (0.0, 0.5, 0.9, 1.0))
        assert got[r] == pytest.approx(want, abs=1e-12)


def test_percentile_cis_equal_percentile_ci_column_by_column():
    rng = np.random.default_rng(5)
    matrix = rng.normal(size=(997, 7))
    matrix[rng.random(997) < 0.1, 2] = np.nan  # a column with undefined resamples
    matrix[:, 4] = np.nan  # and one with none defined
    matrix[:, 5] = np.round(matrix[:, 5], 1)  # ties
    got = percentile_cis(matrix, level=0.9, unit="post")
    want = [percentile_ci(matrix[:, j], level=0.9, unit="post") for j in range(7)]
    assert len(got) == 7
    for g, w in zip(got, want, strict=True):
        assert (g.lo, g.hi, g.n_valid, g.n_resamples, g.unit, g.level) == pytest.approx(
            (w.lo, w.hi, w.n_valid, w.n_resamples, w.unit, w.level), abs=0, nan_ok=True)
    assert got[2].n_valid < 997 and got[4].n_valid == 0
