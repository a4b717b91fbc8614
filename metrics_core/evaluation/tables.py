"""Per-criterion and per-fold tables: every per-group metric of the registry (contract §9).

A group table has one row per group (criterion or fold) and one column per metric that the
registry says applies to it (``applies``; ranking families at every K), plus ``n``,
``n_positive``, ``positive_rate``, ``auroc_defined`` and Wilson / bootstrap interval columns.
Counting metrics come from their registry spec over the grouped outcome kernel
(:mod:`metrics_core.metrics.outcomes`), the other metrics from their spec's kernel per group
(:func:`metrics_core.evaluation.kernels.group_values`: grouped sums of per-query values, or
the whole-sample kernel on each group); the pooled row is the same computation with a single
group. Undefined values are NaN, never a convention such as AUROC
0.5, and are left out of the macro / fold means; the table's ``attrs["n_groups"]`` says over
how many groups each mean averages.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from metrics_core import registry
from metrics_core.evaluation import kernels
from metrics_core.evaluation.kernels import members
from metrics_core.metrics import gate, outcomes

__all__ = ["assemble_group_table", "counting_columns", "fold_summary", "group_body",
           "group_codes", "group_data_intervals", "group_frame", "group_intervals",
           "group_intervals_in_the_making", "group_intervals_ready",
           "group_setting_left", "group_table", "metric_order"]

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


def _per_group(codes, g, fn) -> list:
    """``fn(indices)`` for each group (a loop over groups, never over queries)."""
    return [fn(m) for m in members(codes, g)]


def _counting(ds, inter, codes, g, label) -> dict[str, np.ndarray]:
    """The registry's counting metrics per group (confusion at τ, gate and abstention view:
    :func:`metrics_core.registry.counting`), from the grouped outcome tables, with the Wilson
    bounds of :data:`WILSON_COLUMNS`."""
    tables = {"tau": outcomes.outcome_counts(ds.y, inter.pred, codes, g),
              "gate": outcomes.outcome_counts(ds.y, gate.states_to_prediction(inter.states),
                                              codes, g)}
    return counting_columns(tables, label)


def counting_columns(tables: dict[str, np.ndarray], label) -> dict[str, np.ndarray]:
    """The counting columns of a table per ``label`` from the groups' outcome tables
    (``tables["tau"]``, ``tables["gate"]``: ``(groups, 3, 2)``), with the Wilson bounds of
    :data:`WILSON_COLUMNS` (the in-memory tables and the reduced Dask run's)."""
    out: dict[str, np.ndarray] = {}
    for spec in registry.counting(where=None if label == "pooled" else _place(label)):
        out[spec.name], fraction = outcomes.counted(tables[spec.counting.table], spec.counting)
        if spec.name in WILSON_COLUMNS:
            _, lo, hi = outcomes.with_intervals({spec.name: fraction})[spec.name]
            out[f"{spec.name}_ci_lo"], out[f"{spec.name}_ci_hi"] = lo, hi
    return out


def _columns(ev, inter, label, boot) -> tuple[pd.DataFrame, list[str]]:
    """The body (one row per group of ``label``) and its metric columns in registry order."""
    ds, cfg = ev.ds, inter.cfg
    codes, names = group_codes(ev, label)
    g = len(names)
    n = np.bincount(codes, minlength=g)
    n_pos = np.bincount(codes, weights=ds.y, minlength=g).astype(np.int64)
    values = {"n": n, "n_positive": n_pos, "positive_rate": outcomes.ratio(n_pos, n)}
    values["auroc_defined"] = kernels.group_discrimination(ev, label, cfg, codes,
                                                           g)["auroc_defined"]
    values.update(_counting(ds, inter, codes, g, label))
    values.update(kernels.group_values(ev, inter, label, codes, g,
                                       None if label == "pooled" else _place(label)))
    if boot is not None and isinstance(boot.get("auroc_by_criterion"), tuple):
        cis = boot["auroc_by_criterion"]
        values["auroc_ci_lo"] = np.array([c.lo for c in cis])
        values["auroc_ci_hi"] = np.array([c.hi for c in cis])
    return group_frame(values, inter, label, names)


def group_frame(values: dict, inter, label, names) -> tuple[pd.DataFrame, list[str]]:
    """The body of a table per ``label`` from its columns (``values``: name -> one value per
    group of ``names``, inserted descriptive, counting, kernel, then interval columns) and its
    metric columns in registry order."""
    metrics = [c for c in metric_order(inter, label) if c in values]
    extra = [c for c in values if "_ci_" in c]
    frame = pd.DataFrame({c: values[c] for c in (*_DESCRIPTIVE, *metrics, *extra)},
                         index=pd.Index(names, name=label))
    frame["auroc_defined"] = frame["auroc_defined"].astype(bool)
    return frame, metrics


def _place(label) -> str:
    """Where a table of ``label`` is, in the registry's terms (``applies``): ``criterion``,
    ``fold``, or ``cohort`` (a cohort column: :mod:`.cohorts`)."""
    return "cohort" if hasattr(label, "codes") else label


def metric_order(inter, label) -> list[str]:
    """The metric columns of a table per ``label`` (``pooled``: of any), registry order, a
    family at each of the run's cut-offs or FPR targets (:func:`kernels.names`)."""
    return [name for s in registry.SPECS
            if (s.per_group if label == "pooled" else _place(label) in s.applies)
            for name in kernels.names(s, inter)]


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
    return assemble_group_table(body, metrics, pooled, label)


def assemble_group_table(body: pd.DataFrame, metrics: list[str], pooled: pd.DataFrame,
                         label: str) -> pd.DataFrame:
    """The table of ``label`` from its ``body`` (one row per group), its metric columns and
    the ``pooled`` row (a one-row frame indexed ``pooled``): then ``micro``, ``macro`` for
    criteria, ``mean``, ``std``, ``pooled`` for folds."""
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
    groups = _group_records(ev, cfg, label, progress)
    for name, (n_positive, records) in groups.items():
        if metric not in records:
            raise ValueError(f"{metric!r} has no value per {label}: one of "
                             f"{', '.join(records)}")
        r = records[metric]
        rows.append({"group": name, "n_positive": n_positive, "value": r.value,
                     "ci_lo": None if r.ci95 is None else r.ci95[0],
                     "ci_hi": None if r.ci95 is None else r.ci95[1],
                     "ci_method": r.ci_method, "n": r.n, "defined": r.defined})
    return pd.DataFrame(rows)


def group_intervals_ready(ev, cfg, label: str = "criterion") -> bool:
    """Whether :func:`group_intervals` of ``cfg`` is computed (it then returns at once)."""
    return ev.computed(("group_records", cfg, label))


def group_setting_left(ev, cfg, label: str = "criterion") -> bool:
    """Whether every group's run of :func:`group_intervals` of ``cfg`` has only the setting's
    own intervals left to compute (:func:`~metrics_core.evaluation.intervals.
    only_the_setting_left` of each group's evaluator, which exists already): after a threshold
    move, once the groups' data intervals are made (:func:`group_data_intervals`, or an
    earlier computation at other thresholds), the configured resamples cost about what a few
    resamples would. Nothing is computed to answer."""
    from metrics_core.evaluation.intervals import only_the_setting_left

    if group_intervals_ready(ev, cfg, label):
        return True
    if cfg.filters.active and not ev.computed(("filtered", cfg.filters)):
        return False
    base = ev.for_filters(cfg.filters)
    if not base.computed(("group_codes", label)):
        return False
    for name in group_codes(base, label)[1]:
        filters = _group_filters(cfg.filters, label, name)
        if not ev.computed(("filtered", filters)):
            return False
        if not only_the_setting_left(ev.for_filters(filters), cfg.replace(filters=filters)):
            return False
    return True


def group_intervals_in_the_making(ev, cfg, label: str = "criterion"):
    """The event set when the computation of :func:`group_intervals` of ``cfg`` in another
    thread ends (None when none is in the making)."""
    return ev.in_the_making(("group_records", cfg, label))


def _group_filters(filters, label: str, name: str):
    """``filters`` restricted to the group ``name`` of ``label`` (a criterion or a fold)."""
    from dataclasses import replace

    return (replace(filters, criteria=(name,)) if label == "criterion"
            else replace(filters, fold=name))


def group_data_intervals(ev, cfg, label: str = "criterion", progress=None) -> None:
    """Compute the data-only intervals of every group's run of :func:`group_intervals` (each
    group's AUROC, AP, ranking means, Brier, ECE and MCE: what no threshold or γ changes),
    kept in each group's evaluator, where those runs read them: the most of their first
    computation, ahead of it. They are a few numbers per group; nothing else is kept."""
    from metrics_core.evaluation.intervals import data_intervals

    _, names = group_codes(ev.for_filters(cfg.filters), label)
    for name in names:
        one = cfg.replace(filters=_group_filters(cfg.filters, label, name))
        data_intervals(ev.for_filters(one.filters), one, progress, bands=False)


def _group_records(ev, cfg, label: str, progress) -> dict:
    """group -> (n_positive, records by name) of a run filtered to each group (cached): the
    records of the metrics that apply to a group of ``label`` (the registry's ``applies``; per
    criterion, not the multi-label metrics, which are over posts across criteria, so their
    intervals are not computed)."""
    place = _place(label)

    def applies(name: str) -> bool:
        try:
            return place in registry.spec(name).applies
        except KeyError:  # (a record the registry does not describe: kept)
            return True

    def compute():
        _, names = group_codes(ev.for_filters(cfg.filters), label)
        posts = any(s.kernel.over == "posts" for s in registry.kernels(where=place))
        out = {}
        for name in names:
            filters = _group_filters(cfg.filters, label, name)
            run = ev.evaluate(cfg.replace(filters=filters), progress=progress, bands=False,
                              posts=posts)
            out[name] = (int(run.summary["n_positive"]),
                         {r.name: r for r in run.records if applies(r.name)})
        return out

    return ev.cached(("group_records", cfg, label), compute)
