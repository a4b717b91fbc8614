"""RAG evaluation: the metric library of seed 002 on metrics_core (contract §12).

Modules follow the seed's §2.2: ``data_model`` (the seed's ``types``: the data model),
``base`` (``Metric``),
``retrieval_basic``, ``retrieval_ranking`` (on the vectorised ranking kernel of
:mod:`metrics_core.metrics.ranking`), ``generation_overlap``, ``generation_semantic``,
``generation_llm_judge``, ``robustness``, ``additional``; plus ``loader`` (JSON Lines),
``suite`` (the default metric set and the bootstrap), ``report`` (tables) and ``demo``.
Names are imported on first use, so ``import metrics_core.rag`` loads nothing heavy::

    from metrics_core.rag import load_rag, default_metrics, evaluate
    data = load_rag("run.jsonl")
    results = evaluate(data.samples, data.outputs, default_metrics(semantic=False))

Sources: "contract §N" is section N of ``docs/CONTRACT.md``; "seed 002" is
``docs/seeds/002-rag-evaluation-spec.txt``.
"""

import importlib
from types import MappingProxyType

#: Public name -> module of this package that defines it (PEP 562 lazy import).
_EXPORTS = MappingProxyType({
    "TargetCategory": "data_model", "Document": "data_model", "RetrievedDocument": "data_model",
    "EvaluationSample": "data_model", "SystemOutputs": "data_model", "MetricResult": "data_model",
    "Metric": "base",
    "RecallAtK": "retrieval_basic", "PrecisionAtK": "retrieval_basic",
    "HitRateAtK": "retrieval_basic",
    "MRRAtK": "retrieval_ranking", "MeanAveragePrecision": "retrieval_ranking",
    "NDCGAtK": "retrieval_ranking",
    "ExactMatch": "generation_overlap", "TokenF1": "generation_overlap",
    "Rouge1": "generation_overlap", "Rouge2": "generation_overlap",
    "RougeL": "generation_overlap", "RougeScores": "generation_overlap",
    "BleuScore": "generation_overlap", "EvidenceOverlapFaithfulness": "generation_overlap",
    "BertScoreMetric": "generation_semantic", "EmbeddingSimilarity": "generation_semantic",
    "LLMCritic": "generation_llm_judge", "OpenAICompatibleCritic": "generation_llm_judge",
    "CriticError": "generation_llm_judge", "CriticUnavailable": "generation_llm_judge",
    "LLMFaithfulnessScore": "generation_llm_judge",
    "LLMAnswerQuality": "generation_llm_judge",
    "NoiseRobustness": "robustness", "NegativeRejectionRate": "robustness",
    "CounterfactualConsistency": "robustness",
    "MeanLatency": "additional", "QuantileLatency": "additional", "DistinctN": "additional",
    "IntraListDiversity": "additional",
    "RagData": "loader", "RagInputError": "loader", "load_rag": "loader",
    "parse_rag": "loader",
    "default_metrics": "suite", "evaluate": "suite", "bootstrap_intervals": "suite",
})


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'metrics_core.rag' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"metrics_core.rag.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


__all__ = tuple(sorted(_EXPORTS))
