"""The reduced Dask run: records built from per-unit summaries merged on the workers.

``metrics-core evaluate --engine dask --reduced`` gathers no per-query value. Each work unit,
where it is loaded, runs the in-memory kernels on its queries
(:meth:`~metrics_core.evaluation.evaluator.Evaluator.intermediate`) and sums what the records
need (:func:`unit_summary`): its queries' counts by distinct ``p`` and class, the outcome
tables at τ and at the gate, the sums of the per-query means (ranking, evidence, K, Brier) and
the histogram of K, the multi-label cells' sums per post and per criterion; with resamples,
the same sums under Poisson(1) weights keyed by (seed, unit; the post for the multi-label
ones) (:mod:`metrics_core.engines.resampling`), resample by resample. The summaries are merged
pairwise on the workers and turned into per-resample values there (:func:`finish`), so what
reaches the client is a few numbers per record and per resample, whatever the number of
queries. :func:`reduced_records` makes the records with the in-memory sections' rules
(:func:`~metrics_core.evaluation.sections.counting_records`, Wilson intervals).

The point estimates equal the in-memory engine's (exact for AUROC, AUPRC, TPR@FPR and every
count; means to rounding, 1e-12). ECE and MCE come from the counts by distinct ``p`` (the
in-memory bins, uniform or quantile, of either calibration view), the logistic calibration
fits from one row per distinct ``p`` (:mod:`metrics_core.engines.counted`). Each unit's
summary also holds the sums of each of its criteria and folds and what the tables and checks
need (:mod:`metrics_core.engines.reduced_tables`); what that module does not make is listed
under ``not_computed`` (:data:`NOT_COMPUTED`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from metrics_core.engines import reduced_audit, reduced_tables
from metrics_core.engines.counted import (
    CRITERION_COLUMNS,
    POST_COLUMNS,
    add_hist,
    calibration_bins,
    calibration_rows,
    counted_quantile,
    f1_of_counts,
    hist_quantile,
    logistic_fits,
    multilabel_of_sums,
    reliability_values,
)
from metrics_core.engines.reductions import ScoreCounts, counted_scores, merge_counts, score_counts
from metrics_core.engines.resampling import (
    WEIGHTED_SORT_LIMIT,
    auprc_of_weighted,
    auroc_of_weighted,
    delong_interval,
    merge_weighted,
    percentile_interval,
    poisson_weights,
    unit_keys,
    weighted_counts,
)

__all__ = ["CRITERION_COLUMNS", "NOT_COMPUTED", "POST_COLUMNS", "add_hist", "calibration_bins",
           "counted_quantile", "curve_resamples", "finish", "hist_quantile", "logistic_fits",
           "merge_summaries", "merge_sums", "multilabel_of_sums", "ranking_and_k_records",
           "reduced_records", "reliability_values", "unit_summary", "write_per_query"]

#: Parts of the in-memory report this run does not make.
NOT_COMPUTED = reduced_tables.NOT_COMPUTED
#: Resamples weighted at once on a worker (weights: this many x the unit's queries, int32).
RESAMPLE_BATCH = 64
#: The interval method the records name.
METHOD = "poisson_bootstrap"


def _reliability_resamples(counts: ScoreCounts, weighted, config):
    """ECE and MCE of each resample from the weighted counts (the full sample's bins)."""
    from metrics_core.metrics import calibration

    conf, _, _, idx, edges = calibration_bins(counts, config)
    k = edges.size - 1
    # weighted counts hold every distinct p of the data, as the merged score counts do
    _, ones, weight = calibration_rows(weighted.values, weighted.pos.astype(np.float64),
                                        weighted.neg.astype(np.float64),
                                        config.calibration_view)
    onehot = (idx[:, None] == np.arange(k)[None, :]).astype(np.float64)
    count = weight @ onehot
    residual = (ones - conf[None, :] * weight) @ onehot
    return (calibration.ece_from_sums(residual, weight.sum(axis=1)),
            calibration.mce_from_sums(count, residual))


def _means(inter, ds) -> dict:
    """Per-query values and masks of the mean records: name -> (values, mask)."""
    sq = (ds.p - ds.y) ** 2
    out = {"brier": (sq, None), "evidence_recall": (inter.rec, inter.emask),
           "evidence_precision": (inter.prec, inter.emask), "mean_k": (inter.k, None)}
    for name, values in inter.rk.items():
        out[name] = (values, inter.rmask)
    return out


def write_per_query(frame, directory: str, part: int) -> tuple[str, int]:
    """Write one unit's per-query rows as ``part-NNNNN.parquet`` in ``directory`` (on the
    worker: a temporary file, then a rename, so a unit run again after a lost worker replaces
    its own part whole); returns the file's name and its rows."""
    import os
    from pathlib import Path

    name = f"part-{part:05d}.parquet"
    target = Path(directory) / name
    tmp = target.with_name(f".{name}.{os.getpid()}.tmp")
    try:
        frame.to_parquet(tmp, index=False)
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()
    return name, len(frame)


def unit_summary(q_paths: Sequence[str], c_paths: Sequence[str], config, *, queries_name: str,
                 candidates_name: str, per_query_dir: str | None = None,
                 part: int = 0) -> dict:
    """One unit's sums for the reduced records (on a worker); an error dict for bad input.
    With ``per_query_dir``, the unit's per-query table is written there as part ``part``
    (:func:`write_per_query`) and only its name and rows are in the summary."""
    from metrics_core.engines.reduced_audit import unit_audit
    from metrics_core.engines.units import load_unit_with_rows
    from metrics_core.errors import InputError
    from metrics_core.evaluation.evaluator import Evaluator
    from metrics_core.metrics import gate, outcomes

    loaded = load_unit_with_rows(q_paths, c_paths, queries_name, candidates_name)
    if isinstance(loaded, dict):
        return loaded
    loaded, exclusions = loaded
    cfg = config
    kept = {"n_excluded_queries": int(loaded.dataset.meta.get("n_excluded_queries", 0)),
            "n_excluded_candidates": int(loaded.dataset.meta.get("n_excluded_candidates", 0)),
            "warnings": list(loaded.warnings),
            "audit": unit_audit(loaded, exclusions)}  # all the unit's rows, unfiltered
    del exclusions
    try:
        ev = Evaluator(loaded.dataset).for_filters(cfg.filters)
    except InputError:  # no query of this unit passes the filters
        return {"empty": cfg.filters.describe(), **kept}
    ds = ev.ds
    inter = ev.intermediate(cfg)
    gate_pred = gate.states_to_prediction(inter.states)
    means = _means(inter, ds)
    k = inter.k.astype(np.int64)
    cells = _query_cells(ds, cfg, inter.states)

    def multilabel_sums(rows) -> dict:
        per_post, per_crit = _post_sums(ds, cells, rows)
        return {"n_posts": int(np.count_nonzero(per_post[:, 0])),
                "posts": per_post.sum(axis=0),
                "criteria": dict(zip(ds.criteria, per_crit.sum(axis=0), strict=True))}

    def grouped(codes, g: int, *, multilabel: bool = True) -> list[dict]:
        """The summary's sums of each group of ``codes`` (``g`` groups), one pass over the
        queries per column; without the multi-label cells when ``multilabel`` is false (the
        per-criterion groups: §8's metrics are per post, not per criterion)."""
        codes = np.asarray(codes, dtype=np.int64)
        n = np.bincount(codes, minlength=g)
        n_pos = np.bincount(codes, weights=ds.y, minlength=g)
        values, inverse = np.unique(ds.p, return_inverse=True)
        cell = codes * values.size + inverse
        total = np.bincount(cell, minlength=g * values.size).reshape(g, values.size)
        pos = np.bincount(cell[ds.y == 1], minlength=g * values.size).reshape(g, values.size)
        tables = {"tau": outcomes.outcome_counts(ds.y, inter.pred, codes, g),
                  "gate": outcomes.outcome_counts(ds.y, gate_pred, codes, g)}
        columns = {}
        for name, (v, m) in means.items():
            if m is None:
                columns[name] = (np.bincount(codes, weights=v, minlength=g), n)
            else:
                columns[name] = (np.bincount(codes, weights=np.where(m, v, 0.0), minlength=g),
                                 np.bincount(codes, weights=m, minlength=g).astype(np.int64))
        width = int(k.max()) + 1 if k.size else 1
        hist = np.bincount(codes * width + k, minlength=g * width).reshape(g, width)
        out = []
        for i in range(g):
            at = total[i] > 0
            out.append({
                "n_queries": int(n[i]), "n_positive": int(n_pos[i]),
                "counts": ScoreCounts(values[at], pos[i, at].astype(np.int64),
                                      (total[i, at] - pos[i, at]).astype(np.int64)),
                "tau": tables["tau"][i], "gate": tables["gate"][i],
                "sums": {name: (float(t[i]), int(c[i])) for name, (t, c) in columns.items()},
                "k_hist": hist[i],
                "multilabel": multilabel_sums(np.flatnonzero(codes == i)) if multilabel
                else None})
        return out

    out = {"n_posts": int(ds.posts.size), "n_candidates": ds.n_candidates,
           "criteria": set(ds.criteria), **kept, "described": _described(ds),
           "n_queries": ds.n_queries, "n_positive": ds.n_positive,
           "counts": score_counts(ds.y, ds.p),
           "tau": outcomes.outcome_counts(ds.y, inter.pred)[0],
           "gate": outcomes.outcome_counts(ds.y, gate_pred)[0],
           "sums": {n: (float(np.sum(v if m is None else v[m])),
                        int(v.size if m is None else m.sum())) for n, (v, m) in means.items()},
           "k_hist": np.bincount(k, minlength=1), "multilabel": multilabel_sums(None)}
    out.update(reduced_tables.unit_tables(ev, cfg, inter, k, grouped))
    if per_query_dir is not None:
        from metrics_core.evaluation.assemble import per_query_frame

        out["per_query_parts"] = [write_per_query(per_query_frame(ds, inter), per_query_dir,
                                                  part)]
    b_total = int(cfg.bootstrap)
    if b_total < 1:
        return out
    per_post, per_crit = _post_sums(ds, cells, None)
    post_id = np.asarray(ds.posts, dtype=object)[ds.post_code]
    if cfg.bootstrap_unit == "post":
        keys, inverse = np.unique(post_id, return_inverse=True)
        keys = unit_keys(keys)
    else:
        keys = unit_keys(post_id, np.asarray(ds.criteria, dtype=object)[ds.criterion_code])
        inverse = None
    outcome_cells = {"tau": _cells(ds.y, inter.pred), "gate": _cells(ds.y, gate_pred)}
    weighted = b_total * out["counts"].values.size <= WEIGHTED_SORT_LIMIT
    parts = {"tau": [], "gate": [], "auroc": [], "k_hist": [],
             **{n: [] for n in means}}
    width = int(k.max()) + 1 if k.size else 1
    by_criterion = {name: np.flatnonzero(ds.criterion_code == c)
                    for c, name in enumerate(ds.criteria)} if weighted else {}
    by_criterion = {name: rows for name, rows in by_criterion.items() if rows.size}
    parts_by = {name: [] for name in by_criterion}
    for start in range(0, b_total, RESAMPLE_BATCH):
        w = poisson_weights(cfg.seed, keys, min(RESAMPLE_BATCH, b_total - start), start=start)
        if inverse is not None:
            w = w[:, inverse]
        for name in ("tau", "gate"):
            parts[name].append(w.astype(np.int64) @ outcome_cells[name])
        wf = w.astype(np.float64)
        for name, (v, m) in means.items():
            mask = np.ones(v.size, dtype=bool) if m is None else m
            parts[name].append(np.stack([wf @ np.where(mask, v, 0.0), wf @ mask], axis=1))
        key = (np.arange(w.shape[0], dtype=np.int64)[:, None] * width + k[None, :]).ravel()
        parts["k_hist"].append(np.bincount(key, weights=wf.ravel(), minlength=w.shape[0] * width)
                               .reshape(w.shape[0], width).astype(np.int64))
        if weighted:
            parts["auroc"].append(weighted_counts(ds.y, ds.p, w))
        for name, rows in by_criterion.items():  # the per-criterion AUROC intervals
            parts_by[name].append(weighted_counts(ds.y[rows], ds.p[rows], w[:, rows]))
    ml_posts, ml_crit = [], []
    post_keys = unit_keys(np.asarray(ds.posts, dtype=object))
    flat = per_crit.reshape(per_crit.shape[0], -1).astype(np.float64)
    for start in range(0, b_total, RESAMPLE_BATCH):  # the multi-label metrics resample posts
        w = poisson_weights(cfg.seed, post_keys, min(RESAMPLE_BATCH, b_total - start),
                            start=start).astype(np.float64)
        ml_posts.append(w @ per_post)
        ml_crit.append((w @ flat).reshape(w.shape[0], *per_crit.shape[1:]))
    out["resampled"] = {
        "multilabel": {"posts": np.concatenate(ml_posts),
                       "criteria": dict(zip(ds.criteria,
                                            np.concatenate(ml_crit).transpose(1, 0, 2),
                                            strict=True))},
        "tau": np.concatenate(parts["tau"]), "gate": np.concatenate(parts["gate"]),
        "k_hist": np.concatenate(parts["k_hist"], axis=0),
        "means": {n: np.concatenate(parts[n]) for n in means},
        "auroc": _stack_weighted(parts["auroc"]) if weighted else None,
        "auroc_by_criterion": {name: _stack_weighted(p) for name, p in parts_by.items()}
        if weighted else None}
    return out


def _described(ds) -> dict:
    """What the document's ``dataset`` section says of a unit's (filtered) queries beyond the
    counts (:func:`metrics_core.evaluation.assemble.summary`): its folds and splits, how its
    candidates are ranked, whether ``n_gold`` is given, the loader's layout."""
    return {"folds": None if ds.fold is None else set(ds.folds),
            "splits": None if ds.split is None else set(ds.splits),
            "ranked_by": ds.ranked_by, "n_gold_given": ds.n_gold_given is not None,
            "layout": ds.meta.get("layout")}


def _merge_described(a: dict, b: dict) -> dict:
    """Two units' :func:`_described` of the union of their queries (the gathered run's rules:
    ranked by rank when one unit is, ``n_gold`` given when one unit gives it)."""
    def union(x, y):
        return x if y is None else y if x is None else x | y

    return {"folds": union(a["folds"], b["folds"]), "splits": union(a["splits"], b["splits"]),
            "ranked_by": "rank" if "rank" in (a["ranked_by"], b["ranked_by"]) else "score",
            "n_gold_given": a["n_gold_given"] or b["n_gold_given"],
            "layout": a["layout"] if a["layout"] == b["layout"] else None}


def _query_cells(ds, cfg, states) -> np.ndarray:
    """``(queries, 7)`` multi-label cells of each query (§8: each query a present cell of its
    post and criterion): present, wrong, TP, FP, FN, then gold positive."""
    from metrics_core.metrics import multilabel

    labels = multilabel.decision_labels(ds, rule=cfg.multilabel_rule, threshold=cfg.threshold,
                                        states=states)
    y, yh = ds.y == 1, np.asarray(labels) == 1
    return np.stack([np.ones(y.size), (y != yh), y & yh, yh & ~y, y & ~yh, y],
                    axis=1).astype(np.float64)


def _post_sums(ds, cells, rows):
    """``(posts, 8)`` per-post (:data:`POST_COLUMNS`) and ``(posts, criteria, 5)``
    per-post-and-criterion (:data:`CRITERION_COLUMNS`) sums of the multi-label cells of the
    queries ``rows`` (every query when None)."""
    post = ds.post_code if rows is None else ds.post_code[rows]
    crit = ds.criterion_code if rows is None else ds.criterion_code[rows]
    cells = cells if rows is None else cells[rows]
    n_posts, n_crit = int(ds.posts.size), len(ds.criteria)
    per_post = np.stack([np.bincount(post, weights=cells[:, j], minlength=n_posts)
                         for j in range(5)], axis=1)
    has = per_post[:, 0] > 0
    exact = has & (per_post[:, 1] == 0)
    f1 = np.where(has, f1_of_counts(per_post[:, 2], per_post[:, 3], per_post[:, 4]), 0.0)
    cell = post.astype(np.int64) * n_crit + crit
    per_crit = np.stack([np.bincount(cell, weights=cells[:, j], minlength=n_posts * n_crit)
                         for j in (2, 3, 4, 5, 0)], axis=1).reshape(n_posts, n_crit, 5)
    return np.column_stack([per_post, has, exact, f1]), per_crit


def _merge_criteria(a: dict, b: dict) -> dict:
    return {name: a.get(name, 0) + b.get(name, 0) for name in {**a, **b}}


def _cells(y, pred) -> np.ndarray:
    """One-hot outcome cells ``(rows, 6)`` in :func:`outcomes.outcome_counts`' order."""
    cell = (np.asarray(pred, dtype=np.int64) + 1) * 2 + np.asarray(y, dtype=np.int64)
    return (cell[:, None] == np.arange(6)[None, :]).astype(np.int64)


def _stack_weighted(parts):
    """Weighted counts of consecutive resample batches (same values) as one."""
    from metrics_core.engines.resampling import WeightedCounts

    return WeightedCounts(parts[0].values, np.concatenate([p.pos for p in parts]),
                          np.concatenate([p.neg for p in parts]))


def merge_summaries(*parts: dict) -> dict:
    """The summary of the union of units (exact: sums of counts, and of floats)."""
    error = next((p for p in parts if "error" in p), None)
    if error is not None:
        return error
    full = [p for p in parts if "empty" not in p]
    out = dict(full[0] if full else parts[0])
    for name in ("n_excluded_queries", "n_excluded_candidates"):  # whatever the filters kept
        out[name] = sum(p[name] for p in parts)
    out["warnings"] = list(dict.fromkeys(w for p in parts for w in p["warnings"]))
    out["per_query_parts"] = sorted(x for p in parts for x in p.get("per_query_parts", ()))
    audit = parts[0]["audit"]
    for p in parts[1:]:  # every unit's rows, whatever the filters kept
        audit = reduced_audit.merge_audit(audit, p["audit"])
    out["audit"] = audit
    for p in full[1:]:
        for name in ("n_posts", "n_candidates"):
            out[name] = out[name] + p[name]
        out["criteria"] = out["criteria"] | p["criteria"]
        out["described"] = _merge_described(out["described"], p["described"])
        out.update(merge_sums(out, p))
        out.update(reduced_tables.merge_unit_tables(out, p, merge_sums))
        if "resampled" in out:
            a, b = out["resampled"], p["resampled"]
            out["resampled"] = {
                "multilabel": {"posts": a["multilabel"]["posts"] + b["multilabel"]["posts"],
                               "criteria": _merge_criteria(a["multilabel"]["criteria"],
                                                           b["multilabel"]["criteria"])},
                "tau": a["tau"] + b["tau"], "gate": a["gate"] + b["gate"],
                "k_hist": add_hist(a["k_hist"], b["k_hist"]),
                "means": {n: a["means"][n] + b["means"][n] for n in a["means"]},
                "auroc": _merged_weighted(a["auroc"], b["auroc"]),
                "auroc_by_criterion": _merged_by_criterion(a["auroc_by_criterion"],
                                                           b["auroc_by_criterion"])}
    return out


def _merged_by_criterion(a, b):
    """Two units' weighted counts per criterion merged (a criterion's None, or the whole
    None, once past :data:`WEIGHTED_SORT_LIMIT`)."""
    if a is None or b is None:
        return None
    return {name: _merged_weighted(a[name], b[name]) if name in a and name in b
            else a.get(name, b.get(name)) for name in {**a, **b}}


def merge_sums(a: dict, b: dict) -> dict:
    """The sums of two summaries (or of one group's in two units) added: queries, counts,
    outcome tables, the means' sums, K's histogram, the multi-label cells (new objects)."""
    return {"n_queries": a["n_queries"] + b["n_queries"],
            "n_positive": a["n_positive"] + b["n_positive"],
            "counts": merge_counts(a["counts"], b["counts"]),
            "tau": a["tau"] + b["tau"], "gate": a["gate"] + b["gate"],
            "sums": {n: (s + b["sums"][n][0], c + b["sums"][n][1])
                     for n, (s, c) in a["sums"].items()},
            "k_hist": add_hist(a["k_hist"], b["k_hist"]),
            "multilabel": None if a["multilabel"] is None or b["multilabel"] is None else {
                "n_posts": a["multilabel"]["n_posts"] + b["multilabel"]["n_posts"],
                "posts": a["multilabel"]["posts"] + b["multilabel"]["posts"],
                "criteria": _merge_criteria(a["multilabel"]["criteria"],
                                            b["multilabel"]["criteria"])}}


def _merged_weighted(a, b):
    """Two units' weighted counts merged, or None once ``resamples x distinct p`` passes
    :data:`WEIGHTED_SORT_LIMIT` (so the choice depends on the whole data only)."""
    if a is None or b is None:
        return None
    merged = merge_weighted(a, b)
    return merged if merged.pos.size <= WEIGHTED_SORT_LIMIT else None


def finish(summary: dict, config) -> dict:
    """The merged summary with each resample's values in place of its weighted sums (run on
    the cluster: the client receives numbers per resample, not per distinct ``p``)."""
    if "error" in summary or "empty" in summary or "resampled" not in summary:
        return summary
    r = summary["resampled"]
    with np.errstate(invalid="ignore", divide="ignore"):
        means = {n: v[:, 0] / v[:, 1] for n, v in r["means"].items()}
    hist = r["k_hist"]
    values = {"tau": r["tau"].reshape(-1, 3, 2), "gate": r["gate"].reshape(-1, 3, 2),
              "multilabel": multilabel_of_sums(r["multilabel"]["posts"],
                                               r["multilabel"]["criteria"]),
              "means": means,
              "median_k": np.array([hist_quantile(h, 50) for h in hist]),
              "p90_k": np.array([hist_quantile(h, 90) for h in hist]),
              "auroc": None if r["auroc"] is None else auroc_of_weighted(r["auroc"]),
              "auprc": None if r["auroc"] is None else auprc_of_weighted(r["auroc"])}
    if r["auroc"] is not None:
        values["ece"], values["mce"] = _reliability_resamples(summary["counts"], r["auroc"],
                                                               config)
        values["net_benefit"] = _net_benefit_resamples(r["auroc"])
        values["roc"], values["pr"] = curve_resamples(r["auroc"])
        values["gate_areas"] = _gate_area_resamples(r["auroc"], config)
    if r.get("auroc_by_criterion") is not None:
        values["auroc_by_criterion"] = {
            name: None if counts is None else auroc_of_weighted(counts)
            for name, counts in r["auroc_by_criterion"].items()}
    return {**summary, "resampled": values}


def curve_resamples(weighted, grid=None) -> tuple[np.ndarray, np.ndarray]:
    """``(resamples, grid)`` ROC (TPR at each grid FPR) and PR (precision at each grid recall)
    curves of each resample from its weighted class counts at each distinct ``p``, by the
    in-memory bands' rules (:func:`metrics_core.metrics.curve_replicates.curve_replicates`,
    grid :data:`~metrics_core.evaluation.intervals.BAND_GRID`).

    The curves depend on the rows only through each distinct ``p``'s weighted positives and
    negatives, so each distinct ``p`` is laid out as two rows (its negatives, its positives)
    whose weights are those counts: the same curves as the rows under the same weights."""
    from metrics_core.evaluation.intervals import BAND_GRID
    from metrics_core.metrics.curve_replicates import ScoreLayout, curve_replicates

    grid = np.asarray(BAND_GRID if grid is None else grid, dtype=np.float64)
    m = weighted.values.size
    layout = ScoreLayout(np.repeat(weighted.values, 2), np.tile([0, 1], m))

    def batches():
        for start in range(0, weighted.pos.shape[0], RESAMPLE_BATCH):
            pos = weighted.pos[start:start + RESAMPLE_BATCH]
            w = np.empty((pos.shape[0], 2 * m), dtype=np.int64)
            w[:, 0::2], w[:, 1::2] = weighted.neg[start:start + RESAMPLE_BATCH], pos
            yield w

    values = curve_replicates(layout, batches(), roc_grid=grid, pr_grid=grid,
                              discrimination=False)
    return values["roc"], values["pr"]


def _gate_area_resamples(weighted, config) -> np.ndarray:
    """``(resamples, 3)`` AURC, optimal AURC and E-AURC of the gate's risk–coverage curve for
    the first min(resamples, :data:`~metrics_core.metrics.risk_coverage.GATE_RESAMPLES`)
    resamples, from their weighted class counts at each distinct ``p``."""
    from metrics_core.metrics import risk_coverage

    b = min(weighted.pos.shape[0], risk_coverage.GATE_RESAMPLES)
    return risk_coverage.gate_area_resamples(weighted.values, weighted.pos[:b],
                                             weighted.neg[:b], threshold=config.threshold)


def _net_benefit_resamples(weighted) -> np.ndarray:
    """``(resamples, thresholds)`` net benefit of each resample at the decision curve's
    thresholds, from its weighted class counts at each distinct ``p``
    (:func:`metrics_core.metrics.decision.net_benefit` on the counts as weights)."""
    from metrics_core.metrics import decision

    v = weighted.values
    y = np.r_[np.ones(v.size), np.zeros(v.size)]
    p = np.r_[v, v]
    w = np.concatenate([weighted.pos, weighted.neg], axis=1).astype(np.float64)
    nb, _ = decision.net_benefit(y, p, np.asarray(decision.DECISION_THRESHOLDS), w)
    return nb


class _Resampled(dict):
    """Metric name -> percentile interval of its resample values (``Intervals``' ``pair``)."""

    method = METHOD

    def pair(self, name):
        values = self.get(name)
        if values is None:
            return None, None
        values = np.asarray(values, dtype=np.float64)
        valid = int(np.isfinite(values).sum())
        return percentile_interval(values), valid


def _counting_values(tables: np.ndarray, which: str) -> dict:
    """Each bootstrapped counting metric of outcome table ``which``, per resample."""
    from metrics_core import registry
    from metrics_core.metrics import outcomes

    return {spec.name: outcomes.counted(tables, spec.counting)[0]
            for spec in registry.counting(which) if spec.interval == "bootstrap"}


def reduced_records(summary: dict, config) -> list:
    """The records of the reduced run, in report order (see the module's docstring)."""
    from metrics_core.evaluation import kernels, sections
    from metrics_core.metrics import classification
    from metrics_core.registry import fmt_t

    cfg = config
    n, n_pos = summary["n_queries"], summary["n_positive"]
    counts: ScoreCounts = summary["counts"]
    resampled = summary.get("resampled")
    boot = _Resampled()
    if resampled is not None:
        boot.update(_counting_values(resampled["tau"], "tau"))
        op_gate = _Resampled(_counting_values(resampled["gate"], "gate"))
        boot["brier"] = resampled["means"]["brier"]
    else:
        op_gate = _Resampled()
    records = sections.RecordList(n_positive=n_pos, n_negative=n - n_pos)
    s = counted_scores(counts)
    for name, kernel in (("auroc", classification.roc_auc),
                         ("auprc", classification.average_precision)):
        score = kernel(s)
        ci, method = None, None
        if resampled is not None and resampled[name] is not None:
            ci, method = percentile_interval(resampled[name]), METHOD
        elif resampled is not None and name == "auroc":
            ci, method = delong_interval(counts), "delong"
        records.add(name, score.value, sections.ALL, n, ci=ci, ci_method=method,
                    defined=score.defined)
    for t in classification.tpr_at_fpr(s, targets=cfg.tpr_fprs):
        fmt = fmt_t(t.target)
        records.add(f"tpr@fpr={fmt}", t.tpr, sections.ALL, n_pos,
                    ci=sections.wilson(round(t.tpr * n_pos), n_pos)
                    if math.isfinite(t.tpr) else None,
                    ci_method="wilson", defined=t.defined and math.isfinite(t.tpr))
        records.add(f"threshold@fpr={fmt}", t.threshold, sections.ALL, n,
                    defined=t.defined and math.isfinite(t.threshold))
    sections.counting_records(records, summary["tau"][None], "tau",
                              f"{sections.ALL} @ τ={cfg.threshold:g}", boot)
    ece, mce = reliability_values(counts, cfg)
    reliability_variant = kernels.VARIANTS["reliability"](cfg)
    for name, value in (("ece", ece), ("mce", mce)):
        ci = None
        if resampled is not None and resampled.get(name) is not None:
            ci = percentile_interval(resampled[name])
        records.add(name, value, sections.ALL, n, ci=ci,
                    ci_method=METHOD if ci is not None else None, variant=reliability_variant)
    fits = logistic_fits(counts)
    for name, field, kind, variant in (
            ("calibration_in_the_large", "in_the_large", "poisson", "positive_p"),
            ("calibration_intercept", "intercept", "wald", "logistic_intercept"),
            ("calibration_slope", "slope", "wald", "logistic_slope")):
        records.add(name, getattr(fits, field), sections.ALL, n,
                    ci=getattr(fits, f"{field}_ci"), ci_method=kind,
                    variant=kernels.VARIANTS[variant](cfg))
    sum_sq, n_sq = summary["sums"]["brier"]
    records.add_boot("brier", sum_sq / n_sq if n_sq else None, sections.ALL, n, boot,
                     variant="positive class p")
    sections.counting_records(records, summary["gate"][None], "gate",
                              f"{sections.ALL} @ {cfg.describe_gate()}", op_gate)
    return records


def ranking_and_k_records(records, summary: dict, config) -> None:
    """Ranking means (§3), evidence and K (§7) of the reduced run, after :func:`reduced_records`.
    """
    from metrics_core import registry
    from metrics_core.config import VARIANT_LABELS
    from metrics_core.evaluation import sections
    from metrics_core.metrics.multilabel import MULTILABEL_NAMES

    cfg = config
    resampled = summary.get("resampled")
    boot = _Resampled()
    if resampled is not None:
        boot.update(resampled["means"])
        boot["median_k"], boot["p90_k"] = resampled["median_k"], resampled["p90_k"]
        boot["workload_per_1000"] = resampled["means"]["mean_k"] * 1000
    variant = (f"precision {VARIANT_LABELS['precision_denominator'][cfg.precision_denominator]}"
               f"; map {VARIANT_LABELS['map_denominator'][cfg.map_denominator]}"
               f"; {VARIANT_LABELS['gain'][cfg.gain]}")
    skip = {"brier", "evidence_recall", "evidence_precision", "mean_k"}
    for name, (total, count) in summary["sums"].items():
        if name in skip:
            continue
        mean = total / count if count else None
        if registry.spec(name).interval == "wilson":
            ci = sections.wilson(round(mean * count), count) if count else None
            records.add(name, mean, cfg.ranking_protocol, count, ci=ci, ci_method="wilson",
                        variant=variant)
        else:
            records.add_boot(name, mean, cfg.ranking_protocol, count, boot, variant=variant)
    variant = (f"γ={cfg.gamma:g}, γ_uncertain={cfg.gamma_uncertain:g}, k_min={cfg.k_min}, "
               f"hard_cap={cfg.hard_cap}, k_max_ratio={cfg.k_max_ratio:g}, "
               f"{'gate-aware' if cfg.gate_aware else 'gate-blind'}, "
               f"{VARIANT_LABELS['mass'][cfg.mass]}")
    for name in ("evidence_recall", "evidence_precision"):
        total, count = summary["sums"][name]
        records.add_spec(name, total / count if count else None, cfg.evidence_protocol, count,
                         boot, variant=variant)
    total_k, n = summary["sums"]["mean_k"]
    hist = summary["k_hist"]
    for name, value in (("mean_k", total_k / n if n else None),
                        ("median_k", hist_quantile(hist, 50)),
                        ("p90_k", hist_quantile(hist, 90)), ("workload", total_k),
                        ("workload_per_1000", total_k / max(n, 1) * 1000)):
        records.add_spec(name, value, sections.ALL, n, boot, variant=variant)
    ml = summary["multilabel"]
    values = multilabel_of_sums(ml["posts"], ml["criteria"])
    boot = _Resampled(resampled["multilabel"] if resampled is not None else {})
    n_posts = ml["n_posts"]
    variant = VARIANT_LABELS["multilabel_rule"][cfg.multilabel_rule]
    for name in MULTILABEL_NAMES:
        value = float(values[name])
        if registry.spec(name).interval == "wilson":  # exact match: a proportion of posts
            ci = sections.wilson(round(value * n_posts), n_posts) if math.isfinite(value) \
                else None
            records.add(name, value, f"{sections.ALL} (per post)", n_posts, ci=ci,
                        ci_method="wilson", variant=variant)
        else:
            records.add_boot(name, value, f"{sections.ALL} (per post)", n_posts, boot,
                             variant=variant)
