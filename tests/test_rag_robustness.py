"""Robustness (seed 002 §6), latency and diversity (§7): hand-worked values and skip rules."""

from __future__ import annotations

import math

import numpy as np
import pytest

from metrics_core.rag.additional import DistinctN, IntraListDiversity, MeanLatency, QuantileLatency
from metrics_core.rag.data_model import TargetCategory
from metrics_core.rag.retrieval_basic import RecallAtK
from metrics_core.rag.robustness import (
    CounterfactualConsistency,
    NegativeRejectionRate,
    NoiseRobustness,
    variant_pairs,
)
from tests.rag_helpers import sample, split


def robustness_set():
    return split([
        sample("b1", reference="red apple", response="red apple"),             # F1 1
        sample("b2", reference="green pear", response="green"),                # F1 2/3
        sample("n1", reference="red apple", response="red", scenario="typo",
               variant_of="b1"),                                               # F1 2/3
        sample("n2", reference="green pear", response="blue", scenario="paraphrase",
               variant_of="b2"),                                               # F1 0
        sample("c1", reference="red apple", response="red apples", scenario="counterfactual",
               variant_of="b1"),
        sample("u1", response="Sorry, I don’t know.", scenario="unanswerable"),
        sample("u2", response="It was built in 1850.", scenario="unanswerable"),
        sample("u3", response="There is NOT ENOUGH INFORMATION here.",
               scenario="unanswerable"),
    ])


def test_noise_robustness_hand_worked():
    samples, outputs = robustness_set()
    r = NoiseRobustness().compute(samples, outputs)
    # Base set: samples without variant_of that have a reference: b1 (1), b2 (2/3) -> 5/6
    # (the unanswerable ones have no reference and are skipped by token F1).
    # Noisy set: n1 (2/3), n2 (0) -> 1/3. Robustness = (1/3) / (5/6) = 0.4.
    assert r.details["base_score"] == pytest.approx(5 / 6)
    assert r.details["noisy_score"] == pytest.approx(1 / 3)
    assert r.value == pytest.approx(0.4)
    assert r.details["num_noisy_samples"] == 2 and r.details["num_base_samples"] == 2
    assert r.details["base_metric"] == "token_f1"
    assert r.target is TargetCategory.NOISE_ROBUSTNESS and r.defined
    # As a function of sample weights: all ones give the value; dropping b2 (weight 0) and
    # doubling n1: base 1, noisy (2 * 2/3 + 0) / 3 = 4/9.
    w = np.ones((2, len(samples)))
    w[1, 1], w[1, 2] = 0, 2
    assert r.resampled(w) == pytest.approx([0.4, 4 / 9])


def test_noise_robustness_with_another_base_metric_and_empty_support():
    samples, outputs = split([sample("b", relevant=("a",), retrieved=("a",)),
                              sample("n", relevant=("a",), retrieved=("x", "a"),
                                     scenario="typo", variant_of="b")])
    r = NoiseRobustness(RecallAtK(1)).compute(samples, outputs)
    assert r.value == 0.0 and r.details["noisy_score"] == 0.0 and r.defined
    r = NoiseRobustness().compute(*split([sample("b", reference="x", response="y")]))
    assert r.value == 0.0 and not r.defined  # no noisy sample
    # A base score of 0 gives 0 (seed 002) and is marked undefined.
    r = NoiseRobustness(RecallAtK(1)).compute(
        *split([sample("b", relevant=("a",), retrieved=("x",)),
                sample("n", relevant=("a",), retrieved=("a",), scenario="typo",
                       variant_of="b")]))
    assert r.value == 0.0 and not r.defined


def test_negative_rejection_rate_hand_worked():
    samples, outputs = robustness_set()
    r = NegativeRejectionRate().compute(samples, outputs)
    # u1 (typographic apostrophe, matched) and u3 (upper case, matched) of 3.
    assert r.value == pytest.approx(2 / 3)
    assert r.details == {"num_samples": 3, "num_skipped": 5, "num_rejected": 2}
    empty = NegativeRejectionRate().compute(*split([sample("x", response="")]))
    assert empty.value == 0.0 and not empty.defined
    # An empty response to an unanswerable query is not a rejection.
    r = NegativeRejectionRate().compute(*split([sample("u", response="",
                                                       scenario="unanswerable")]))
    assert r.value == 0.0 and r.defined


def test_counterfactual_consistency_hand_worked():
    samples, outputs = robustness_set()
    assert variant_pairs(samples, scenarios=("counterfactual",)) == [(0, 4)]
    r = CounterfactualConsistency().compute(samples, outputs)
    # token F1("red apple", "red apples") = 2 * 1/2 * 1/2 / 1 = 0.5.
    assert r.value == pytest.approx(0.5)
    assert r.details["num_pairs"] == 1 and r.details["similarity"] == "token_f1"
    assert r.per_sample[4] == pytest.approx(0.5) and np.isnan(r.per_sample[0])
    none = CounterfactualConsistency().compute(*split([sample("b")]))
    assert none.value == 0.0 and not none.defined


def test_latency_mean_and_quantile_by_the_ceil_rule():
    values = [float(v) for v in range(1, 21)]  # 1..20 s, shuffled
    rng = np.random.default_rng(0)
    pairs = [sample(str(i), timings={"end_to_end": v})
             for i, v in enumerate(rng.permutation(values))]
    pairs.append(sample("no-timing"))
    samples, outputs = split(pairs)
    assert MeanLatency().compute(samples, outputs).value == pytest.approx(10.5)
    # ceil(0.95 * 20) - 1 = 18 -> the 19th smallest, 19.0; ceil(0.5 * 20) - 1 = 9 -> 10.0;
    # ceil(0.99 * 20) - 1 = 19 -> 20.0; ceil(0.01 * 20) - 1 = 0 -> 1.0.
    for q, expected in ((0.95, 19.0), (0.5, 10.0), (0.99, 20.0), (0.01, 1.0), (1.0, 20.0)):
        r = QuantileLatency(q).compute(samples, outputs)
        assert r.value == expected, q
        assert r.details["num_samples"] == 20 and r.details["num_skipped"] == 1
    assert QuantileLatency(0.95).name == "latency_p95"
    assert QuantileLatency(0.999).name == "latency_p99_9"
    assert not QuantileLatency().compute(*split([sample("x")])).defined


def test_distinct_n_hand_worked():
    samples, outputs = split([sample("1", response="the cat sat on mat"),
                              sample("2", response="cat sat on hat"),
                              sample("3", response="")])
    # Normalised tokens: [cat sat on mat], [cat sat on hat] -> bigrams 3 + 3 = 6, unique:
    # (cat sat) (sat on) (on mat) (on hat) = 4.
    r = DistinctN(2).compute(samples, outputs)
    assert r.value == pytest.approx(4 / 6)
    assert r.details["num_samples"] == 2 and r.name == "distinct_2"
    assert DistinctN(1).compute(samples, outputs).value == pytest.approx(5 / 8)
    assert not DistinctN(2).compute(*split([sample("x", response="one")])).defined


def test_intra_list_diversity_hand_worked():
    emb = {"a": [1.0, 0.0], "b": [0.0, 2.0], "c": [1.0, 1.0], "z": [0.0, 0.0]}
    samples, outputs = split([
        sample("1", retrieved=("a", "b"), embeddings=emb),        # cos 0 -> ILD 1
        sample("2", retrieved=("a", "c"), embeddings=emb),        # cos 1/√2 -> 1 - 1/√2
        sample("3", retrieved=("a",), embeddings=emb),             # fewer than two: skipped
        sample("4", retrieved=("a", "q"), embeddings=emb),         # missing embedding
        sample("5", retrieved=("a", "z"), embeddings=emb),         # zero vector
        sample("6", retrieved=("a", "b", "c"), embeddings=emb),    # three pairs
    ])
    r = IntraListDiversity(top_k=5).compute(samples, outputs)
    six = 1 - (0 + 1 / math.sqrt(2) + 1 / math.sqrt(2)) / 3
    assert r.per_sample[0] == pytest.approx(1.0)
    assert r.per_sample[1] == pytest.approx(1 - 1 / math.sqrt(2))
    assert r.per_sample[5] == pytest.approx(six)
    assert r.value == pytest.approx((1 + 1 - 1 / math.sqrt(2) + six) / 3)
    assert (r.details["skipped_fewer_than_two"], r.details["skipped_missing_embedding"],
            r.details["skipped_zero_embedding"]) == (1, 1, 1)
    # top_k = 2 keeps only a, b of sample 6.
    assert IntraListDiversity(top_k=2).compute(samples, outputs).per_sample[5] == (
        pytest.approx(1.0))


def test_intra_list_diversity_of_huge_finite_embeddings():
    # Cosine does not depend on scale: (1e300, 1e300) and (2e300, 2e300) point the same way
    # (ILD 0), (1e300, -1e300) is orthogonal to them. Their norms overflowed to inf, and
    # every such sample scored a diversity of 1.
    emb = {"a": [1e300, 1e300], "b": [2e300, 2e300], "c": [1e300, -1e300]}
    samples, outputs = split([sample("1", retrieved=("a", "b"), embeddings=emb),
                              sample("2", retrieved=("a", "c"), embeddings=emb)])
    r = IntraListDiversity().compute(samples, outputs)
    assert list(r.per_sample) == pytest.approx([0.0, 1.0])
