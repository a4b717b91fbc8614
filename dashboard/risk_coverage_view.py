"""Risk–coverage of a classifier that may abstain, as the gate and triage pages show it: AURC,
the optimal AURC and E-AURC with their intervals, then the curve (contract §6)."""

from __future__ import annotations

import streamlit as st

from dashboard import display
from dashboard.safe_text import escape_markdown
from metrics_core.report.figures.gate import risk_coverage_figure


def _interval(curve: dict, name: str) -> str | None:
    ci = (curve.get("ci95") or {}).get(name)
    return None if ci is None else f"95% interval {ci[0]:.4f} to {ci[1]:.4f}"


def show(curve: dict, *, key: str, explain: str) -> None:
    """The areas and the curve of ``curve`` (a ``RiskCoverage.to_dict``, or undefined with the
    reason); ``explain`` says what the confidence is."""
    if not curve.get("defined", True):
        st.info(escape_markdown(f"Risk–coverage is undefined: {curve['reason']}."),
                icon=":material/info:")
        return
    st.caption(escape_markdown(explain + " AURC is the area under the curve (lower is "
                               "better); the optimal AURC answers every correct sample before "
                               "any error; E-AURC, their difference, is what the ranking by "
                               "confidence loses."))
    a, b, c = st.columns(3)
    for column, name, label in ((a, "aurc", "AURC"), (b, "optimal_aurc", "Optimal AURC"),
                                (c, "excess_aurc", "E-AURC")):
        value = curve.get(name)
        column.metric(label, "undefined" if value is None else f"{value:.4f}",
                      help=_interval(curve, name))
    display.plot(risk_coverage_figure(curve), key=key)
