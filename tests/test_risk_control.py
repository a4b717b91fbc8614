"""Thresholds with a guarantee (Learn-then-Test, contract §6): hand-worked p-values and
thresholds, validity by simulation from a known score distribution (the true sensitivity and
precision at any τ in closed form), the thresholds' closeness to the oracle as n grows, the
split of δ across targets and criteria, and agreement with MAPIE's binary risk controller."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.stats import beta, binom

from metrics_core.data.dataset import Dataset
from metrics_core.metrics import risk_control as rc

# The synthetic screening model: prevalence PI, positives' scores Beta(4, 2), negatives'
# Beta(2, 4). True sensitivity at τ: 1 − F₁(τ); true precision: π S₁ / (π S₁ + (1 − π) S₀).
PI, POS, NEG = 0.3, (4.0, 2.0), (2.0, 4.0)


def true_sensitivity(tau, pos=POS):
    return 1.0 - beta.cdf(tau, *pos)


def true_precision(tau, pos=POS, neg=NEG, pi=PI):
    s1, s0 = beta.sf(tau, *pos), beta.sf(tau, *neg)
    return pi * s1 / (pi * s1 + (1.0 - pi) * s0)


def draw(rng, n, pos=POS, neg=NEG, pi=PI):
    y = (rng.random(n) < pi).astype(np.float64)
    p = np.where(y == 1, rng.beta(*pos, size=n), rng.beta(*neg, size=n))
    return y, p


def mc_limit(delta, draws):
    """δ plus three Monte Carlo standard errors of a share of ``draws`` draws."""
    return delta + 3.0 * math.sqrt(delta * (1.0 - delta) / draws)


# ------------------------------------------------------------------------ hand-worked cases
def test_p_value_is_the_binomial_tail_below_hoeffding():
    k, n, a = np.array([0, 1, 3, 5]), 100, 0.05
    tail = binom.cdf(k, n, a)
    assert np.allclose(rc.hb_p_value(k, n, a), tail)
    assert rc.hb_p_value(10, 100, 0.05) == pytest.approx(binom.cdf(10, 100, 0.05))
    assert float(rc.hb_p_value(0, 0, 0.05)) == 1.0


def test_sensitivity_threshold_by_hand():
    # 230 positives, one at each of 0.2, 0.5, 0.7, 0.9 and 226 at 0.95, 10 negatives at 0.6.
    # τ_neg = 0.2 misses none: p = 0.99^230 = 0.0991 ≤ 0.1; τ_neg = 0.5 misses one:
    # P(Bin(230, 0.01) ≤ 1) = 0.33 > 0.1. So τ_neg = 0.2.
    y = np.r_[np.ones(230), np.zeros(10)]
    p = np.r_[0.2, 0.5, 0.7, 0.9, np.full(226, 0.95), np.full(10, 0.6)]
    assert 0.99 ** 230 < 0.1 < binom.cdf(1, 230, 0.01)
    g = rc.guaranteed_threshold(y, p, "screening_sensitivity>=0.99", delta=0.1)
    assert g.value == 0.2 and g.calibration_value == 1.0 and g.n == 230 and g.n_needed == 230
    # 229 positives: (0.99)^229 = 0.1001 > 0.1, nothing can be guaranteed
    g = rc.guaranteed_threshold(y[1:], p[1:], "screening_sensitivity>=0.99", delta=0.1)
    assert g.value is None and g.n_needed == 230
    assert "at this n (229 positives): at least 230 positives" in g.reason
    # with δ = 0.65 two misses are allowed, not three: τ in (0.5, 0.7] misses 0.2 and 0.5;
    # the largest such observed score is 0.7 (above the negatives' 0.6)
    assert binom.cdf(2, 230, 0.01) <= 0.65 < binom.cdf(3, 230, 0.01)
    g = rc.guaranteed_threshold(y, p, "screening_sensitivity>=0.99", delta=0.65)
    assert g.value == 0.7 and g.calibration_value == pytest.approx(228 / 230)
    g = rc.guaranteed_threshold(y, p, "screening_sensitivity>=0.99", delta=0.5)
    assert g.value == 0.5


def test_precision_threshold_by_hand():
    # grid of two thresholds (0.5, 0.8): Bonferroni at δ/2. At 0.5: 40 alerts with 4 false;
    # at 0.8: 30 alerts with none false. Target 0.9 (α = 0.1).
    y = np.r_[np.ones(30), np.ones(6), np.zeros(4), np.zeros(20)]
    p = np.r_[np.full(30, 0.9), np.full(6, 0.6), np.full(4, 0.6), np.full(20, 0.1)]
    p05, p08 = binom.cdf(4, 40, 0.1), binom.cdf(0, 30, 0.1)
    assert p05 > 0.05 >= p08  # 0.63 and 0.042
    g = rc.guaranteed_threshold(y, p, "alert_precision>=0.9", delta=0.1, grid=[0.5, 0.8])
    assert g.value == 0.8 and g.calibration_value == 1.0 and g.n == 30
    # with one grid point (no Bonferroni price) 0.8 still; with δ = 0.01 none
    g = rc.guaranteed_threshold(y, p, "alert_precision>=0.9", delta=0.01, grid=[0.5, 0.8])
    assert g.value is None and g.n_needed == math.ceil(math.log(0.005) / math.log(0.9))


def test_bad_guarantees_are_named():
    with pytest.raises(ValueError, match="no guaranteed threshold for 'auroc'; valid: "
                                         "screening_sensitivity>=x"):
        rc.Guarantee.parse("auroc>=0.9")
    with pytest.raises(ValueError, match=r"within \(0, 1\); got 1.5"):
        rc.Guarantee.parse("alert_precision>=1.5")
    with pytest.raises(ValueError, match="one side only"):
        rc.Guarantee.parse("screening_sensitivity<=0.9")
    with pytest.raises(ValueError, match=r"delta must be within \(0, 1\); got 1.0"):
        rc.guaranteed_threshold([1, 0], [0.5, 0.2], "alert_precision>=0.9", delta=1.0)


# ---------------------------------------------------------------------------- the data set
def dataset(rng, n_per=(400, 400), fold=True):
    rows = []
    for c, n in zip("AB", n_per, strict=True):
        y, p = draw(rng, n)
        rows.append(pd.DataFrame({"post_id": [f"{c}{i}" for i in range(n)], "criterion": c,
                                  "has_evidence": y.astype(int), "p_has_evidence": p,
                                  "fold": np.arange(n) % 3,
                                  "split": np.where(np.arange(n) % 2 == 0, "TUNE", "TEST")}))
    q = pd.concat(rows, ignore_index=True)
    if not fold:
        q = q.drop(columns=["fold"])
    c = pd.DataFrame({"post_id": q["post_id"], "criterion": q["criterion"], "sent_uid": "s0",
                      "score": 0.5, "is_gold": q["has_evidence"]})
    return Dataset.from_frames(q, c)


def test_delta_split_over_targets_and_criteria_and_held_out():
    ds = dataset(np.random.default_rng(3), n_per=(3000, 3000))
    targets = ["screening_sensitivity>=0.9", "alert_precision>=0.6"]
    out = rc.guarantee(ds, targets, delta=0.1, by="criterion", calibrate_on="split=TUNE")
    assert len(out) == 6 and {r.delta_each for r in out} == {0.1 / 6}
    tune = np.char.upper(ds.split.astype(str)) == "TUNE"
    for r in out:
        m = np.ones(ds.n_queries, bool) if r.subset == "all_queries" else \
            ds.criterion == r.subset.split()[-1]
        alone = rc.guaranteed_threshold(ds.y[m & tune], ds.p[m & tune], r.target,
                                        delta=0.1 / 6)
        assert r.value is not None
        assert r.value == alone.value or (r.parameter == "tau_neg" and r.note)
        assert r.n_calibration == int((m & tune).sum())
        held = r.held_out
        assert held["subset"] == "the queries not in split TUNE"
        rest = m & ~tune
        yy, pp = ds.y[rest], ds.p[rest]
        if r.parameter == "tau_neg":
            expect = ((yy == 1) & (pp >= r.value)).sum() / (yy == 1).sum()
        else:
            expect = ((yy == 1) & (pp >= r.value)).sum() / (pp >= r.value).sum()
        assert held["value"] == pytest.approx(expect)
        assert held["ci95"][0] <= held["value"] <= held["ci95"][1]
    d = out[0].to_dict()
    for key in ("target", "parameter", "value", "delta", "method", "n_calibration",
                "risk_bound", "held_out"):
        assert key in d
    assert d["risk_bound"] == pytest.approx(0.1) and d["delta"] == 0.1


def test_gate_keeps_tau_neg_below_tau_pos():
    # τ_neg alone would be above τ_pos (a loose sensitivity target, a loose precision one)
    ds = dataset(np.random.default_rng(4), n_per=(3000, 3000))
    out = rc.guarantee(ds, ["screening_sensitivity>=0.2", "alert_precision>=0.35"], delta=0.1)
    neg, pos = out
    alone = rc.guaranteed_threshold(ds.y, ds.p, "screening_sensitivity>=0.2", delta=0.05)
    assert alone.value > pos.value
    assert neg.value == pos.value and "keeps τ_neg ≤ τ_pos" in neg.note


def test_calibration_subset_errors():
    ds = dataset(np.random.default_rng(5), fold=False)
    with pytest.raises(ValueError, match="no calibration data \\(no query has split VALID; "
                                         "the splits are TEST, TUNE\\)"):
        rc.guarantee(ds, ["alert_precision>=0.9"], delta=0.1, calibrate_on="split=VALID")
    with pytest.raises(ValueError, match="the queries have no fold column"):
        rc.guarantee(ds, ["alert_precision>=0.9"], delta=0.1, calibrate_on="fold=1")
    with pytest.raises(ValueError, match="expected split=NAME"):
        rc.guarantee(ds, ["alert_precision>=0.9"], delta=0.1, calibrate_on="TUNE")


# ------------------------------------------------------------------- validity by simulation
def simulate(targets, n, draws, delta, seed=0, criteria=1):
    """Per draw: every target's threshold on each criterion (δ split over all of them) and
    whether any has a true risk above its level. Returns (failure share, thresholds)."""
    rng = np.random.default_rng(seed)
    gs = [rc.Guarantee.parse(t) for t in targets]
    each = delta / (len(gs) * criteria)
    failed, taus = 0, {str(g): [] for g in gs}
    for _ in range(draws):
        bad = False
        for _c in range(criteria):
            y, p = draw(rng, n)
            for g in gs:
                tau = rc.guaranteed_threshold(y, p, g, delta=each).value
                if tau is None:
                    continue
                taus[str(g)].append(tau)
                true = true_sensitivity(tau) if g.parameter == "tau_neg" else true_precision(tau)
                bad |= bool(true < g.value - 1e-12)
        failed += bad
    return failed / draws, {k: np.array(v) for k, v in taus.items()}


@pytest.mark.parametrize("target", ["screening_sensitivity>=0.9", "alert_precision>=0.75"])
def test_validity_by_simulation_one_target(target):
    draws, delta = 300, 0.2
    share, taus = simulate([target], 1000, draws, delta, seed=1)
    assert share <= mc_limit(delta, draws)
    assert taus[target].size >= draws * 0.9  # not trivially "nothing guaranteed"


def test_validity_by_simulation_both_targets_per_criterion():
    draws, delta = 200, 0.2
    share, _ = simulate(["screening_sensitivity>=0.9", "alert_precision>=0.75"], 1000, draws,
                        delta, seed=2, criteria=2)
    assert share <= mc_limit(delta, draws)


def test_thresholds_approach_the_oracle_as_n_grows():
    oracle_neg = beta.ppf(0.1, *POS)  # true sensitivity 0.9 exactly
    grid = rc.PRECISION_GRID
    oracle_pos = grid[np.argmax(true_precision(grid) >= 0.75)]
    gaps = []
    for n in (500, 20_000):
        _, taus = simulate(["screening_sensitivity>=0.9", "alert_precision>=0.75"], n, 20,
                           0.1, seed=3)
        neg, pos = taus["screening_sensitivity>=0.9"], taus["alert_precision>=0.75"]
        assert neg.max() <= oracle_neg + 0.02 and pos.min() >= oracle_pos - 0.02
        gaps.append((oracle_neg - neg.mean(), pos.mean() - oracle_pos))
    assert gaps[1][0] < gaps[0][0] and gaps[1][0] < 0.02
    assert gaps[1][1] < gaps[0][1] and gaps[1][1] <= 0.03  # two grid steps


# ------------------------------------------------------------------------------------ MAPIE
# MAPIE 1.x (mapie.risk_control) computes the same Learn-then-Test quantities with one
# difference: its binomial tail is taken at ceil(n · r̂) with r̂ = 1 − recall (or precision) a
# float, so where n · r̂ lands just above a whole number (104 · (1 − 92/104) =
# 12.000000000000004) it counts one loss too many and its p-value is larger. The checks: its
# p-value function equals ours wherever n · r̂ is exact; its FWER procedures (fixed sequence,
# Bonferroni) on exact p-values give our thresholds; its controller, end to end, never
# guarantees a threshold ours does not (its valid set lies within ours).
def mapie_controller(risk, target, delta, params, fwer):
    from mapie.risk_control import BinaryClassificationController

    return BinaryClassificationController(
        predict_function=lambda x: np.c_[1.0 - x, x], risk=risk, target_level=target,
        confidence_level=1.0 - delta, list_predict_params=np.asarray(params),
        fwer_method=fwer)


def counts(y, p, params, metric):
    """(losses, n) at each threshold: misses among positives, or false alerts among alerts."""
    above = p[None, :] >= np.asarray(params)[:, None]
    if metric == "recall":
        return (~above & (y == 1)).sum(axis=1), np.full(len(params), int((y == 1).sum()))
    return (above & (y == 0)).sum(axis=1), above.sum(axis=1)


@pytest.mark.parametrize("seed", range(3))
def test_sensitivity_agrees_with_mapie_fixed_sequence_recall(seed):
    pytest.importorskip("mapie")
    from mapie.risk_control.fwer_control import control_fwer
    from mapie.risk_control.methods import compute_hoeffding_bentkus_p_value

    y, p = draw(np.random.default_rng(seed), 600)
    cand = np.unique(p)
    ours = rc.guaranteed_threshold(y, p, "screening_sensitivity>=0.9", delta=0.1)
    k, n = counts(y, p, cand, "recall")
    r_hat = k / n
    theirs = compute_hoeffding_bentkus_p_value(r_hat, n.astype(float), 0.1, binary=True)[:, 0]
    exact = np.ceil(n * r_hat) == k
    assert exact.mean() > 0.5
    assert np.allclose(theirs[exact], rc.hb_p_value(k, n, 0.1)[exact])
    valid = control_fwer(rc.hb_p_value(k, n, 0.1), 0.1, fwer_method="fixed_sequence")
    assert ours.value == cand[valid].max()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c = mapie_controller("recall", 0.9, 0.1, cand, "fixed_sequence").calibrate(p, y)
    assert set(c.valid_predict_params) <= set(cand[valid])


@pytest.mark.parametrize("seed", range(3))
def test_precision_agrees_with_mapie_bonferroni(seed):
    pytest.importorskip("mapie")
    from mapie.risk_control.fwer_control import control_fwer

    y, p = draw(np.random.default_rng(10 + seed), 600)
    grid = rc.PRECISION_GRID
    ours = rc.guaranteed_threshold(y, p, "alert_precision>=0.75", delta=0.1)
    k, n = counts(y, p, grid, "precision")
    valid = control_fwer(rc.hb_p_value(k, n, 0.25), 0.1, fwer_method="bonferroni")
    assert ours.value is not None and ours.value == grid[valid].min()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        c = mapie_controller("precision", 0.75, 0.1, grid, "bonferroni").calibrate(p, y)
    assert set(np.round(c.valid_predict_params, 2)) <= set(grid[valid])
    assert min(c.valid_predict_params) >= ours.value


# ------------------------------------------------------------------------------ the command
def test_tune_guarantee_command(tmp_path, capsys):
    from metrics_core.cli import main
    from metrics_core.data.dataset import Dataset as D
    from metrics_core.demo import demo_paths

    paths = demo_paths()
    out = tmp_path / "g.json"
    assert main(["tune", str(paths.queries), str(paths.candidates), "--guarantee",
                 "screening_sensitivity>=0.99", "--guarantee", "alert_precision>=0.9",
                 "--delta", "0.1", "--calibrate-on", "split=TUNE", "--by", "criterion",
                 "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    data = json.loads(out.read_text())
    assert data["delta"] == 0.1 and data["calibrate_on"] == "split=TUNE"
    gs = data["guarantees"]
    ds = D.from_frames(pd.read_parquet(paths.queries), pd.read_parquet(paths.candidates))
    each = 0.1 / (2 * (1 + len(ds.criteria)))
    assert len(gs) == 2 * (1 + len(ds.criteria))
    first = gs[0]
    assert set(first) >= {"target", "parameter", "value", "delta", "method", "n_calibration",
                          "risk_bound", "held_out"}
    tune = np.char.upper(ds.split.astype(str)) == "TUNE"
    alone = rc.guaranteed_threshold(ds.y[tune], ds.p[tune], "alert_precision>=0.9",
                                    delta=each)
    pos = gs[1]
    assert pos["parameter"] == "tau_pos" and pos["value"] == alone.value
    assert pos["delta_each"] == pytest.approx(each) and pos["n_calibration"] == int(tune.sum())
    assert pos["held_out"]["subset"] == "the queries not in split TUNE"
    assert f"tau_pos = {alone.value:.6g}" in printed
    # the multiplicity across targets and criteria, stated once beside the guarantees
    n = 2 * (1 + len(ds.criteria))
    assert data["multiplicity"] == {
        "correction": "bonferroni", "tests": n,
        "targets": ["screening_sensitivity>=0.99", "alert_precision>=0.9"],
        "subsets": ["all_queries", *(f"criterion {c}" for c in ds.criteria)],
        "delta": 0.1, "delta_each": pytest.approx(each),
        "statement": f"δ = 0.1 is split evenly over the {n} guarantee(s) computed together "
                     f"(2 target(s) × {1 + len(ds.criteria)} subset(s): all queries and "
                     f"{len(ds.criteria)} criteria), {each:.4g} each, so the probability that "
                     "any of them fails is at most 0.1 (Bonferroni)"}
    assert data["multiplicity"]["statement"] in printed


@pytest.mark.parametrize(("args", "message"), [
    (["--guarantee", "auroc>=0.9"], "no guaranteed threshold for 'auroc'; valid: "
                                    "screening_sensitivity>=x, screening_fn_per_1000<=x, "
                                    "alert_precision>=x"),
    (["--guarantee", "alert_precision>=0.9", "--delta", "1.5"],
     "--delta 1.5: must be within (0, 1)"),
    (["--guarantee", "alert_precision>=0.9", "--delta", "abc"], "--delta 'abc': not a number"),
    (["--guarantee", "alert_precision>=0.9", "--calibrate-on", "split=VALID"],
     "--calibrate-on 'split=VALID': no calibration data (no query has split VALID; the "
     "splits are TEST, TUNE)"),
    (["--target", "alert_precision>=0.9", "--calibrate-on", "split=TUNE"],
     "--calibrate-on: only with --guarantee"),
    ([], "tune needs --target (met on this data) or --guarantee"),
])
def test_tune_guarantee_bad_input(tmp_path, capsys, args, message):
    from metrics_core.cli import main
    from metrics_core.demo import demo_paths

    paths = demo_paths()
    assert main(["tune", str(paths.queries), *args, "--out", str(tmp_path / "g.json")]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "g.json").exists()


def test_calibrate_on_a_fold():
    ds = dataset(np.random.default_rng(8), n_per=(3000, 3000))
    out = rc.guarantee(ds, ["screening_sensitivity>=0.9"], delta=0.1, calibrate_on="fold=1")
    cal = ds.fold == 1
    assert out[0].n_calibration == int(cal.sum()) and out[0].calibration == "fold 1"
    alone = rc.guaranteed_threshold(ds.y[cal], ds.p[cal], "screening_sensitivity>=0.9",
                                    delta=0.1)
    assert out[0].value == alone.value
    held = out[0].held_out
    rest = ~cal
    pos = ds.y[rest] == 1
    assert held["subset"] == "the queries not in fold 1" and held["n"] == int(pos.sum())
    assert held["value"] == pytest.approx((pos & (ds.p[rest] >= alone.value)).sum() / pos.sum())
    with pytest.raises(ValueError, match="fold must be a whole number; got 'x'"):
        rc.guarantee(ds, ["screening_sensitivity>=0.9"], delta=0.1, calibrate_on="fold=x")
    with pytest.raises(ValueError, match="no query has fold 7; the folds are 0, 1, 2"):
        rc.guarantee(ds, ["screening_sensitivity>=0.9"], delta=0.1, calibrate_on="fold=7")
