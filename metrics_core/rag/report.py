"""Tables of a RAG evaluation for the dashboard and exports (seed 002; contract §12).

Pure functions from results to ``pandas`` frames; an undefined value is ``nan`` (shown as
"—", never as 0).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from metrics_core.rag.base import Metric
from metrics_core.rag.data_model import MetricResult, TargetCategory
from metrics_core.rag.generation_overlap import token_f1
from metrics_core.rag.robustness import variant_pairs

__all__ = ["BASE_SCENARIO", "pairs_frame", "results_frame", "results_json", "scenario_frame",
           "worst_frame"]

#: Scenario label of the samples without one.
BASE_SCENARIO = "(none)"
#: Metrics that compare subsets of samples with each other: no per-scenario value.
_ACROSS_SCENARIOS = (TargetCategory.NOISE_ROBUSTNESS, TargetCategory.COUNTERFACTUAL_ROBUSTNESS)


def results_frame(results: Sequence[MetricResult], cis: Mapping | None = None) -> pd.DataFrame:
    """One row per metric: target, metric, value, 95% interval, n, note (§9.1 names)."""
    cis = cis or {}
    rows = []
    for r in results:
        ci = cis.get(r.name)
        note = r.details.get("skipped_reason", "")
        if not note and not r.defined:
            note = "undefined: no sample evaluated"
        elif not note and cis and ci is None:
            note = "no interval: a corpus-level value"
        elif not note and "similarity" in r.details:
            note = f"answers compared by {r.details['similarity']}"
        rows.append({"target": r.target.value, "metric": r.name,
                     "value": r.value if r.defined else np.nan,
                     "ci95_lo": np.nan if ci is None else ci.lo,
                     "ci95_hi": np.nan if ci is None else ci.hi,
                     "n": int(r.details.get("num_samples", 0)), "note": note})
    return pd.DataFrame(rows, columns=["target", "metric", "value", "ci95_lo", "ci95_hi", "n",
                                       "note"])


def results_json(results: Sequence[MetricResult]) -> str:
    """``{"metrics": [record, ...]}`` as JSON text (the records of
    :meth:`MetricResult.to_dict`, whose non-finite numbers are ``null``): always valid JSON
    (``allow_nan=False``)."""
    return json.dumps({"metrics": [r.to_dict() for r in results]}, indent=2, allow_nan=False)


def scenario_frame(samples, outputs, metrics: Sequence[Metric]) -> pd.DataFrame:
    """Each metric (rows) on the samples of each scenario (columns, first-seen order), with
    the robustness metrics left out (they compare scenarios with each other)."""
    from metrics_core.rag.suite import evaluate

    labels = [s.scenario or BASE_SCENARIO for s in samples]
    kept = [m for m in metrics if m.target not in _ACROSS_SCENARIOS]
    columns = {}
    for scenario in dict.fromkeys(labels):
        idx = [i for i, lab in enumerate(labels) if lab == scenario]
        results = evaluate([samples[i] for i in idx], [outputs[i] for i in idx], kept)
        columns[f"{scenario} (n={len(idx)})"] = [r.value if r.defined else np.nan
                                                  for r in results]
    frame = pd.DataFrame(columns, index=[m.name for m in kept])
    frame.index.name = "metric"
    return frame.reset_index()


def pairs_frame(samples, outputs) -> pd.DataFrame:
    """Every (base, variant) pair side by side: queries, answers, and the token F1 between
    the two answers."""
    rows = []
    for b, v in variant_pairs(samples):
        rows.append({"scenario": samples[v].scenario or BASE_SCENARIO,
                     "base_id": samples[b].sample_id, "base_query": samples[b].query,
                     "base_answer": outputs[b].response, "variant_id": samples[v].sample_id,
                     "variant_query": samples[v].query, "variant_answer": outputs[v].response,
                     "answer_token_f1": token_f1(outputs[b].response, outputs[v].response)})
    return pd.DataFrame(rows, columns=["scenario", "base_id", "variant_id", "base_query",
                                       "variant_query", "base_answer", "variant_answer",
                                       "answer_token_f1"])


def worst_frame(samples, outputs, result: MetricResult, *, n: int = 10) -> pd.DataFrame:
    """The ``n`` evaluated samples with the lowest per-sample value of ``result`` (ties in
    file order), for review."""
    if result.per_sample is None:
        raise ValueError(f"{result.name} has no per-sample values")
    values = np.asarray(result.per_sample, dtype=np.float64)
    idx = np.flatnonzero(np.isfinite(values))
    idx = idx[np.argsort(values[idx], kind="stable")][:n]
    return pd.DataFrame({
        "sample_id": [samples[i].sample_id for i in idx],
        "scenario": [samples[i].scenario or BASE_SCENARIO for i in idx],
        result.name: values[idx],
        "query": [samples[i].query for i in idx],
        "response": [outputs[i].response for i in idx],
        "reference": [samples[i].reference_answer for i in idx],
    })
