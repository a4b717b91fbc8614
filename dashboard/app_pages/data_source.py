"""Data & audit: what was loaded, what the loader excluded, and what the audit found."""

import pandas as pd
import streamlit as st

from dashboard import data, display, link, pending_cohorts, sidebar, state
from dashboard.posts import posts_step
from dashboard.safe_text import escape_markdown
from metrics_core.errors import SettingsError
from metrics_core.settings_file import cohort_bin_items


def cohort_bins_inputs(source) -> None:
    """A text input of the bins of each chosen numeric cohort column (the command line's
    ``--cohort-bins`` SPEC: ``qN`` or edges), checked by the command line's own parser."""
    bins = dict(item.split("=", 1) for item in state.value(state.COHORT_BINS))
    for column in data.numeric_cohort_columns(source, state.value(state.COHORT_COLUMNS)):
        text = st.text_input(f"Bins of {column}", value=bins.get(column, "q4"),
                             key=f"cohort_bins_{column}",
                             help="qN for N quantile bins (q4, quartiles, by default) or "
                                  "increasing edges such as 40,65 (as --cohort-bins).")
        if text.strip() == bins.get(column, "q4"):
            continue
        try:
            item = cohort_bin_items([f"{column}={text}"])[0]
        except SettingsError as exc:
            st.error(f"Bins of {column} not applied: {exc.rule}.")
            continue
        bins[column] = item.split("=", 1)[1]
        state.set_value(state.COHORT_BINS, tuple(f"{k}={v}" for k, v in bins.items()))
        st.rerun()
    # a cohort filter value these bins no longer make, dropped: said here too, by the bins
    for note in link.link_notes():
        if note.startswith(sidebar.FILTER_DROPPED_NOTE):
            st.warning(escape_markdown(note), icon=":material/filter_alt_off:")

v = data.view()
source = v.source
st.title("Data & audit")
if source.synthetic:
    st.info(f"**{escape_markdown(source.label)}**", icon=":material/science:")
else:
    st.caption(escape_markdown(source.label))
st.caption("Files: " + escape_markdown(", ".join(source.files)))
if source.loaded is not None:
    display.gold_caption(v)
    if v.filters.active:  # the filter is the other pages': said, so that no count here misleads
        s = v.evaluation.summary
        st.caption(f"The counts, loader notes and audit on this page are the whole files'. The "
                   f"other pages show {escape_markdown(v.filters.describe())} only: "
                   f"{s['n_queries']:,} queries ({s['n_positive']:,} with evidence) on "
                   f"{s['n_posts']:,} posts.")
    if source.adjudicated is not None:
        st.caption("The loader's counts and the audit below are the files' own; the pages' "
                   "numbers are computed on the adjudicated gold.")

if source.loaded is not None:
    loaded = source.loaded
    ds = loaded.dataset
    cols = st.columns(4)
    cols[0].metric("Queries", f"{ds.n_queries:,}", border=True)
    cols[1].metric("With evidence", f"{ds.n_positive:,}", border=True)
    cols[2].metric("Posts", f"{ds.posts.size:,}", border=True)
    cols[3].metric("Candidate sentences", f"{ds.n_candidates:,}", border=True)
    st.caption(f"Candidates ordered by {ds.ranked_by}"
               + ("" if ds.ranked_by == "rank" else " (ties: sent_uid descending, as trec_eval)")
               + f"; criteria: {escape_markdown(', '.join(ds.criteria))}.")

    st.subheader("Loader notes")
    if loaded.warnings:
        for w in loaded.warnings:
            st.warning(escape_markdown(w), icon=":material/info:")
    elif source.by_hand:
        st.success(f"No notes: {len(source.by_hand)} field(s) were mapped by hand (see the "
                   "column mapping below), the other columns were recognised, and no row was "
                   "excluded.")
    else:
        st.success("No notes: every column was recognised and no row was excluded.")
    excluded = loaded.exclusions
    if len(excluded):
        st.markdown(f"**{len(excluded):,} excluded rows** (with the reason for each):")
        display.show_table(excluded, key="exclusions_table")
        display.download_csv("Download the excluded rows (CSV)", lambda: excluded,
                             "excluded_rows.csv", key="download_exclusions")

    st.subheader("Column mapping")
    def how(table, canon) -> str:
        one_table = len(source.files) == 1  # a long table: one mapping for both parts
        by_hand = (table, canon) in source.by_hand or (
            one_table and ("queries", canon) in source.by_hand)
        return "mapped by hand" if by_hand else "recognised (name or alias)"

    mapping = [{"table": table, "field": canon, "column in the file": src,
                "how": how(table, canon)}
               for table, cmap in loaded.column_map.items() for canon, src in cmap.items()]
    left_out = [f"{canon} ({table})" for (table, canon), src in source.by_hand.items()
                if src is None]
    if left_out:
        st.caption("Left out by hand: " + escape_markdown(", ".join(left_out)) + ".")
    display.show_table(pd.DataFrame(mapping), key="column_map_table")

    st.subheader("Cohorts")
    for say, text in ((st.info, pending_cohorts.describe_waiting()),
                      (st.warning, pending_cohorts.missed())):
        if text:
            say(escape_markdown(text), icon=":material/link:")
    if pending_cohorts.waiting():
        st.button("Dismiss the link's waiting cohort settings", key=state.DISMISS_PENDING,
                  on_click=pending_cohorts.dismiss, icon=":material/close:",
                  help="Leave them out: the link no longer carries them.")
    cohorts = source.cohorts
    if cohorts is None or not (cohorts.suggested or cohorts.others):
        st.caption("The queries table has no extra column to form cohorts from"
                   + (": add a posts table below." if source.kind == "upload" else "."))
    else:
        sidebar.setting_widget(state.COHORT_COLUMNS,
                               options=data.cohort_choices(source))
        cohort_bins_inputs(source)
        if cohorts.others:
            st.caption("Not offered (more than 20 distinct values): "
                       + escape_markdown(", ".join(cohorts.others)) + ".")
    posts_step(source)

    st.subheader("Data audit")
    report = source.audit
    if report is None:
        st.warning("The data audit could not run on this data; the metrics are shown "
                   "without it.")
    else:
        if report.passed and not report.findings:
            st.success("Every audit check passed.")
        elif report.passed:
            st.info("No blocking problem; see the notes below.")
        else:
            st.error("The audit found problems that make some numbers misleading.")
        for f in report.findings:
            show = {"error": st.error, "warning": st.warning}.get(f.level, st.info)
            text = f"**{f.check}** — {escape_markdown(f.message)}"
            if f.examples:
                text += "\n\nExamples: " + escape_markdown("; ".join(f.examples))
            show(text)
        display.show_table(pd.DataFrame(report.to_dict()["checks"]), key="audit_checks_table")

if source.triage is not None:
    st.subheader("Triage file")
    t = source.triage
    st.caption(escape_markdown(f"{source.triage_label}: {t.n:,} rows; columns used: "
                               + ", ".join(f"{k} = {val}" for k, val in t.columns.items()
                                           if val)))
