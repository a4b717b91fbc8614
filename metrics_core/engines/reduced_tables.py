"""The tables and checks of the reduced Dask run, from per-unit sums merged on the workers.

Each work unit adds to its summary (:func:`unit_tables`): the summary's own sums for each of
its criteria and folds (the per-criterion and per-fold tables are the records' rules on each
group's sums), the histograms of K by gate state and by class, the sums of the γ sweep, what
the consistency checks read (the ranking protocol's count, whether recall@K and the evidence
recall at the same fixed K agree on every query, the posts found in more than one fold or
split) and each ranking metric's per-query values counted by distinct value (a few thousand
at most: ratios of small whole numbers and discounts of ranks). :func:`merge_unit_tables`
adds two units' parts; the client makes the tables with the in-memory code
(:func:`document_tables`): the group tables by
:func:`metrics_core.evaluation.tables.assemble_group_table`, the gate grid by
:func:`metrics_core.evaluation.evaluator.gate_grid_frame` on the counts by distinct ``p``, the
decision curve by :func:`metrics_core.metrics.decision.decision_curve` on those counts as
weights, the ranking distribution from the counted values, the fold summary and the targets
from the records. What reaches the client is proportional to the report: groups x (distinct
``p`` + metrics), never to the queries.

With resamples, the decision curve's band is the Poisson bootstrap's percentile interval of
each resample's net benefit (from its weighted class counts at each distinct ``p``, made on
the cluster: :func:`metrics_core.engines.reduced.finish`), while those counts are kept
(``WEIGHTED_SORT_LIMIT``); so are the ROC and PR bands (:func:`curve_bands`, from each
resample's curves at the grid, also made on the cluster). The gate's risk–coverage curve and
areas come from the counts by distinct ``p`` (exactly the in-memory ones: one point per
distinct confidence level), the areas' intervals from the same weighted counts; the smoothed
calibration curve from the same counts (its fit runs on one row per distinct ``p`` in memory
too: :func:`metrics_core.engines.counted.smoothed_calibration_of_counts`). The per-query
table is never made here (the workers write it with ``--per-query DIR``; else
``not_computed`` names it: :data:`PER_QUERY_NOT_COMPUTED`). The input audit is made from the
units' counts and examples (:mod:`metrics_core.engines.reduced_audit`). The per-criterion AUROC
intervals are the Poisson bootstrap's, from each criterion's weighted class counts (while
they are kept, as the overall AUROC's).
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

__all__ = ["BANDS_NOT_COMPUTED", "NOT_COMPUTED", "PER_QUERY_NOT_COMPUTED", "curve_bands",
           "document_tables", "gammas", "merge_unit_tables", "not_computed", "unit_tables"]

#: Parts of the in-memory report the reduced run does not make (none: the per-query table
#: is written by the workers with ``--per-query DIR``, else :data:`PER_QUERY_NOT_COMPUTED`).
NOT_COMPUTED: tuple[str, ...] = ()


#: What ``not_computed`` says when the bands are not made although resamples were asked for.
BANDS_NOT_COMPUTED = ("roc_band and pr_band (resamples x distinct p above "
                      "WEIGHTED_SORT_LIMIT: no weighted counts to read the curves from)")


#: What ``not_computed`` says of the per-query table when no folder was named for it.
PER_QUERY_NOT_COMPUTED = ("per_query (one row per query: never in this document; --per-query "
                          "DIR has the workers write it as Parquet parts)")


def not_computed(summary: dict, cfg, *, per_query: bool = False) -> list[str]:
    """The document's ``not_computed``: the per-query table unless it was written
    (``per_query``), :data:`NOT_COMPUTED`, and the bands when resamples were asked for but the
    weighted counts were not kept (``WEIGHTED_SORT_LIMIT``)."""
    out = ([] if per_query else [PER_QUERY_NOT_COMPUTED]) + list(NOT_COMPUTED)
    resampled = summary.get("resampled")
    if int(cfg.bootstrap) > 0 and (not resampled or resampled.get("roc") is None):
        out.append(BANDS_NOT_COMPUTED)
    return out


def gammas(cfg) -> list[float]:
    """The γ values of the γ sweep (:meth:`Evaluator.gamma_sweep`), ascending."""
    from metrics_core.evaluation.evaluator import GAMMA_SWEEP

    return sorted({float(x) for x in GAMMA_SWEEP} | {float(cfg.gamma)})


# ---------------------------------------------------------------------------- on a worker
def unit_tables(ev, cfg, inter, k: np.ndarray, grouped) -> dict:
    """A unit's parts of the tables and checks; ``grouped(codes, g, multilabel=...)`` is the
    summary's sums of each group (:func:`metrics_core.engines.reduced.unit_summary`)."""
    from metrics_core.evaluation.checks import disjoint_posts, recall_agreement

    ds = ev.ds
    by_criterion = grouped(ds.criterion_code, len(ds.criteria), multilabel=False)
    groups = {"criterion": {name: s for name, s in zip(ds.criteria, by_criterion, strict=True)
                            if s["n_queries"]}}
    if ds.fold is not None:
        folds, codes = np.unique(ds.fold, return_inverse=True)
        groups["fold"] = dict(zip((int(f) for f in folds), grouped(codes, folds.size),
                                  strict=True))
    width = int(k.max()) + 1 if k.size else 1
    by = {"state": np.stack([np.bincount(k[inter.states == s], minlength=width)
                             for s in range(3)]),
          "class": np.stack([np.bincount(k[ds.y == v], minlength=width) for v in (0, 1)])}
    states = ev.states(cfg)
    mask = ev.evidence_mask(cfg)
    sweep = []
    for g in gammas(cfg):
        kg = ev.select_k(cfg, states, gamma=g)
        rec, prec = ev.evidence(cfg, kg)
        sweep.append([float(kg.sum()), float(kg.size), float(np.sum(rec[mask])),
                      float(np.sum(prec[mask])), float(mask.sum())])
    rows = np.flatnonzero(inter.rmask)
    distributions = {name: np.unique(values.take(rows), return_counts=True)
                     for name, values in inter.rk.items()}
    return {"groups": groups, "k_by": by, "gamma": np.array(sweep),
            "ranking_values": distributions,
            "checks": {"n_rank": int(inter.rmask.sum()), "ref": int(inter.ref),
                       "recall": recall_agreement(ds, inter), "disjoint": disjoint_posts(ds)}}


def merge_unit_tables(a: dict, b: dict, merge_sums) -> dict:
    """Two units' parts added (``merge_sums`` adds two summaries' sums); new objects."""
    from metrics_core.engines.counted import add_hist

    groups = {}
    for label in {**a["groups"], **b["groups"]}:
        ga, gb = a["groups"].get(label, {}), b["groups"].get(label, {})
        groups[label] = {key: merge_sums(ga[key], gb[key]) if key in ga and key in gb
                         else ga.get(key, gb.get(key)) for key in {**ga, **gb}}
    ca, cb = a["checks"], b["checks"]
    recall = None if ca["recall"] is None or cb["recall"] is None else \
        ca["recall"] and cb["recall"]
    disjoint = {}
    for column in ("fold", "split"):
        da, db = ca["disjoint"][column], cb["disjoint"][column]
        disjoint[column] = None if da is None or db is None else \
            (da[0] + db[0], (da[1] + db[1])[:5])
    return {"groups": groups,
            "k_by": {n: add_hist(a["k_by"][n], b["k_by"][n]) for n in a["k_by"]},
            "ranking_values": {n: _merge_values(v, b["ranking_values"][n])
                               for n, v in a["ranking_values"].items()},
            "gamma": a["gamma"] + b["gamma"],
            "checks": {"n_rank": ca["n_rank"] + cb["n_rank"], "ref": ca["ref"],
                       "recall": recall, "disjoint": disjoint}}


def _merge_values(a: tuple, b: tuple) -> tuple:
    """Two (distinct values ascending, counts) of one metric's per-query values merged."""
    values, inverse = np.unique(np.concatenate([a[0], b[0]]), return_inverse=True)
    counts = np.bincount(inverse, weights=np.concatenate([a[1], b[1]]).astype(np.float64),
                         minlength=values.size)
    return values, counts.astype(np.int64)


# ---------------------------------------------------------------------------- on the client
def _ranking_distribution(distributions: dict) -> list[dict]:
    """Mean, std (ddof 0), median, P25, P75 and n of each ranking metric's per-query values
    over the ranking protocol's queries
    (:func:`metrics_core.metrics.ranking.summarize`), from its counted distinct values."""
    from metrics_core.engines.counted import counted_quantile

    rows = []
    for name, (values, counts) in distributions.items():
        n = int(counts.sum())
        if n == 0:
            rows.append({"name": name, "mean": np.nan, "std": np.nan, "median": np.nan,
                         "p25": np.nan, "p75": np.nan, "n": 0})
            continue
        mean = float(np.dot(values, counts) / n)
        std = float(np.sqrt(np.dot((values - mean) ** 2, counts) / n))
        rows.append({"name": name, "mean": mean, "std": std,
                     "median": counted_quantile(values, counts, 0.5),
                     "p25": counted_quantile(values, counts, 0.25),
                     "p75": counted_quantile(values, counts, 0.75), "n": n})
    return rows

def _kernel_columns(summaries: list, cfg, inter, where) -> dict[str, np.ndarray]:
    """Every kernel metric that applies ``where`` (None: anywhere) of each group's sums, as
    :func:`metrics_core.evaluation.kernels.group_values` computes it from the rows."""
    from metrics_core import registry
    from metrics_core.engines import counted
    from metrics_core.evaluation.kernels import names
    from metrics_core.metrics import outcomes

    out: dict[str, np.ndarray] = {}
    whole: dict[str, list] = {}
    for spec in registry.kernels(where=where):
        kernel = spec.kernel
        for name in names(spec, inter):
            if not kernel.per_query:
                if kernel.source != "discrimination":
                    whole.setdefault(kernel.source, []).append((name, kernel.field or name))
                continue
            key = {"ranking": name, "squared_error": "brier", "k": "mean_k"}.get(
                kernel.source, kernel.source)
            total = np.array([s["sums"][key][0] for s in summaries], dtype=np.float64)
            count = np.array([s["sums"][key][1] for s in summaries], dtype=np.float64)
            how = kernel.reduce
            if how in ("median", "p90"):
                out[name] = np.array([counted.hist_quantile(s["k_hist"],
                                                            50 if how == "median" else 90)
                                      for s in summaries])
            elif how == "sum":
                out[name] = total
            else:
                out[name] = outcomes.ratio(total, count, 1000.0 if how == "per_1000" else 1.0)
    for source, fields in whole.items():
        if source == "reliability":
            found = [dict(zip(("ece", "mce"), counted.reliability_values(s["counts"], cfg),
                              strict=True)) for s in summaries]
        elif source == "logistic":
            found = [{f: getattr(fits, f) for f in ("in_the_large", "intercept", "slope")}
                     for fits in (counted.logistic_fits(s["counts"]) for s in summaries)]
        else:  # multilabel
            found = [counted.multilabel_of_sums(s["multilabel"]["posts"],
                                                s["multilabel"]["criteria"])
                     for s in summaries]
        for name, field in fields:
            out[name] = np.array([float(f[field]) for f in found], dtype=np.float64)
    return out


def _discrimination(summaries: list, cfg) -> dict[str, np.ndarray]:
    """AUROC (and whether defined), AUPRC, TPR / threshold at the FPR targets per group, NaN
    where undefined (:func:`metrics_core.evaluation.kernels.group_discrimination`)."""
    from metrics_core.engines.reductions import counted_scores
    from metrics_core.metrics import classification
    from metrics_core.registry import fmt_t

    out: dict[str, list] = {}
    for s in summaries:
        scores = counted_scores(s["counts"])
        auroc = classification.roc_auc(scores)
        auprc = classification.average_precision(scores)
        out.setdefault("auroc_defined", []).append(auroc.defined)
        out.setdefault("auroc", []).append(auroc.value if auroc.defined else np.nan)
        out.setdefault("auprc", []).append(auprc.value if auprc.defined else np.nan)
        for t in classification.tpr_at_fpr(scores, targets=cfg.tpr_fprs):
            out.setdefault(f"tpr@fpr={fmt_t(t.target)}", []).append(
                np.nan if not auroc.defined else t.tpr)
            out.setdefault(f"threshold@fpr={fmt_t(t.target)}", []).append(
                np.nan if not auroc.defined else t.threshold)
    return {k: np.asarray(v) for k, v in out.items()}


def _group_body(summaries: list, names: list, cfg, inter, label, auroc_cis=None):
    """(body, metric columns) of a table per ``label`` (``pooled``: the one pooled row);
    ``auroc_cis``: each group's AUROC interval (or None), the per-criterion table's."""
    from metrics_core import registry
    from metrics_core.evaluation.kernels import names as record_names
    from metrics_core.evaluation.tables import counting_columns, group_frame
    from metrics_core.metrics import outcomes

    n = np.array([s["n_queries"] for s in summaries], dtype=np.int64)
    n_pos = np.array([s["n_positive"] for s in summaries], dtype=np.int64)
    values = {"n": n, "n_positive": n_pos, "positive_rate": outcomes.ratio(n_pos, n)}
    discrimination = _discrimination(summaries, cfg)
    values["auroc_defined"] = discrimination["auroc_defined"]
    values.update(counting_columns({t: np.stack([s[t] for s in summaries])
                                    for t in ("tau", "gate")}, label))
    where = None if label == "pooled" else label
    kernels = _kernel_columns(summaries, cfg, inter, where)
    for spec in registry.kernels(where=where):  # in the registry's order, as in memory
        for name in record_names(spec, inter):
            values[name] = (discrimination if spec.kernel.source == "discrimination"
                            else kernels)[name]
    if auroc_cis is not None:
        values["auroc_ci_lo"] = np.array([np.nan if c is None else c[0] for c in auroc_cis])
        values["auroc_ci_hi"] = np.array([np.nan if c is None else c[1] for c in auroc_cis])
    return group_frame(values, inter, label, names)


def _group_table(summary: dict, label: str, cfg, inter):
    from metrics_core.engines.gathered import criteria_order
    from metrics_core.evaluation.tables import assemble_group_table

    groups = summary["groups"].get(label)
    if groups is None:
        return None
    from metrics_core.engines.resampling import percentile_interval

    keys = list(criteria_order(groups)) if label == "criterion" else sorted(groups)
    resampled = (summary.get("resampled") or {}).get("auroc_by_criterion")
    cis = None
    if label == "criterion" and resampled is not None:  # the Poisson bootstrap's intervals
        cis = [None if resampled.get(k) is None else percentile_interval(resampled[k])
               for k in keys]
    body, metrics = _group_body([groups[k] for k in keys], [str(k) for k in keys], cfg, inter,
                                label, cis)
    pooled, _ = _group_body([summary], ["pooled"], cfg, inter, "pooled")
    return assemble_group_table(body, metrics, pooled, label)


def _k_stats(hist: np.ndarray) -> dict:
    """:meth:`metrics_core.metrics.dynamic_k.KStats.as_dict` of the K whose counts are
    ``hist``."""
    from metrics_core.engines.counted import hist_quantile

    n = int(hist.sum())
    if n == 0:
        nan = float("nan")
        return {"n": 0, "mean_k": nan, "median_k": nan, "p90_k": nan, "min_k": nan,
                "max_k": nan, "workload": 0, "workload_per_1000": nan}
    values = np.flatnonzero(hist)
    total = int(np.dot(np.arange(hist.size), hist))
    return {"n": n, "mean_k": total / n, "median_k": hist_quantile(hist, 50),
            "p90_k": hist_quantile(hist, 90), "min_k": float(values[0]),
            "max_k": float(values[-1]), "workload": total,
            "workload_per_1000": total / n * 1000.0}


def _reliability_table(counts, cfg):
    """The reliability table (:func:`metrics_core.metrics.calibration.reliability_bins` of the
    calibration view) from the counts by distinct ``p``."""
    import pandas as pd

    from metrics_core.engines.counted import calibration_bins
    from metrics_core.metrics.uncertainty import wilson_interval

    conf, ones, total, idx, edges = calibration_bins(counts, cfg)
    k = edges.size - 1
    count = np.bincount(idx, weights=total, minlength=k).round().astype(np.int64)
    positives = np.bincount(idx, weights=ones, minlength=k).round().astype(np.int64)
    sum_p = np.bincount(idx, weights=conf * total, minlength=k)
    filled = count > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        confidence = np.where(filled, sum_p / count, np.nan)
        observed = np.where(filled, positives / count, np.nan)
    lo, hi = wilson_interval(positives, count)
    return pd.DataFrame({"lo": edges[:-1], "hi": edges[1:], "count": count,
                         "mean_confidence": confidence, "observed_frequency": observed,
                         "wilson_lo": np.asarray(lo), "wilson_hi": np.asarray(hi),
                         "gap": observed - confidence})


def _gate_risk_coverage(summary: dict, cfg) -> dict:
    """The gate's risk–coverage section (:func:`metrics_core.metrics.risk_coverage.
    gate_section`) from the counts by distinct ``p`` (the curve and areas exactly the
    in-memory ones), the gate's outcome table (its point) and, with resamples, the Poisson
    bootstrap's areas made on the cluster (``resampled["gate_areas"]``)."""
    from metrics_core.engines.resampling import percentile_interval
    from metrics_core.metrics import risk_coverage
    from metrics_core.metrics.outcomes import abstention_fractions

    counts = summary["counts"]
    if not summary["n_queries"]:
        return {"defined": False, "reason": "no query"}
    curve = risk_coverage.gate_risk_coverage_of_counts(counts.values, counts.pos, counts.neg,
                                                       threshold=cfg.threshold)
    areas = (summary.get("resampled") or {}).get("gate_areas")
    n_boot = 0
    if areas is not None and areas.shape[0]:
        n_boot = int(areas.shape[0])
        curve = risk_coverage.RiskCoverage(
            curve.coverage, curve.risk, curve.aurc, curve.optimal_aurc, curve.n,
            {name: percentile_interval(areas[:, j])
             for j, name in enumerate(("aurc", "optimal_aurc", "excess_aurc"))})
    fractions = abstention_fractions(np.asarray(summary["gate"])[None])

    def ratio(name):
        k, n, _ = fractions[name]
        return float(k[0]) / float(n[0]) if n[0] > 0 else float("nan")

    return risk_coverage.section_of(curve, cfg, n_boot, coverage=ratio("coverage"),
                                    accuracy_answered=ratio("accuracy_answered"))


def _checks(summary: dict, records, cfg) -> list:
    from metrics_core.evaluation.checks import (
        confusion_checks,
        disjoint_checks,
        range_check,
        recall_check,
    )
    from metrics_core.evaluation.result import Check

    values = {r.name: r.value for r in records}
    n, n_pos = summary["n_queries"], summary["n_positive"]
    checks = [range_check(records), *confusion_checks(values, n, n_pos)]
    pooled = np.asarray(summary["gate"])
    total = int(pooled.sum())
    checks.append(Check("NEG + UNCERTAIN + POS = N", total == n, f"{total} vs N = {n}"))
    c = summary["checks"]
    if cfg.ranking_protocol == "positives_only":
        checks.append(Check("ranking metrics on has_evidence = 1 only", c["n_rank"] == n_pos,
                            f"ranking n = {c['n_rank']}, positives = {n_pos}"))
    summed = sum(np.asarray(g["gate"]) for g in summary["groups"]["criterion"].values())
    missed = int(summed[1, 1])
    via_groups = (n_pos - missed) / n_pos if n_pos else float("nan")
    overall = values.get("screening_sensitivity")
    overall = float("nan") if overall is None else overall
    same = bool((summed == pooled).all()) and (
        (np.isnan(via_groups) and np.isnan(overall))
        or abs(via_groups - overall) <= 1e-12)
    checks.append(Check("screening sensitivity: pooled per-criterion = overall", same,
                        f"{via_groups:.6f} vs {overall:.6f}"))
    checks.append(recall_check(c["recall"], c["ref"], cfg, values))
    checks.extend(disjoint_checks(None, c["disjoint"]))
    return checks


def curve_bands(resampled):
    """The ROC and PR bands (frames as the in-memory run's, ``roc_band`` / ``pr_band``) from
    each resample's curve on the grid (:func:`metrics_core.engines.reduced.curve_resamples`,
    made on the cluster): at each grid point the percentile 95% interval of the resamples
    where the curve is defined, the in-memory rule
    (:func:`metrics_core.metrics.uncertainty.percentile_cis`). ``(None, None)`` without
    resamples or once the weighted counts are not kept (``WEIGHTED_SORT_LIMIT``)."""
    import pandas as pd

    from metrics_core.evaluation.intervals import BAND_GRID
    from metrics_core.metrics.uncertainty import percentile_cis

    if not resampled or resampled.get("roc") is None:
        return None, None
    grid = np.asarray(BAND_GRID)
    roc = percentile_cis(resampled["roc"])
    pr = percentile_cis(resampled["pr"])
    return (pd.DataFrame({"fpr": grid, "tpr_lo": [c.lo for c in roc],
                          "tpr_hi": [c.hi for c in roc]}),
            pd.DataFrame({"recall": grid, "precision_lo": [c.lo for c in pr],
                          "precision_hi": [c.hi for c in pr]}))


def document_tables(summary: dict, records, cfg) -> dict:
    """The tables and checks of ``metrics_master.json`` the reduced run makes, by their keys
    there (rows as the in-memory document writes them)."""
    import pandas as pd

    from metrics_core.engines.counted import smoothed_calibration_of_counts
    from metrics_core.engines.reductions import counted_scores
    from metrics_core.engines.resampling import percentile_interval
    from metrics_core.evaluation.evaluator import gate_grid_frame
    from metrics_core.evaluation.result import clean, frame_records
    from metrics_core.evaluation.tables import fold_summary
    from metrics_core.metrics import classification, decision
    from metrics_core.targets import target_table

    counts = summary["counts"]
    ranking = [n for n in summary["sums"]
               if n not in ("brier", "evidence_recall", "evidence_precision", "mean_k")]
    inter = SimpleNamespace(rk=dict.fromkeys(ranking), cfg=cfg)
    per_criterion = _group_table(summary, "criterion", cfg, inter)
    per_fold = _group_table(summary, "fold", cfg, inter)
    k_rows = [{"group": "overall", **_k_stats(summary["k_hist"])}]
    k_rows += [{"group": f"state={name}", **_k_stats(h)}
               for name, h in zip(("NEG", "UNCERTAIN", "POS"), summary["k_by"]["state"],
                                  strict=True)]
    k_rows += [{"group": f"has_evidence={v}", **_k_stats(h)}
               for v, h in zip((0, 1), summary["k_by"]["class"], strict=True)]
    sweep = []
    for g, (k_sum, n, rec, prec, n_ev) in zip(gammas(cfg), summary["gamma"], strict=True):
        sweep.append({"gamma": g, "mean_k": k_sum / n if n else np.nan,
                      "evidence_recall": rec / n_ev if n_ev else np.nan,
                      "evidence_precision": prec / n_ev if n_ev else np.nan,
                      "workload": int(k_sum), "workload_per_1000": k_sum / max(n, 1) * 1000,
                      "current": bool(np.isclose(g, cfg.gamma))})
    values, pos, neg = counts.values, counts.pos, counts.neg
    cum_all = np.concatenate([[0], np.cumsum(pos + neg)])
    cum_pos = np.concatenate([[0], np.cumsum(pos)])

    def below(t):  # the queries, and the positives, with p < t
        at = np.searchsorted(values, t, side="left")
        return cum_all[at], cum_pos[at]

    grid = gate_grid_frame(below, int(cum_all[-1]), int(cum_pos[-1]), cfg)
    curve = decision.decision_curve(np.r_[np.ones(values.size), np.zeros(values.size)],
                                    np.r_[values, values],
                                    sample_weight=np.r_[pos, neg].astype(np.float64))
    resampled = (summary.get("resampled") or {}).get("net_benefit")
    if resampled is not None:  # the Poisson bootstrap's percentile band, threshold by threshold
        bands = [percentile_interval(resampled[:, j]) or (np.nan, np.nan)
                 for j in range(resampled.shape[1])]
        curve["net_benefit_ci_lo"] = [b[0] for b in bands]
        curve["net_benefit_ci_hi"] = [b[1] for b in bands]
    tpr = classification.tpr_at_fpr(counted_scores(counts), targets=cfg.tpr_fprs)
    roc_band, pr_band = curve_bands(summary.get("resampled"))
    return clean({
        "tpr_at_fpr": [{"target_fpr": t.target, "tpr": t.tpr if t.defined else None,
                        "fpr": t.fpr if t.defined else None,
                        "threshold": t.threshold if t.defined else None,
                        "defined": bool(t.defined)} for t in tpr],
        "ranking_distribution": frame_records(pd.DataFrame(
            _ranking_distribution(summary["ranking_values"]))),
        "reliability": frame_records(_reliability_table(counts, cfg)),
        "k_by_state": frame_records(pd.DataFrame(k_rows)),
        "gamma_sweep": frame_records(pd.DataFrame(sweep)),
        "gate_grid": frame_records(grid),
        "decision_curve": frame_records(curve),
        "roc_band": None if roc_band is None else frame_records(roc_band),
        "pr_band": None if pr_band is None else frame_records(pr_band),
        "per_criterion": frame_records(per_criterion.reset_index()),
        "per_criterion_macro_over": per_criterion.attrs.get("n_groups"),
        "per_fold": None if per_fold is None else frame_records(per_fold.reset_index()),
        "per_fold_mean_over": None if per_fold is None else per_fold.attrs.get("n_groups"),
        "fold_summary": None if per_fold is None
        else frame_records(fold_summary(per_fold, records)),
        "targets": frame_records(target_table(records, cfg.targets)),
        "smoothed_calibration": frame_records(smoothed_calibration_of_counts(counts)),
        "consistency_checks": [c.to_dict() for c in _checks(summary, records, cfg)],
        "gate_risk_coverage": _gate_risk_coverage(summary, cfg),
    })
