"""Every dashboard setting in one place: key, default, type, widget bounds and URL encoding.

A setting's ``key`` is at once its widget key, its ``st.session_state`` key and its URL
query-string key, so a link reproduces the exact view. Defaults come from
:class:`metrics_core.config.EvalConfig`. On the first run of a session :func:`load_from_url`
reads ``st.query_params`` into the session state; on every run :func:`write_to_url` writes the
current settings back (non-default values only, to keep links short).

The encoding functions (:meth:`Setting.encode`, :meth:`Setting.decode`, :func:`url_params`,
:func:`settings_from_params`, :func:`build_config`) are pure, so they are tested without a
running app.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import streamlit as st

from metrics_core.config import VARIANT_LABELS, VARIANTS, EvalConfig

__all__ = [
    "ALL",
    "FILTER_KEYS",
    "SETTINGS",
    "Setting",
    "build_config",
    "current_settings",
    "init_defaults",
    "load_from_url",
    "setting",
    "setting_kind",
    "settings_from_params",
    "url_params",
    "write_to_url",
]

#: Value of a fold / split filter that keeps everything.
ALL = "all"

#: Session key marking that this session has read its link (first run done).
URL_LOADED = "_url_loaded"

_DEFAULT = EvalConfig()


@dataclass(frozen=True)
class Setting:
    """One setting: how it is shown, stored and written in a link.

    ``kind`` is ``float`` / ``int`` (slider or number input), ``bool`` (toggle), ``choice``
    (select box over ``options``), ``range`` (a pair of floats, one range slider), ``text``
    (a free value checked against the data, e.g. a fold) or ``multi`` (a list of values,
    written as repeated query keys). ``fields`` are the :class:`EvalConfig` fields it sets
    (none for the data filters).
    """

    key: str
    label: str
    kind: str
    default: Any
    fields: tuple[str, ...] = ()
    low: float | None = None
    high: float | None = None
    step: float | None = None
    options: tuple = ()
    help: str = ""
    section: str = ""
    option_labels: Mapping[str, str] = field(default_factory=dict)
    control: str = "slider"  # float settings: "slider" or "number"

    # ------------------------------------------------------------------ encoding
    def encode(self, value) -> str | list[str]:
        """The query-string form of ``value``."""
        if self.kind == "range":
            lo, hi = value
            return f"{_num(lo)},{_num(hi)}"
        if self.kind == "bool":
            return "1" if value else "0"
        if self.kind in ("float", "int"):
            return _num(value)
        if self.kind == "multi":
            return [str(v) for v in value]
        return str(value)

    def decode(self, raw: str | list[str]):
        """The value written as ``raw`` (ValueError naming the setting if it is not valid)."""
        if self.kind == "multi":
            values = [raw] if isinstance(raw, str) else list(raw)
            return tuple(v for v in values if v != "")
        text = raw[-1] if isinstance(raw, list) else raw
        text = str(text).strip()
        try:
            if self.kind == "range":
                lo_text, hi_text = text.split(",")
                value = (self._number(lo_text), self._number(hi_text))
                if value[0] > value[1]:
                    raise ValueError("the lower end is above the upper end")
                return value
            if self.kind == "bool":
                if text.lower() not in ("1", "0", "true", "false"):
                    raise ValueError("expected 1 or 0")
                return text.lower() in ("1", "true")
            if self.kind in ("float", "int"):
                return self._number(text)
            if self.kind == "choice" and text not in self.options:
                raise ValueError(f"expected one of {', '.join(map(str, self.options))}")
            return text
        except ValueError as exc:
            raise ValueError(f"{self.key}={text!r} in the link is not valid: {exc}") from None

    def _number(self, text: str):
        value = float(text)
        if value != value:  # NaN
            raise ValueError("not a number")
        if self.kind == "int":
            if value != int(value):
                raise ValueError("expected a whole number")
            value = int(value)
        if self.low is not None and value < self.low:
            raise ValueError(f"below the minimum {_num(self.low)}")
        if self.high is not None and value > self.high:
            raise ValueError(f"above the maximum {_num(self.high)}")
        return value

    def format_option(self, value) -> str:
        """Label of a choice value for the select box."""
        return self.option_labels.get(value, str(value))


def _num(value) -> str:
    """Shortest plain text of a number (0.1 -> '0.1', 10.0 -> '10')."""
    if isinstance(value, bool):
        return "1" if value else "0"
    value = round(float(value), 6)
    return f"{value:g}" if abs(value) < 1e15 else str(value)


def _variant(name: str, label: str, section: str, help_: str = "") -> Setting:
    return Setting(name, label, "choice", getattr(_DEFAULT, name), (name,),
                   options=VARIANTS[name], option_labels=VARIANT_LABELS[name],
                   section=section, help=help_)


#: The registry: every setting of the dashboard, in sidebar order.
SETTINGS: tuple[Setting, ...] = (
    # --- gate and thresholds (contract §4, §6)
    Setting("gate", "Gate thresholds (τ_neg, τ_pos)", "range",
            (_DEFAULT.tau_neg, _DEFAULT.tau_pos), ("tau_neg", "tau_pos"), 0.0, 1.0, 0.01,
            help="NEG if p < τ_neg, UNCERTAIN if τ_neg ≤ p < τ_pos, POS if p ≥ τ_pos "
                 "(contract §6).", section="gate"),
    Setting("threshold", "Fixed threshold τ (confusion metrics)", "float", _DEFAULT.threshold,
            ("threshold",), 0.0, 1.0, 0.01,
            help="Predicted positive iff p ≥ τ (contract §4).", section="gate"),
    # --- dynamic-K (contract §7)
    Setting("gamma", "γ (cumulative mass, POS)", "float", _DEFAULT.gamma, ("gamma",),
            0.05, 1.0, 0.01, help="K is the smallest K whose cumulative mass reaches γ.",
            section="dynamic_k"),
    Setting("gamma_uncertain", "γ_uncertain (UNCERTAIN)", "float", _DEFAULT.gamma_uncertain,
            ("gamma_uncertain",), 0.05, 1.0, 0.01,
            help="γ used for UNCERTAIN queries under the gate-aware policy.",
            section="dynamic_k"),
    Setting("k_min", "k_min", "int", _DEFAULT.k_min, ("k_min",), 0, 100, 1,
            help="Fewest sentences selected (capped by the candidate count).",
            section="dynamic_k"),
    Setting("hard_cap", "Hard cap", "int", _DEFAULT.hard_cap, ("hard_cap",), 1, 200, 1,
            help="k_max = min(hard cap, ⌊n × k_max ratio⌋).", section="dynamic_k"),
    Setting("k_max_ratio", "k_max ratio", "float", _DEFAULT.k_max_ratio, ("k_max_ratio",),
            0.05, 1.0, 0.05, help="Share of the candidates that may be selected at most.",
            section="dynamic_k"),
    Setting("gate_aware", "Gate-aware policy (NEG → K = 0)", "bool", _DEFAULT.gate_aware,
            ("gate_aware",), help="NEG selects nothing, UNCERTAIN uses γ_uncertain, POS uses γ.",
            section="dynamic_k"),
    _variant("mass", "Candidate mass", "dynamic_k"),
    Setting("temperature", "Softmax temperature T", "float", _DEFAULT.temperature,
            ("temperature",), 0.01, 100.0, 0.1, section="dynamic_k", control="number"),
    _variant("evidence_protocol", "Evidence metrics on", "dynamic_k"),
    # --- data filters
    Setting("fold", "Fold", "text", ALL, section="filters",
            help="Evaluate one cross-validation fold only."),
    Setting("split", "Split", "text", ALL, section="filters",
            help="Evaluate one split only (e.g. TUNE / TEST)."),
    Setting("criterion", "Criteria", "multi", (), section="filters",
            help="Evaluate these criteria only (empty = all)."),
    # --- ranking variants (contract §3)
    _variant("ranking_protocol", "Ranking metrics on", "ranking"),
    _variant("precision_denominator", "Precision@K denominator", "ranking"),
    _variant("map_denominator", "MAP@K denominator", "ranking"),
    _variant("gain", "nDCG gain", "ranking"),
    # --- calibration (contract §5)
    _variant("calibration_view", "Calibration view", "calibration"),
    _variant("binning", "Binning", "calibration"),
    Setting("n_bins", "Number of bins", "int", _DEFAULT.n_bins, ("n_bins",), 2, 50, 1,
            section="calibration"),
    # --- per-post multi-label (contract §8)
    _variant("multilabel_rule", "Per-post decision rule", "multilabel"),
    # --- uncertainty (contract §9)
    Setting("bootstrap", "Bootstrap resamples (0 = off)", "int", _DEFAULT.bootstrap,
            ("bootstrap",), 0, 100_000, 500,
            help="Percentile 95% CIs for AUROC, AUPRC, ECE, Brier and the ranking means; "
                 "proportions always carry Wilson intervals.", section="uncertainty"),
    _variant("bootstrap_unit", "Bootstrap unit", "uncertainty"),
    Setting("ci", "Compute bootstrap CIs (slow: seconds per change)", "bool", False,
            help="Off: proportions carry Wilson intervals and the run records bootstrap = 0. "
                 "On: percentile CIs with the resamples above, recomputed at every change.",
            section="uncertainty"),
    Setting("seed", "Bootstrap seed", "int", _DEFAULT.seed, ("seed",), 0, 2**31 - 1, 1,
            section="uncertainty"),
)

_BY_KEY = {s.key: s for s in SETTINGS}
FILTER_KEYS = ("fold", "split", "criterion")


def setting(key: str) -> Setting:
    """The registered setting called ``key``."""
    return _BY_KEY[key]


# ---------------------------------------------------------------------- pure conversions
def url_params(values: Mapping[str, Any]) -> dict[str, str | list[str]]:
    """Query parameters for ``values``: only settings that differ from their default."""
    out: dict[str, str | list[str]] = {}
    for s in SETTINGS:
        if s.key not in values:
            continue
        value = values[s.key]
        if s.kind == "multi":
            value = tuple(value or ())
            if value == tuple(s.default):
                continue
        elif s.encode(value) == s.encode(s.default):
            continue
        out[s.key] = s.encode(value)
    return out


def settings_from_params(params: Mapping[str, str | list[str]]) -> tuple[dict, list[str]]:
    """Decode query parameters: ``(values, notes)``; a bad value is noted and skipped."""
    values: dict[str, Any] = {}
    notes: list[str] = []
    for key, raw in params.items():
        s = _BY_KEY.get(key)
        if s is None:
            continue
        try:
            values[key] = s.decode(raw)
        except ValueError as exc:
            notes.append(f"{exc}; the default is used instead.")
    return values, notes


def build_config(values: Mapping[str, Any]) -> EvalConfig:
    """The :class:`EvalConfig` of the settings in ``values`` (missing ones take defaults)."""
    changes: dict[str, Any] = {}
    for s in SETTINGS:
        if not s.fields or s.key not in values:
            continue
        value = values[s.key]
        if s.kind == "range":
            changes[s.fields[0]], changes[s.fields[1]] = (round(float(v), 6) for v in value)
        elif s.kind == "float":
            changes[s.fields[0]] = round(float(value), 6)
        elif s.kind == "int":
            changes[s.fields[0]] = int(value)
        elif s.kind == "bool":
            changes[s.fields[0]] = bool(value)
        else:
            changes[s.fields[0]] = value
    return EvalConfig(**changes)


# ------------------------------------------------------------------ session and the URL
def init_defaults() -> None:
    """Put every setting's default into the session state (where not already set)."""
    for s in SETTINGS:
        if s.key not in st.session_state:
            st.session_state[s.key] = list(s.default) if s.kind == "multi" else s.default
        else:
            # Re-assign on every run: a widget not drawn on a run (e.g. a click on the sidebar
            # before the browser has drawn it) would otherwise fall back to its own minimum.
            st.session_state[s.key] = st.session_state[s.key]


def load_from_url() -> list[str]:
    """On a session's first run, read ``st.query_params`` into the session state.

    Returns notes about values in the link that were not understood (shown to the user).
    """
    if st.session_state.get(URL_LOADED):
        return []
    params = {key: st.query_params.get_all(key) for key in st.query_params}
    params = {k: (v[0] if len(v) == 1 and setting_kind(k) != "multi" else v)
              for k, v in params.items()}
    values, notes = settings_from_params(params)
    for key, value in values.items():
        st.session_state[key] = list(value) if _BY_KEY[key].kind == "multi" else value
    st.session_state[URL_LOADED] = True
    return notes


def setting_kind(key: str) -> str | None:
    s = _BY_KEY.get(key)
    return None if s is None else s.kind


def current_settings() -> dict[str, Any]:
    """The current value of every setting (from the session state)."""
    out = {}
    for s in SETTINGS:
        value = st.session_state.get(s.key, s.default)
        if s.kind == "range":
            value = tuple(value)
        elif s.kind == "multi":
            value = tuple(value or ())
        out[s.key] = value
    return out


def write_to_url(values: Mapping[str, Any] | None = None) -> None:
    """Write the settings into the query string (non-defaults only), if anything changed."""
    wanted = url_params(current_settings() if values is None else values)
    present = {key: st.query_params.get_all(key) for key in st.query_params}
    present = {k: (v[0] if len(v) == 1 and setting_kind(k) != "multi" else v)
               for k, v in present.items()}
    if present != wanted:
        st.query_params.from_dict(wanted)
