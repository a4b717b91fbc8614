"""Cohorts: does the pipeline work as well for every group? Each metric per cohort (forest
plot, the overall value as reference), the disparities to the rest of the data and the weak
segments (contract §9, cohorts). The cohort columns are chosen here or on the Data & audit
page (the same setting; the bins of numeric columns there)."""

import pandas as pd
import streamlit as st

from dashboard import data, display, sidebar, state
from dashboard.safe_text import escape_markdown
from metrics_core import registry
from metrics_core.report.figures.breakdowns import cohort_forest_figure


def _readable(frame: pd.DataFrame) -> pd.DataFrame:
    """Intervals as ``lo – hi`` text (3 decimals) instead of lists."""
    out = frame.copy()
    for column in [c for c in out.columns if c.endswith("ci95")]:
        out[column] = out[column].map(lambda ci: "" if not isinstance(ci, list | tuple)
                                      else f"{ci[0]:.3f} – {ci[1]:.3f}")
    return out


def _flagged_text(flagged: pd.DataFrame) -> str:
    """The flagged disparities, one line per cohort (its metrics, the cohort's value against
    the rest's), for the page's alert."""
    lines = []
    for (column, value), rows in flagged.groupby(["column", "value"], sort=False):
        shown = "; ".join(f"{registry.label(r.metric)} {r.estimate:.3f} vs "
                          f"{r.rest_estimate:.3f} elsewhere" for r in rows.itertuples())
        first = rows.iloc[0]
        if bool(first["small"]):  # a flag on a handful of queries or positives: said
            shown += (f" (a small cell: {int(first['n']):,} queries, "
                      f"{int(first['n_positive']):,} with evidence)")
        lines.append(f"- **{escape_markdown(f'{column} = {value}')}** ({len(rows)}): "
                     + escape_markdown(shown))
    cohorts = len(lines)
    return (f"{len(flagged)} disparity(ies) flagged in {cohorts} cohort(s). Each cohort is "
            "compared with the rest of the data, so when one cohort is much worse the others "
            "can differ from their rest too.\n\n" + "\n".join(lines))


def _undrawn(table: pd.DataFrame, metric: str) -> str:
    """The cohorts whose ``metric`` is undefined, which the forest plot leaves out: named,
    so that none drops out of the chart unsaid."""
    rows = table[(table["metric"] == metric) & ~table["defined"].astype(bool)]
    if not len(rows):
        return ""
    names = ", ".join(f"{c} = {v}" for c, v in zip(rows["column"], rows["value"], strict=True))
    return " " + escape_markdown(f"Not drawn, {registry.label(metric)} undefined (a 0/0 ratio "
                                 f"or only one class in the cohort): {names}.")


v = data.view()
display.page_header("Cohorts", v)
source = v.source
chosen = list(v.cohort_columns)
choices = data.cohort_choices(source)
if choices:  # the Data & audit page's setting (the bins of numeric columns are set there)
    sidebar.setting_widget(state.COHORT_COLUMNS, options=choices)
if source.cohorts is None or not (source.cohorts.suggested or source.cohorts.others):
    st.info("The queries table has no extra column to form cohorts from (such as site, sex "
            "or age): add one to the queries file and upload it again.")
elif not chosen:
    st.info("Choose cohort columns " + ("above" if choices else "on the Data & audit page")
            + " to see every metric per cohort, the disparities and the weak segments"
            + (f" (this data's: {escape_markdown(', '.join(source.cohorts.suggested))}; "
               "a `*` is an intersection of two). Numeric columns are cut into quartiles "
               "unless their bins are set on the Data & audit page." if choices else "."))
else:
    result = data.cohort_result(v, chosen, in_page=True)
    table = result.cohorts
    tested = list(dict.fromkeys(table.loc[table["p_value"].notna(), "metric"]))
    metrics = tested or list(dict.fromkeys(table["metric"]))
    metric = st.selectbox("Metric", metrics, format_func=registry.label,
                          key=state.COHORT_METRIC)
    record = next((r for r in v.evaluation.records if r.name == metric), None)
    overall = record.value if record is not None and record.defined else None
    display.plot(cohort_forest_figure(table, metric, overall=overall,
                                      label=registry.label(metric)),
                 key="cohort_forest")
    live, exported = data.cohort_resamples(v)
    if not live:
        used = f"Intervals are off ({display.intervals_hint(v)}): none here."
    else:
        used = f"Intervals from {live:,} resamples of posts."
        if exported != live:  # the documents are computed again, with the run's number
            used += (" The downloaded metrics_master.json and the record use the run's "
                     + (f"{exported:,} resamples, so their intervals and p-values may differ "
                        "slightly from these." if exported else "settings: no intervals."))
    shown_on = ("all data" if not v.filters.active
                else f"the data shown ({escape_markdown(v.filters.describe())})")
    st.caption(f"Each cohort with its 95% interval; the dotted line is the value on {shown_on}. "
               "Red: a flagged disparity (Holm-adjusted p < 0.05 across the column's cohorts "
               "and metrics, and an interval of the difference that excludes 0). Hollow: a "
               "small cell (under 30 queries or positives). " + used + _undrawn(table, metric))
    flagged = table[table["flagged"]]
    if len(flagged):
        st.error(_flagged_text(flagged))
    else:
        st.success("No disparity flagged.")
    st.subheader("Disparities to the rest of the data")
    shown = table[table["p_value"].notna()] if tested else table
    display.show_table(_readable(shown.reset_index(drop=True)), key="cohort_table")
    st.subheader("Screening sensitivity and false alerts per cohort (equalised odds)")
    display.show_table(_readable(result.equalised_odds), key="cohort_odds_table")
    st.subheader("Weak segments")
    st.caption("Over the cohort columns and every pair of them: the segments (at least 30 "
               "queries) where a metric is worst relative to the rest, p-values adjusted "
               "(Holm) for every segment tried.")
    weak = result.weak_segments
    display.show_table(_readable(pd.DataFrame(weak).reset_index(drop=True)),
                       key="weak_segments_table")

