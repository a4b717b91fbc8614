"""The registry's kernels on a run: what a :class:`~metrics_core.registry.Kernel` names, computed.

A metric with a kernel (ranking §3, calibration §5, dynamic-K §7, multi-label §8) is either a
reduction of per-query values (:data:`~metrics_core.registry.SOURCES`: mean, median, P90, sum or
sum per 1,000 over the queries its kernel says) or a field of a whole-sample kernel
(:data:`~metrics_core.registry.WHOLE`). This module resolves both, three ways that share the
values: the run's value (:class:`RunKernels`, the records), each group's (:func:`group_values`,
the per-criterion / per-fold / per-cohort tables) and the data-only columns the bootstrap
averages (:func:`bootstrap_columns`); and a metric that is a ratio of per-query sums, counting
ones included, as those sums (:func:`ratio_sums`: the cohorts' resamples). Each reduction
keeps the arithmetic its section has always used, so the numbers do not move.
"""

from __future__ import annotations

import math
from types import MappingProxyType, SimpleNamespace

import numpy as np

from metrics_core import registry
from metrics_core.config import VARIANT_LABELS
from metrics_core.data.ordering import stable_argsort
from metrics_core.metrics import calibration, classification, dynamic_k, multilabel, outcomes
from metrics_core.metrics import gate as gate_mod
from metrics_core.registry import fmt_t

__all__ = ["VARIANTS", "RunKernels", "bootstrap_columns", "group_discrimination",
           "group_values", "members", "members_by_p", "multilabel_values", "names",
           "outcome_cells", "ratio_sum", "ratio_sums", "record_order", "squared_error",
           "subset"]

ALL = "all_queries"


def _reliability_wording(cfg) -> str:
    view = VARIANT_LABELS["calibration_view"][cfg.calibration_view]
    return f"{view}; {cfg.n_bins} {VARIANT_LABELS['binning'][cfg.binning]}"


#: The variant wording of a record (:data:`~metrics_core.registry.VARIANTS`) on a configuration.
VARIANTS = MappingProxyType({
    "ranking": lambda cfg: (
        f"precision {VARIANT_LABELS['precision_denominator'][cfg.precision_denominator]}"
        f"; map {VARIANT_LABELS['map_denominator'][cfg.map_denominator]}"
        f"; {VARIANT_LABELS['gain'][cfg.gain]}"),
    "reliability": _reliability_wording,
    "positive_p": lambda cfg: "positive class p",
    "logistic_intercept": lambda cfg: "logit P(y=1) = a + logit(p)",
    "logistic_slope": lambda cfg: "logit P(y=1) = a + b·logit(p)",
    "dynamic_k": lambda cfg: (
        f"γ={cfg.gamma:g}, γ_uncertain={cfg.gamma_uncertain:g}, k_min={cfg.k_min}, "
        f"hard_cap={cfg.hard_cap}, k_max_ratio={cfg.k_max_ratio:g}, "
        f"{'gate-aware' if cfg.gate_aware else 'gate-blind'}, "
        f"{VARIANT_LABELS['mass'][cfg.mass]}"),
    "multilabel_rule": lambda cfg: VARIANT_LABELS["multilabel_rule"][cfg.multilabel_rule],
})


def names(spec: registry.MetricSpec, inter) -> list[str]:
    """The record names of ``spec`` on a run (``inter``: its ranking values ``rk`` and
    configuration ``cfg``): a ranking family at each cut-off of the run (the ranking values'
    order), a family of FPR targets at each target, else the spec's name."""
    if spec.name.endswith("="):
        return [f"{spec.name}{fmt_t(t)}" for t in inter.cfg.tpr_fprs]
    if spec.family:
        return [n for n in inter.rk if registry.spec(n) is spec]
    return [spec.name]


def record_order(specs, inter) -> list[tuple[registry.MetricSpec, str]]:
    """``(spec, record name)`` of ``specs`` in report order: each spec's :func:`names`, and
    consecutive families of FPR targets target by target (TPR at 1 %, its threshold, TPR at
    3 %, ...)."""
    out: list[tuple[registry.MetricSpec, str]] = []
    run: list[list] = []  # the consecutive FPR-target families met so far
    for spec in (*specs, None):
        if spec is not None and spec.name.endswith("="):
            run.append([(spec, n) for n in names(spec, inter)])
            continue
        out.extend(pair for row in zip(*run, strict=True) for pair in row)
        run = []
        if spec is not None:
            out.extend((spec, n) for n in names(spec, inter))
    return out


def subset(cfg, over: str) -> str:
    """The record's subset of a kernel reducing ``over`` (:data:`~metrics_core.registry.OVER`)."""
    return {"all": ALL, "positives": ALL, "ranking": cfg.ranking_protocol,
            "evidence": cfg.evidence_protocol, "posts": f"{ALL} (per post)"}[over]


def squared_error(ev) -> np.ndarray:
    """(p − y)² of every query (the Brier score's per-query values; cached)."""
    return ev.cached(("squared_error",), lambda: (ev.ds.p - ev.ds.y) ** 2)


def _per_query(ev, inter, name: str) -> np.ndarray:
    """The per-query values ``name``'s kernel reduces (every query, in query order)."""
    source = registry.spec(name).kernel.source
    if source == "ranking":
        return inter.rk[name]
    if source == "squared_error":
        return squared_error(ev)
    return {"evidence_recall": inter.rec, "evidence_precision": inter.prec,
            "k": inter.k}[source]


def _mask(inter, over: str) -> np.ndarray | None:
    if over == "all":
        return None
    return inter.rmask if over == "ranking" else inter.emask


def _reduce(values: np.ndarray, how: str) -> float:
    """The run's value of per-query ``values`` (those reduced over) by ``how``."""
    if how == "sum":
        return int(values.sum())
    if values.size == 0:
        return float("nan")
    if how == "mean":
        return float(np.mean(values))
    if how == "median":
        return float(np.median(values))
    if how == "p90":
        return float(np.percentile(values, 90))
    return int(values.sum()) / values.size * 1000.0  # per_1000


#: What a reduction of K over every query is in :class:`~metrics_core.metrics.dynamic_k.KStats`.
_K_STATS = MappingProxyType({"mean": "mean", "median": "median", "p90": "p90",
                             "sum": "workload", "per_1000": "workload_per_1000"})


class RunKernels:
    """The run's value of every kernel metric (the records' numbers), whole-sample kernels
    computed once each when first read.

    ``ml``, ``n_posts``: the run's multi-label metrics and its number of posts
    (:func:`multilabel_values`). ``ranking_summary`` (the evaluator's
    :meth:`~metrics_core.evaluation.evaluator.Evaluator.ranking_summary`) and ``k_summary``
    (:func:`~metrics_core.metrics.dynamic_k.k_summary` of the run's K), when given, are
    reductions the run has already made: a ranking mean over the ranking protocol's queries
    is its summary's mean, a reduction of K over every query its overall statistic (the same
    arithmetic on the same values), so neither is computed twice.
    """

    def __init__(self, ev, inter, *, ml: dict | None = None, n_posts: int = 0,
                 ranking_summary: dict | None = None, k_summary=None):
        self.ev, self.inter, self.cfg = ev, inter, inter.cfg
        self.ml, self.n_posts = ml, n_posts
        self.ranking_summary, self.k_summary = ranking_summary, k_summary
        self._rows: dict = {}
        self._k: np.ndarray | None = None

    def _reduced(self, name: str, kernel) -> tuple[float, int] | None:
        """``(value, n)`` of a per-query kernel the run has already reduced, else None."""
        if (kernel.source == "ranking" and kernel.over == "ranking" and kernel.reduce == "mean"
                and self.ranking_summary is not None and name in self.ranking_summary):
            s = self.ranking_summary[name]
            return s.mean, s.n
        if kernel.source == "k" and kernel.over == "all" and self.k_summary is not None:
            stats = self.k_summary.overall
            return getattr(stats, _K_STATS[kernel.reduce]), stats.n
        return None

    def _rows_over(self, over: str) -> np.ndarray | None:
        """The queries a kernel reducing ``over`` reads (None: all), found once per run: the
        dozens of ranking means each gather their rows instead of scanning the mask."""
        if over not in self._rows:
            mask = _mask(self.inter, over)
            self._rows[over] = None if mask is None or mask.all() else np.flatnonzero(mask)
        return self._rows[over]

    def whole(self, source: str):
        """The result of whole-sample kernel ``source`` on the run."""
        if source == "reliability":
            return self.ev.reliability(self.cfg)
        if source == "logistic":
            return self.ev.logistic_calibration()
        if source == "discrimination":
            return self.ev.classification()
        return self.ml

    def _discrimination(self, name: str) -> tuple[float, bool]:
        """(value, defined) of AUROC / AUPRC (their one-class convention flagged) or of TPR /
        threshold at an FPR target (defined where the ROC point is and the value finite)."""
        spec = registry.spec(name)
        if not spec.family:
            score = self.whole("discrimination")[spec.kernel.field or name]
            return score.value, score.defined
        target = name[len(spec.name):]
        point = next(t for t in self.ev.tpr_at_fpr(self.cfg) if fmt_t(t.target) == target)
        value = getattr(point, spec.kernel.field)
        return value, bool(point.defined and math.isfinite(value))

    def value(self, name: str) -> tuple[float | None, int, tuple | None, bool | None]:
        """``(value, n, ci, defined)`` of record ``name``: ``n`` the queries (posts) it reduces
        over (the positives for a proportion of them), ``ci`` the whole-sample kernel's own
        interval (Wald, Poisson) or None, ``defined`` the kernel's own verdict (None: the
        value's)."""
        kernel = registry.spec(name).kernel
        if kernel.source == "discrimination":
            value, defined = self._discrimination(name)
            ds = self.ev.ds
            return (value, ds.n_positive if kernel.over == "positives" else ds.n_queries,
                    None, defined)
        if kernel.per_query:
            reduced = self._reduced(name, kernel)
            if reduced is not None:
                return reduced[0], int(reduced[1]), None, None
            if kernel.source == "k":
                if self._k is None:
                    self._k = np.asarray(self.inter.k, dtype=np.int64)
                values = self._k
            else:
                values = _per_query(self.ev, self.inter, name)
            rows = self._rows_over(kernel.over)
            if rows is not None:
                values = values.take(rows)
            return _reduce(values, kernel.reduce), int(values.size), None, None
        field = kernel.field or name
        result = self.whole(kernel.source)
        if kernel.source == "multilabel":
            return result[field], self.n_posts, None, None
        return (getattr(result, field), self.ev.ds.n_queries,
                getattr(result, f"{field}_ci", None), None)


# ------------------------------------------------------------------------ per group
def _grouped_means(codes, g, columns: dict, mask=None) -> dict:
    """The mean of each of ``columns`` (name -> per-query values) per group over ``mask``
    (NaN for a group without such a query): grouped sums, the mask applied once."""
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


def members(codes, g, mask=None) -> list[np.ndarray]:
    """The query indices of each group (ascending; within ``mask``), from one stable sort; a
    few groups (folds, criteria) by one scan each instead."""
    if g == 1:
        found = [np.arange(codes.size)]
    elif g <= 32:
        found = [np.flatnonzero(codes == i) for i in range(g)]
    else:
        order = stable_argsort(codes)
        found = np.split(order, np.searchsorted(codes[order], np.arange(1, g)))
    return found if mask is None else [m[mask[m]] for m in found]


def members_by_p(ev, label, codes, g) -> list[tuple[np.ndarray, np.ndarray]]:
    """(query indices ascending, their order by p ascending) of each group of ``label``
    (``codes``, ``g`` groups; cached): the run's one sort of p split by group, a stable
    partition instead of a sort per group. Ties of p stay in query order, as
    ``np.argsort(p[m], kind="stable")``."""
    def compute():
        found = members(codes, g)
        order = ev.p_order()
        by_group = order[stable_argsort(codes[order])]  # each group's rows, in p order
        bounds = np.cumsum([m.size for m in found])[:-1]
        local = np.empty(codes.size, dtype=np.int64)  # a query's place within its group
        for m in found:
            local[m] = np.arange(m.size, dtype=np.int64)
        return [(m, local.take(rows))
                for m, rows in zip(found, np.split(by_group, bounds), strict=True)]

    return ev.cached(("group_members_by_p", label), compute)


def _grouped(codes, g, how: str, columns: dict, mask) -> dict:
    """Each of ``columns`` reduced by ``how`` per group over ``mask``."""
    if how == "mean":
        return _grouped_means(codes, g, columns, mask)
    out = {}
    for name, values in columns.items():
        if how in ("median", "p90") and np.asarray(values).dtype.kind in "iu":
            # whole numbers (K): each group's order statistics from counts, numpy's values
            keep = slice(None) if mask is None else mask
            stats = dynamic_k.k_stats_by_group(np.asarray(values)[keep], codes[keep], g)
            out[name] = np.array([s.median if how == "median" else s.p90 for s in stats],
                                 dtype=np.float64)
            continue
        values = np.asarray(values, dtype=np.float64)
        if how in ("median", "p90"):
            out[name] = np.array([np.nan if not m.size else np.median(values[m])
                                  if how == "median" else np.percentile(values[m], 90)
                                  for m in members(codes, g, mask)])
            continue
        keep = slice(None) if mask is None else mask
        total = np.bincount(codes[keep], weights=values[keep], minlength=g)
        out[name] = (total if how == "sum" else
                     outcomes.ratio(total, np.bincount(codes[keep], minlength=g), 1000.0))
    return out


def _group_reliability(ev, label, cfg, codes, g) -> dict[str, np.ndarray]:
    """ECE and MCE per group (data-only per calibration settings, cached)."""
    def compute():
        conf, outcome = ev.calibration_inputs(cfg)
        n = ev.ds.n_queries  # a group of every query (pooled) reuses the run's own values
        rel = [None if not m.size else (
            ev.reliability(cfg) if m.size == n else calibration.reliability_bins(
                outcome[m], conf[m], n_bins=cfg.n_bins, strategy=cfg.binning))
            for m in members(codes, g)]
        return {field: np.array([np.nan if r is None else getattr(r, field) for r in rel])
                for field in ("ece", "mce")}

    return ev.cached(("group_reliability", label, cfg.calibration), compute)


def _group_logistic(ev, label, codes, g) -> dict[str, np.ndarray]:
    """Calibration in the large, intercept and slope per group (data-only, cached)."""
    def compute():
        n = ev.ds.n_queries
        fits = [ev.logistic_calibration() if m.size == n else calibration.logistic_calibration(
            ev.ds.y[m], ev.ds.p[m], order=order)
            for m, order in members_by_p(ev, label, codes, g)]
        return {field: np.array([getattr(f, field) for f in fits])
                for field in ("in_the_large", "intercept", "slope")}

    return ev.cached(("group_logistic", label), compute)


def multilabel_values(ds, cfg, states) -> tuple[dict, int, tuple]:
    """Per-post multi-label metrics of a data set under the decision rule (the whole-sample
    kernel ``multilabel``), the number of posts, and the ``(gold, predicted, present)`` post ×
    criterion matrices."""
    labels = multilabel.decision_labels(ds, rule=cfg.multilabel_rule, threshold=cfg.threshold,
                                        states=states)
    matrix, predicted, mask = multilabel.post_matrix(ds, labels)
    return (multilabel.multilabel_metrics(matrix, predicted, mask), int(matrix.shape[0]),
            (matrix, predicted, mask))


def group_discrimination(ev, label, cfg, codes, g) -> dict[str, np.ndarray]:
    """AUROC (and whether it is defined), AUPRC and TPR / threshold at the FPR targets per
    group, NaN where undefined (one class), never a convention (data-only, cached)."""
    ds = ev.ds

    def compute():
        out: dict[str, list] = {}
        for m, order in members_by_p(ev, label, codes, g):
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


def _group_multilabel(ev, inter, codes, g) -> dict[str, np.ndarray]:
    """Per-post multi-label metrics of each group's queries (folds: posts do not straddle)."""
    ds = ev.ds
    rows = []
    for m in members(codes, g):
        posts, post_code = np.unique(ds.post_code[m], return_inverse=True)
        view = SimpleNamespace(n_queries=int(m.size), posts=posts, criteria=ds.criteria,
                               post_code=post_code, criterion_code=ds.criterion_code[m],
                               y=ds.y[m], p=ds.p[m])
        rows.append(multilabel_values(view, inter.cfg, inter.states[m])[0])
    return {name: np.array([r[name] for r in rows], dtype=np.float64)
            for name in multilabel.MULTILABEL_NAMES}


def group_values(ev, inter, label, codes, g, where: str | None) -> dict[str, np.ndarray]:
    """Every kernel metric that applies ``where`` (None: anywhere) per group of ``codes``
    (``g`` groups; ``label`` keys the cached whole-sample kernels): name -> one value per
    group, NaN where undefined."""
    out: dict[str, np.ndarray] = {}
    batches: dict[tuple, dict] = {}  # (over, reduce) -> columns reduced together
    wholes: dict[str, list] = {}
    for spec in registry.kernels(where=where):
        kernel = spec.kernel
        for name in names(spec, inter):
            if kernel.per_query:
                values = _per_query(ev, inter, name)
                if kernel.source == "k" and kernel.reduce not in ("median", "p90"):
                    values = values.astype(np.float64)  # (the order statistics count K)
                batches.setdefault((kernel.over, kernel.reduce), {})[name] = values
            else:
                wholes.setdefault(kernel.source, []).append((name, kernel.field or name))
    for (over, how), columns in batches.items():
        out.update(_grouped(codes, g, how, columns, _mask(inter, over)))
    for source, fields in wholes.items():
        if source == "reliability":
            found = _group_reliability(ev, label, inter.cfg, codes, g)
        elif source == "logistic":
            found = _group_logistic(ev, label, codes, g)
        elif source == "discrimination":
            found = group_discrimination(ev, label, inter.cfg, codes, g)
        else:
            found = _group_multilabel(ev, inter, codes, g)
        out.update({name: found[name if source == "discrimination" else field]
                    for name, field in fields})
    return out


# ------------------------------------------------------------------------ bootstrap
def bootstrap_columns(ev, cfg) -> dict[str, tuple[np.ndarray, np.ndarray | None]]:
    """The data-only means with a bootstrap interval (the ranking means, Brier): name ->
    ``(per-query values, mask)`` in the order of their sources
    (:data:`~metrics_core.registry.SOURCES`), for the bootstrap's weighted means."""
    inter = SimpleNamespace(rk=ev.ranking(cfg), rmask=ev.ranking_mask(cfg), cfg=cfg)
    specs = [s for s in registry.kernels() if s.interval == "bootstrap"
             and s.kernel.source in registry.DATA_SOURCES]
    for s in specs:
        if s.kernel.reduce != "mean":
            raise ValueError(f"{s.name}: the bootstrap of a data-only kernel is a weighted mean, "
                             f"not a {s.kernel.reduce}")
    specs.sort(key=lambda s: registry.SOURCES.index(s.kernel.source))
    return {name: (_per_query(ev, inter, name), _mask(inter, s.kernel.over))
            for s in specs for name in names(s, inter)}


# ------------------------------------------------------------------------ ratio sums
def ratio_sum(spec: registry.MetricSpec) -> str | None:
    """How ``spec``'s value is a ratio of per-query sums, from its registry entry: ``"ratio"``
    (a counting metric's cells over its cells, or a kernel's mean or per-1,000 sum over the
    queries it reduces), ``"sum"`` (a count, or a kernel's sum), None (a formula of the
    cells, or a kernel that is no such reduction)."""
    if spec.counting is not None:
        if spec.counting.formula is not None:
            return None
        return "ratio" if spec.counting.denominator else "sum"
    kernel = spec.kernel
    if kernel is None or not kernel.per_query or kernel.over not in ("all", "ranking",
                                                                     "evidence"):
        return None
    return {"mean": "ratio", "per_1000": "ratio", "sum": "sum"}.get(kernel.reduce)


def outcome_cells(ev, inter, table: str) -> np.ndarray:
    """Each query's outcome table ``(n_queries, 3, 2)``, one-hot: at τ (``table="tau"``) or
    of the gate (``"gate"``), as :func:`metrics_core.metrics.outcomes.outcome_counts` lays
    a table out; summed over some queries, their table."""
    ds = ev.ds
    pred = inter.pred if table == "tau" else gate_mod.states_to_prediction(inter.states)
    return outcomes.outcome_counts(ds.y, pred, np.arange(ds.n_queries), ds.n_queries)


def ratio_sums(ev, inter, names) -> tuple[np.ndarray, np.ndarray]:
    """Each of ``names`` (a :func:`ratio_sum` metric) as per-query numerators and
    denominators, ``(n_queries, len(names))`` float arrays whose sums over any queries make
    the metric's value of those queries (``ratio(sum(num), sum(den))``; a sum's denominator
    is 0): from the registry entry, a counting metric's cells (times its scale) and the cells
    of its denominator, one-hot per query at τ or of the gate; a kernel's per-query values
    (times 1,000 for a per-1,000 sum) over the queries it reduces, and those queries."""
    n = ev.ds.n_queries
    tables: dict[str, np.ndarray] = {}

    def cells(counting, which) -> np.ndarray:
        if counting.table not in tables:
            tables[counting.table] = outcome_cells(ev, inter, counting.table)
        return outcomes.cell_sum(tables[counting.table], counting.cells(which)).astype(
            np.float64)

    ones, zero = np.ones(n), np.zeros(n)
    num, den = [], []
    for name in names:
        spec = registry.spec(name)
        how = ratio_sum(spec)
        if how is None:
            raise ValueError(f"{name}: its value is no ratio of per-query sums")
        if spec.counting is not None:
            c = spec.counting
            num.append(cells(c, "numerator") * c.scale)
            den.append(cells(c, "denominator") if how == "ratio" else zero)
            continue
        kernel = spec.kernel
        values = np.asarray(_per_query(ev, inter, name), dtype=np.float64)
        mask = _mask(inter, kernel.over)
        weight = ones if mask is None else mask.astype(np.float64)
        if mask is not None:
            values = np.nan_to_num(values) * weight
        num.append(1000 * values if kernel.reduce == "per_1000" else values)
        den.append(zero if how == "sum" else weight)
    if not num:
        return np.zeros((n, 0)), np.zeros((n, 0))
    return np.column_stack(num), np.column_stack(den)
