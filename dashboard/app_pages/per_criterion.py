"""Per criterion: every headline metric across criteria with intervals, and the full table."""

import streamlit as st

from dashboard import charts, data, display

v = data.view()
display.page_header("Per criterion", v)
ev = v.evaluation
table = ev.per_criterion

counts = table.attrs.get("n_groups", {})
metrics = list(counts)
default = metrics.index("auroc") if "auroc" in metrics else 0
metric = st.selectbox("Metric", metrics, index=default, key="criterion_metric",
                      persist_state="session")
display.plot(charts.per_criterion_figure(table, metric), key="per_criterion_chart")
n_criteria = len(table) - 2
st.caption("Dots: each criterion (bars: 95% interval where available, Wilson for proportions, "
           "bootstrap for AUROC when switched on). Lines: micro (pooled) and macro (mean over "
           f"the criteria where {metric} is defined: {counts.get(metric, 0)} of {n_criteria}).")
st.subheader("Table")
display.show_table(table.reset_index(), key="per_criterion_table")
