"""Gate & thresholds: the three-state gate with its τ_neg / τ_pos slider, ROC / PR with the
operating points, the (τ_neg, τ_pos) grid, TPR@FPR and the confusion at τ.

Everything that depends on τ_neg and τ_pos is drawn by one fragment together with their
slider: a move reruns the fragment only (not the sidebar, nor the tables below it, which do
not depend on the gate), so the charts follow the slider quickly. After a move, the charts are
drawn before the move's evaluation is computed: their curves, areas and bands do not depend
on the gate (those of the evaluation before the move, :func:`dashboard.data.curves_unchanged`)
and their operating points are counted at once, as are the gate card's counts and rates
(:func:`dashboard.data.gate_ahead`), so the move's values show before its intervals are
computed; the targets' verdicts, judged on the move's intervals, fill their places after.
"""

import streamlit as st

from dashboard import (
    chart_data,
    data,
    display,
    gate_card,
    live_charts,
    reruns,
    risk_coverage_view,
    sidebar,
)
from metrics_core.report.figures.curves import operating_point
from metrics_core.report.figures.gate import GRID_METRICS, gate_grid_heatmap
from metrics_core.targets import parse_target

#: The settings this page draws itself (dashboard.sidebar.PAGE_CONTROLS).
CONTROLS = sidebar.PAGE_CONTROLS["gate"]


def _curves(v: data.View, ev=None) -> None:
    """ROC and PR with the operating points of τ_neg, τ_pos and τ, and their table; the
    curves, their areas and bands those of ``ev`` (default: the view's evaluation)."""
    ev = v.evaluation if ev is None else ev
    st.caption("The markers are the exact operating points of τ_neg (screened in: "
               "p ≥ τ_neg), τ_pos (alert: p ≥ τ_pos) and the fixed threshold τ; they move with "
               "the sliders. Long curves are thinned for drawing only.")
    points = [operating_point(label, conf) for label, conf in v.operating_points.items()]
    auroc, auprc = ev.record("auroc"), ev.record("auprc")
    if not auroc.defined:
        st.warning("Only one class is present in the evaluated queries: AUROC and AUPRC are "
                   "undefined (the curves below are degenerate and say nothing about "
                   "ranking).", icon=":material/info:")
    kept = chart_data.session_store()  # the curves' frames, made once while they are the same
    left, right = st.columns(2)
    with left:
        display.live_chart(live_charts.roc_chart(
            ev.roc, points=points, auroc=auroc.value if auroc.defined else None,
            band=ev.roc_band, kept=kept), key="roc_chart")
    with right:
        display.live_chart(live_charts.pr_chart(
            ev.pr, ev.summary["positive_rate"] or 0.0, points=points,
            auprc=auprc.value if auprc.defined else None, band=ev.pr_band, kept=kept),
            key="pr_chart")
    # On demand, as the gate card's table: a table redrawn on every move costs the browser
    # more than both charts' updates.
    table = display.on_demand("Operating points as a table (TPR, FPR and precision with 95% "
                              "CIs, counts)", key="operating_table_open")
    if table is not None:
        with table:
            operating = display.operating_points_frame(v.operating_points)
            display.show_table(operating, key="operating_table", column_order=[
                c for c in operating.columns if c not in ("TP", "FP", "TN", "FN")])


def _grid(v: data.View) -> None:
    """The (τ_neg, τ_pos) grid as a heatmap, the current choice marked; as a table on demand."""
    st.caption("Every valid (τ_neg ≤ τ_pos) pair on a 0.05 grid plus the current values; "
               "the × marks the current choice. Where the coloured metric has a target, a "
               "dashed line is drawn at the target value and the cells that meet it are "
               "outlined in red.")
    grid = v.gate_grid()
    # One heatmap at a time: each drawn chart costs the browser a redraw on every slider move.
    grid_metrics = {name: GRID_METRICS[name]
                    for name in ("screening_sensitivity", "alert_precision", "review_rate")}
    metric = st.segmented_control("Colour the grid by", list(grid_metrics),
                                  format_func=grid_metrics.get, default="screening_sensitivity",
                                  key="grid_metric", required=True)
    grid_targets = {name: (op, value) for name, op, value
                    in (parse_target(t) for t in v.config.targets)}
    display.plot(gate_grid_heatmap(grid, (v.config.tau_neg, v.config.tau_pos),
                                   metric=metric, target=grid_targets.get(metric)),
                 key="grid_chart")
    table = display.on_demand("Grid as a table", key="grid_table_open")
    if table is not None:
        with table:
            display.show_table(grid, key="grid_table")


def _gate_view(v: data.View, before: data.View) -> None:
    display.thresholds_caption(v)  # a move makes τ_neg / τ_pos exploratory
    for key in CONTROLS:
        sidebar.setting_widget(key)
    # After a move: the card's counts (counted at once) and the charts (their curves from the
    # evaluation before the move) first; the targets' verdicts, which wait for the move's
    # evaluation and its intervals, into their places after.
    curves = data.curves_unchanged(before, v)
    verdicts = gate_card.gate_card(v, table_on_demand=True,
                                 gate=None if curves is None else data.gate_ahead(v))
    # Only the open tab is computed and drawn: a move redraws the charts in view, not both.
    curves_tab, grid_tab = st.tabs(["ROC and precision-recall curves", "Threshold grid"],
                                   key="gate_tab", on_change="rerun")
    if curves_tab.open:
        with curves_tab:
            _curves(v, curves)
    if grid_tab.open:
        with grid_tab:
            _grid(v)
    verdicts()
    if not data.same_curves(curves, v.evaluation):  # (e.g. its intervals paused now)
        reruns.quiet_rerun(scope="fragment")  # a key pressed meanwhile is kept


@st.fragment
def gate_view() -> None:
    before = data.view()  # (in a move's rerun: the view before the move)
    sidebar.page_fragment(CONTROLS, lambda v: _gate_view(v, before))


# The title, data label and filter do not depend on the gate: drawn once, above the fragment.
display.page_header("Gate & thresholds", data.view(), thresholds=False)
gate_view()

# Below: what does not depend on the gate (the fragment's reruns leave it as drawn).
v = data.view()
st.subheader("TPR at fixed FPR")
display.show_table(display.tpr_frame(v.evaluation), key="tpr_table")
st.subheader(f"Confusion at τ = {v.config.threshold:g}")
display.show_records(display.group_frame(v.evaluation, "confusion"), key="confusion_table")

st.subheader("Risk–coverage (the UNCERTAIN band as abstention)")
if st.toggle("Show the risk–coverage curve", key="gate_risk_coverage",
             help="Computed for the run's settings (with up to 1,000 resamples for the "
                  "intervals of its areas)."):
    risk_coverage_view.show(
        v.evaluation.gate_risk_coverage, key="gate_risk_coverage_chart",
        explain=f"Predict evidence when p ≥ τ = {v.config.threshold:g}, abstain on the "
                "queries closest to τ first (a band around τ that widens); the marker is the "
                "gate's own point (its UNCERTAIN queries abstain).")
