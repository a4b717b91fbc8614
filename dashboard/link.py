"""The link: the view's settings in the query string, read on a session's first run and
written back on every run.

A setting's ``key`` is at once its widget key, its ``st.session_state`` key and its URL
query-string key, so a link reproduces the exact view. On the first run of a session
:func:`load_from_url` reads ``st.query_params`` into the settings model
(:mod:`dashboard.state`); on every run :func:`write_to_url` writes the current settings back
(non-default values only, to keep links short), with the thresholds' marks
(:mod:`dashboard.provenance`: ``explored=`` and ``guaranteed=``).

The conversions (:func:`url_params`, :func:`settings_from_params`,
:func:`explored_from_params`, :func:`guaranteed_from_params`, :func:`link_params`) are pure,
so they are tested without a running app.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import streamlit as st

from dashboard import provenance, state
from dashboard.provenance import THRESHOLD_NAMES
from dashboard.state import MAX_TEXT, SETTINGS, short_repr
from metrics_core.config import EXPLORATORY, GUARANTEED
from metrics_core.errors import first_listed

__all__ = ["DEMO_PARAM", "EXPLORED_PARAM", "GUARANTEED_PARAM", "LINK_CAPS", "STREAMLIT_PARAMS",
           "capped", "explored_from_params", "guaranteed_from_params", "keep_link_note",
           "link_notes", "link_params", "load_from_url", "settings_from_params", "url_params",
           "write_to_url"]

#: Query-string key listing the thresholds that are exploratory (so a shared link or a
#: restored settings.json cannot turn an exploratory threshold into a pre-specified one).
EXPLORED_PARAM = "explored"
#: Query-string key of each threshold set with a guarantee (repeated): field;target;delta;
#: tests;calibration;n (risk_control.ThresholdGuarantee.link).
GUARANTEED_PARAM = "guaranteed"
#: Query-string key of the triage demo (``demo=demo_triage``): a link to the triage demo, a
#: section of its own with no evidence settings, opens the triage demo.
DEMO_PARAM = "demo"


# ---------------------------------------------------------------------- pure conversions
def url_params(values: Mapping[str, Any]) -> dict[str, str | list[str]]:
    """Query parameters for ``values``: only settings that differ from their default."""
    out: dict[str, str | list[str]] = {}
    for s in SETTINGS:
        if s.key not in values:
            continue
        value = values[s.key]
        if s.kind in ("multi", "gates"):
            value = tuple(value or ())
            if value == tuple(s.default):
                continue
        elif s.encode(value) == s.encode(s.default):
            continue
        out[s.key] = s.encode(value)
    return out


#: Query-string keys of Streamlit's own (the embedded view's options), not settings.
STREAMLIT_PARAMS = ("embed", "embed_options")


def settings_from_params(params: Mapping[str, str | list[str]]) -> tuple[dict, list[str]]:
    """Decode query parameters: ``(values, notes)``; a bad value is noted and skipped, and so
    is a key that names no setting (a hand-edited ``tau_neg=0.05`` would otherwise leave the
    page at τ_neg's default without a word).

    >>> values, (note,) = settings_from_params({"gate": "0.05,0.6", "tau_neg": "0.05"})
    >>> values
    {'gate': (0.05, 0.6)}
    >>> print(note)  # doctest: +NORMALIZE_WHITESPACE
    'tau_neg' in the link is not a setting and was ignored: the gate's thresholds are set as
    gate=τ_neg,τ_pos (e.g. gate=0.05,0.6).
    """
    values: dict[str, Any] = {}
    notes: list[str] = []
    unknown = [key for key in params if state.setting_kind(key) is None
               and key not in (EXPLORED_PARAM, GUARANTEED_PARAM, DEMO_PARAM,
                               *STREAMLIT_PARAMS)]
    if unknown:
        notes.append(_unknown_note(unknown))
    for key, raw in params.items():
        if state.setting_kind(key) is None:  # not a setting
            continue
        s = state.setting(key)
        if not isinstance(raw, str) and s.kind not in ("multi", "gates"):
            given = list(dict.fromkeys(str(v).strip() for v in raw))
            if len(given) > 1:  # said twice: the last is taken, and the page says so
                shown = first_listed(given, 3, short_repr)
                last = short_repr(str(raw[-1]).strip())
                notes.append(f"{key} is given {len(raw):,} times in the link with different "
                             f"values ({shown}); the last, {last}, is used.")
            raw = str(raw[-1]) if raw else ""
        try:
            values[key] = s.decode(raw)
        except ValueError as exc:
            notes.append(f"{exc}; the default is used instead.")
    return values, notes


def _unknown_note(keys: list[str]) -> str:
    """What the link's keys that name no setting were, and where a threshold goes."""
    shown = first_listed(keys, 5, short_repr)
    verb = "is not a setting" if len(keys) == 1 else "are not settings"
    hint = ""
    if {"tau_neg", "tau_pos"} & set(keys):
        hint = ": the gate's thresholds are set as gate=τ_neg,τ_pos (e.g. gate=0.05,0.6)"
    return f"{shown} in the link {verb} and {'was' if len(keys) == 1 else 'were'} ignored{hint}."


# ------------------------------------------------------------------ the link
def _query() -> dict[str, str | list[str]]:
    params = {key: st.query_params.get_all(key) for key in st.query_params}
    return {k: (v[0] if len(v) == 1 and state.setting_kind(k) not in ("multi", "gates")
                and k != GUARANTEED_PARAM else v)
            for k, v in params.items()}


def explored_from_params(params: Mapping[str, str | list[str]]) -> tuple[tuple[str, ...],
                                                                        list[str]]:
    """The exploratory threshold fields a link names (``explored=tau_neg,gamma``)."""
    raw = params.get(EXPLORED_PARAM)
    if raw is None:
        return (), []
    text = ",".join([raw] if isinstance(raw, str) else raw)[:MAX_TEXT * 4]
    names = tuple(n for n in (t.strip() for t in text.split(",")) if n)
    unknown = [n for n in names if n not in THRESHOLD_NAMES]
    notes = ([f"{EXPLORED_PARAM}={short_repr(text)} in the link names unknown thresholds "
              f"({', '.join(unknown[:5])}); known: {', '.join(THRESHOLD_NAMES)}."]
             if unknown else [])
    return tuple(n for n in names if n in THRESHOLD_NAMES), notes


def guaranteed_from_params(params: Mapping[str, str | list[str]]
                           ) -> tuple[dict, tuple[str, ...], list[str]]:
    """The thresholds a link names as set with a guarantee (``guaranteed=`` values, see
    :data:`GUARANTEED_PARAM`): ``(field -> ThresholdGuarantee, fields, notes)``. A value
    that is not a valid guarantee is noted, and its threshold, if named, counts as
    exploratory (it was found on the data; a broken mark cannot make it pre-specified)."""
    from metrics_core.metrics.risk_control import ThresholdGuarantee

    raw = params.get(GUARANTEED_PARAM)
    if raw is None:
        return {}, (), []
    items = [raw] if isinstance(raw, str) else list(raw)
    found: dict[str, Any] = {}
    broken: list[str] = []
    notes: list[str] = []
    for item in items[:len(THRESHOLD_NAMES)]:
        try:
            name, g = ThresholdGuarantee.from_link(str(item)[:MAX_TEXT])
        except ValueError as exc:
            name = str(item).partition(";")[0]
            if name in THRESHOLD_NAMES:
                broken.append(name)
            notes.append(f"{GUARANTEED_PARAM}={short_repr(item)} in the link is not a valid "
                         f"guarantee: {exc}"
                         + (f"; {name} counts as exploratory." if name in THRESHOLD_NAMES
                            else "."))
            continue
        found[name] = g
    if len(items) > len(THRESHOLD_NAMES):
        notes.append(f"{GUARANTEED_PARAM} in the link is given {len(items)} times; at most "
                     f"{len(THRESHOLD_NAMES)} are read.")
    return found, tuple(broken), notes


#: The settings whose cost grows with their value, each with the key of the server's cap on
#: what a link or a settings file may ask for (``[interaction]`` in
#: ``.streamlit/metrics_core.toml``) and what it counts. Every other numeric setting costs the
#: same whatever its value (K bounds, γ, temperature, seed: the dynamic-K selection reads the
#: candidates once whatever K is; the γ sweep and the gate grid have fixed sizes), and every
#: list setting of a link is bounded by :data:`dashboard.state.MAX_ITEMS` and
#: :data:`dashboard.state.MAX_TEXT`.
LINK_CAPS = MappingProxyType({"bootstrap": ("max_link_resamples", "resamples", "Uncertainty"),
                              "n_bins": ("max_link_bins", "calibration bins", "Calibration")})


def capped(values: dict[str, Any], caps: Mapping[str, int], where: str) -> list[str]:
    """Refuse (drop, with a note) each value above what this server computes for a link or a
    settings file (``caps``: :data:`LINK_CAPS`' keys -> the most allowed): a link must not be
    able to keep a shared server busy for minutes."""
    notes = []
    for key, (cap_key, what, section) in LINK_CAPS.items():
        asked, most = values.get(key), caps.get(cap_key)
        if asked is None or most is None or asked <= most:
            continue
        del values[key]
        notes.append(f"{key}={asked:,} in the {where} asks for more {what} than this server "
                     f"computes for a {where} (at most {most:,}); the default is used "
                     f"instead. Set it under {section} to run it here, with progress.")
    return notes


def load_from_url(*, caps: Mapping[str, int] | None = None) -> list[str]:
    """On a session's first run, read ``st.query_params`` into the settings model.

    Returns notes about values in the link that were not understood (shown to the user); a
    bad value leaves its setting at the default and every other setting as the link gives it.
    ``caps``: the most a link may ask for (:data:`LINK_CAPS`; default: no cap).
    """
    if st.session_state.get(state.URL_LOADED):
        return []
    st.session_state[state.URL_LOADED] = True
    params = _query()
    values, notes = settings_from_params(params)
    notes += _demo_from_params(params)
    notes += capped(values, caps or {}, "link")
    explored, more = explored_from_params(params)
    guaranteed, broken, broken_notes = guaranteed_from_params(params)
    state.replace_all(values, explored + broken, guaranteed)
    more += broken_notes
    st.session_state[state.LINK_NOTES] = notes + more
    return notes + more


def _demo_from_params(params: Mapping[str, str | list[str]]) -> list[str]:
    """The link's triage demo (:data:`DEMO_PARAM`) chosen for the session; a note if the
    link names something else."""
    raw = params.get(DEMO_PARAM)
    if raw is None:
        return []
    token = str(raw if isinstance(raw, str) else (raw[-1] if raw else "")).strip()
    if token == state.TRIAGE_DEMO:
        st.session_state[state.DEMO_VARIANT] = token
        return []
    return [f"demo={short_repr(token)} in the link names no demo a link can open (only "
            f"{state.TRIAGE_DEMO}); the plain demo is shown."]


def keep_link_note(note: str) -> None:
    """Keep ``note`` with the link's notes (:func:`link_notes`), once."""
    kept = link_notes()
    if note not in kept:
        st.session_state[state.LINK_NOTES] = [*kept, note]


def link_notes() -> list[str]:
    """What the link this session opened with could not give (kept until a setting changes:
    the run that refines the intervals would otherwise take the notes away)."""
    return list(st.session_state.get(state.LINK_NOTES, ()))


def link_params(values: Mapping[str, Any], threshold_marks: Mapping[str, str],
                threshold_guarantees: Mapping[str, Any] | None = None
                ) -> dict[str, str | list[str]]:
    """The query string of a view: its non-default settings, its exploratory thresholds and
    its thresholds set with a guarantee (with the guarantee)."""
    out = url_params(values)
    explored = [n for n in THRESHOLD_NAMES if threshold_marks.get(n) == EXPLORATORY]
    if explored:
        out[EXPLORED_PARAM] = ",".join(explored)
    kept = threshold_guarantees or {}
    guaranteed = [kept[n].link(n) for n in THRESHOLD_NAMES
                  if threshold_marks.get(n) == GUARANTEED and n in kept]
    if guaranteed:
        out[GUARANTEED_PARAM] = guaranteed
    return out


def write_to_url(*, always: bool = False) -> None:
    """Write the settings into the query string (non-defaults only), if anything changed.

    ``always``: write even when the server's copy already matches (at the end of a run: an
    earlier, interrupted run's address may reach the browser after this run's start)."""
    wanted = link_params(state.link_settings(), provenance.marks(), provenance.guarantees())
    # the data of this run (dashboard.data.follow_data): the triage demo is named
    if st.session_state.get(state.DATA_SHOWN) == state.TRIAGE_DEMO:
        wanted[DEMO_PARAM] = state.TRIAGE_DEMO
    if always or _query() != wanted:
        st.query_params.from_dict(wanted)
