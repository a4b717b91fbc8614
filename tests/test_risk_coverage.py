"""Risk–coverage and AURC (contract §6, abstention view): against a direct loop over the
confidence levels, the optimal curve by sorting the errors last, hand-worked toy cases, and the
bootstrap intervals against replicates expanded sample by sample."""

from __future__ import annotations

import numpy as np
import pytest

from metrics_core.metrics import risk_coverage as rcov
from metrics_core.metrics.uncertainty import Bootstrap, percentile_ci


def direct(error, confidence, answered=None):
    """Literal loop: for every distinct level, answer the samples at or above it."""
    error = np.asarray(error, float)
    confidence = np.asarray(confidence, float)
    answered = np.ones(error.size, bool) if answered is None else np.asarray(answered, bool)
    cov, risk = [], []
    for level in sorted(set(confidence[answered]), reverse=True):
        a = answered & (confidence >= level)
        cov.append(a.sum() / error.size)
        risk.append(error[a].mean())
    aurc = sum(r * (c - prev) for r, c, prev in zip(risk, cov, [0.0, *cov[:-1]], strict=True))
    # optimal: the answered samples' errors last, one at a time
    e = np.sort(error[answered])
    optimal = sum(e[:k].mean() for k in range(1, e.size + 1)) / error.size
    return np.array(cov), np.array(risk), aurc, optimal


@pytest.mark.parametrize("seed", range(5))
def test_equals_a_direct_loop_over_thresholds(seed):
    rng = np.random.default_rng(seed)
    n = 200
    error = (rng.random(n) < 0.3).astype(float)
    confidence = np.round(rng.random(n), 1 + seed % 2)  # ties
    answered = rng.random(n) < (1.0 if seed < 2 else 0.8)
    got = rcov.risk_coverage(error, confidence, answered=answered)
    cov, risk, aurc, optimal = direct(error, confidence, answered)
    assert np.allclose(got.coverage, cov) and np.allclose(got.risk, risk)
    assert got.aurc == pytest.approx(aurc, abs=1e-12)
    assert got.optimal_aurc == pytest.approx(optimal, abs=1e-12)
    assert got.excess_aurc >= -1e-12


def test_hand_worked_and_perfect_ranking():
    r = rcov.risk_coverage([0, 1, 0], [0.9, 0.8, 0.7])
    assert r.aurc == pytest.approx((0 + 1 / 2 + 1 / 3) / 3)
    assert r.optimal_aurc == pytest.approx((1 / 3) / 3)
    perfect = rcov.risk_coverage([0, 0, 1, 1], [0.9, 0.8, 0.2, 0.1])
    assert perfect.excess_aurc == pytest.approx(0.0, abs=1e-12)
    # all tied: one point, risk = error rate over coverage 1
    tied = rcov.risk_coverage([0, 1, 1, 0], [0.5] * 4)
    assert list(tied.coverage) == [1.0] and tied.aurc == pytest.approx(0.5)


def test_gate_risk_coverage_is_a_band_around_the_threshold():
    y = np.array([1, 0, 1, 0, 1])
    p = np.array([0.95, 0.6, 0.45, 0.1, 0.7])
    got = rcov.gate_risk_coverage(y, p, threshold=0.5)
    error = ((p >= 0.5) != y).astype(float)  # 0.6 -> 1 but 0; 0.45 -> 0 but 1
    assert list(error) == [0, 1, 1, 0, 0]
    _, risk, aurc, _ = direct(error, np.abs(p - 0.5))
    assert np.allclose(got.risk, risk) and got.aurc == pytest.approx(aurc)


def test_intervals_equal_replicates_expanded_sample_by_sample():
    rng = np.random.default_rng(7)
    n, b = 60, 40
    error = (rng.random(n) < 0.35).astype(float)
    confidence = np.round(rng.random(n), 1)
    got = rcov.aurc_intervals(error, confidence, n_resamples=b, seed=3)
    counts = np.vstack(list(Bootstrap(n, n_resamples=b, seed=3).count_batches()))
    values = {"aurc": [], "optimal_aurc": [], "excess_aurc": []}
    for row in counts:
        idx = np.repeat(np.arange(n), row)
        r = rcov.risk_coverage(error[idx], confidence[idx])
        values["aurc"].append(r.aurc)
        values["optimal_aurc"].append(r.optimal_aurc)
        values["excess_aurc"].append(r.excess_aurc)
    for name, v in values.items():
        ci = percentile_ci(np.array(v))
        assert got[name] == pytest.approx((ci.lo, ci.hi), abs=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_gate_curve_from_the_counts_by_distinct_p_is_the_per_query_one_bit_for_bit(seed):
    """The reduced Dask run's curve (contract §6: one point per distinct confidence level):
    from the positives and negatives at each distinct p, every point (not only the 500
    written) and the three areas equal the per-query ones exactly, with ties within a p, p
    on both sides of τ at the same distance (one level, mixed predictions) and p = τ."""
    from metrics_core.engines.reductions import score_counts

    rng = np.random.default_rng(seed)
    n = (1, 7, 300, 2000, 40, 900)[seed]
    tau = (0.5, 0.3, 0.5, 0.25, 0.5, 0.7)[seed]
    d = np.round(rng.random(n) * 0.5, 2)
    p = np.clip(np.where(rng.random(n) < 0.5, tau - d, tau + d), 0.0, 1.0)
    if n > 1:
        p[:3 if n > 3 else 1] = tau  # confidence 0: the last level
    y = (rng.random(n) < p).astype(int)
    want = rcov.gate_risk_coverage(y, p, threshold=tau)
    c = score_counts(y, p)
    got = rcov.gate_risk_coverage_of_counts(c.values, c.pos, c.neg, threshold=tau)
    assert got.coverage.tolist() == want.coverage.tolist()
    assert got.risk.tolist() == want.risk.tolist()
    assert (got.aurc, got.optimal_aurc, got.n) == (want.aurc, want.optimal_aurc, want.n)
    assert got.to_dict(max_points=500) == want.to_dict(max_points=500)
    # weighted counts (a resample's whole weights) give the areas of the rows repeated
    w = rng.poisson(1.0, size=(3, n))
    areas = rcov.gate_area_resamples(
        c.values, np.stack([np.bincount(np.searchsorted(c.values, p), weights=r * y,
                                        minlength=c.values.size) for r in w]),
        np.stack([np.bincount(np.searchsorted(c.values, p), weights=r * (1 - y),
                              minlength=c.values.size) for r in w]), threshold=tau)
    for row, (aurc, optimal, excess) in zip(w, areas, strict=True):
        idx = np.repeat(np.arange(n), row)
        if idx.size == 0:
            assert np.isnan(aurc)
            continue
        r = rcov.gate_risk_coverage(y[idx], p[idx], threshold=tau)
        assert (aurc, optimal) == pytest.approx((r.aurc, r.optimal_aurc), abs=1e-12)
        assert excess == pytest.approx(r.excess_aurc, abs=1e-12)


@pytest.mark.parametrize("seed", range(6))
def test_gate_curve_from_the_order_of_p_is_the_sorted_one_bit_for_bit(seed):
    """The run's order of p (ascending, as Evaluator.p_order) gives the confidence order by a
    merge, not a sort: the curve, the areas and their intervals are the same to the bit, with
    ties within a p, p on both sides of τ at the same distance and p = τ."""
    rng = np.random.default_rng(seed)
    n = (1, 7, 300, 2000, 40, 900)[seed]
    tau = (0.5, 0.3, 0.5, 0.25, 0.5, 0.7)[seed]
    d = np.round(rng.random(n) * 0.5, 2 if seed % 2 else 6)
    p = np.clip(np.where(rng.random(n) < 0.5, tau - d, tau + d), 0.0, 1.0)
    if n > 1:
        p[:3 if n > 3 else 1] = tau
    y = (rng.random(n) < p).astype(int)
    order = np.argsort(p, kind="stable")
    for resamples in (0, 50):
        want = rcov.gate_risk_coverage(y, p, threshold=tau, n_resamples=resamples, seed=seed)
        got = rcov.gate_risk_coverage(y, p, threshold=tau, n_resamples=resamples, seed=seed,
                                      p_order=order)
        assert got.coverage.tolist() == want.coverage.tolist()
        assert got.risk.tolist() == want.risk.tolist()
        assert got.to_dict() == want.to_dict()
    with pytest.raises(ValueError, match="order must be a permutation"):
        rcov.gate_risk_coverage(y, p, threshold=tau, p_order=np.zeros(n + 1, dtype=np.int64))
    if p.min() < p.max():
        with pytest.raises(ValueError, match="order must sort p ascending"):
            rcov.gate_risk_coverage(y, p, threshold=tau, p_order=order[::-1])


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="one length"):
        rcov.risk_coverage([0, 1], [0.5])
    with pytest.raises(ValueError, match="undefined \\(NaN\\) for an answered sample"):
        rcov.risk_coverage([0, 1], [0.5, float("nan")])


def test_triage_report_has_the_risk_coverage_of_its_answers(tmp_path):
    import json

    from metrics_core.cli import main
    from metrics_core.demo import demo_paths
    from metrics_core.triage import load_triage, triage_metrics

    path = demo_paths().triage
    data = load_triage(path)
    got = triage_metrics(data).risk_coverage
    answered = data.pred != -1
    error = (data.pred != data.y).astype(float)
    cov, risk, aurc, optimal = direct(error, data.confidence, answered)
    assert got["defined"] and got["aurc"] == pytest.approx(aurc, abs=1e-12)
    assert got["optimal_aurc"] == pytest.approx(optimal, abs=1e-12)
    assert np.allclose(got["curve"]["coverage"], cov) and np.allclose(got["curve"]["risk"], risk)
    assert got["curve"]["coverage"][-1] == pytest.approx(answered.mean())
    lo, hi = got["ci95"]["aurc"]
    assert lo <= got["aurc"] <= hi
    out = tmp_path / "triage.json"
    assert main(["triage", str(path), "--out", str(out), "--quiet"]) == 0
    written = json.loads(out.read_text())["risk_coverage"]
    assert written["aurc"] == pytest.approx(aurc) and written["excess_aurc"] >= 0


def test_triage_without_confidence_says_why():
    import pandas as pd

    from metrics_core.triage import parse_triage, triage_metrics

    frame = pd.DataFrame({"label": ["real", "fake", "fake"],
                          "prediction": ["real", "uncertain", "fake"]})
    got = triage_metrics(parse_triage(frame)).risk_coverage
    assert got == {"defined": False, "reason": "the file has no confidence column"}


def test_metrics_master_has_the_gates_risk_coverage():
    import json

    from metrics_core.config import EvalConfig
    from metrics_core.demo import demo_paths
    from metrics_core.inputs import loading as mio
    from metrics_core.report import Evaluator

    paths = demo_paths()
    ds = mio.load(paths.queries, paths.candidates).dataset
    cfg = EvalConfig(bootstrap=100)
    evaluation = Evaluator(ds).evaluate(cfg)
    got = json.loads(evaluation.to_json())["gate_risk_coverage"]
    error = ((ds.p >= cfg.threshold) != ds.y).astype(float)
    _, _, aurc, optimal = direct(error, np.abs(ds.p - cfg.threshold))
    assert got["aurc"] == pytest.approx(aurc, abs=1e-12)
    assert got["optimal_aurc"] == pytest.approx(optimal, abs=1e-12)
    assert got["n_resamples"] == 100 and got["ci95"]["aurc"][0] <= aurc <= got["ci95"]["aurc"][1]
    assert len(got["curve"]["coverage"]) <= 501 and got["curve"]["coverage"][-1] == 1.0
    # the gate's point (contract §6): NEG below τ_neg, POS from τ_pos, answered = either
    pos, neg = ds.p >= cfg.tau_pos, ds.p < cfg.tau_neg
    answered = pos | neg
    wrong = (pos & (ds.y == 0)) | (neg & (ds.y == 1))
    assert got["gate"]["coverage"] == pytest.approx(answered.mean())
    assert got["gate"]["risk"] == pytest.approx(wrong.sum() / answered.sum())


def test_digamma_of_whole_numbers_equals_scipy_bit_for_bit():
    """The optimal AURC's harmonic numbers come from ψ at whole counts without scipy; they
    must not move a bit from scipy.special.digamma's (metrics_master.json unchanged)."""
    from scipy.special import digamma

    x = np.arange(1, 300_001, dtype=np.float64)
    assert np.array_equal(rcov.digamma_of_whole(x), digamma(x))
    rng = np.random.default_rng(7)
    big = np.floor(10 ** rng.uniform(0, 15.5, 50_000))
    assert np.array_equal(rcov.digamma_of_whole(big), digamma(big))
    assert rcov.digamma_of_whole(np.array([])).size == 0
    # ψ(n + 1) − ψ(1) = H(n): 1 + 1/2 + 1/3 = 11/6
    assert np.isclose(rcov.digamma_of_whole([4.0])[0] - rcov.digamma_of_whole([1.0])[0], 11 / 6)
    for bad in ([0.0], [2.5], [np.nan]):
        with pytest.raises(ValueError, match="whole numbers >= 1"):
            rcov.digamma_of_whole(bad)


def test_the_gate_s_risk_coverage_imports_no_scipy():
    """metrics_master.json's gate risk–coverage (with its intervals) loads no scipy: importing
    scipy.special cost the command line about a tenth of a second."""
    import subprocess
    import sys

    code = ("import sys\nfrom metrics_core.config import EvalConfig\n"
            "from metrics_core.data.dataset import Dataset\n"
            "from metrics_core.evaluation.evaluator import Evaluator\n"
            "from tests.conftest import random_frames\n"
            "q, c = random_frames(n_posts=30, seed=2)\n"
            "ev = Evaluator(Dataset.from_frames(q, c)).evaluate(EvalConfig(bootstrap=50))\n"
            "assert ev.gate_risk_coverage['ci95']\n"
            "print('scipy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "False"


def _float_area_intervals(error, order, ends, n_resamples, seed):
    """The areas' intervals as computed before the integer cumulations: float64 weights,
    ``_areas`` on each batch of bootstrap_cis's draw."""
    from metrics_core.metrics.uncertainty import bootstrap_cis

    e_sorted = error[order][None, :]

    def statistic(w):
        aurc, optimal, _, _ = rcov._areas(w[:, order], e_sorted, ends, w.sum(axis=1))
        return np.stack([aurc, optimal, aurc - optimal], axis=1)

    cis = bootstrap_cis({"areas": statistic}, error.size, n_resamples=n_resamples,
                        seed=seed)["areas"]
    return {name: (c.lo, c.hi) for name, c in
            zip(("aurc", "optimal_aurc", "excess_aurc"), cis, strict=True)}


@pytest.mark.parametrize("seed", range(3))
def test_area_intervals_from_integer_cumulations_and_kept_counts_are_the_float_ones(seed):
    """The gate's area intervals from integer cumulations of the counts, drawn here or read
    from the first rows of a longer kept draw (the run's count matrix), equal bit for bit the
    float64 weights' (thousands of levels: the sums over them in the same layout)."""
    from metrics_core.metrics.uncertainty import DrawnCounts

    rng = np.random.default_rng(seed)
    n, b = (3000, 500, 1200)[seed], (120, 75, 300)[seed]
    tau = 0.5
    p = np.round(rng.random(n), (4, 2, 6)[seed])
    y = (rng.random(n) < p).astype(int)
    error = ((p >= tau).astype(float) != y).astype(float)
    error, order, ends = rcov._prepared(error, np.abs(p - tau), None)
    want = _float_area_intervals(error, order, ends, b, seed)
    assert rcov._area_intervals(error, order, ends, b, seed) == want
    kept = DrawnCounts(Bootstrap(n, n_resamples=b + 37, seed=seed))
    assert rcov._area_intervals(error, order, ends, b, seed, kept) == want
    got = rcov.gate_risk_coverage(y, p, threshold=tau, n_resamples=b, seed=seed,
                                  counts=kept.array())
    assert got.ci95 == want
    with pytest.raises(ValueError, match="at least"):
        rcov._area_intervals(error, order, ends, b + 38, seed, kept)
