"""Three-state gate and its abstention view (contract §6, seed 003 §5, seed 004).

Sources: "contract §N" is section N of docs/CONTRACT.md; "seed 003" is
docs/seeds/003-evidence-pipeline-contract.txt; "seed 004" is
docs/seeds/004-triage-abstention-metrics.txt.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import (
    balanced_accuracy_score,
    f1_score,
    matthews_corrcoef,
    precision_score,
    recall_score,
)

from metrics_core.metrics.confusion import Confusion
from metrics_core.metrics.gate import (
    AbstentionMetrics,
    GateState,
    abstention_metrics,
    assign_states,
    gate_summary,
    outcome_table,
    per_thousand,
    states_to_prediction,
)
from metrics_core.metrics.uncertainty import wilson_interval

NEG, UNC, POS = int(GateState.NEG), int(GateState.UNCERTAIN), int(GateState.POS)


# ------------------------------------------------------------------------ assign_states
def test_assign_states_thresholds_inclusive_as_contract():
    # NEG if p < τ_neg; UNCERTAIN if τ_neg <= p < τ_pos; POS if p >= τ_pos (contract §6)
    p = [0.0, 0.05, 0.1, 0.3, 0.5999, 0.6, 0.9, 1.0]
    states = assign_states(p, tau_neg=0.1, tau_pos=0.6)
    assert states.dtype == np.int8
    assert states.tolist() == [NEG, NEG, UNC, UNC, UNC, POS, POS, POS]


def test_equal_thresholds_have_no_uncertain():
    states = assign_states([0.2, 0.49, 0.5, 0.7], tau_neg=0.5, tau_pos=0.5)
    assert states.tolist() == [NEG, NEG, POS, POS]


def test_extreme_thresholds():
    p = [0.0, 0.5, 1.0]
    assert assign_states(p, tau_neg=0.0, tau_pos=1.0).tolist() == [UNC, UNC, POS]
    assert assign_states(p, tau_neg=0.0, tau_pos=0.0).tolist() == [POS, POS, POS]
    assert assign_states(p, tau_neg=1.0, tau_pos=1.0).tolist() == [NEG, NEG, POS]


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"tau_neg": 0.7, "tau_pos": 0.6}, "tau_neg must be <= tau_pos"),
    ({"tau_neg": -0.1, "tau_pos": 0.6}, "tau_neg"),
    ({"tau_neg": 0.1, "tau_pos": 1.1}, "tau_pos"),
    ({"tau_neg": float("nan"), "tau_pos": 0.5}, "tau_neg"),
])
def test_assign_states_validates_thresholds(kwargs, match):
    with pytest.raises(ValueError, match=match):
        assign_states([0.5], **kwargs)


@pytest.mark.parametrize("p", [[0.5, np.nan], [1.2], [-0.01]])
def test_assign_states_validates_p(p):
    with pytest.raises(ValueError, match=r"p must be a probability in \[0, 1\]"):
        assign_states(p, tau_neg=0.1, tau_pos=0.6)


def test_states_to_prediction():
    assert states_to_prediction(np.array([NEG, UNC, POS])).tolist() == [0, -1, 1]
    with pytest.raises(ValueError, match="states"):
        states_to_prediction(np.array([3]))


# -------------------------------------------------------------------------- gate_summary
def hand_gate():
    # 10 queries, 4 with evidence:
    #   NEG:       y = 0, 0, 0, 1      (one positive auto-cleared: missed)
    #   UNCERTAIN: y = 0, 1, 0
    #   POS:       y = 1, 1, 0
    y = np.array([0, 0, 0, 1, 0, 1, 0, 1, 1, 0])
    states = np.array([NEG] * 4 + [UNC] * 3 + [POS] * 3)
    return y, states


def test_gate_summary_hand_worked():
    y, states = hand_gate()
    g = gate_summary(y, states)
    assert (g.n, g.n_pos) == (10, 4)
    assert g.state_counts == (4, 3, 3)
    assert (g.count_neg, g.count_uncertain, g.count_pos) == (4, 3, 3)
    assert g.label_counts == ((3, 1), (2, 1), (1, 2))
    assert g.count("POS", 1) == 2 and g.count(GateState.NEG) == 4
    assert (g.neg_rate, g.uncertain_rate, g.pos_rate) == (0.4, 0.3, 0.3)
    assert g.alert_rate_per_1000 == 300.0  # 3 / 10 x 1000
    assert g.screening_sensitivity == 0.75  # (4 - 1) / 4
    assert g.screening_fn_per_1000 == 100.0  # 1 / 10 x 1000
    assert g.alert_precision == 2 / 3  # 2 positives among 3 POS
    assert g.missed == 1


def test_gate_summary_wilson_intervals():
    y, states = hand_gate()
    g = gate_summary(y, states)
    assert g.ci("screening_sensitivity") == pytest.approx(wilson_interval(3, 4))
    assert g.ci("alert_precision") == pytest.approx(wilson_interval(2, 3))
    lo, hi = wilson_interval(1, 10)  # FN per 1000 = 1000 x the proportion 1 / 10
    assert g.ci("screening_fn_per_1000") == pytest.approx((1000 * lo, 1000 * hi))
    lo, hi = wilson_interval(3, 10)
    assert g.ci("alert_rate_per_1000") == pytest.approx((1000 * lo, 1000 * hi))
    assert g.ci("neg_rate") == pytest.approx(wilson_interval(4, 10))
    with pytest.raises(KeyError):
        g.ci("accuracy")


def test_per_thousand_words():
    y, states = hand_gate()
    words = per_thousand(gate_summary(y, states))
    # POS 3, UNCERTAIN 3, NEG 4, missed 1 of 10 queries
    assert (words.flagged, words.sent_to_review, words.auto_cleared, words.missed) == (
        300.0, 300.0, 400.0, 100.0)
    assert words.sentence() == ("Per 1,000 queries screened: 300.0 flagged, 300.0 sent to "
                                "review, 400.0 auto-cleared, 100.0 missed (evidence among "
                                "the auto-cleared).")
    assert "posts screened" in words.sentence("posts")


def test_targets_pass_fail_and_boundaries():
    # 1000 queries, 200 positives; 1 positive NEG -> sensitivity 199 / 200 = 0.995 (passes, >=),
    # FN per 1000 = 1 (passes); POS: 180 positives + 20 negatives -> precision 0.9 (passes)
    y = np.r_[np.ones(200, int), np.zeros(800, int)]
    states = np.r_[[NEG], [UNC] * 19, [POS] * 180, [POS] * 20, [NEG] * 780]
    g = gate_summary(y, states)
    assert g.screening_sensitivity == 0.995 and g.alert_precision == 0.9
    assert [t.passed for t in g.targets()] == [True, True, True]
    assert [(t.metric, t.target, t.comparison) for t in g.targets()] == [
        ("screening_sensitivity", 0.995, ">="), ("screening_fn_per_1000", 5.0, "<="),
        ("alert_precision", 0.9, ">=")]
    # six positives in NEG: sensitivity 194 / 200 = 0.97, FN per 1000 = 6 -> both fail
    states2 = states.copy()
    states2[1:6] = NEG
    assert [t.passed for t in gate_summary(y, states2).targets()] == [False, False, True]


def test_no_positives_and_no_pos_are_undefined():
    g = gate_summary(np.zeros(5, int), np.array([NEG, NEG, UNC, UNC, UNC]))
    assert math.isnan(g.screening_sensitivity) and g.ci("screening_sensitivity") is None
    assert math.isnan(g.alert_precision) and g.ci("alert_precision") is None
    assert g.screening_fn_per_1000 == 0.0  # 0 / 5 x 1000 is defined
    assert [t.passed for t in g.targets()] == [None, True, None]


def test_empty_gate():
    g = gate_summary(np.zeros(0, int), np.zeros(0, np.int8))
    assert g.n == 0 and math.isnan(g.neg_rate) and g.ci("neg_rate") is None
    assert per_thousand(g).sentence() == "No queries screened."


def test_gate_summary_validates():
    with pytest.raises(ValueError, match="y must"):
        gate_summary([0, 2], [0, 1])
    with pytest.raises(ValueError, match="y must"):
        gate_summary([0, 1, 1], [0, 1])
    with pytest.raises(ValueError, match="states"):
        gate_summary([0, 1], [0, 5])


# ------------------------------------------------------------------- abstention metrics
def hand_abstention():
    # 12 samples (positive = fake): TP 3, FN 1, abstain_pos 1 | TN 4, FP 2, abstain_neg 1
    y = np.array([1, 1, 1, 1, 0, 0, 0, 0, 0, 1, 0, 0])
    pred = np.array([1, 1, 0, -1, 0, 0, 1, -1, 1, 1, 0, 0])
    return y, pred


def test_abstention_metrics_hand_worked_seed004():
    y, pred = hand_abstention()
    m = abstention_metrics(y, pred)
    assert (m.tp, m.fn, m.fp, m.tn, m.abstain_pos, m.abstain_neg) == (3, 1, 2, 4, 1, 1)
    assert (m.n, m.n_pos, m.n_neg, m.answered, m.abstain) == (12, 5, 7, 10, 2)
    expected = {
        "coverage": 10 / 12, "abstain_rate": 2 / 12,
        "abstain_rate_fake": 1 / 5, "abstain_rate_real": 1 / 7,
        "coverage_fake": 4 / 5, "coverage_real": 6 / 7,
        "accuracy": 7 / 12,  # (TP + TN) / N, abstentions wrong
        "accuracy_answered": 7 / 10,
        "precision_fake": 3 / 5, "recall_fake": 3 / 4, "f1_fake": 6 / 9,
        "precision_real": 4 / 5,  # TN / (TN + FN)
        "recall_real": 4 / 6,  # TN / (TN + FP)
        "f1_real": 8 / 11,
        "balanced_accuracy": (3 / 4 + 4 / 6) / 2,
        "mcc": (3 * 4 - 2 * 1) / math.sqrt(5 * 4 * 6 * 5),
        "fake_slip_rate": 1 / 5, "real_false_flag_rate": 2 / 7,
        "fake_catch_rate": 3 / 5, "real_pass_rate": 4 / 7,
    }
    got = m.as_dict("fake", "real")
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, abs=1e-15), key
    assert math.isnan(got["ece"]) and math.isnan(got["brier"])
    assert got["tp"] == 3 and got["n_fake"] == 5 and got["abstain_real"] == 1
    assert got["precision_fake_ci"] == pytest.approx(wilson_interval(3, 5))
    assert got["real_false_flag_rate_ci"] == pytest.approx(wilson_interval(2, 7))
    assert got["f1_fake_ci"] is None and got["mcc_ci"] is None  # not proportions


def test_abstention_class_names_in_keys():
    y, pred = hand_abstention()
    m = abstention_metrics(y, pred, positive_name="pos", negative_name="neg")
    d = m.as_dict()
    assert d["pos_slip_rate"] == 1 / 5 and d["neg_false_flag_rate"] == 2 / 7
    assert "abstain_rate_pos" in d and "coverage_neg" in d
    assert m.key("pass_rate") == "neg_pass_rate"
    assert set(m.as_dict(with_ci=False)) == {k for k in d if not k.endswith("_ci")}


def test_abstention_calibration_over_answered():
    y, pred = hand_abstention()
    conf = np.array([0.95, 0.95, 0.65, 0.5, 0.85, 0.85, 0.65, 0.45, 0.55, 0.95, 0.85, 0.65])
    m = abstention_metrics(y, pred, confidence=conf)
    # answered: bin [0.9, 1] 3 correct at .95 -> gap .05; bin [0.8, 0.9) 3 correct at .85 ->
    # .15; bin [0.6, 0.7) rows 3 (wrong), 7 (wrong), 12 (right) at .65 -> |1/3 - .65|;
    # bin [0.5, 0.6) row 9 wrong at .55 -> .55.
    ece = 0.3 * 0.05 + 0.3 * 0.15 + 0.3 * abs(1 / 3 - 0.65) + 0.1 * 0.55
    assert m.ece == pytest.approx(ece, abs=1e-12) and m.ece == pytest.approx(0.21, abs=1e-12)
    # Brier: 3 x .05² + 3 x .15² + .35² + 2 x .65² + .55² = 1.345 over 10 answered
    assert m.brier == pytest.approx(0.1345, abs=1e-12)
    conf[3] = np.nan  # abstained rows' confidence is not used
    assert abstention_metrics(y, pred, confidence=conf).ece == pytest.approx(0.21, abs=1e-12)
    conf[0] = 1.5
    with pytest.raises(ValueError, match="confidence"):
        abstention_metrics(y, pred, confidence=conf)


def test_abstention_everything_abstained():
    m = abstention_metrics([0, 1, 1], [-1, -1, -1], confidence=[0.5, 0.5, 0.5])
    assert m.coverage == 0.0 and m.abstain_rate == 1.0 and m.accuracy == 0.0
    for name in ("accuracy_answered", "precision_pos", "recall_pos", "f1_pos", "mcc",
                 "balanced_accuracy", "ece", "brier"):
        assert math.isnan(getattr(m, name)), name
    assert m.ci("accuracy_answered") is None
    assert m.slip_rate == 0.0 and m.catch_rate == 0.0


def test_abstention_validates():
    with pytest.raises(ValueError, match="pred"):
        abstention_metrics([0, 1], [0, 2])
    with pytest.raises(ValueError, match="y must"):
        abstention_metrics([0, 1, 1], [0, 1])


def test_outcome_table_layout():
    y, pred = hand_abstention()
    # rows: abstain, predicted negative, predicted positive; columns: y = 0, y = 1
    assert outcome_table(y, pred).tolist() == [[1, 1], [4, 1], [2, 3]]


# ----------------------------------------------- one implementation: gate == abstention
@st.composite
def labelled_states(draw):
    n = draw(st.integers(0, 60))
    y = np.array(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)), dtype=int)
    states = np.array(draw(st.lists(st.sampled_from([NEG, UNC, POS]), min_size=n, max_size=n)),
                      dtype=np.int8)
    return y, states


@settings(max_examples=200, deadline=None)
@given(labelled_states())
def test_gate_and_abstention_views_agree(data):
    y, states = data
    g = gate_summary(y, states)
    m = abstention_metrics(y, states_to_prediction(states))
    assert sum(g.state_counts) == g.n == len(y)  # state counts sum to N
    assert g.n_pos == int(y.sum())
    assert m.tp + m.fp + m.tn + m.fn + m.abstain == m.n == g.n
    np.testing.assert_equal(g.alert_precision, m.precision_pos)
    assert g.missed == m.fn
    if g.n:
        assert g.screening_fn_per_1000 == pytest.approx(m.fn / m.n * 1000)
        assert g.neg_rate + g.uncertain_rate + g.pos_rate == pytest.approx(1.0)
        assert g.uncertain_rate == pytest.approx(m.abstain_rate)
    if g.n_pos:
        assert g.screening_sensitivity == pytest.approx(1.0 - m.slip_rate)
    for name in g.METRICS:
        value, ci = getattr(g, name), g.ci(name)
        scale = 1000.0 if name.endswith("per_1000") else 1.0
        if math.isnan(value):
            assert ci is None
        else:
            assert 0.0 <= value <= scale and ci[0] <= value + 1e-9 and value - 1e-9 <= ci[1]


@settings(max_examples=200, deadline=None)
@given(labelled_states(), st.randoms(use_true_random=False))
def test_abstention_permutation_invariance_and_bounds(data, rnd):
    y, states = data
    pred = states_to_prediction(states)
    order = list(range(len(y)))
    rnd.shuffle(order)
    a = abstention_metrics(y, pred).as_dict()
    b = abstention_metrics(y[order], pred[order]).as_dict()
    assert a.keys() == b.keys()
    for key in a:
        np.testing.assert_equal(a[key], b[key])
    for key, value in a.items():
        if isinstance(value, float) and not math.isnan(value) and key != "mcc":
            assert 0.0 <= value <= 1.0, key
    g1, g2 = gate_summary(y, states), gate_summary(y[order], states[order])
    np.testing.assert_equal(g1.as_dict(), g2.as_dict())


def test_abstention_matches_sklearn_on_answered():
    rng = np.random.default_rng(4)
    for _ in range(80):
        n = int(rng.integers(5, 40))
        y = rng.integers(0, 2, n)
        pred = rng.choice([-1, 0, 1], n)
        m = abstention_metrics(y, pred)
        answered = pred != -1
        ya, pa = y[answered], pred[answered]
        if not (m.tp + m.fp and m.tp + m.fn and m.tn + m.fn and m.tn + m.fp):
            continue  # sklearn would warn on 0/0; the undefined cases are tested above
        assert m.precision_pos == pytest.approx(precision_score(ya, pa))
        assert m.recall_pos == pytest.approx(recall_score(ya, pa))
        assert m.f1_pos == pytest.approx(f1_score(ya, pa))
        assert m.precision_neg == pytest.approx(precision_score(ya, pa, pos_label=0))
        assert m.recall_neg == pytest.approx(recall_score(ya, pa, pos_label=0))
        assert m.f1_neg == pytest.approx(f1_score(ya, pa, pos_label=0))
        assert m.mcc == pytest.approx(matthews_corrcoef(ya, pa))
        assert m.balanced_accuracy == pytest.approx(balanced_accuracy_score(ya, pa))
        assert m.accuracy == pytest.approx(np.sum(pred == y) / n)


def test_abstention_result_is_frozen():
    m = abstention_metrics([1, 0], [1, 0])
    assert isinstance(m, AbstentionMetrics)
    with pytest.raises(AttributeError):
        m.coverage = 0.5


def test_the_answered_ratios_are_those_of_the_answered_confusion():
    """One definition of the confusion ratios (contract §4): the abstention view's per-class
    precision / recall / F1, MCC and balanced accuracy are its answered samples' Confusion's,
    the negative class's F1 that of the Confusion with the classes swapped."""
    y, pred = hand_abstention()
    m = abstention_metrics(y, pred)
    assert m.confusion == Confusion(3, 2, 4, 1)
    assert (m.precision_pos, m.recall_pos, m.f1_pos) == (3 / 5, 3 / 4, 6 / 9)
    assert (m.precision_neg, m.recall_neg) == (m.confusion.npv, m.confusion.specificity)
    assert m.f1_neg == Confusion(4, 1, 3, 2).f1 == pytest.approx(8 / 11, abs=1e-15)
    assert (m.mcc, m.balanced_accuracy) == (m.confusion.mcc, m.confusion.balanced_accuracy)
    assert m.answered == m.confusion.n == 10


def test_with_nothing_answered_the_answered_ratios_stay_undefined():
    m = abstention_metrics([0, 1, 1], [-1, -1, -1])
    answered = ("precision_pos", "recall_pos", "f1_pos", "precision_neg", "recall_neg", "f1_neg",
                "balanced_accuracy", "mcc", "accuracy_answered")
    assert all(math.isnan(getattr(m, name)) for name in answered)
    assert all(m.ci(name) is None for name in answered)
    scores = m.confusion.metrics()
    assert not scores["precision"].defined
    assert scores["precision"].reason == "no predicted positives (0/0)"


# ------------------------------------------------------- workup per detection (one registry spec)
def _hand_workup():
    """Contract §6's example: τ_neg = 0.1, τ_pos = 0.6; five POS alerts, two with evidence."""
    import pandas as pd

    p = [0.9, 0.8, 0.7, 0.65, 0.6, 0.4, 0.2, 0.05]
    y = [1, 0, 1, 0, 0, 1, 0, 1]
    queries = pd.DataFrame({"post_id": [f"p{i}" for i in range(8)], "criterion": "C1",
                            "has_evidence": y, "p_has_evidence": p})
    candidates = pd.DataFrame({"post_id": [f"p{i}" for i in range(8)], "criterion": "C1",
                               "sent_uid": "s0", "score": 1.0, "is_gold": y})
    return queries, candidates


def test_workup_to_detection_equals_the_hand_computation():
    """(TP + FP) / TP at τ_pos = (2 + 3) / 2 = 2.5 POS alerts per true alert = 1 / 0.4."""
    from metrics_core.config import EvalConfig
    from metrics_core.data.dataset import Dataset
    from metrics_core.report import Evaluator

    ev = Evaluator(Dataset.from_frames(*_hand_workup()))
    run = ev.evaluate(EvalConfig(tau_neg=0.1, tau_pos=0.6, bootstrap=200))
    r = run.record("workup_to_detection")
    assert r.value == 2.5 and r.defined and r.group == "gate"
    assert run.record("alert_precision").value == 0.4
    assert r.ci_method.startswith("bootstrap") and r.ci95[0] <= 2.5 <= r.ci95[1]
    assert r.n == 8  # the queries the resamples draw from, as the other bootstrap ratios
    assert run.per_criterion.loc["C1", "workup_to_detection"] == 2.5
    # No POS alert with evidence (τ_pos = 0.95: no alert at all): undefined with the reason.
    none = ev.evaluate(EvalConfig(tau_neg=0.1, tau_pos=0.95, bootstrap=0))
    r = none.record("workup_to_detection")
    assert r.defined is False and r.value is None and r.ci95 is None
    assert r.reason == "no true alert at τ_pos (no POS alert has evidence)"
    assert np.isnan(none.per_criterion.loc["C1", "workup_to_detection"])
    doc = next(m for m in none.to_dict()["metrics"] if m["name"] == "workup_to_detection")
    assert doc["value"] is None and doc["reason"] == r.reason


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_workup_to_detection_is_one_over_alert_precision_everywhere(seed):
    """On random data: the record and every per-criterion and per-fold cell equal
    1 / alert precision (the macro / fold means average the ratios: not compared); the
    bootstrap interval is the percentile interval of (TP + FP) / TP over the resamples, each
    counted on its repeated rows."""
    from metrics_core.config import EvalConfig
    from metrics_core.data.dataset import Dataset
    from metrics_core.metrics.uncertainty import Bootstrap, percentile_cis
    from metrics_core.report import Evaluator
    from tests.conftest import random_frames

    q, c = random_frames(n_posts=50, seed=seed, positive_rate=0.35)
    ds = Dataset.from_frames(q, c)
    cfg = EvalConfig(tau_neg=0.2, tau_pos=0.5, bootstrap=120, seed=seed)
    run = Evaluator(ds).evaluate(cfg)
    value, precision = (run.record(n).value for n in ("workup_to_detection", "alert_precision"))
    assert math.isclose(value, 1.0 / precision, rel_tol=1e-12)
    for table in (run.per_criterion.drop(index="macro"),
                  run.per_fold.drop(index=["mean", "std"])):
        assert np.allclose(table["workup_to_detection"], 1.0 / table["alert_precision"],
                           rtol=1e-12, equal_nan=True)
    pos = run.states == 2
    counts = np.concatenate(list(Bootstrap(ds.n_queries, n_resamples=120,
                                           seed=seed).count_batches()))
    alerts, true_alerts = counts @ pos, counts @ (pos & (ds.y == 1))
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(true_alerts > 0, alerts / true_alerts, np.nan)
    (ci,) = percentile_cis(ratios[:, None])
    assert run.record("workup_to_detection").ci95 == pytest.approx((ci.lo, ci.hi), rel=1e-12)


def test_workup_to_detection_appears_in_the_record_and_the_app_tables():
    from metrics_core.config import EvalConfig
    from metrics_core.data.dataset import Dataset
    from metrics_core.report import Evaluator
    from metrics_core.report.decision_record import render_html
    from tests.conftest import random_frames

    q, c = random_frames(n_posts=30, seed=4)
    run = Evaluator(Dataset.from_frames(q, c)).evaluate(EvalConfig(bootstrap=50))
    assert "Workup per detection (alerts per true alert)" in render_html(run)
    assert "workup_to_detection" in set(run.records_frame()["name"])
    assert "workup_to_detection" in run.fold_summary["metric"].tolist()
    from dashboard import display  # the app's full table of the Overview page

    row = display.records_frame(run).set_index("metric").loc["workup_to_detection"]
    assert row["label"] == "Workup per detection (alerts per true alert)"
    assert row["value"] == run.record("workup_to_detection").value and row["ci95_lo"] <= \
        row["value"] <= row["ci95_hi"]
