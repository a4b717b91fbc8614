"""Tests of the synthetic demo data (metrics_core.demo; contract §1-§2, seeds 003 §1 and 004).

Counts are taken directly with pandas from the frames, never from the generator's own bookkeeping,
so a change in the generator that breaks the documented shape or a planted problem fails here.

Sources: "contract §N" is section N of docs/CONTRACT.md; "seed 003" is
docs/seeds/003-evidence-pipeline-contract.txt; "seed 004" is
docs/seeds/004-triage-abstention-metrics.txt.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import roc_auc_score

from metrics_core import demo

QUERY_COLUMNS = ["post_id", "criterion", "has_evidence", "p_has_evidence", "fold", "split",
                 "n_gold"]
CANDIDATE_COLUMNS = ["post_id", "criterion", "sent_uid", "score", "is_gold", "sentence"]
KEY = ["post_id", "criterion"]


@pytest.fixture(scope="module")
def built():
    """The demo with data problems: most tests here check its documented shape and problems."""
    queries, candidates = demo.make_demo(problems=True)
    return queries, candidates, demo.planted_problems()


@pytest.fixture(scope="module")
def clean():
    return demo.make_demo()


@pytest.fixture(scope="module")
def queries(built):
    return built[0]


@pytest.fixture(scope="module")
def candidates(built):
    return built[1]


@pytest.fixture(scope="module")
def planted(built):
    return built[2]


@pytest.fixture(scope="module")
def per_query(queries, candidates):
    """Queries with gold found, candidate count and tie flag counted from the candidates."""
    g = candidates.groupby(KEY, sort=False)
    counted = pd.DataFrame({
        "found": g["is_gold"].sum(),
        "n_cand": g.size(),
        "has_tie": candidates.duplicated([*KEY, "score"], keep=False).groupby(
            [candidates["post_id"], candidates["criterion"]], sort=False).any(),
    }).reset_index()
    return queries.merge(counted, on=KEY, how="left", validate="one_to_one")


def _keys(frame: pd.DataFrame) -> set[tuple[str, str]]:
    return set(zip(frame["post_id"], frame["criterion"], strict=True))


def _ece(y: np.ndarray, p: np.ndarray) -> float:
    """Contract §5: 10 equal-width bins [lo, hi), the last one [0.9, 1.0]."""
    b = np.minimum(np.floor(p * 10).astype(int), 9)
    n = np.bincount(b, minlength=10)
    conf = np.bincount(b, weights=p, minlength=10)
    obs = np.bincount(b, weights=y, minlength=10)
    used = n > 0
    return float(np.sum(np.abs(conf[used] - obs[used])) / len(p))


# --------------------------------------------------------------------------------- shape
def test_shape_matches_reference_data_set(queries, candidates):
    # Contract §1 / seed 003 §1: 1,477 posts x 10 criteria, 1,379 positives (9.34%).
    assert list(queries.columns) == QUERY_COLUMNS
    assert list(candidates.columns) == CANDIDATE_COLUMNS
    assert len(queries) == 14_770
    assert queries["post_id"].nunique() == 1_477
    assert not queries.duplicated(KEY).any()
    assert set(queries["criterion"]) == {f"A.{i}" for i in range(1, 11)}
    assert set(demo.CRITERIA) == {f"A.{i}" for i in range(1, 11)}
    assert queries.groupby("post_id")["criterion"].nunique().eq(10).all()
    assert int(queries["has_evidence"].sum()) == 1_379
    assert 0.090 <= queries["has_evidence"].mean() <= 0.097
    assert set(queries["has_evidence"].unique()) == {0, 1}
    assert queries["p_has_evidence"].between(0, 1).all()


def test_candidates_are_the_posts_sentences(queries, candidates, per_query):
    assert per_query["n_cand"].between(5, 60).all()
    assert 18 <= per_query["n_cand"].mean() <= 22
    assert not candidates.duplicated([*KEY, "sent_uid"]).any()
    assert candidates["sent_uid"].str.fullmatch(r"p\d{5}_s\d{2}").all()
    assert (candidates["sent_uid"].str.slice(0, 6) == candidates["post_id"]).all()
    # The same sentences (uid and text) for all 10 criteria of a post.
    per_sentence = candidates.groupby(["post_id", "sent_uid"])
    assert per_sentence.size().eq(10).all()
    assert per_sentence["sentence"].nunique().eq(1).all()
    assert candidates["sentence"].str.len().between(10, 80).all()
    # Sentence text comes from a small set of templates (dictionary-friendly).
    assert candidates["sentence"].nunique() < 1_000


def test_gold_sentences_and_n_gold(planted, per_query):
    # Positive queries outside the planted problems: 1-3 gold found, n_gold >= found.
    pos = per_query[per_query["has_evidence"] == 1]
    no_gold = set(planted.positive_without_gold)
    regular = pos[[k not in no_gold for k in zip(pos["post_id"], pos["criterion"], strict=True)]]
    assert regular["n_gold"].between(1, 5).all()
    assert (regular["n_gold"] >= regular["found"]).all()
    assert regular["found"].le(3).all()
    assert set(regular["found"].unique()) == {0, 1, 2, 3}  # 0: the list missed all gold
    assert (regular["found"] == 1).mean() > 0.5


def test_gold_scores_higher_than_other_candidates(queries, candidates):
    pos = candidates.merge(queries.loc[queries["has_evidence"] == 1, KEY], on=KEY)
    assert roc_auc_score(pos["is_gold"], pos["score"]) > 0.8


# --------------------------------------------------------------------------------- folds
def test_folds_post_disjoint_except_planted(queries, planted):
    folds_per_post = queries.groupby("post_id")["fold"].nunique()
    assert set(folds_per_post[folds_per_post > 1].index) == set(planted.cross_fold_posts)
    assert len(planted.cross_fold_posts) == 2
    # Seed 003 §1.2: folds 0-3 hold 295 posts, fold 4 holds 297 (by each post's A.1 fold).
    first = queries[queries["criterion"] == "A.1"]
    assert first["fold"].value_counts().sort_index().tolist() == [295, 295, 295, 295, 297]
    # Documented split: TUNE = fold 0, TEST = folds 1-4.
    assert ((queries["split"] == "TUNE") == (queries["fold"] == 0)).all()
    assert set(queries["split"]) == {"TUNE", "TEST"}


# ------------------------------------------------------------------------- planted problems
def test_planted_positive_without_gold(planted, per_query):
    hit = per_query[(per_query["has_evidence"] == 1) & (per_query["found"] == 0)
                    & (per_query["n_gold"] == 0)]
    assert len(hit) == 3
    assert _keys(hit) == set(planted.positive_without_gold)


def test_planted_negative_with_gold(planted, per_query):
    hit = per_query[(per_query["has_evidence"] == 0) & (per_query["found"] > 0)]
    assert len(hit) == 2
    assert hit["found"].eq(1).all()
    assert _keys(hit) == set(planted.negative_with_gold)
    # Every other negative query has n_gold = 0.
    others = per_query[(per_query["has_evidence"] == 0) & (per_query["found"] == 0)]
    assert others["n_gold"].eq(0).all()


def test_planted_tied_scores(planted, queries, candidates, per_query):
    hit = per_query[per_query["has_tie"]]
    assert len(hit) == 4
    assert _keys(hit) == set(planted.tied_scores)
    # Exactly one pair per tied query; in the positive ones the pair is gold vs non-gold.
    tied = candidates[candidates.duplicated([*KEY, "score"], keep=False)]
    assert tied.groupby(KEY).size().eq(2).all()
    tied = tied.merge(queries[[*KEY, "has_evidence"]], on=KEY)
    gold_in_pair = tied[tied["has_evidence"] == 1].groupby(KEY)["is_gold"].sum()
    assert len(gold_in_pair) == 3
    assert gold_in_pair.eq(1).all()
    # The tie is at the top of the query's ranking.
    top = candidates.groupby(KEY)["score"].max().rename("top")
    tied = tied.merge(top, on=KEY)
    assert (tied["score"] == tied["top"]).all()


def test_planted_missed_gold(planted, per_query):
    hit = per_query[per_query["n_gold"] > per_query["found"]]
    assert _keys(hit) == set(planted.missed_gold)
    assert 10 <= len(hit) <= 50  # a few percent of the 1,379 positives
    assert hit["has_evidence"].eq(1).all()
    assert (hit["found"] == 0).sum() >= 2  # gold the candidate list missed entirely


def test_readme_documents_every_planted_problem(planted):
    text = demo.demo_paths().readme.read_text(encoding="utf-8")
    assert "SYNTHETIC" in text
    assert demo.DEMO_LABEL in text
    for post in planted.cross_fold_posts:
        assert post in text
    for group in (planted.positive_without_gold, planted.negative_with_gold,
                  planted.tied_scores, planted.missed_gold):
        for post, crit in group:
            assert f"{post}/{crit}" in text


# ----------------------------------------------------------------------- realistic metrics
def test_discrimination_and_calibration_bands(queries):
    y = queries["has_evidence"].to_numpy()
    p = queries["p_has_evidence"].to_numpy()
    assert 0.85 <= roc_auc_score(y, p) <= 0.90
    ece = _ece(y, p)
    assert 0.03 <= ece <= 0.08
    # Overconfident: positives in the top bin are observed less often than predicted.
    top = p >= 0.9
    assert p[top].mean() > y[top].mean()


def test_criteria_differ_in_difficulty_and_prevalence(queries):
    by = queries.groupby("criterion")
    auroc = by.apply(lambda g: roc_auc_score(g["has_evidence"], g["p_has_evidence"]),
                     include_groups=False)
    rate = by["has_evidence"].mean()
    assert 0.68 <= auroc.min() <= 0.76
    assert 0.92 <= auroc.max() <= 0.97
    assert 0.015 <= rate.min() <= 0.03
    assert 0.18 <= rate.max() <= 0.22


# --------------------------------------------------------------------- determinism and files
def test_generation_is_deterministic(queries, candidates):
    q2, c2 = demo.make_demo(problems=True)
    pd.testing.assert_frame_equal(queries, q2)
    pd.testing.assert_frame_equal(candidates, c2)
    q3, c3 = demo.make_synthetic(60, seed=5)
    q4, c4 = demo.make_synthetic(60, seed=5)
    pd.testing.assert_frame_equal(q3, q4)
    pd.testing.assert_frame_equal(c3, c4)
    q5, _ = demo.make_synthetic(60, seed=6)
    assert not q3["p_has_evidence"].equals(q5["p_has_evidence"])


def test_committed_files_match_regeneration(tmp_path):
    committed = demo.demo_paths()
    fresh = demo.write_demo(tmp_path)
    for name in ("queries", "candidates", "problems_queries", "problems_candidates"):
        old = pd.read_parquet(getattr(committed, name))
        new = pd.read_parquet(getattr(fresh, name))
        pd.testing.assert_frame_equal(old, new)
        meta = pq.read_schema(getattr(committed, name)).metadata
        assert meta[b"synthetic"] == b"true"
        assert meta[b"generator"] == b"metrics_core.demo"
        assert meta[b"seed"] == str(demo.DEMO_SEED).encode()
    pd.testing.assert_frame_equal(pd.read_csv(committed.triage), pd.read_csv(fresh.triage))


def test_committed_frames_equal_make_demo(queries, candidates, clean):
    paths = demo.demo_paths()
    pd.testing.assert_frame_equal(pd.read_parquet(paths.problems_queries), queries)
    pd.testing.assert_frame_equal(pd.read_parquet(paths.problems_candidates), candidates)
    pd.testing.assert_frame_equal(pd.read_parquet(paths.queries), clean[0])
    pd.testing.assert_frame_equal(pd.read_parquet(paths.candidates), clean[1])


def test_size_budget():
    paths = demo.demo_paths()
    sizes = [p.stat().st_size for p in (paths.queries, paths.candidates, paths.triage,
                                        paths.problems_queries, paths.problems_candidates)]
    assert sum(sizes) < 5_000_000
    assert paths.queries.parent == demo.demo_paths().readme.parent
    assert paths.queries.parent.name == "assets"


def test_main_writes_into_out(tmp_path, capsys):
    assert demo.main(["--out", str(tmp_path)]) == 0
    assert {p.name for p in tmp_path.iterdir()} == {
        "demo_queries.parquet", "demo_candidates.parquet", "demo_triage.csv",
        "demo_problems_queries.parquet", "demo_problems_candidates.parquet"}
    assert "demo_candidates.parquet" in capsys.readouterr().out


# ------------------------------------------------------------------------- make_synthetic
@settings(max_examples=30, deadline=None)
@given(n_posts=st.integers(1, 40), n_criteria=st.integers(1, 12),
       mean=st.sampled_from([5, 8, 20, 35]), seed=st.integers(0, 2**32 - 1))
def test_make_synthetic_invariants(n_posts, n_criteria, mean, seed):
    q, c = demo.make_synthetic(n_posts, n_criteria=n_criteria, seed=seed,
                               mean_candidates=mean)
    assert len(q) == n_posts * n_criteria
    assert list(q.columns) == QUERY_COLUMNS
    assert list(c.columns) == CANDIDATE_COLUMNS
    assert q.groupby("post_id")["fold"].nunique().eq(1).all()
    assert q["fold"].between(0, 4).all()
    n = c.groupby(KEY).size()
    assert len(n) == len(q)
    assert n.min() >= 5
    assert n.max() <= max(60, 3 * mean, 3 * n_criteria + 2)
    assert not c.duplicated([*KEY, "sent_uid"]).any()
    merged = q.merge(c.groupby(KEY)["is_gold"].sum().rename("found").reset_index(), on=KEY)
    assert (merged.loc[merged["has_evidence"] == 0, "found"] == 0).all()
    assert merged.loc[merged["has_evidence"] == 1, "found"].between(1, 3).all()
    assert (merged["n_gold"] >= merged["found"]).all()
    assert (merged.loc[merged["has_evidence"] == 0, "n_gold"] == 0).all()
    # Each post's sentences are shared by all its criteria.
    assert c.groupby(["post_id", "sent_uid"]).size().eq(n_criteria).all()


def test_make_synthetic_text_does_not_change_other_columns():
    q1, c1 = demo.make_synthetic(30, seed=2, with_text=True)
    q2, c2 = demo.make_synthetic(30, seed=2, with_text=False)
    pd.testing.assert_frame_equal(q1, q2)
    assert "sentence" not in c2.columns
    pd.testing.assert_frame_equal(c1.drop(columns="sentence"), c2)


def test_make_synthetic_fold_sizes_and_rates():
    q, _ = demo.make_synthetic(1_003, seed=9, with_text=False)
    sizes = q.groupby("fold")["post_id"].nunique().tolist()
    assert sizes == [200, 200, 200, 200, 203]
    # Positive count per criterion is round(rate x n_posts); A.1 has the highest rate (20%).
    assert q.loc[q["criterion"] == "A.1", "has_evidence"].sum() == round(0.2 * 1_003)


def _traced_events(fn) -> int:
    """Python events (calls, lines, returns) while ``fn`` runs: the work done by Python code,
    whatever the numeric libraries do inside and however loaded the machine is."""
    import sys

    count = 0

    def tracer(frame, event, arg):
        nonlocal count
        count += 1
        return tracer

    sys.settrace(tracer)
    try:
        fn()
    finally:
        sys.settrace(None)
    return count


def test_make_synthetic_is_vectorised():
    """No Python loop over posts: 100 times the posts run as many Python lines, give or take a
    branch (a loop over posts would add at least 4,950; a count, not a wall-clock time, so a
    slow machine cannot fail it)."""
    q, c = demo.make_synthetic(10_000, seed=1, with_text=False)
    assert len(q) == 100_000
    assert 1_800_000 <= len(c) <= 2_200_000
    small = _traced_events(lambda: demo.make_synthetic(50, seed=1, with_text=False))
    large = _traced_events(lambda: demo.make_synthetic(5_000, seed=1, with_text=False))
    assert abs(large - small) < 100


@pytest.mark.parametrize(("kwargs", "name"), [
    ({"n_posts": 0}, "n_posts"), ({"n_posts": 2.5}, "n_posts"), ({"n_posts": True}, "n_posts"),
    ({"n_posts": 5, "n_criteria": 0}, "n_criteria"),
    ({"n_posts": 5, "mean_candidates": 4}, "mean_candidates"),
    ({"n_posts": 5, "mean_candidates": float("nan")}, "mean_candidates"),
])
def test_make_synthetic_rejects_bad_arguments(kwargs, name):
    n_posts = kwargs.pop("n_posts")
    with pytest.raises(ValueError, match=name):
        demo.make_synthetic(n_posts, **kwargs)


# ---------------------------------------------------------------------------------- triage
def test_triage_file_shape():
    t = demo.make_triage()
    assert list(t.columns) == ["sample_id", "label", "prediction", "confidence",
                               "vision_llm_seconds", "agent_graph_seconds", "total_seconds",
                               "tool_count", "tool_seconds_total", "trial"]
    assert len(t) == 300
    assert t["trial"].value_counts().sort_index().to_dict() == {1: 100, 2: 100, 3: 100}
    assert set(t["label"]) == {"real", "fake"}
    assert set(t["prediction"]) == {"real", "fake", "uncertain"}
    assert t["confidence"].between(0.5, 1.0).all()
    # The same samples in every trial, with the same label.
    wide = t.pivot(index="sample_id", columns="trial", values="label")
    assert wide.notna().all().all()
    assert wide.nunique(axis=1).eq(1).all()
    # Slightly different predictions across trials: some samples, not most.
    changed = t.pivot(index="sample_id", columns="trial", values="prediction").nunique(axis=1)
    assert 1 <= (changed > 1).sum() <= 25
    # Timing consistency.
    assert (t["total_seconds"] >= t["vision_llm_seconds"] + t["agent_graph_seconds"]).all()
    assert (t["tool_seconds_total"] <= t["agent_graph_seconds"]).all()
    assert (t.loc[t["tool_count"] == 0, "tool_seconds_total"] == 0).all()
    assert t["tool_count"].between(0, 8).all()


def test_triage_is_deterministic_and_committed():
    pd.testing.assert_frame_equal(demo.make_triage(), demo.make_triage())
    committed = pd.read_csv(demo.demo_paths().triage)
    assert len(committed) == 300
    assert re.fullmatch(r"s\d{4}", committed["sample_id"].iloc[0])


def test_demo_label_and_paths():
    assert demo.DEMO_LABEL == ("Synthetic demo data (generated by metrics_core.demo, "
                               "not real patients)")
    paths = demo.demo_paths()
    assert paths.queries.name == "demo_queries.parquet"
    assert paths.candidates.name == "demo_candidates.parquet"
    assert paths.triage.name == "demo_triage.csv"
    assert all(p.is_file() for p in (paths.queries, paths.candidates, paths.triage,
                                     paths.readme))


# ------------------------------------------------------------------------ the plain demo
def test_plain_demo_is_a_plausible_screening_model_with_no_data_problems(clean):
    """The demo the app opens on: every check passes, the audit finds nothing, and the
    contract's default thresholds land near the seed 003 targets (most met)."""
    from metrics_core.config import EvalConfig
    from metrics_core.data.dataset import Dataset
    from metrics_core.evaluation.evaluator import Evaluator
    from metrics_core.inputs.audit import audit

    ds = Dataset.from_frames(*clean)
    report = audit(ds)
    assert [f.message for f in report.findings if f.level in ("error", "warning")] == []
    run = Evaluator(ds, audit=report).evaluate(EvalConfig(bootstrap=200))
    assert all(c.passed in (True, None) for c in run.checks)
    value = {r.name: r.value for r in run.records}
    assert 0.95 <= value["auroc"] <= 0.99  # good, not perfect
    assert value["ece"] < 0.05 and value["brier"] < 0.1
    assert 0.95 <= value["screening_sensitivity"] < 0.995  # near its target
    assert value["screening_fn_per_1000"] <= 5 and value["alert_precision"] >= 0.9
    status = dict(zip(run.targets["metric"], run.targets["status"], strict=True))
    met = [m for m, s in status.items() if s == "met (whole interval)"]
    assert len(met) >= 6 and status["screening_sensitivity"] == "not met"
    assert clean[0]["p_has_evidence"].nunique() > 10_000
    # no accidental score ties (the problems demo plants its own)
    assert not clean[1].duplicated(["post_id", "criterion", "score"]).any()


def test_the_demo_command_writes_the_shipped_files(tmp_path, capsys):
    """``metrics-core demo --out DIR`` generates every demo file the package ships, byte for
    byte (same generators, same seeds), with the README that describes them."""
    from metrics_core.cli import main
    from metrics_core.shipped import ASSETS

    out = tmp_path / "made" / "assets"
    assert main(["demo", "--out", str(out)]) == 0
    written = sorted(p.name for p in out.iterdir())
    assert written == sorted(["README.md", "demo_candidates.parquet", "demo_queries.parquet",
                              "demo_problems_candidates.parquet",
                              "demo_problems_queries.parquet", "demo_rag.jsonl",
                              "demo_triage.csv"])
    for name in written:
        assert (out / name).read_bytes() == (ASSETS / name).read_bytes(), name
    printed = capsys.readouterr().out.splitlines()
    assert printed[0] == f"wrote {out / 'demo_queries.parquet'}  (107,132 bytes)"
    assert len(printed) == 7


def test_the_demo_command_refuses_a_file_and_the_packages_copy(tmp_path, capsys):
    from metrics_core.cli import main
    from metrics_core.shipped import ASSETS

    (tmp_path / "f").write_text("x")
    assert main(["demo", "--out", str(tmp_path / "f")]) == 2
    assert f"--out {tmp_path / 'f'}: is a file, not a folder" in capsys.readouterr().err
    assert main(["demo", "--out", str(ASSETS)]) == 2
    assert "is the package's own copy of the demo" in capsys.readouterr().err
