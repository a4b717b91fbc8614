"""Small builders of RAG samples for the tests of metrics_core.rag."""

from __future__ import annotations

from metrics_core.rag.data_model import (
    Document,
    EvaluationSample,
    RetrievedDocument,
    SystemOutputs,
)


def sample(sample_id="s", *, relevant=(), retrieved=(), reference=None, response="",
           query="question?", scenario=None, variant_of=None, timings=None, embeddings=None):
    """One (EvaluationSample, SystemOutputs) pair; ``retrieved`` lists doc ids in rank order."""
    labels = {k: v for k, v in (("scenario", scenario), ("variant_of", variant_of)) if v}
    embeddings = embeddings or {}
    s = EvaluationSample(sample_id, query, reference_answer=reference,
                         relevant_docs=tuple(Document(d, f"text of {d}") for d in relevant),
                         labels=labels)
    o = SystemOutputs(
        retrieved=tuple(RetrievedDocument(
            Document(d, f"text of {d}",
                     {"embedding": embeddings[d]} if d in embeddings else {}),
            1.0 / r, r) for r, d in enumerate(retrieved, start=1)),
        response=response, timings=timings or {})
    return s, o


def split(pairs):
    """``[(s, o), ...]`` -> ``([s, ...], [o, ...])``."""
    return [p[0] for p in pairs], [p[1] for p in pairs]
