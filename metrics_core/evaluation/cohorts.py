"""Cohorts: every per-group metric per cohort, disparities to the rest, weak segments (§9).

A cohort column (``site``, ``sex``, ``site*sex``; read by
:mod:`metrics_core.inputs.cohort_columns`) splits the queries into cohorts. For each cohort:

- every per-group metric of the registry, from the per-criterion table's own machinery
  (:func:`metrics_core.evaluation.tables.group_body` with the cohort codes as groups), with
  ``n``, ``n_positive`` and the small-cell flag (n or positives under 30); undefined stays NaN;
- for the disparity metrics (:data:`DISPARITY_METRICS`: AUROC, the confusion and gate rates,
  the Brier score, evidence recall and the ranking means at the reference K) the value of the
  rest of the data, the difference (and the ratio for rates), their bootstrap intervals, a
  p-value and its Holm adjustment across the cohorts of the column and the metrics. Every
  cohort of every column reads the same resamples: the run's post count matrix (posts are
  resampled, with all their queries), re-weighted, never one bootstrap per cohort. A cohort's
  statistic is a ratio of weighted sums (AUROC: of weighted pair counts), and the rest's is the
  whole data's minus the cohort's, so a resample costs one pass over the data per column.

The weak-segment search ranks the cohorts of every column and of every pair of columns (with
at least ``min_size`` queries) by how much worse than the rest each metric is, adjusting the
p-values for every segment tried (Holm): every metric with a difference to the rest and a
better direction (the disparity metrics and the multi-label ones).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from metrics_core import registry
from metrics_core.evaluation import cohort_logistic
from metrics_core.evaluation.cohort_groups import (
    ALPHA,
    COHORT_COLUMNS,
    DISPARITY_METRICS,
    MIN_SEGMENT,
    RATE_METRICS,
    SMALL_CELL,
    TOP_SEGMENTS,
    WEAK_COLUMNS,
    Grouping,
    bootstrap_p_values,
    holm,
    intersect,
)
from metrics_core.evaluation.cohort_resamples import (
    WORKERS,
    PairCounts,
    distinct_columns,
    extra_columns,
    extra_values,
    group_sums,
    multilabel_rest,
    multilabel_sums,
    multilabel_values,
    one_blas_thread,
    prepare,
    ratio,
    replicates,
    sum_columns,
)
from metrics_core.metrics.curve_replicates import ScoreLayout
from metrics_core.metrics.multilabel import MULTILABEL_NAMES
from metrics_core.metrics.uncertainty import Bootstrap, percentile_cis
from metrics_core.registry import fmt_t

__all__ = ["DISPARITY_METRICS", "RATE_METRICS", "SMALL_CELL", "CohortResult", "Grouping",
           "add_to", "bootstrap_p_values", "cohort_tables", "document_tables",
           "evaluate_cohorts", "holm", "intersect"]


# ---------------------------------------------------------------------------- tables
@dataclass(frozen=True)
class CohortResult:
    """The ``cohorts`` and ``weak_segments`` tables (columns :data:`COHORT_COLUMNS`,
    :data:`WEAK_COLUMNS`) and the equalised-odds view (screening sensitivity and false-flag
    rate per cohort side by side)."""

    cohorts: pd.DataFrame
    weak_segments: pd.DataFrame
    equalised_odds: pd.DataFrame


def _pair(lo, hi):
    if lo is None or hi is None or not (np.isfinite(lo) and np.isfinite(hi)):
        return None
    return [float(lo), float(hi)]


def _cis(matrix: np.ndarray) -> list:
    if matrix.shape[0] == 0:
        return [None] * matrix.shape[1]
    return [_pair(c.lo, c.hi) for c in percentile_cis(matrix, unit="post")]


def _finite_cis(matrices: Sequence[np.ndarray]) -> list[list]:
    """:func:`_cis` of each matrix ``(R, m_i)``, its values other than finite left out, in
    one percentile pass over them all."""
    if not matrices:
        return []
    together = np.concatenate([m.T for m in matrices], axis=0)  # a column per row
    together[~np.isfinite(together)] = np.nan
    flat = _cis(together.T)
    out, at = [], 0
    for m in matrices:
        out.append(flat[at:at + m.shape[1]])
        at += m.shape[1]
    return out


def _point(ds, grouping, num_den, n_metrics, auroc) -> tuple:
    """(cohort values, rest values) ``(g, S + 1)`` on the data itself (weights 1)."""
    g = len(grouping.values)
    sums = group_sums(num_den, grouping.codes, g)
    whole = num_den.sum(axis=0)
    rest = whole[None, :] - sums
    a, b = auroc[:2]
    cohort_v = np.column_stack([ratio(sums[:, :n_metrics], sums[:, n_metrics:]), a[0]])
    rest_v = np.column_stack([ratio(rest[:, :n_metrics], rest[:, n_metrics:]), b[0]])
    return cohort_v, rest_v


def _disparity_rows(grouping, names, cohort_v, rest_v, reps, n, n_pos,
                    lazy: bool = False) -> list[dict]:
    """One row per (cohort, metric): the values, the p-value and the intervals. ``lazy``
    (a pair of columns only the weak-segment search reads): no intervals, but each row's
    resampled value and difference (``resampled``) for :func:`_weak_segments` to take the
    intervals of the segments it needs."""
    g, _s = cohort_v.shape
    rows = []
    diff_reps = None if reps is None else reps["cohort"] - reps["rest"]
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio_point = cohort_v / rest_v
    intervals = {}
    if reps is not None and not lazy:  # every interval of the rows in one percentile pass
        r_n, s = reps["cohort"].shape[0], len(names)
        rates = [i for i, name in enumerate(names) if name in RATE_METRICS]
        est = _cis(reps["cohort"].reshape(r_n, g * s))  # cohort j, metric i: j s + i
        dif = _cis(diff_reps.reshape(r_n, g * s))
        with np.errstate(invalid="ignore", divide="ignore"):
            rat = reps["cohort"][:, :, rates] / reps["rest"][:, :, rates]
        rat = _cis(np.where(np.isfinite(rat), rat, np.nan).reshape(r_n, g * len(rates)))
        intervals = {i: (est[i::s], dif[i::s], [None] * g) for i in range(s)}
        for at, i in enumerate(rates):
            intervals[i] = (*intervals[i][:2], rat[at::len(rates)])
    if reps is not None:  # every metric's and cohort's at once (column j s + i)
        p_all = bootstrap_p_values((cohort_v - rest_v).ravel(),
                                   diff_reps.reshape(diff_reps.shape[0], -1))
        p_all = p_all.reshape(g, len(names))
    for i, name in enumerate(names):
        diff = cohort_v[:, i] - rest_v[:, i]
        if reps is not None and lazy:
            est_ci = diff_ci = ratio_ci = [None] * g
            p = p_all[:, i]
        elif reps is not None:
            est_ci, diff_ci, ratio_ci = intervals[i]
            p = p_all[:, i]
        else:
            est_ci = diff_ci = ratio_ci = [None] * g
            p = np.full(g, np.nan)
        for j in range(g):
            defined = bool(np.isfinite(cohort_v[j, i]))
            both = defined and bool(np.isfinite(rest_v[j, i]))
            rows.append({
                "column": grouping.name, "value": grouping.values[j], "metric": name,
                "estimate": cohort_v[j, i] if defined else None,
                "ci95": est_ci[j] if defined else None, "n": int(n[j]),
                "n_positive": int(n_pos[j]),
                "rest_estimate": rest_v[j, i] if np.isfinite(rest_v[j, i]) else None,
                "difference": diff[j] if both else None,
                "difference_ci95": diff_ci[j] if both else None,
                "ratio": (ratio_point[j, i] if name in RATE_METRICS and both
                          and np.isfinite(ratio_point[j, i]) else None),
                "ratio_ci95": ratio_ci[j] if name in RATE_METRICS and both else None,
                "p_value": float(p[j]) if both and np.isfinite(p[j]) else None,
                "defined": defined})
            if lazy and reps is not None:
                rows[-1]["resampled"] = (reps["cohort"][:, j, i], diff_reps[:, j, i])
    return rows


def _shown(body: pd.DataFrame, name: str, values) -> bool:
    """Whether the table ``body`` shows ``name`` with ``values`` (one per cohort, from the
    sums or the resampling machinery on the data itself): the same definition."""
    return values is not None and name in body.columns and np.allclose(
        np.ravel(values), body[name].to_numpy(dtype=np.float64, na_value=np.nan),
        rtol=1e-9, atol=1e-12, equal_nan=True)


#: Metrics of :func:`extra_columns` with a difference to the rest too (the rest's sums: the
#: other cohorts').
EXTRA_DISPARITY = ("calibration_in_the_large",)


def _extra_intervals(grouping, body: pd.DataFrame, names, extra: np.ndarray,
                     replicates: np.ndarray | None, where: np.ndarray, n, n_pos
                     ) -> tuple[dict, list]:
    """``(intervals, rows)``: metric -> one interval per cohort (None where no resample
    defines it), for the metrics of :func:`extra_columns` the table shows; and the
    disparity rows of those of :data:`EXTRA_DISPARITY` (the rest's value, the difference,
    its interval and p-value). A metric is given intervals only if its value from the sums
    on the data itself is the table's value (the same definition). ``replicates``: the
    resampled sums of the distinct columns, ``where`` each column's place among them
    (:func:`distinct_columns`)."""
    g = len(grouping.values)
    sums = group_sums(extra, grouping.codes, g)
    point = extra_values(names, sums)
    tested = [m for m in EXTRA_DISPARITY if m in point and _shown(body, m, point[m])]
    # the tested metrics' sums alone (numerators, then denominators), for the rest's values
    at = {name: i for i, name in enumerate(names)}
    only = np.array([at[m] for m in tested] + [len(names) + at[m] for m in tested],
                    dtype=np.int64)
    mine = sums[:, only]  # the cohorts split the queries: the rest's sums are the others'
    rest_point = extra_values(tested, mine.sum(axis=0, keepdims=True) - mine)
    resampled = rest = None
    if replicates is not None:
        resampled = extra_values(names, replicates, where)
        if tested:
            mine = replicates[..., where[only]]
            rest = extra_values(tested, mine.sum(axis=1, keepdims=True) - mine)
    rows = []
    if tested:
        rows = _disparity_rows(
            grouping, tested, np.column_stack([point[m] for m in tested]).reshape(g, -1),
            np.column_stack([rest_point[m] for m in tested]).reshape(g, -1),
            None if rest is None else {
                "cohort": np.stack([resampled[m] for m in tested], axis=-1),
                "rest": np.stack([rest[m] for m in tested], axis=-1)}, n, n_pos)
    if resampled is None:
        return {}, rows
    return _same_definition(body, point, resampled), rows


def _multilabel_rows(grouping, body: pd.DataFrame | None, col, n_crit: int, reps, n, n_pos,
                     shown: Sequence[str] = (), lazy: bool = False) -> list[dict]:
    """The multi-label metrics (§8: posts resampled, every query of a drawn post a cell) as
    disparity rows: the cohort's value, the rest's, the difference, their intervals and
    p-values, for each metric whose value from the sums on the data itself is the table's
    (the same definition); without a table (``body`` None: a pair of columns the weak-segment
    search tries), the metrics ``shown``."""
    if col.multilabel is None:
        return []
    g = len(grouping.values)
    own = np.stack([m.sum(axis=0) for m in col.multilabel])
    rest = multilabel_rest(own, col.multilabel_whole.sum(axis=0),
                           np.stack([d.sum(axis=0) for d in col.multilabel_delta]))
    point, rest_point = multilabel_values(own, n_crit), multilabel_values(rest, n_crit)
    names = [name for name in shown if name in point] if body is None else [
        name for name, values in point.items() if _shown(body, name, values)]
    if not names:
        return []
    cohort_v = np.column_stack([point[m] for m in names]).reshape(g, len(names))
    rest_v = np.column_stack([rest_point[m] for m in names]).reshape(g, len(names))
    resampled = None
    if reps is not None and reps["multilabel"] is not None:
        mine = multilabel_values(reps["multilabel"], n_crit)
        theirs = multilabel_values(reps["multilabel_rest"], n_crit)
        resampled = {"cohort": np.stack([mine[m] for m in names], axis=-1),
                     "rest": np.stack([theirs[m] for m in names], axis=-1)}
    return _disparity_rows(grouping, names, cohort_v, rest_v, resampled, n, n_pos, lazy=lazy)


def _ranking_curve(values: tuple, targets) -> dict[str, np.ndarray]:
    """AUPRC and the TPR at each FPR target (``tpr@fpr=T``) from ``(ap, tpr)`` of
    :class:`~metrics_core.evaluation.cohort_precision.PrecisionRuns`."""
    ap, tpr = values
    return {"auprc": ap, **{f"tpr@fpr={fmt_t(t)}": tpr[..., i] for i, t in enumerate(targets)}}


def _ranking_rows(grouping, body: pd.DataFrame, point: tuple, reps: dict | None, targets,
                  n, n_pos) -> list[dict]:
    """AUPRC and the TPR at each FPR target as disparity rows (the rest's value, the
    difference, its interval and p-value), for those whose value on the data itself
    (``point``: :class:`~metrics_core.evaluation.cohort_precision.PrecisionRuns`'s values
    with every post drawn once) is the table's (the same definition)."""
    mine, theirs = _ranking_curve(point[:2], targets), _ranking_curve(point[2:], targets)
    names = [name for name, values in mine.items() if _shown(body, name, values)]
    if not names:
        return []
    g = len(grouping.values)
    resampled = None
    if reps is not None:
        cohort = _ranking_curve((reps["auprc"], reps["tpr"]), targets)
        rest = _ranking_curve((reps["auprc_rest"], reps["tpr_rest"]), targets)
        resampled = {"cohort": np.stack([cohort[m] for m in names], axis=-1),
                     "rest": np.stack([rest[m] for m in names], axis=-1)}
    return _disparity_rows(grouping, names,
                           np.column_stack([np.ravel(mine[m]) for m in names]).reshape(g, -1),
                           np.column_stack([np.ravel(theirs[m]) for m in names]).reshape(g, -1),
                           resampled, n, n_pos)


def _intercepts(body: pd.DataFrame, g: int) -> np.ndarray:
    """The cohorts' calibration intercepts of the table (NaN without one)."""
    if "calibration_intercept" not in body.columns:
        return np.full(g, np.nan)
    return body["calibration_intercept"].to_numpy(dtype=np.float64, na_value=np.nan)


def _logistic_intervals(ds, grouping, body: pd.DataFrame, fitted: np.ndarray,
                        centres: np.ndarray, sums: np.ndarray, counts) -> dict[str, list]:
    """The calibration intercept's and slope's intervals per cohort from the resamples
    (:func:`~metrics_core.evaluation.cohort_logistic.resampled_intercepts` and
    :func:`~metrics_core.evaluation.cohort_logistic.resampled_slopes`: a series per resample,
    exact fits where the interval's order statistics are, of the one value needed), for
    those whose value on the data itself is the table's."""
    rows_of = [np.flatnonzero(grouping.codes == j) for j in range(len(grouping.values))]
    drawn: dict = {}

    def row(r: int) -> np.ndarray:  # the resample's counts per post
        if isinstance(counts, np.ndarray):
            return counts[r]
        if hasattr(counts, "rows"):  # the run's kept counts
            return counts.rows(r, r + 1)[0]
        if "all" not in drawn:  # a Bootstrap drawn batch by batch: drawn once more, whole
            drawn["all"] = counts.counts()
        return drawn["all"][r]

    def exact(part: str) -> Callable[[int, int], float]:
        """Cohort j's exact ``part`` (intercept, slope) on resample r: that fit alone."""
        fits = [cohort_logistic.ExactFits(ds, rows, part) for rows in rows_of]
        return lambda r, j: getattr(fits[j](row(r)[ds.post_code[rows_of[j]]]), part)

    intercepts = cohort_logistic.resampled_intercepts(sums, fitted, exact("intercept"))
    slopes = cohort_logistic.resampled_slopes(sums, centres, exact("slope"))
    return _same_definition(body, {"calibration_intercept": fitted,
                                   "calibration_slope": centres[:, 1]},
                            {"calibration_intercept": intercepts, "calibration_slope": slopes})


def _same_definition(body: pd.DataFrame, point: Mapping[str, np.ndarray],
                     resampled: Mapping[str, np.ndarray] | None) -> dict[str, list]:
    """metric -> one interval per cohort, for the metrics whose value on the data itself
    (``point``, one per cohort) is the table's (the same definition)."""
    if resampled is None:
        return {}
    same = [name for name, values in point.items()
            if resampled.get(name) is not None and _shown(body, name, values)]
    return dict(zip(same, _finite_cis([resampled[name] for name in same]), strict=True))


def _other_rows(grouping, body: pd.DataFrame, names: set, n, n_pos,
                intervals: Mapping[str, list] | None = None) -> list[dict]:
    """The per-group metrics without a disparity test: the cohort's value and, where the
    resamples give it (``intervals``: metric -> one interval per cohort), its interval."""
    intervals = intervals or {}
    rows = []
    metrics = [c for c in body.columns if c not in ("n", "n_positive", "positive_rate",
                                                    "auroc_defined") and "_ci_" not in c
               and c not in names]
    data = body[metrics].to_numpy(dtype=np.float64, na_value=np.nan)
    for j, value in enumerate(grouping.values):
        for i, name in enumerate(metrics):
            v = data[j, i]
            defined = bool(np.isfinite(v))
            ci = intervals.get(name)
            rows.append({"column": grouping.name, "value": value, "metric": name,
                         "estimate": float(v) if defined else None,
                         "ci95": ci[j] if ci is not None and defined else None,
                         "n": int(n[j]), "n_positive": int(n_pos[j]), "rest_estimate": None,
                         "difference": None, "difference_ci95": None, "ratio": None,
                         "ratio_ci95": None, "p_value": None, "defined": defined})
    return rows


def _finish_column(rows: list[dict]) -> None:
    """Holm across the column's cohorts and metrics; the flags."""
    adjusted = holm([np.nan if r["p_value"] is None else r["p_value"] for r in rows])
    for r, adj in zip(rows, adjusted, strict=True):
        r["p_adjusted"] = None if np.isnan(adj) else float(adj)
        ci = r["difference_ci95"]
        r["flagged"] = bool(r["p_adjusted"] is not None and r["p_adjusted"] < ALPHA
                            and ci is not None and (ci[0] > 0 or ci[1] < 0))
        r["small"] = bool(r["n"] < SMALL_CELL or r["n_positive"] < SMALL_CELL)


def cohort_tables(ev, inter, groupings: Sequence, *, n_resamples: int | None = None,
                  seed: int | None = None, counts=None, min_size: int = MIN_SEGMENT,
                  top: int = TOP_SEGMENTS, weak: bool = True,
                  progress: Callable | None = None) -> CohortResult:
    """The cohort tables of one run (``ev`` the run's evaluator, ``inter`` its
    :class:`~metrics_core.evaluation.evaluator.Intermediate`).

    ``groupings``: cohort columns (objects with ``name``, ``values``, ``codes`` per query of
    ``ev``'s data set). ``counts``: the post count matrix to read (rows = resamples; default:
    the run's, ``metrics_core.evaluation.intervals.post_counts``); ``n_resamples=0`` leaves
    out the intervals and p-values. ``weak``: also search the weak segments over the columns
    and their pairs (``min_size`` queries at least; the ``top`` worst per metric listed).
    """
    from metrics_core.evaluation import tables

    ds, cfg = ev.ds, inter.cfg
    n_resamples = cfg.bootstrap if n_resamples is None else n_resamples
    seed = cfg.seed if seed is None else seed
    singles = [Grouping.of(g) for g in groupings]
    names, num, den = sum_columns(ev, inter)
    n_metrics = len(names)
    num_den = np.column_stack([num, den])
    order = ev.p_order()
    layout = ScoreLayout(ds.p.take(order), ds.y.take(order), ds.post_code[order])
    segment_columns = list(singles)
    if weak:
        bases = [g for g in singles if "*" not in g.name]
        known = {g.name for g in singles}
        for i, a in enumerate(bases):
            for b in bases[i + 1:]:
                pair = intersect(a, b)
                # a pair with no more cohorts than one of its columns has that column's own
                # (a column with one value in the run, or nested in the other): searched
                # already, it would list each of them twice and count it twice in Holm's
                if pair.name not in known and len(pair.values) > max(
                        np.unique(a.codes).size, np.unique(b.codes).size):
                    segment_columns.append(pair)
    extra_names, extra = extra_columns(ev, inter)
    distinct, where = distinct_columns(extra)  # summed once each, then laid out again
    # each cohort's calibration intercept and slope and the series' terms around them (their
    # intervals: metrics_core.evaluation.cohort_logistic)
    # the per-criterion machinery's tables first (it reads the evaluator's memo): their
    # intercepts are the series' centres
    bodies = [tables.group_body(ev, inter, g) for g in singles]
    fitted = [_intercepts(body, len(g.values)) if n_resamples else None
              for g, body in zip(singles, bodies, strict=True)]
    centres = [cohort_logistic.slope_centres(ds, g.codes, len(g.values)) if n_resamples
               else None for g in singles]  # each cohort's (a, b): the slope's centres
    columns = [prepare(ds, g, num_den, distinct if i < len(singles) else None,
                       cohort_logistic.moment_columns(ds, g.codes, fitted[i], centres[i])
                       if i < len(singles) and n_resamples else None)
               for i, g in enumerate(segment_columns)]
    for col in columns:  # the multi-label metrics' per-post sums (the pairs' searched too)
        col.multilabel, col.multilabel_delta, col.multilabel_whole = multilabel_sums(
            ds, inter, col.grouping, col.posts)
    pairs = PairCounts(layout, [g.codes[order] for g in segment_columns],
                        [len(g.values) for g in segment_columns],
                        precision_columns=len(singles), targets=cfg.tpr_fprs)
    point_auroc = pairs.replicates(np.ones((1, int(ds.posts.size)), dtype=np.int64))
    reps = None
    if n_resamples and ds.n_queries:
        if counts is None:
            if (n_resamples, seed) == (cfg.bootstrap, cfg.seed):
                from metrics_core.evaluation.intervals import post_counts
                counts = post_counts(ev, cfg)
            else:
                counts = Bootstrap(int(ds.posts.size), n_resamples=n_resamples, seed=seed)
        reps = replicates(ds, columns, pairs, num_den, counts, n_metrics, progress)
    all_names = [*names, "auroc"]
    multilabel_shown = [m for m in MULTILABEL_NAMES if bodies and m in bodies[0].columns]

    def column_rows(k: int) -> tuple[list, list, list]:
        """The column's table rows, equalised-odds rows and weak-segment candidates."""
        col = columns[k]
        grouping = col.grouping
        g = len(grouping.values)
        n = np.bincount(grouping.codes, minlength=g)
        n_pos = np.bincount(grouping.codes, weights=ds.y, minlength=g).astype(np.int64)
        cohort_v, rest_v = _point(ds, grouping, num_den, n_metrics, point_auroc[k])
        rows = _disparity_rows(grouping, all_names, cohort_v, rest_v,
                               None if reps is None else reps[k], n, n_pos,
                               lazy=k >= len(singles))
        table, odds = [], []
        if k < len(singles):
            body = bodies[k]
            intervals, tested = _extra_intervals(
                grouping, body, extra_names, extra,
                None if reps is None else reps[k]["extra"], where, n, n_pos)
            rows += tested
            ranking = _ranking_rows(grouping, body, point_auroc[k][2],
                                    None if reps is None else reps[k], cfg.tpr_fprs, n, n_pos)
            rows += ranking
            if reps is not None and reps[k]["logistic"] is not None:
                intervals.update(_logistic_intervals(ds, grouping, body, fitted[k], centres[k],
                                                     reps[k]["logistic"], counts))
            multi = _multilabel_rows(grouping, body, col, len(ds.criteria),
                                     None if reps is None else reps[k], n, n_pos)
            rows += multi
            rows += _other_rows(grouping, body, set(all_names) | {
                r["metric"] for r in (*multi, *tested, *ranking)}, n, n_pos, intervals)
            _finish_column(rows)
            table = _ordered(rows, body.columns, all_names)
            odds = _equalised_odds(grouping, rows)
        else:  # a pair of columns of the weak-segment search: its multi-label metrics too
            rows += _multilabel_rows(grouping, None, col, len(ds.criteria),
                                     None if reps is None else reps[k], n, n_pos,
                                     shown=multilabel_shown, lazy=True)
        # every metric with a difference to the rest is searched (those with a direction)
        return table, odds, [r for r in rows if r["n"] >= min_size
                             and r["rest_estimate"] is not None]

    # The columns on WORKERS threads (their intervals' partitions and the arithmetic on the
    # resamples run outside the interpreter's lock); each column's rows are its own, put
    # together in the columns' order: the same tables whichever thread made them.
    cohort_rows, weak_rows, odds = [], [], []
    if len(columns) > 1 and WORKERS > 1:
        from concurrent.futures import ThreadPoolExecutor

        from metrics_core.cpu_account import charged

        with one_blas_thread(), \
                ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="cohorts") as pool:
            results = [f.result() for f in [pool.submit(charged(column_rows), k)
                                            for k in range(len(columns))]]
    else:
        results = [column_rows(k) for k in range(len(columns))]
    for table, column_odds, candidates in results:
        cohort_rows.extend(table)
        odds.extend(column_odds)
        weak_rows.extend(candidates)
    cohorts = pd.DataFrame(cohort_rows, columns=list(COHORT_COLUMNS))
    return CohortResult(cohorts, _weak_segments(weak_rows, top) if weak
                        else pd.DataFrame(columns=list(WEAK_COLUMNS)),
                        pd.DataFrame(odds))


def evaluate_cohorts(ev, cfg, attributes: Sequence, *, min_size: int = MIN_SEGMENT,
                     top: int = TOP_SEGMENTS, progress: Callable | None = None
                     ) -> CohortResult:
    """:func:`cohort_tables` of the run ``cfg`` of the evaluator ``ev`` (its filters applied;
    ``attributes`` per query of ``ev``'s data set), kept in ``ev`` per settings."""
    groupings = tuple(Grouping.of(a) for a in attributes)
    target = ev.for_filters(cfg.filters)
    aligned = tuple(g.aligned(ev.ds, target.ds) for g in groupings)

    def compute():
        return cohort_tables(target, target.intermediate(cfg), list(aligned),
                             min_size=min_size, top=top, progress=progress)

    return ev.cached(("cohorts", cfg, aligned, min_size, top), compute)


def add_to(evaluation, ev, cfg, attributes: Sequence, **kw) -> None:
    """Give ``evaluation`` (a run of ``ev`` with ``cfg``) its ``cohorts``,
    ``cohort_equalised_odds`` and ``weak_segments`` tables (built on first use)."""
    evaluation.add_tables(**document_tables(lambda: evaluate_cohorts(ev, cfg, attributes,
                                                                     **kw)))


def document_tables(result: Callable[[], CohortResult]) -> dict[str, Callable]:
    """The document's cohort tables (``Evaluation.add_tables`` / ``with_tables`` builders) of
    the :class:`CohortResult` that ``result()`` gives."""
    return {"cohorts": lambda: result().cohorts,
            "cohort_equalised_odds": lambda: result().equalised_odds,
            "weak_segments": lambda: result().weak_segments}


def _ordered(rows, body_columns, disparity) -> list[dict]:
    """Rows by cohort, then metric in report order (the disparity metrics first)."""
    place = {name: i for i, name in enumerate([*disparity, *body_columns])}
    values = {}
    for r in rows:
        values.setdefault(r["value"], len(values))
    return sorted(rows, key=lambda r: (values[r["value"]], place.get(r["metric"], 1 << 30)))


def _equalised_odds(grouping, rows) -> list[dict]:
    by = {(r["value"], r["metric"]): r for r in rows}
    out = []
    for value in grouping.values:
        sens, ffr = by.get((value, "screening_sensitivity")), by.get((value, "false_flag_rate"))
        out.append({"column": grouping.name, "value": value,
                    "screening_sensitivity": sens["estimate"], "screening_sensitivity_ci95":
                    sens["ci95"], "false_flag_rate": ffr["estimate"],
                    "false_flag_rate_ci95": ffr["ci95"], "n": sens["n"],
                    "n_positive": sens["n_positive"]})
    return out


def _weak_segments(rows: list[dict], top: int) -> pd.DataFrame:
    """The ``top`` segments per metric worst relative to the rest, Holm across every segment
    tried for that metric."""
    out = []
    by_metric: dict[str, list] = {}
    for r in rows:
        by_metric.setdefault(r["metric"], []).append(r)
    for metric, items in by_metric.items():
        higher = registry.spec(metric).higher_is_better
        if higher is None:
            continue
        sign = 1.0 if higher else -1.0
        tried = [r for r in items if r["difference"] is not None]
        adjusted = holm([np.nan if r["p_value"] is None else r["p_value"] for r in tried])
        # a pair's rows come without intervals: the difference's where a flag depends on it
        _fill_intervals([r for r, adj in zip(tried, adjusted, strict=True) if adj < ALPHA],
                        estimate=False)
        ranked = []
        for r, adj in zip(tried, adjusted, strict=True):
            worse = -sign * r["difference"]
            if worse <= 0:
                continue
            ci = r["difference_ci95"]
            p_adj = None if np.isnan(adj) else float(adj)
            ranked.append({"metric": metric,
                           "segment": _segment_name(r["column"], r["value"]),
                           "columns": r["column"], "estimate": r["estimate"],
                           "ci95": r["ci95"], "n": r["n"], "n_positive": r["n_positive"],
                           "rest_estimate": r["rest_estimate"],
                           "difference": r["difference"],
                           "difference_ci95": ci, "p_value": r["p_value"],
                           "p_adjusted": p_adj,
                           "flagged": bool(p_adj is not None and p_adj < ALPHA
                                           and ci is not None and (ci[0] > 0 or ci[1] < 0)),
                           "worse_by": worse, "segments_tried": len(tried),
                           "resampled": r.get("resampled")})
        ranked.sort(key=lambda r: (not r["flagged"], -r["worse_by"]))
        _fill_intervals(ranked[:top], estimate=True)
        out.extend(ranked[:top])
    return pd.DataFrame(out, columns=list(WEAK_COLUMNS))


def _fill_intervals(rows: list[dict], *, estimate: bool) -> None:
    """The difference's interval (and with ``estimate`` the value's) of the rows that have
    their resamples (``resampled``, a pair's: :func:`_disparity_rows` lazy) and none yet,
    in one percentile pass."""
    todo = [r for r in rows if r.get("resampled") is not None and (
        r["difference_ci95"] is None or (estimate and r["ci95"] is None))]
    if not todo:
        return
    diff = _cis(np.column_stack([r["resampled"][1] for r in todo]))
    est = _cis(np.column_stack([r["resampled"][0] for r in todo])) if estimate else None
    for i, r in enumerate(todo):
        r["difference_ci95"] = diff[i] if r["difference"] is not None else None
        if est is not None and r["estimate"] is not None:
            r["ci95"] = est[i]


def _segment_name(column: str, value: str) -> str:
    """``site*sex`` and ``S1*F`` -> ``site=S1, sex=F``."""
    cols, values = column.split("*"), value.split("*")
    if len(cols) != len(values):
        return f"{column}={value}"
    return ", ".join(f"{c}={v}" for c, v in zip(cols, values, strict=True))


def describe(result: CohortResult) -> Mapping[str, int]:
    """Counts for a summary line: cohorts, flagged disparities, weak segments flagged."""
    c = result.cohorts
    return {"cohorts": int(c[["column", "value"]].drop_duplicates().shape[0]) if len(c) else 0,
            "flagged": int(c["flagged"].sum()) if len(c) else 0,
            "weak_flagged": int(result.weak_segments["flagged"].sum())
            if len(result.weak_segments) else 0}
