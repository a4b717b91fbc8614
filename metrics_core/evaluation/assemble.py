"""One run, end to end: intermediate -> records by section -> checks -> lazy tables (§11).

:func:`build_evaluation` is what :meth:`Evaluator.evaluate` calls. It adds nothing of its own:
each number comes from a section function (:mod:`metrics_core.evaluation.sections`), each table from
:mod:`metrics_core.evaluation.tables`, each check from :mod:`metrics_core.evaluation.checks`.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import numpy as np
import pandas as pd

from metrics_core import __version__
from metrics_core.cpu_account import charged
from metrics_core.evaluation import sections, tables
from metrics_core.evaluation.checks import consistency_checks, disjoint_checks
from metrics_core.evaluation.intervals import (
    Intervals,
    data_intervals,
    data_intervals_key,
    multilabel_intervals,
    query_counts,
    start_drawing,
)
from metrics_core.evaluation.operating_intervals import operating_intervals
from metrics_core.evaluation.result import Evaluation
from metrics_core.metrics import gate, risk_coverage
from metrics_core.progress import stage
from metrics_core.registry import GATE_STATES

__all__ = ["build_evaluation", "per_query_frame", "summary"]


def build_evaluation(ev, cfg, *, progress=None, bands: bool = True,
                     posts: bool = True) -> Evaluation:
    """The evaluation of ``cfg`` on ``ev``'s queries (``bands``, ``posts``:
    :meth:`Evaluator.evaluate`'s)."""
    ds = ev.ds
    # the resamples drawn on a helper thread while K is selected
    start_drawing(ev, cfg, bands=bands)
    inter = ev.intermediate(cfg)
    ml, n_posts, post_cells = sections.multilabel_values(ds, cfg, inter.states)
    boot, op, ml_boot = _intervals(ev, cfg, inter, post_cells if posts else None, progress,
                                   bands)
    ks = sections.k_summary(inter, ds.y)
    abstention = gate.abstention_metrics(ds.y, gate.states_to_prediction(inter.states))
    ranking_summary = ev.ranking_summary(cfg)

    records = sections.RecordList(n_positive=ds.n_positive,
                                  n_negative=ds.n_queries - ds.n_positive)
    run = sections.RunKernels(ev, inter, ml=ml, n_posts=n_posts,
                              ranking_summary=ranking_summary, k_summary=ks)
    intervals = {"data": boot, "operating": op, "posts": ml_boot}
    confusion = sections.classification_records(records, ev, inter, op, run, intervals)
    sections.kernel_records(records, "calibration", run, intervals)
    sections.gate_records(records, ev, inter, op)
    for group in ("ranking", "dynamic_k", "multilabel"):
        sections.kernel_records(records, group, run, intervals)

    g = gate.gate_summary(ds.y, inter.states)
    codes, _ = tables.group_codes(ev, "criterion")
    checks = consistency_checks(ds, cfg, records, inter, codes, g.state_counts)
    checks.extend(ev.cached(("disjoint_checks",), lambda: disjoint_checks(ds)))

    def per_fold():
        return None if ds.fold is None else tables.group_table(ev, inter, label="fold")

    def fold_summary():
        table = evaluation.per_fold
        return None if table is None else tables.fold_summary(table, records)

    lazy = {
        "per_query": lambda: per_query_frame(ds, inter),
        "per_criterion": lambda: tables.group_table(ev, inter, label="criterion", boot=boot),
        "per_fold": per_fold,
        "fold_summary": fold_summary,
        "gamma_sweep": lambda: ev.gamma_sweep(cfg),
        "gate_grid": lambda: ev.gate_grid(cfg),
        "decision_curve": lambda: ev.decision_curve(cfg),
        "roc_band": lambda: ev.roc_band(cfg),
        "pr_band": lambda: ev.pr_band(cfg),
        "smoothed_calibration": ev.smoothed_calibration,
        "gate_risk_coverage": lambda: risk_coverage.gate_section(
            ds, cfg, abstention, p_order=ev.p_order(), counts=query_counts(ev, cfg)),
    }
    cls = ev.classification()
    evaluation = Evaluation(
        config=cfg, summary=ev.cached(("summary",), lambda: summary(ds)),
        records=tuple(records), checks=tuple(checks), gate=g, abstention=abstention,
        confusion=confusion, tpr_at_fpr=ev.tpr_at_fpr(cfg), roc=cls["roc"], pr=cls["pr"],
        reliability=ev.reliability(cfg), k=inter.k, states=inter.states, k_summary=ks,
        multilabel=ml, ranking_summary=ranking_summary, audit=ev.audit,
        run=fingerprint(ev), _tables=lazy)
    return evaluation


def _intervals(ev, cfg, inter, post_cells, progress, bands=True):
    """The data's intervals on this thread, the setting's (operating and multi-label) on a
    helper thread meanwhile: both read the resamples as they are drawn. A failure (or a
    cancel raised by ``progress``) of this thread's part leaves the helper to finish alone.
    ``post_cells`` None: no multi-label intervals (:meth:`Evaluator.evaluate`'s ``posts``)."""

    def over_posts():
        if post_cells is None:
            return Intervals(None)
        return multilabel_intervals(ev, cfg, *post_cells)

    if not cfg.bootstrap or ev.computed(data_intervals_key(cfg)):
        # (no resamples, or the data's intervals already made for another setting, as after
        # a threshold move: nothing to overlap, so no helper thread to start)
        return (data_intervals(ev, cfg, progress, bands=bands),
                operating_intervals(ev, cfg, inter), over_posts())
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="metrics_core-intervals")
    try:
        # (the posts' resamples are drawn first: the multi-label intervals can begin at once)
        side = pool.submit(charged(lambda: (over_posts(), operating_intervals(ev, cfg, inter))))
        boot = data_intervals(ev, cfg, progress, bands=bands)
        stage(progress, "bootstrap (operating and multi-label metrics)")
        ml_boot, op = side.result()
    finally:
        pool.shutdown(wait=False)
    return boot, op, ml_boot


def fingerprint(ev) -> dict:
    """When and by what the run was made, and the SHA-256 of each input file."""
    return {"generated_by": f"metrics_core {__version__}", "version": __version__,
            "created": datetime.now(UTC).isoformat(timespec="seconds"),
            "inputs": [dict(i) for i in ev.inputs]}


def summary(ds) -> dict:
    meta = dict(ds.meta)
    return {
        "n_queries": ds.n_queries, "n_positive": ds.n_positive,
        "positive_rate": ds.n_positive / ds.n_queries if ds.n_queries else None,
        "n_posts": int(ds.posts.size), "n_candidates": ds.n_candidates,
        "criteria": list(ds.criteria),
        "folds": ds.folds, "splits": ds.splits,
        "ranked_by": ds.ranked_by,
        "n_gold_given": ds.n_gold_given is not None,
        **{k: v for k, v in meta.items() if isinstance(v, str | int | float | bool | list)},
    }


def per_query_frame(ds, inter) -> pd.DataFrame:
    """One row per query: labels, p, gate state, prediction at τ, K, evidence, ranking at K.

    A value the query has no part in is an empty cell (NaN), never 0: the ranking columns of
    queries outside the ranking protocol (without evidence, under ``positives_only``), the
    evidence columns outside the evidence protocol; so each column's mean over its non-empty
    cells is the reported value (contract §11, the per-query table)."""
    frame = ds.query_frame()
    frame["state"] = pd.Categorical.from_codes(inter.states.astype(np.int8),
                                               categories=list(GATE_STATES))
    frame["predicted"] = inter.pred
    frame["selected_k"] = inter.k
    frame["evidence_hits"] = inter.hits
    frame["evidence_recall"] = inter.rec
    frame["evidence_precision"] = inter.prec
    for name in (f"recall@{inter.ref}", f"ndcg@{inter.ref}", "mrr"):
        frame[name] = np.where(inter.rmask, inter.rk[name], np.nan)
    return frame
