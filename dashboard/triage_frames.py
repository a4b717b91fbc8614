"""The Triage page's tables: seed 004's metrics of a triage file and the report's parts
(latency, tools, trials), as DataFrames the page shows."""

from __future__ import annotations

import math

import pandas as pd

from metrics_core.report.wording import fmt, kind_of

__all__ = ["latency_frame", "tools_frame", "triage_class_frame", "triage_frame", "trials_frame"]


def triage_frame(m) -> pd.DataFrame:
    """Every seed 004 metric (class names substituted) with its Wilson interval."""
    from metrics_core.metrics.gate import ABSTENTION_KEYS

    rows = []
    for name in ABSTENTION_KEYS:
        ci = m.ci(name)
        lo, hi = ci if ci is not None else (math.nan, math.nan)
        rows.append({"metric": m.key(name), "value": getattr(m, name), "ci95_lo": lo,
                     "ci95_hi": hi})
    return pd.DataFrame(rows)


def triage_class_frame(m) -> pd.DataFrame:
    """Precision, recall, F1, abstention and coverage per class."""
    rows = []
    for side, label, n in (("pos", m.positive_name, m.n_pos), ("neg", m.negative_name, m.n_neg)):
        rows.append({"class": label, "n": n,
                     "precision": getattr(m, f"precision_{side}"),
                     "recall": getattr(m, f"recall_{side}"), "f1": getattr(m, f"f1_{side}"),
                     "abstain_rate": getattr(m, f"abstain_rate_{side}"),
                     "coverage": getattr(m, f"coverage_{side}")})
    return pd.DataFrame(rows)


def latency_frame(report) -> pd.DataFrame:
    return pd.DataFrame([{"timing": c, "n": s.n, "mean": s.mean, "p50": s.p50, "p95": s.p95}
                         for c, s in report.latency.items()])


def tools_frame(report) -> pd.DataFrame:
    return pd.DataFrame([{"column": c, "mean": value} for c, value in report.tools.items()])


def trials_frame(report) -> pd.DataFrame:
    return pd.DataFrame([{"metric": k, "mean": a.mean, "std": a.std, "trials": a.n_trials,
                          "mean ± std": f"{fmt(a.mean, kind_of(k))} ± {fmt(a.std, kind_of(k))}"}
                         for k, a in report.across_trials.items()
                         if not k.startswith(("n_", "tp", "fp", "tn", "fn"))])
