"""Compare runs: DeLong against the structural-components definition, McNemar against
scipy's binomial test, Holm against statsmodels, paired differences equal to the difference of
the runs' own values, and the compare command."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import binomtest, norm
from statsmodels.stats.multitest import multipletests

from metrics_core import compare
from metrics_core.cli import main
from metrics_core.config import EvalConfig
from metrics_core.data.dataset import Dataset
from metrics_core.errors import InputError
from metrics_core.report import Evaluator
from tests.conftest import random_frames


def two_runs(seed=3, n_posts=60, noise=0.08):
    q, c = random_frames(n_posts=n_posts, seed=seed)
    rng = np.random.default_rng(seed + 100)
    q2, c2 = q.copy(), c.copy()
    q2["p_has_evidence"] = np.clip(q2["p_has_evidence"] + rng.normal(0, noise, len(q2)), 0, 1)
    c2["score"] = c2["score"] + rng.normal(0, 0.5, len(c2))
    return (q, c), (q2, c2)


@pytest.fixture(scope="module")
def runs():
    (q, c), (q2, c2) = two_runs()
    return [compare.Run("base", Dataset.from_frames(q, c)),
            compare.Run("tuned", Dataset.from_frames(q2, c2))]


def slow_delong(y, a, b):
    """DeLong's variance from its definition: psi(x, y) over every positive-negative pair."""
    y = np.asarray(y)
    out = []
    for s in (a, b):
        x, z = s[y == 1], s[y == 0]
        psi = (x[:, None] > z[None, :]) + 0.5 * (x[:, None] == z[None, :])
        out.append((psi.mean(), psi.mean(axis=1), psi.mean(axis=0)))
    m, n = int((y == 1).sum()), int((y == 0).sum())
    v10 = np.vstack([o[1] for o in out])
    v01 = np.vstack([o[2] for o in out])
    s = np.cov(v10) / m + np.cov(v01) / n
    var = s[0, 0] + s[1, 1] - 2 * s[0, 1]
    diff = out[1][0] - out[0][0]
    return diff, math.sqrt(var), 2 * norm.sf(abs(diff) / math.sqrt(var))


def test_delong_equals_the_definition_with_ties():
    rng = np.random.default_rng(5)
    y = (rng.random(200) < 0.3).astype(int)
    a = np.round(rng.random(200) + 0.3 * y, 1)
    b = np.round(a + rng.normal(0, 0.2, 200), 1)
    got = compare.delong(y, a, b)
    want = slow_delong(y, a, b)
    assert got == pytest.approx(want, rel=1e-9, abs=1e-12)


def test_mcnemar_matches_the_binomial_test_on_discordant_pairs():
    rng = np.random.default_rng(1)
    a = rng.random(60) < 0.5
    b = a.copy()
    b[:7] = ~b[:7]
    bb, cc, p, method = compare.mcnemar(a, b)
    assert bb + cc == 7 and method == "exact"
    assert p == pytest.approx(binomtest(min(bb, cc), bb + cc, 0.5).pvalue)
    big_a = rng.random(2000) < 0.5
    big_b = np.where(rng.random(2000) < 0.1, ~big_a, big_a)
    _, _, _, method = compare.mcnemar(big_a, big_b)
    assert method.startswith("chi-square")


def test_holm_matches_statsmodels():
    p = np.array([0.01, 0.04, 0.03, 0.2, np.nan, 0.005])
    got = compare.holm(p)
    ok = np.isfinite(p)
    want = multipletests(p[ok], method="holm")[1]
    assert np.allclose(got[ok], want) and np.isnan(got[~ok]).all()


def test_paired_differences_equal_the_difference_of_the_runs_values(runs):
    cfg = EvalConfig(bootstrap=300, seed=2)
    rows = compare.compare(runs, config=cfg, n_flips=500)
    a = Evaluator(runs[0].dataset).evaluate(cfg.replace(bootstrap=0))
    b = Evaluator(runs[1].dataset).evaluate(cfg.replace(bootstrap=0))
    overall = [r for r in rows if not r["subset"].startswith("criterion")]
    assert {r["metric"] for r in overall} >= {"auroc", "auprc", "sensitivity", "ndcg@10",
                                              "evidence_recall", "screening_sensitivity"}
    for r in overall:
        want = b.record(r["metric"]).value - a.record(r["metric"]).value
        assert r["difference"] == pytest.approx(want, abs=1e-12), r["metric"]
        if r["ci95"] is not None:
            assert r["ci95"][0] <= r["ci95"][1]
    per_criterion = [r for r in rows if r["subset"].startswith("criterion")]
    assert len(per_criterion) == 3 and all(r["p_adjusted"] is not None for r in per_criterion)


def test_paired_interval_is_narrower_than_the_unpaired_one(runs):
    cfg = EvalConfig(bootstrap=400, seed=4)
    rows = compare.compare(runs, config=cfg, n_flips=200)
    auroc = next(r for r in rows if r["metric"] == "auroc" and r["subset"] == "all_queries")
    width = auroc["ci95"][1] - auroc["ci95"][0]
    single = [Evaluator(r.dataset).evaluate(cfg).record("auroc").ci95 for r in runs]
    unpaired = math.hypot(*(hi - lo for lo, hi in single))
    assert width < unpaired


def test_runs_on_different_queries_are_an_error_naming_the_pairs():
    (q, c), (q2, c2) = two_runs()
    q2 = q2.iloc[3:]
    c2 = c2.merge(q2[["post_id", "criterion"]], on=["post_id", "criterion"])
    with pytest.raises(InputError, match="pairs of 'a' missing"):
        compare.load_runs([("a", q, c), ("b", q2, c2)])


def test_ablation_marks_the_best_run(runs):
    table = compare.ablation_table(runs, EvalConfig(bootstrap=0))
    assert list(table["run"]) == ["base", "tuned"]
    best = table.loc[table["auroc_best"], "auroc"].iloc[0]
    assert best == table["auroc"].max()
    assert "auroc_fold_mean" in table.columns


def test_compare_command(tmp_path):
    (q, c), (q2, c2) = two_runs()
    paths = {}
    for name, (qq, cc) in (("a", (q, c)), ("b", (q2, c2))):
        paths[name] = (tmp_path / f"{name}_q.csv", tmp_path / f"{name}_c.parquet")
        qq.to_csv(paths[name][0], index=False)
        cc.to_parquet(paths[name][1])
    out = tmp_path / "comparison.json"
    args = ["compare", "--out", str(out), "--bootstrap", "100", "--quiet"]
    for name, (qp, cp) in paths.items():
        args += ["--run", f"{name}={qp},{cp}"]
    assert main(args) == 0
    data = json.loads(out.read_text())
    first = data["comparisons"][0]
    assert set(first) >= {"metric", "reference", "run", "value_reference", "value_run",
                          "difference", "ci95", "test", "p_value", "p_adjusted", "subset"}
    assert pd.DataFrame(data["ablation"])["run"].tolist() == ["a", "b"]
    assert main(["compare", "--run", "a=" + str(paths["a"][0]), "--out", str(out)]) == 2


def _flip_evidence(q, c, index):
    """A copy of the run with query ``index``'s has_evidence flipped (its gold sentences
    cleared when it becomes negative, one added when it becomes positive)."""
    q, c = q.copy(), c.copy()
    post, crit = q.loc[index, ["post_id", "criterion"]]
    rows = (c["post_id"] == post) & (c["criterion"] == crit)
    if q.loc[index, "has_evidence"] == 1:
        q.loc[index, "has_evidence"] = 0
        c.loc[rows, "is_gold"] = 0
    else:
        q.loc[index, "has_evidence"] = 1
        c.loc[c.index[rows][0], "is_gold"] = 1
    if "n_gold" in q:
        q.loc[index, "n_gold"] = int(c.loc[rows, "is_gold"].sum())
    return q, c, post, crit


def test_runs_with_different_gold_labels_are_refused_naming_the_first_query(tmp_path,
                                                                            capsys):
    """The issue: one query's has_evidence flipped between two runs gave a "paired" AUROC
    difference that came from the label. Now refused, naming the query and the runs."""
    (q, c), (q2, c2) = two_runs()
    q2, c2, post, crit = _flip_evidence(q2, c2, 7)
    with pytest.raises(InputError, match="different gold labels") as err:
        compare.load_runs([("run0", q, c), ("run1", q2, c2)])
    text = err.value.render()
    assert "'run0' and 'run1'" in text
    assert f"post_id {post!r}, criterion {crit!r}: has_evidence" in text
    assert "(1 queries differ in has_evidence)" in text
    paths = []
    for name, (qq, cc) in (("run0", (q, c)), ("run1", (q2, c2))):
        qp, cp = tmp_path / f"{name}_q.csv", tmp_path / f"{name}_c.csv"
        qq.to_csv(qp, index=False)
        cc.to_csv(cp, index=False)
        paths += ["--run", f"{name}={qp},{cp}"]
    out = tmp_path / "comparison.json"
    assert main(["compare", *paths, "--out", str(out), "--quiet"]) == 2
    assert "different gold labels" in capsys.readouterr().err and not out.exists()


def test_runs_with_different_gold_sentences_are_refused():
    (q, c), (q2, c2) = two_runs()
    gold = c2.index[c2["is_gold"] == 1]
    first = c2.loc[gold[0]]
    same_query = c2.index[(c2["post_id"] == first["post_id"])
                          & (c2["criterion"] == first["criterion"]) & (c2["is_gold"] == 0)]
    c2 = c2.copy()
    c2.loc[gold[0], "is_gold"], c2.loc[same_query[0], "is_gold"] = 0, 1  # same count
    q = q.drop(columns=["n_gold"], errors="ignore")
    q2 = q2.drop(columns=["n_gold"], errors="ignore")
    with pytest.raises(InputError, match=r"gold sentences \[.*\] in 'a', \[.*\] in 'b'") as err:
        compare.load_runs([("a", q, c), ("b", q2, c2)])
    assert f"post_id {first['post_id']!r}, criterion {first['criterion']!r}" in \
        err.value.render()


def test_the_same_gold_in_another_candidate_order_is_accepted(runs):
    compare.check_runs(runs)  # the second run's scores reorder every query's candidates


def test_duplicate_run_names_are_refused():
    (q, c), _ = two_runs()
    with pytest.raises(InputError, match=r"every run needs its own name.*'run0'"):
        compare.load_runs([("run0", q, c), ("run0", q, c)])
