"""Case review: the queries behind the numbers at the current settings, with their sentences,
the reviewers' verdicts on them (contract §14) and the metrics on the adjudicated gold."""

import streamlit as st

from dashboard import adjudication, data, display, gold, state
from dashboard.safe_text import escape_markdown, neutralise_bidi
from metrics_core.errors import InputError
from metrics_core.evaluation.adjudicated import SUGGESTIONS, review_suggestions
from metrics_core.inputs.adjudications import VERDICTS

v = data.view()
display.page_header("Case review", v, caption=(
    f"τ_neg = {v.config.tau_neg:g}, τ_pos = {v.config.tau_pos:g}, γ = {v.config.gamma:g}"))
cases = {**v.case_review(), "suggested": review_suggestions(v.evaluator, v.evaluation)}
source = v.source

KINDS = {
    "missed_positives": ("Missed positives", "Queries with evidence that the gate screened out "
                                             "(NEG): they would never be reviewed."),
    "false_alerts": ("False alerts", "Queries without evidence flagged POS."),
    "missed_evidence": ("Missed evidence", "Queries with evidence, screened in, whose selected "
                                           "sentences miss some gold sentence."),
    "suggested": ("Review first", "Where a label is likeliest wrong, in turn: "
                  + "; ".join(f"{k.replace('_', ' ')}: {why}" for k, why in SUGGESTIONS.items())
                  + " (column why)."),
}
VERDICT_LABELS = adjudication.VERDICT_LABELS
kind = st.segmented_control("Cases", list(KINDS), format_func=lambda k: (
    f"{KINDS[k][0]} ({len(cases[k]):,})"), default="missed_positives", required=True,
    key="case_kind", persist_state="session")
st.caption(KINDS[kind][1])
table = cases[kind]
verdicts = adjudication.verdicts(source)
on_query = verdicts[verdicts["sent_uid"] == ""].set_index(["post_id", "criterion"])["verdict"]
table = table.assign(verdict=[on_query.get((str(p), str(c)), "")
                              for p, c in zip(table["post_id"], table["criterion"], strict=True)])
left, middle, right = st.columns(3)
criteria = sorted(table["criterion"].unique().tolist(), key=str) if len(table) else []
chosen = left.multiselect("Criteria", criteria, placeholder="all", key="case_criteria",
                          format_func=neutralise_bidi)
gate_states = middle.multiselect("Gate state", ["NEG", "UNCERTAIN", "POS"], placeholder="all",
                                 key=state.CASE_STATES)
shown = right.selectbox("Review", ["all", "unreviewed", *VERDICTS], key=state.CASE_REVIEWED,
                        format_func=lambda s: VERDICT_LABELS.get(s, s))
if chosen:
    table = table[table["criterion"].isin(chosen)]
if gate_states:
    table = table[table["state"].isin(gate_states)]
n_left = int((table["verdict"] == "").sum())
st.caption(f"**{n_left:,} of {len(table):,} cases left to review** "
           f"({len(table) - n_left:,} with a verdict).")
if shown == "unreviewed":
    table = table[table["verdict"] == ""]
elif shown != "all":
    table = table[table["verdict"] == shown]
# p beside τ_neg / τ_pos: cut to 4 decimals, never rounded up (0.09956 is not "0.100" beside
# τ_neg = 0.1); the download keeps the number.
display.show_table(table.assign(p_has_evidence=[display.fmt_probability(p)
                                                for p in table["p_has_evidence"]]),
                   key="case_table", column_config={"p_has_evidence": st.column_config.TextColumn(
                       "p_has_evidence", help="Predicted probability, cut (never rounded up) to "
                       "4 decimals so that a value below a threshold never reads as on it.")})
display.download_csv(f"Download {KINDS[kind][0].lower()} (CSV)", lambda: table,
                     f"{kind}.csv", key="download_cases")


def _next_case(n_listed: int, index: int) -> None:
    """After a verdict is saved: on to the next case (a list of unreviewed cases loses the one
    just marked: the same place is the next case)."""
    step = 0 if st.session_state.get(state.CASE_REVIEWED) == "unreviewed" else 1
    st.session_state["case_query"] = min(index + step, max(n_listed - 1 - (1 - step), 0))


st.subheader("Sentences of one query")
if table.empty:
    st.info("No cases of this kind at the current settings and filters.")
else:
    listed = table.head(display.TABLE_ROWS)
    labels = [neutralise_bidi(f"{post} · {criterion}")
              for post, criterion in zip(listed["post_id"], listed["criterion"], strict=True)]
    if st.session_state.get("case_query") is not None and \
            st.session_state["case_query"] >= len(labels):
        st.session_state["case_query"] = len(labels) - 1
    choice = st.selectbox("Query (post · criterion)", range(len(labels)),
                          format_func=lambda i: labels[i], key="case_query")
    index = int(choice or 0)
    row = listed.iloc[index]
    post_id, criterion = str(row["post_id"]), str(row["criterion"])
    st.caption(f"p_has_evidence = {display.fmt_probability(row['p_has_evidence'])}, "
               f"state {row['state']}, "
               f"selected K = {int(row['selected_k'])}, gold {int(row['n_gold'])}")
    adjudication.case_panel(v, row, advance=_next_case, args=(len(labels), index),
                            key="case_sentences")

st.subheader("Adjudication file")
verdicts = adjudication.verdicts(source)
plural = "" if len(verdicts) == 1 else "s"
st.caption(f"{len(verdicts):,} verdict{plural} in this session, kept while the tab is open "
           "(never on disk): download the file to keep them, upload it to go on.")
st.download_button("Download the adjudication file (CSV)",
                   data=lambda: adjudication.download_bytes(verdicts),
                   file_name=adjudication.FILE_NAME, mime="text/csv", key=state.ADJ_DOWNLOAD,
                   on_click="ignore", icon=":material/download:")
upload = st.file_uploader("Upload an adjudication file (replaces this session's verdicts)",
                          type=["csv"], key=state.ADJ_UPLOAD)
if upload is not None and st.session_state.get(state.ADJ_UPLOAD_SEEN) != upload.file_id:
    st.session_state[state.ADJ_UPLOAD_SEEN] = upload.file_id
    try:
        n = adjudication.read_upload(source, upload.getvalue(), upload.name)
    except InputError as err:
        st.error(escape_markdown(err.render()), icon=":material/error:")
    else:
        st.session_state[state.ADJ_NOTICE] = f"Read {n:,} verdicts from the file."
        st.rerun()
notice = st.session_state.pop(state.ADJ_NOTICE, None)
if notice:
    st.success(escape_markdown(notice))

st.subheader("Metrics on the original and the adjudicated gold")
st.caption("The pages, downloads and the record follow the *Gold labels* switch in the "
           "sidebar (ambiguous cases can be left out there).")
try:
    run = adjudication.adjudicated(v)
except (InputError, ValueError) as err:
    run = None
    st.error(escape_markdown(str(err)), icon=":material/error:")
if run is None and len(verdicts) and gold.refusal():
    st.error(escape_markdown(gold.refusal()), icon=":material/memory:")
elif run is None:
    st.caption("No verdict yet: the numbers are those of the original gold.")
else:
    adjudication.show_differences(run, key="adjudicated")
