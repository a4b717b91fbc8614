"""Meeting mode: large type for a projector, the headline numbers with their intervals, one
chart at a time (or the cases to review, one at a time, with the verdict form of Case review),
and only the controls a meeting decides on (τ_neg, τ_pos, γ, the gold labels)."""

import streamlit as st

from dashboard import adjudication, data, display, sidebar
from dashboard.safe_text import escape_markdown, neutralise_bidi
from metrics_core import registry
from metrics_core.demo import criterion_names
from metrics_core.evaluation.adjudicated import review_suggestions
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


def _next_case(n: int, index: int) -> None:
    st.session_state["meeting_case"] = min(index + 1, n - 1)


v = data.view()
st.title("Meeting mode")
label = escape_markdown(v.source.label)
if v.source.synthetic:
    st.info(f"**{label}**", icon=":material/science:")
st.caption(f"{'' if v.source.synthetic else label + ' · '}Every other setting stays as set on "
           "the other pages.")
display.gold_caption(v)
if v.filters.active:  # the room sees which queries (which cohort) the numbers are of
    st.caption(display.evaluated_text(v))
display.thresholds_caption(v)
left, right = st.columns([2, 1])
with left:  # the settings' own widgets: a move here is a move everywhere (and exploratory)
    sidebar.setting_widget("gate", typed=False)
with right:
    sidebar.setting_widget("gamma", typed=False)
sidebar.setting_widget("gold")

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

chart = st.segmented_control("Chart", ["Threshold grid", "Decision curve", "Per criterion",
                                       "Cases to review"],
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
elif chart == "Per criterion":
    display.plot(per_criterion_figure(
        ev.per_criterion, "screening_sensitivity", label="Screening sensitivity",
        names=criterion_names((ev.run or {}).get("inputs"))),
                 key="meeting_criterion")
else:  # one case at a time, where a label is likeliest wrong, marked here as on Case review
    cases = review_suggestions(v.evaluator, ev)
    if cases.empty:
        st.info("No case to review first at these settings.")
    else:
        frame = adjudication.verdicts(v.source)
        marked = set(zip(frame["post_id"], frame["criterion"], strict=True))
        done = sum((str(p), str(c)) in marked
                   for p, c in zip(cases["post_id"], cases["criterion"], strict=True))
        st.caption(f"**{len(cases) - done:,} of {len(cases):,} cases left to review** (the "
                   "Review first list of Case review, where a label is likeliest wrong).")
        labels = [neutralise_bidi(f"{p} · {c} ({why.replace('_', ' ')})") for p, c, why in
                  zip(cases["post_id"], cases["criterion"], cases["why"], strict=True)]
        index = int(st.selectbox("Case", range(len(labels)), format_func=lambda i: labels[i],
                                 key="meeting_case") or 0)
        row = cases.iloc[index]
        st.caption(f"p_has_evidence = {display.fmt_probability(row['p_has_evidence'])}, "
                   f"state {row['state']}, has_evidence {int(row['has_evidence'])}")
        adjudication.case_panel(v, row, key="meeting_sentences", advance=_next_case,
                                args=(len(labels), index))
