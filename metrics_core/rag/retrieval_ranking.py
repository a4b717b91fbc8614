"""Retrieval ranking: MRR@k, MAP, nDCG@k (seed 002 §3.2; contract §3, §12).

Means over samples with ``|G| > 0``, on the vectorised ranking kernel. AP is the mean of the
precision values at the ranks where a relevant document is found (0 when none is: seed 002's
"by hits" variant of contract §3); nDCG uses binary gain and IDCG over ``min(|G|, k)`` ideal
hits (relevant documents the retriever missed count).

>>> from metrics_core.rag.data_model import (Document, EvaluationSample, RetrievedDocument,
...                                     SystemOutputs)
>>> s = EvaluationSample("q1", "?", relevant_docs=(Document("b"),))
>>> o = SystemOutputs(retrieved=(RetrievedDocument(Document("a"), 0.9, 1),
...                              RetrievedDocument(Document("b"), 0.5, 2)))
>>> MRRAtK().compute([s], [o]).value, MeanAveragePrecision().compute([s], [o]).value
(0.5, 0.5)
"""

from __future__ import annotations

from metrics_core.rag.base import Metric, check_lengths, mean_result
from metrics_core.rag.data_model import TargetCategory
from metrics_core.rag.retrieval_kernel import retrieval_per_sample

__all__ = ["MRRAtK", "MeanAveragePrecision", "NDCGAtK"]


def _check_k(k, *, optional: bool) -> None:
    if k is None and optional:
        return
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be an integer >= 1{' or None' if optional else ''}, "
                         f"got {k!r}")


class _Ranking(Metric):
    target = TargetCategory.RETRIEVAL_ACCURACY
    _key = ""

    def required_fields(self) -> list[str]:
        return ["relevant_docs", "retrieved"]

    def compute(self, samples, outputs):
        check_lengths(samples, outputs)
        return self.from_values(retrieval_per_sample(
            samples, outputs, ks=() if self.k is None else (self.k,),
            full_list=self.k is None))

    def from_values(self, values: dict):
        """The result from :func:`retrieval_per_sample` arrays computed once for many
        metrics (they must include this metric's ``k``, or the full list for ``k=None``)."""
        key = self._key if self.k is None else f"{self._key}@{self.k}"
        result = mean_result(self.name, self.target, values[key], k=self.k)
        result.details["skipped_empty_gold"] = result.details["num_skipped"]
        return result


class MRRAtK(_Ranking):
    """Reciprocal rank of the first relevant document within the top ``k`` (whole ranking
    with ``k=None``; 0 if none), mean over samples with ``|G| > 0`` (seed 002 §3.2.1)."""

    _key = "mrr"

    def __init__(self, k: int | None = None) -> None:
        _check_k(k, optional=True)
        self.k = k
        self.name = "mrr" if k is None else f"mrr@{k}"


class MeanAveragePrecision(_Ranking):
    """Mean AP (precision at each relevant hit, averaged over the hits; 0 without a hit),
    documents after rank ``k`` ignored when ``k`` is set (seed 002 §3.2.2)."""

    _key = "ap"

    def __init__(self, k: int | None = None) -> None:
        _check_k(k, optional=True)
        self.k = k
        self.name = "map" if k is None else f"map@{k}"


class NDCGAtK(_Ranking):
    """Binary-gain nDCG@k, ``DCG_k / IDCG_k`` (0 when IDCG is 0), mean over samples with
    ``|G| > 0`` (seed 002 §3.2.3)."""

    _key = "ndcg"

    def __init__(self, k: int = 10, gain_scheme: str = "binary") -> None:
        _check_k(k, optional=False)
        if gain_scheme != "binary":
            raise ValueError(f"gain_scheme must be 'binary' (seed 002 v1), got {gain_scheme!r}")
        self.k = k
        self.gain_scheme = gain_scheme
        self.name = f"ndcg@{k}"
