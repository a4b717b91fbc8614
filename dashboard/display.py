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
    "small_n_note",
    "targets_frame",
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
    from dashboard import state

    st.caption(escape_markdown(state.describe_thresholds(v.config)) + ". Exploratory: moved "
               "or found on the data shown, so the numbers computed with it are optimistic; "
               "pre-specified: the default, typed in, or loaded from settings or a link.",
               help="STARD 2015: report whether cut-offs were pre-specified or exploratory.")


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


def _no_interval(r) -> str:
    """Why a record has no interval."""
    unit = registry.spec(r.name).unit if r.name else ""
    if unit == "count":
        return "count of these data (no sampling interval)"
    if r.name.startswith("threshold@"):
        return "a threshold chosen on these data"
    return "" if r.defined else "undefined"


def _record_row(r) -> dict:
    lo, hi = r.ci95 if r.ci95 is not None else (math.nan, math.nan)
    return {"metric": r.name, "value": math.nan if r.value is None else r.value,
            "ci95_lo": lo, "ci95_hi": hi, "ci_method": r.ci_method or _no_interval(r),
            "subset": r.subset, "variant": r.variant or "", "n": r.n,
            "status": _undefined_note(r), "interpretation": r.interpretation}


def gate_card_frame(gate, targets: pd.DataFrame | None = None) -> pd.DataFrame:
    """The gate's metrics with Wilson intervals, their denominators and the run's targets
    (met only when the whole interval clears them)."""
    by_metric = {} if targets is None else {r["metric"]: r for r in targets.to_dict("records")}
    denominators = {"screening_sensitivity": gate.n_pos, "alert_precision": gate.count_pos}
    rows = []
    for name in GATE_LABELS:
        lo, hi = gate.ci(name) or (math.nan, math.nan)
        t = by_metric.get(name)
        n = denominators.get(name, gate.n)
        rows.append({
            "metric": GATE_LABELS[name], "value": getattr(gate, name), "ci95_lo": lo,
            "ci95_hi": hi, "n": n, "small_n": small_n_note(n),
            "target": t["target"] if t is not None else "",
            "result": "" if t is None else t["status"],
        })
    return pd.DataFrame(rows)


def targets_frame(targets: pd.DataFrame) -> pd.DataFrame:
    """The targets table for the page: plain labels and a small-n flag."""
    out = targets.copy()
    if len(out):
        out.insert(0, "label", out["metric"].map(registry.label))
        out["small_n"] = out["n"].map(small_n_note)
    return out


def small_n_note(n) -> str:
    """A warning for an estimate on fewer than :data:`~metrics_core.targets.MIN_N` cases."""
    from metrics_core.targets import MIN_N

    if n is None or (isinstance(n, float) and math.isnan(n)):
        return ""
    return f"n = {int(n)} < {MIN_N}: wide interval" if int(n) < MIN_N else ""


def ci_text(lo, hi, method: str = "") -> str:
    """``95% CI 0.571 – 0.624 (Wilson)``; ``no interval`` when there is none."""
    if lo is None or hi is None or not (math.isfinite(lo) and math.isfinite(hi)):
        return "no interval"
    return f"95% CI {fmt(lo)} – {fmt(hi)}" + (f" ({method})" if method else "")


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
    for col, (name, count, rate, key) in zip(cols, (
            ("NEG (auto-cleared)", g.count_neg, g.neg_rate, "neg_rate"),
            ("UNCERTAIN (review)", g.count_uncertain, g.uncertain_rate, "uncertain_rate"),
            ("POS (alert)", g.count_pos, g.pos_rate, "pos_rate")), strict=True):
        col.metric(name, f"{count:,}", help=f"share of queries: {fmt(rate)}", border=True)
        lo, hi = g.ci(key) or (None, None)
        col.caption(f"{fmt(rate)} of {g.n:,} queries; {ci_text(lo, hi, 'Wilson')}")
    targets = v.evaluation.targets
    by_metric = {r["metric"]: r for r in targets.to_dict("records")}
    cols = st.columns(3)
    for col, name in zip(cols, ("screening_sensitivity", "screening_fn_per_1000",
                                "alert_precision"), strict=True):
        t = by_metric.get(name)
        lo, hi = g.ci(name) or (None, None)
        text = ci_text(lo, hi, "Wilson")
        if t is None:
            col.metric(GATE_LABELS[name], fmt(getattr(g, name)), border=True, help=text)
        else:
            met = t["status"] == "met (whole interval)"
            col.metric(GATE_LABELS[name], fmt(getattr(g, name)),
                       delta=f"{t['status']}: target {t['target']}",
                       delta_color="green" if met else "red" if t["status"] == "not met"
                       else "orange", delta_arrow="off", border=True, help=text)
        col.caption(text)
    words = per_thousand(g)
    st.markdown(words.sentence("queries (post × criterion)"))
    st.caption("Per 1,000 with 95% Wilson intervals: flagged "
               f"{ci_text(*(g.ci('alert_rate_per_1000') or (None, None)))[7:]}, sent to review "
               f"{_per_1000_ci(g, 'uncertain_rate')}, auto-cleared {_per_1000_ci(g, 'neg_rate')}, "
               f"missed {ci_text(*(g.ci('screening_fn_per_1000') or (None, None)))[7:]}.")
    show_table(gate_card_frame(g, targets), key="gate_card_table",
               column_config=RECORD_COLUMN_CONFIG)


def _per_1000_ci(g, name: str) -> str:
    lo, hi = g.ci(name) or (None, None)
    return "no interval" if lo is None else ci_text(lo * 1000, hi * 1000)[7:]


def tpr_frame(evaluation) -> pd.DataFrame:
    """TPR at the FPR targets, with the achieved FPR and the threshold (contract §4)."""
    from metrics_core.sections import fmt_t

    rows = []
    for t in evaluation.tpr_at_fpr:
        ci = evaluation.record(f"tpr@fpr={fmt_t(t.target)}").ci95
        rows.append({
            "target FPR": t.target, "TPR": t.tpr,
            "95% CI low": None if ci is None else ci[0],
            "95% CI high": None if ci is None else ci[1], "achieved FPR": t.fpr,
            "threshold": "all negative" if not math.isfinite(t.threshold)
            else f"{t.threshold:.6g}", "defined": t.defined})
    return pd.DataFrame(rows)


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
    from metrics_core.uncertainty import wilson_interval

    def ci(k, n) -> str:
        if n <= 0:
            return "—"
        lo, hi = wilson_interval(int(k), int(n))
        return f"[{float(lo):.3f}, {float(hi):.3f}]"

    return pd.DataFrame([{"point": label, "threshold": c.threshold, "TPR (sensitivity)":
                          c.sensitivity, "TPR 95% CI": ci(c.tp, c.tp + c.fn), "FPR": c.fpr,
                          "FPR 95% CI": ci(c.fp, c.fp + c.tn), "precision": c.precision,
                          "precision 95% CI": ci(c.tp, c.tp + c.fp),
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
