"""Tests for metrics_core.metrics.ranking (contract §3).

Hand-worked examples, agreement with trec_eval (pytrec_eval) and with the seeds' per-query loop on
random data with ties, and hypothesis properties (bounds, perfect ranking, permutation
invariance, monotonicity in K).

Sources: "contract §N" is section N of docs/CONTRACT.md; "seed 000" is
docs/seeds/000-metric-specification.txt; "seed 002" is docs/seeds/002-rag-evaluation-spec.txt.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
import pytrec_eval
from hypothesis import given, settings
from hypothesis import strategies as st

from metrics_core.data.dataset import Dataset
from metrics_core.metrics._reference import naive_ranking_per_query
from metrics_core.metrics.ranking import (
    DEFAULT_KS,
    GAINS,
    MAP_DENOMINATORS,
    PRECISION_DENOMINATORS,
    RankingSummary,
    metric_names,
    ranking_per_query,
    summarize,
    undefined_mask,
)

ALL_VARIANTS = list(itertools.product(PRECISION_DENOMINATORS, MAP_DENOMINATORS, GAINS))


# ------------------------------------------------------------------------------- builders
def build(queries: list[dict]) -> Dataset:
    """Dataset from a list of queries.

    Each query: ``cands`` = list of ``(sent_uid, score, is_gold)`` or
    ``(sent_uid, score, is_gold, relevance)``; optional ``n_gold``, ``post``, ``crit``.
    """
    q_rows, c_rows = [], []
    for i, q in enumerate(queries):
        post, crit = q.get("post", f"p{i}"), q.get("crit", "A.1")
        found = sum(int(c[2]) for c in q["cands"])
        n_gold = q.get("n_gold", found)
        q_rows.append({"post_id": post, "criterion": crit, "has_evidence": int(n_gold > 0),
                       "p_has_evidence": 0.5, "n_gold": n_gold})
        for c in q["cands"]:
            row = {"post_id": post, "criterion": crit, "sent_uid": c[0], "score": c[1],
                   "is_gold": int(c[2])}
            if len(c) > 3:
                row["relevance"] = c[3]
            c_rows.append(row)
    cand = pd.DataFrame(c_rows, columns=["post_id", "criterion", "sent_uid", "score", "is_gold"]
                        + (["relevance"] if c_rows and "relevance" in c_rows[0] else []))
    query_cols = ["post_id", "criterion", "has_evidence", "p_has_evidence", "n_gold"]
    return Dataset.from_frames(pd.DataFrame(q_rows, columns=query_cols), cand)


def random_frames(rng: np.random.Generator, n_posts: int, *, max_cand: int = 25,
                  missed: bool = True, graded: bool = False):
    """Random queries/candidates with many exact score ties (scores are multiples of 1/4,
    exact in float32), some all-tied queries, short lists (0..4) and gold the list missed."""
    q_rows, c_rows = [], []
    for p in range(n_posts):
        for crit in ("A.1", "A.2", "A.3"):
            kind = rng.integers(4)
            n = int(rng.integers(0, 5)) if kind == 0 else int(rng.integers(1, max_cand + 1))
            if kind == 1:
                scores = np.full(n, 0.5)  # all tied
            elif kind == 2:
                scores = rng.permutation(n) / 4.0  # distinct
            else:
                scores = rng.integers(0, 6, n) / 4.0  # many ties
            uids = rng.choice(10_000, size=n, replace=False)
            if graded:
                rel = rng.integers(0, 4, n) * (rng.random(n) < 0.4)
                gold = rel > 0
            else:
                rel = None
                gold = rng.random(n) < rng.choice([0.0, 0.1, 0.3, 0.8])
            n_missed = int(rng.integers(0, 3)) if missed and rng.random() < 0.4 else 0
            n_gold = int(gold.sum()) + n_missed
            q_rows.append({"post_id": f"post{p}", "criterion": crit,
                           "has_evidence": int(n_gold > 0), "p_has_evidence": 0.5,
                           "n_gold": n_gold})
            for j in range(n):
                row = {"post_id": f"post{p}", "criterion": crit, "sent_uid": f"s{uids[j]}",
                       "score": float(scores[j]), "is_gold": int(gold[j])}
                if graded:
                    row["relevance"] = int(rel[j])
                c_rows.append(row)
    cols = ["post_id", "criterion", "sent_uid", "score", "is_gold"] + (["relevance"] * graded)
    return pd.DataFrame(q_rows), pd.DataFrame(c_rows, columns=cols)


def trec_eval(ds: Dataset, ks, *, graded: bool = False) -> dict[str, dict[str, float]]:
    """pytrec_eval on the Dataset: run = candidate scores, qrels = gold (relevance 1, or the
    gain 2^rel - 1 when graded, since trec_eval's nDCG gain is the qrel value) plus one entry
    per gold the list missed, so trec_eval's num_rel equals n_gold."""
    run, qrels = {}, {}
    for q in range(ds.n_queries):
        qid = f"{ds.post_id[q]}|{ds.criterion[q]}"
        sl = ds.candidate_slice(q)
        run[qid] = {str(u): float(s) for u, s in zip(ds.sent_uid[sl], ds.score[sl], strict=True)}
        if graded:
            qrels[qid] = {str(u): int(2 ** int(r) - 1)
                          for u, r in zip(ds.sent_uid[sl], ds.relevance[sl], strict=True)}
        else:
            qrels[qid] = {str(u): 1 for u, g in zip(ds.sent_uid[sl], ds.is_gold[sl], strict=True)
                          if g}
        for i in range(int(ds.n_gold[q]) - int(ds.n_gold_found[q])):
            qrels[qid][f"missed{i}"] = 1
    cut = ",".join(str(k) for k in ks)
    measures = {f"recall.{cut}", f"P.{cut}", f"success.{cut}", f"map_cut.{cut}",
                f"ndcg_cut.{cut}", "recip_rank"}
    return pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)


def log2(x):
    return math.log2(x)


# -------------------------------------------------------------------- hand-worked examples
@pytest.fixture
def two_of_three():
    """Six candidates, gold at positions 2 and 5, n_gold = 3 (one gold the list missed)."""
    cands = [("s1", 0.9, 0), ("s2", 0.8, 1), ("s3", 0.7, 0), ("s4", 0.6, 0), ("s5", 0.5, 1),
             ("s6", 0.4, 0)]
    return build([{"cands": cands, "n_gold": 3}])


def test_hand_worked_default(two_of_three):
    v = ranking_per_query(two_of_three, ks=(1, 3, 5, 10))
    got = {name: float(a[0]) for name, a in v.items()}
    # recall@K = gold in top K / |Gold| = 3
    assert got["recall@1"] == 0.0
    assert got["recall@3"] == pytest.approx(1 / 3, abs=1e-15)
    assert got["recall@5"] == pytest.approx(2 / 3, abs=1e-15)
    assert got["recall@10"] == pytest.approx(2 / 3, abs=1e-15)  # missed gold caps recall
    # precision@K = hits / K (K = 10 beyond the list: still / 10)
    assert got["precision@1"] == 0.0
    assert got["precision@3"] == pytest.approx(1 / 3, abs=1e-15)
    assert got["precision@5"] == pytest.approx(2 / 5, abs=1e-15)
    assert got["precision@10"] == pytest.approx(2 / 10, abs=1e-15)
    # hit@K
    assert (got["hit@1"], got["hit@3"], got["hit@5"]) == (0.0, 1.0, 1.0)
    # map@K (trec_eval map_cut): precision at hits (1/2 at i=2, 2/5 at i=5) / |Gold|
    assert got["map@1"] == 0.0
    assert got["map@3"] == pytest.approx((1 / 2) / 3, abs=1e-15)
    assert got["map@5"] == pytest.approx((1 / 2 + 2 / 5) / 3, abs=1e-15)
    assert got["map@10"] == pytest.approx((1 / 2 + 2 / 5) / 3, abs=1e-15)
    # ndcg@5: DCG = 1/log2(3) + 1/log2(6); IDCG over min(3, 5) = 3 ideal hits
    idcg3 = 1 / log2(2) + 1 / log2(3) + 1 / log2(4)
    assert got["ndcg@5"] == pytest.approx((1 / log2(3) + 1 / log2(6)) / idcg3, abs=1e-15)
    # ndcg@1: DCG 0
    assert got["ndcg@1"] == 0.0
    # ndcg@3: DCG = 1/log2(3); IDCG over min(3, 3) = 3
    assert got["ndcg@3"] == pytest.approx((1 / log2(3)) / idcg3, abs=1e-15)
    # mrr: first gold at position 2
    assert got["mrr"] == 0.5
    assert (got["mrr@1"], got["mrr@3"], got["mrr@10"]) == (0.0, 0.5, 0.5)


def test_hand_worked_variants(two_of_three):
    # precision / min(K, n_candidates) (seed 002): @10 -> 2 / min(10, 6) = 2/6; @5 unchanged
    v = ranking_per_query(two_of_three, ks=(5, 10), precision_denominator="min_k_n")
    assert v["precision@10"][0] == pytest.approx(2 / 6, abs=1e-15)
    assert v["precision@5"][0] == pytest.approx(2 / 5, abs=1e-15)
    # map / min(|Gold|, K) (seed 000): @3 -> (1/2) / min(3, 3); @5 -> (1/2 + 2/5) / 3
    v = ranking_per_query(two_of_three, ks=(3, 5), map_denominator="min_gold_k")
    assert v["map@3"][0] == pytest.approx((1 / 2) / 3, abs=1e-15)
    assert v["map@5"][0] == pytest.approx((1 / 2 + 2 / 5) / 3, abs=1e-15)
    # map / hits within K (seed 002): @3 -> (1/2) / 1; @5 -> (1/2 + 2/5) / 2; @1 no hit -> 0
    v = ranking_per_query(two_of_three, ks=(1, 3, 5), map_denominator="hits")
    assert v["map@1"][0] == 0.0
    assert v["map@3"][0] == pytest.approx(0.5, abs=1e-15)
    assert v["map@5"][0] == pytest.approx((1 / 2 + 2 / 5) / 2, abs=1e-15)


def test_map_denominators_differ_when_k_below_gold():
    # gold at position 1 of 4, |Gold| = 3 (two missed). K = 1: precision@1 = 1.
    ds = build([{"cands": [("a", 4, 1), ("b", 3, 0), ("c", 2, 0), ("d", 1, 0)], "n_gold": 3}])
    assert ranking_per_query(ds, ks=(1,))["map@1"][0] == pytest.approx(1 / 3)  # / |Gold|
    assert ranking_per_query(ds, ks=(1,), map_denominator="min_gold_k")["map@1"][0] == 1.0
    assert ranking_per_query(ds, ks=(1,), map_denominator="hits")["map@1"][0] == 1.0
    # recall@1 = 1/3; ndcg@1 = 1 (IDCG over min(3, 1) = 1 hit)
    v = ranking_per_query(ds, ks=(1,))
    assert v["recall@1"][0] == pytest.approx(1 / 3)
    assert v["ndcg@1"][0] == 1.0


def test_graded_gain_hand_worked():
    # relevance in ranking order [0, 2, 1, 0]; gains 2^rel - 1 = [0, 3, 1, 0].
    # DCG@3 = 3/log2(3) + 1/log2(4); ideal order [2, 1, 0, 0] -> IDCG@3 = 3/log2(2) + 1/log2(3)
    ds = build([{"cands": [("a", 4, 0, 0), ("b", 3, 1, 2), ("c", 2, 1, 1), ("d", 1, 0, 0)]}])
    v = ranking_per_query(ds, ks=(1, 3), gain="graded")
    assert v["ndcg@3"][0] == pytest.approx((3 / log2(3) + 1 / log2(4)) / (3 + 1 / log2(3)),
                                           abs=1e-15)
    assert v["ndcg@1"][0] == 0.0  # top item has gain 0, IDCG@1 = 3
    # binary on the same list: DCG@3 = 1/log2(3) + 1/log2(4), IDCG@3 over 2 hits
    b = ranking_per_query(ds, ks=(3,))
    assert b["ndcg@3"][0] == pytest.approx((1 / log2(3) + 1 / log2(4)) / (1 + 1 / log2(3)),
                                           abs=1e-15)


def test_score_ties_follow_sent_uid_descending():
    # All scores equal: order is sent_uid descending c, b, a (trec_eval rule, contract §3).
    ds = build([{"cands": [("a", 0.5, 1), ("b", 0.5, 0), ("c", 0.5, 0)]}])
    v = ranking_per_query(ds, ks=(1, 3))
    assert v["mrr"][0] == pytest.approx(1 / 3)
    assert v["hit@1"][0] == 0.0
    assert v["map@3"][0] == pytest.approx(1 / 3)  # precision 1/3 at position 3, / |Gold| = 1


def test_empty_gold_and_empty_list():
    ds = build([
        {"cands": [("a", 1.0, 0), ("b", 0.5, 0)]},  # |Gold| = 0
        {"cands": [], "n_gold": 2},  # gold exists, nothing retrieved
        {"cands": [("a", 1.0, 1)]},  # perfect single
    ])
    for variant in itertools.product(PRECISION_DENOMINATORS, MAP_DENOMINATORS):
        v = ranking_per_query(ds, precision_denominator=variant[0], map_denominator=variant[1])
        for name, a in v.items():
            assert a[0] == 0.0, name  # seed convention: |Gold| = 0 -> 0.0
            assert a[1] == 0.0, name  # no candidates: no hit, 0 precision (also min_k_n)
        assert v["mrr"][2] == 1.0 and v["ndcg@20"][2] == 1.0
    assert undefined_mask(ds).tolist() == [True, False, False]
    assert ds.positives.tolist() == [False, True, True]


def test_empty_dataset():
    ds = build([])
    v = ranking_per_query(ds)
    assert all(a.shape == (0,) for a in v.values())
    assert summarize(v["mrr"], ds.positives).n == 0


def test_output_layout():
    ds = build([{"cands": [("a", 1.0, 1)]}, {"cands": [("b", 1.0, 0)]}])
    v = ranking_per_query(ds, ks=(10, 2))
    assert list(v) == list(metric_names((10, 2)))
    assert list(v)[:2] == ["recall@10", "recall@2"] and list(v)[-1] == "mrr"
    assert all(a.dtype == np.float64 and a.shape == (2,) for a in v.values())
    assert len(ranking_per_query(ds)) == 6 * len(DEFAULT_KS) + 1


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"ks": ()}, "ks"), ({"ks": (0, 5)}, "ks"), ({"ks": (1.5,)}, "ks"), ({"ks": (3, 3)}, "ks"),
    ({"ks": 5}, "ks"), ({"precision_denominator": "n"}, "precision_denominator"),
    ({"map_denominator": "k"}, "map_denominator"), ({"gain": "exp"}, "gain"),
    ({"gain": "graded"}, "relevance"),
])
def test_invalid_options(kwargs, match):
    ds = build([{"cands": [("a", 1.0, 1)]}])
    with pytest.raises(ValueError, match=match):
        ranking_per_query(ds, **kwargs)
    with pytest.raises(ValueError, match=match):
        naive_ranking_per_query(ds, **kwargs)


def test_invalid_data():
    neg = build([{"cands": [("a", 1.0, 1, -1)]}])
    with pytest.raises(ValueError, match="relevance"):
        ranking_per_query(neg, gain="graded")
    short = build([{"cands": [("a", 1.0, 1), ("b", 0.5, 1)], "n_gold": 1}])
    with pytest.raises(ValueError, match="n_gold"):
        ranking_per_query(short)


# ------------------------------------------------------------------------------ summarize
def test_summarize_hand_worked():
    # values under the mask: 0, 0.5, 1 -> mean 0.5, std sqrt(((0.5)^2 * 2) / 3), median 0.5,
    # P25 = 0.25 and P75 = 0.75 by linear interpolation.
    s = summarize(np.array([0.0, 0.5, 1.0, 0.9]), np.array([True, True, True, False]))
    assert s == RankingSummary(mean=0.5, std=math.sqrt(0.5 / 3), median=0.5, p25=0.25,
                               p75=0.75, n=3)
    s = summarize(np.array([0.2, 0.4]))
    assert (s.n, s.mean) == (2, pytest.approx(0.3))


def test_summarize_empty_and_invalid():
    s = summarize(np.array([0.3, 0.7]), np.array([False, False]))
    assert s.n == 0 and all(math.isnan(x) for x in (s.mean, s.std, s.median, s.p25, s.p75))
    with pytest.raises(ValueError, match="mask"):
        summarize(np.array([0.3, 0.7]), np.array([True]))
    with pytest.raises(ValueError, match="mask"):
        summarize(np.array([0.3, 0.7]), np.array([1, 0]))
    with pytest.raises(ValueError, match="values"):
        summarize(np.zeros((2, 2)))


def test_summarize_matches_numpy():
    rng = np.random.default_rng(3)
    values, mask = rng.random(101), rng.random(101) < 0.6
    s = summarize(values, mask)
    sub = values[mask]
    assert s.mean == pytest.approx(sub.mean(), abs=1e-15)
    assert s.std == pytest.approx(np.std(sub, ddof=0), abs=1e-15)
    assert (s.p25, s.median, s.p75) == tuple(np.percentile(sub, [25, 50, 75]))
    assert s.n == int(mask.sum())


# -------------------------------------------------------------- agreement with trec_eval
TREC = {"recall": "recall_{k}", "precision": "P_{k}", "hit": "success_{k}", "map": "map_cut_{k}",
        "ndcg": "ndcg_cut_{k}"}


@pytest.mark.parametrize(("seed", "n_posts", "max_cand"), [(0, 40, 25), (1, 80, 8), (2, 30, 60)])
def test_agrees_with_trec_eval(seed, n_posts, max_cand):
    ks = (1, 2, 3, 5, 10, 20, 50)
    ds = Dataset.from_frames(*random_frames(np.random.default_rng(seed), n_posts,
                                            max_cand=max_cand))
    ref = trec_eval(ds, ks)
    v = ranking_per_query(ds, ks=ks)
    # trec_eval evaluates queries with a run and at least one relevant document.
    checked = np.flatnonzero((ds.n_gold >= 1) & (ds.n_cand >= 1))
    assert checked.size > 50
    assert (ds.n_gold_found[checked] < ds.n_gold[checked]).any()  # missed gold present
    for q in checked:
        r = ref[f"{ds.post_id[q]}|{ds.criterion[q]}"]
        for k in ks:
            for name, trec in TREC.items():
                assert v[f"{name}@{k}"][q] == pytest.approx(r[trec.format(k=k)], abs=1e-12), \
                    (name, k, q)
        assert v["mrr"][q] == pytest.approx(r["recip_rank"], abs=1e-12)


@pytest.mark.parametrize("seed", [4, 5])
def test_graded_ndcg_agrees_with_trec_eval(seed):
    # trec_eval's nDCG gain is the qrel value: qrels carry 2^rel - 1 for every candidate.
    ks = (1, 3, 5, 10, 20)
    ds = Dataset.from_frames(*random_frames(np.random.default_rng(seed), 50, missed=False,
                                            graded=True))
    ref = trec_eval(ds, ks, graded=True)
    v = ranking_per_query(ds, ks=ks, gain="graded")
    checked = np.flatnonzero(ds.n_gold >= 1)
    assert checked.size > 50
    for q in checked:
        r = ref[f"{ds.post_id[q]}|{ds.criterion[q]}"]
        for k in ks:
            assert v[f"ndcg@{k}"][q] == pytest.approx(r[f"ndcg_cut_{k}"], abs=1e-12), (k, q)


# -------------------------------------------------------- agreement with the seeds' loop
@pytest.mark.parametrize(("precision_denominator", "map_denominator", "gain"), ALL_VARIANTS)
@pytest.mark.parametrize("seed", [7, 8])
def test_agrees_with_naive_loop(seed, precision_denominator, map_denominator, gain):
    rng = np.random.default_rng(seed)
    graded = gain == "graded"
    ds = Dataset.from_frames(*random_frames(rng, 60, max_cand=30, missed=not graded,
                                            graded=graded))
    kwargs = {"ks": (20, 1, 3, 7, 40), "precision_denominator": precision_denominator,
              "map_denominator": map_denominator, "gain": gain}
    fast, slow = ranking_per_query(ds, **kwargs), naive_ranking_per_query(ds, **kwargs)
    assert list(fast) == list(slow)
    for name in fast:
        np.testing.assert_allclose(fast[name], slow[name], rtol=0, atol=1e-12, err_msg=name)


def test_graded_with_large_labels_agrees_with_naive_loop():
    # labels spread over 0..40 exercise the (query, label) sort key with a large top label
    rng = np.random.default_rng(11)
    qf, cf = random_frames(rng, 30, missed=False, graded=True)
    cf["relevance"] = cf["relevance"] * rng.integers(1, 14, len(cf))
    ds = Dataset.from_frames(qf, cf)
    fast = ranking_per_query(ds, gain="graded")
    slow = naive_ranking_per_query(ds, gain="graded")
    for name in fast:
        np.testing.assert_allclose(fast[name], slow[name], rtol=1e-13, atol=1e-13, err_msg=name)


# ---------------------------------------------------------------------- hypothesis properties
@st.composite
def frames(draw, *, perfect: bool = False):
    n_queries = draw(st.integers(1, 6))
    q_rows, c_rows = [], []
    for i in range(n_queries):
        post, crit = f"p{i // 2}", f"A.{i % 2 + 1}"
        n = draw(st.integers(1 if i == 0 else 0, 8))  # a candidate-less Dataset has no labels
        gold = draw(st.lists(st.booleans(), min_size=n, max_size=n))
        rel = [draw(st.integers(1, 3)) if g else 0 for g in gold]
        if perfect:  # gold first, higher labels first
            scores = [1.0 + r for r in rel]
            n_missed = 0
        else:
            scores = draw(st.lists(st.sampled_from([0.0, 0.25, 0.5, 1.0, -3.0]), min_size=n,
                                   max_size=n))
            n_missed = draw(st.integers(0, 2))
        n_gold = sum(gold) + n_missed
        q_rows.append({"post_id": post, "criterion": crit, "has_evidence": int(n_gold > 0),
                       "p_has_evidence": 0.5, "n_gold": n_gold})
        for j in range(n):
            c_rows.append({"post_id": post, "criterion": crit, "sent_uid": f"u{j}",
                           "score": scores[j], "is_gold": int(gold[j]), "relevance": rel[j]})
    cols = ["post_id", "criterion", "sent_uid", "score", "is_gold", "relevance"]
    return pd.DataFrame(q_rows), pd.DataFrame(c_rows, columns=cols)


KS = (1, 2, 3, 5, 10)


@settings(max_examples=60, deadline=None)
@given(frames(), st.sampled_from(ALL_VARIANTS))
def test_property_bounds(fr, variant):
    ds = Dataset.from_frames(*fr)
    v = ranking_per_query(ds, ks=KS, precision_denominator=variant[0],
                          map_denominator=variant[1], gain=variant[2])
    for name, a in v.items():
        assert np.all((a >= 0.0) & (a <= 1.0 + 1e-15)), name
        assert not np.any(a[undefined_mask(ds)]), name


@settings(max_examples=60, deadline=None)
@given(frames(perfect=True))
def test_property_perfect_ranking(fr):
    ds = Dataset.from_frames(*fr)
    pos = ds.n_gold >= 1
    for map_den in MAP_DENOMINATORS:
        for gain in GAINS:
            v = ranking_per_query(ds, ks=KS, map_denominator=map_den, gain=gain)
            assert np.all(v["mrr"][pos] == 1.0)
            for k in KS:
                assert np.allclose(v[f"ndcg@{k}"][pos], 1.0, rtol=0, atol=1e-15)
                full = pos & (ds.n_gold <= k)
                assert np.all(v[f"recall@{k}"][full] == 1.0)
                m = v[f"map@{k}"]
                if map_den == "n_gold":
                    assert np.all(m[full] == 1.0)
                    assert np.allclose(m[pos], np.minimum(k, ds.n_gold[pos]) / ds.n_gold[pos])
                else:
                    assert np.all(m[pos] == 1.0)


@settings(max_examples=60, deadline=None)
@given(frames(), st.randoms(use_true_random=False), st.sampled_from(ALL_VARIANTS))
def test_property_row_order_invariance(fr, rnd, variant):
    qf, cf = fr
    kwargs = {"ks": KS, "precision_denominator": variant[0], "map_denominator": variant[1],
              "gain": variant[2]}
    base = Dataset.from_frames(qf, cf)
    q_perm = list(range(len(qf)))
    c_perm = list(range(len(cf)))
    rnd.shuffle(q_perm)
    rnd.shuffle(c_perm)
    shuffled = Dataset.from_frames(qf.iloc[q_perm].reset_index(drop=True),
                                   cf.iloc[c_perm].reset_index(drop=True))
    a, b = ranking_per_query(base, **kwargs), ranking_per_query(shuffled, **kwargs)
    key_a = list(zip(base.post_id, base.criterion, strict=True))
    key_b = {k: i for i, k in enumerate(zip(shuffled.post_id, shuffled.criterion, strict=True))}
    align = np.array([key_b[k] for k in key_a], dtype=np.int64)
    for name in a:
        np.testing.assert_array_equal(a[name], b[name][align], err_msg=name)


@settings(max_examples=60, deadline=None)
@given(frames())
def test_property_monotone_in_k(fr):
    ds = Dataset.from_frames(*fr)
    v = ranking_per_query(ds, ks=KS)
    for lo, hi in itertools.pairwise(KS):
        for name in ("recall", "hit", "map", "mrr"):
            assert np.all(v[f"{name}@{lo}"] <= v[f"{name}@{hi}"]), name
        assert np.all(v[f"mrr@{hi}"] <= v["mrr"])
