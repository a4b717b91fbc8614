"""Decision support: targets met with their intervals, the threshold finder and the decision
curve (net benefit of the model against treat-all and treat-none)."""

import subprocess

import pandas as pd
import streamlit as st

from dashboard import computing, data, display, finder, gold, guarantee_view, provenance, state
from dashboard.safe_text import escape_markdown
from metrics_core import registry
from metrics_core.errors import InputError
from metrics_core.metrics import decision
from metrics_core.report import decision_record as record
from metrics_core.report.figures.curves import decision_curve_figure

#: Plain labels of the re-projected quantities that are no metric of the registry.
PLAIN = {"auto_cleared_npv": "NPV of the auto-cleared (NEG)",
         "review_per_1000": "Sent to review per 1,000",
         "auto_cleared_per_1000": "Auto-cleared per 1,000"}
v = data.view()
display.page_header("Decision support", v)
ev = v.evaluation

st.subheader("Targets")
st.caption("A target is met only when the whole 95% interval clears it (bootstrap intervals, "
           "on by default under *Uncertainty*, for the metrics without a Wilson interval).")
targets = display.targets_frame(ev.targets)
if len(targets):  # the verdict every page and the record give (the library's status kept)
    verdicts = display.verdict_frame(ev)
    targets.insert(1, "verdict", verdicts["verdict"].to_numpy())
    targets["why"] = verdicts["detail"].to_numpy()
display.show_table(targets, key="targets_table", column_config={
    "label": st.column_config.TextColumn("metric", width=200, pinned=True),
    "metric": st.column_config.TextColumn("id"),
    "shown": st.column_config.TextColumn("value"), "target": st.column_config.TextColumn(
        "target")}, column_order=[c for c in targets.columns
                                  if c not in ("value", "ci_lo", "ci_hi", "status")])


def _set_targets() -> None:
    from metrics_core.targets import canonical_targets

    text = st.session_state["targets_editor"]
    lines = [t.strip() for t in text.splitlines() if t.strip()]
    try:  # the library's check, as the CLI and settings.json have it (names in any case)
        lines = canonical_targets(lines, ks=v.config.ks, tpr_fprs=v.config.tpr_fprs)
        state.set_value("targets", tuple(lines))
    except ValueError as exc:  # the text stays as typed, the targets as they were
        st.session_state["_targets_error"] = str(exc)
        st.session_state["_targets_text"] = text
        return
    st.session_state.pop("_targets_error", None)
    st.session_state.pop("_targets_text", None)


# Closed sections draw nothing (display.on_demand): the page's open draws fewer elements.
editor = display.on_demand("Edit the targets", key="targets_editor_open", icon=":material/edit:")
if editor is not None:
    with editor:
        st.session_state["targets_editor"] = st.session_state.get(
            "_targets_text", "\n".join(state.value("targets")))
        st.text_area("One target a line: metric>=value (or >, <=, <)", key="targets_editor",
                     on_change=_set_targets, height=200)
        if st.session_state.get("_targets_error"):
            st.error(escape_markdown(st.session_state["_targets_error"]) + "; the targets were "
                     "not changed.", icon=":material/error:")
        st.caption("Metric names are those of metrics_master.json (e.g. auroc, ece, "
                   "screening_sensitivity, tpr@fpr=0.05). The targets are part of the link and of "
                   "settings.json.")

st.subheader("Find a threshold")
st.caption("The exact threshold that meets a target on the data shown (candidates: every "
           "observed probability, 0 and 1). A threshold found here is exploratory: it was "
           "chosen on the same data it is reported on. With bootstrap intervals on, its "
           "interval re-selects the threshold in every resample, so the optimism of choosing "
           "on the data shows as spread.")
forms = [(metric, op) for metric, ops in decision.FINDERS.items() for op in ops]
left, mid, right = st.columns([3, 2, 2])
choice = left.selectbox("Target", forms, format_func=lambda f: f"{f[0]} {f[1]}",
                        key="finder_target")
default = finder.default_finder_target()
bound = mid.number_input("Value", value=default.value if choice[1] == ">=" else 5.0,
                         step=0.005, format="%.4f", key="finder_value")
by_criterion = right.toggle("Per criterion", key="finder_by_criterion",
                            help="Find the threshold of each criterion on its own queries.")
target = decision.Target(choice[0], choice[1], float(bound))
ds = v.evaluator.ds
n_boot = data.finder_resamples(v)


by = "criterion" if by_criterion else None
# Kept in the session's own evaluator (bounded memo), never in a cache shared by sessions.
progress = computing.StepProgress(st.empty(), "Finding thresholds")
with st.spinner("Finding thresholds…"), computing.metered():
    results = finder.finder_results(v.evaluator, target, by, n_boot, v.config.seed,
                                  progress=progress)
progress.done()
overall = results[0]
found = pd.DataFrame([{
    "subset": r["subset"], "n": r["n"], target.parameter: r["value"],
    "achieves": r["achieved"],
    "ci95_lo": None if r["ci95"] is None else r["ci95"][0],
    "ci95_hi": None if r["ci95"] is None else r["ci95"][1],
    "small_n": display.small_n_note(r["n"])} for r in results])
score = display.COLUMN_FORMATS[display.kind_of(target.metric)]
display.show_table(found, key="finder_table", column_config={
    # A threshold is a setting to copy, not a rate: four decimals, as the button sets it.
    target.parameter: st.column_config.NumberColumn(
        display.COLUMN_LABELS.get(target.parameter, target.parameter), format="%.4f"),
    "achieves": st.column_config.NumberColumn(
        f"achieves ({registry.label(target.metric)})", format=score),
    "ci95_lo": st.column_config.NumberColumn("95% CI low (re-selected)", format="%.4f"),
    "ci95_hi": st.column_config.NumberColumn("95% CI high (re-selected)", format="%.4f")})
if not n_boot:
    st.caption("Switch on bootstrap intervals under *Uncertainty* for the re-selected "
               "interval of each threshold.")


def _apply(parameter=target.parameter, value=overall["value"]):
    """A threshold found on the data shown: exploratory (the gate's other end only if it had
    to follow to keep τ_neg ≤ τ_pos)."""
    lo, hi = state.value("gate")
    if parameter == "tau_neg":
        state.set_value("gate", (min(value, hi), hi), how=state.EXPLORATORY,
                        mark=("tau_neg", *(("tau_pos",) if value > hi else ())))
    elif parameter == "tau_pos":
        state.set_value("gate", (lo, max(value, lo)), how=state.EXPLORATORY,
                        mark=("tau_pos", *(("tau_neg",) if value < lo else ())))
    else:
        state.set_value("threshold", value, how=state.EXPLORATORY, mark=("threshold",))
    state.setting_moved()


def _apply_per_criterion(parameter=target.parameter, rows=tuple(results[1:])):
    overall_gate = state.value("gate")
    gates = {g[0]: list(g) for g in state.value("criterion_gates")}
    for r in rows:
        if r["value"] is None:
            continue
        name = r["subset"].removeprefix("criterion ")
        lo, hi = gates.get(name, [name, *overall_gate])[1:]
        if parameter == "tau_neg":
            lo, hi = r["value"], max(hi, r["value"])
        else:
            lo, hi = min(lo, r["value"]), r["value"]
        gates[name] = [name, round(lo, 6), round(hi, 6)]
    state.set_value("criterion_gates", tuple(tuple(gates[c]) for c in sorted(gates)),
                    how=state.EXPLORATORY, mark=("criterion_gates",))


if overall["value"] is None:
    st.warning("No threshold meets this target on these data.", icon=":material/block:")
else:
    st.button(f"Set {target.parameter} = {overall['value']:.4f} (all queries)",
              key="finder_apply", on_click=_apply)
if by_criterion and target.parameter in ("tau_neg", "tau_pos"):
    st.button(f"Set each criterion's {target.parameter} to its own threshold",
              key="finder_apply_per_criterion", on_click=_apply_per_criterion,
              help="Per-criterion gates: the sidebar lists them under Gate & thresholds.")

if st.toggle("Guarantee mode: a threshold guaranteed for new queries, beside the one met on "
             "this data", key="guarantee_mode",
             help="Learn-then-Test: the threshold such that, with probability at least 1 − δ "
                  "over the calibration data, the target holds on new queries like them."):
    guarantee_view.show(ds, target, overall["value"], by_criterion=by_criterion)

held_out_check = display.on_demand("Leakage-free check of this threshold (nested)",
                                  key="finder_nested_open", icon=":material/lock:")
if held_out_check is not None:
    with held_out_check:
        st.caption("The threshold is chosen without the queries it is judged on: on the other "
                   "folds for each held-out fold (nested cross-validation), or on TUNE and "
                   "judged on TEST. Mean ± std over the folds, and pooled over every held-out "
                   "query. Use these numbers, not the ones above, to report a threshold found "
                   "here.")
        modes = [m for m, ok in (("folds", ds.fold is not None), ("split", ds.split is not None))
                 if ok]
        if not modes:
            st.info("These data have neither folds nor a TUNE / TEST split.",
                    icon=":material/info:")
        else:
            # (the choice kept while the section is closed and its radio not drawn)
            nested = st.radio("Hold out", modes, horizontal=True, key="finder_nested",
                              format_func={"folds": "each fold", "split": "TEST (tune on TUNE)"}
                              .get, persist_state="session")
            try:
                held_out = v.evaluator.cached(
                    ("nested", str(target), nested, by_criterion),
                    lambda: decision.nested_summary(ds, target, nested,
                                                    by_criterion=by_criterion))
            except ValueError as exc:
                st.info(escape_markdown(str(exc)), icon=":material/info:")
            else:
                display.show_table(held_out, key="finder_nested_table")

st.subheader("Deployment prevalence")
st.caption("Sensitivity and the share of negatives flagged do not depend on prevalence; "
           "predictive values and workload do. Re-projected with the class-conditional rates "
           "of these data; the interval takes the ends of their Wilson intervals "
           "(conservative).")
data_prevalence = float(ds.y.mean()) if ds.n_queries else 0.0
prevalence = st.number_input("Prevalence where the tool will be used", 0.001, 0.999,
                             value=round(min(max(data_prevalence, 0.001), 0.999), 3),
                             step=0.005, format="%.3f", key="deployment_prevalence")
try:
    from metrics_core.metrics.gate import states_to_prediction

    projected = decision.reproject(ds.y, states_to_prediction(ev.states), prevalence)
except ValueError as exc:
    st.info(escape_markdown(str(exc)), icon=":material/info:")
else:
    projected = projected.reset_index()
    ids = projected["metric"]
    projected["metric"] = ids.map(lambda m: PLAIN.get(m) or registry.label(m))
    kinds = ["per_1000" if m.endswith("_per_1000") else "score" for m in ids]
    data_col, here_col = f"at the data's {data_prevalence:.3f}", f"at {prevalence:.3f}"
    projected = projected.rename(columns={"data": data_col, "deployment": here_col})
    shown = projected.assign(**{
        "at the data's prevalence": [display.fmt(x, k) for x, k in zip(
            projected[data_col], kinds, strict=True)],
        "at the deployment prevalence": [display.fmt(x, k) for x, k in zip(
            projected[here_col], kinds, strict=True)],
        "95% CI (deployment)": [display.fmt_interval(lo, hi, k) for lo, hi, k in zip(
            projected["ci_lo"], projected["ci_hi"], kinds, strict=True)]}, id=ids)
    display.show_table(shown, key="prevalence_table", column_config={
        "at the data's prevalence": st.column_config.TextColumn(data_col),
        "at the deployment prevalence": st.column_config.TextColumn(here_col)},
        column_order=["metric", "at the data's prevalence", "at the deployment prevalence",
                      "95% CI (deployment)", "id"])

st.subheader("Decision curve")
st.caption("Net benefit = TP/N − FP/N · t / (1 − t), positive iff p ≥ t. Above both reference "
           "lines, acting on the model beats treating everyone and treating no one at that "
           "threshold probability.")
curve = ev.decision_curve
display.plot(decision_curve_figure(curve, tau_pos=v.config.tau_pos),
             key="decision_curve_chart")
curve_table = display.on_demand("Decision curve as a table", key="decision_curve_table_open")
if curve_table is not None:
    with curve_table:
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
# Case review's verdicts on this view, for the record (what the run needs is held now: the
# downloads' data is made on click, outside the session's run); None without any, or when
# they no longer fit.
try:
    _adjudicated = gold.run_maker(v)
except (InputError, ValueError):
    _adjudicated = None


def _html() -> str:
    adjudicated = _adjudicated() if _adjudicated is not None else None
    return record.render_html(ev, title=title, notes=notes, data_label=v.source.label,
                              gold=v.gold,
                              exclusions=exclusions,
                              thresholds=provenance.describe_thresholds(v.config, v.marks,
                                                                   v.guarantees) + ".",
                              marks=v.marks, guarantees=v.guarantees,
                              adjudication=adjudicated, cohorts=_cohorts(),
                              cohort_columns=v.cohort_columns, cohort_bins=v.cohort_bins)


def _cohorts():
    """The cohort tables of the columns chosen on the Data page (None without)."""
    if not v.cohort_columns or v.source.cohorts is None:
        return None
    return data.cohort_result(v, v.cohort_columns, exported=True)


def _zip() -> bytes:
    page = _html()
    try:
        pdf, missing = record.render_pdf(page), None
    except (RuntimeError, OSError, subprocess.SubprocessError) as err:
        pdf, missing = None, str(err)
    return record.render_zip(data.exported_evaluation(v), html_text=page, pdf=pdf,
                             exclusions=exclusions, pdf_missing=missing, marks=v.marks,
                             guarantees=v.guarantees,
                             adjudication=_adjudicated() if _adjudicated is not None else None,
                             cohort_columns=v.cohort_columns, cohort_bins=v.cohort_bins)


left, right = st.columns(2)
left.download_button("Decision record (HTML)", data=_html, file_name="decision_record.html",
                     mime="text/html", key="download_record_html", on_click="ignore",
                     icon=":material/description:")
right.download_button("Everything (zip)", data=_zip, file_name="decision_record.zip",
                      mime="application/zip", key="download_record_zip", on_click="ignore",
                      icon=":material/folder_zip:")
