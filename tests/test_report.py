"""The one computation (report.Evaluator): records, tables, checks and JSON (contract §9-§11).

Sources: "contract §N" is section N of docs/CONTRACT.md; "seed 000" is
docs/seeds/000-metric-specification.txt.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from sklearn.metrics import average_precision_score, brier_score_loss, roc_auc_score

from metrics_core.config import EvalConfig
from metrics_core.data.dataset import Dataset
from metrics_core.metrics._reference import naive_ranking_per_query
from metrics_core.metrics.gate import assign_states, gate_summary
from metrics_core.report import Evaluator, evaluate
from tests.conftest import random_frames

CONTRACT_NAMES = ("auroc", "auprc", "tpr@fpr=0.05", "threshold@fpr=0.05", "recall@10", "ndcg@10",
                  "map@10", "mrr", "mrr@10", "hit@5", "precision@1", "ece", "mce", "brier",
                  "screening_sensitivity", "screening_fn_per_1000", "alert_precision",
                  "alert_rate_per_1000", "neg_rate", "uncertain_rate", "pos_rate",
                  "evidence_recall", "evidence_precision", "mean_k", "median_k", "p90_k",
                  "workload_per_1000", "exact_match", "hamming_score", "hamming_loss",
                  "micro_f1", "samples_f1", "macro_f1", "weighted_f1", "sensitivity",
                  "specificity", "fpr", "precision", "npv", "f1", "mcc", "balanced_accuracy",
                  "coverage", "abstain_rate", "slip_rate", "false_flag_rate")


@pytest.fixture(scope="module")
def dataset():
    q, c = random_frames(n_posts=60, seed=3)
    return Dataset.from_frames(q, c)


@pytest.fixture(scope="module")
def evaluation(dataset):
    return Evaluator(dataset).evaluate(EvalConfig(bootstrap=200, seed=1))


def test_every_contract_name_is_reported(evaluation):
    names = {r.name for r in evaluation.records}
    missing = [n for n in CONTRACT_NAMES if n not in names]
    assert not missing
    assert len(names) == len(evaluation.records), "record names are unique"


def test_classification_records_equal_sklearn(dataset, evaluation):
    y, p = dataset.y, dataset.p
    assert evaluation.record("auroc").value == pytest.approx(roc_auc_score(y, p), abs=1e-12)
    assert evaluation.record("auprc").value == pytest.approx(
        average_precision_score(y, p), abs=1e-12)
    assert evaluation.record("brier").value == pytest.approx(brier_score_loss(y, p), abs=1e-12)
    assert evaluation.record("auroc").subset == "all_queries"
    assert evaluation.record("auroc").n == dataset.n_queries


def test_ranking_records_are_positives_only_means_of_the_seed_loop(dataset, evaluation):
    naive = naive_ranking_per_query(dataset)
    pos = dataset.y == 1
    for name in ("recall@10", "ndcg@10", "map@10", "mrr", "precision@3"):
        r = evaluation.record(name)
        assert r.subset == "positives_only"
        assert r.n == int(pos.sum())
        assert r.value == pytest.approx(naive[name][pos].mean(), abs=1e-12)


def test_gate_records_match_hand_counts(dataset, evaluation):
    cfg = evaluation.config
    y, p = dataset.y, dataset.p
    neg = p < cfg.tau_neg
    alert = p >= cfg.tau_pos
    n_pos = int(y.sum())
    assert evaluation.record("screening_sensitivity").value == pytest.approx(
        1 - (neg & (y == 1)).sum() / n_pos)
    assert evaluation.record("screening_fn_per_1000").value == pytest.approx(
        (neg & (y == 1)).sum() / y.size * 1000)
    assert evaluation.record("alert_precision").value == pytest.approx(
        (alert & (y == 1)).sum() / alert.sum())
    lo, hi = evaluation.record("alert_precision").ci95
    assert lo < evaluation.record("alert_precision").value < hi


def test_per_criterion_keyed_by_names_in_data(evaluation, dataset):
    table = evaluation.per_criterion
    assert list(table.index[:3]) == ["C1", "C2", "C3"]
    assert list(table.index[3:]) == ["micro", "macro"]
    for c in ("C1", "C2", "C3"):
        m = dataset.criterion == c
        assert table.loc[c, "n"] == m.sum()
        assert table.loc[c, "auroc"] == pytest.approx(roc_auc_score(dataset.y[m], dataset.p[m]))
    assert table.loc["micro", "auroc"] == pytest.approx(evaluation.record("auroc").value)
    assert table.loc["macro", "auroc"] == pytest.approx(table.loc[["C1", "C2", "C3"],
                                                                  "auroc"].mean())


def test_per_fold_mean_and_std_ddof0(evaluation, dataset):
    table = evaluation.per_fold
    folds = [str(f) for f in sorted(set(dataset.fold))]
    values = table.loc[folds, "auroc"].astype(float)
    assert table.loc["mean", "auroc"] == pytest.approx(values.mean())
    assert table.loc["std", "auroc"] == pytest.approx(values.std(ddof=0))


def test_consistency_checks_pass_on_clean_data(evaluation):
    failed = [c for c in evaluation.checks if c.passed is False]
    assert not failed, failed
    assert any(c.name == "TP + TN + FP + FN = N" and c.passed for c in evaluation.checks)


def test_fold_leak_fails_the_check():
    q, c = random_frames(n_posts=20, seed=5)
    first = q["post_id"] == "p000"
    q.loc[first & (q["criterion"] == "C2"), "fold"] = 4
    ev = evaluate(Dataset.from_frames(q, c), EvalConfig(bootstrap=0))
    check = next(c for c in ev.checks if c.name == "folds post-disjoint")
    assert check.passed is False
    assert "p000" in check.detail


def test_one_class_auroc_is_flagged_undefined():
    q, c = random_frames(n_posts=10, seed=2)
    q["has_evidence"] = 0
    q["n_gold"] = 0
    c["is_gold"] = 0
    ev = evaluate(Dataset.from_frames(q, c), EvalConfig(bootstrap=0))
    auroc = ev.record("auroc")
    assert auroc.defined is False and auroc.value == 0.5  # seed 000 convention, flagged
    assert ev.record("auprc").defined is False
    assert ev.record("screening_sensitivity").defined is False
    assert ev.record("recall@10").defined is False and ev.record("recall@10").n == 0


def test_json_is_strict_and_complete(evaluation):
    text = evaluation.to_json()
    data = json.loads(text)  # strict JSON: NaN is written as null
    assert data["config"]["tau_neg"] == evaluation.config.tau_neg
    names = {m["name"] for m in data["metrics"]}
    assert set(CONTRACT_NAMES) <= names
    rec = next(m for m in data["metrics"] if m["name"] == "auroc")
    assert set(rec) >= {"name", "value", "subset", "n", "ci95", "defined", "interpretation"}
    assert rec["ci95"][0] <= rec["value"] <= rec["ci95"][1]
    assert [r["criterion"] for r in data["per_criterion"]][:3] == ["C1", "C2", "C3"]
    assert all("passed" in c for c in data["consistency_checks"])


def test_bootstrap_is_seeded_and_unit_selectable(dataset):
    ev = Evaluator(dataset)
    a = ev.evaluate(EvalConfig(bootstrap=300, seed=7)).record("ndcg@10").ci95
    b = Evaluator(dataset).evaluate(EvalConfig(bootstrap=300, seed=7)).record("ndcg@10").ci95
    c = ev.evaluate(EvalConfig(bootstrap=300, seed=8)).record("ndcg@10").ci95
    d = ev.evaluate(EvalConfig(bootstrap=300, seed=7, bootstrap_unit="post")).record(
        "ndcg@10").ci95
    assert a == b
    assert a != c and a != d
    assert ev.evaluate(EvalConfig(bootstrap=0)).record("ndcg@10").ci95 is None


def test_mean_ci_equals_a_literal_resampling_loop(dataset):
    from metrics_core.metrics.uncertainty import Bootstrap

    cfg = EvalConfig(bootstrap=250, seed=11)
    ev = Evaluator(dataset).evaluate(cfg)
    values = naive_ranking_per_query(dataset)["mrr"]
    pos = dataset.y == 1
    draws = []
    for counts in Bootstrap(dataset.n_queries, n_resamples=250, seed=11).count_batches():
        for row in counts:
            idx = np.repeat(np.arange(dataset.n_queries), row)
            idx = idx[pos[idx]]
            draws.append(values[idx].mean())
    lo, hi = np.percentile(draws, [2.5, 97.5])
    assert ev.record("mrr").ci95 == pytest.approx((lo, hi), abs=1e-12)


def test_gate_grid_matches_gate_summary(dataset):
    ev = Evaluator(dataset)
    cfg = EvalConfig(bootstrap=0)
    grid = ev.gate_grid(cfg, [0.05, 0.1, 0.3], [0.3, 0.6, 0.9])
    assert (grid["tau_neg"] <= grid["tau_pos"]).all()
    assert len(grid) == 9 - 0  # every pair valid here (0.3 <= 0.3 allowed)
    for row in grid.itertuples():
        g = gate_summary(dataset.y, assign_states(dataset.p, tau_neg=row.tau_neg,
                                                  tau_pos=row.tau_pos))
        assert row.screening_sensitivity == pytest.approx(g.screening_sensitivity)
        if math.isnan(g.alert_precision):
            assert math.isnan(row.alert_precision)
        else:
            assert row.alert_precision == pytest.approx(g.alert_precision)
        assert row.uncertain_rate == pytest.approx(g.uncertain_rate)


def test_gamma_sweep_current_row_matches_evaluate(dataset):
    ev = Evaluator(dataset)
    cfg = EvalConfig(bootstrap=0, gamma=0.85)
    sweep = ev.gamma_sweep(cfg, [0.7, 0.8, 0.85, 0.9, 0.95])
    row = sweep[sweep["current"]].iloc[0]
    full = ev.evaluate(cfg)
    assert row["evidence_recall"] == pytest.approx(full.record("evidence_recall").value)
    assert row["mean_k"] == pytest.approx(full.record("mean_k").value)
    assert sweep["mean_k"].is_monotonic_increasing


def test_case_review_lists_exactly_the_missed_positives(dataset):
    ev = Evaluator(dataset)
    cfg = EvalConfig(bootstrap=0, tau_neg=0.3)
    cases = ev.case_review(cfg)
    expected = int(((dataset.p < 0.3) & (dataset.y == 1)).sum())
    assert len(cases["missed_positives"]) == expected
    assert (cases["missed_positives"]["state"] == "NEG").all()
    row = cases["missed_positives"].iloc[0]
    sentences = ev.sentences(cfg, row["post_id"], row["criterion"])
    assert not sentences["selected"].any()  # NEG selects nothing under the gate-aware policy
    assert sentences["rank"].tolist() == list(range(1, len(sentences) + 1))


def test_setting_changes_reuse_data_only_parts(dataset):
    ev = Evaluator(dataset)
    ev.evaluate(EvalConfig(bootstrap=0))
    cached = set(ev._cache)
    ev.evaluate(EvalConfig(bootstrap=0, tau_neg=0.2, gamma=0.8, threshold=0.4))
    assert set(ev._cache) == cached  # nothing data-only was recomputed under a new key


def test_operating_point_cis_equal_a_literal_resampling_loop(dataset):
    """F1 / MCC / balanced accuracy at τ (scikit-learn on each resample), the abstention F1 of
    each class, and K's median / P90 / workload per 1,000 (numpy on each resample)."""
    from sklearn.metrics import balanced_accuracy_score, f1_score, matthews_corrcoef

    from metrics_core.metrics.gate import states_to_prediction
    from metrics_core.metrics.uncertainty import Bootstrap

    cfg = EvalConfig(bootstrap=120, seed=5, threshold=0.4)
    run = Evaluator(dataset).evaluate(cfg)
    y, pred = dataset.y, (dataset.p >= 0.4).astype(int)
    three = states_to_prediction(run.states)
    k = run.k
    draws = {name: [] for name in ("f1", "mcc", "balanced_accuracy", "f1_pos", "f1_neg",
                                   "median_k", "p90_k", "workload_per_1000")}
    for counts in Bootstrap(dataset.n_queries, n_resamples=120, seed=5).count_batches():
        for row in counts:
            idx = np.repeat(np.arange(dataset.n_queries), row)
            draws["f1"].append(f1_score(y[idx], pred[idx]))
            draws["mcc"].append(matthews_corrcoef(y[idx], pred[idx]))
            draws["balanced_accuracy"].append(balanced_accuracy_score(y[idx], pred[idx]))
            answered = idx[three[idx] != -1]
            draws["f1_pos"].append(f1_score(y[answered], three[answered]))
            draws["f1_neg"].append(f1_score(1 - y[answered], 1 - three[answered]))
            draws["median_k"].append(np.median(k[idx]))
            draws["p90_k"].append(np.percentile(k[idx], 90))
            draws["workload_per_1000"].append(1000 * k[idx].mean())
    for name, values in draws.items():
        record = run.record(name)
        assert record.ci_method.startswith("bootstrap (query, 120")
        assert record.ci95 == pytest.approx(tuple(np.percentile(values, [2.5, 97.5])),
                                            abs=1e-9), name


def test_multilabel_cis_resample_posts(dataset):
    from metrics_core.evaluation.sections import multilabel_values
    from metrics_core.metrics.multilabel import MULTILABEL_NAMES, multilabel_metrics
    from metrics_core.metrics.uncertainty import Bootstrap

    cfg = EvalConfig(bootstrap=80, seed=3)
    ev = Evaluator(dataset)
    run = ev.evaluate(cfg)
    _, n_posts, cells = multilabel_values(dataset, cfg, run.states)
    gold, predicted, mask = (c.toarray() for c in cells)
    draws = {name: [] for name in MULTILABEL_NAMES}
    for counts in Bootstrap(n_posts, n_resamples=80, seed=3).count_batches():
        for row in counts:
            idx = np.repeat(np.arange(n_posts), row)
            values = multilabel_metrics(gold[idx], predicted[idx], mask[idx])
            for name in MULTILABEL_NAMES:
                draws[name].append(values[name])
    for name in MULTILABEL_NAMES[1:]:
        record = run.record(name)
        assert record.ci_method == "bootstrap (post, 80 resamples, seed 3)"
        assert record.ci95 == pytest.approx(tuple(np.percentile(draws[name], [2.5, 97.5])),
                                            abs=1e-9), name
