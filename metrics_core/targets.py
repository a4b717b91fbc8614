"""Targets of a screening tool, and whether a run meets them with its interval (seed 003).

A target is ``metric op value`` (``>=``, ``>``, ``<=``, ``<``). A run *meets* a target only
when the whole 95 % interval clears it; a point estimate that clears it with an interval that
does not is reported as such, and a metric without an interval says so.

The metric is a name of the registry, in any case (``AUROC`` is ``auroc``); a family member
names its cut-off or FPR (``recall@10``, ``tpr@fpr=0.05``). An unknown name is an error that
lists the valid ones, in the CLI, settings.json and the app alike.

>>> parse_target("ece<0.05")
('ece', '<', 0.05)
>>> parse_target("AUROC >= 0.85"), parse_target("tpr@fpr=0.1>=0.5")
(('auroc', '>=', 0.85), ('tpr@fpr=0.10', '>=', 0.5))
"""

from __future__ import annotations

import math
import operator
import re
from types import MappingProxyType
from typing import TYPE_CHECKING

from metrics_core import registry
from metrics_core.registry import fmt_t

if TYPE_CHECKING:
    import pandas


__all__ = ["DEFAULT_TARGETS", "ECE_BANDS", "MIN_N", "TargetNameError", "canonical_targets",
           "ece_band", "parse_target", "target_table", "valid_names"]

#: Seed 004's reading of ECE: (upper bound, words); the last band is open-ended.
ECE_BANDS = ((0.05, "well calibrated"), (0.15, "moderately calibrated"),
             (float("inf"), "poorly calibrated"))

#: The targets of seed 003: discrimination, calibration, evidence and the gate (the default of
#: ``EvalConfig.targets``, where a run's own targets are set).
DEFAULT_TARGETS = ("auroc>=0.85", "auprc>=0.55", "ece<0.05", "brier<0.1",
                   "evidence_recall>=0.70", "screening_sensitivity>=0.995",
                   "screening_fn_per_1000<=5", "alert_precision>=0.90")
#: Fewer cases than this in an interval's denominator: the interval is wide and the value
#: unstable; tables flag such cells (STARD 2015 asks for the numbers behind each estimate).
MIN_N = 30
_OPS = MappingProxyType({">=": operator.ge, ">": operator.gt, "<=": operator.le,
                         "<": operator.lt})
_FORM = re.compile(r"^\s*([a-z_0-9@=.]+?)\s*(>=|<=|>|<)\s*([-+0-9.eE]+)\s*$", re.IGNORECASE)


def valid_names(ks=None, tpr_fprs=None) -> str:
    """The metric names a target may use, in words (the families with the run's cut-offs and
    FPR targets when given)."""
    plain = [s.name for s in registry.SPECS if not s.family]
    ranking = [s.name for s in registry.SPECS if s.family and s.name.endswith("@")]
    fpr = [s.name for s in registry.SPECS if s.family and s.name.endswith("=")]
    k_text = "K a cut-off" if ks is None else "K one of " + ", ".join(map(str, ks))
    t_text = ("T an FPR target" if tpr_fprs is None
              else "T one of " + ", ".join(fmt_t(t) for t in tpr_fprs))
    return (", ".join(plain) + "; " + ", ".join(f"{n}K" for n in ranking) + f" ({k_text}); "
            + ", ".join(f"{n}T" for n in fpr) + f" ({t_text})")


def _canonical_name(name: str, text: str) -> str:
    """The registry's spelling of a target's metric (lower case, cut-off as an integer, FPR
    as the records write it); ValueError listing the valid names."""
    name = name.lower()
    try:
        spec = registry.spec(name)
    except KeyError:
        raise TargetNameError(text, _unknown(name)) from None
    if not spec.family:
        return name
    param = name[len(spec.name):]
    try:
        if spec.name.endswith("@"):
            k = int(param)
            if k < 1 or str(k) != param.lstrip("0") or param.startswith("-"):
                raise ValueError
            return f"{spec.name}{k}"
        t = float(param)
        if not 0.0 <= t <= 1.0:
            raise ValueError
        return f"{spec.name}{fmt_t(t)}"
    except ValueError:
        what, example = (("a cut-off K >= 1", "10") if spec.name.endswith("@")
                         else ("an FPR in [0, 1]", "0.05"))
        raise TargetNameError(text, f"{spec.name}{param or '…'} needs {what} after "
                                    f"{spec.name!r}, e.g. {spec.name}{example}") from None


class TargetNameError(ValueError):
    """A target whose form is right but whose metric is no metric of the registry; ``rule``
    says why (with the closest names, or all valid names)."""

    def __init__(self, text: str, rule: str):
        super().__init__(f"target {text!r}: {rule}")
        self.rule = rule


def _unknown(name: str) -> str:
    """``no metric is called 'x'`` with the closest names, else every valid name."""
    import difflib

    examples = {"=": "0.05", "@": "10"}
    names = [s.name + examples.get(s.name[-1], "") for s in registry.SPECS]
    close = difflib.get_close_matches(name, names, n=3)
    if close:
        return f"no metric is called {name!r}; did you mean {', '.join(close)}?"
    return f"no metric is called {name!r}; valid metrics: {valid_names()}"


def parse_target(text: str) -> tuple[str, str, float]:
    """``"auroc>=0.85"`` -> ``("auroc", ">=", 0.85)``: the metric in the registry's spelling
    (case-insensitive), ValueError naming the form or the valid metric names."""
    m = _FORM.match(str(text))
    if not m:
        raise ValueError(f"target {text!r} is not of the form metric>=value (or >, <=, <)")
    value = float(m.group(3))
    if not math.isfinite(value):
        raise ValueError(f"target {text!r}: the value must be a finite number")
    return _canonical_name(m.group(1), text), m.group(2), value


def canonical_targets(targets, *, ks=None, tpr_fprs=None) -> tuple[str, ...]:
    """Each target checked and written with the registry's metric name (``AUROC>=0.85`` ->
    ``auroc>=0.85``, value as given); with ``ks`` / ``tpr_fprs``, a family member must be one
    the run computes (``recall@7`` with cut-offs 1, 3, 5, 10, 20 is an error naming them)."""

    out = []
    for text in targets:
        name, op, _ = parse_target(text)
        m = _FORM.match(str(text))
        if "@" in name and not name.startswith(("tpr@", "threshold@")) and ks is not None \
                and int(name.rpartition("@")[2]) not in set(ks):
            raise ValueError(f"target {text!r}: {name} is not computed (the run's cut-offs "
                             f"K: {', '.join(map(str, ks))})")
        if "=" in name and tpr_fprs is not None \
                and name.rpartition("=")[2] not in {fmt_t(t) for t in tpr_fprs}:
            raise ValueError(f"target {text!r}: {name} is not computed (the run's FPR "
                             f"targets: {', '.join(fmt_t(t) for t in tpr_fprs)})")
        out.append(f"{name}{op}{m.group(3)}")
    return tuple(out)


def target_table(records, targets=DEFAULT_TARGETS) -> pandas.DataFrame:
    """One row per target: value, interval and status (met / not met / undefined, said so)."""
    import pandas as pd  # here, not at the top: the command line's start imports this module

    by_name = {r.name: r for r in records}
    rows = []
    for text in targets:
        name, op, bound = parse_target(text)
        r = by_name.get(name)
        value = None if r is None else r.value
        ci = None if r is None else r.ci95
        holds = _OPS[op]
        if value is None:
            status = "undefined" if r is not None else "not computed"
        elif not holds(value, bound):
            status = "not met"
        elif ci is None:
            status = "met by the point estimate (no interval)"
        elif holds(ci[0], bound) and holds(ci[1], bound):
            status = "met (whole interval)"
        else:
            status = "met by the point estimate, not by the whole interval"
        rows.append({"metric": name, "target": f"{op} {bound:g}", "value": value,
                     "ci_lo": None if ci is None else ci[0],
                     "ci_hi": None if ci is None else ci[1], "status": status,
                     "n": None if r is None else r.n})
    return pd.DataFrame(rows)


def _band_of(value: float) -> str:
    for upper, words in ECE_BANDS:
        if value < upper or (upper == 0.15 and value <= upper):
            return words
    return ECE_BANDS[-1][1]


def ece_band(value, ci=None) -> str:
    """Seed 004's band of an ECE (< 0.05 well, 0.05-0.15 moderately, > 0.15 poorly
    calibrated), judged on the whole interval when there is one.

    >>> ece_band(0.03, (0.02, 0.04))
    'well calibrated'
    >>> print(ece_band(0.045, (0.03, 0.06)))
    well calibrated by the point estimate; the interval reaches moderately calibrated
    >>> ece_band(None)
    'undefined'
    """
    if value is None:
        return "undefined"
    band = _band_of(float(value))
    if ci is None:
        return f"{band} (point estimate, no interval)"
    lo, hi = (_band_of(float(v)) for v in ci)
    if lo == hi == band:
        return band
    other = hi if hi != band else lo
    return f"{band} by the point estimate; the interval reaches {other}"
