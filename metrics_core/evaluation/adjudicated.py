"""Metrics on the adjudicated gold, beside the original ones (contract §14).

:func:`adjudicated_dataset` applies checked verdicts
(:class:`~metrics_core.inputs.adjudications.Adjudications`) to a data set: each
``label_error`` sets its query's ``has_evidence`` or its sentence's ``is_gold`` to the
correction, a given ``n_gold`` moves with its query's corrected sentences, and queries with an
``ambiguous`` verdict are left out when asked. The result is the data set a fresh load of the
files with those labels edited would give, so every record of :func:`evaluate_adjudicated` is the
original pipeline's on the corrected files (``tests/test_adjudications.py`` holds it to that).
The original evaluation is computed as always and never replaced:
:class:`AdjudicatedRun` holds both, and :meth:`AdjudicatedRun.differences` sets every record
side by side.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
import pandas as pd

from metrics_core.evaluation.evaluator import Evaluator
from metrics_core.evaluation.result import Evaluation, clean, frame_records

__all__ = ["SUGGESTIONS", "AdjudicatedRun", "adjudicated_dataset", "adjudicated_evaluator",
           "evaluate_adjudicated", "review_suggestions", "with_adjudication"]


def adjudicated_dataset(dataset, adjudications, *, exclude_ambiguous: bool = False):
    """``dataset`` with the corrected gold of ``adjudications`` (checked against it).

    ``has_evidence`` of every corrected query and ``is_gold`` of every corrected sentence take
    the correction; where the ``n_gold`` column is given, a query's ``n_gold`` moves by its
    corrected sentences (+1 a sentence made gold, -1 a gold one unmade), and a graded
    ``relevance`` becomes 1 for a sentence made gold, 0 for one unmade. With
    ``exclude_ambiguous``, the queries with an ``ambiguous`` verdict (on the query or one of
    its sentences) are left out (ValueError if that leaves none).
    """
    y = dataset.y.copy()
    y[adjudications.query_rows] = adjudications.query_labels
    changes = {"y": y}
    rows = adjudications.candidate_rows
    if rows.size:
        is_gold = dataset.is_gold.copy()
        delta = adjudications.candidate_labels.astype(np.int64) - is_gold[rows].astype(np.int64)
        is_gold[rows] = adjudications.candidate_labels
        changes["is_gold"] = is_gold
        if dataset.n_gold_given is not None:
            query, _ = dataset.locate(rows)
            changes["n_gold_given"] = dataset.n_gold_given + np.bincount(
                query, weights=delta, minlength=dataset.n_queries).astype(np.int64)
        if dataset.relevance is not None:
            relevance = dataset.relevance.copy()
            relevance[rows] = adjudications.candidate_labels.astype(np.int64)
            changes["relevance"] = relevance
    meta = {**dataset.meta, "adjudications": adjudications.file}
    out = dataclasses.replace(dataset, **changes, meta=meta)
    if exclude_ambiguous and adjudications.ambiguous.size:
        keep = np.ones(dataset.n_queries, dtype=bool)
        keep[adjudications.ambiguous] = False
        if not keep.any():
            raise ValueError("every query has an ambiguous verdict: none is left to evaluate "
                             "once they are excluded")
        out = out.subset(keep)
    return out


def adjudicated_evaluator(evaluator: Evaluator, adjudications, *,
                          exclude_ambiguous: bool = False) -> Evaluator:
    """The evaluator of the adjudicated data set (the original's audit and input files)."""
    return Evaluator(adjudicated_dataset(evaluator.ds, adjudications,
                                         exclude_ambiguous=exclude_ambiguous),
                     audit=evaluator.audit, inputs=evaluator.inputs,
                     cohorts=getattr(evaluator, "cohorts", None))


#: Columns of :meth:`AdjudicatedRun.differences`.
DIFFERENCE_COLUMNS = ("name", "subset", "original", "adjudicated", "difference",
                      "original_n", "adjudicated_n", "original_defined", "adjudicated_defined")


@dataclass(frozen=True, eq=False)
class AdjudicatedRun:
    """One run on the original gold and on the adjudicated gold.

    ``original`` is the evaluation as computed without verdicts (never replaced);
    ``adjudicated`` the same settings on the adjudicated data set; ``inputs`` the
    adjudication file's fingerprint (``{"file", "sha256", "bytes"}``) when read from one.
    """

    adjudications: object
    original: Evaluation
    adjudicated: Evaluation
    exclude_ambiguous: bool = False
    inputs: dict | None = None

    def differences(self) -> pd.DataFrame:
        """Every record of the original run beside the adjudicated one, with the
        difference (adjudicated − original; empty where either is undefined)."""
        rows = []
        for r in self.original.records:
            try:
                a = self.adjudicated.record(r.name)
            except KeyError:
                a = None
            value = None if a is None or not a.defined else a.value
            before = r.value if r.defined else None
            rows.append({"name": r.name, "subset": r.subset, "original": before,
                         "adjudicated": value,
                         "difference": None if value is None or before is None
                         else value - before,
                         "original_n": r.n, "adjudicated_n": None if a is None else a.n,
                         "original_defined": r.defined,
                         "adjudicated_defined": None if a is None else a.defined})
        return pd.DataFrame(rows, columns=list(DIFFERENCE_COLUMNS))

    def changed(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """(queries whose has_evidence changed, sentences whose is_gold changed): ids, the
        original label and the corrected one."""
        adj = self.adjudications
        frame = adj.frame
        fix = frame["corrected_has_evidence"].ne("") & frame["sent_uid"].eq("")
        queries = frame.loc[fix, ["post_id", "criterion"]].assign(
            has_evidence=1 - frame.loc[fix, "corrected_has_evidence"].astype(int),
            corrected_has_evidence=frame.loc[fix, "corrected_has_evidence"].astype(int))
        fix = frame["corrected_is_gold"].ne("")
        sentences = frame.loc[fix, ["post_id", "criterion", "sent_uid"]].assign(
            is_gold=1 - frame.loc[fix, "corrected_is_gold"].astype(int),
            corrected_is_gold=frame.loc[fix, "corrected_is_gold"].astype(int))
        return queries.reset_index(drop=True), sentences.reset_index(drop=True)

    def to_json(self, *, indent: int = 2) -> str:
        """``metrics_master.json`` as ``metrics-core evaluate --adjudications`` writes it: the
        original run's document with the ``adjudication`` block (:func:`with_adjudication`)."""
        return with_adjudication(self.original.to_json(), self, indent=indent)

    def to_dict(self) -> dict:
        """The ``adjudication`` block of ``metrics_master.json`` (contract §14)."""
        adj = self.adjudications
        queries, sentences = self.changed()
        ambiguous = adj.frame.loc[adj.frame["verdict"].eq("ambiguous"),
                                  ["post_id", "criterion"]].drop_duplicates()
        return clean({
            "file": self.inputs or {"file": adj.file},
            "exclude_ambiguous": bool(self.exclude_ambiguous),
            "n_verdicts": len(adj),
            "n_queries_reviewed": int(np.unique(adj.query).size),
            "verdicts": adj.counts(),
            "by_reviewer": frame_records(adj.by_reviewer()),
            "changed_queries": frame_records(queries),
            "changed_sentences": frame_records(sentences),
            "excluded_queries": frame_records(ambiguous) if self.exclude_ambiguous else [],
            "dataset": self.adjudicated.summary,
            "metrics": [r.to_dict() for r in self.adjudicated.records],
            "differences": frame_records(self.differences()),
            "per_criterion": frame_records(self.adjudicated.per_criterion.reset_index()),
            "targets": frame_records(self.adjudicated.targets),
            "consistency_checks": [c.to_dict() for c in self.adjudicated.checks],
        })


def evaluate_adjudicated(evaluator: Evaluator, adjudications, config=None, *,
                         exclude_ambiguous: bool = False, original: Evaluation | None = None,
                         inputs: dict | None = None,
                         progress: Callable[[int, int], None] | None = None) -> AdjudicatedRun:
    """The run of ``config`` on the original gold (``original`` when computed already) and
    on the adjudicated gold, with the same settings (and resamples)."""
    if original is None:
        original = evaluator.evaluate(config, progress=progress)
    adjudicated = adjudicated_evaluator(evaluator, adjudications,
                                        exclude_ambiguous=exclude_ambiguous).evaluate(
        original.config, progress=progress)
    return AdjudicatedRun(adjudications=adjudications, original=original,
                          adjudicated=adjudicated, exclude_ambiguous=exclude_ambiguous,
                          inputs=inputs)


def with_adjudication(document: str, run: AdjudicatedRun, *, indent: int = 2) -> str:
    """``metrics_master.json``'s text (:meth:`Evaluation.to_json`) with the ``adjudication``
    block added as its last key."""
    text = document.rstrip()
    if not text.endswith("}"):
        raise ValueError("not a JSON object")
    block = json.dumps(run.to_dict(), indent=indent, allow_nan=False)
    block = block.replace("\n", "\n" + " " * indent)
    return f'{text[:-1].rstrip()},\n{" " * indent}"adjudication": {block}\n}}'


#: The kinds of case :func:`review_suggestions` puts first, and why each is worth a look.
SUGGESTIONS = MappingProxyType({
    "confident_miss": "has evidence, yet p is among the lowest: the gold may be wrong",
    "confident_false_alert": "no evidence, yet p is among the highest: the gold may be wrong",
    "gold_ranked_last": "a gold sentence ranked last of its query's candidates (the first "
                        "gold is in the bottom of the list): that sentence may not be evidence",
})


def review_suggestions(evaluator: Evaluator, evaluation: Evaluation, *,
                       n: int = 50) -> pd.DataFrame:
    """The cases most worth a review first, where a label is likeliest wrong (contract §14).

    Three lists, each ordered from the most telling: **confident misses** (queries with
    evidence that the model puts below τ, lowest p first), **confident false alerts**
    (queries without evidence at or above τ, highest p first) and **gold ranked last**
    (queries with evidence and at least two candidates whose best-ranked gold sentence is
    in the bottom half, the lowest first, by its position / the candidates). The lists are
    interleaved (the first of each, then the second of each, …) and the first ``n`` kept.
    Rows are :attr:`Evaluation.per_query` rows with ``why`` (a key of :data:`SUGGESTIONS`)
    and ``suggestion_rank``; ``evaluator`` is the one ``evaluation`` was computed on.
    """
    ds = evaluator.ds
    pq = evaluation.per_query
    if len(pq) != ds.n_queries:
        raise ValueError("the evaluation is not the evaluator's (filters differ)")
    y, p, pred = pq["has_evidence"].to_numpy(), pq["p_has_evidence"].to_numpy(), \
        pq["predicted"].to_numpy()
    misses = np.flatnonzero((y == 1) & (pred == 0))
    misses = misses[np.argsort(p[misses], kind="stable")]
    alerts = np.flatnonzero((y == 0) & (pred == 1))
    alerts = alerts[np.argsort(-p[alerts], kind="stable")]
    gold_rows = np.flatnonzero(ds.is_gold)
    first = np.full(ds.n_queries, np.inf)
    if gold_rows.size:
        query, position = ds.locate(gold_rows)
        np.minimum.at(first, query, position.astype(float))
    depth = first / np.maximum(ds.n_cand, 1)
    last = np.flatnonzero((y == 1) & (ds.n_cand >= 2) & np.isfinite(first) & (depth > 0.5))
    last = last[np.argsort(-depth[last], kind="stable")]
    lists = (("confident_miss", misses), ("confident_false_alert", alerts),
             ("gold_ranked_last", last))
    rows, why, seen = [], [], set()
    for i in range(max((len(rows_) for _, rows_ in lists), default=0)):
        for name, chosen in lists:
            if i < len(chosen) and chosen[i] not in seen:
                seen.add(chosen[i])
                rows.append(chosen[i])
                why.append(name)
    out = pq.iloc[rows[:n]].assign(why=why[:n])
    out["suggestion_rank"] = np.arange(1, len(out) + 1)
    return out
