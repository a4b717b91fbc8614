"""Targets of a screening tool, and whether a run meets them with its interval (seed 003).

A target is ``metric op value`` (``>=``, ``>``, ``<=``, ``<``). A run *meets* a target only
when the whole 95 % interval clears it; a point estimate that clears it with an interval that
does not is reported as such, and a metric without an interval says so.

>>> parse_target("ece<0.05")
('ece', '<', 0.05)
"""

from __future__ import annotations

import operator
import re
from types import MappingProxyType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas


__all__ = ["DEFAULT_TARGETS", "ECE_BANDS", "MIN_N", "ece_band", "parse_target", "target_table"]

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
_FORM = re.compile(r"^\s*([a-z_0-9@=.]+?)\s*(>=|<=|>|<)\s*([-+0-9.eE]+)\s*$")


def parse_target(text: str) -> tuple[str, str, float]:
    """``"auroc>=0.85"`` -> ``("auroc", ">=", 0.85)`` (ValueError naming the form)."""
    m = _FORM.match(text)
    if not m:
        raise ValueError(f"target {text!r} is not of the form metric>=value (or >, <=, <)")
    return m.group(1), m.group(2), float(m.group(3))


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
