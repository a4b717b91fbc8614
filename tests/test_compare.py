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
    with pytest.raises(InputError, match=r"3 pairs of 'a' missing from 'b', e\.g\. "):
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


def _one_positive_in_c1(q, c):
    """The runs' frames with criterion C1 left with one query with evidence (the others'
    gold cleared): its AUROC is defined, DeLong's variance is not."""
    q, c = q.copy(), c.copy()
    positives = q.index[(q["criterion"] == "C1") & (q["has_evidence"] == 1)]
    cleared = q.loc[positives[1:], ["post_id", "criterion"]]
    q.loc[positives[1:], ["has_evidence", "n_gold"]] = 0
    rows = c.merge(cleared, on=["post_id", "criterion"], how="left", indicator=True)
    c.loc[(rows["_merge"] == "both").to_numpy(), "is_gold"] = 0
    return q, c


def test_a_criterion_with_one_positive_has_its_difference_without_a_delong_test():
    """One query with evidence: both AUROCs are defined (scikit-learn's), so is their
    difference; DeLong's interval and p-value need two of each class and are missing with a
    note saying so (the difference was left undefined, NaN)."""
    from sklearn.metrics import roc_auc_score

    (q, c), (q2, c2) = two_runs(seed=11)
    frames = [_one_positive_in_c1(q, c), _one_positive_in_c1(q2, c2)]
    runs = [compare.Run(name, Dataset.from_frames(*f))
            for name, f in zip(("base", "tuned"), frames, strict=True)]
    rows = compare.compare(runs, config=EvalConfig(bootstrap=0), n_flips=100)
    c1 = next(r for r in rows if r["subset"] == "criterion C1")
    sub = [f[0][f[0]["criterion"] == "C1"] for f in frames]
    want = [roc_auc_score(s["has_evidence"], s["p_has_evidence"]) for s in sub]
    assert sub[0]["has_evidence"].sum() == 1
    assert c1["value_reference"] == pytest.approx(want[0])
    assert c1["value_run"] == pytest.approx(want[1])
    assert c1["difference"] == pytest.approx(want[1] - want[0], abs=1e-12)
    assert c1["ci95"] is None and c1["p_value"] is None and c1["p_adjusted"] is None
    assert "needs at least two queries with and two without evidence" in c1["note"]
    assert (c1["n"], c1["n_positive"]) == (len(sub[0]), 1)
    others = [r for r in rows if r["subset"] in ("criterion C2", "criterion C3")]
    assert all(r["p_adjusted"] is not None and r["note"] is None for r in others)
    assert all(r["ci_method"] == "DeLong (normal approximation)" for r in others)


def test_every_difference_says_how_many_paired_queries_it_is_computed_on(runs):
    cfg = EvalConfig(bootstrap=50, seed=1)
    rows = compare.compare(runs, config=cfg, n_flips=100)
    ds = runs[0].dataset
    n_pos = int(ds.y.sum())
    positives = int(((ds.y == 1) & (ds.n_gold > 0)).sum())  # positives_only protocols
    want = {"auroc": (ds.n_queries, n_pos), "brier": (ds.n_queries, n_pos),
            "sensitivity": (n_pos, n_pos), "specificity": (ds.n_queries - n_pos, 0),
            "screening_sensitivity": (n_pos, n_pos), "ndcg@10": (positives, positives),
            "evidence_recall": (positives, positives)}
    got = {r["metric"]: (r["n"], r["n_positive"]) for r in rows
           if not r["subset"].startswith("criterion")}
    assert {k: got[k] for k in want} == want
    assert all(r["ci_method"] == "paired percentile bootstrap, 50 resamples of queries"
               for r in rows if not r["subset"].startswith("criterion"))
    flips = next(r for r in rows if r["metric"] == "ndcg@10")
    assert flips["test"] == "paired sign-flip randomisation (100 flips)"


def test_no_paired_query_gives_no_p_value_and_says_why():
    """Runs without a query with evidence: McNemar on no pair is not p = 1; the sensitivity
    row has n = 0, no difference, no p-value and a note."""
    q, c = random_frames(n_posts=30, seed=2, positive_rate=0.0)
    q2 = q.copy()
    q2["p_has_evidence"] = np.clip(q2["p_has_evidence"] + 0.05, 0, 1)
    runs = [compare.Run("a", Dataset.from_frames(q, c)),
            compare.Run("b", Dataset.from_frames(q2, c))]
    rows = compare.compare(runs, config=EvalConfig(bootstrap=0), n_flips=100)
    sens = next(r for r in rows if r["metric"] == "sensitivity")
    assert sens["n"] == 0 and sens["difference"] is None and sens["p_value"] is None
    assert sens["note"].startswith("reference: undefined")
    auroc = next(r for r in rows if r["metric"] == "auroc" and r["subset"] == "all_queries")
    assert auroc["difference"] is None and "only one class" in auroc["note"]
    assert auroc["value_reference"] is None and auroc["value_run"] is None  # not 0.5
    auprc = next(r for r in rows if r["metric"] == "auprc")
    assert auprc["value_reference"] is None and auprc["difference"] is None  # not 0.0
    table = compare.ablation_table(runs, EvalConfig(bootstrap=0))
    assert table["auroc"].isna().all() and table["auprc"].isna().all()
    assert "auroc_best" not in table.columns


def test_compare_command_takes_the_dashboards_settings(tmp_path, capsys):
    """--settings: the comparison at the settings file's thresholds (as the dashboard's
    Compare runs page uses the sidebar's), its seed, and how each threshold was chosen, in
    comparison.json and on the terminal."""
    (q, c), (q2, c2) = two_runs()
    paths = []
    for name, (qq, cc) in (("a", (q, c)), ("b", (q2, c2))):
        paths.append((tmp_path / f"{name}_q.csv", tmp_path / f"{name}_c.parquet"))
        qq.to_csv(paths[-1][0], index=False)
        cc.to_parquet(paths[-1][1])
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"config": {"tau_neg": 0.25, "tau_pos": 0.7,
                                               "threshold": 0.4, "seed": 7},
                                    "provenance": {"tau_neg": "exploratory"}}))
    out = tmp_path / "comparison.json"
    assert main(["compare", "--run", f"a={paths[0][0]},{paths[0][1]}",
                 "--run", f"b={paths[1][0]},{paths[1][1]}", "--settings", str(settings),
                 "--bootstrap", "50", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "τ_neg 0.25 (exploratory); τ_pos 0.7 (pre-specified); τ 0.4" in printed
    data = json.loads(out.read_text())
    assert (data["config"]["tau_neg"], data["config"]["threshold"], data["config"]["seed"]) \
        == (0.25, 0.4, 7)
    assert data["provenance"]["tau_neg"] == "exploratory"
    assert data["provenance"]["tau_pos"] == "pre-specified"
    runs = [compare.Run("a", Dataset.from_frames(q, c)),
            compare.Run("b", Dataset.from_frames(q2, c2))]
    want = compare.compare(runs, config=EvalConfig(tau_neg=0.25, tau_pos=0.7, threshold=0.4,
                                                   seed=7, bootstrap=50))
    got = {(r["metric"], r["subset"]): r for r in data["comparisons"]}
    for w in want:
        g = got[(w["metric"], w["subset"])]
        assert g["difference"] == pytest.approx(w["difference"], abs=1e-12)
        assert g["ci95"] == pytest.approx(w["ci95"])
    assert ("sensitivity", "all_queries @ τ=0.4") in got
    settings.write_text(json.dumps({"config": {"criterion_gates": [["Z9", 0.1, 0.5]]}}))
    assert main(["compare", "--run", f"a={paths[0][0]},{paths[0][1]}",
                 "--run", f"b={paths[1][0]},{paths[1][1]}", "--settings", str(settings),
                 "--out", str(out)]) == 2
    assert "criterion_gates names criteria the data does not have: 'Z9'" in \
        capsys.readouterr().err


def test_a_bad_value_in_a_long_table_of_runs_names_the_file_the_run_and_its_line():
    """One table with a ``run`` column: an error in the second run's rows names the file,
    the run and the row of the file (it named row 2 of a table called "queries": the row's
    place among that run's rows)."""
    (q, _), (q2, _) = two_runs()
    long = pd.concat([q.assign(run="a"), q2.assign(run="b")], ignore_index=True)
    long.loc[len(q) + 1, "p_has_evidence"] = 1.5
    with pytest.raises(InputError) as info:
        compare.split_runs(long, source="runs.csv")
    text = info.value.render()
    assert text.startswith("runs.csv: column 'p_has_evidence': values must be within [0, 1]")
    assert f"(row {len(q) + 2}: value 1.5); run 'b'" in text
    with pytest.raises(InputError, match=r"runs\.csv: column 'run': required column is "
                                         r"missing.*upload one file per run"):
        compare.split_runs(q, source="runs.csv")


def test_identical_runs_tie_in_the_ablation_table_and_differ_by_zero(runs):
    """A run identical to the reference: every difference is exactly 0 with a [0, 0]
    interval and p = 1, and the ablation table marks both runs best, not the first one."""
    twin = compare.Run("twin", runs[0].dataset)
    rows = compare.compare([runs[0], twin], config=EvalConfig(bootstrap=40), n_flips=100)
    for r in rows:
        if r["difference"] is None:
            continue
        assert r["difference"] == 0.0, r
        if r["ci95"] is not None:
            assert r["ci95"] == [0.0, 0.0], r
        if r["p_value"] is not None:
            assert r["p_value"] == 1.0, r
    table = compare.ablation_table([runs[0], twin], EvalConfig(bootstrap=0))
    marks = [c for c in table.columns if c.endswith("_best")]
    assert {"auroc_best", "ece_best", "ndcg@10_best"} <= set(marks)
    for column in marks:
        assert list(table[column]) == [True, True], column
