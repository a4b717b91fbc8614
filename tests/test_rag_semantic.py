"""Semantic similarity (seed 002 §4.3): embedding cosine with a given embedding function
(hand-worked), the bundled all-MiniLM-L6-v2 model and BERTScore offline, and the skip message
when the rag-semantic extra is missing."""

from __future__ import annotations

import math

import numpy as np
import pytest

from metrics_core.rag import generation_semantic as sem
from metrics_core.rag.data_model import TargetCategory
from metrics_core.rag.robustness import CounterfactualConsistency
from tests.rag_helpers import sample, split

VECTORS = {"north": [1.0, 0.0], "east": [0.0, 1.0], "north east": [1.0, 1.0], "void": [0.0, 0.0]}


def embed(texts):
    return [VECTORS[t] for t in texts]


def test_embedding_similarity_hand_worked():
    samples, outputs = split([
        sample("1", reference="north", response="north"),        # cos 1
        sample("2", reference="north", response="east"),         # cos 0
        sample("3", reference="north east", response="north"),   # cos 1/√2
        sample("4", reference="north", response="void"),         # zero vector -> 0
        sample("5", reference=None, response="north"),           # skipped
    ])
    r = sem.EmbeddingSimilarity(embed).compute(samples, outputs)
    assert r.per_sample[:4] == pytest.approx([1.0, 0.0, 1 / math.sqrt(2), 0.0])
    assert np.isnan(r.per_sample[4])
    assert r.value == pytest.approx((1 + 1 / math.sqrt(2)) / 4)
    assert r.details["num_samples"] == 4 and r.target is TargetCategory.GENERATION_CORRECTNESS
    q = sem.EmbeddingSimilarity(embed, compare_to="query").compute(
        *split([sample("1", query="east", response="north east")]))
    assert q.value == pytest.approx(1 / math.sqrt(2))
    assert q.target is TargetCategory.GENERATION_RELEVANCE


def test_missing_extra_gives_a_clear_skip_note(monkeypatch):
    monkeypatch.setattr(sem, "semantic_available", lambda: False)
    samples, outputs = split([sample("1", reference="a", response="a")])
    for metric in (sem.BertScoreMetric(), sem.EmbeddingSimilarity()):
        r = metric.compute(samples, outputs)
        assert math.isnan(r.value) and not r.defined  # undefined, never a silent 0
        assert r.to_dict()["value"] is None
        assert r.details["skipped_reason"] == sem.SEMANTIC_MISSING
        assert 'python -m pip install -e ".[rag-semantic]"' in r.details["skipped_reason"]
    # With its own embedding function the metric needs no extra.
    assert sem.EmbeddingSimilarity(lambda t: [[1.0]] * len(t)).compute(samples,
                                                                       outputs).defined
    cf = CounterfactualConsistency(sem.EmbeddingSimilarity()).compute(
        *split([sample("b", response="x"),
                sample("c", response="y", scenario="counterfactual", variant_of="b")]))
    assert cf.details["skipped_reason"] == sem.SEMANTIC_MISSING and not cf.defined
    assert math.isnan(cf.value) and cf.to_dict()["value"] is None


needs_extra = pytest.mark.skipif(not sem.semantic_available(),
                                 reason="needs the rag-semantic extra")


@pytest.fixture(scope="module")
def minilm():
    return sem.EmbeddingSimilarity()


@needs_extra
def test_bundled_model_loads_offline_and_ranks_meaning(minilm, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    sims = minilm.similarities(
        ["The cat sits on the mat.", "The cat sits on the mat.", "The cat sits on the mat."],
        ["The cat sits on the mat.", "A kitten is sitting on a rug.",
         "Stock markets fell sharply on Monday."])
    assert sims[0] == pytest.approx(1.0, abs=1e-5)
    assert sims[1] > sims[2] + 0.2


@needs_extra
def test_bertscore_agrees_with_bert_score_offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import bert_score

    preds = ["the cat sat on the mat", "a dog ran", ""]
    refs = ["a cat was sitting on the mat", "the dog is running", "anything"]
    samples, outputs = split([sample(str(i), reference=r, response=p)
                              for i, (p, r) in enumerate(zip(preds, refs, strict=True))])
    r = sem.BertScoreMetric().compute(samples, outputs)
    _, _, f = bert_score.score(preds[:2], refs[:2], model_type=sem.default_model_path(),
                               num_layers=6, device="cpu")
    assert r.per_sample[:2] == pytest.approx(f.numpy().astype(float), abs=1e-6)
    assert r.per_sample[2] == 0.0  # an empty response scores 0
    assert r.name == "bertscore_f1"
    same = sem.BertScoreMetric().compute(*split([sample("x", reference="same words",
                                                        response="same words")]))
    assert same.value == pytest.approx(1.0, abs=1e-5)


def _counterfactual(metrics):
    return next(m for m in metrics if isinstance(m, CounterfactualConsistency))


def test_counterfactual_consistency_by_token_f1_when_the_semantic_metrics_are_off(monkeypatch):
    from metrics_core.rag import suite

    cf = _counterfactual(suite.default_metrics(semantic=False))
    assert cf.similarity.name == "token_f1"
    # On, but without the extra: token F1 too (the embedding metric itself reports the skip).
    monkeypatch.setattr(suite, "semantic_available", lambda: False)
    assert _counterfactual(suite.default_metrics(semantic=True)).similarity.name == "token_f1"


@needs_extra
def test_counterfactual_consistency_is_semantic_when_the_semantic_metrics_are_on():
    # Seed 002 §6.3: the answers of a (base, counterfactual) pair are compared by a semantic
    # similarity; the embedding similarity's own instance, so its model loads once.
    from metrics_core.rag import loader, suite
    from metrics_core.rag.demo import demo_rag_path
    from metrics_core.rag.robustness import variant_pairs

    metrics = suite.default_metrics(semantic=True)
    embedding = next(m for m in metrics if m.name == "embedding_similarity")
    cf_metric = _counterfactual(metrics)
    assert cf_metric.similarity is embedding
    data = loader.load_rag(demo_rag_path())
    results = {r.name: r for r in suite.evaluate(data.samples, data.outputs, metrics)}
    cf = results["counterfactual_consistency"]
    assert cf.details["similarity"] == "embedding_similarity"
    pairs = variant_pairs(data.samples, scenarios=("counterfactual",))
    assert len(pairs) == cf.details["num_pairs"] > 0
    # The reference: the bundled model's cosine of each pair's answers, computed apart.
    cosines = sem.EmbeddingSimilarity().similarities(
        [data.outputs[b].response for b, _ in pairs], [data.outputs[v].response for _, v in pairs])
    assert cf.value == pytest.approx(float(np.mean(cosines)), abs=1e-6)
    lexical = CounterfactualConsistency().compute(data.samples, data.outputs)
    assert lexical.details["similarity"] == "token_f1"
    assert abs(cf.value - lexical.value) > 1e-3  # a different comparison, a different value
