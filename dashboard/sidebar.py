"""The settings and downloads part of the sidebar.

Every setting's widget comes from its :class:`dashboard.state.Setting` (itself generated from
the configuration's field metadata); filter values from a link that the data does not have
fall back to "all" with a note. Option values from the data (folds, splits, criteria) are shown
as text, never as markdown.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from dashboard import data, display, record, state
from dashboard.safe_text import escape_markdown
from dashboard.state import ALL, SETTINGS, Setting
from metrics_core.config import SECTIONS

__all__ = ["downloads_sidebar", "filters", "settings_sidebar"]

#: Sidebar sections and whether they start open.
_OPEN = ("gate", "dynamic_k")
_SECTIONS = ("gate", "dynamic_k", "filters", "ranking", "calibration", "multilabel",
             "uncertainty")


def _widget(s: Setting, *, options: tuple = (), disabled: bool = False) -> None:
    """The widget of a setting; its value lives under ``s.key`` in the session state."""
    common = {"key": s.key, "help": s.help or None, "disabled": disabled}
    if s.kind == "range" or (s.kind == "float" and s.control == "slider"):
        st.slider(s.label, float(s.low), float(s.high), step=float(s.step), **common)
    elif s.kind == "float":
        st.number_input(s.label, float(s.low), float(s.high), step=float(s.step), **common)
    elif s.kind == "int":
        st.number_input(s.label, int(s.low), int(s.high), step=int(s.step), **common)
    elif s.kind == "bool":
        st.toggle(s.label, **common)
    elif s.kind == "choice":
        st.selectbox(s.label, s.options, format_func=s.format_option, **common)
    elif s.kind == "text":
        st.selectbox(s.label, options, format_func=lambda v: "all" if v == ALL else str(v),
                     **common)
    elif s.kind == "multi":
        st.multiselect(s.label, options, placeholder="all", **common)


def _filter_options(source: data.Source) -> dict[str, tuple]:
    ds = source.dataset
    # pd.unique is hash-based and vectorised: cheap even at a million queries.
    folds = () if ds is None or ds.fold is None else tuple(
        str(f) for f in sorted(int(v) for v in pd.unique(ds.fold)))
    splits = () if ds is None or ds.split is None else tuple(
        sorted(str(v) for v in pd.unique(ds.split)))
    criteria = () if ds is None else tuple(ds.criteria)
    return {"fold": (ALL, *folds), "split": (ALL, *splits), "criterion": criteria}


def settings_sidebar(source: data.Source, notes: list[str]) -> None:
    options = _filter_options(source)
    # A filter value this data set does not have falls back to "all": with a note when it came
    # from a link, silently when the data source changed (the filter was for other data).
    switched = st.session_state.get(state.FILTERS_SOURCE) not in (None, source.token)
    st.session_state[state.FILTERS_SOURCE] = source.token
    for key in ("fold", "split"):
        if st.session_state.get(key) not in options[key]:
            if not switched:
                notes.append(f"{key}={st.session_state.get(key)!r} is not in this data set; "
                             f"showing all.")
            st.session_state[key] = ALL
    chosen = [c for c in st.session_state.get("criterion", []) if c in options["criterion"]]
    if chosen != list(st.session_state.get("criterion", [])):
        if not switched:
            notes.append("Some criteria in the link are not in this data set and were "
                         "dropped.")
        st.session_state["criterion"] = chosen
    for section in _SECTIONS:
        with st.expander(SECTIONS[section], expanded=section in _OPEN):
            for s in SETTINGS:
                if s.section != section:
                    continue
                if s.kind in ("text", "multi"):
                    _widget(s, options=options[s.key], disabled=len(options[s.key]) <= 1
                            and s.kind == "text")
                else:
                    _widget(s)
    st.caption("Every setting is in the page address: copy it to share this exact view.")


def downloads_sidebar(v: data.View) -> None:
    st.subheader("Downloads")
    st.download_button("metrics_master.json", data=lambda: v.evaluation.to_json(),
                       file_name="metrics_master.json", mime="application/json",
                       key="download_master", on_click="ignore", icon=":material/download:",
                       help="Every metric, the configuration and the checks at these settings.")
    display.download_csv("Per-query results (CSV)", lambda: v.evaluation.per_query,
                         "per_query.csv", key="download_per_query")
    display.download_csv("Per-criterion table (CSV)", lambda: v.evaluation.per_criterion,
                         "per_criterion.csv", key="download_per_criterion", index=True)
    st.download_button("settings.json", data=lambda: record.settings_json(v.evaluation),
                       file_name="settings.json", mime="application/json",
                       key="download_settings", on_click="ignore", icon=":material/tune:",
                       help="Every setting of this view; load it below (or give it to "
                            "`metrics-core report --settings`) to restore the view.")
    with st.expander("Restore settings", icon=":material/settings_backup_restore:"):
        st.file_uploader("settings.json", type=["json"], key=state.SETTINGS_FILE)
        st.button("Apply these settings", key="apply_settings", on_click=_apply_settings,
                  disabled=st.session_state.get(state.SETTINGS_FILE) is None)
    error = st.session_state.get("_settings_error")
    if error:
        st.error(escape_markdown(error), icon=":material/block:")


def _apply_settings() -> None:
    """Load an uploaded settings.json into the widgets (a callback: before the next run)."""
    import json

    from metrics_core.config import EvalConfig

    uploaded = st.session_state.get(state.SETTINGS_FILE)
    st.session_state.pop("_settings_error", None)
    try:
        payload = json.loads(uploaded.getvalue())
        config = EvalConfig.from_dict(payload.get("config", payload))
    except (AttributeError, TypeError, ValueError) as exc:
        st.session_state["_settings_error"] = f"settings.json was not applied: {exc}"
        return
    for key, value in state.values_of(config).items():
        st.session_state[key] = list(value) if isinstance(value, tuple) and key in (
            "criterion",) else value


def filters(values: dict) -> data.Filters:
    return data.Filters(fold=None if values["fold"] == ALL else str(values["fold"]),
                        split=None if values["split"] == ALL else str(values["split"]),
                        criteria=tuple(values["criterion"]))
