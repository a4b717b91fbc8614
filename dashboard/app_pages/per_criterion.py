"""Per criterion: every headline metric across criteria with intervals, and the full table."""

import pandas as pd
import streamlit as st

from dashboard import charts, data, display
from metrics_core import registry, tables

v = data.view()
display.page_header("Per criterion", v)
ev = v.evaluation
table = ev.per_criterion

counts = table.attrs.get("n_groups", {})
metrics = list(counts)
default = metrics.index("auroc") if "auroc" in metrics else 0
metric = st.selectbox("Metric", metrics, index=default, key="criterion_metric",
                      persist_state="session")
groups = tables.group_intervals(v.source.evaluator(), ev.config, metric)
shown = (groups[["group", "value", "ci_lo", "ci_hi", "n"]].set_index("group").astype(float)
         .rename(columns={"value": metric, "ci_lo": f"{metric}_ci_lo",
                          "ci_hi": f"{metric}_ci_hi"}))
shown = pd.concat([shown, pd.DataFrame(
    {metric: [table.loc[row, metric] for row in ("micro", "macro") if row in table.index]},
    index=[row for row in ("micro", "macro") if row in table.index], dtype=float)])
display.plot(charts.per_criterion_figure(shown, metric, label=registry.label(metric)),
             key="per_criterion_chart")
n_criteria = len(table) - 2
methods = sorted(set(groups["ci_method"].dropna()))
st.caption("Dots: each criterion, with its 95% interval (" + ("; ".join(methods) or "none: "
           "switch on bootstrap CIs under *Uncertainty*") + "). Lines: micro (pooled) and "
           f"macro (mean over the criteria where {metric} is defined: "
           f"{counts.get(metric, 0)} of {n_criteria}).")
focus = groups.rename(columns={"group": "criterion", "value": registry.label(metric)})
# Small cells: few queries, or few with evidence (the rarer class drives the interval).
focus["small_n"] = [display.small_n_note(n) or display.small_n_note(k).replace("n =", "positives =")
                    for n, k in zip(focus["n"], focus["n_positive"], strict=True)]
display.show_table(focus.drop(columns=["defined"]), key="per_criterion_focus",
                   column_config={registry.label(metric): st.column_config.NumberColumn(
                       format="%.4f"),
                       "ci_lo": st.column_config.NumberColumn("95% CI low", format="%.4f"),
                       "ci_hi": st.column_config.NumberColumn("95% CI high", format="%.4f")})
with st.expander("Every metric per criterion (point values)", icon=":material/table:"):
    st.caption("All metrics per criterion at once, as in the per-criterion CSV; the intervals "
               "of each are in the table above when it is the chosen metric.")
    display.show_table(table.reset_index(), key="per_criterion_table")
