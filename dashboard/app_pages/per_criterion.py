"""Per criterion: every headline metric across criteria with intervals, and the full table."""

import math

import pandas as pd
import streamlit as st

from dashboard import computing, data, display, refinement
from metrics_core import registry
from metrics_core.demo import criterion_names
from metrics_core.report.figures.breakdowns import per_criterion_figure

v = data.view()
display.page_header("Per criterion", v)
ev = v.evaluation
table = ev.per_criterion

counts = table.attrs.get("n_groups", {})
metrics = list(counts)
default = metrics.index("auroc") if "auroc" in metrics else 0
metric = st.selectbox("Metric", metrics, index=default, key="criterion_metric",
                      format_func=registry.label, persist_state="session")
with computing.metered():
    groups, refining = refinement.group_intervals(v, ev.config, metric)
groups = groups.copy()
# A value the registry's convention fills in (one-class AUROC = 0.5) is neither drawn nor
# shown as a number.
groups.loc[~groups["defined"].astype(bool), "value"] = math.nan
shown = (groups[["group", "value", "ci_lo", "ci_hi", "n"]].set_index("group").astype(float)
         .rename(columns={"value": metric, "ci_lo": f"{metric}_ci_lo",
                          "ci_hi": f"{metric}_ci_hi"}))
shown = pd.concat([shown, pd.DataFrame(
    {metric: [table.loc[row, metric] for row in ("micro", "macro") if row in table.index]},
    index=[row for row in ("micro", "macro") if row in table.index], dtype=float)])
names = criterion_names((ev.run or {}).get("inputs"))
display.plot(per_criterion_figure(shown, metric, label=registry.label(metric),
                                  names=names),
             key="per_criterion_chart")
n_criteria = len(table) - 2
methods = sorted(set(groups["ci_method"].dropna()))
# One caption (each element is drawn by the browser on every open of the page).
st.caption((f"Intervals from {data.LIVE_RESAMPLES:,} resamples per criterion; the "
            f"configured {ev.config.bootstrap:,} are being computed (below) and will "
            "replace them here.\n\n" if refining else "")
           + "Dots: each criterion, with its 95% interval (" + ("; ".join(methods) or "none: "
           + display.intervals_hint(v)) + "). Lines: micro (pooled) and "
           f"macro (mean over the criteria where {registry.label(metric)} is defined: "
           f"{counts.get(metric, 0)} of {n_criteria}).")
focus = groups.rename(columns={"group": "criterion", "value": registry.label(metric)})
focus["status"] = ["" if ok else "undefined: only one class present" if k in (0, n)
                   else "undefined" for ok, k, n in zip(focus["defined"], focus["n_positive"],
                                                        focus["n"], strict=True)]
# Small cells: few queries, or few with evidence (the rarer class drives the interval).
focus["small_n"] = [display.small_n_note(n) or display.small_n_note(k).replace("n =", "positives =")
                    for n, k in zip(focus["n"], focus["n_positive"], strict=True)]
kind = display.kind_of(metric)
focus["ci_method"] = focus["ci_method"].fillna("not computed (bootstrap off)")
focus.insert(3, "95% CI", [display.fmt_interval(lo, hi, kind)
                           for lo, hi in zip(focus["ci_lo"], focus["ci_hi"], strict=True)])
number = st.column_config.NumberColumn(format=display.COLUMN_FORMATS[kind])
display.show_table(focus.drop(columns=["defined"]), key="per_criterion_focus",
                   column_config={registry.label(metric): number,
                                  "ci_method": st.column_config.TextColumn("interval")},
                   column_order=[c for c in focus.columns
                                 if c not in ("defined", "ci_lo", "ci_hi")])
# On demand: every metric of every criterion is the widest table of the app, and drawing it
# on each open of the page cost the browser more than the rest of the page.
every = display.on_demand("Every metric per criterion (point values)",
                          key="per_criterion_table_open")
if every is not None:
    with every:
        st.caption("All metrics per criterion at once, as in the per-criterion CSV; the "
                   "intervals of each are in the table above when it is the chosen metric.")
        full = table.reset_index()
        if "auroc_defined" in full:  # the one-class convention value is not shown as a number
            full.loc[full["auroc_defined"].eq(False), ["auroc", "auprc"]] = math.nan
        display.show_table(full, key="per_criterion_table")
if refining:  # last: everything above is drawn while the configured resamples are computed
    refinement.refine_group_intervals(v, ev.config)
