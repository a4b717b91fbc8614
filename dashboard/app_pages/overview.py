"""Overview: headline metrics with intervals, the gate card and the consistency checks."""

import streamlit as st

from dashboard import data, display

v = data.view()
display.page_header("Overview", v)
ev = v.evaluation
s = ev.summary

cols = st.columns(4)
cols[0].metric("Queries (post × criterion)", display.fmt(s["n_queries"], "count"), border=True)
cols[1].metric("With evidence", display.fmt(s["n_positive"], "count"), border=True,
               help="Queries with has_evidence = 1: the positives_only protocol.")
cols[1].caption(f"positive rate {display.fmt(s['positive_rate'])}")
cols[2].metric("Posts", display.fmt(s["n_posts"], "count"), border=True)
cols[3].metric("Candidate sentences", display.fmt(s["n_candidates"], "count"), border=True)

st.subheader("Headline metrics")
st.caption("Each number says on which queries it is computed (subset / protocol) and under which "
           "variant. 95% CI: Wilson for proportions; bootstrap percentile CIs when switched on "
           "under *Uncertainty* in the sidebar.")
display.show_records(display.headline_frame(ev), key="headline_table")
with st.expander("All metrics"):
    display.show_records(display.records_frame(ev), key="all_metrics_table")

display.gate_card(v)

st.subheader("Consistency checks")
checks = display.checks_frame(ev)
passed = int((checks["result"] == "pass").sum())
failed = int((checks["result"] == "fail").sum())
summary = f"{passed} of {len(checks)} checks pass"
summary += f", {failed} fail" if failed else ""
(st.error if failed else st.success)(summary + " (contract §10, docs/CONTRACT.md).")
display.show_table(checks, key="checks_table")
