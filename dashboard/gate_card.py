"""The Gate page's three-state gate card: counts and rates with their Wilson intervals, the
targets' tiles with their verdicts, the same in words, and the card as a table."""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import pandas as pd
import streamlit as st

from dashboard import display
from metrics_core.report.wording import UNDEFINED, fmt, fmt_interval, kind_of, verdict_frame

__all__ = ["gate_card"]


def gate_card(v, *, table_on_demand: bool = False, gate=None) -> Callable[[], None]:
    """The three-state gate card: counts and rates, the targets, and the same in words, then
    the card as a table (denominators and metric ids); ``table_on_demand``: the table is drawn
    only while its expander is open (the Gate page, whose slider redraws the card on every
    move).

    ``gate``: the gate's outcome counted ahead of the view's evaluation (the Gate page after
    a move, :func:`dashboard.data.gate_ahead`): the counts, rates and words are drawn at once
    and the targets' verdicts and the table, which wait for the evaluation's intervals, by the
    function returned, in their places. Without it everything is drawn now (the function
    returned does nothing)."""
    from metrics_core.metrics.gate import per_thousand

    g = v.evaluation.gate if gate is None else gate
    c = v.config
    st.subheader("Three-state gate")
    st.caption(f"NEG if p < τ_neg = {c.tau_neg:g}; UNCERTAIN if τ_neg ≤ p < τ_pos = "
               f"{c.tau_pos:g}; POS if p ≥ τ_pos. All queries.")
    cols = st.columns(3)
    for col, (name, count, rate, key) in zip(cols, (
            ("NEG (auto-cleared)", g.count_neg, g.neg_rate, "neg_rate"),
            ("UNCERTAIN (review)", g.count_uncertain, g.uncertain_rate, "uncertain_rate"),
            ("POS (alert)", g.count_pos, g.pos_rate, "pos_rate")), strict=True):
        col.metric(name, fmt(count, "count"), help=f"share of queries: {fmt(rate)}",
                   border=True)
        lo, hi = g.ci(key) or (None, None)
        col.caption(f"{fmt(rate)} of {fmt(g.n, 'count')} queries; "
                    f"{display.ci_text(lo, hi, 'Wilson')}")
    targets = st.container()  # the targets' tiles: filled once the evaluation is made
    words = per_thousand(g)
    # The sentence and its intervals (small, grey, as a caption) in one element: a move
    # redraws every element of the card.
    st.markdown(words.sentence("queries (post × criterion)") + "\n\n:small[:gray["
                "Per 1,000 with 95% Wilson intervals: flagged "
                f"{_per_1000_ci(g, 'alert_rate_per_1000', 1)}, sent to review "
                f"{_per_1000_ci(g, 'uncertain_rate')}, auto-cleared "
                f"{_per_1000_ci(g, 'neg_rate')}, missed "
                f"{_per_1000_ci(g, 'screening_fn_per_1000', 1)}.]]")
    place = (display.on_demand("Gate metrics as a table (denominators, metric ids)",
                       key="gate_card_table_open") if table_on_demand
             else contextlib.nullcontext())

    def verdicts() -> None:
        judged = verdict_frame(v.evaluation)
        with targets:
            _gate_targets(v, judged)
        if place is not None:
            with place:
                display.show_records(display.gate_card_frame(v.evaluation.gate, judged.rename(
                    columns={"verdict": "status"})), key="gate_card_table")

    if gate is None:
        verdicts()
        return lambda: None
    return verdicts


def _gate_targets(v, judged: pd.DataFrame) -> None:
    """The gate card's tiles of the metrics with targets, each with its verdict (``judged``:
    :func:`verdict_frame` of the view's evaluation; met / not met on the whole interval,
    undecided, ...: the verdict every page gives)."""
    g = v.evaluation.gate
    by_metric = {r["metric"]: r for r in judged.to_dict("records")}
    cols = st.columns(3)
    for col, name in zip(cols, ("screening_sensitivity", "screening_fn_per_1000",
                                "alert_precision"), strict=True):
        t = by_metric.get(name)
        lo, hi = g.ci(name) or (None, None)
        value = display.fmt_metric(name, getattr(g, name))
        text = display.ci_text(lo, hi, "Wilson", kind_of(name))
        if value == UNDEFINED:
            text = display.GATE_UNDEFINED.get(name, "undefined: 0/0")
        if t is None:
            col.metric(display.GATE_LABELS[name], value, border=True, help=text)
        else:
            col.metric(display.GATE_LABELS[name], value,
                       delta=f"{t['verdict']}: target {t['target']}",
                       delta_color=display.VERDICTS[t["verdict"]][0], delta_arrow="off",
                       border=True, help=text)
        if value != UNDEFINED:  # (an undefined tile's reason names its empty denominator)
            n, noun = display.gate_denominator(g, name)
            text += f"; n = {fmt(n, 'count')} {noun}"
        col.caption(text)


def _per_1000_ci(g, name: str, scale: float = 1000) -> str:
    """A gate rate's Wilson interval per 1,000 queries, ``[3.1, 7.9]``."""
    lo, hi = g.ci(name) or (None, None)
    if lo is None:
        return "no interval"
    return fmt_interval(lo * scale, hi * scale, "per_1000")
