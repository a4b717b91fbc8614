"""The data audit (contract §2 "Bad input", §10 "folds post-disjoint")."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metrics_core.data.dataset import Dataset
from metrics_core.inputs.audit import CHECKS, AuditReport, Finding, audit
from metrics_core.inputs.loading import load
from tests.conftest import random_frames


def clean():
    """Three posts x two criteria, one post per fold and split, gold where has_evidence = 1,
    distinct scores, n_gold equal to the gold found: nothing to report."""
    q = pd.DataFrame({
        "post_id": ["p1", "p1", "p2", "p2", "p3", "p3"],
        "criterion": ["A.1", "A.2"] * 3,
        "has_evidence": [1, 0, 0, 1, 1, 0],
        "p_has_evidence": [0.8, 0.3, 0.2, 0.6, 0.7, 0.1],
        "fold": [0, 0, 1, 1, 2, 2],
        "split": ["TUNE", "TUNE", "TEST", "TEST", "TEST", "TEST"],
        "n_gold": [1, 0, 0, 2, 1, 0],
    })
    rows = []
    gold = {("p1", "A.1"): {"s2"}, ("p2", "A.2"): {"s1", "s3"}, ("p3", "A.1"): {"s1"}}
    for k, (post, crit) in enumerate(zip(q["post_id"], q["criterion"], strict=True)):
        for j in range(3):
            uid = f"s{j + 1}"
            rows.append((post, crit, uid, float(10 * k + j), int(uid in gold.get((post, crit),
                                                                                ()))))
    c = pd.DataFrame(rows, columns=["post_id", "criterion", "sent_uid", "score", "is_gold"])
    return q, c


def run(q, c, **kwargs) -> AuditReport:
    return audit(Dataset.from_frames(q, c), **kwargs)


def only(report: AuditReport, check: str) -> Finding:
    found = [f for f in report.findings if f.check == check]
    assert len(found) == 1, report.findings
    return found[0]


def test_clean_data_reports_nothing():
    loaded = load(*clean())
    report = audit(loaded.dataset, loaded=loaded)
    assert report.findings == ()
    assert report.passed
    assert report.checks == tuple(CHECKS)  # every check ran and passed
    assert all(report.status(c) == "pass" for c in CHECKS)
    d = report.to_dict()
    assert d["passed"] is True and d["findings"] == []
    assert [x["status"] for x in d["checks"]] == ["pass"] * len(CHECKS)
    json.dumps(d)


def test_post_in_two_folds_is_an_error():
    q, c = clean()
    q.loc[1, "fold"] = 2  # p1/A.2 moves to fold 2
    report = run(q, c)
    f = only(report, "folds_post_disjoint")
    assert (f.level, f.count, f.examples) == ("error", 1, ("post p1 in folds 0, 2",))
    assert "1 post (2 queries) appears in more than one fold" in f.message
    assert not report.passed
    assert report.status("folds_post_disjoint") == "error"
    assert report.findings[0] is f  # errors come first


def test_post_in_two_splits_is_an_error():
    q, c = clean()
    q.loc[[2, 5], "split"] = "TUNE"
    report = run(q, c)
    f = only(report, "splits_post_disjoint")
    assert (f.level, f.count) == ("error", 2)
    assert f.examples == ("post p2 in splits TEST, TUNE", "post p3 in splits TEST, TUNE")
    assert report.status("folds_post_disjoint") == "pass"


def test_fold_check_needs_a_fold_column():
    q, c = clean()
    report = run(q.drop(columns=["fold", "split"]), c)
    assert "folds_post_disjoint" not in report.checks
    assert report.status("folds_post_disjoint") == "not run"
    assert report.findings == ()


def test_positive_without_gold_and_without_n_gold():
    q, c = clean()
    c.loc[(c["post_id"] == "p3") & (c["criterion"] == "A.1"), "is_gold"] = 0
    report = run(q.drop(columns="n_gold"), c)
    f = only(report, "positives_have_gold")
    assert (f.level, f.count, f.examples) == ("warning", 1, ("post p3, criterion A.1",))
    assert f.message.startswith("1 of 3 queries with has_evidence = 1 have no gold")
    assert report.passed  # warnings do not fail the audit
    # With n_gold saying there is gold (missed by the candidate list) it is not reported
    # here but as missed gold.
    q["n_gold"] = [1, 0, 0, 2, 1, 0]
    report = run(q, c)
    assert report.status("positives_have_gold") == "pass"
    assert only(report, "gold_within_candidates").count == 1


def test_gold_on_negative_query():
    q, c = clean()
    c.loc[(c["post_id"] == "p1") & (c["criterion"] == "A.2") & (c["sent_uid"] == "s3"),
          "is_gold"] = 1
    q.loc[1, "n_gold"] = 1
    f = only(run(q, c), "negatives_without_gold")
    assert (f.level, f.count, f.examples) == ("warning", 1, ("post p1, criterion A.2",))
    assert "(1 among their candidates)" in f.message
    # n_gold alone (no gold candidate) also counts.
    q2, c2 = clean()
    q2.loc[5, "n_gold"] = 2
    f = only(run(q2, c2), "negatives_without_gold")
    assert f.examples == ("post p3, criterion A.2",) and "(0 among their candidates)" in f.message


def test_gold_missed_by_the_candidates_is_info_with_share():
    q, c = clean()
    q.loc[[0, 3], "n_gold"] = [3, 3]  # 2 + 1 gold sentences outside the candidate lists
    f = only(run(q, c), "gold_within_candidates")
    assert (f.level, f.count) == ("info", 2)
    assert f.message.startswith("2 of 3 positive queries (66.7%) miss gold sentences")
    assert "(3 gold sentences in all)" in f.message
    assert f.examples == ("post p1, criterion A.1: 1 of 3 gold among candidates",
                          "post p2, criterion A.2: 2 of 3 gold among candidates")


def test_queries_without_candidates():
    q, c = clean()
    c = c[~((c["post_id"] == "p2") & (c["criterion"] == "A.2"))]
    q.loc[3, "n_gold"] = 2  # the missed gold is reported separately
    report = run(q, c)
    f = only(report, "queries_have_candidates")
    assert (f.level, f.count, f.examples) == ("warning", 1, ("post p2, criterion A.2",))
    assert "(1 with has_evidence = 1)" in f.message
    only_q = audit(load(q).dataset)
    f = only(only_q, "queries_have_candidates")
    assert f.count == 6 and "no candidates at all" in f.message


def test_posts_missing_criteria():
    q, c = clean()
    keep = ~((q["post_id"] == "p2") & (q["criterion"] == "A.1"))
    c = c[~((c["post_id"] == "p2") & (c["criterion"] == "A.1"))]
    f = only(run(q[keep], c), "criteria_complete")
    assert (f.level, f.count, f.examples) == ("warning", 1, ("post p2 lacks A.1",))
    assert f.message.startswith("1 of 3 posts lack queries for some of the 2 criteria")


def test_positive_query_with_all_scores_tied():
    q, c = clean()
    in_q = (c["post_id"] == "p3") & (c["criterion"] == "A.1")
    c.loc[in_q, "score"] = 0.5
    report = run(q, c)
    f = only(report, "positive_scores_distinct")
    assert (f.level, f.count, f.examples) == ("info", 1, ("post p3, criterion A.1",))
    # The gold sentence also ties with non-gold ones there.
    assert only(report, "gold_ties_resolved").examples == ("post p3, criterion A.1",)
    # All ties on a negative query are not reported.
    q2, c2 = clean()
    c2.loc[(c2["post_id"] == "p3") & (c2["criterion"] == "A.2"), "score"] = 0.5
    assert run(q2, c2).findings == ()


def test_gold_tied_with_a_non_gold_sentence():
    q, c = clean()
    # p2/A.2: gold s1, s3; make s2 (non-gold) tie with s3 (gold).
    in_q = (c["post_id"] == "p2") & (c["criterion"] == "A.2")
    c.loc[in_q & (c["sent_uid"] == "s2"), "score"] = float(c.loc[in_q & (c["sent_uid"] == "s3"),
                                                                 "score"].iloc[0])
    report = run(q, c)
    f = only(report, "gold_ties_resolved")
    assert (f.level, f.count, f.examples) == ("info", 1, ("post p2, criterion A.2",))
    assert report.status("positive_scores_distinct") == "pass"
    # Two gold sentences tied with each other change nothing.
    q2, c2 = clean()
    c2.loc[in_q & (c2["sent_uid"] == "s1"), "score"] = float(
        c2.loc[in_q & (c2["sent_uid"] == "s3"), "score"].iloc[0])
    assert run(q2, c2).findings == ()


def test_tie_checks_do_not_run_on_ranked_data():
    q, c = clean()
    c["score"] = 1.0
    c["rank"] = c.groupby(["post_id", "criterion"]).cumcount() + 1
    report = run(q, c)
    assert "positive_scores_distinct" not in report.checks
    assert "gold_ties_resolved" not in report.checks
    assert report.findings == ()


def test_one_class():
    q, c = clean()
    q["has_evidence"] = 1
    q["n_gold"] = [1, 1, 1, 2, 1, 1]
    c.loc[c["sent_uid"] == "s1", "is_gold"] = 1
    f = only(run(q.drop(columns="n_gold"), c), "both_classes")
    assert (f.level, f.count) == ("warning", 6)
    assert "all 6 queries have has_evidence = 1" in f.message


def test_a_criterion_with_one_class_is_reported():
    q, c = clean()
    # A.2 loses its only positive (p2): all three A.2 queries are negative.
    q.loc[3, "has_evidence"] = 0
    q.loc[3, "n_gold"] = 0
    c.loc[(c["post_id"] == "p2") & (c["criterion"] == "A.2"), "is_gold"] = 0
    report = run(q, c)
    assert "both_classes_per_criterion" in report.checks
    f = only(report, "both_classes_per_criterion")
    assert (f.level, f.count) == ("warning", 1)
    assert f.examples == ("criterion A.2: all 3 queries have has_evidence = 0",)
    assert "1 criterion has queries of one has_evidence class only" in f.message
    assert not [g for g in report.findings if g.check == "both_classes"]


def test_exclusions_are_summarised():
    q, c = clean()
    q.loc[1, "p_has_evidence"] = np.nan
    c.loc[0, "score"] = np.nan
    loaded = load(q, c, queries_name="q.csv", candidates_name="c.csv")
    report = audit(loaded.dataset, loaded=loaded)
    f = only(report, "no_exclusions")
    assert (f.level, f.count) == ("warning", 5)  # 1 query + its 3 candidates + 1 candidate
    assert "1 rows: p_has_evidence is missing: query excluded" in f.message
    assert "3 rows: its query is excluded" in f.message
    assert f.examples[0] == "q.csv row 2: post p1, criterion A.2 (p_has_evidence missing)"
    assert f.examples[-1] == "c.csv row 1: post p1, criterion A.1, sentence s1 (score missing)"
    # The excluded query leaves p1 without A.2: reported as well.
    assert only(report, "criteria_complete").examples == ("post p1 lacks A.2",)
    assert "no_exclusions" not in audit(loaded.dataset).checks


def test_every_planted_problem_at_once_and_json():
    q, c = clean()
    q.loc[1, "fold"] = 1
    c.loc[(c["post_id"] == "p3") & (c["criterion"] == "A.1"), "is_gold"] = 0
    q.loc[4, "n_gold"] = 0
    q.loc[0, "n_gold"] = 2
    report = run(q, c)
    assert [(f.check, f.level) for f in report.findings] == [
        ("folds_post_disjoint", "error"), ("positives_have_gold", "warning"),
        ("gold_within_candidates", "info")]
    d = json.loads(json.dumps(report.to_dict()))
    assert d["passed"] is False
    assert d["findings"][0]["examples"] == ["post p1 in folds 0, 1"]
    status = {x["check"]: x["status"] for x in d["checks"]}
    assert status["folds_post_disjoint"] == "error"
    assert status["gold_within_candidates"] == "info"
    assert status["criteria_complete"] == "pass"


# ----------------------------------------------------------- cross-check with pandas
@settings(max_examples=15, deadline=None)
@given(st.integers(0, 10_000), st.integers(0, 6))
def test_counts_agree_with_pandas_groupby(seed, n_moved):
    """Each count equals the same quantity computed row by row with pandas."""
    q, c = random_frames(n_posts=30, seed=seed)
    rng = np.random.default_rng(seed)
    moved = rng.choice(len(q), n_moved, replace=False)
    q.loc[moved, "fold"] = (q.loc[moved, "fold"] + 1) % 5
    key_q = q["post_id"] + "|" + q["criterion"]
    key_c = c["post_id"] + "|" + c["criterion"]
    tied = key_q[rng.random(len(q)) < 0.15]  # all candidates of these queries tie
    c.loc[key_c.isin(tied), "score"] = 0.25
    emptied = key_q[(rng.random(len(q)) < 0.1) & (q["has_evidence"] == 1)]  # gold removed
    c.loc[key_c.isin(emptied), "is_gold"] = 0
    q.loc[key_q.isin(emptied), "n_gold"] = 0
    drop = rng.random(len(q)) < 0.05
    q = q[~drop]
    report = run(q, c[c.set_index(["post_id", "criterion"]).index.isin(
        q.set_index(["post_id", "criterion"]).index)])
    counts = {f.check: f.count for f in report.findings}

    cross = int((q.groupby("post_id")["fold"].nunique() > 1).sum())
    assert counts.get("folds_post_disjoint", 0) == cross

    cc = c.merge(q[["post_id", "criterion", "has_evidence"]], on=["post_id", "criterion"])
    found = cc.groupby(["post_id", "criterion"])["is_gold"].sum()
    qq = q.set_index(["post_id", "criterion"])
    found = found.reindex(qq.index, fill_value=0)
    pos = qq["has_evidence"] == 1
    assert counts.get("gold_within_candidates", 0) == int((pos & (qq["n_gold"] > found)).sum())
    assert counts.get("positives_have_gold", 0) == int((pos & (qq["n_gold"] == 0)).sum())

    per_q = cc.groupby(["post_id", "criterion"]).agg(
        n=("score", "size"), distinct=("score", "nunique"), y=("has_evidence", "first"))
    all_tied = int(((per_q["n"] >= 2) & (per_q["distinct"] == 1) & (per_q["y"] == 1)).sum())
    assert counts.get("positive_scores_distinct", 0) == all_tied

    runs = cc.groupby(["post_id", "criterion", "score"]).agg(
        gold=("is_gold", "sum"), n=("is_gold", "size"), y=("has_evidence", "first"))
    mixed = runs[(runs["gold"] > 0) & (runs["gold"] < runs["n"]) & (runs["y"] == 1)]
    n_mixed = len(mixed.reset_index()[["post_id", "criterion"]].drop_duplicates())
    assert counts.get("gold_ties_resolved", 0) == n_mixed

    lacking = int((q.groupby("post_id").size() < q["criterion"].nunique()).sum())
    assert counts.get("criteria_complete", 0) == lacking


@pytest.mark.parametrize("bad", ["level", "check"])
def test_finding_is_frozen(bad):
    f = Finding("both_classes", "warning", "m", 1)
    with pytest.raises(AttributeError):
        setattr(f, bad, "x")
