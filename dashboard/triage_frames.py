"""The Triage page's tables: seed 004's metrics of a triage file and the report's parts
(latency, tools, trials), as DataFrames the page shows."""

from __future__ import annotations

import math

import pandas as pd

from metrics_core.report.wording import fmt, kind_of

__all__ = ["latency_frame", "tools_frame", "triage_class_frame", "triage_frame", "trials_frame"]


def triage_frame(m) -> pd.DataFrame:
    """Every seed 004 metric (class names substituted) with its Wilson interval, and why it
    is undefined where it is."""
    from metrics_core.metrics.gate import ABSTENTION_KEYS

    rows = []
    for name in ABSTENTION_KEYS:
        ci = m.ci(name)
        lo, hi = ci if ci is not None else (math.nan, math.nan)
        rows.append({"metric": m.key(name), "value": getattr(m, name), "ci95_lo": lo,
                     "ci95_hi": hi, "undefined": m.reason(name) or ""})
    return pd.DataFrame(rows)


def triage_class_frame(m) -> pd.DataFrame:
    """Precision, recall, F1, abstention and coverage per class, and why any is undefined."""
    rows = []
    for side, label, n in (("pos", m.positive_name, m.n_pos), ("neg", m.negative_name, m.n_neg)):
        row = {"class": label, "n": n}
        reasons = []
        for column in ("precision", "recall", "f1", "abstain_rate", "coverage"):
            row[column] = getattr(m, f"{column}_{side}")
            why = m.reason(f"{column}_{side}")
            if why is not None:
                reasons.append(f"{column}: {why}")
        rows.append({**row, "undefined": "; ".join(reasons)})
    return pd.DataFrame(rows)


def latency_frame(report) -> pd.DataFrame:
    return pd.DataFrame([{"timing": c, "n": s.n, "mean": s.mean, "p50": s.p50, "p95": s.p95}
                         for c, s in report.latency.items()])


def tools_frame(report) -> pd.DataFrame:
    return pd.DataFrame([{"column": c, "mean": value} for c, value in report.tools.items()])


def trials_frame(report) -> pd.DataFrame:
    """Mean ± std over the trials; a metric undefined in every trial, or in all but one,
    says so."""
    rows = []
    for k, a in report.across_trials.items():
        if k.startswith(("n_", "tp", "fp", "tn", "fn")):
            continue
        note = ("undefined in every trial" if a.n_trials == 0
                else "std needs two trials with a value" if a.n_trials == 1 else "")
        rows.append({"metric": k, "mean": a.mean, "std": a.std, "trials": a.n_trials,
                     "mean ± std": f"{fmt(a.mean, kind_of(k))} ± {fmt(a.std, kind_of(k))}",
                     "undefined": note})
    return pd.DataFrame(rows)
