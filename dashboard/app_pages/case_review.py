"""Case review: the queries behind the numbers at the current settings, with their sentences."""

import streamlit as st

from dashboard import data, display

v = data.view()
display.page_header("Case review", v, caption=(
    f"τ_neg = {v.config.tau_neg:g}, τ_pos = {v.config.tau_pos:g}, γ = {v.config.gamma:g}"))
cases = v.case_review()

KINDS = {
    "missed_positives": ("Missed positives", "Queries with evidence that the gate screened out "
                                             "(NEG): they would never be reviewed."),
    "false_alerts": ("False alerts", "Queries without evidence flagged POS."),
    "missed_evidence": ("Missed evidence", "Queries with evidence, screened in, whose selected "
                                           "sentences miss some gold sentence."),
}
kind = st.segmented_control("Cases", list(KINDS), format_func=lambda k: (
    f"{KINDS[k][0]} ({len(cases[k]):,})"), default="missed_positives", required=True,
    key="case_kind", persist_state="session")
st.caption(KINDS[kind][1])
table = cases[kind]
criteria = sorted(table["criterion"].unique().tolist(), key=str) if len(table) else []
chosen = st.multiselect("Criteria", criteria, placeholder="all", key="case_criteria")
if chosen:
    table = table[table["criterion"].isin(chosen)]
display.show_table(table, key="case_table")
display.download_csv(f"Download {KINDS[kind][0].lower()} (CSV)", lambda: table,
                     f"{kind}.csv", key="download_cases")

st.subheader("Sentences of one query")
if table.empty:
    st.info("No cases of this kind at the current settings.")
else:
    listed = table.head(display.TABLE_ROWS)
    labels = (listed["post_id"].astype(str) + " · " + listed["criterion"].astype(str)).tolist()
    choice = st.selectbox("Query (post · criterion)", range(len(labels)),
                          format_func=lambda i: labels[i], key="case_query")
    row = listed.iloc[int(choice or 0)]
    st.caption(f"p_has_evidence = {row['p_has_evidence']:.4f}, state {row['state']}, "
               f"selected K = {int(row['selected_k'])}, gold {int(row['n_gold'])}")
    display.show_table(v.sentences(str(row["post_id"]), str(row["criterion"])),
                       key="case_sentences", column_config={
                           "is_gold": "gold", "selected": "selected",
                           "sentence": st.column_config.TextColumn(width="large")})
