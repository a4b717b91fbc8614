"""Shared page parts: the page header with the data label, number formatting, the gate card,
tables and download buttons. Formatting only; every number comes from metrics_core.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import pandas as pd
import streamlit as st

from dashboard import export
from dashboard.safe_text import escape_markdown
from metrics_core import registry

__all__ = [
    "GATE_LABELS",
    "HEADLINE",
    "PLOTLY_CONFIG",
    "RECORD_COLUMN_CONFIG",
    "TABLE_ROWS",
    "checks_frame",
    "dash",
    "dashed",
    "download_csv",
    "fmt",
    "gate_card",
    "gate_card_frame",
    "group_frame",
    "headline_frame",
    "latency_frame",
    "metric_tile",
    "operating_points_frame",
    "page_header",
    "plot",
    "ranking_frame",
    "records_frame",
    "show_table",
    "tools_frame",
    "tpr_frame",
    "triage_class_frame",
    "triage_frame",
    "trials_frame",
]

#: Plotly options: no logo, no link to external editors (nothing leaves the page).
PLOTLY_CONFIG = {"displaylogo": False, "showLink": False, "showSendToCloud": False}
#: Rows shown in an on-page table; the download holds all rows.
TABLE_ROWS = 1000

#: Column formats of the record tables (values keep full precision in the data).
RECORD_COLUMN_CONFIG = {
    "value": st.column_config.NumberColumn("value", format="%.4f"),
    "ci95_lo": st.column_config.NumberColumn("95% CI low", format="%.4f"),
    "ci95_hi": st.column_config.NumberColumn("95% CI high", format="%.4f"),
    "interpretation": st.column_config.TextColumn("interpretation", width="large"),
}

#: The gate card's metrics and their labels (from the metric registry).
GATE_LABELS = {name: registry.label(name) for name in (
    "screening_sensitivity", "screening_fn_per_1000", "alert_precision", "alert_rate_per_1000",
    "neg_rate", "uncertain_rate", "pos_rate")}

#: The overview's headline metrics (the registry's headline flags, at K = 10 and FPR targets).
HEADLINE = tuple(registry.headline(
    [s.name for s in registry.SPECS if not s.family]
    + ["tpr@fpr=0.01", "tpr@fpr=0.05", "recall@10", "ndcg@10", "map@10"]))


def fmt(value, digits: int = 4) -> str:
    """A number as shown on the page: fixed decimals, 'undefined' for None / NaN."""
    if value is None:
        return "undefined"
    value = float(value)
    if not math.isfinite(value):
        return "undefined"
    if value == int(value):
        return f"{int(value):,}"
    return f"{value:.{digits}f}"


def dash(value, digits: int = 4) -> str:
    """A RAG metric value as shown: fixed decimals, "—" when undefined (never 0; contract §12).

    >>> dash(float("nan")), dash(0.5), dash(None)
    ('—', '0.5000', '—')
    """
    if value is None:
        return "—"
    value = float(value)
    return f"{value:.{digits}f}" if math.isfinite(value) else "—"


def dashed(frame: pd.DataFrame, columns) -> pd.DataFrame:
    """``frame`` with the given float columns formatted by :func:`dash` (text columns)."""
    out = frame.copy()
    for column in columns:
        out[column] = [dash(v) for v in frame[column]]
    return out


def page_header(title: str, v, *, caption: str | None = None) -> None:
    """Page title, the data label (synthetic data say so) and the active filter."""
    st.title(title)
    source_label = escape_markdown(v.source.label)
    if v.source.synthetic:
        st.info(f"**{source_label}**", icon=":material/science:")
    else:
        st.caption(f"Data: {source_label}")
    text = f"Evaluated: {escape_markdown(v.filters.describe())}"
    if caption:
        text += f" · {caption}"
    st.caption(text)


def plot(fig, *, key: str) -> None:
    """Show a plotly figure (no logo, no external resources)."""
    st.plotly_chart(fig, config=PLOTLY_CONFIG, key=key)


def show_table(frame: pd.DataFrame, *, key: str, hide_index: bool = True,
               column_config: dict | None = None, all_rows: bool = False) -> None:
    """An on-page table (first :data:`TABLE_ROWS` rows; the downloads hold everything).

    The table sits in a container keyed ``key`` (CSS class ``st-key-<key>``), so tests and
    browser automation find it by that key.
    """
    with st.container(key=key):
        if len(frame) > TABLE_ROWS:
            st.caption(f"Showing the first {TABLE_ROWS:,} of {len(frame):,} rows; the download "
                       f"holds all of them.")
            frame = frame.head(TABLE_ROWS)
        # all_rows: tall enough for every row (no inner scrolling; short tables only).
        height = 35 * (len(frame) + 1) + 3 if all_rows else "auto"
        st.dataframe(frame, hide_index=hide_index, column_config=column_config, height=height)
        if frame.isna().to_numpy().any():
            st.caption("Empty cells (None) are undefined (a 0/0 ratio, or one class present) "
                       "or not computed; they are never shown as 0.")


def download_csv(label: str, frame_fn: Callable[[], pd.DataFrame], file_name: str, *,
                 key: str, index: bool = False) -> None:
    """A CSV download built on click, with spreadsheet formulas neutralised."""
    st.download_button(label, data=lambda: export.csv_bytes(frame_fn(), index=index),
                       file_name=file_name, mime="text/csv", key=key, on_click="ignore",
                       icon=":material/download:")


# ---------------------------------------------------------------------------- tables
def _undefined_note(record) -> str:
    if record.defined:
        return ""
    if record.name in ("auroc", "auprc") and record.value is not None:
        return "undefined (one class)"
    return "undefined"


def headline_frame(evaluation, names=HEADLINE) -> pd.DataFrame:
    """Metric, value, 95% CI, subset / protocol, n, interpretation (seed 003 §10.2)."""
    rows = []
    for name in names:
        try:
            r = evaluation.record(name)
        except KeyError:
            continue
        rows.append(_record_row(r))
    return pd.DataFrame(rows, columns=_RECORD_COLUMNS)


def records_frame(evaluation) -> pd.DataFrame:
    """Every record of the evaluation in the headline layout."""
    return pd.DataFrame([_record_row(r) for r in evaluation.records], columns=_RECORD_COLUMNS)


_RECORD_COLUMNS = ["metric", "value", "ci95_lo", "ci95_hi", "ci_method", "subset", "variant",
                   "n", "status", "interpretation"]


def _record_row(r) -> dict:
    lo, hi = r.ci95 if r.ci95 is not None else (math.nan, math.nan)
    return {"metric": r.name, "value": math.nan if r.value is None else r.value,
            "ci95_lo": lo, "ci95_hi": hi, "ci_method": r.ci_method or "",
            "subset": r.subset, "variant": r.variant or "", "n": r.n,
            "status": _undefined_note(r), "interpretation": r.interpretation}


def gate_card_frame(gate) -> pd.DataFrame:
    """The gate's metrics with Wilson intervals and the seed 003 targets (pass / fail)."""
    targets = {t.metric: t for t in gate.targets()}
    rows = []
    for name in GATE_LABELS:
        lo, hi = gate.ci(name) or (math.nan, math.nan)
        t = targets.get(name)
        rows.append({
            "metric": GATE_LABELS[name], "value": getattr(gate, name), "ci95_lo": lo,
            "ci95_hi": hi,
            "target": f"{t.comparison} {t.target:g}" if t is not None else "",
            "result": "" if t is None else ("n/a (undefined)" if t.passed is None
                                            else "pass" if t.passed else "fail"),
        })
    return pd.DataFrame(rows)


def checks_frame(evaluation) -> pd.DataFrame:
    """The consistency checks with pass / fail / n/a."""
    return pd.DataFrame([{"check": c.name,
                          "result": "n/a" if c.passed is None else "pass" if c.passed
                          else "fail", "detail": c.detail} for c in evaluation.checks])


def gate_card(v) -> None:
    """The three-state gate card: counts and rates, the targets, and the same in words."""
    from metrics_core.gate import per_thousand

    g = v.evaluation.gate
    c = v.config
    st.subheader("Three-state gate")
    st.caption(f"NEG if p < τ_neg = {c.tau_neg:g}; UNCERTAIN if τ_neg ≤ p < τ_pos = "
               f"{c.tau_pos:g}; POS if p ≥ τ_pos. All queries (contract §6).")
    cols = st.columns(3)
    for col, (name, count, rate) in zip(cols, (
            ("NEG (auto-cleared)", g.count_neg, g.neg_rate),
            ("UNCERTAIN (review)", g.count_uncertain, g.uncertain_rate),
            ("POS (alert)", g.count_pos, g.pos_rate)), strict=True):
        col.metric(name, f"{count:,}", help=f"share of queries: {fmt(rate)}", border=True)
        col.caption(f"{fmt(rate)} of {g.n:,} queries")
    cols = st.columns(3)
    for col, t in zip(cols, g.targets(), strict=True):
        verdict = "n/a" if t.passed is None else "pass" if t.passed else "fail"
        ci = g.ci(t.metric)
        ci_text = f"95% CI {fmt(ci[0])} – {fmt(ci[1])} (Wilson)" if ci else "no interval"
        col.metric(GATE_LABELS[t.metric], fmt(t.value),
                   delta=f"{verdict}: target {t.comparison} {t.target:g}",
                   delta_color={"pass": "green", "fail": "red"}.get(verdict, "gray"),
                   delta_arrow="off", border=True, help=ci_text)
        col.caption(ci_text)
    words = per_thousand(g)
    st.markdown(words.sentence("queries (post × criterion)"))
    show_table(gate_card_frame(g), key="gate_card_table", column_config=RECORD_COLUMN_CONFIG)


def tpr_frame(evaluation) -> pd.DataFrame:
    """TPR at the FPR targets, with the achieved FPR and the threshold (contract §4)."""
    return pd.DataFrame([{
        "target FPR": t.target, "TPR": t.tpr, "achieved FPR": t.fpr,
        "threshold": "all negative" if not math.isfinite(t.threshold) else f"{t.threshold:.6g}",
        "defined": t.defined} for t in evaluation.tpr_at_fpr])


def group_frame(evaluation, group: str) -> pd.DataFrame:
    """The records of one group (e.g. ``"confusion"``, ``"multilabel"``) as a table."""
    return pd.DataFrame([_record_row(r) for r in evaluation.records if r.group == group],
                        columns=_RECORD_COLUMNS)


def ranking_frame(evaluation) -> pd.DataFrame:
    """Mean, median, P25, P75, std and n of every ranking metric, one row per metric@K."""
    rows = []
    for name, s in evaluation.ranking_summary.items():
        head, _, k = name.partition("@")
        rows.append({"metric": head, "K": int(k) if k.isdigit() else None, "name": name,
                     "mean": s.mean, "median": s.median, "p25": s.p25, "p75": s.p75,
                     "std": s.std, "n": s.n})
    frame = pd.DataFrame(rows)
    return frame.astype({"K": "Int64"})


def metric_tile(column, evaluation, name: str, label: str) -> None:
    """One record as a metric tile: value, and its 95% CI as caption."""
    r = evaluation.record(name)
    column.metric(label, fmt(r.value), border=True, help=r.interpretation or None)
    if r.ci95 is not None:
        column.caption(f"95% CI {fmt(r.ci95[0])} – {fmt(r.ci95[1])} ({r.ci_method})")
    else:
        column.caption(f"n = {r.n:,} · {r.subset}")


def operating_points_frame(points: dict) -> pd.DataFrame:
    """The operating points drawn on ROC / PR: threshold, TPR, FPR, precision, counts."""
    return pd.DataFrame([{"point": label, "threshold": c.threshold, "TPR (sensitivity)":
                          c.sensitivity, "FPR": c.fpr, "precision": c.precision,
                          "TP": c.tp, "FP": c.fp, "TN": c.tn, "FN": c.fn}
                         for label, c in points.items()])


# ------------------------------------------------------------------------------ triage
def triage_frame(m) -> pd.DataFrame:
    """Every seed 004 metric (class names substituted) with its Wilson interval."""
    from metrics_core.gate import ABSTENTION_KEYS

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
                          "mean ± std": f"{fmt(a.mean)} ± {fmt(a.std)}"}
                         for k, a in report.across_trials.items()
                         if not k.startswith(("n_", "tp", "fp", "tn", "fn"))])
