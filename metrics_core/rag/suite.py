"""The default metric set of seed 002 §9.1 and its evaluation (contract §12).

:func:`default_metrics` builds every metric of the seed's §10 checklist under the output names
of §9.1; :func:`evaluate` runs a list of metrics on a :class:`~metrics_core.rag.loader.RagData`
(the retrieval metrics share one pass of the ranking kernel) and :func:`bootstrap_intervals`
gives the metrics that are means over samples a percentile interval from the project's one
bootstrap (:func:`metrics_core.metrics.uncertainty.bootstrap_cis`, resampling samples).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from metrics_core.rag.additional import DistinctN, IntraListDiversity, MeanLatency, QuantileLatency
from metrics_core.rag.base import Metric, check_lengths
from metrics_core.rag.data_model import MetricResult
from metrics_core.rag.generation_llm_judge import LLMAnswerQuality, LLMCritic, LLMFaithfulnessScore
from metrics_core.rag.generation_overlap import (
    BleuScore,
    EvidenceOverlapFaithfulness,
    ExactMatch,
    Rouge1,
    Rouge2,
    RougeL,
    TokenF1,
)
from metrics_core.rag.generation_semantic import (
    BertScoreMetric,
    EmbeddingSimilarity,
    semantic_available,
)
from metrics_core.rag.retrieval_basic import HitRateAtK, PrecisionAtK, RecallAtK
from metrics_core.rag.retrieval_kernel import retrieval_per_sample
from metrics_core.rag.retrieval_ranking import MeanAveragePrecision, MRRAtK, NDCGAtK
from metrics_core.rag.robustness import (
    CounterfactualConsistency,
    NegativeRejectionRate,
    NoiseRobustness,
)

__all__ = ["DEFAULT_KS", "DEFAULT_QUANTILES", "bootstrap_intervals", "default_metrics",
           "evaluate"]

#: Cut-offs of the retrieval metrics by default.
DEFAULT_KS = (1, 3, 5, 10)
#: Latency quantiles by default.
DEFAULT_QUANTILES = (0.95,)


def default_metrics(*, ks: Sequence[int] = DEFAULT_KS,
                    quantiles: Sequence[float] = DEFAULT_QUANTILES,
                    critic: LLMCritic | None = None, semantic: bool = True) -> list[Metric]:
    """Every metric of seed 002 §10 in the order of §9.1's names.

    ``semantic=False`` leaves BERTScore and embedding similarity out (they load a model);
    without the ``rag-semantic`` extra they are kept and report a skip note. Without a
    ``critic`` the LLM metrics report a skip note.

    Counterfactual consistency compares the answers of each pair by a semantic similarity as
    seed 002 §6.3 asks: the embedding similarity's own instance (one model, loaded once) when
    the semantic metrics are on and their extra is installed, else token F1;
    ``details["similarity"]`` of its result names the one used.
    """
    ks = tuple(int(k) for k in ks)
    metrics: list[Metric] = [
        *(RecallAtK(k) for k in ks), *(PrecisionAtK(k) for k in ks),
        *(HitRateAtK(k) for k in ks), *(MRRAtK(k) for k in ks), MeanAveragePrecision(),
        *(NDCGAtK(k) for k in ks),
        ExactMatch(), TokenF1(), Rouge1(), Rouge2(), RougeL(), BleuScore(),
        EvidenceOverlapFaithfulness(),
    ]
    similarity = None
    if semantic:
        embedding = EmbeddingSimilarity()
        metrics += [BertScoreMetric(), embedding]
        if semantic_available():
            similarity = embedding
    metrics += [
        LLMFaithfulnessScore(critic), LLMAnswerQuality(critic),
        NoiseRobustness(), NegativeRejectionRate(), CounterfactualConsistency(similarity),
        MeanLatency(), *(QuantileLatency(q) for q in quantiles), DistinctN(2),
        IntraListDiversity(),
    ]
    return metrics


def evaluate(samples, outputs, metrics: Sequence[Metric]) -> list[MetricResult]:
    """Every metric's result, in the order given; the retrieval metrics share one kernel
    pass over all their cut-offs."""
    check_lengths(samples, outputs)
    shared = [m for m in metrics if hasattr(m, "from_values")]
    values: dict = {}
    if shared:
        ks = sorted({m.k for m in shared if m.k is not None})
        values = retrieval_per_sample(samples, outputs, ks=ks,
                                      full_list=any(m.k is None for m in shared))
    return [m.from_values(values) if hasattr(m, "from_values") else m.compute(samples, outputs)
            for m in metrics]


def bootstrap_intervals(results: Sequence[MetricResult], *, n_resamples: int = 2000,
                        seed: int = 0, n_samples: int | None = None,
                        progress: Callable[[int, int], None] | None = None) -> dict:
    """95% percentile bootstrap intervals over samples, as
    :class:`metrics_core.metrics.uncertainty.CI` by metric name: of the defined results that are
    means over samples (``per_sample``) and of the corpus-level ones with a ``resampled``
    function (BLEU, latency quantiles); all on the same resamples.

    One resample draws samples with replacement; a resample in which a metric has no evaluated
    sample is left out of that metric's interval (the bootstrap's rule for undefined values).
    ``progress(done, total)`` is called as the resamples are computed (raise to cancel).
    """
    from metrics_core.metrics.uncertainty import bootstrap_cis, weighted_means

    columns, corpus = {}, {}
    n = None
    for r in results:
        if not r.defined:
            continue
        if r.resampled is not None:
            corpus[r.name] = r.resampled
        elif r.per_sample is not None:
            values = np.asarray(r.per_sample, dtype=np.float64)
            n = values.size
            columns[r.name] = (values, np.isfinite(values))
    if n_samples is not None:
        n = n_samples
    elif n is None and corpus:
        raise ValueError("pass n_samples: no result has per-sample values to count them")
    if not (columns or corpus) or not n:
        return {}
    statistics = dict(corpus)
    if columns:
        statistics["_means"] = weighted_means(columns)
    cis = bootstrap_cis(statistics, n, n_resamples=n_resamples, seed=seed, unit="sample",
                        progress=progress)
    return {name: cis[name] for name in [*columns, *corpus]}
