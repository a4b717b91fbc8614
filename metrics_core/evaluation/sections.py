"""The records of a run, one function per contract section (§3-§8).

Each function takes the evaluator (data-only parts), the run's :class:`Intermediate` and the
bootstrap intervals, and appends :class:`MetricRecord` s to a :class:`RecordList`, which takes
each record's group and interpretation from the registry. Undefined values become ``None``
with ``defined: false``; a seed convention (one-class AUROC = 0.5) keeps its value, flagged.
"""

from __future__ import annotations

import math

import numpy as np

from metrics_core import registry
from metrics_core.config import VARIANT_LABELS
from metrics_core.evaluation.intervals import Intervals
from metrics_core.evaluation.result import MetricRecord
from metrics_core.metrics import dynamic_k, gate, multilabel, outcomes
from metrics_core.metrics.classification import confusion_from_counts
from metrics_core.metrics.uncertainty import wilson_interval
from metrics_core.registry import fmt_t

__all__ = ["RecordList", "calibration_records", "classification_records", "counting_records",
           "dynamic_k_records", "gate_records", "multilabel_records", "ranking_records"]

ALL = "all_queries"

class RecordList(list):
    """Records in report order; :meth:`add` fills group and interpretation from the registry.

    ``n_positive`` / ``n_negative``: the classes of the run's queries. A metric that needs a
    class the data lack (the registry's ``needs``) is recorded undefined with the reason and
    no interval, whatever its kernel returned (seed 000's one-class AUROC / AUPRC keep their
    conventional value, flagged).
    """

    def __init__(self, *, n_positive: int | None = None, n_negative: int | None = None):
        super().__init__()
        self.n_positive, self.n_negative = n_positive, n_negative

    def add(self, name, value, subset, n, *, ci=None, ci_method=None, defined=None,
            variant=None, ci_valid=None, reason=None) -> None:
        spec = registry.spec(name)
        absent = (None if self.n_positive is None
                  else spec.absent_class(self.n_positive, self.n_negative))
        if absent is not None:
            defined, reason, ci = False, absent, None
            if spec.name not in registry.ONE_CLASS_CONVENTIONS:
                value = None
        value = None if value is None else float(value)
        if defined is None:
            defined = value is not None and math.isfinite(value)
        if value is not None and not math.isfinite(value):
            value = None
        if ci is not None and not all(v is not None and math.isfinite(v) for v in ci):
            ci = None
        if not defined and reason is None:
            reason = ("no query in its denominator (n = 0)" if not n
                      else "undefined on these data (0/0 or no fit)")
        self.append(MetricRecord(
            name=name, value=value, subset=subset, n=int(n), ci95=ci, defined=bool(defined),
            interpretation=registry.describe(name), group=spec.group,
            ci_method=ci_method if ci is not None else None, variant=variant,
            ci_valid=ci_valid if ci is not None else None,
            reason=None if defined else reason))

    def add_boot(self, name, value, subset, n, boot: Intervals, key=None, **kw) -> None:
        ci, valid = boot.pair(key or name)
        self.add(name, value, subset, n, ci=ci, ci_method=boot.method, ci_valid=valid, **kw)

    def add_spec(self, name, value, subset, n, boot: Intervals, **kw) -> None:
        """Add ``name`` with the interval its registry spec names: the bootstrap's (from
        ``boot``) or none; other kinds (Wilson, Poisson, Wald) carry their own ``ci``."""
        kind = registry.spec(name).interval
        if kind == "bootstrap":
            self.add_boot(name, value, subset, n, boot, **kw)
        elif kind is None:
            self.add(name, value, subset, n, **kw)
        else:
            raise ValueError(f"{name}: a {kind} interval is given by its section, not "
                             "add_spec")


def wilson(k, n) -> tuple[float, float] | None:
    if n <= 0:
        return None
    lo, hi = wilson_interval(int(k), int(n))
    return float(lo), float(hi)


# ---------------------------------------------------------------------------------- §4
def classification_records(out: RecordList, ev, inter, boot: Intervals, op: Intervals):
    """AUROC, AUPRC, TPR at FPR targets, and the confusion metrics at τ (§4).

    Returns the :class:`~metrics_core.metrics.classification.Confusion` at τ.
    """
    ds, cfg = ev.ds, inter.cfg
    n, n_pos = ds.n_queries, ds.n_positive
    cls = ev.classification()
    for name in ("auroc", "auprc"):
        out.add_boot(name, cls[name].value, ALL, n, boot, defined=cls[name].defined)
    for t in ev.tpr_at_fpr(cfg):
        # TPR is a proportion of the queries with evidence (its n); the threshold is read
        # off every query's p.
        out.add(f"tpr@fpr={fmt_t(t.target)}", t.tpr, ALL, n_pos,
                ci=wilson(round(t.tpr * n_pos), n_pos) if math.isfinite(t.tpr) else None,
                ci_method="wilson", defined=t.defined and math.isfinite(t.tpr))
        out.add(f"threshold@fpr={fmt_t(t.target)}", t.threshold, ALL, n,
                defined=t.defined and math.isfinite(t.threshold))
    table = outcomes.outcome_counts(ds.y, inter.pred)
    counting_records(out, table, "tau", f"{ALL} @ τ={cfg.threshold:g}", op)
    tp, fp, tn, fn = (int(c[0]) for c in outcomes.confusion_cells(table))
    return confusion_from_counts(tp, fp, tn, fn, threshold=cfg.threshold)


def counting_records(out: RecordList, table: np.ndarray, which: str, subset: str,
                     op: Intervals) -> None:
    """The records of every counting metric of the registry on outcome table ``which``
    (``"tau"`` or ``"gate"``; ``table``: its one-group counts), in report order, each as its
    spec says (:class:`~metrics_core.registry.Counting`): the value from the table's cells,
    the interval of its kind (Wilson: ``n`` is the proportion's denominator; bootstrap: from
    the operating sums ``op``; none: a count of the data), the spec's reason when undefined."""
    n = int(table.sum())
    for spec in registry.counting(which):
        value, fraction = outcomes.counted(table, spec.counting)
        reason = spec.undefined
        if spec.interval == "wilson":
            k, m, scale = (fraction[0][0], fraction[1][0], fraction[2])
            ci = wilson(k, m)
            ci = None if ci is None else (ci[0] * scale, ci[1] * scale)
            out.add(spec.name, value[0], subset, int(m), ci=ci, ci_method="wilson",
                    reason=reason)
        else:
            out.add_spec(spec.name, value[0], subset, n, op, reason=reason)


# ---------------------------------------------------------------------------------- §5
def calibration_records(out: RecordList, ev, inter, boot: Intervals) -> None:
    """ECE, MCE (of the calibration view and binning) and Brier (§5)."""
    cfg, n = inter.cfg, ev.ds.n_queries
    rel = ev.reliability(cfg)
    view = VARIANT_LABELS["calibration_view"][cfg.calibration_view]
    variant = f"{view}; {cfg.n_bins} {VARIANT_LABELS['binning'][cfg.binning]}"
    out.add_boot("ece", rel.ece, ALL, n, boot, variant=variant)
    out.add_boot("mce", rel.mce, ALL, n, boot, variant=variant)
    out.add_boot("brier", ev.brier(), ALL, n, boot, variant="positive class p")
    lc = ev.logistic_calibration()
    out.add("calibration_in_the_large", lc.in_the_large, ALL, n, ci=lc.in_the_large_ci,
            ci_method="poisson", variant="positive class p")
    out.add("calibration_intercept", lc.intercept, ALL, n, ci=lc.intercept_ci,
            ci_method="wald", variant="logit P(y=1) = a + logit(p)")
    out.add("calibration_slope", lc.slope, ALL, n, ci=lc.slope_ci, ci_method="wald",
            variant="logit P(y=1) = a + b·logit(p)")


# ---------------------------------------------------------------------------------- §6
def gate_records(out: RecordList, ev, inter, op: Intervals) -> None:
    """Workload, screening and alert metrics of the gate, then its abstention view (§6): the
    registry's counting metrics of the gate's outcome table (:func:`counting_records`)."""
    ds, cfg = ev.ds, inter.cfg
    table = outcomes.outcome_counts(ds.y, gate.states_to_prediction(inter.states))
    counting_records(out, table, "gate", f"{ALL} @ {cfg.describe_gate()}", op)


# ---------------------------------------------------------------------------------- §3
def ranking_records(out: RecordList, ev, inter, boot: Intervals, summary: dict) -> None:
    """Mean of every ranking metric on the ranking protocol's queries (§3)."""
    cfg = inter.cfg
    variant = (f"precision {VARIANT_LABELS['precision_denominator'][cfg.precision_denominator]}"
               f"; map {VARIANT_LABELS['map_denominator'][cfg.map_denominator]}"
               f"; {VARIANT_LABELS['gain'][cfg.gain]}")
    for name, s in summary.items():
        if registry.spec(name).interval == "wilson":  # hit@K: a proportion of queries
            ci = wilson(round(s.mean * s.n), s.n) if s.n and math.isfinite(s.mean) else None
            out.add(name, s.mean, cfg.ranking_protocol, s.n, ci=ci, ci_method="wilson",
                    variant=variant)
        else:
            out.add_boot(name, s.mean, cfg.ranking_protocol, s.n, boot, variant=variant)


# ---------------------------------------------------------------------------------- §7
def dynamic_k_records(out: RecordList, ev, inter, boot: Intervals, k_summary) -> None:
    """Evidence recall / precision of the selected K, K statistics and workload (§7)."""
    cfg, n = inter.cfg, ev.ds.n_queries
    variant = (f"γ={cfg.gamma:g}, γ_uncertain={cfg.gamma_uncertain:g}, k_min={cfg.k_min}, "
               f"hard_cap={cfg.hard_cap}, k_max_ratio={cfg.k_max_ratio:g}, "
               f"{'gate-aware' if cfg.gate_aware else 'gate-blind'}, "
               f"{VARIANT_LABELS['mass'][cfg.mass]}")
    n_e = int(inter.emask.sum())
    for name, values in (("evidence_recall", inter.rec), ("evidence_precision", inter.prec)):
        out.add_spec(name, np.mean(values[inter.emask]) if n_e else None,
                     cfg.evidence_protocol, n_e, boot, variant=variant)
    for name, value in (("mean_k", k_summary.mean), ("median_k", k_summary.median),
                        ("p90_k", k_summary.p90), ("workload", k_summary.total),
                        ("workload_per_1000", k_summary.workload_per_1000)):
        out.add_spec(name, value, ALL, n, boot, variant=variant)


def k_summary(inter, y) -> dynamic_k.KSummary:
    return dynamic_k.k_summary(inter.k, states=inter.states, y=y)


# ---------------------------------------------------------------------------------- §8
def multilabel_values(ds, cfg, states) -> tuple[dict, int, tuple]:
    """Per-post multi-label metrics of a data set under the decision rule, the number of
    posts, and the ``(gold, predicted, present)`` post × criterion matrices."""
    labels = multilabel.decision_labels(ds, rule=cfg.multilabel_rule, threshold=cfg.threshold,
                                        states=states)
    matrix, predicted, mask = multilabel.post_matrix(ds, labels)
    return (multilabel.multilabel_metrics(matrix, predicted, mask), int(matrix.shape[0]),
            (matrix, predicted, mask))


def multilabel_records(out: RecordList, ml: dict, n_posts: int, cfg,
                       boot: Intervals | None = None) -> None:
    """Exact match, Hamming and the F1 family over posts (§8): exact match with its Wilson
    interval, the others with the bootstrap over posts."""
    variant = VARIANT_LABELS["multilabel_rule"][cfg.multilabel_rule]
    boot = boot if boot is not None else Intervals(None)
    for name in multilabel.MULTILABEL_NAMES:
        if registry.spec(name).interval == "wilson":  # exact match: a proportion of posts
            ci = wilson(round(ml[name] * n_posts), n_posts) if math.isfinite(ml[name]) else None
            out.add(name, ml[name], f"{ALL} (per post)", n_posts, ci=ci, ci_method="wilson",
                    variant=variant)
        else:
            out.add_boot(name, ml[name], f"{ALL} (per post)", n_posts, boot, variant=variant)
