"""Help & glossary: every metric of the registry in a sentence, the protocols and variants, the
gate states, the intervals and how the numbers are written (the full definitions are in
docs/CONTRACT.md of the repository; the page itself cites no document)."""

import pandas as pd
import streamlit as st

from dashboard import display
from metrics_core import registry
from metrics_core.config import VARIANT_LABELS, VARIANTS, EvalConfig, option

DEFAULTS = EvalConfig()

st.title("Help & glossary")
st.caption("Plain definitions of what the pages show: the terms, how each metric is computed "
           "(protocols and variants), the gate states, the intervals and how numbers are "
           "written.")

st.subheader("Terms and variants")
TERMS = (
    ("Query", "One (post, criterion) pair: does this post show evidence for this criterion?"),
    ("Positives only (protocol)", "Only the queries whose gold label says they have evidence "
     "(has_evidence = 1). Ranking and evidence-extraction metrics use it: on a query without "
     "evidence there is nothing to find."),
    ("All queries (protocol)", "Every query, with and without evidence. Classification, "
     "calibration and gate metrics use it; a ranking variant scores queries without gold 0."),
    ("Gate states (NEG / UNCERTAIN / POS)", "The three-state gate sorts each query by its "
     "probability p: NEG (auto-cleared, never reviewed) if p < τ_neg, UNCERTAIN (sent to a "
     "person for review) if τ_neg ≤ p < τ_pos, POS (a high-confidence alert) if p ≥ τ_pos."),
    ("τ_neg, τ_pos, τ", "The gate's two thresholds, and the single threshold of the "
     "yes/no classification metrics (confusion matrix, sensitivity, precision, F1)."),
    ("Dynamic-K", "How many of a query's ranked sentences are handed on as evidence: the "
     "fewest whose share of the score mass reaches γ (kept between k_min and a cap). "
     "Gate-aware: NEG queries get K = 0, UNCERTAIN ones a wider γ_uncertain."),
    ("γ (gamma)", "The share of score mass dynamic-K must cover; a higher γ selects more "
     "sentences (more recall, more reading)."),
    ("Wilson interval", "The 95% interval of a proportion (sensitivity, a rate) from its count "
     "and denominator; exact enough for small counts and never outside 0-1."),
    ("Bootstrap interval", "The 95% interval of any other estimate (AUROC, F1, ECE, mean K): "
     "the data are resampled many times (by query, or by post) and the middle 95% of the "
     "recomputed values is reported. Off by default; switch it on under Uncertainty."),
    ("Pre-specified threshold", "A threshold fixed before looking at these results: the "
     "default, typed in, or loaded from settings or a link. Numbers at it are honest "
     "estimates."),
    ("Exploratory threshold", "A threshold moved or found on the data shown. Numbers at it are "
     "optimistic, because the threshold was fitted to the same data (STARD 2015)."),
    ("Target met", "A target counts as met only when the whole 95% interval clears it, not "
     "just the point estimate."),
    ("Small cell", "An estimate on fewer than 30 cases (or positives): its interval is wide."),
    ("Micro / macro", "Micro pools every query before computing; macro averages the "
     "per-criterion values, each criterion counting once."),
    (display.UNDEFINED, "An undefined value: a 0/0 ratio (e.g. alert precision with no alert), "
     "only one class present (AUROC needs queries with and without evidence), or not computed "
     "(an interval while bootstrap is off). Never shown as 0."),
)
for term, definition in TERMS:
    st.markdown(f"**{term}**: {definition}")

st.subheader("Protocols and variants")
st.caption("How a metric is computed when more than one convention exists; the sidebar sets "
           "each one, and the exported tables name the one in use (column variant).")
variants = pd.DataFrame([{"setting": option(name).label, "option": value,
                          "what it computes": VARIANT_LABELS[name][value],
                          "default": value == getattr(DEFAULTS, name)}
                         for name in VARIANTS for value in VARIANTS[name]])
display.show_table(variants, key="glossary_variants", max_rows=len(variants))

st.subheader("How numbers are written")
st.markdown(
    f"Counts as whole numbers with thousands separators ({display.fmt(13230, 'count')}); "
    f"rates, proportions, scores and numbers of sentences (K) to 3 decimals "
    f"({display.fmt(0.5981, 'score')}); values per 1,000 queries, and the mean ± std of a count "
    f"over folds, to 1 decimal "
    f"({display.fmt(4.5262, 'per_1000')}); 95% intervals in brackets "
    f"({display.fmt_interval(0.5712, 0.6238)}); undefined as {display.UNDEFINED}.")

st.subheader("Metrics")
st.caption("Every metric the dashboard reports, by group. K is the cut-off and t "
           "the FPR target of a family (Recall@10, TPR at FPR ≤ 5%).")
WRITTEN = {"count": "whole number", "per_1000": "1 decimal", "average": "1 decimal",
           "score": "3 decimals"}
rows = [{"metric": registry.label(s.name) if not s.family
         else s.label.replace("{k}", "K").replace("{t:.0%}", "t"),
         "what it measures": s.description.replace("{k}", "K").replace("{t:.0%}", "t"),
         "group": s.group, "written as": WRITTEN[display.kind_of(s.name)],
         "id": s.name} for s in registry.SPECS]
display.show_table(pd.DataFrame(rows), key="glossary_metrics", max_rows=len(rows),
                   column_config={"metric": st.column_config.TextColumn(
                       "metric", width=170, pinned=True)})
