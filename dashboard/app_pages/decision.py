"""Decision support: targets met with their intervals, the threshold finder and the decision
curve (net benefit of the model against treat-all and treat-none)."""

import subprocess

import streamlit as st

from dashboard import charts, data, display, record, state
from metrics_core import decision

v = data.view()
display.page_header("Decision support", v)
ev = v.evaluation

st.subheader("Targets")
st.caption("A target is met only when the whole 95% interval clears it; switch on bootstrap "
           "intervals under *Uncertainty* for the metrics without a Wilson interval.")
display.show_table(ev.targets, key="targets_table")

st.subheader("Find a threshold")
st.caption("The exact threshold that meets a target on the data shown (candidates: every "
           "observed probability, 0 and 1). A threshold found here is exploratory: it was "
           "chosen on the same data it is reported on.")
forms = [(metric, op) for metric, ops in decision.FINDERS.items() for op in ops]
left, mid, right = st.columns([3, 2, 2])
choice = left.selectbox("Target", forms, format_func=lambda f: f"{f[0]} {f[1]}",
                        key="finder_target")
bound = mid.number_input("Value", value=0.995 if choice[1] == ">=" else 5.0, step=0.005,
                         format="%.4f", key="finder_value")
target = decision.Target(choice[0], choice[1], float(bound))
ds = v.evaluator.ds
value, achieved = decision.find_threshold(ds.y, ds.p, target)
if value is None:
    right.metric("Threshold", "—", help="No threshold meets this target on these data.")
else:
    right.metric(f"{target.parameter}", f"{value:.4f}",
                 help=f"achieves {target.metric} = {achieved:.4f}")

    def _apply(parameter=target.parameter, found=value):
        lo, hi = st.session_state["gate"]
        if parameter == "tau_neg":
            st.session_state["gate"] = (min(found, hi), hi)
        elif parameter == "tau_pos":
            st.session_state["gate"] = (lo, max(found, lo))
        else:
            st.session_state["threshold"] = found
        state.mark_exploratory("threshold" if parameter == "threshold" else "gate")

    st.button(f"Set {target.parameter} = {value:.4f}", key="finder_apply", on_click=_apply)

st.subheader("Decision curve")
st.caption("Net benefit = TP/N − FP/N · t / (1 − t), positive iff p ≥ t. Above both reference "
           "lines, acting on the model beats treating everyone and treating no one at that "
           "threshold probability.")
curve = ev.decision_curve
display.plot(charts.decision_curve_figure(curve, tau_pos=v.config.tau_pos),
             key="decision_curve_chart")
with st.expander("Decision curve as a table"):
    display.show_table(curve, key="decision_curve_table")

st.subheader("Decision record")
st.caption("One file for the meeting's minutes: the data (with SHA-256 of each file), every "
           "setting, the headline numbers with intervals, the targets, the figures, the checks, "
           "the audit and your notes. The HTML opens without network; the zip adds the PDF "
           "(when a browser is installed on the server), metrics_master.json, settings.json "
           "and the CSV tables.")
title = st.text_input("Title", "Decision record", key=state.RECORD_TITLE)
notes = st.text_area("Meeting notes", key=state.RECORD_NOTES,
                     placeholder="What was decided, by whom, and why.")
exclusions = v.source.loaded.exclusions if v.source.loaded is not None else None


def _html() -> str:
    return record.render_html(ev, title=title, notes=notes, data_label=v.source.label,
                              exclusions=exclusions)


def _zip() -> bytes:
    page = _html()
    try:
        pdf = record.render_pdf(page)
    except (RuntimeError, OSError, subprocess.SubprocessError):
        pdf = None
    return record.render_zip(ev, html_text=page, pdf=pdf, exclusions=exclusions)


left, right = st.columns(2)
left.download_button("Decision record (HTML)", data=_html, file_name="decision_record.html",
                     mime="text/html", key="download_record_html", on_click="ignore",
                     icon=":material/description:")
right.download_button("Everything (zip)", data=_zip, file_name="decision_record.zip",
                      mime="application/zip", key="download_record_zip", on_click="ignore",
                      icon=":material/folder_zip:")
