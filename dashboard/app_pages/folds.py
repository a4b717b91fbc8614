"""Folds: every per-group metric per fold, mean ± std over folds (ddof = 0) beside the
pooled value and its 95% interval."""

import streamlit as st

from dashboard import data, display
from metrics_core import registry
from metrics_core.report.figures.breakdowns import folds_figure

v = data.view()
display.page_header("Folds", v)
ev = v.evaluation
per_fold = ev.per_fold
if per_fold is None:
    st.info("This data set has no fold column, so there is nothing to break down by fold.")
else:
    st.subheader("Mean ± std over folds (pooled value, 95% CI)")
    st.caption("Standard deviation with ddof = 0 (the spread of these folds). A fold where a "
               "metric is undefined "
               "(e.g. AUROC with one class) is left out of its mean: n_folds says how many "
               "folds each mean averages. The pooled value is the metric on all folds' "
               "queries together.")
    summary = display.fold_summary_frame(ev.fold_summary)
    display.show_table(summary, key="fold_summary_table",
                       column_order=["label", "mean ± std", "n_folds", "pooled",
                                     "pooled 95% CI", "metric"],
                       column_config={"label": st.column_config.TextColumn(
                           "metric", width=220, pinned=True),
                           "metric": st.column_config.TextColumn("id")})
    st.subheader("Per fold chart")
    metrics = [m for m in ev.fold_summary["metric"] if m in per_fold.columns]
    default = "auroc" if "auroc" in metrics else (metrics[0] if metrics else None)
    fold_metric = st.selectbox("Metric", metrics, index=metrics.index(default) if metrics else 0,
                               format_func=registry.label, key="fold_chart_metric")
    if fold_metric is not None:
        display.plot(folds_figure(per_fold, ev.fold_summary, fold_metric,
                                  label=registry.label(fold_metric)),
                     key="fold_chart")
    st.subheader("Per fold")
    st.caption("One row per fold and the pooled row; the mean and std over folds are in the "
               "table above (a count's mean and std to 1 decimal, not as whole numbers).")
    rows = per_fold.reset_index()
    display.show_table(rows[~rows.iloc[:, 0].astype(str).isin(("mean", "std"))],
                       key="per_fold_table")
