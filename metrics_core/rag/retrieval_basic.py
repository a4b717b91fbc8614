"""Retrieval relevance: Recall@k, Precision@k, HitRate@k (seed 002 §3.1; contract §3, §12).

All three skip samples with no relevant document (``|G| = 0``) and count them in
``details["skipped_empty_gold"]``; they run on the vectorised ranking kernel
(:mod:`metrics_core.rag.retrieval_kernel`), not on a per-sample loop.

>>> from metrics_core.rag.data_model import (Document, EvaluationSample, RetrievedDocument,
...                                     SystemOutputs)
>>> s = EvaluationSample("q1", "?", relevant_docs=(Document("a"), Document("c")))
>>> o = SystemOutputs(retrieved=(RetrievedDocument(Document("a"), 0.9, 1),
...                              RetrievedDocument(Document("b"), 0.5, 2)))
>>> RecallAtK(k=2).compute([s], [o]).value, PrecisionAtK(k=5).compute([s], [o]).value
(0.5, 0.5)
"""

from __future__ import annotations

from metrics_core.rag.base import Metric, check_lengths, mean_result
from metrics_core.rag.data_model import TargetCategory
from metrics_core.rag.retrieval_kernel import retrieval_per_sample

__all__ = ["HitRateAtK", "PrecisionAtK", "RecallAtK"]


class _AtK(Metric):
    target = TargetCategory.RETRIEVAL_RELEVANCE
    _key = ""
    _prefix = ""

    def __init__(self, k: int = 5) -> None:
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise ValueError(f"k must be an integer >= 1, got {k!r}")
        self.k = k
        self.name = f"{self._prefix}@{k}"

    def required_fields(self) -> list[str]:
        return ["relevant_docs", "retrieved"]

    def compute(self, samples, outputs):
        check_lengths(samples, outputs)
        return self.from_values(retrieval_per_sample(samples, outputs, ks=(self.k,)))

    def from_values(self, values: dict):
        """The result from :func:`retrieval_per_sample` arrays computed once for many
        metrics (they must include this metric's ``k``)."""
        result = mean_result(self.name, self.target, values[f"{self._key}@{self.k}"], k=self.k)
        result.details["skipped_empty_gold"] = result.details["num_skipped"]
        return result


class RecallAtK(_AtK):
    """``|G ∩ R_k| / |G|``, mean over samples with ``|G| > 0`` (seed 002 §3.1.1)."""

    _key = _prefix = "recall"


class PrecisionAtK(_AtK):
    """``|G ∩ R_k| / min(k, |R|)`` (0 when nothing was retrieved), mean over samples with
    ``|G| > 0`` (seed 002 §3.1.2)."""

    _key = _prefix = "precision"


class HitRateAtK(_AtK):
    """1 if ``G ∩ R_k`` is non-empty, mean over samples with ``|G| > 0`` (seed 002 §3.1.3)."""

    _key = _prefix = "hit_rate"
