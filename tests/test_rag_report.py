"""Tables and intervals of a RAG evaluation (metrics_core.rag.report / suite): undefined values
stay NaN (shown as "—"), the intervals are the project's one bootstrap over samples, and the
retrieval values do not depend on the order of samples or of the retrieved tuple."""

from __future__ import annotations

import numpy as np
import pytest

from metrics_core.metrics.uncertainty import bootstrap_cis, weighted_mean
from metrics_core.rag import loader, report, suite
from metrics_core.rag.data_model import SystemOutputs
from metrics_core.rag.demo import demo_rag_path
from metrics_core.rag.generation_overlap import TokenF1
from metrics_core.rag.retrieval_basic import RecallAtK
from tests.rag_helpers import sample, split


@pytest.fixture(scope="module")
def demo():
    data = loader.load_rag(demo_rag_path())
    metrics = suite.default_metrics(semantic=False)
    return data, metrics, suite.evaluate(data.samples, data.outputs, metrics)


def test_results_frame_keeps_undefined_values_nan(demo):
    _, _, results = demo
    frame = report.results_frame(results).set_index("metric")
    assert np.isnan(frame.loc["llm_faithfulness", "value"])
    assert frame.loc["llm_faithfulness", "n"] == 0
    assert "no LLM critic" in frame.loc["llm_faithfulness", "note"]
    tf1 = next(r for r in results if r.name == "token_f1")
    assert frame.loc["token_f1", "value"] == tf1.value
    assert np.isnan(frame.loc["token_f1", "ci95_lo"])  # no intervals passed


def test_intervals_are_the_one_bootstrap_over_samples(demo):
    _, _, results = demo
    cis = suite.bootstrap_intervals(results, n_resamples=300, seed=5)
    tf1 = next(r for r in results if r.name == "token_f1")
    values = tf1.per_sample
    direct = bootstrap_cis({"x": weighted_mean(values, np.isfinite(values))}, values.size,
                           n_resamples=300, seed=5)["x"]
    # Same resamples; the many-column matrix product may differ in the last bit.
    assert (cis["token_f1"].lo, cis["token_f1"].hi) == pytest.approx((direct.lo, direct.hi),
                                                                      abs=1e-12)
    assert cis["token_f1"].n_valid == direct.n_valid == 300
    assert cis["token_f1"].lo <= tf1.value <= cis["token_f1"].hi
    # Undefined results and the corpus-level ones without a resampling formula get none.
    assert "llm_faithfulness" not in cis and "distinct_2" not in cis
    assert "noise_robustness" in cis


def test_scenario_frame_matches_metrics_on_each_subset(demo):
    data, metrics, _ = demo
    frame = report.scenario_frame(data.samples, data.outputs, metrics).set_index("metric")
    typo = [i for i, s in enumerate(data.samples) if s.scenario == "typo"]
    col = f"typo (n={len(typo)})"
    expected = TokenF1().compute([data.samples[i] for i in typo],
                                 [data.outputs[i] for i in typo]).value
    assert frame.loc["token_f1", col] == expected
    assert "noise_robustness" not in frame.index


def test_pairs_and_worst_samples():
    samples, outputs = split([
        sample("b", reference="red apple", response="red apple"),
        sample("v", reference="red apple", response="red", scenario="typo", variant_of="b"),
        sample("x", reference=None, response="?"),
    ])
    pairs = report.pairs_frame(samples, outputs)
    assert pairs.to_dict("records") == [{
        "scenario": "typo", "base_id": "b", "variant_id": "v", "base_query": "question?",
        "variant_query": "question?", "base_answer": "red apple", "variant_answer": "red",
        "answer_token_f1": pytest.approx(2 / 3)}]
    worst = report.worst_frame(samples, outputs, TokenF1().compute(samples, outputs), n=5)
    assert worst["sample_id"].tolist() == ["v", "b"]  # "x" has no reference: skipped
    assert worst["token_f1"].tolist() == pytest.approx([2 / 3, 1.0])


def test_retrieval_does_not_depend_on_sample_or_tuple_order():
    rng = np.random.default_rng(8)
    pairs = [sample(f"q{i}", relevant=[f"d{j}" for j in rng.choice(8, 2, replace=False)],
                    retrieved=[f"d{j}" for j in rng.permutation(8)[:5]]) for i in range(30)]
    samples, outputs = split(pairs)
    base = RecallAtK(3).compute(samples, outputs)
    perm = rng.permutation(len(samples))
    shuffled = RecallAtK(3).compute([samples[i] for i in perm], [outputs[i] for i in perm])
    assert shuffled.value == pytest.approx(base.value, abs=1e-15)
    assert shuffled.per_sample == pytest.approx(base.per_sample[perm])
    # The retrieved tuple in reverse order, ranks kept: rank decides, not position.
    reversed_outputs = [SystemOutputs(retrieved=o.retrieved[::-1], response=o.response)
                        for o in outputs]
    assert RecallAtK(3).compute(samples, reversed_outputs).per_sample == pytest.approx(
        base.per_sample)


def test_corpus_level_intervals_reproduce_the_value_and_resample_it(demo):
    from sacrebleu.metrics import BLEU

    data, _, results = demo
    by_name = {r.name: r for r in results}
    n = len(data)
    ones = np.ones((1, n))
    # All-ones weights give the value itself.
    assert by_name["bleu"].resampled(ones)[0] == pytest.approx(by_name["bleu"].value, abs=1e-12)
    assert by_name["latency_p95"].resampled(ones)[0] == by_name["latency_p95"].value
    # Integer weights = repeating samples: compare with sacrebleu / the ceil rule on the
    # repeated corpus.
    rng = np.random.default_rng(1)
    weights = rng.integers(0, 3, size=(5, n)).astype(float)
    keep = [i for i, s in enumerate(data.samples) if s.reference_answer]
    for row in weights:
        idx = [i for i in keep for _ in range(int(row[i]))]
        expected = BLEU().corpus_score([data.outputs[i].response for i in idx],
                                       [[data.samples[i].reference_answer for i in idx]])
        got = by_name["bleu"].resampled(row[None, :])[0]
        assert got == pytest.approx(expected.score / 100, abs=1e-12)
        times = sorted(data.outputs[i].timings["end_to_end"] for i in range(n)
                       for _ in range(int(row[i])))
        q = times[int(np.ceil(round(0.95 * len(times), 9))) - 1]
        assert by_name["latency_p95"].resampled(row[None, :])[0] == q
    # No evaluated sample drawn: undefined.
    assert np.isnan(by_name["bleu"].resampled(np.zeros((1, n)))[0])
    cis = suite.bootstrap_intervals(results, n_resamples=300)
    for name in ("bleu", "latency_p95"):
        assert cis[name].lo <= by_name[name].value <= cis[name].hi
        assert cis[name].n_valid == 300


def test_the_table_says_how_counterfactual_answers_were_compared(demo):
    _, _, results = demo
    frame = report.results_frame(results).set_index("metric")
    assert frame.loc["counterfactual_consistency", "note"] == "answers compared by token_f1"
