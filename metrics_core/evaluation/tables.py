"""Per-criterion and per-fold tables: every per-group metric of the registry (contract §9).

A group table has one row per group (criterion or fold) and one column per metric that the
registry says applies to it (``applies``; ranking families at every K), plus ``n``,
``n_positive``, ``positive_rate``, ``auroc_defined`` and Wilson / bootstrap interval columns.
Counting metrics come from their registry spec over the grouped outcome kernel
(:mod:`metrics_core.metrics.outcomes`), means from grouped sums; the pooled row is the same
computation with a single group. Undefined values are NaN, never a convention such as AUROC
0.5, and are left out of the macro / fold means; the table's ``attrs["n_groups"]`` says over
how many groups each mean averages.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd

from metrics_core import registry
from metrics_core.data.ordering import stable_argsort
from metrics_core.evaluation.sections import fmt_t, multilabel_values
from metrics_core.metrics import calibration, classification, gate, outcomes

__all__ = ["fold_summary", "group_body", "group_codes", "group_intervals",
           "group_intervals_ready", "group_table"]

#: Proportions whose per-group Wilson interval is a column of the table (``group_ci``).
WILSON_COLUMNS = tuple(s.name for s in registry.SPECS if s.group_ci)
_DESCRIPTIVE = ("n", "n_positive", "positive_rate", "auroc_defined")


def group_codes(ev, label: str) -> tuple[np.ndarray, list[str]]:
    """(codes, names) of the queries' groups: criterion, fold or ``pooled`` (cached), or a
    cohort column (a label with ``codes`` and ``values``: :mod:`.cohorts`)."""
    ds = ev.ds
    if hasattr(label, "codes"):
        return label.codes, list(label.values)

    def compute():
        if label == "criterion":
            return ds.criterion_code.astype(np.int64), list(ds.criteria)
        if label == "pooled":
            return np.zeros(ds.n_queries, dtype=np.int64), ["pooled"]
        folds, codes = np.unique(ds.fold, return_inverse=True)
        return codes.astype(np.int64), [str(f) for f in folds]

    return ev.cached(("group_codes", label), compute)


def _grouped_mean(codes, g, values, mask=None) -> np.ndarray:
    return _grouped_means(codes, g, {None: values}, mask)[None]


def _grouped_means(codes, g, columns: dict, mask=None) -> dict:
    """:func:`_grouped_mean` of several columns under one mask (the mask applied once)."""
    rows = None
    if mask is not None and not mask.all():
        rows = np.flatnonzero(mask)  # once: a gather per column instead of a mask pass
        codes = codes[rows]
    count = np.bincount(codes, minlength=g)
    out = {}
    for name, values in columns.items():
        kept = values if rows is None else values.take(rows)
        num = np.bincount(codes, weights=np.nan_to_num(kept), minlength=g)
        out[name] = outcomes.ratio(num, count)
    return out


def _members(codes, g) -> list[np.ndarray]:
    """The query indices of each group (ascending), from one stable sort; a few groups (folds,
    criteria) by one scan each instead."""
    if g == 1:
        return [np.arange(codes.size)]
    if g <= 32:
        return [np.flatnonzero(codes == i) for i in range(g)]
    order = stable_argsort(codes)
    return np.split(order, np.searchsorted(codes[order], np.arange(1, g)))


def _per_group(codes, g, fn) -> list:
    """``fn(indices)`` for each group (a loop over groups, never over queries)."""
    return [fn(m) for m in _members(codes, g)]


def _members_by_p(ev, label) -> list[tuple[np.ndarray, np.ndarray]]:
    """(query indices ascending, their order by p ascending) of each group of ``label``
    (cached): the run's one sort of p split by group, a stable partition instead of a sort
    per group. Ties of p stay in query order, as ``np.argsort(p[m], kind="stable")``."""
    def compute():
        codes, names = group_codes(ev, label)
        g = len(names)
        members = _members(codes, g)
        order = ev.p_order()
        by_group = order[stable_argsort(codes[order])]  # each group's rows, in p order
        bounds = np.cumsum([m.size for m in members])[:-1]
        local = np.empty(codes.size, dtype=np.int64)  # a query's place within its group
        for m in members:
            local[m] = np.arange(m.size, dtype=np.int64)
        return [(m, local.take(rows))
                for m, rows in zip(members, np.split(by_group, bounds), strict=True)]

    return ev.cached(("group_members_by_p", label), compute)


def _discrimination(ev, label, cfg) -> dict[str, np.ndarray]:
    """AUROC, AUPRC and TPR / threshold at the FPR targets per group (data-only, cached)."""
    ds = ev.ds

    def compute():
        out: dict[str, list] = {}
        for m, order in _members_by_p(ev, label):
            # A group of every query (the pooled row) is the run's own prepared scores.
            prepared = (ev.prepared() if m.size == ds.n_queries
                        else classification.prepare(ds.y[m], ds.p[m], order=order))
            auroc = classification.roc_auc(prepared)
            auprc = classification.average_precision(prepared)
            out.setdefault("auroc_defined", []).append(auroc.defined)
            out.setdefault("auroc", []).append(auroc.value if auroc.defined else np.nan)
            out.setdefault("auprc", []).append(auprc.value if auprc.defined else np.nan)
            one_class = not auroc.defined
            for t in classification.tpr_at_fpr(prepared, targets=cfg.tpr_fprs):
                out.setdefault(f"tpr@fpr={fmt_t(t.target)}", []).append(
                    np.nan if one_class else t.tpr)
                out.setdefault(f"threshold@fpr={fmt_t(t.target)}", []).append(
                    np.nan if one_class else t.threshold)
        return {k: np.asarray(v) for k, v in out.items()}

    return ev.cached(("group_discrimination", label, cfg.tpr_fprs), compute)


def _calibration(ev, label, cfg) -> dict[str, np.ndarray]:
    """ECE, MCE and Brier per group (data-only per calibration settings, cached)."""
    def compute():
        codes, names = group_codes(ev, label)
        conf, outcome = ev.calibration_inputs(cfg)
        n = ev.ds.n_queries  # a group of every query (pooled) reuses the run's own values
        rel = _per_group(codes, len(names), lambda m: None if not m.size else (
            ev.reliability(cfg) if m.size == n else calibration.reliability_bins(
                outcome[m], conf[m], n_bins=cfg.n_bins, strategy=cfg.binning)))
        sq = (ev.ds.p - ev.ds.y) ** 2
        fits = [ev.logistic_calibration() if m.size == n else calibration.logistic_calibration(
            ev.ds.y[m], ev.ds.p[m], order=order) for m, order in _members_by_p(ev, label)]
        return {"ece": np.array([np.nan if r is None else r.ece for r in rel]),
                "mce": np.array([np.nan if r is None else r.mce for r in rel]),
                "brier": _grouped_mean(codes, len(names), sq),
                "calibration_in_the_large": np.array([f.in_the_large for f in fits]),
                "calibration_intercept": np.array([f.intercept for f in fits]),
                "calibration_slope": np.array([f.slope for f in fits])}

    return ev.cached(("group_calibration", label, cfg.calibration), compute)


def _counting(ds, inter, codes, g, label) -> dict[str, np.ndarray]:
    """The registry's counting metrics per group (confusion at τ, gate and abstention view:
    :func:`metrics_core.registry.counting`), from the grouped outcome tables, with the Wilson
    bounds of :data:`WILSON_COLUMNS`."""
    tables = {"tau": outcomes.outcome_counts(ds.y, inter.pred, codes, g),
              "gate": outcomes.outcome_counts(ds.y, gate.states_to_prediction(inter.states),
                                              codes, g)}
    out: dict[str, np.ndarray] = {}
    for spec in registry.counting(where=None if label == "pooled" else _place(label)):
        out[spec.name], fraction = outcomes.counted(tables[spec.counting.table], spec.counting)
        if spec.name in WILSON_COLUMNS:
            _, lo, hi = outcomes.with_intervals({spec.name: fraction})[spec.name]
            out[f"{spec.name}_ci_lo"], out[f"{spec.name}_ci_hi"] = lo, hi
    return out


def _ranking_and_k(inter, codes, g, n) -> dict[str, np.ndarray]:
    out = _grouped_means(codes, g, inter.rk, inter.rmask)
    out["evidence_recall"] = _grouped_mean(codes, g, inter.rec, inter.emask)
    out["evidence_precision"] = _grouped_mean(codes, g, inter.prec, inter.emask)
    k = inter.k.astype(np.float64)
    out["mean_k"] = _grouped_mean(codes, g, k)
    out["median_k"] = np.array(_per_group(codes, g, lambda m: np.median(k[m]) if m.size
                                          else np.nan))
    out["p90_k"] = np.array(_per_group(codes, g, lambda m: np.percentile(k[m], 90)
                                       if m.size else np.nan))
    out["workload"] = np.bincount(codes, weights=k, minlength=g)
    out["workload_per_1000"] = outcomes.ratio(out["workload"], n, 1000.0)
    return out


def _multilabel(ds, inter, codes, g) -> dict[str, np.ndarray]:
    """Per-post multi-label metrics of each group's queries (folds: posts do not straddle)."""
    rows = []
    for m in _members(codes, g):
        posts, post_code = np.unique(ds.post_code[m], return_inverse=True)
        view = SimpleNamespace(n_queries=int(m.size), posts=posts, criteria=ds.criteria,
                               post_code=post_code, criterion_code=ds.criterion_code[m],
                               y=ds.y[m], p=ds.p[m])
        rows.append(multilabel_values(view, inter.cfg, inter.states[m])[0])
    names = [s.name for s in registry.SPECS if s.group == "multilabel"]
    return {name: np.array([r[name] for r in rows], dtype=np.float64) for name in names}


def _columns(ev, inter, label, boot) -> tuple[pd.DataFrame, list[str]]:
    """The body (one row per group of ``label``) and its metric columns in registry order."""
    ds, cfg = ev.ds, inter.cfg
    codes, names = group_codes(ev, label)
    g = len(names)
    n = np.bincount(codes, minlength=g)
    n_pos = np.bincount(codes, weights=ds.y, minlength=g).astype(np.int64)
    values = {"n": n, "n_positive": n_pos, "positive_rate": outcomes.ratio(n_pos, n)}
    values.update(_discrimination(ev, label, cfg))
    values.update(_calibration(ev, label, cfg))
    values.update(_counting(ds, inter, codes, g, label))
    values.update(_ranking_and_k(inter, codes, g, n))
    if any(_place(label) in s.applies or label == "pooled" for s in registry.SPECS
           if s.group == "multilabel"):
        values.update(_multilabel(ds, inter, codes, g))
    if boot is not None and isinstance(boot.get("auroc_by_criterion"), tuple):
        cis = boot["auroc_by_criterion"]
        values["auroc_ci_lo"] = np.array([c.lo for c in cis])
        values["auroc_ci_hi"] = np.array([c.hi for c in cis])
    metrics = [c for c in _metric_order(inter, label) if c in values]
    extra = [c for c in values if "_ci_" in c]
    frame = pd.DataFrame({c: values[c] for c in (*_DESCRIPTIVE, *metrics, *extra)},
                         index=pd.Index(names, name=label))
    frame["auroc_defined"] = frame["auroc_defined"].astype(bool)
    return frame, metrics


def _place(label) -> str:
    """Where a table of ``label`` is, in the registry's terms (``applies``): ``criterion``,
    ``fold``, or ``cohort`` (a cohort column: :mod:`.cohorts`)."""
    return "cohort" if hasattr(label, "codes") else label


def _metric_order(inter, label) -> list[str]:
    """The metric columns of a table per ``label`` (``pooled``: of any), registry order."""
    out = []
    for s in registry.SPECS:
        if not (s.per_group if label == "pooled" else _place(label) in s.applies):
            continue
        if s.name.startswith("tpr@") or s.name.startswith("threshold@"):
            out.extend(f"{s.name}{fmt_t(t)}" for t in inter.cfg.tpr_fprs)
        elif s.family:
            out.extend(n for n in inter.rk if registry.spec(n) is s)
        else:
            out.append(s.name)
    return out


def group_body(ev, inter, label) -> pd.DataFrame:
    """One row per group of ``label`` (a cohort column too) and a column per per-group metric
    (the body of :func:`group_table`, without its summary rows)."""
    return _columns(ev, inter, label, None)[0]


def group_table(ev, inter, *, label: str, boot=None) -> pd.DataFrame:
    """Every per-group metric per ``criterion`` (then ``micro``, ``macro``) or per ``fold``
    (then ``mean``, ``std`` with ddof 0, and ``pooled``)."""
    body, metrics = _columns(ev, inter, label, boot)
    # The pooled row is the same for both tables of one run: computed once per configuration.
    pooled = ev.cached(("pooled_columns", inter.cfg),
                      lambda: _columns(ev, inter, "pooled", None)[0]).copy()
    pooled.loc["pooled", "auroc_defined"] = ev.classification()["auroc"].defined
    averaged = ["positive_rate", *metrics]
    data = body[averaged].to_numpy(dtype=np.float64)
    # All-NaN columns have NaN means, computed without numpy's warning: no warnings filter
    # is changed (tables are built on helper threads too, and filters are process-wide).
    mean = np.full(data.shape[1], np.nan)
    std = np.full(data.shape[1], np.nan)
    some = ~np.isnan(data).all(axis=0)
    if some.any():
        with np.errstate(invalid="ignore", over="ignore"):  # (context-local; an infinite
            mean[some] = np.nanmean(data[:, some], axis=0)  # value's spread is NaN)
            std[some] = np.nanstd(data[:, some], axis=0)
    counts = dict(zip(metrics, (~np.isnan(data[:, 1:])).sum(axis=0).tolist(), strict=True))
    summary = pd.DataFrame([dict(zip(averaged, mean, strict=True)),
                            dict(zip(averaged, std, strict=True))], index=["mean", "std"])
    pooled_row = pooled.rename(index={"pooled": "micro" if label == "criterion" else "pooled"})
    if label == "criterion":
        macro = summary.loc[["mean"]].rename(index={"mean": "macro"})
        macro["n"], macro["n_positive"] = int(body["n"].sum()), int(body["n_positive"].sum())
        extra = pd.concat([pooled_row[[*_DESCRIPTIVE, *metrics]], macro])
    else:
        summary["n"] = [float(body["n"].mean()), float(body["n"].std(ddof=0))]
        extra = pd.concat([summary, pooled_row[[*_DESCRIPTIVE, *metrics]]])
    extra.index.name = label
    extra["auroc_defined"] = extra["auroc_defined"].astype(object)
    table = pd.concat([body.astype({"auroc_defined": object}), extra], axis=0).copy()
    table.attrs["n_groups"] = counts
    return table


def fold_summary(per_fold: pd.DataFrame, records) -> pd.DataFrame:
    """Per metric: mean ± std over folds, the pooled value and its 95 % CI (seed 003 §10).

    ``text`` reads ``0.912 ± 0.013 (pooled 0.915, 95% CI 0.901–0.928)``.
    """
    by_name = {r.name: r for r in records}
    rows = []
    # Three row reads, not three per metric (each pandas read copies the table's attrs).
    means, stds, pools = (per_fold.loc[row].to_dict() for row in ("mean", "std", "pooled"))
    for name, count in per_fold.attrs.get("n_groups", {}).items():
        mean, std, pooled = means[name], stds[name], pools[name]
        rec = by_name.get(name)
        lo, hi = rec.ci95 if rec is not None and rec.ci95 is not None else (np.nan, np.nan)
        text = "undefined" if np.isnan(mean) else f"{mean:.3f} ± {std:.3f}"
        if not np.isnan(pooled):
            text += f" (pooled {pooled:.3f}"
            text += f", 95% CI {lo:.3f}–{hi:.3f})" if not np.isnan(lo) else ")"
        rows.append({"metric": name, "mean": mean, "std": std, "n_folds": count,
                     "pooled": pooled, "ci_lo": lo, "ci_hi": hi, "text": text})
    return pd.DataFrame(rows)


def group_intervals(ev, cfg, metric: str, *, label: str = "criterion",
                    progress=None) -> pd.DataFrame:
    """``metric`` of every criterion (or fold) with its 95 % interval, as the overall record.

    ``ev`` is the unfiltered evaluator; ``cfg.filters`` (if any) still applies.

    Each group is evaluated on its own queries with the run's settings (its records are those
    of a run filtered to it, so the interval method is the record's: Wilson for proportions,
    the bootstrap for the rest when ``cfg.bootstrap > 0``). The groups' records are kept per
    settings in ``ev``, so another metric (or a rerun of the page) evaluates nothing again.
    Columns: ``group``, ``n_positive``, ``value``, ``ci_lo``, ``ci_hi``,
    ``ci_method``, ``n``, ``defined``.
    """
    rows = []
    for name, (n_positive, records) in _group_records(ev, cfg, label, progress).items():
        r = records[metric]
        rows.append({"group": name, "n_positive": n_positive, "value": r.value,
                     "ci_lo": None if r.ci95 is None else r.ci95[0],
                     "ci_hi": None if r.ci95 is None else r.ci95[1],
                     "ci_method": r.ci_method, "n": r.n, "defined": r.defined})
    return pd.DataFrame(rows)


def group_intervals_ready(ev, cfg, label: str = "criterion") -> bool:
    """Whether :func:`group_intervals` of ``cfg`` is computed (it then returns at once)."""
    return ev.computed(("group_records", cfg, label))


def _group_records(ev, cfg, label: str, progress) -> dict:
    """group -> (n_positive, records by name) of a run filtered to each group (cached)."""
    from dataclasses import replace

    def compute():
        _, names = group_codes(ev.for_filters(cfg.filters), label)
        out = {}
        for name in names:
            filters = (replace(cfg.filters, criteria=(name,)) if label == "criterion"
                       else replace(cfg.filters, fold=name))
            run = ev.evaluate(cfg.replace(filters=filters), progress=progress)
            out[name] = (int(run.summary["n_positive"]), {r.name: r for r in run.records})
        return out

    return ev.cached(("group_records", cfg, label), compute)
