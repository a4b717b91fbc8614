"""Retrieval metrics of seed 002 §3 (contract §3, §12): hand-worked values, the edge cases,
agreement with trec_eval (pytrec_eval) on random data, and the ranking kernel underneath."""

from __future__ import annotations

import math

import numpy as np
import pytest

from metrics_core.rag import retrieval_kernel, suite
from metrics_core.rag.data_model import TargetCategory
from metrics_core.rag.retrieval_basic import HitRateAtK, PrecisionAtK, RecallAtK
from metrics_core.rag.retrieval_ranking import MeanAveragePrecision, MRRAtK, NDCGAtK
from tests.rag_helpers import sample, split

# Sample A: G = {a, c, x}, ranking b a d c (x never retrieved). Sample B: G = {z}, ranking y z.
# Sample C: G = {} (skipped by every retrieval metric).
A = sample("A", relevant=("a", "c", "x"), retrieved=("b", "a", "d", "c"))
B = sample("B", relevant=("z",), retrieved=("y", "z"))
C = sample("C", relevant=(), retrieved=("a", "b"))
SAMPLES, OUTPUTS = split([A, B, C])


def value(metric):
    return metric.compute(SAMPLES, OUTPUTS)


def test_recall_precision_hit_hand_worked():
    # recall@2: A 1/3, B 1/1 -> 2/3. recall@4: A 2/3, B 1 -> 5/6.
    assert value(RecallAtK(2)).value == pytest.approx((1 / 3 + 1) / 2)
    assert value(RecallAtK(4)).value == pytest.approx((2 / 3 + 1) / 2)
    # precision@4 = |G ∩ R_4| / min(4, |R|): A 2/4, B 1/min(4, 2) = 1/2 -> 0.5.
    assert value(PrecisionAtK(4)).value == pytest.approx(0.5)
    # precision@1: A 0/1, B 0/1.
    assert value(PrecisionAtK(1)).value == 0.0
    assert value(HitRateAtK(1)).value == 0.0
    assert value(HitRateAtK(2)).value == 1.0
    r = value(RecallAtK(2))
    assert r.details["num_samples"] == 2
    assert r.details["skipped_empty_gold"] == 1
    assert r.target is TargetCategory.RETRIEVAL_RELEVANCE
    assert r.name == "recall@2"


def test_ranking_metrics_hand_worked():
    # MRR: A first gold at 2, B at 2 -> 0.5; mrr@1 -> 0.
    assert value(MRRAtK()).value == pytest.approx(0.5)
    assert value(MRRAtK(1)).value == 0.0
    # AP (over hits): A hits at 2 and 4: (1/2 + 2/4) / 2 = 0.5; B (1/2) / 1 -> MAP 0.5.
    assert value(MeanAveragePrecision()).value == pytest.approx(0.5)
    # MAP@2: A (1/2) / 1, B (1/2) / 1 -> 0.5; MAP@1: no hits -> 0.
    assert value(MeanAveragePrecision(k=2)).value == pytest.approx(0.5)
    assert value(MeanAveragePrecision(k=1)).value == 0.0
    # nDCG@4: A DCG = 1/log2(3) + 1/log2(5), IDCG = 1 + 1/log2(3) + 1/log2(4) (|G| = 3).
    dcg_a = 1 / math.log2(3) + 1 / math.log2(5)
    idcg_a = 1 + 1 / math.log2(3) + 1 / math.log2(4)
    ndcg_b = (1 / math.log2(3)) / 1.0
    assert value(NDCGAtK(4)).value == pytest.approx((dcg_a / idcg_a + ndcg_b) / 2)
    assert value(MeanAveragePrecision()).target is TargetCategory.RETRIEVAL_ACCURACY
    assert value(MeanAveragePrecision()).name == "map"


def test_no_relevant_docs_anywhere_is_empty_support():
    samples, outputs = split([C, sample("D", retrieved=("q",))])
    for metric in (RecallAtK(3), PrecisionAtK(3), HitRateAtK(3), MRRAtK(), NDCGAtK(3),
                   MeanAveragePrecision()):
        r = metric.compute(samples, outputs)
        assert r.value == 0.0
        assert r.details["num_samples"] == 0
        assert r.details["skipped_empty_gold"] == 2
        assert not r.defined
        assert np.isnan(r.per_sample).all()


def test_nothing_retrieved_scores_zero_and_counts():
    samples, outputs = split([sample("E", relevant=("a",), retrieved=())])
    for metric in (RecallAtK(3), PrecisionAtK(3), HitRateAtK(3), MRRAtK(), NDCGAtK(3),
                   MeanAveragePrecision()):
        r = metric.compute(samples, outputs)
        assert r.value == 0.0 and r.details["num_samples"] == 1 and r.defined


def test_repeated_relevant_doc_counts_once_and_repeated_retrieval_is_an_error():
    samples, outputs = split([sample("R", relevant=("a", "a", "b"), retrieved=("a", "c"))])
    # |G| = |{a, b}| = 2 -> recall@2 = 1/2.
    assert RecallAtK(2).compute(samples, outputs).value == 0.5
    samples, outputs = split([sample("D", relevant=("a",), retrieved=("a", "a"))])
    with pytest.raises(ValueError, match="sample 'D': doc_id 'a' is retrieved more than once"):
        RecallAtK(2).compute(samples, outputs)


def test_length_mismatch_is_an_error():
    with pytest.raises(ValueError, match="same length"):
        RecallAtK(1).compute(SAMPLES, OUTPUTS[:2])


def test_bad_k_is_an_error():
    with pytest.raises(ValueError, match="k must be"):
        RecallAtK(0)
    with pytest.raises(ValueError, match="gain_scheme"):
        NDCGAtK(3, gain_scheme="graded")


def test_suite_runs_the_kernel_once_for_all_cut_offs(monkeypatch):
    import metrics_core.metrics.ranking as ranking

    calls = []
    real = ranking.ranking_per_query

    def spy(ds, **kw):
        calls.append(kw["ks"])
        return real(ds, **kw)

    monkeypatch.setattr(ranking, "ranking_per_query", spy)
    metrics = [m for m in suite.default_metrics(semantic=False)
               if m.target in (TargetCategory.RETRIEVAL_RELEVANCE,
                               TargetCategory.RETRIEVAL_ACCURACY)]
    results = suite.evaluate(SAMPLES, OUTPUTS, metrics)
    assert len(calls) == 1
    direct = [m.compute(SAMPLES, OUTPUTS).value for m in metrics]
    assert [r.value for r in results] == pytest.approx(direct)


def random_samples(rng, n=60, *, all_gold_retrieved=False):
    pairs = []
    for q in range(n):
        pool = [f"d{j}" for j in range(int(rng.integers(3, 15)))]
        ranked = list(rng.permutation(pool))[: int(rng.integers(1, len(pool) + 1))]
        if all_gold_retrieved:
            gold = [d for d in ranked if rng.random() < 0.3]
        else:
            gold = [d for d in pool if rng.random() < 0.3]
        if not gold:
            gold = [ranked[int(rng.integers(len(ranked)))]]
        pairs.append(sample(f"q{q}", relevant=gold, retrieved=ranked))
    return split(pairs)


def trec(samples, outputs, measures):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels = {s.sample_id: {d.doc_id: 1 for d in s.relevant_docs} for s in samples}
    run = {s.sample_id: {r.doc.doc_id: float(100 - r.rank) for r in o.retrieved}
           for s, o in zip(samples, outputs, strict=True)}
    return pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)


def test_agreement_with_trec_eval_on_random_data():
    rng = np.random.default_rng(11)
    samples, outputs = random_samples(rng)
    got = trec(samples, outputs, {"recall", "ndcg_cut", "recip_rank", "success", "P"})
    per = retrieval_kernel.retrieval_per_sample(samples, outputs, ks=(5, 10), full_list=True)
    for i, s in enumerate(samples):
        t = got[s.sample_id]
        for k in (5, 10):
            assert per[f"recall@{k}"][i] == pytest.approx(t[f"recall_{k}"], abs=1e-12)
            assert per[f"ndcg@{k}"][i] == pytest.approx(t[f"ndcg_cut_{k}"], abs=1e-12)
            assert per[f"hit_rate@{k}"][i] == pytest.approx(t[f"success_{k}"], abs=1e-12)
            # trec_eval's P@k divides by k; seed 002 by min(k, |R|).
            n_ret = len(outputs[i].retrieved)
            assert per[f"precision@{k}"][i] == pytest.approx(
                t[f"P_{k}"] * k / min(k, n_ret), abs=1e-12)
        assert per["mrr"][i] == pytest.approx(t["recip_rank"], abs=1e-12)


def test_map_agrees_with_trec_eval_when_every_relevant_doc_is_retrieved():
    # Seed 002 averages AP over the hits; trec_eval over |G|: equal when all gold is retrieved.
    rng = np.random.default_rng(12)
    samples, outputs = random_samples(rng, all_gold_retrieved=True)
    got = trec(samples, outputs, {"map"})
    r = MeanAveragePrecision().compute(samples, outputs)
    for i, s in enumerate(samples):
        assert r.per_sample[i] == pytest.approx(got[s.sample_id]["map"], abs=1e-12)
    assert r.value == pytest.approx(np.mean([got[s.sample_id]["map"] for s in samples]))
