"""Folds: every headline metric per fold, with mean ± std over folds (ddof = 0, contract §9)."""

import streamlit as st

from dashboard import data, display

v = data.view()
display.page_header("Folds", v)
ev = v.evaluation
per_fold = ev.per_fold
if per_fold is None:
    st.info("This data set has no fold column, so there is nothing to break down by fold.")
else:
    names = [c for c in per_fold.columns if c not in ("n", "n_positive", "auroc_defined")
             and "_ci_" not in c]
    st.subheader("Mean ± std over folds")
    st.caption("Standard deviation with ddof = 0 (contract §9).")
    display.show_table(display.mean_std_frame(per_fold, names), key="fold_summary_table")
    st.subheader("Per fold")
    display.show_table(per_fold.reset_index(), key="per_fold_table")
