"""Ranking: Recall / Precision / Hit@K, MRR, MAP@K, nDCG@K with their distribution."""

import streamlit as st

from dashboard import data, display
from metrics_core.config import VARIANT_LABELS
from metrics_core.report.figures.breakdowns import distribution_figure

v = data.view()
protocol = VARIANT_LABELS["ranking_protocol"][v.config.ranking_protocol]
display.page_header("Ranking", v, caption=f"computed on {protocol}")
ev = v.evaluation

table = display.ranking_frame(ev)
n = int(table["n"].max()) if len(table) else 0
st.caption(f"{n:,} queries: {protocol}. Mean, median, P25 and P75 over queries.")
display.show_table(table, key="ranking_table",
                   column_order=[c for c in table.columns if c != "metric"])

st.subheader("Distribution over queries")
ks = list(v.config.ks)
k = st.selectbox("K", ks, index=ks.index(10) if 10 in ks else 0, key="ranking_k",
                 persist_state="session")
names = [f"recall@{k}", f"precision@{k}", f"hit@{k}", f"map@{k}", f"ndcg@{k}", f"mrr@{k}",
         "mrr"]

def _interval(name):
    """The mean's 95% interval from the evaluation's record (None when it has none)."""
    try:
        return ev.record(name).ci95
    except KeyError:
        return None


st.caption("Metrics that are mostly exactly 0 or 1 per query (e.g. hit@K) are shown as the "
           "share of queries at 0 and at 1 with the mean and its 95% interval; the others as "
           "boxes.")
display.plot(distribution_figure(v.ranking_values(names),
                                 title=f"Per-query ranking metrics at K = {k}",
                                 intervals={n: _interval(n) for n in names}),
             key="ranking_distribution")
