"""Latency and diversity (seed 002 §7; contract §12).

>>> from metrics_core.rag.data_model import EvaluationSample, SystemOutputs
>>> s = [EvaluationSample(str(i), "?") for i in range(4)]
>>> o = [SystemOutputs(timings={"end_to_end": t}) for t in (0.4, 0.1, 0.3, 0.2)]
>>> QuantileLatency(quantile=0.5).compute(s, o).value   # sorted[ceil(0.5 * 4) - 1]
0.2
"""

from __future__ import annotations

import math

import numpy as np

from metrics_core.rag.base import Metric, check_lengths, mean_result
from metrics_core.rag.data_model import MetricResult, TargetCategory
from metrics_core.rag.text import ngrams, tokens

__all__ = ["DistinctN", "IntraListDiversity", "MeanLatency", "QuantileLatency"]


def _timings(outputs, key: str) -> np.ndarray:
    """One value per output, ``nan`` where the timing is missing (skipped)."""
    return np.array([float(o.timings[key]) if o.timings.get(key) is not None else np.nan
                     for o in outputs], dtype=np.float64)


class MeanLatency(Metric):
    """Mean of ``timings[timing_key]`` in seconds; samples without it are skipped (§7.1.1)."""

    name = "mean_latency"
    target = TargetCategory.LATENCY

    def __init__(self, timing_key: str = "end_to_end") -> None:
        self.timing_key = timing_key

    def required_fields(self) -> list[str]:
        return ["timings"]

    def compute(self, samples, outputs):
        check_lengths(samples, outputs)
        return mean_result(self.name, self.target, _timings(outputs, self.timing_key),
                           timing_key=self.timing_key)


class QuantileLatency(Metric):
    """The ``quantile`` of ``timings[timing_key]``: ``sorted[ceil(q * n) - 1]`` (§7.1.2).

    Named ``latency_p95`` for ``quantile=0.95`` (``latency_p99_9`` for 0.999).
    """

    target = TargetCategory.LATENCY

    def __init__(self, quantile: float = 0.95, timing_key: str = "end_to_end") -> None:
        if not 0 < quantile <= 1:
            raise ValueError(f"quantile must be in (0, 1], got {quantile!r}")
        self.quantile, self.timing_key = float(quantile), timing_key
        self.name = "latency_p" + f"{self.quantile * 100:g}".replace(".", "_")

    def required_fields(self) -> list[str]:
        return ["timings"]

    def compute(self, samples, outputs):
        n = check_lengths(samples, outputs)
        values = _timings(outputs, self.timing_key)
        values = np.sort(values[np.isfinite(values)])
        m = values.size
        # ceil of q * m with a tolerance, so that 0.95 * 20 (= 19.000000000000004) is 19.
        index = max(math.ceil(round(self.quantile * m, 9)) - 1, 0)
        return MetricResult(self.name, self.target, float(values[index]) if m else 0.0,
                            {"num_samples": m, "num_skipped": n - m, "quantile": self.quantile,
                             "timing_key": self.timing_key},
                            resampled=_quantile_of_weights(_timings(outputs, self.timing_key),
                                                           self.quantile))


def _quantile_of_weights(values: np.ndarray, quantile: float):
    """The ceil-rule quantile of weighted values (a weight w repeats a value w times),
    vectorised over the rows of a weight matrix; ``nan`` where the weights of the finite
    values sum to 0."""
    keep = np.flatnonzero(np.isfinite(values))
    order = keep[np.argsort(values[keep], kind="stable")]
    ranked = values[order]

    def statistic(weights: np.ndarray) -> np.ndarray:
        cum = np.cumsum(weights[:, order], axis=1)
        total = cum[:, -1] if ranked.size else np.zeros(weights.shape[0])
        target = np.maximum(np.ceil(np.round(quantile * total, 9)), 1.0)
        pos = np.minimum((cum < target[:, None]).sum(axis=1), max(ranked.size - 1, 0))
        out = ranked[pos] if ranked.size else np.full(weights.shape[0], np.nan)
        return np.where(total > 0, out, np.nan)

    return statistic


class DistinctN(Metric):
    """Distinct-n over all responses: unique n-grams / all n-grams (seed 002 §7.2.1).

    Tokens as for exact match (lower case, punctuation and articles removed). ``num_samples``
    counts the responses with at least one n-gram; with no n-gram at all the value is 0 and
    undefined.
    """

    target = TargetCategory.DIVERSITY

    def __init__(self, n: int = 2) -> None:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"n must be an integer >= 1, got {n!r}")
        self.n = n
        self.name = f"distinct_{n}"

    def required_fields(self) -> list[str]:
        return ["response"]

    def compute(self, samples, outputs):
        n_samples = check_lengths(samples, outputs)
        counts = [ngrams(tokens(o.response), self.n) for o in outputs]
        total = sum(sum(c.values()) for c in counts)
        unique = len(set().union(*counts)) if counts else 0
        used = sum(1 for c in counts if c)
        return MetricResult(self.name, self.target, unique / total if total else 0.0,
                            {"num_samples": used, "num_skipped": n_samples - used,
                             "unique_ngrams": unique, "total_ngrams": total, "n": self.n})


class IntraListDiversity(Metric):
    """``1 - mean pairwise cosine similarity`` of the top ``top_k`` retrieved documents'
    ``metadata["embedding"]`` vectors, mean over samples (seed 002 §7.2.2).

    A sample is skipped when fewer than two of its top-k documents, or not all of them, carry
    an embedding, or an embedding is the zero vector (``details`` counts each reason).
    """

    name = "intra_list_diversity"
    target = TargetCategory.DIVERSITY

    def __init__(self, top_k: int = 5) -> None:
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 2:
            raise ValueError(f"top_k must be an integer >= 2, got {top_k!r}")
        self.top_k = top_k

    def required_fields(self) -> list[str]:
        return ["retrieved"]

    def compute(self, samples, outputs):
        n = check_lengths(samples, outputs)
        values = np.full(n, np.nan)
        missing = short = zero = 0
        for i, o in enumerate(outputs):
            top = sorted(o.retrieved, key=lambda r: r.rank)[:self.top_k]
            vectors = [r.doc.metadata.get("embedding") for r in top]
            if len(top) < 2:
                short += 1
                continue
            if any(v is None for v in vectors):
                missing += 1
                continue
            try:
                x = np.asarray(vectors, dtype=np.float64)
            except ValueError:
                raise ValueError(f"sample {samples[i].sample_id!r}: the embeddings of its "
                                 f"top-{self.top_k} documents differ in length") from None
            # Cosine similarity does not depend on a vector's scale: divide by its largest
            # magnitude first, so that norms of large finite values do not overflow.
            peak = np.abs(x).max(axis=1)
            if (peak == 0).any():
                zero += 1
                continue
            x = x / peak[:, None]
            unit = x / np.linalg.norm(x, axis=1)[:, None]
            sim = unit @ unit.T
            m = len(top)
            mean_sim = (sim.sum() - np.trace(sim)) / (m * (m - 1))
            values[i] = 1.0 - mean_sim
        return mean_result(self.name, self.target, values, top_k=self.top_k,
                           skipped_missing_embedding=missing, skipped_fewer_than_two=short,
                           skipped_zero_embedding=zero)
