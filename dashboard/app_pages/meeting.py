"""Meeting mode: large type for a projector, the headline numbers with their intervals, one
chart at a time, and only the controls a meeting decides on (τ_neg, τ_pos, γ)."""

import streamlit as st

from dashboard import data, display, sidebar
from dashboard.safe_text import escape_markdown
from metrics_core import registry
from metrics_core.demo import criterion_names
from metrics_core.report.figures.breakdowns import per_criterion_figure
from metrics_core.report.figures.curves import decision_curve_figure
from metrics_core.report.figures.gate import gate_grid_heatmap
from metrics_core.targets import parse_target

# Static styling only (no user text): larger type for a room.
st.html("""<style>
[data-testid="stMain"] {font-size: 1.35rem;}
[data-testid="stMetricValue"] {font-size: 2.6rem !important;}
[data-testid="stMetricLabel"] p {font-size: 1.15rem !important;}
[data-testid="stMain"] h1 {font-size: 2.4rem;}
</style>""")

v = data.view()
st.title("Meeting mode")
label = escape_markdown(v.source.label)
if v.source.synthetic:
    st.info(f"**{label}**", icon=":material/science:")
st.caption(f"{'' if v.source.synthetic else label + ' · '}Every other setting stays as set on "
           "the other pages.")
display.gold_caption(v)
if v.filters.active:  # the room sees which queries (which cohort) the numbers are of
    st.caption(f"Evaluated: {escape_markdown(v.filters.describe())}")
display.thresholds_caption(v)
left, right = st.columns([2, 1])
with left:  # the settings' own widgets: a move here is a move everywhere (and exploratory)
    sidebar.setting_widget("gate", typed=False)
with right:
    sidebar.setting_widget("gamma", typed=False)

ev = v.evaluation
verdicts = display.verdict_frame(ev).set_index("metric", drop=False)
names = ("screening_sensitivity", "screening_fn_per_1000", "alert_precision",
         "alert_rate_per_1000", "evidence_recall", "mean_k")
cols = st.columns(3)
for i, name in enumerate(names):
    r = ev.record(name)
    reason = display.undefined_reason(r)
    ci = reason or ("" if r.ci95 is None else display.ci_text(*r.ci95,
                                                              kind=display.kind_of(name)))
    # Its target's verdict, judged on the interval (a grey "no target" keeps the tiles level).
    badge = {"delta": "no target", "delta_arrow": "off", "delta_color": "gray"}
    if name in verdicts.index:
        t = verdicts.loc[name]
        badge = {"delta": f"{t['verdict']}: target {t['target']}", "delta_arrow": "off",
                 "delta_color": display.VERDICTS[t["verdict"]][0]}
    cols[i % 3].metric(registry.label(name),
                       display.fmt_metric(name, None if reason else r.value),
                       help=r.interpretation, border=True, **badge)
    if ci:
        cols[i % 3].caption(ci)

with st.container(key="meeting_verdicts"):
    st.markdown("**Targets:** " + display.verdict_summary(verdicts))
    for line in display.verdict_lines(verdicts):
        st.markdown(line)

chart = st.segmented_control("Chart", ["Threshold grid", "Decision curve", "Per criterion"],
                             default="Threshold grid", key="meeting_chart", required=True)
if chart == "Threshold grid":
    display.plot(gate_grid_heatmap(v.gate_grid(), (v.config.tau_neg, v.config.tau_pos),
                                   metric="screening_sensitivity",
                                   target=next(((op, value) for name, op, value in
                                                map(parse_target, v.config.targets)
                                                if name == "screening_sensitivity"),
                                               None)),
                 key="meeting_grid")
elif chart == "Decision curve":
    display.plot(decision_curve_figure(ev.decision_curve, tau_pos=v.config.tau_pos),
                 key="meeting_decision")
else:
    display.plot(per_criterion_figure(
        ev.per_criterion, "screening_sensitivity", label="Screening sensitivity",
        names=criterion_names((ev.run or {}).get("inputs"))),
                 key="meeting_criterion")
