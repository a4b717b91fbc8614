"""Overview, the meeting's first page: whether the model meets its targets (judged on the
intervals), the numbers a clinician asks about, the ROC curve with its band, then the data,
every metric and the consistency checks."""

import streamlit as st

from dashboard import adjudication, chart_data, data, display, live_charts
from metrics_core.report.figures.curves import operating_point

v = data.view()
display.page_header("Overview", v)
ev = v.evaluation
s = ev.summary

st.subheader("Does the model meet its targets?")
verdicts = display.verdict_frame(ev)
summary = display.verdict_summary(verdicts)
if (verdicts["verdict"] == "point estimate only").any():
    summary += (" A target is judged only on a 95% interval: "
                f"{display.intervals_hint(v)} to judge the others.")
st.markdown(summary)
with st.container(key="overview_verdicts"):
    for line in display.verdict_lines(verdicts):
        st.markdown(line)
st.caption("Met: the whole 95% interval clears the target. Not met: the whole interval misses "
           "it. Undecided: the interval straddles it. Targets are set on the *Decision "
           "support* page.")

st.subheader("Headline numbers")
display.headline_tiles(v)

if v.source.adjudicated is not None:  # the original numbers beside the adjudicated ones
    st.subheader("Original and adjudicated gold")
    adjudication.show_differences(adjudication.adjudicated(v), key="overview_gold")

st.subheader("ROC curve")
auroc = ev.record("auroc")
points = [operating_point(label, conf) for label, conf in v.operating_points.items()]
# The Gate page's Vega-Lite chart (the same curve, band and points as the plotly figure the
# exports draw): the first page a visitor opens then needs no plotly in the browser.
display.live_chart(live_charts.roc_chart(
    ev.roc, points=points, auroc=auroc.value if not display.undefined_reason(auroc) else None,
    band=ev.roc_band, kept=chart_data.session_store()), key="overview_roc")
st.caption("The markers are the operating points of τ_neg, τ_pos and τ. "
           + ("The shaded band is the pointwise 95% bootstrap band." if ev.roc_band is not None
              else f"No 95% band: bootstrap intervals are off ({display.intervals_hint(v)})."))

st.subheader("Data")
cols = st.columns(4)
cols[0].metric("Queries (post × criterion)", display.fmt(s["n_queries"], "count"), border=True)
cols[1].metric("With evidence", display.fmt(s["n_positive"], "count"), border=True,
               help="Queries with has_evidence = 1: the positives_only protocol.")
cols[1].caption(f"positive rate {display.fmt(s['positive_rate'])}")
cols[2].metric("Posts", display.fmt(s["n_posts"], "count"), border=True)
cols[3].metric("Candidate sentences", display.fmt(s["n_candidates"], "count"), border=True)

st.subheader("Metrics")
st.caption("Each number with the queries it is computed on. 95% CI: Wilson for proportions; "
           "bootstrap percentile intervals when switched on under *Uncertainty*. How each is "
           "computed (protocols and variants) is under *Help & glossary*.")
display.show_records(display.headline_frame(ev), key="headline_table")
# The long tables on demand (drawn only while their expander is open): drawn on every open
# of the page, they cost the browser more than the rest of it.
every = display.on_demand("All metrics", key="all_metrics_open")
if every is not None:
    with every:
        display.show_records(display.records_frame(ev), key="all_metrics_table")

st.subheader("Consistency checks")
checks = display.checks_frame(ev)
passed = int((checks["result"] == "pass").sum())
failed = int((checks["result"] == "fail").sum())
summary = f"{passed} of {len(checks)} consistency checks pass"
summary += f", {failed} fail" if failed else ""
(st.error if failed else st.success)(summary + ".")
each = display.on_demand("The checks", key="checks_open")
if each is not None:
    with each:
        display.show_table(checks, key="checks_table")
