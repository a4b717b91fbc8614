"""Triage (contract §6, abstention view; seed 004, docs/seeds/004-triage-abstention-metrics.txt):
coverage, accuracy, slip and false-flag rates, per-class metrics, abstention, latency, tool usage
and calibration, with Wilson intervals."""

import json

import streamlit as st

from dashboard import data, display, risk_coverage_view, triage_frames
from dashboard.safe_text import escape_markdown
from metrics_core import registry
from metrics_core.triage import triage_metrics


def scores(*columns) -> dict:
    """Score format for columns that only ever hold proportions or scores (a column whose
    values happen to be whole, e.g. every rate 0 or 1, would otherwise read as counts)."""
    return {c: st.column_config.NumberColumn(display.COLUMN_LABELS.get(c) or registry.label(c),
                                             format=display.COLUMN_FORMATS["score"])
            for c in columns}


v = data.view()
source = v.source
st.title("Triage")
if source.triage is None:
    st.info("Upload a triage file (one row per sample: label, prediction with an abstain "
            "class, optional confidence, timings and tool usage) to see this view.")
    st.stop()
if source.synthetic:
    st.info(f"**{escape_markdown(source.triage_label)}**", icon=":material/science:")
else:
    st.caption(f"Data: {escape_markdown(source.triage_label)}")

report = triage_metrics(source.triage)
m = report.metrics
pos, neg = report.config.positive_name, report.config.negative_name
st.caption(escape_markdown(f"{report.n:,} rows; positive class “{pos}”, negative class “{neg}”, "
                           f"abstain “{report.config.abstain_name}”."))

cols = st.columns(4)
for col, (name, label) in zip(cols, (
        ("coverage", "Coverage"), ("accuracy_answered", "Accuracy (answered)"),
        ("slip_rate", f"{pos} slip rate"), ("false_flag_rate", f"{neg} false-flag rate")),
        strict=True):
    value = getattr(m, name)
    ci = m.ci(name)
    col.metric(label, display.fmt(value), border=True)
    why = m.reason(name)
    col.caption(escape_markdown(f"undefined: {why}") if why is not None
                else display.ci_text(*ci, "Wilson") if ci else "no interval")
    across = report.across_trials.get(m.key(name))
    if across is not None:
        col.caption(f"per trial: {display.fmt(across.mean)} ± {display.fmt(across.std)} "
                    f"({across.n_trials} trials)")
if report.trials:
    st.warning(f"These {report.n:,} rows hold {len(report.trials)} trials of the same samples. "
               "Pooled values and their intervals (Wilson, and the risk–coverage bootstrap) "
               "treat every row as independent, so the intervals are too narrow; the "
               "across-trials table below (mean ± std, ddof = 1) is the one to quote.",
               icon=":material/info:")

st.subheader("All metrics")
display.show_table(triage_frames.triage_frame(m), key="triage_metrics_table",
                   column_config=scores("value", "ci95_lo", "ci95_hi"))

left, right = st.columns(2)
with left:
    st.subheader("Per class")
    display.show_table(triage_frames.triage_class_frame(m), key="triage_class_table",
                       column_config=scores("precision", "recall", "f1", "abstain_rate",
                                            "coverage"))
with right:
    st.subheader("Latency (seconds)")
    if report.latency:
        display.show_table(triage_frames.latency_frame(report), key="triage_latency_table")
    else:
        st.caption("The file has no timing column (a column named *_seconds).")
    if report.tools:
        st.subheader("Tool usage (mean per sample)")
        display.show_table(triage_frames.tools_frame(report), key="triage_tools_table")

if report.across_trials:
    st.subheader("Across trials (mean ± std, ddof = 1)")
    display.show_table(triage_frames.trials_frame(report), key="triage_trials_table")

st.download_button("Triage report (JSON)", data=lambda: json.dumps(report.to_dict(), indent=2),
                   file_name="triage_report.json", mime="application/json",
                   key="download_triage", on_click="ignore", icon=":material/download:")

st.subheader("Risk–coverage")
risk_coverage_view.show(report.risk_coverage, key="triage_risk_coverage_chart",
                        explain="The answers ranked by their confidence, most confident "
                                "first; the abstentions never answer, so the curve ends at "
                                "the coverage.")
