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
from types import MappingProxyType
from typing import Any

import streamlit as st

from metrics_core.config import VARIANT_LABELS, VARIANTS, EvalConfig, Filters, option, options

__all__ = [
    "ALL",
    "FILTER_KEYS",
    "SETTINGS",
    "Setting",
    "build_config",
    "current_settings",
    "filters_of",
    "init_defaults",
    "load_from_url",
    "setting",
    "setting_kind",
    "settings_from_params",
    "url_params",
    "values_of",
    "write_to_url",
]

#: Value of a fold / split filter that keeps everything.
ALL = "all"

# ---------------------------------------------------------------- session keys
# Every st.session_state key the dashboard uses that is not a setting (settings use their own
# ``Setting.key``), in one place.
#: This session has read its link (first run done).
URL_LOADED = "_url_loaded"
#: The session's data source (an upload) and the view the pages show.
SOURCE = "_source"
VIEW = "_view"
#: The view the page shows now, for downloads made on click (dashboard.data.ViewRef).
VIEW_REF = "_view_ref"
#: Evaluations of the last few settings (per session).
EVALUATIONS = "_evaluations"
#: Upload widgets and buttons.
UPLOAD_QUERIES = "upload_queries"
UPLOAD_CANDIDATES = "upload_candidates"
LOAD_UPLOAD = "load_upload"
USE_DEMO = "use_demo"
#: Which demo the session shows (a token of dashboard.data.DEMOS); its radio's key.
DEMO_VARIANT = "demo_variant"
#: The failed upload's message (and its digest), and the sniffed columns of an upload.
UPLOAD_ERROR = "_upload_error"
SNIFFED = "_sniffed"
UPLOAD_DIGEST = "_upload_digest"
#: The upload widgets' fragment: a Load asks it for a rerun of the whole app; the file ids it
#: last drew.
UPLOAD_RERUN = "_upload_rerun"
UPLOAD_SEEN = "_upload_seen"
#: The data source the filters were last checked against (a switch resets them silently).
FILTERS_SOURCE = "_filters_source"
#: This session was marked not resumable (its uploads are freed when the tab closes).
RELEASE_MARKED = "_release_marked"
#: Column-mapping form: one select box per (table, canonical column), and its buttons.
MAP_PREFIX = "map_"
LOAD_MAPPED = "load_mapped"
DISMISS_UPLOAD_ERROR = "dismiss_upload_error"
#: Compare page: the uploaded runs, the loaded runs (with their digest), the demo runs switch.
COMPARE_FILES = "compare_files"
COMPARE_RUNS = "_compare_runs"
COMPARE_DEMO = "compare_demo"
COMPARE_REFERENCE = "compare_reference"
COMPARE_BOOTSTRAP = "compare_bootstrap"
COMPARE_RESULT = "_compare_result"
#: RAG page (seed 002): the uploaded JSON Lines file, the demo switch, the options, the kept
#: computation (bytes never leave the session) and the worst-samples metric.
RAG_FILE = "rag_file"
RAG_DEMO = "rag_demo"
RAG_SEMANTIC = "rag_semantic"
RAG_BOOTSTRAP = "rag_bootstrap"
RAG_RESULT = "_rag_result"
RAG_WORST_METRIC = "rag_worst_metric"
RAG_WORST_N = "rag_worst_n"
RAG_PAIR_SCENARIO = "rag_pair_scenario"
#: Decision record: title, notes, and the settings.json uploader.
RECORD_TITLE = "record_title"
RECORD_NOTES = "record_notes"
SETTINGS_FILE = "settings_file"
#: How each threshold got its value: field -> "pre-specified" or "exploratory".
PROVENANCE = "_threshold_provenance"
#: Number inputs beside the gate and γ sliders (typing = pre-specified).
GATE_INPUTS = ("gate_tau_neg_input", "gate_tau_pos_input")
GAMMA_INPUT = "gamma_input"
#: Slider setting -> its typed boxes.
TYPED_BOXES = MappingProxyType({"gate": GATE_INPUTS, "gamma": (GAMMA_INPUT,)})
#: The slider value a run drew beside the typed boxes ("_rendered_gate", "_rendered_gamma"):
#: a box change that arrives with a moved slider is the box's stale value, not typing.
RENDERED_PREFIX = "_rendered_"
#: Values the server sent to the typed boxes, newest last (per tuple of box keys).
BOX_HISTORY = "_box_history"
#: Set by a setting widget's change (before the run that it starts); read and cleared by
#: keep_widget_values, which says in REASSIGNED whether this run assigned the settings again.
SETTING_MOVED = "_setting_moved"
REASSIGNED = "_settings_reassigned"

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
        if self.kind == "gates":
            return [f"{name}:{_num(lo)}:{_num(hi)}" for name, lo, hi in value]
        return str(value)

    def decode(self, raw: str | list[str]):
        """The value written as ``raw`` (ValueError naming the setting if it is not valid)."""
        if self.kind == "multi":
            values = [raw] if isinstance(raw, str) else list(raw)
            return tuple(v for v in values if v != "")
        if self.kind == "gates":
            return self._gates([raw] if isinstance(raw, str) else list(raw))
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

    def _gates(self, items: list[str]) -> tuple:
        """``criterion:τ_neg:τ_pos`` items (the criterion may itself hold colons)."""
        from metrics_core.config import parse_criterion_gate

        gates = []
        for item in items:
            name, _, taus = str(item).rpartition(":")
            name, _, lo = name.rpartition(":")
            try:
                gates.append(parse_criterion_gate(f"{name}={lo}:{taus}"))
            except ValueError:
                raise ValueError(f"{self.key}={item!r} in the link is not valid: expected "
                                 f"criterion:τ_neg:τ_pos") from None
        return tuple({g[0]: g for g in gates}.values())

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


def _from_field(name: str) -> Setting:
    """The setting of one :class:`EvalConfig` field, from the field's own metadata."""
    opt = option(name)
    default = getattr(_DEFAULT, name)
    if name in VARIANTS:
        return Setting(name, opt.label, "choice", default, (name,), options=VARIANTS[name],
                       option_labels=VARIANT_LABELS[name], section=opt.section, help=opt.help)
    kind = "bool" if isinstance(default, bool) else type(default).__name__
    return Setting(name, opt.label, kind, default, (name,), opt.low, opt.high, opt.step,
                   help=opt.help, section=opt.section,
                   control="number" if opt.widget == "number" else "slider")


def _section(section: str) -> tuple[Setting, ...]:
    return tuple(_from_field(name) for name, opt in options().items()
                 if opt.section == section and opt.widget is not None)


_TAU = option("tau_neg")

#: The registry: every setting of the dashboard, in sidebar order. Settings of one config
#: field come from that field's metadata (metrics_core.config); the gate range, the filters and
#: the bootstrap switch are composed here.
SETTINGS: tuple[Setting, ...] = (
    Setting("gate", "Gate thresholds (τ_neg, τ_pos)", "range",
            (_DEFAULT.tau_neg, _DEFAULT.tau_pos), ("tau_neg", "tau_pos"), _TAU.low, _TAU.high,
            _TAU.step, help="NEG if p < τ_neg, UNCERTAIN if τ_neg ≤ p < τ_pos, POS if p ≥ τ_pos "
                            "(contract §6).", section="gate"),
    *_section("gate"),
    Setting("criterion_gates", "Per-criterion gate thresholds", "gates", (),
            ("criterion_gates",), section="gate",
            help="Criteria whose gate differs from the overall one: (criterion, τ_neg, "
                 "τ_pos)."),
    *_section("dynamic_k"),
    Setting("fold", "Fold", "text", ALL, ("filters",), section="filters",
            help="Evaluate one cross-validation fold only."),
    Setting("split", "Split", "text", ALL, ("filters",), section="filters",
            help="Evaluate one split only (e.g. TUNE / TEST)."),
    Setting("criterion", "Criteria", "multi", (), ("filters",), section="filters",
            help="Evaluate these criteria only (empty = all)."),
    *_section("ranking"),
    *_section("calibration"),
    *_section("multilabel"),
    *(s for s in _section("uncertainty") if s.key != "seed"),
    Setting("ci", "Compute bootstrap CIs", "bool", False,
            help="Off: proportions carry Wilson intervals and the run records bootstrap = 0. "
                 "On: percentile CIs for every other number; 2,000 resamples while the "
                 "settings move, then the resamples above once they rest (a progress bar "
                 "shows it). The resamples are drawn once per data set and seed; a move "
                 "re-weights them.",
            section="uncertainty"),
    _from_field("seed"),
    Setting("targets", "Targets", "multi", _DEFAULT.targets, ("targets",), section="targets",
            help=option("targets").help),
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
        if s.kind in ("multi", "gates"):
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
    changes["filters"] = filters_of(values)
    for s in SETTINGS:
        if not s.fields or s.key not in values or s.fields == ("filters",):
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
        elif s.kind == "gates":
            changes[s.fields[0]] = tuple(tuple(g) for g in value)
        else:
            changes[s.fields[0]] = value
    return EvalConfig(**changes)


def values_of(config: EvalConfig) -> dict[str, Any]:
    """The setting values that :func:`build_config` turns back into ``config`` (settings.json
    restores a view with them)."""
    out: dict[str, Any] = {}
    for s in SETTINGS:
        if s.fields == ("filters",):
            f = config.filters
            out[s.key] = {"fold": f.fold if f.fold is not None else ALL,
                          "split": f.split if f.split is not None else ALL,
                          "criterion": tuple(f.criteria)}[s.key]
        elif s.kind == "range":
            out[s.key] = tuple(getattr(config, name) for name in s.fields)
        elif s.fields:
            value = getattr(config, s.fields[0])
            out[s.key] = float(value) if s.kind == "float" else value
    return out


def filters_of(values: Mapping[str, Any]) -> Filters:
    """The data filters chosen in ``values`` (``all`` / empty keep everything)."""
    fold, split = values.get("fold", ALL), values.get("split", ALL)
    return Filters(fold=None if fold in (ALL, None) else str(fold),
                   split=None if split in (ALL, None) else str(split),
                   criteria=tuple(values.get("criterion", ()) or ()))


# ------------------------------------------------------------------ session and the URL
def init_defaults() -> None:
    """Put every setting's default into the session state (where not already set)."""
    for s in SETTINGS:
        if s.key not in st.session_state:
            st.session_state[s.key] = list(s.default) if s.kind == "multi" else s.default


def keep_widget_values(keys: tuple[str, ...] | None = None) -> None:
    """Assign every setting's value again, so the browser receives it with the widget, except
    on a run that a setting's own change started.

    A widget the browser draws after a later run has started (a click on the sidebar before
    it drew the settings) would otherwise fall back to its own minimum and send that back. On
    a run that a moved setting started the browser has drawn the settings (it was moved), and
    an assignment would send the server's value, which during quick moves is already older
    than the browser's and would undo the last moves. ``keys``: only these settings (a page
    fragment's rerun draws only its own).
    """
    moved = st.session_state.pop(SETTING_MOVED, False)
    st.session_state[REASSIGNED] = not moved
    if moved:
        return
    for s in SETTINGS:
        if s.key in st.session_state and (keys is None or s.key in keys):
            st.session_state[s.key] = st.session_state[s.key]


def fragment_rerun() -> bool:
    """True while a fragment reruns on its own (not as part of the app's run)."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    return bool(ctx is not None and ctx.fragment_ids_this_run)


def setting_moved() -> None:
    """Called by every setting widget's ``on_change`` (before the run)."""
    st.session_state[SETTING_MOVED] = True


def load_from_url() -> list[str]:
    """On a session's first run, read ``st.query_params`` into the session state.

    Returns notes about values in the link that were not understood (shown to the user).
    """
    if st.session_state.get(URL_LOADED):
        return []
    params = {key: st.query_params.get_all(key) for key in st.query_params}
    params = {k: (v[0] if len(v) == 1 and setting_kind(k) not in ("multi", "gates") else v)
              for k, v in params.items()}
    values, notes = settings_from_params(params)
    for key, value in values.items():
        st.session_state[key] = list(value) if _BY_KEY[key].kind == "multi" else value
        mark_prespecified(key)
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
        elif s.kind in ("multi", "gates"):
            value = tuple(value or ())
        out[s.key] = value
    return out


def write_to_url(values: Mapping[str, Any] | None = None, *, always: bool = False) -> None:
    """Write the settings into the query string (non-defaults only), if anything changed.

    ``always``: write even when the server's copy already matches (at the end of a run: an
    earlier, interrupted run's address may reach the browser after this run's start)."""
    wanted = url_params(current_settings() if values is None else values)
    present = {key: st.query_params.get_all(key) for key in st.query_params}
    present = {k: (v[0] if len(v) == 1 and setting_kind(k) not in ("multi", "gates") else v)
               for k, v in present.items()}
    if always or present != wanted:
        st.query_params.from_dict(wanted)


# ------------------------------------------------------------ pre-specified / exploratory
#: The thresholds whose provenance is shown, by setting key -> config fields.
THRESHOLD_FIELDS = MappingProxyType({
    "gate": ("tau_neg", "tau_pos"), "threshold": ("threshold",), "gamma": ("gamma",),
    "criterion_gates": ("criterion_gates",)})
PRESPECIFIED, EXPLORATORY = "pre-specified", "exploratory"


def _mark(key: str, how: str) -> None:
    marks = dict(st.session_state.get(PROVENANCE, {}))
    for name in THRESHOLD_FIELDS.get(key, ()):
        marks[name] = how
    st.session_state[PROVENANCE] = marks


def mark_prespecified(key: str) -> None:
    """The setting ``key`` was typed in, loaded from settings.json or from a link."""
    _mark(key, PRESPECIFIED)


def mark_exploratory(key: str) -> None:
    """The setting ``key`` was moved (or found) on the data shown."""
    _mark(key, EXPLORATORY)


def provenance(field_name: str) -> str:
    """``pre-specified`` (the default, typed, loaded) or ``exploratory`` (moved on the data)."""
    return st.session_state.get(PROVENANCE, {}).get(field_name, PRESPECIFIED)


def describe_thresholds(config: EvalConfig) -> str:
    """One line for every page: each threshold, its value and how it was chosen."""
    def mark(name):
        return "exploratory" if provenance(name) == EXPLORATORY else "pre-specified"

    parts = [f"τ_neg {config.tau_neg:g} ({mark('tau_neg')})",
             f"τ_pos {config.tau_pos:g} ({mark('tau_pos')})",
             f"τ {config.threshold:g} ({mark('threshold')})",
             f"γ {config.gamma:g} ({mark('gamma')})"]
    if config.criterion_gates:
        parts.append(f"{len(config.criterion_gates)} per-criterion gate(s) "
                     f"({mark('criterion_gates')})")
    return "Thresholds: " + "; ".join(parts)
