"""The data model of RAG evaluation (seed 002 §2-§9; contract §12).

One :class:`EvaluationSample` holds the ground truth of a query (relevant documents, reference
answer, scenario labels); one :class:`SystemOutputs` holds what the RAG system returned for it
(ranked retrieved documents, the response, timings). A :class:`~metrics_core.rag.base.Metric`
turns the two aligned lists into one :class:`MetricResult`.

Sources: "contract §N" is section N of ``docs/CONTRACT.md``; "seed 002" is
``docs/seeds/002-rag-evaluation-spec.txt``.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import numpy as np

__all__ = [
    "Document",
    "EvaluationSample",
    "MetricResult",
    "RetrievedDocument",
    "SystemOutputs",
    "TargetCategory",
]


class TargetCategory(enum.Enum):
    """Auepora's target space (seed 002 §2.1)."""

    RETRIEVAL_RELEVANCE = "retrieval_relevance"
    RETRIEVAL_ACCURACY = "retrieval_accuracy"
    GENERATION_RELEVANCE = "generation_relevance"
    GENERATION_FAITHFULNESS = "generation_faithfulness"
    GENERATION_CORRECTNESS = "generation_correctness"
    LATENCY = "latency"
    DIVERSITY = "diversity"
    NOISE_ROBUSTNESS = "noise_robustness"
    NEGATIVE_REJECTION = "negative_rejection"
    COUNTERFACTUAL_ROBUSTNESS = "counterfactual_robustness"


@dataclass(frozen=True)
class Document:
    """A document of the corpus: its id, its text and free metadata (e.g. ``embedding``)."""

    doc_id: str
    text: str = ""
    metadata: MappingProxyType | dict = field(default_factory=dict)


@dataclass(frozen=True)
class RetrievedDocument:
    """One retrieved document with the retriever's ``score`` and 1-based ``rank``."""

    doc: Document
    score: float
    rank: int


@dataclass(frozen=True)
class EvaluationSample:
    """Ground truth of one query (seed 002 §3-§6).

    ``relevant_docs`` is ``None`` or empty when the query has no relevant document (the
    retrieval metrics skip it); ``reference_answer`` is ``None`` when there is no reference
    (the reference-based generation metrics skip it). ``labels`` carries ``scenario`` (e.g.
    ``"paraphrase"``, ``"typo"``, ``"unanswerable"``, ``"counterfactual"``) and ``variant_of``
    (the ``sample_id`` of the base sample of a perturbed query).
    """

    sample_id: str
    query: str
    reference_answer: str | None = None
    relevant_docs: tuple[Document, ...] | None = None
    candidate_docs: tuple[Document, ...] | None = None
    labels: MappingProxyType | dict = field(default_factory=dict)

    @property
    def scenario(self) -> str | None:
        return self.labels.get("scenario")

    @property
    def variant_of(self) -> str | None:
        return self.labels.get("variant_of")


@dataclass(frozen=True)
class SystemOutputs:
    """What the system returned for one sample: ranked documents, response and timings
    (seconds; key ``end_to_end`` by default)."""

    retrieved: tuple[RetrievedDocument, ...] = ()
    response: str = ""
    timings: MappingProxyType | dict = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class MetricResult:
    """The value of one metric over a list of samples (seed 002 §9).

    ``details["num_samples"]`` counts the samples actually evaluated. With no sample evaluated
    the seed's empty-support rule gives ``value = 0.0``; :attr:`defined` is then ``False`` and
    every display shows the value as undefined, never as 0 (contract §12).

    ``per_sample`` (optional) holds one value per input sample, ``nan`` where the sample was
    skipped; the mean of its finite values is ``value`` for the metrics that are means over
    samples, so bootstrap intervals and breakdowns reuse it.

    ``resampled`` (optional) is the value as a function of sample weights, for a corpus-level
    value (BLEU, a latency quantile): ``resampled(weights)`` with ``weights`` of shape
    ``(b, n_samples)`` returns shape ``(b,)`` (``nan`` where undefined), and all-ones weights
    give ``value``. The bootstrap of :func:`metrics_core.rag.suite.bootstrap_intervals` uses it.
    """

    name: str
    target: TargetCategory
    value: float
    details: dict[str, Any] = field(default_factory=dict)
    per_sample: np.ndarray | None = None
    resampled: Callable[[np.ndarray], np.ndarray] | None = None

    @property
    def defined(self) -> bool:
        """False when nothing was evaluated (empty support) or the details say so."""
        if self.details.get("defined") is False:
            return False
        return int(self.details.get("num_samples", 0)) > 0 and math.isfinite(self.value)

    def to_dict(self) -> dict:
        """JSON-ready record ``{name, target, value, defined, details}`` (seed 002 §9.1);
        a value that is not a finite number is ``None`` (JSON ``null``), never ``inf`` or
        ``nan``, so the record is valid JSON."""
        value = float(self.value)
        return {"name": self.name, "target": self.target.value,
                "value": value if math.isfinite(value) else None,
                "defined": self.defined, "details": _json_ready(self.details)}


def _json_ready(value):
    if isinstance(value, dict | MappingProxyType):
        return {str(k): _json_ready(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_ready(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
