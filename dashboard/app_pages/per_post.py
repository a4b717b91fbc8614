"""Per post: multi-label metrics of the criterion vector of each post ."""

import streamlit as st

from dashboard import data, display
from metrics_core.config import VARIANT_LABELS

v = data.view()
rule = VARIANT_LABELS["multilabel_rule"][v.config.multilabel_rule]
display.page_header("Per post", v, caption=f"decision rule: {rule} (change under *Per-post "
                                           f"decision rule* in the sidebar)")
ev = v.evaluation

cols = st.columns(4)
for col, (name, label) in zip(cols, (("exact_match", "Exact match"),
                                     ("hamming_score", "Hamming score"),
                                     ("hamming_loss", "Hamming loss"),
                                     ("micro_f1", "Micro F1")), strict=True):
    display.metric_tile(col, ev, name, label)
cols = st.columns(4)
for col, (name, label) in zip(cols, (("samples_f1", "Samples F1 (mean over posts)"),
                                     ("macro_f1", "Macro F1 (over criteria)"),
                                     ("weighted_f1", "Weighted F1")), strict=False):
    display.metric_tile(col, ev, name, label)
st.caption("Every F1 is 2TP / (2TP + FP + FN), and 1 where that is 0 / 0 (no gold and no "
           "predicted positive), as scikit-learn's zero_division = 1.")
display.show_records(display.group_frame(ev, "multilabel"), key="multilabel_table")
