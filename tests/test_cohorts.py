"""Cohorts (contract §9): cohort columns, per-cohort metrics, disparities, weak segments.

References: scikit-learn and fairlearn's MetricFrame on each cohort's rows, a literal
resampling loop (every resample's rows materialised and the metrics recomputed by
scikit-learn), statsmodels' Holm.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm
from sklearn.metrics import brier_score_loss, precision_score, recall_score, roc_auc_score

from metrics_core.config import EvalConfig
from metrics_core.demo import make_synthetic
from metrics_core.errors import InputError
from metrics_core.evaluation.cohorts import (
    Grouping,
    bootstrap_p_values,
    cohort_tables,
    holm,
    intersect,
)
from metrics_core.evaluation.evaluator import Evaluator
from metrics_core.inputs.cohort_columns import cohort_attributes
from metrics_core.inputs.loading import load
from metrics_core.metrics.multilabel import MULTILABEL_NAMES
from metrics_core.metrics.uncertainty import Bootstrap


def _data(n_posts=60, seed=3, n_criteria=4, planted=0.0):
    q, c = make_synthetic(n_posts, n_criteria=n_criteria, seed=seed, with_text=False)
    rng = np.random.default_rng(seed + 100)
    posts = q["post_id"].unique()
    site = dict(zip(posts, rng.choice(["A", "B", "C"], posts.size), strict=True))
    sex = dict(zip(posts, rng.choice(["F", "M"], posts.size), strict=True))
    age = dict(zip(posts, rng.integers(18, 90, posts.size), strict=True))
    q["site"] = q["post_id"].map(site)
    q["sex"] = q["post_id"].map(sex)
    q["age"] = q["post_id"].map(age)
    if planted:  # site C's probabilities pushed towards 0.5: a worse model there
        worse = q["site"] == "C"
        q.loc[worse, "p_has_evidence"] = (1 - planted) * q.loc[worse, "p_has_evidence"] \
            + planted * rng.random(int(worse.sum()))
    return q, c


def _run(q, c, declared=("site", "sex"), **kw):
    loaded = load(q, c)
    attrs = cohort_attributes(q, loaded, list(declared), **kw)
    return loaded, attrs


# ---------------------------------------------------------------- cohort columns
def test_missing_values_are_their_own_cohort_never_dropped():
    q, c = _data()
    q.loc[q.index[:8], "site"] = None
    q.loc[q.index[8:12], "site"] = ""
    _, attrs = _run(q, c, ["site"])
    site = attrs["site"]
    assert site.values == ("missing", "A", "B", "C")
    assert site.counts()["missing"] == 12
    assert sum(site.counts().values()) == len(q)


def test_too_many_values_are_refused_naming_file_column_count_and_limit():
    q, c = _data()
    q["ward"] = [f"w{i % 25}" for i in range(len(q))]
    with pytest.raises(InputError) as err:
        cohort_attributes(q, load(q, c), ["ward"], name="queries.csv")
    text = str(err.value)
    assert "queries.csv" in text and "ward" in text and "25" in text and "limit of 20" in text


def test_absent_column_and_input_column_are_refused():
    q, c = _data()
    loaded = load(q, c)
    with pytest.raises(InputError, match="cohort column not found"):
        cohort_attributes(q, loaded, ["site*region"])
    with pytest.raises(InputError, match="evaluation reads"):
        cohort_attributes(q, loaded, ["fold"])


def test_numeric_columns_binned_into_quantiles_or_at_edges():
    q, c = _data()
    _, attrs = _run(q, c, ["age"])
    age = attrs["age"]  # many distinct ages: quartiles by default
    assert len(age.values) == 4 and age.binned == "quantiles (4)"
    counts = np.bincount(age.codes)
    assert counts.min() > 0.15 * len(q)
    _, attrs = _run(q, c, ["age"], bins={"age": "40,65"})
    age = attrs["age"]
    assert age.values == ("< 40", "[40, 65)", "≥ 65")
    ages = q["age"].to_numpy()  # load keeps the input's (canonical) order here
    expected = np.where(ages < 40, 0, np.where(ages < 65, 1, 2))
    assert age.codes.tolist() == expected.tolist()


def test_intersections_name_both_values():
    q, c = _data()
    _, attrs = _run(q, c, ["site", "site*sex"])
    both = attrs["site*sex"]
    assert both.values[0] == "A*F" and len(both.values) == 6
    labels = np.array(both.values, dtype=object)[both.codes]
    assert (labels == (q["site"] + "*" + q["sex"]).to_numpy()).all()
    g = intersect(Grouping.of(attrs["site"]), Grouping.of(_run(q, c, ["sex"])[1]["sex"]))
    assert g.values == both.values and (g.codes == both.codes).all()


def test_long_table_value_must_be_constant_within_a_query():
    q, c = _data(n_posts=5)
    long = c.merge(q, on=["post_id", "criterion"])
    loaded = load(long)
    attrs = cohort_attributes(long, loaded, ["site"])
    assert attrs["site"].codes.size == loaded.dataset.n_queries
    long.loc[long.index[1], "site"] = "Z" if long.loc[long.index[0], "site"] != "Z" else "Y"
    with pytest.raises(InputError, match="differs between the rows of one query"):
        cohort_attributes(long, load(long), ["site"])


# --------------------------------------------------------------- per-cohort values
def _tables(q, c, declared=("site", "sex"), cfg=None, **kw):
    loaded, attrs = _run(q, c, declared)
    ev = Evaluator(loaded.dataset)
    cfg = cfg or EvalConfig(bootstrap=0)
    inter = ev.intermediate(cfg)
    return ev, inter, attrs, cohort_tables(ev, inter, list(attrs.values()), **kw)


def _cohort_table(q, c, columns, resamples, seed, *, of=None, options=None, **kw):
    """The cohort tables of ``of`` (default: the first of ``columns``, the cohort columns
    declared) on ``resamples`` resamples of posts drawn with ``seed`` (the bootstrap's counts
    drawn beforehand, as a run does; ``EvalConfig(bootstrap=resamples, seed=seed,
    **options)``), no weak-segment search unless ``weak=True`` is given. A namespace: ``ev``,
    ``inter``, ``cfg``, ``attrs``, ``counts``, ``result`` (:func:`cohort_tables`'), ``table``
    (its cohorts table) and ``tables(*names, **kw)`` (the tables of other columns, on the
    same resamples)."""
    from types import SimpleNamespace

    cfg = EvalConfig(bootstrap=resamples, seed=seed, **(options or {}))
    loaded, attrs = _run(q, c, list(columns))
    ev = Evaluator(loaded.dataset)
    inter = ev.intermediate(cfg)
    counts = Bootstrap(int(ev.ds.posts.size), n_resamples=resamples, seed=seed).counts()

    def tables(*names, **more):
        return cohort_tables(ev, inter, [attrs[n] for n in names], counts=counts,
                             **({"weak": False} | more))

    result = tables(*(of or columns[:1]), **kw)
    return SimpleNamespace(ev=ev, inter=inter, cfg=cfg, attrs=attrs, counts=counts,
                           result=result, table=result.cohorts, tables=tables)


def _value(table, column, value, metric, field="estimate"):
    row = table[(table["column"] == column) & (table["value"] == value)
                & (table["metric"] == metric)]
    assert len(row) == 1, (column, value, metric)
    return row.iloc[0][field]


def test_per_cohort_values_equal_scikit_learn_and_fairlearn_on_the_cohorts_rows():
    from fairlearn.metrics import MetricFrame

    q, c = _data(n_posts=80)
    cfg = EvalConfig(bootstrap=0)
    ev, inter, attrs, result = _tables(q, c, cfg=cfg)
    ds = ev.ds
    table = result.cohorts
    site = attrs["site"]
    labels = np.array(site.values, dtype=object)[site.codes]
    pred = (ds.p >= cfg.threshold).astype(int)
    frame = MetricFrame(metrics={"sensitivity": recall_score, "precision": precision_score},
                        y_true=ds.y, y_pred=pred, sensitive_features=labels)
    for value in site.values:
        m = labels == value
        assert _value(table, "site", value, "auroc") == pytest.approx(
            roc_auc_score(ds.y[m], ds.p[m]), abs=1e-12)
        assert _value(table, "site", value, "brier") == pytest.approx(
            brier_score_loss(ds.y[m], ds.p[m]), abs=1e-12)
        assert _value(table, "site", value, "sensitivity") == pytest.approx(
            frame.by_group.loc[value, "sensitivity"], abs=1e-12)
        assert _value(table, "site", value, "precision") == pytest.approx(
            frame.by_group.loc[value, "precision"], abs=1e-12)
        specificity = recall_score(1 - ds.y[m], 1 - pred[m])
        assert _value(table, "site", value, "specificity") == pytest.approx(specificity)
        screen = (inter.states[m] != 0).astype(int)
        assert _value(table, "site", value, "screening_sensitivity") == pytest.approx(
            recall_score(ds.y[m], screen))
        assert _value(table, "site", value, "auroc", "n") == m.sum()
        assert _value(table, "site", value, "auroc", "n_positive") == ds.y[m].sum()
        rest = ~m
        assert _value(table, "site", value, "auroc", "rest_estimate") == pytest.approx(
            roc_auc_score(ds.y[rest], ds.p[rest]), abs=1e-12)
        # every per-group metric of the registry is there, e.g. the calibration slope
        assert np.isfinite(_value(table, "site", value, "calibration_slope"))


def test_undefined_stays_undefined_and_small_cells_are_flagged():
    q, c = _data(n_posts=40)
    q.loc[q["site"] == "C", "has_evidence"] = 0  # no positives in site C: AUROC undefined
    q.loc[q["site"] == "C", "n_gold"] = 0
    c = c.copy()
    c.loc[c["post_id"].isin(q.loc[q["site"] == "C", "post_id"]), "is_gold"] = 0
    _, _, _, result = _tables(q, c)
    table = result.cohorts
    row = table[(table["value"] == "C") & (table["metric"] == "auroc")].iloc[0]
    assert not row["defined"]
    assert pd.isna(row["estimate"]) and pd.isna(row["difference"]) and pd.isna(row["p_value"])
    assert bool(row["small"])  # no positives: a small cell


# -------------------------------------------------------- intervals and p-values
def test_differences_intervals_and_p_values_match_a_literal_resampling_loop():
    q, c = _data(n_posts=30, n_criteria=3, seed=7)
    setup = _cohort_table(q, c, ["site"], 120, 4)
    ev, cfg, attrs, counts, result = setup.ev, setup.cfg, setup.attrs, setup.counts, setup.result
    table = result.cohorts
    ds = ev.ds
    site = attrs["site"]
    pred = (ds.p >= cfg.threshold).astype(int)
    for value_index, value in enumerate(site.values):
        diffs = {"auroc": [], "sensitivity": [], "brier": []}
        cohort_auroc = []
        for r in range(counts.shape[0]):
            rows = np.repeat(np.arange(ds.n_queries), counts[r][ds.post_code])
            y, p, pr = ds.y[rows], ds.p[rows], pred[rows]
            m = site.codes[rows] == value_index

            def auroc(mask, y=y, p=p):
                return roc_auc_score(y[mask], p[mask]) if 0 < y[mask].sum() < mask.sum() \
                    else np.nan

            def sens(mask, y=y, pr=pr):
                return recall_score(y[mask], pr[mask]) if y[mask].sum() else np.nan

            a = auroc(m)
            cohort_auroc.append(a)
            diffs["auroc"].append(a - auroc(~m))
            diffs["sensitivity"].append(sens(m) - sens(~m))
            diffs["brier"].append(np.mean((p[m] - y[m]) ** 2) - np.mean((p[~m] - y[~m]) ** 2))
        for metric, values in diffs.items():
            values = np.array(values)
            valid = values[~np.isnan(values)]
            lo, hi = np.percentile(valid, [2.5, 97.5])
            got = _value(table, "site", value, metric, "difference_ci95")
            assert got == pytest.approx([lo, hi], abs=1e-9), (value, metric)
            point = _value(table, "site", value, metric, "difference")
            p_value = 2 * norm.sf(abs(point) / np.std(valid, ddof=1))
            assert _value(table, "site", value, metric, "p_value") == pytest.approx(p_value)
        est = np.array(cohort_auroc)
        assert _value(table, "site", value, "auroc", "ci95") == pytest.approx(
            np.percentile(est[~np.isnan(est)], [2.5, 97.5]).tolist(), abs=1e-9)


def test_holm_agrees_with_statsmodels():
    from statsmodels.stats.multitest import multipletests

    rng = np.random.default_rng(0)
    for _ in range(20):
        p = rng.random(rng.integers(1, 30)) ** 3
        assert holm(p) == pytest.approx(multipletests(p, method="holm")[1], abs=1e-12)
    assert np.isnan(holm([np.nan, 0.2])[0])


def test_bootstrap_p_value_is_the_difference_over_its_resampled_spread():
    r = np.array([[0.0, 1.0], [1.0, 1.0], [2.0, np.nan], [-1.0, np.nan]])
    # sd (ddof 1) of 0, 1, 2, -1 is sqrt(5/3); the second column does not vary: undefined
    p = bootstrap_p_values(np.array([1.0, 0.5]), r)
    assert p[0] == pytest.approx(2 * norm.sf(1 / np.sqrt(5 / 3)))
    assert np.isnan(p[1])


def test_holm_is_across_the_cohorts_and_metrics_of_a_column():
    q, c = _data(n_posts=40)
    _, _, _, result = _tables(q, c, cfg=EvalConfig(bootstrap=100, seed=1), weak=False)
    table = result.cohorts
    for _, rows in table.groupby("column"):
        tested = rows[rows["p_value"].notna()]
        assert tested["p_adjusted"].tolist() == pytest.approx(
            holm(tested["p_value"].to_numpy(dtype=float)).tolist())


def test_a_planted_disparity_is_flagged():
    q, c = _data(n_posts=150, planted=0.8)
    _, _, _, result = _tables(q, c, cfg=EvalConfig(bootstrap=300, seed=2))
    table = result.cohorts
    row = table[(table["column"] == "site") & (table["value"] == "C")
                & (table["metric"] == "auroc")].iloc[0]
    assert row["flagged"] and row["difference"] < 0
    assert row["difference_ci95"][1] < 0 and row["p_adjusted"] < 0.05
    weak = result.weak_segments
    top = weak[weak["metric"] == "auroc"].iloc[0]
    assert "site=C" in top["segment"] and top["flagged"]


def test_flagged_share_under_no_disparity_stays_at_or_below_the_nominal_level():
    flagged = tested = 0
    for seed in range(12):
        q, c = _data(n_posts=60, n_criteria=3, seed=seed)
        _, _, _, result = _tables(q, c, cfg=EvalConfig(bootstrap=200, seed=seed), weak=False)
        table = result.cohorts
        rows = table[table["p_value"].notna()]
        flagged += int(rows["flagged"].sum())
        tested += len(rows)
    assert tested > 300
    assert flagged / tested <= 0.05


def test_cohort_metrics_are_the_per_criterion_machinery_on_cohort_codes():
    from metrics_core.evaluation.tables import group_body

    q, c = _data(n_posts=40)
    ev, inter, attrs, result = _tables(q, c)
    body = group_body(ev, inter, Grouping.of(attrs["sex"]))
    table = result.cohorts
    for value in ("F", "M"):
        for metric in ("auroc", "ece", "mcc", "evidence_precision", "calibration_slope"):
            expected = body.loc[value, metric]
            got = _value(table, "sex", value, metric)
            assert (got is None and np.isnan(expected)) or got == pytest.approx(expected)


def test_equalised_odds_view_lists_screening_sensitivity_and_false_flags():
    q, c = _data(n_posts=40)
    ev, inter, attrs, result = _tables(q, c)
    odds = result.equalised_odds
    sex = attrs["sex"]
    for value in sex.values:
        m = sex.codes == sex.values.index(value)
        row = odds[(odds["column"] == "sex") & (odds["value"] == value)].iloc[0]
        y = ev.ds.y[m]
        alerts = inter.states[m] == 2
        assert row["false_flag_rate"] == pytest.approx(alerts[y == 0].mean())


def test_weak_segments_respect_the_minimum_size_and_count_the_segments_tried():
    q, c = _data(n_posts=60)
    _, _, _, result = _tables(q, c, ["site", "sex"], cfg=EvalConfig(bootstrap=50),
                              min_size=100)
    weak = result.weak_segments
    assert (weak["n"] >= 100).all()
    assert set(weak["columns"]) <= {"site", "sex", "site*sex"}
    # the cohorts of site (3), sex (2) and site*sex (6) with >= 100 queries
    tried = weak.groupby("metric")["segments_tried"].first()
    assert (tried <= 11).all()
    assert pd.Series(weak["worse_by"] > 0).all()


def test_weak_segments_search_every_metric_with_a_difference_and_a_direction():
    """The search ranks every metric that has a difference to the rest and a better
    direction: the disparity metrics and the multi-label ones (§8), on the columns and on
    their pairs; a pair's segment has the values the cohorts table gives when the pair is
    declared as a column. Calibration in the large (no better direction) is not ranked."""
    q, c = _data(n_posts=60, planted=0.8)
    setup = _cohort_table(q, c, ["site", "sex", "site*sex"], 60, 2, of=["site", "sex"],
                          weak=True, min_size=1, top=100)
    weak, attrs = setup.result.weak_segments, setup.attrs
    declared = setup.tables("site*sex").cohorts
    assert set(MULTILABEL_NAMES) & set(weak["metric"])
    assert "calibration_in_the_large" not in set(weak["metric"])
    pair = weak[(weak["columns"] == "site*sex") & weak["metric"].isin(MULTILABEL_NAMES)]
    assert len(pair)
    for _, row in pair.iterrows():
        value = "*".join(v.split("=")[1] for v in row["segment"].split(", "))
        for field in ("estimate", "rest_estimate", "difference", "difference_ci95",
                      "p_value", "n"):
            assert row[field] == pytest.approx(
                _value(declared, "site*sex", value, row["metric"], field)), (value, field)
    tried = weak.groupby("metric")["segments_tried"].first()
    # every segment with a cell on both sides: site's 3, sex's 2 and each site*sex pair
    assert tried["hamming_loss"] == 3 + 2 + len(attrs["site*sex"].values)


def test_workup_to_detection_per_cohort_is_one_over_alert_precision():
    """A metric added by one registry spec reaches the cohort table with no edit here."""
    q, c = _data(n_posts=80)
    _, _, attrs, result = _tables(q, c)
    for value in attrs["site"].values:
        workup = _value(result.cohorts, "site", value, "workup_to_detection")
        precision = _value(result.cohorts, "site", value, "alert_precision")
        assert workup == pytest.approx(1.0 / precision, rel=1e-12)


def test_the_demo_disparity_planted_at_site_e_is_found():
    """The demo's planted disparity (assets/README.md): the model is worse at site_E; sex and
    age band are drawn independently of everything and show none."""
    from metrics_core.demo import DEMO_WEAK_SITE, demo_paths

    paths = demo_paths()
    queries = pd.read_parquet(paths.queries)
    loaded = load(queries, paths.candidates)
    attrs = cohort_attributes(queries, loaded, ["site", "sex", "age_band"])
    ev = Evaluator(loaded.dataset)
    cfg = EvalConfig(bootstrap=400, seed=0)
    result = cohort_tables(ev, ev.intermediate(cfg), list(attrs.values()), weak=False)
    table = result.cohorts
    weak = table[(table["value"] == DEMO_WEAK_SITE) & table["flagged"]]
    assert {"auroc", "brier", "sensitivity"} <= set(weak["metric"])
    row = weak[weak["metric"] == "auroc"].iloc[0]
    assert row["difference"] < 0 and row["difference_ci95"][1] < 0
    assert not table[table["column"].isin(["sex", "age_band"])]["flagged"].any()


def test_the_decision_record_has_a_cohorts_section():
    from metrics_core.report import decision_record

    q, c = _data(n_posts=150, planted=0.8)
    ev, _, _, result = _tables(q, c, cfg=EvalConfig(bootstrap=300, seed=2))
    evaluation = ev.evaluate(EvalConfig(bootstrap=0))
    page = decision_record.render_html(evaluation, cohorts=result)
    section = page[page.index("<h2 id='cohorts'>"):]
    assert "Cohort columns: site, sex." in section
    flagged = int(result.cohorts["flagged"].sum())
    assert f"{flagged} disparity(ies) flagged" in section and flagged >= 1
    assert "<h3>Weak segments</h3>" in section
    row = result.cohorts[(result.cohorts["value"] == "C")
                         & (result.cohorts["metric"] == "auroc")].iloc[0]
    lo, hi = row["difference_ci95"]
    assert f"{lo:.3f} to {hi:.3f}" in section
    assert "<h2 id='cohorts'>" not in decision_record.render_html(evaluation)


def test_the_resamples_on_several_threads_give_the_values_of_one(monkeypatch):
    """The pass over the resamples runs its batches on threads: each batch's rows are its own,
    so one thread and four give the same values, bit for bit, and progress counts up."""
    from metrics_core.evaluation import cohort_resamples as module

    q, c = _data(n_posts=80)
    cfg = EvalConfig(bootstrap=1_200)  # three batches of 500 rows
    seen = []
    monkeypatch.setattr(module, "WORKERS", 4)
    *_, many = _tables(q, c, cfg=cfg,
                       progress=lambda done, total: seen.append((done, total)))
    monkeypatch.setattr(module, "WORKERS", 1)
    *_, one = _tables(q, c, cfg=cfg)
    pd.testing.assert_frame_equal(many.cohorts, one.cohorts)
    pd.testing.assert_frame_equal(many.weak_segments, one.weak_segments)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen) and seen[-1] == (1_200, 1_200)


#: The per-group metrics whose interval comes from the resampled sums (not a disparity test).
SUMMED = {"fpr", "npv", "f1", "mcc", "balanced_accuracy", "neg_rate", "alert_rate_per_1000",
          "abstain_rate_pos", "accuracy_answered", "mcc_answered", "slip_rate", "pass_rate",
          "workup_to_detection", "evidence_precision", "mean_k", "median_k", "p90_k", "tp",
          "workload_per_1000", "recall@1", "map@5", "ndcg@3", "hit@1", "ece", "mce"}


def test_every_summed_metrics_interval_matches_a_literal_resampling_loop():
    """The intervals of the metrics without a disparity test (confusion and gate rates, F1,
    MCC, balanced accuracy, ranking means at every K, K's mean / median / P90, counts): the
    percentiles of the metric computed on each resample's repeated rows (scikit-learn's F1 and
    MCC, numpy's quantiles)."""
    from sklearn.metrics import balanced_accuracy_score, f1_score, matthews_corrcoef

    from metrics_core.metrics import calibration

    q, c = _data(n_posts=30, n_criteria=3, seed=7)
    setup = _cohort_table(q, c, ["site"], 80, 4)
    ev, inter, counts, table = setup.ev, setup.inter, setup.counts, setup.table
    ds, site = ev.ds, setup.attrs["site"]
    y, pred, st, k = ds.y.astype(int), inter.pred.astype(int), inter.states, inter.k
    rk, rmask = inter.rk, inter.rmask

    def values(rows):
        yy, pp, ss, kk = y[rows], pred[rows], st[rows], k[rows]
        answered = ss != 1
        ya, pa = yy[answered], (ss[answered] == 2).astype(int)
        rm = rmask[rows]
        out = {"fpr": pp[yy == 0].mean() if (yy == 0).any() else np.nan,
               "npv": (1 - yy[pp == 0]).mean() if (pp == 0).any() else np.nan,
               "f1": f1_score(yy, pp, zero_division=np.nan) if (yy + pp).any() else np.nan,
               "mcc": matthews_corrcoef(yy, pp) if 0 < yy.sum() < yy.size and
               0 < pp.sum() < pp.size else np.nan,
               "balanced_accuracy": balanced_accuracy_score(yy, pp) if 0 < yy.sum() < yy.size
               else np.nan,
               "neg_rate": np.mean(ss == 0), "alert_rate_per_1000": 1000 * np.mean(ss == 2),
               "abstain_rate_pos": np.mean(ss[yy == 1] == 1) if yy.any() else np.nan,
               "accuracy_answered": np.mean(ya == pa) if answered.any() else np.nan,
               "mcc_answered": matthews_corrcoef(ya, pa) if 0 < ya.sum() < ya.size and
               0 < pa.sum() < pa.size else np.nan,
               "slip_rate": np.mean(ss[yy == 1] == 0) if yy.any() else np.nan,
               "pass_rate": np.mean(ss[yy == 0] == 0) if (yy == 0).any() else np.nan,
               "workup_to_detection": (ss == 2).sum() / ((ss == 2) & (yy == 1)).sum()
               if ((ss == 2) & (yy == 1)).any() else np.nan,
               "evidence_precision": np.nanmean(inter.prec[rows][inter.emask[rows]])
               if inter.emask[rows].any() else np.nan,
               "mean_k": kk.mean(), "median_k": np.quantile(kk, 0.5),
               "p90_k": np.quantile(kk, 0.9), "tp": float(((pp == 1) & (yy == 1)).sum()),
               "workload_per_1000": 1000 * kk.mean(),
               # uniform bins: the same edges on every resample (the calibration kernels)
               "ece": calibration.ece(yy, ds.p[rows]), "mce": calibration.mce(yy, ds.p[rows])}
        for name in ("recall@1", "map@5", "ndcg@3", "hit@1"):
            out[name] = np.mean(rk[name][rows][rm]) if rm.any() else np.nan
        return out

    for j, value in enumerate(site.values):
        own = np.flatnonzero(site.codes == j)
        point = values(own)
        resampled = {name: [] for name in SUMMED}
        for r in range(counts.shape[0]):
            rows = np.repeat(own, counts[r][ds.post_code[own]])
            got = values(rows) if rows.size else dict.fromkeys(SUMMED, np.nan)
            for name in SUMMED:
                resampled[name].append(got[name])
        for name in SUMMED:
            if np.isnan(point[name]):  # undefined stays undefined, with no interval
                assert _value(table, "site", value, name, "defined") is False or \
                    not _value(table, "site", value, name, "defined"), name
                assert _value(table, "site", value, name, "ci95") is None, name
                continue
            assert _value(table, "site", value, name) == pytest.approx(point[name]), name
            v = np.array(resampled[name], dtype=float)
            want = np.percentile(v[~np.isnan(v)], [2.5, 97.5]).tolist()
            assert _value(table, "site", value, name, "ci95") == pytest.approx(
                want, abs=1e-9), (value, name)


def test_the_metrics_left_without_an_interval_are_the_curve_and_calibration_fit_ones():
    q, c = _data()
    *_, result = _tables(q, c, cfg=EvalConfig(bootstrap=60))
    table = result.cohorts
    without = set(table.loc[table["ci95"].isna() & table["defined"], "metric"])
    assert without <= {m for m in without if m.startswith("threshold@")}
    assert set(table.loc[table["ci95"].notna(), "metric"]) >= SUMMED | set(MULTILABEL_NAMES) | {
        "auprc", "calibration_in_the_large", "tpr@fpr=0.05", "calibration_intercept",
        "calibration_slope"}


@pytest.mark.parametrize(("seed", "rule", "split"), [(7, "threshold", False),
                                                    (11, "alert", False),
                                                    (19, "screen_in", False),
                                                    (23, "threshold", True)])
def test_the_multilabel_intervals_match_a_literal_resampling_loop(seed, rule, split):
    """Each cohort's multi-label metrics (§8) on every resample of posts: the cohort's
    queries of each drawn post, the post repeated as many times as it is drawn (each copy a
    post of its own), scored by ``multilabel_metrics``; the percentiles of those values. The
    same of the rest of the data (the queries out of the cohort) for its value, the
    difference, its interval and p-value. ``split``: the cohort drawn per query, so a post's
    queries are in several cohorts (a post's terms are then no sum of its cohorts')."""
    from metrics_core.metrics.multilabel import decision_labels, multilabel_metrics

    q, c = _data(n_posts=30, n_criteria=3, seed=seed)
    if split:
        q["site"] = np.random.default_rng(seed).choice(["A", "B", "C"], len(q))
    setup = _cohort_table(q, c, ["site"], 80, seed, options={"multilabel_rule": rule})
    ev, inter, cfg, counts, table = setup.ev, setup.inter, setup.cfg, setup.counts, setup.table
    ds, site = ev.ds, setup.attrs["site"]
    yh = decision_labels(ds, rule=rule, threshold=cfg.threshold, states=inter.states)
    n_crit = len(ds.criteria)

    def values(rows):
        copy = np.arange(rows.size) - np.repeat(  # which copy of its post a row is
            np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]]),
            np.diff(np.r_[np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]]), rows.size]))
        post = np.unique(ds.post_code[rows] * 1000 + copy, return_inverse=True)[1]
        shape = (int(post.max()) + 1, n_crit)
        y, pred, mask = np.zeros(shape, int), np.zeros(shape, int), np.zeros(shape, bool)
        crit = ds.criterion_code[rows]
        y[post, crit], pred[post, crit], mask[post, crit] = ds.y[rows], yh[rows], True
        return multilabel_metrics(y, pred, mask)

    def resampled(rows) -> dict[str, np.ndarray]:
        out = {name: [] for name in MULTILABEL_NAMES}
        for r in range(counts.shape[0]):
            drawn = np.repeat(rows, counts[r][ds.post_code[rows]])
            got = values(drawn) if drawn.size else dict.fromkeys(MULTILABEL_NAMES, np.nan)
            for name in MULTILABEL_NAMES:
                out[name].append(got[name])
        return {name: np.array(v, dtype=float) for name, v in out.items()}

    for j, value in enumerate(site.values):
        own, rest = np.flatnonzero(site.codes == j), np.flatnonzero(site.codes != j)
        point, rest_point = values(own), values(rest)
        mine, theirs = resampled(own), resampled(rest)
        for name in MULTILABEL_NAMES:
            assert _value(table, "site", value, name) == pytest.approx(point[name]), name
            v = mine[name]
            want = np.percentile(v[~np.isnan(v)], [2.5, 97.5]).tolist()
            assert _value(table, "site", value, name, "ci95") == pytest.approx(
                want, abs=1e-9), (value, name)
            assert _value(table, "site", value, name, "rest_estimate") == pytest.approx(
                rest_point[name]), name
            diff = point[name] - rest_point[name]
            assert _value(table, "site", value, name, "difference") == pytest.approx(diff)
            d = mine[name] - theirs[name]
            d = d[~np.isnan(d)]
            assert _value(table, "site", value, name, "difference_ci95") == pytest.approx(
                np.percentile(d, [2.5, 97.5]).tolist(), abs=1e-9), (value, name)
            if np.std(d, ddof=1) > 0:
                assert _value(table, "site", value, name, "p_value") == pytest.approx(
                    2 * norm.sf(abs(diff) / np.std(d, ddof=1))), (value, name)


def test_each_metric_s_per_query_sums_come_from_its_registry_entry():
    """The cohorts' numerators and denominators per query (``kernels.ratio_sums``), by hand:
    four queries, y = 1, 1, 0, 0 and p = 0.9, 0.3, 0.7, 0.05, so at τ = 0.5 the predictions
    are 1, 0, 1, 0 and with τ_neg = 0.1, τ_pos = 0.6 the gate says POS, UNCERTAIN, POS, NEG."""
    from metrics_core.data.dataset import Dataset
    from metrics_core.evaluation import kernels

    q = pd.DataFrame({"post_id": ["a", "b", "c", "d"], "criterion": "C1",
                      "has_evidence": [1, 1, 0, 0], "p_has_evidence": [0.9, 0.3, 0.7, 0.05]})
    c = pd.DataFrame({"post_id": ["a", "b", "c", "d"], "criterion": "C1",
                      "sent_uid": "s", "score": 0.5, "is_gold": [1, 1, 0, 0]})
    ev = Evaluator(Dataset.from_frames(q, c))
    inter = ev.intermediate(EvalConfig(threshold=0.5, tau_neg=0.1, tau_pos=0.6, bootstrap=0))
    names = ["sensitivity", "tp", "alert_rate_per_1000", "workup_to_detection", "brier",
             "mean_k", "workload"]
    num, den = kernels.ratio_sums(ev, inter, names)
    k = inter.k.astype(float)
    expected = {  # (numerator, denominator) per query
        "sensitivity": ([1, 0, 0, 0], [1, 1, 0, 0]),  # TP / (TP + FN) at τ
        "tp": ([1, 0, 0, 0], [0, 0, 0, 0]),  # a count: no denominator
        "alert_rate_per_1000": ([1000, 0, 1000, 0], [1, 1, 1, 1]),  # POS / n × 1000
        "workup_to_detection": ([1, 0, 1, 0], [1, 0, 0, 0]),  # POS / true POS
        "brier": ([0.01, 0.49, 0.49, 0.0025], [1, 1, 1, 1]),  # (p − y)², every query
        "mean_k": (k, [1, 1, 1, 1]),
        "workload": (k, [0, 0, 0, 0]),
    }
    for i, name in enumerate(names):
        np.testing.assert_allclose(num[:, i], expected[name][0], rtol=1e-12, err_msg=name)
        np.testing.assert_array_equal(den[:, i], expected[name][1], err_msg=name)
    with pytest.raises(ValueError, match="mcc: its value is no ratio of per-query sums"):
        kernels.ratio_sums(ev, inter, ["mcc"])


@pytest.mark.parametrize(("seed", "decimals", "column"),
                         [(7, None, "site"), (5, 1, "site"), (9, 2, "site"), (11, 2, "sex"),
                          (4, None, "site*sex")])
def test_the_auprc_and_tpr_at_fpr_differences_match_a_literal_resampling_loop(
        seed, decimals, column):
    """Each cohort's and its rest's AUPRC and TPR at every FPR target on every resample of
    posts: scikit-learn's average precision and ROC curve (the TPR at the largest index with
    FPR <= T, contract §4) on the repeated rows (ties of p too: scores rounded), NaN (left
    out) when the resample has one class; the percentiles of the cohort's values and of the
    differences, the p-value from their standard deviation, Holm with the column's other
    tests (contract §9). A column of two cohorts (``sex``: the rest is the other one) and of
    three or more (``site``, ``site*sex``: the whole data's cumulations minus the cohort's).
    The threshold at an FPR has no interval."""
    from sklearn.metrics import average_precision_score, roc_curve
    from statsmodels.stats.multitest import multipletests

    q, c = _data(n_posts=30, n_criteria=3, seed=seed)
    if decimals is not None:
        q["p_has_evidence"] = q["p_has_evidence"].round(decimals)
    setup = _cohort_table(q, c, [column], 80, seed)
    ev, cfg, counts, table = setup.ev, setup.cfg, setup.counts, setup.table
    ds, grouping = ev.ds, setup.attrs[column]
    names = ["auprc", *(f"tpr@fpr={t:.2f}" for t in cfg.tpr_fprs)]

    def metrics(rows):
        y, p = ds.y[rows], ds.p[rows]
        if not 0 < y.sum() < y.size:
            return np.full(len(names), np.nan)
        fpr, tpr, _ = roc_curve(y, p, drop_intermediate=False)
        return np.array([average_precision_score(y, p), *(
            tpr[np.searchsorted(fpr, t, side="right") - 1] for t in cfg.tpr_fprs)])

    def resampled(rows):
        return np.array([metrics(np.repeat(rows, counts[r][ds.post_code[rows]]))
                         for r in range(counts.shape[0])])

    for j, value in enumerate(grouping.values):
        own, rest = np.flatnonzero(grouping.codes == j), np.flatnonzero(grouping.codes != j)
        point, point_rest = metrics(own), metrics(rest)
        mine, theirs = resampled(own), resampled(rest)
        for i, name in enumerate(names):
            assert _value(table, column, value, name) == pytest.approx(point[i]), name
            v = mine[:, i]
            assert _value(table, column, value, name, "ci95") == pytest.approx(
                np.percentile(v[~np.isnan(v)], [2.5, 97.5]).tolist(), abs=1e-9), (value, name)
            assert _value(table, column, value, name, "rest_estimate") == pytest.approx(
                point_rest[i]), (value, name)
            d = mine[:, i] - theirs[:, i]
            d = d[~np.isnan(d)]
            assert _value(table, column, value, name, "difference") == pytest.approx(
                point[i] - point_rest[i], abs=1e-12)
            assert _value(table, column, value, name, "difference_ci95") == pytest.approx(
                np.percentile(d, [2.5, 97.5]).tolist(), abs=1e-9), (value, name)
            sd = d.std(ddof=1)
            expected_p = 2 * norm.sf(abs(point[i] - point_rest[i]) / sd) if sd > 0 else None
            got_p = _value(table, column, value, name, "p_value")
            if expected_p is None:
                assert got_p is None or pd.isna(got_p)
            else:
                assert got_p == pytest.approx(expected_p, rel=1e-9, abs=1e-12), (value, name)
    # Holm across the column's tests, AUPRC and the TPRs among them
    tested = table[table["p_value"].notna()]
    assert set(names) <= set(tested["metric"])
    expected = multipletests(tested["p_value"].to_numpy(float), method="holm")[1]
    np.testing.assert_allclose(tested["p_adjusted"].to_numpy(float), expected, rtol=1e-12)
    thresholds = table[table["metric"].str.startswith("threshold@")]
    assert len(thresholds) and thresholds["ci95"].isna().all()
    assert thresholds["difference"].isna().all()


def test_auprc_and_tpr_at_fpr_with_one_class_in_a_cohort_or_its_rest_stay_undefined():
    """A cohort holding every positive (its rest has one class) has its AUPRC but no rest
    value, difference or p-value; a cohort of negatives only has no AUPRC (defined: false)
    and so no difference; neither is flagged (contract §9: undefined stays undefined)."""
    q, c = _data(n_posts=40, n_criteria=3, seed=21)
    rng = np.random.default_rng(21)
    q["grp"] = np.where(q["has_evidence"].astype(bool), "X",
                        rng.choice(["X", "Y", "Z"], len(q)))
    table = _cohort_table(q, c, ["grp"], 40, 21).table
    for name in ("auprc", "tpr@fpr=0.10"):
        assert np.isfinite(_value(table, "grp", "X", name))
        assert _value(table, "grp", "X", name, "defined")
        for field in ("rest_estimate", "difference", "difference_ci95", "p_value",
                      "p_adjusted"):
            assert _value(table, "grp", "X", name, field) is None or pd.isna(
                _value(table, "grp", "X", name, field)), (name, field)
        assert not _value(table, "grp", "X", name, "flagged")
        for value in ("Y", "Z"):
            assert not _value(table, "grp", value, name, "defined")
            assert pd.isna(_value(table, "grp", value, name))
            assert pd.isna(_value(table, "grp", value, name, "difference"))
            assert np.isfinite(_value(table, "grp", value, name, "rest_estimate"))
            assert not _value(table, "grp", value, name, "flagged")


def test_calibration_in_the_large_has_its_interval_and_difference_from_a_literal_loop():
    """Calibration in the large (O/E = Σ y / Σ p) of each cohort and of the rest of the data
    on every resample of posts, the queries of a post drawn k times k times: the cohort's
    interval, the rest's value, the difference, its interval and p-value."""
    q, c = _data(n_posts=30, n_criteria=3, seed=13)
    setup = _cohort_table(q, c, ["site"], 90, 13)
    ev, counts, table = setup.ev, setup.counts, setup.table
    ds, site = ev.ds, setup.attrs["site"]
    name = "calibration_in_the_large"

    def oe(rows):
        return ds.y[rows].sum() / ds.p[rows].sum() if ds.p[rows].sum() > 0 else np.nan

    for j, value in enumerate(site.values):
        own, rest = np.flatnonzero(site.codes == j), np.flatnonzero(site.codes != j)
        assert _value(table, "site", value, name) == pytest.approx(oe(own))
        assert _value(table, "site", value, name, "rest_estimate") == pytest.approx(oe(rest))
        mine = np.array([oe(np.repeat(own, counts[r][ds.post_code[own]]))
                         for r in range(counts.shape[0])])
        theirs = np.array([oe(np.repeat(rest, counts[r][ds.post_code[rest]]))
                           for r in range(counts.shape[0])])
        assert _value(table, "site", value, name, "ci95") == pytest.approx(
            np.percentile(mine[~np.isnan(mine)], [2.5, 97.5]).tolist(), abs=1e-9)
        d = mine - theirs
        d = d[~np.isnan(d)]
        diff = oe(own) - oe(rest)
        assert _value(table, "site", value, name, "difference") == pytest.approx(diff)
        assert _value(table, "site", value, name, "difference_ci95") == pytest.approx(
            np.percentile(d, [2.5, 97.5]).tolist(), abs=1e-9)
        assert _value(table, "site", value, name, "p_value") == pytest.approx(
            2 * norm.sf(abs(diff) / np.std(d, ddof=1)))
    tested = table[table["p_value"].notna()]  # in the column's Holm family
    assert name in set(tested["metric"])


@pytest.mark.parametrize("seed", [13, 21])
def test_calibration_intercept_intervals_match_a_literal_loop_of_statsmodels_fits(
        seed, monkeypatch):
    """Each cohort's calibration intercept (``logit P(y=1) = a + logit(p)``) refitted by
    statsmodels' GLM on every resample's repeated rows (the queries of a post drawn k times k
    times; p clipped as §5 clips it): the percentiles of those fits are the table's interval
    (to 1e-6; the table's come from a power series per resample, exact fits only where the
    percentiles are: fewer than the resamples)."""
    import statsmodels.api as sm

    from metrics_core.metrics.calibration import LOGIT_EPS

    q, c = _data(n_posts=150, n_criteria=3, seed=seed)
    from metrics_core.evaluation import cohort_logistic

    exact_fits = []
    fitted = cohort_logistic.ExactFits.__call__
    monkeypatch.setattr(cohort_logistic.ExactFits, "__call__",
                        lambda self, w: exact_fits.append(1) or fitted(self, w))
    setup = _cohort_table(q, c, ["site"], 60, seed)
    ev, counts, table = setup.ev, setup.counts, setup.table
    ds, site = ev.ds, setup.attrs["site"]
    pc = np.clip(ds.p, LOGIT_EPS, 1 - LOGIT_EPS)
    x = np.log(pc) - np.log1p(-pc)

    def fits(rows):
        y = ds.y[rows].astype(float)
        if not 0 < y.sum() < y.size:
            return np.nan
        with warnings.catch_warnings(), np.errstate(over="ignore"):
            warnings.simplefilter("error", sm.tools.sm_exceptions.PerfectSeparationWarning)
            return sm.GLM(y, np.ones((y.size, 1)), family=sm.families.Binomial(),
                          offset=x[rows]).fit(tol=1e-12).params[0]

    checked = 0
    for j, value in enumerate(site.values):
        own = np.flatnonzero(site.codes == j)
        got = np.array([fits(np.repeat(own, counts[r][ds.post_code[own]]))
                        for r in range(counts.shape[0])])
        assert _value(table, "site", value, "calibration_intercept") == pytest.approx(
            fits(own), abs=1e-6)
        v = got
        assert _value(table, "site", value, "calibration_intercept", "ci95") == pytest.approx(
            np.percentile(v[~np.isnan(v)], [2.5, 97.5]).tolist(), abs=1e-6), value
        checked += 1
    assert checked == len(site.values)
    assert len(exact_fits) < counts.shape[0] * len(site.values) / 2
