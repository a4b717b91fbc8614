"""How each threshold got its value: pre-specified (the default, typed, loaded), exploratory
(moved on the data) or guaranteed (found on the data with a guarantee).

The marks live in the session (:data:`PROVENANCE`, :data:`GUARANTEES`); the settings model
(:mod:`dashboard.state`) marks the threshold fields a change changed, the link
(:mod:`dashboard.link`) and settings.json carry them, and every page and the decision record
state them (:func:`describe_thresholds`).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import streamlit as st

from metrics_core.config import EXPLORATORY, GUARANTEED, PRESPECIFIED, EvalConfig
from metrics_core.config import THRESHOLD_FIELDS as THRESHOLD_NAMES

__all__ = ["GUARANTEES", "PROVENANCE", "THRESHOLD_FIELDS", "THRESHOLD_NAMES",
           "data_switched", "describe_thresholds", "guarantees", "mark_of", "marks",
           "set_mark"]

#: Session keys: how each threshold got its value: field -> "exploratory" or "guaranteed"
#: (absent: pre-specified); the guaranteed ones' guarantees: field ->
#: risk_control.ThresholdGuarantee.
PROVENANCE = "_threshold_provenance"
GUARANTEES = "_threshold_guarantees"
#: The thresholds whose provenance is shown, by setting key -> config fields.
THRESHOLD_FIELDS = MappingProxyType({
    "gate": ("tau_neg", "tau_pos"), "threshold": ("threshold",), "gamma": ("gamma",),
    "criterion_gates": ("criterion_gates",)})


def set_mark(name: str, how: str, guarantee=None) -> None:
    """Mark the threshold field ``name``: pre-specified, exploratory, or guaranteed with
    ``guarantee`` (a ThresholdGuarantee); any other mark drops the field's guarantee."""
    current = dict(st.session_state.get(PROVENANCE, {}))
    kept = dict(st.session_state.get(GUARANTEES, {}))
    kept.pop(name, None)
    if how == GUARANTEED:
        if guarantee is None:
            raise ValueError(f"{name}: a guaranteed threshold needs its guarantee")
        current[name], kept[name] = GUARANTEED, guarantee
    elif how == EXPLORATORY:
        current[name] = EXPLORATORY
    else:
        current.pop(name, None)
    st.session_state[PROVENANCE] = current
    st.session_state[GUARANTEES] = kept


#: How the note of a dropped guarantee names each threshold field.
_FIELD_NAMES = MappingProxyType({"tau_neg": "τ_neg", "tau_pos": "τ_pos", "threshold": "τ",
                                 "gamma": "γ", "criterion_gates": "the per-criterion gates"})


#: How the notes of :func:`data_switched` name what was shown before and what is shown now.
_SHOWN = MappingProxyType({"data": ("the data shown before", "these data"),
                           "gold": ("the gold labels shown before", "these gold labels")})


def data_switched(what: str = "data") -> list[str]:
    """Other data are shown (another demo, an upload, another upload; ``what="gold"``: the
    same queries with other gold labels, the adjudicated or the original): a guarantee was
    computed on the data left, so every guaranteed field keeps its value and becomes
    exploratory (found on data, with no guarantee on these; contract §9). Returns a note per
    field that lost its guarantee (none: nothing was guaranteed)."""
    before, now = _SHOWN[what]
    kept = dict(st.session_state.get(GUARANTEES, {}))
    current = dict(st.session_state.get(PROVENANCE, {}))
    dropped = [name for name in THRESHOLD_NAMES if current.get(name) == GUARANTEED]
    for name in dropped:
        current[name] = EXPLORATORY
    st.session_state[PROVENANCE] = current
    st.session_state[GUARANTEES] = {}
    return [f"{_FIELD_NAMES.get(name, name)} was set with a guarantee "
            f"({kept[name].target}, δ {kept[name].delta:g}, calibrated on "
            f"{kept[name].calibration_text}) on {before}; on {now} it keeps "
            f"its value and is exploratory (set it with a guarantee again on Decision support)."
            if name in kept else f"{_FIELD_NAMES.get(name, name)} was guaranteed on "
            f"{before}; on {now} it is exploratory." for name in dropped]


def mark_of(field_name: str) -> str:
    """``pre-specified`` (the default, typed, loaded), ``exploratory`` (moved on the data) or
    ``guaranteed`` (found on the data with a guarantee)."""
    return st.session_state.get(PROVENANCE, {}).get(field_name, PRESPECIFIED)


def describe_thresholds(config: EvalConfig, threshold_marks: Mapping[str, str] | None = None,
                        threshold_guarantees: Mapping[str, Any] | None = None) -> str:
    """One line for every page and the record: each threshold, its value and how it was
    chosen (``threshold_marks`` and ``threshold_guarantees``: the view's; default: the
    session's). A guaranteed threshold names its target, δ and calibration data."""
    from metrics_core.report.decision_record import thresholds_line

    got = marks() if threshold_marks is None else threshold_marks
    kept = (guarantees() if threshold_marks is None else {}) \
        if threshold_guarantees is None else threshold_guarantees
    return thresholds_line(config, got, kept)


def marks() -> dict[str, str]:
    """How each threshold field got its value (a copy): field -> pre-specified / exploratory /
    guaranteed."""
    return {name: mark_of(name) for fields_ in THRESHOLD_FIELDS.values()
            for name in fields_}


def guarantees() -> dict:
    """The guarantees of the thresholds marked guaranteed (a copy): field ->
    :class:`~metrics_core.metrics.risk_control.ThresholdGuarantee`."""
    return dict(st.session_state.get(GUARANTEES, {}))


