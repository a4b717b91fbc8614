"""The records of a run (§3-§8), generated from the registry.

The counting metrics' records come from their :class:`~metrics_core.registry.Counting`
(:func:`counting_records`), those of every metric with a :class:`~metrics_core.registry.Kernel`
(ranking, calibration, dynamic-K, multi-label) from it (:func:`kernel_records`); the
discrimination metrics of §4 (AUROC, AUPRC, TPR at FPR) are written out in
:func:`classification_records`. Each appends :class:`MetricRecord` s to a :class:`RecordList`,
which takes each record's group and interpretation from the registry. Undefined values become
``None`` with ``defined: false``; a seed convention (one-class AUROC = 0.5) keeps its value,
flagged.
"""

from __future__ import annotations

import math

import numpy as np

from metrics_core import registry
from metrics_core.evaluation import kernels
from metrics_core.evaluation.intervals import Intervals
from metrics_core.evaluation.kernels import RunKernels, multilabel_values
from metrics_core.evaluation.result import MetricRecord
from metrics_core.metrics import dynamic_k, gate, outcomes
from metrics_core.metrics.confusion import confusion_from_counts
from metrics_core.metrics.uncertainty import wilson_interval
from metrics_core.registry import fmt_t

__all__ = ["RecordList", "classification_records", "counting_records", "fmt_t",
           "gate_records", "kernel_records", "multilabel_values"]

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
def classification_records(out: RecordList, ev, inter, op: Intervals, run: RunKernels,
                           intervals: dict[str, Intervals]):
    """The discrimination metrics (AUROC, AUPRC, TPR and its threshold at each FPR target:
    :func:`kernel_records`) and the confusion metrics at τ (:func:`counting_records`), §4.

    Returns the :class:`~metrics_core.metrics.confusion.Confusion` at τ.
    """
    cfg = inter.cfg
    kernel_records(out, "classification", run, intervals)
    table = outcomes.outcome_counts(ev.ds.y, inter.pred)
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


# ---------------------------------------------------------------------------------- §6
def gate_records(out: RecordList, ev, inter, op: Intervals) -> None:
    """Workload, screening and alert metrics of the gate, then its abstention view (§6): the
    registry's counting metrics of the gate's outcome table (:func:`counting_records`)."""
    ds, cfg = ev.ds, inter.cfg
    table = outcomes.outcome_counts(ds.y, gate.states_to_prediction(inter.states))
    counting_records(out, table, "gate", f"{ALL} @ {cfg.describe_gate()}", op)


# --------------------------------------------------------------------------- §3, §5, §7, §8
def kernel_records(out: RecordList, group: str, run: RunKernels,
                   intervals: dict[str, Intervals]) -> None:
    """The records of every metric of record ``group`` with a registry kernel
    (discrimination §4, ranking §3, calibration §5, dynamic-K §7, multi-label §8), in report
    order (:func:`~metrics_core.evaluation.kernels.record_order`), each as its spec says: the
    value from its kernel on the run (:class:`~metrics_core.evaluation.kernels.RunKernels`),
    its subset, its variant's wording, and the interval of its kind: Wilson (a proportion of
    its ``n`` queries or posts), the bootstrap (``intervals["data"]`` for a data-only kernel,
    ``["posts"]`` for the per-post ones, else ``["operating"]``), its kernel's own (Poisson,
    Wald) or none."""
    cfg = run.cfg
    for spec, name in kernels.record_order(registry.kernels(group), run.inter):
        kernel = spec.kernel
        variant = None if kernel.variant is None else kernels.VARIANTS[kernel.variant](cfg)
        where = kernels.subset(cfg, kernel.over)
        boot = intervals["data" if kernel.data_only
                         else "posts" if kernel.over == "posts" else "operating"]
        value, n, ci, defined = run.value(name)
        if spec.interval == "wilson":
            ci = (wilson(round(value * n), n) if n and value is not None
                  and math.isfinite(value) else None)
            out.add(name, value, where, n, ci=ci, ci_method="wilson", variant=variant,
                    defined=defined)
        elif spec.interval == "bootstrap":
            out.add_boot(name, value, where, n, boot, variant=variant, defined=defined)
        elif spec.interval is None:
            out.add(name, value, where, n, variant=variant, defined=defined)
        else:
            out.add(name, value, where, n, ci=ci, ci_method=spec.interval, variant=variant,
                    defined=defined)


def k_summary(inter, y) -> dynamic_k.KSummary:
    return dynamic_k.k_summary(inter.k, states=inter.states, y=y)
