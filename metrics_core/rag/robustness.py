"""Robustness: noise robustness, negative rejection, counterfactual consistency (seed 002 §6;
contract §12).

Subsets come from ``labels``: ``variant_of`` links a perturbed sample to its base sample and
``scenario`` names the perturbation (``paraphrase``, ``typo``, ``unanswerable``,
``counterfactual``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from metrics_core.rag.base import Metric, check_lengths
from metrics_core.rag.data_model import MetricResult, TargetCategory
from metrics_core.rag.generation_overlap import TokenF1

__all__ = ["DEFAULT_REFUSAL_PATTERNS", "CounterfactualConsistency", "NegativeRejectionRate",
           "NoiseRobustness", "variant_pairs"]

#: Refusal patterns of seed 002 §6.2 (matched in the lower-cased response).
DEFAULT_REFUSAL_PATTERNS = ("i don't know", "cannot answer", "not enough information")


def variant_pairs(samples, *, scenarios: Sequence[str] | None = None) -> list[tuple[int, int]]:
    """``(base index, variant index)`` of every sample whose ``variant_of`` names a sample of
    the list (and whose scenario is in ``scenarios``, when given), in input order."""
    index = {s.sample_id: i for i, s in enumerate(samples)}
    pairs = []
    for i, s in enumerate(samples):
        parent = s.variant_of
        if parent is None or parent not in index:
            continue
        if scenarios is not None and s.scenario not in scenarios:
            continue
        pairs.append((index[parent], i))
    return pairs


class NoiseRobustness(Metric):
    """``noisy_score / base_score`` of a base metric (seed 002 §6.1; token F1 by default).

    Base set: the samples without ``variant_of``; noisy set: the samples with ``variant_of``
    and a scenario in ``noise_scenarios``. The base metric is computed on each set; the value
    is 0 when ``base_score`` is 0 (seed 002) and the result is then marked undefined, as it is
    when either set has no evaluated sample. ``num_samples`` counts the noisy samples the base
    metric evaluated.
    """

    name = "noise_robustness"
    target = TargetCategory.NOISE_ROBUSTNESS

    def __init__(self, base_metric: Metric | None = None, *,
                 noise_scenarios: Sequence[str] = ("paraphrase", "typo")) -> None:
        self.base_metric = base_metric if base_metric is not None else TokenF1()
        self.noise_scenarios = tuple(noise_scenarios)

    def required_fields(self) -> list[str]:
        return ["labels", *self.base_metric.required_fields()]

    def compute(self, samples, outputs):
        check_lengths(samples, outputs)
        base = [i for i, s in enumerate(samples) if s.variant_of is None]
        noisy = [i for i, s in enumerate(samples)
                 if s.variant_of is not None and s.scenario in self.noise_scenarios]
        base_r = self.base_metric.compute([samples[i] for i in base], [outputs[i] for i in base])
        noisy_r = self.base_metric.compute([samples[i] for i in noisy],
                                           [outputs[i] for i in noisy])
        n_base, n_noisy = base_r.details["num_samples"], noisy_r.details["num_samples"]
        defined = n_base > 0 and n_noisy > 0 and base_r.value > 0
        value = noisy_r.value / base_r.value if defined else 0.0
        resampled = None
        if base_r.per_sample is not None and noisy_r.per_sample is not None:
            resampled = _ratio_of_means(len(samples), base, base_r.per_sample, noisy,
                                        noisy_r.per_sample)
        return MetricResult(self.name, self.target, value, resampled=resampled, details={
            "num_samples": n_noisy if defined else 0, "base_metric": self.base_metric.name,
            "base_score": base_r.value, "noisy_score": noisy_r.value,
            "num_base_samples": n_base, "num_noisy_samples": n_noisy,
            "noise_scenarios": list(self.noise_scenarios)})


def _ratio_of_means(n: int, base: list[int], base_values, noisy: list[int], noisy_values):
    """``noisy mean / base mean`` of weighted samples (``nan`` where either set has no
    evaluated sample drawn or the base mean is 0)."""
    cols = np.zeros((n, 4))
    for rows, values, j in ((base, base_values, 0), (noisy, noisy_values, 2)):
        values = np.asarray(values, dtype=np.float64)
        ok = np.isfinite(values)
        cols[np.asarray(rows, dtype=np.int64)[ok], j] = values[ok]
        cols[np.asarray(rows, dtype=np.int64)[ok], j + 1] = 1.0

    def statistic(weights: np.ndarray) -> np.ndarray:
        sums = weights @ cols
        with np.errstate(divide="ignore", invalid="ignore"):
            base_mean = sums[:, 0] / sums[:, 1]
            noisy_mean = sums[:, 2] / sums[:, 3]
            return np.where(base_mean > 0, noisy_mean / base_mean, np.nan)

    return statistic


class NegativeRejectionRate(Metric):
    """Share of ``unanswerable`` samples whose response contains a refusal pattern (seed 002
    §6.2; the response is lower-cased and stripped, typographic apostrophes read as ')."""

    name = "negative_rejection_rate"
    target = TargetCategory.NEGATIVE_REJECTION

    def __init__(self, refusal_patterns: Sequence[str] = DEFAULT_REFUSAL_PATTERNS, *,
                 scenario: str = "unanswerable") -> None:
        self.refusal_patterns = tuple(p.lower() for p in refusal_patterns)
        self.scenario = scenario

    def required_fields(self) -> list[str]:
        return ["labels", "response"]

    def is_rejected(self, response: str) -> bool:
        text = response.lower().replace("’", "'").strip()
        return any(p in text for p in self.refusal_patterns)

    def compute(self, samples, outputs):
        n = check_lengths(samples, outputs)
        values = np.full(n, np.nan)
        for i, (s, o) in enumerate(zip(samples, outputs, strict=True)):
            if s.scenario == self.scenario:
                values[i] = float(self.is_rejected(o.response))
        evaluated = np.isfinite(values)
        k = int(np.nansum(values))
        m = int(evaluated.sum())
        return MetricResult(self.name, self.target, k / m if m else 0.0,
                            {"num_samples": m, "num_skipped": n - m, "num_rejected": k},
                            per_sample=values)


class CounterfactualConsistency(Metric):
    """Mean similarity of the answers of each (base, counterfactual) pair (seed 002 §6.3).

    ``similarity`` is a metric with a ``similarities(texts_a, texts_b)`` method:
    :class:`~metrics_core.rag.generation_semantic.EmbeddingSimilarity` or
    :class:`~metrics_core.rag.generation_semantic.BertScoreMetric` as in the seed, or the
    default token F1 between the two answers (lexical; no model needed).
    :func:`~metrics_core.rag.suite.default_metrics` passes the embedding similarity when the
    semantic metrics are on. ``details["similarity"]`` names the one used; ``per_sample``
    holds each pair's similarity at the counterfactual sample.
    """

    name = "counterfactual_consistency"
    target = TargetCategory.COUNTERFACTUAL_ROBUSTNESS

    def __init__(self, similarity=None, *, scenarios: Sequence[str] = ("counterfactual",)) -> None:
        self.similarity = similarity if similarity is not None else TokenF1()
        self.scenarios = tuple(scenarios)

    def required_fields(self) -> list[str]:
        return ["labels", "response"]

    def compute(self, samples, outputs):
        n = check_lengths(samples, outputs)
        pairs = variant_pairs(samples, scenarios=self.scenarios)
        values = np.full(n, np.nan)
        details = {"similarity": self.similarity.name}
        if pairs:
            # A similarity may say whether it can compute here (the embeddings' need the
            # rag-semantic extra or an embedding function); one that does not say can.
            ready = getattr(self.similarity, "ready", lambda: True)
            if not ready():
                from metrics_core.rag.generation_semantic import SEMANTIC_MISSING

                return MetricResult(self.name, self.target, math.nan,
                                    {"num_samples": 0, "num_skipped": n,
                                     "skipped_reason": SEMANTIC_MISSING, **details},
                                    per_sample=values)
            scores = self.similarity.similarities([outputs[b].response for b, _ in pairs],
                                                  [outputs[v].response for _, v in pairs])
            values[[v for _, v in pairs]] = scores
        m = len(pairs)
        return MetricResult(self.name, self.target, float(np.mean(values[np.isfinite(values)]))
                            if m else 0.0, {"num_samples": m, "num_pairs": m, **details},
                            per_sample=values)
