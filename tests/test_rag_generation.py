"""Generation overlap metrics of seed 002 §4.1, §4.2, §4.4.1: hand-worked values, the edge cases
(no reference, empty prediction) and agreement with rouge-score and sacrebleu on random data."""

from __future__ import annotations

import numpy as np
import pytest

from metrics_core.rag.data_model import TargetCategory
from metrics_core.rag.generation_overlap import (
    BleuScore,
    EvidenceOverlapFaithfulness,
    ExactMatch,
    Rouge1,
    Rouge2,
    RougeL,
    RougeScores,
    TokenF1,
    token_f1,
)
from metrics_core.rag.text import normalize
from tests.rag_helpers import sample, split

rouge_scorer = pytest.importorskip("rouge_score.rouge_scorer")
sacrebleu = pytest.importorskip("sacrebleu")


def test_normalisation_of_seed_002():
    assert normalize("  The  Quick, brown fox!  ") == "quick brown fox"
    assert normalize("An apple; a pear.") == "apple pear"
    assert normalize("The End", ignore_articles=False) == "the end"
    assert normalize("Hello, World", ignore_case=False, ignore_punctuation=False) == "Hello, World"


def test_exact_match_and_token_f1_hand_worked():
    samples, outputs = split([
        sample("1", reference="The Eiffel Tower", response="eiffel tower!"),   # EM 1, F1 1
        sample("2", reference="Paris France", response="Paris"),  # EM 0, F1 2*1*.5/1.5 = 2/3
        sample("3", reference="red blue", response="green"),      # EM 0, F1 0
    ])
    em = ExactMatch().compute(samples, outputs)
    f1 = TokenF1().compute(samples, outputs)
    assert em.value == pytest.approx(1 / 3)
    assert f1.value == pytest.approx((1 + 2 / 3 + 0) / 3)
    assert em.target is TargetCategory.GENERATION_CORRECTNESS
    assert list(f1.per_sample) == pytest.approx([1.0, 2 / 3, 0.0])


def test_token_f1_counts_repeated_tokens_as_a_multiset():
    # pred: cat cat cat; ref: cat dog -> common 1, P 1/3, R 1/2, F1 0.4.
    assert token_f1("cat cat cat", "cat dog") == pytest.approx(0.4)


def test_no_reference_is_skipped_and_empty_support_is_zero_and_undefined():
    samples, outputs = split([sample("1", reference=None, response="x"),
                              sample("2", reference="   ", response="x")])
    for metric in (ExactMatch(), TokenF1(), Rouge1(), Rouge2(), RougeL(), BleuScore()):
        r = metric.compute(samples, outputs)
        assert r.value == 0.0 and r.details["num_samples"] == 0
        assert r.details["num_skipped"] == 2
        assert not r.defined


def test_empty_prediction_scores_zero():
    samples, outputs = split([sample("1", reference="a cat", response="")])
    for metric in (ExactMatch(), TokenF1(), Rouge1(), RougeL()):
        r = metric.compute(samples, outputs)
        assert r.value == 0.0 and r.details["num_samples"] == 1 and r.defined
    assert BleuScore().compute(samples, outputs).value == 0.0


def test_rouge_hand_worked():
    # rouge1 of "the cat sat" against "the cat": P 2/3, R 1 -> F 0.8.
    samples, outputs = split([sample("1", reference="the cat", response="the cat sat")])
    assert Rouge1().compute(samples, outputs).value == pytest.approx(0.8)
    # rouge2: bigrams {the cat, cat sat} vs {the cat}: P 1/2, R 1 -> 2/3.
    assert Rouge2().compute(samples, outputs).value == pytest.approx(2 / 3)
    # Stemmer on: "running dogs" matches "run dog" fully.
    samples, outputs = split([sample("1", reference="run dog", response="running dogs")])
    assert Rouge1().compute(samples, outputs).value == pytest.approx(1.0)
    assert Rouge1(use_stemmer=False).compute(samples, outputs).value == 0.0


def test_rouge_against_the_query_is_relevance():
    samples, outputs = split([sample("1", query="where is the cat", response="the cat")])
    r = RougeScores("rouge1", compare_to="query").compute(samples, outputs)
    assert r.name == "rouge1_query" and r.target is TargetCategory.GENERATION_RELEVANCE
    assert r.value == pytest.approx(2 * 1 * 0.5 / 1.5)


WORDS = ("the", "a", "cat", "dog", "sat", "ran", "on", "under", "mat", "log", "red", "blue",
         "big", "small", "quickly")


def random_texts(rng, n):
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(0, 12)))) for _ in range(n)]


def test_rouge_agrees_with_rouge_score_on_random_data():
    rng = np.random.default_rng(3)
    preds, refs = random_texts(rng, 80), random_texts(rng, 80)
    refs = [r or "cat" for r in refs]
    samples, outputs = split([sample(str(i), reference=r, response=p)
                              for i, (p, r) in enumerate(zip(preds, refs, strict=True))])
    for metric, variant in ((Rouge1(), "rouge1"), (Rouge2(), "rouge2"), (RougeL(), "rougeL")):
        scorer = rouge_scorer.RougeScorer([variant], use_stemmer=True)
        expected = [scorer.score(r, p)[variant].fmeasure for p, r in zip(preds, refs,
                                                                          strict=True)]
        r = metric.compute(samples, outputs)
        assert r.per_sample == pytest.approx(expected, abs=1e-12)
        assert r.value == pytest.approx(np.mean(expected), abs=1e-12)


def test_bleu_agrees_with_sacrebleu_corpus_bleu_on_random_data():
    rng = np.random.default_rng(4)
    preds, refs = random_texts(rng, 60), random_texts(rng, 60)
    pairs = [sample(str(i), reference=r or None, response=p)
             for i, (p, r) in enumerate(zip(preds, refs, strict=True))]
    samples, outputs = split(pairs)
    kept = [(p, r) for p, r in zip(preds, refs, strict=True) if r]
    expected = sacrebleu.corpus_bleu([p for p, _ in kept], [[r for _, r in kept]])
    r = BleuScore().compute(samples, outputs)
    assert r.value == pytest.approx(expected.score / 100, abs=1e-12)
    assert r.details["num_samples"] == len(kept)
    assert r.details["num_skipped"] == len(preds) - len(kept)


def test_bleu_hand_worked():
    # Identical 4-token texts: every n-gram precision 1, brevity penalty 1 -> BLEU 1.
    samples, outputs = split([sample("1", reference="the cat sat down",
                                     response="the cat sat down")])
    r = BleuScore().compute(samples, outputs)
    assert r.value == pytest.approx(1.0) and r.details["bp"] == 1.0
    # 3 of 4 unigrams, 2 of 3 bigrams, 1 of 2 trigrams, 0 of 1 4-grams (exp smoothing: 1/2
    # for the first zero count, over 1 -> 1/2), no brevity penalty (4 vs 4 tokens):
    # BLEU = (3/4 * 2/3 * 1/2 * 1/2) ** (1/4).
    samples, outputs = split([sample("1", reference="the cat sat down",
                                     response="the cat sat up")])
    assert BleuScore().compute(samples, outputs).value == pytest.approx(
        (3 / 4 * 2 / 3 * 1 / 2 * 1 / 2) ** 0.25)


def test_evidence_overlap_faithfulness_hand_worked():
    # Evidence (top-2 retrieved): "text of a" "text of b" -> {text, of, a, b} minus article a
    # after normalisation -> {text, of, b}. Response "text of c": 2 of 3 unigrams supported.
    s, o = sample("1", retrieved=("a", "b", "c"), response="text of c")
    r = EvidenceOverlapFaithfulness(top_k=2).compute([s], [o])
    assert r.value == pytest.approx(2 / 3)
    assert EvidenceOverlapFaithfulness().compute([s], [o]).value == pytest.approx(1.0)
    # Bigrams: response bigrams (text of), (of c); evidence top-2 has (text of), (of b).
    assert EvidenceOverlapFaithfulness(n=2, top_k=2).compute([s], [o]).value == 0.5
    # Relevant docs as the evidence: a sample without any is skipped.
    s2, o2 = sample("2", relevant=(), retrieved=("a",), response="text")
    r = EvidenceOverlapFaithfulness(evidence_source="relevant").compute([s, s2], [o, o2])
    assert r.details["num_samples"] == 0 and not r.defined
    # An empty response scores 0; nothing retrieved scores 0.
    s3, o3 = sample("3", retrieved=("a",), response="")
    s4, o4 = sample("4", retrieved=(), response="words")
    r = EvidenceOverlapFaithfulness().compute([s3, s4], [o3, o4])
    assert list(r.per_sample) == [0.0, 0.0] and r.defined


def test_bleu_logs_no_sacrebleu_warning_and_keeps_corpus_statistics(caplog):
    # The per-sample statistics of the bootstrap come from sentence_score with
    # effective_order=True (sacrebleu's recommendation; without it one WARNING per sample).
    # The counts do not depend on it: all-ones weights give the corpus BLEU, also when a
    # sentence has no 3- or 4-gram match (where effective_order changes a sentence's score).
    samples, outputs = split([
        sample("1", reference="the cat sat on the mat", response="the cat sat on a mat"),
        sample("2", reference="a dog ran far away", response="dog far"),
        sample("3", reference="red blue green", response="green blue red")])
    with caplog.at_level("DEBUG"):
        r = BleuScore().compute(samples, outputs)
    assert [rec.getMessage() for rec in caplog.records if rec.name == "sacrebleu"] == []
    expected = sacrebleu.corpus_bleu(["the cat sat on a mat", "dog far", "green blue red"],
                                     [["the cat sat on the mat", "a dog ran far away",
                                       "red blue green"]])
    assert r.value == pytest.approx(expected.score / 100, abs=1e-12)
    assert r.resampled(np.ones((1, 3)))[0] == pytest.approx(r.value, abs=1e-12)
