"""Each cohort's calibration slope interval (contract §9): the percentile interval of exact
fits on the run's resamples of posts, checked against a literal loop of statsmodels fits."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from metrics_core.evaluation import cohort_logistic
from metrics_core.metrics.calibration import LOGIT_EPS
from tests.test_cohorts import _cohort_table, _data, _value


def _statsmodels_slope(y, x, w):
    """b of logit P(y=1) = a + b·x by statsmodels' GLM with frequency weights ``w`` (NaN with
    one class or a fit that does not converge)."""
    import statsmodels.api as sm

    keep = w > 0
    y, x, w = y[keep], x[keep], w[keep]
    if not 0 < np.sum(w * y) < np.sum(w):
        return np.nan
    with warnings.catch_warnings(), np.errstate(over="ignore"):
        warnings.simplefilter("error", sm.tools.sm_exceptions.PerfectSeparationWarning)
        try:
            fit = sm.GLM(y, sm.add_constant(x, has_constant="add"),
                         family=sm.families.Binomial(), freq_weights=w).fit(tol=1e-12)
        except Exception:  # separation: no fit, left out as the contract says
            return np.nan
    return fit.params[1]


@pytest.mark.parametrize("seed", [13, 21, 34])
def test_calibration_slope_intervals_match_a_literal_loop_of_statsmodels_fits(
        seed, monkeypatch):
    """Each cohort's calibration slope refitted by statsmodels' GLM (frequency weights = the
    resample's post multiplicities) on every resample: the percentiles of those fits are the
    table's interval (to 1e-6), with exact fits on fewer resamples than there are; the
    interval holds the cohort's estimate."""
    exact_fits = []
    fitted = cohort_logistic.ExactFits.__call__
    monkeypatch.setattr(cohort_logistic.ExactFits, "__call__",
                        lambda self, w: exact_fits.append(1) or fitted(self, w))
    q, c = _data(n_posts=150, n_criteria=3, seed=seed)
    setup = _cohort_table(q, c, ["site"], 120, seed)
    ev, counts, table = setup.ev, setup.counts, setup.table
    ds, site = ev.ds, setup.attrs["site"]
    pc = np.clip(ds.p, LOGIT_EPS, 1 - LOGIT_EPS)
    x = np.log(pc) - np.log1p(-pc)
    y = ds.y.astype(float)
    for j, value in enumerate(site.values):
        own = np.flatnonzero(site.codes == j)
        estimate = _statsmodels_slope(y[own], x[own], np.ones(own.size))
        assert _value(table, "site", value, "calibration_slope") == pytest.approx(
            estimate, abs=1e-6)
        got = np.array([_statsmodels_slope(y[own], x[own],
                                           counts[r][ds.post_code[own]].astype(float))
                        for r in range(counts.shape[0])])
        want = np.percentile(got[~np.isnan(got)], [2.5, 97.5])
        ci = _value(table, "site", value, "calibration_slope", "ci95")
        assert ci == pytest.approx(want.tolist(), abs=1e-6), value
        assert ci[0] <= estimate <= ci[1]
    assert len(exact_fits) < counts.shape[0] * len(site.values) / 2


def test_undefined_slopes_have_no_interval():
    """A cohort with one class, or with logit(p) constant, has no slope and no interval
    (§5); a resample where the cohort has one class is left out of its interval."""
    q, c = _data(n_posts=90, n_criteria=3, seed=5)
    posts = q["post_id"].unique()
    q["ward"] = q["post_id"].map(dict(zip(posts, np.resize(["one", "flat", "rest"],
                                                           posts.size), strict=True)))
    q.loc[q["ward"] == "one", "has_evidence"] = 0
    q.loc[q["ward"] == "flat", "p_has_evidence"] = 0.3
    table = _cohort_table(q, c, ["ward"], 60, 3).table
    for value in ("one", "flat"):
        assert pd.isna(_value(table, "ward", value, "calibration_slope"))
        assert _value(table, "ward", value, "calibration_slope", "ci95") is None
    assert _value(table, "ward", "rest", "calibration_slope", "ci95") is not None


def test_the_slope_series_solves_a_resample_as_an_exact_fit():
    """The series' solution (order 8, Newton's method) on one resample's sums equals the
    exact fit to well within its bound."""
    rng = np.random.default_rng(0)
    n = 400
    p = rng.uniform(0.02, 0.98, n)
    y = (rng.random(n) < p ** 0.8).astype(float)
    x = np.log(p) - np.log1p(-p)
    codes = np.zeros(n, dtype=np.int64)

    class Data:  # the fields slope_centres reads
        pass

    ds = Data()
    ds.p, ds.y = p, y
    centre = cohort_logistic.slope_centres(ds, codes, 1)
    w = rng.poisson(1.0, n).astype(float)
    sums = (w @ cohort_logistic.slope_columns(x, y, codes, centre))[None, None, :]
    full = np.concatenate([np.zeros((1, 1, cohort_logistic.ORDER + 3)), sums], axis=-1)
    full[..., 0], full[..., 1] = w.sum(), w @ y
    got = cohort_logistic.resampled_slopes(full, centre, lambda r, j: np.nan)
    want = _statsmodels_slope(y, x, w)
    assert got[0, 0] == pytest.approx(want, abs=1e-6)
