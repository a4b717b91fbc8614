"""Dynamic-K: selected K by gate state, evidence recall / precision, workload, γ sweep.

The page draws its own γ slider, in one fragment with everything on the page (all of it depends
on γ): a move reruns the fragment only, not the sidebar.
"""

import streamlit as st

from dashboard import data, display, sidebar
from metrics_core.report.figures.gate import gamma_sweep_figure, k_histogram

#: The settings this page draws itself (dashboard.sidebar.PAGE_CONTROLS).
CONTROLS = sidebar.PAGE_CONTROLS["dynamic-k"]


def _dynamic_k_view(v: data.View) -> None:
    c = v.config
    display.page_header("Dynamic-K", v, caption=(
        f"γ = {c.gamma:g}, γ_uncertain = {c.gamma_uncertain:g}, k_min = {c.k_min}, hard cap = "
        f"{c.hard_cap}, k_max ratio = {c.k_max_ratio:g}, "
        f"{'gate-aware' if c.gate_aware else 'gate-blind'}"))
    for key in CONTROLS:
        sidebar.setting_widget(key)
    ev = v.evaluation

    cols = st.columns(3)
    display.metric_tile(cols[0], ev, "evidence_recall", "Evidence recall")
    display.metric_tile(cols[1], ev, "evidence_precision", "Evidence precision")
    display.metric_tile(cols[2], ev, "workload_per_1000", "Sentences to read per 1,000 queries")
    cols = st.columns(3)
    display.metric_tile(cols[0], ev, "mean_k", "Mean K")
    display.metric_tile(cols[1], ev, "median_k", "Median K")
    display.metric_tile(cols[2], ev, "p90_k", "P90 K")

    st.subheader("Selected K")
    display.plot(k_histogram(ev.k, ev.states), key="k_histogram")
    display.show_table(ev.k_summary_frame(), key="k_summary_table")

    st.subheader("γ sweep")
    st.caption("Mean K, evidence recall and workload for γ ∈ {0.7, 0.8, 0.9, 0.95} and the "
               "current γ; other settings as in the sidebar.")
    sweep = v.gamma_sweep()
    # The table takes the full width so that its workload columns are in view.
    display.show_table(sweep, key="gamma_sweep_table")
    display.plot(gamma_sweep_figure(sweep), key="gamma_sweep_chart")


@st.fragment
def dynamic_k_view() -> None:
    sidebar.page_fragment(CONTROLS, _dynamic_k_view)


dynamic_k_view()
