"""Case review: the queries behind the numbers at the current settings, with their sentences."""

import streamlit as st

from dashboard import data, display
from dashboard.safe_text import neutralise_bidi

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
chosen = st.multiselect("Criteria", criteria, placeholder="all", key="case_criteria",
                        format_func=neutralise_bidi)
if chosen:
    table = table[table["criterion"].isin(chosen)]
# p beside τ_neg / τ_pos: cut to 4 decimals, never rounded up (0.09956 is not "0.100" beside
# τ_neg = 0.1); the download keeps the number.
display.show_table(table.assign(p_has_evidence=[display.fmt_probability(p)
                                                for p in table["p_has_evidence"]]),
                   key="case_table", column_config={"p_has_evidence": st.column_config.TextColumn(
                       "p_has_evidence", help="Predicted probability, cut (never rounded up) to "
                       "4 decimals so that a value below a threshold never reads as on it.")})
display.download_csv(f"Download {KINDS[kind][0].lower()} (CSV)", lambda: table,
                     f"{kind}.csv", key="download_cases")

st.subheader("Sentences of one query")
if table.empty:
    st.info("No cases of this kind at the current settings.")
else:
    listed = table.head(display.TABLE_ROWS)
    labels = [neutralise_bidi(f"{post} · {criterion}")
              for post, criterion in zip(listed["post_id"], listed["criterion"], strict=True)]
    choice = st.selectbox("Query (post · criterion)", range(len(labels)),
                          format_func=lambda i: labels[i], key="case_query")
    row = listed.iloc[int(choice or 0)]
    st.caption(f"p_has_evidence = {display.fmt_probability(row['p_has_evidence'])}, "
               f"state {row['state']}, "
               f"selected K = {int(row['selected_k'])}, gold {int(row['n_gold'])}")
    display.show_table(v.sentences(str(row["post_id"]), str(row["criterion"])),
                       key="case_sentences", column_config={
                           "is_gold": "gold", "selected": "selected",
                           "sentence": st.column_config.TextColumn(width="large")})
