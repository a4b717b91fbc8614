"""Every dashboard setting in one place: key, default, type, widget bounds and URL encoding,
and the settings model, the session's one source of truth of the view's settings.

A setting's ``key`` is at once its widget key, its ``st.session_state`` key and its URL
query-string key, so a link reproduces the exact view. Defaults come from
:class:`metrics_core.config.EvalConfig`. Widgets are drawn from the model
(:func:`prepare_widget`) and write into it (:func:`from_widget`); a change of a threshold marks
it (:mod:`dashboard.provenance`); the link reads and writes the model (:mod:`dashboard.link`).

The encoding functions (:meth:`Setting.encode`, :meth:`Setting.decode`, :func:`build_config`)
are pure, so they are tested without a running app.
"""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

import streamlit as st

from dashboard.provenance import (
    GUARANTEES,
    PROVENANCE,
    THRESHOLD_FIELDS,
    THRESHOLD_NAMES,
    set_mark,
)
from metrics_core.config import (
    EXPLORATORY,
    GUARANTEED,
    PRESPECIFIED,
    VARIANT_LABELS,
    VARIANTS,
    EvalConfig,
    Filters,
    option,
    options,
)
from metrics_core.errors import SettingsError
from metrics_core.settings_file import cohort_bin_items, cohort_column_names

__all__ = [
    "ALL",
    "EXPLORATORY",
    "FILTER_KEYS",
    "GUARANTEED",
    "PRESPECIFIED",
    "SETTINGS",
    "Setting",
    "begin_run",
    "build_config",
    "current_settings",
    "filters_of",
    "model",
    "prepare_widget",
    "set_value",
    "setting",
    "setting_kind",
    "values_of",
]

#: Value of a fold / split filter that keeps everything.
ALL = "all"

# ---------------------------------------------------------------- session keys
# Every st.session_state key the dashboard uses that is not a setting (settings use their own
# ``Setting.key``), in one place.
#: This session has read its link (first run done), and what it noted about the link (shown
#: until a setting changes).
URL_LOADED = "_url_loaded"
LINK_NOTES = "_link_notes"
#: The session's data source (an upload) and the view the pages show.
SOURCE = "_source"
VIEW = "_view"
#: The view the page shows now, for downloads made on click (dashboard.data.ViewRef).
VIEW_REF = "_view_ref"
#: Evaluations of the last few settings (per session).
EVALUATIONS = "_evaluations"
#: What the live charts made of the curves (dashboard.chart_data.session_store).
CHART_DATA = "_chart_data"
#: The configuration whose resamples (above the server's live cap) the user asked for with
#: the page's button (dashboard.refinement.refine_intervals runs it, with progress and a cancel
#: button); the button's key and the cancel button's.
HEAVY_ASKED = "_heavy_asked"
#: The session's computing time of the last minute (dashboard.computing.CpuBudget).
CPU_BUDGET = "_cpu_budget"
RUN_HEAVY = "run_heavy"
CANCEL_HEAVY = "cancel_heavy"
#: Upload widgets and buttons.
UPLOAD_QUERIES = "upload_queries"
UPLOAD_CANDIDATES = "upload_candidates"
#: The Data page's posts table: its uploader, its buttons, a refused table's message and
#: this session's key in the server-wide memory budget for it.
UPLOAD_POSTS = "upload_posts"
LOAD_POSTS = "load_posts"
REMOVE_POSTS = "remove_posts"
POSTS_ERROR = "_posts_error"
POSTS_HOLDER = "_posts_holder"
LOAD_UPLOAD = "load_upload"
USE_DEMO = "use_demo"
#: Which demo the session shows (a token of dashboard.data.DEMOS); its radio's key.
DEMO_VARIANT = "demo_variant"
#: The triage demo's token (dashboard.data.DEMO_TRIAGE), the one demo a link names.
TRIAGE_DEMO = "demo_triage"
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
#: The data source the app's last run showed (a switch makes guaranteed thresholds
#: exploratory: dashboard.data.follow_data).
DATA_SHOWN = "_data_shown"
#: The data and gold labels the last view showed (a switch of the gold labels makes
#: guaranteed thresholds exploratory: dashboard.gold.follow_gold).
GOLD_SHOWN = "_gold_shown"
#: This session was marked not resumable (its uploads are freed when the tab closes).
RELEASE_MARKED = "_release_marked"
#: This session's key in the server-wide memory budget for uploads (dashboard.budget.Holder).
UPLOAD_HOLDER = "_upload_holder"
#: Case review's verdicts (per data source token: the adjudication table, in the session
#: only), the verdict form's widgets and the adjudication upload.
ADJ_VERDICTS = "_adjudication_verdicts"
#: The session's sources on an adjudicated gold (dashboard.gold.gold_source), newest last.
ADJ_SOURCES = "_adjudicated_sources"
#: Their key in the server-wide memory budget for uploads (each holds a copy of the labels),
#: and why the last one was not made (the budget reached).
ADJ_HOLDER = "_adjudicated_holder"
ADJ_REFUSED = "_adjudicated_refused"
ADJ_UPLOAD_SEEN = "_adjudication_upload_seen"
ADJ_ERROR = "_adjudication_error"
ADJ_NOTICE = "_adjudication_notice"
ADJ_UPLOAD = "adjudication_upload"
#: The cohort columns chosen on the Data page (the Cohorts page's groups: a setting, in the
#: link and settings.json), and the Cohorts page's metric.
COHORT_COLUMNS = "cohort_columns"
#: The bins of the chosen numeric cohort columns (``COLUMN=SPEC`` items, the CLI's
#: ``--cohort-bins``): a setting beside the cohort columns, in the link.
COHORT_BINS = "cohort_bins"
COHORT_METRIC = "cohort_metric"
#: The link's cohort settings that wait for data that have them (dashboard.pending_cohorts:
#: setting key -> values, the token of the data they were checked on, the posts table then and
#: the note naming them), whether the session's first run looked for them, and the message
#: about those a posts table lacked.
PENDING_COHORTS = "_pending_cohorts"
PENDING_CHECKED = "_pending_checked"
PENDING_MISSED = "_pending_missed"
#: The Data page's button that dismisses the link's cohort settings that wait.
DISMISS_PENDING = "dismiss_pending"
ADJ_DOWNLOAD = "adjudication_download"
VERDICT_CHOICE = "verdict_choice"
VERDICT_TARGET = "verdict_target"
VERDICT_REVIEWER = "verdict_reviewer"
VERDICT_NOTE = "verdict_note"
VERDICT_SAVE = "verdict_save"
VERDICT_REMOVE = "verdict_remove"
CASE_REVIEWED = "case_reviewed"
CASE_STATES = "case_states"
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
#: The compared runs' key in the server-wide memory budget for uploads.
COMPARE_HOLDER = "_compare_holder"
#: The RAG page's file's key in the server-wide memory budget for uploads.
RAG_HOLDER = "_rag_holder"
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
#: How each threshold got its value, and the guaranteed ones' guarantees: PROVENANCE and
#: GUARANTEES, kept by dashboard.provenance.
#: The one source of truth of the view's settings: setting key -> value (validated). Widgets
#: are drawn from it and write into it; a widget's own state (kept under the setting's key) is
#: dropped by Streamlit whenever a page does not draw it, the model is not.
MODEL = "_settings_model"
#: The link's own query-string keys (the thresholds' marks): dashboard.link's EXPLORED_PARAM
#: and GUARANTEED_PARAM.
#: Number inputs beside the gate and γ sliders (typing = pre-specified): the base of their
#: widget keys.
GATE_INPUTS = ("gate_tau_neg_input", "gate_tau_pos_input")
GAMMA_INPUT = "gamma_input"
#: Slider setting -> its typed boxes.
TYPED_BOXES = MappingProxyType({"gate": GATE_INPUTS, "gamma": (GAMMA_INPUT,)})
#: The slider value a run drew beside the typed boxes ("_rendered_gate", "_rendered_gamma"):
#: a box change that arrives with a moved slider is the box's stale value, not typing.
RENDERED_PREFIX = "_rendered_"
#: Per slider: the generation of its typed boxes (part of their widget keys; see
#: dashboard.sidebar.box_keys) and the values they show.
BOX_GENERATION = "_box_generation"
BOX_VALUES = "_box_values"
#: Set by a setting widget's change (before the run that it starts); read and cleared by
#: keep_widget_values, which says in REASSIGNED whether this run assigned the settings again.
SETTING_MOVED = "_setting_moved"
REASSIGNED = "_settings_reassigned"
#: Set by :func:`quiet_rerun` for the run it queues (read and cleared by begin_run): that run
#: starts from the widgets' values the browser shows and assigns none again.
QUIET_RERUN = "_quiet_rerun"

_DEFAULT = EvalConfig()
#: The list filters' settings -> their :class:`Filters` fields.
_FILTER_FIELDS = MappingProxyType({"criterion": "criteria", "cohort": "cohorts"})
#: Most values a list setting may hold in a link, and the longest value a link may carry.
MAX_ITEMS = 64
MAX_TEXT = 200


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
    control: str = "slider"  # float settings: "slider" or "number"; a choice: "radio"

    # ------------------------------------------------------------------ encoding
    def encode(self, value) -> str | list[str]:
        """The query-string form of ``value``."""
        if self.kind == "range":
            lo, hi = value
            return f"{_num(lo)},{_num(hi)}"
        if self.kind == "bool":
            return "1" if value else "0"
        if self.kind == "int":
            return str(int(value))  # exactly: 1234567 stays 1234567
        if self.kind == "float":
            return _num(value)
        if self.kind == "multi":
            return [str(v) for v in value]
        if self.kind == "gates":
            return [f"{name}:{_num(lo)}:{_num(hi)}" for name, lo, hi in value]
        return str(value)

    def decode(self, raw: str | list[str]):
        """The value written as ``raw`` (ValueError naming the setting if it is not valid):
        parsed, then validated as :meth:`validate` does."""
        items = [raw] if isinstance(raw, str) else list(raw)
        if self.kind in ("multi", "gates"):
            if len(items) > MAX_ITEMS:
                raise ValueError(f"{self.key} in the link has {len(items):,} values; at most "
                                 f"{MAX_ITEMS} are allowed")
            long = next((v for v in items if len(str(v)) > MAX_TEXT), None)
            if long is not None:
                raise ValueError(f"{self.key} in the link has a value of {len(str(long)):,} "
                                 f"characters; at most {MAX_TEXT} are allowed")
            if self.kind == "multi":
                return self.validate(tuple(str(v) for v in items if v != ""))
            return self.validate(self._gates(items))
        text = str(items[-1]).strip() if items else ""
        if len(text) > MAX_TEXT:
            raise ValueError(f"{self.key} in the link is {len(text):,} characters long; at "
                             f"most {MAX_TEXT} are allowed")
        try:
            if self.kind == "range":
                lo_text, sep, hi_text = text.partition(",")
                if not sep or "," in hi_text:
                    raise ValueError(f"expected two numbers τ_neg,τ_pos{self._within()}")
                value = (self._number(lo_text), self._number(hi_text))
                if value[0] > value[1]:
                    raise ValueError("the lower end is above the upper end (expected "
                                     "τ_neg ≤ τ_pos)")
            elif self.kind == "bool":
                if text.lower() not in ("1", "0", "true", "false"):
                    raise ValueError("expected 1 or 0")
                value = text.lower() in ("1", "true")
            elif self.kind in ("float", "int"):
                value = self._number(text)
            else:
                if self.kind == "choice" and text not in self.options:
                    raise ValueError(f"expected one of {', '.join(map(str, self.options))}")
                value = text if text or self.kind != "text" else ALL  # fold= keeps all
        except ValueError as exc:
            raise ValueError(f"{self.key}={short_repr(text)} in the link is not valid: "
                             f"{exc}") from None
        return self.validate(value)

    def validate(self, value):
        """``value`` checked by the configuration's own rules (:class:`EvalConfig`, the one
        schema of every setting) and normalised; ValueError naming the setting otherwise."""
        try:
            # Numbers keep their exact value (contract §13): a link's or a file's 1e-07 is
            # 1e-07, as on the command line (a slider's own step noise is taken off where
            # the slider's value comes in: from_widget).
            if self.kind == "range":
                value = tuple(float(v) for v in value)
            elif self.kind == "float":
                value = float(value)
            elif self.kind in ("multi", "gates"):
                value = tuple(tuple(v) if isinstance(v, list) else v for v in value)
            if self.key == COHORT_COLUMNS:  # the settings file's own rule of the names
                value = cohort_column_names(list(value))
            if self.key == COHORT_BINS:  # the CLI's own rule of the bins
                value = cohort_bin_items(value)
            if self.key in _FILTER_FIELDS:  # the configuration's own rule of the filter
                value = getattr(Filters(**{_FILTER_FIELDS[self.key]: value}),
                                _FILTER_FIELDS[self.key])
            if self.fields and self.fields != ("filters",):
                given = dict(zip(self.fields, value if self.kind == "range" else (value,),
                                 strict=True))
                checked = EvalConfig(**given)
                if self.kind not in ("range", "float"):
                    value = getattr(checked, self.fields[0])
        except SettingsError as exc:  # the item that breaks the rule
            shown = short_repr(exc.value if exc.has_value else value)
            raise ValueError(f"{self.key}={shown} is not valid: {exc.rule}") from None
        except (TypeError, ValueError, OverflowError) as exc:
            raise ValueError(f"{self.key}={short_repr(value)} is not valid: {exc}") from None
        return value

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
                raise ValueError(f"{self.key}={short_repr(item)} in the link is not valid: "
                                 f"expected criterion:τ_neg:τ_pos with "
                                 f"0 ≤ τ_neg ≤ τ_pos ≤ 1") from None
        return tuple({g[0]: g for g in gates}.values())

    def _number(self, text: str):
        text = text.strip()
        if self.kind == "int":
            if not re.fullmatch(r"[+-]?\d{1,30}", text):
                raise ValueError("expected a whole number" + self._within())
            value = int(text)
        else:
            try:
                value = float(text)
            except ValueError:
                raise ValueError("expected a number" + self._within()) from None
            if not math.isfinite(value):
                raise ValueError("expected a finite number" + self._within())
        if self.low is not None and value < self.low:
            raise ValueError(f"below the minimum {_num(self.low)}{self._range()}")
        if self.high is not None and value > self.high:
            raise ValueError(f"above the maximum {_num(self.high)}{self._range()}")
        return value

    def _within(self) -> str:
        if self.low is None or self.high is None:
            return ""
        return f" within [{_num(self.low)}, {_num(self.high)}]"

    def _range(self) -> str:
        """`` (expected a whole number within [0, 1000])``: the rule a refusal states."""
        if self.low is None or self.high is None:
            return ""
        what = "a whole number" if self.kind == "int" else "a number"
        return f" (expected {what} within [{_num(self.low)}, {_num(self.high)}])"

    def format_option(self, value) -> str:
        """Label of a choice value for the select box."""
        return self.option_labels.get(value, str(value))


def short_repr(value) -> str:
    """``repr(value)``, cut to a length a message can show."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "…"


def _num(value) -> str:
    """Shortest text that reads back as exactly the number (0.1 -> '0.1', 10.0 -> '10',
    1e-07 -> '1e-07', 0.6123456789 -> '0.6123456789')."""
    if isinstance(value, bool):
        return "1" if value else "0"
    value = float(value)
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


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
            _TAU.step, help="NEG if p < τ_neg, UNCERTAIN if τ_neg ≤ p < τ_pos, POS if "
                            "p ≥ τ_pos.", section="gate"),
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
    Setting("cohort", "Cohort", "multi", (), ("filters",), section="filters",
            help="Look at every page for one cohort (empty = all): values of the cohort "
                 "columns of the queries table (site, sex, age band…). Values of one column "
                 "are alternatives; values of two columns their intersection (site = S1 and "
                 "sex = F). 'missing' is the cohort of a missing value."),
    *_section("ranking"),
    *_section("calibration"),
    *_section("multilabel"),
    *(s for s in _section("uncertainty") if s.key != "seed"),
    Setting("ci", "Compute bootstrap CIs", "bool", True,
            help="On (the default): percentile CIs for every number without a Wilson "
                 "interval; 2,000 resamples while the settings move, then the resamples "
                 "above once they rest (a progress bar shows it). The resamples are drawn "
                 "once per data set and seed; a move re-weights them. Off: proportions "
                 "carry Wilson intervals only and the run records bootstrap = 0.",
            section="uncertainty"),
    _from_field("seed"),
    Setting("targets", "Targets", "multi", _DEFAULT.targets, ("targets",), section="targets",
            help=option("targets").help),
    Setting("gold", "Gold labels", "choice", "original",
            options=("original", "adjudicated", "adjudicated_unambiguous"),
            option_labels={"original": "Original gold",
                           "adjudicated": "Adjudicated gold",
                           "adjudicated_unambiguous": "Adjudicated, ambiguous left out"},
            section="gold", control="radio",
            help="Which labels every page, download and the record are computed on: the "
                 "files' own (original), or those corrected by the reviewers' verdicts of "
                 "Case review (adjudicated; the original numbers stay beside them). Not a "
                 "setting of the run: settings.json keeps the configuration only, and the "
                 "verdicts come with the adjudication file."),
    Setting(COHORT_COLUMNS, "Cohort columns (the Cohorts page's groups)", "multi", (),
            section="cohorts",
            help="Extra columns of the queries table (or of a posts table): a few values "
                 "each (site, sex), or numbers, cut into quartiles; two joined by '*' "
                 "(site*sex) are their intersection. A missing value is its own cohort. "
                 "Chosen on the Data & audit page; not a setting of the run (every metric "
                 "is the same), but in the link, settings.json and the record."),
    Setting(COHORT_BINS, "Bins of the numeric cohort columns", "multi", (),
            section="cohorts",
            help="COLUMN=SPEC for a numeric cohort column, as the command line's "
                 "--cohort-bins: qN for N quantile bins (q4, quartiles, by default) or "
                 "increasing edges such as 40,65. Chosen on the Data & audit page."),
)

_BY_KEY = {s.key: s for s in SETTINGS}
FILTER_KEYS = ("fold", "split", "criterion", "cohort")


def setting(key: str) -> Setting:
    """The registered setting called ``key``."""
    return _BY_KEY[key]


def build_config(values: Mapping[str, Any]) -> EvalConfig:
    """The :class:`EvalConfig` of the settings in ``values`` (missing ones take defaults)."""
    changes: dict[str, Any] = {}
    changes["filters"] = filters_of(values)
    for s in SETTINGS:
        if not s.fields or s.key not in values or s.fields == ("filters",):
            continue
        value = values[s.key]
        if s.kind == "range":
            changes[s.fields[0]], changes[s.fields[1]] = (float(v) for v in value)
        elif s.kind == "float":
            changes[s.fields[0]] = float(value)
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
                          "criterion": tuple(f.criteria),
                          "cohort": tuple(f.cohorts)}[s.key]
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
                   criteria=tuple(values.get("criterion", ()) or ()),
                   cohorts=tuple(values.get("cohort", ()) or ()))


# ------------------------------------------------------------------ the settings model
def model() -> dict[str, Any]:
    """The session's settings: key -> value, every setting present (defaults first)."""
    m = st.session_state.get(MODEL)
    if m is None:
        m = st.session_state[MODEL] = {s.key: s.default for s in SETTINGS}
    return m


def value(key: str):
    """The current value of the setting ``key``."""
    return model()[key]


def _normalise(s: Setting, value):
    """A setting's value in its stored shape (validated where the configuration has a rule)."""
    if s.fields == ("filters",):
        if s.kind == "multi":
            return s.validate(tuple(str(v) for v in (value or ())))
        return ALL if value in (None, ALL) else str(value)
    if s.key in (COHORT_COLUMNS, COHORT_BINS):  # checked against the data by the sidebar
        return s.validate(tuple(value or ()))
    if not s.fields and s.kind == "choice":  # the gold switch
        if value not in s.options:
            raise ValueError(f"{s.key}={short_repr(value)} is not valid: expected one of "
                             f"{', '.join(s.options)}")
        return value
    if not s.fields:  # the bootstrap switch
        if not isinstance(value, bool):
            raise ValueError(f"{s.key}={short_repr(value)} is not valid: expected true or false")
        return value
    return s.validate(value)


def bin_columns(columns) -> tuple[str, ...]:
    """The columns the cohort ``columns`` chosen (an intersection ``site*age`` is two) may
    give bins to."""
    return tuple(dict.fromkeys(p.strip() for c in columns for p in str(c).split("*")))


def _drop_unchosen_bins(m: dict[str, Any]) -> None:
    """The bins of a column that no chosen cohort column uses leave the settings (contract
    §9, "Cohort bins chosen"): the link, settings.json and the record never carry them, and
    choosing the column again starts from its default bins."""
    parts = bin_columns(m[COHORT_COLUMNS])
    kept = tuple(item for item in m[COHORT_BINS] if item.split("=", 1)[0] in parts)
    if kept != tuple(m[COHORT_BINS]):
        m[COHORT_BINS] = kept


def _changed_fields(s: Setting, old, new) -> tuple[str, ...]:
    if s.kind == "range":
        return tuple(f for f, a, b in zip(s.fields, old, new, strict=True) if a != b)
    return s.fields if old != new else ()


def set_value(key: str, new, *, how: str | None = None,
              mark: tuple[str, ...] | None = None, guarantee=None) -> bool:
    """Set the setting ``key`` to ``new`` (validated; ValueError naming it otherwise).

    ``how`` (:data:`PRESPECIFIED` / :data:`EXPLORATORY` / :data:`GUARANTEED`, the latter with
    its ``guarantee``) marks the threshold fields this change changed, and only those
    (``mark``: these fields, changed or not). Returns whether the value changed.
    """
    s = _BY_KEY[key]
    new = _normalise(s, new)
    m = model()
    old = m[key]
    m[key] = new
    if key in (COHORT_COLUMNS, COHORT_BINS):
        _drop_unchosen_bins(m)
    if how is not None and key in THRESHOLD_FIELDS:
        for name in (mark if mark is not None else _changed_fields(s, old, new)):
            set_mark(name, how, guarantee)
    return old != new


def replace_all(values: Mapping[str, Any], explored: tuple[str, ...] = (),
                guaranteed: Mapping[str, Any] | None = None) -> None:
    """The settings of a link or a settings.json: every setting given is set, every other one
    returns to its default; every threshold is pre-specified except the fields in
    ``explored`` and those in ``guaranteed`` (field -> its ThresholdGuarantee; a field in
    both is exploratory)."""
    m = model()
    for s in SETTINGS:
        m[s.key] = _normalise(s, values[s.key]) if s.key in values else s.default
    _drop_unchosen_bins(m)
    kept = {name: g for name, g in (guaranteed or {}).items()
            if name in THRESHOLD_NAMES and name not in explored}
    st.session_state[PROVENANCE] = {
        **dict.fromkeys(kept, GUARANTEED),
        **{name: EXPLORATORY for name in explored if name in THRESHOLD_NAMES}}
    st.session_state[GUARANTEES] = kept
    st.session_state.pop(LINK_NOTES, None)
    st.session_state.pop(PENDING_COHORTS, None)  # the settings given replace those waiting


def begin_run() -> None:
    """At the start of the app's run and of a page fragment's own rerun: was it started by a
    setting's own change (:func:`setting_moved`) or by :func:`quiet_rerun`? Neither assigns
    the widgets again (:func:`prepare_widget`)."""
    moved = st.session_state.pop(SETTING_MOVED, False)
    quiet = st.session_state.pop(QUIET_RERUN, False)
    st.session_state[REASSIGNED] = not (moved or quiet)


def prepare_widget(key: str) -> None:
    """Before the widget of ``key`` is drawn: give it the model's value.

    The value is assigned whenever the widget has none (a page that did not draw it dropped
    its state) or another one, and on every run that a setting's own change did not start: a
    widget the browser draws after a later run has started (a click on the sidebar before it
    drew the settings) would otherwise fall back to its own minimum and send that back. On a
    run that a moved setting started, the browser has drawn the widget and its value is the
    model's (the change callback copied it), and an assignment would send the server's value,
    which during quick moves is already older than the browser's.
    """
    s = _BY_KEY[key]
    want = model()[key]
    want = list(want) if s.kind == "multi" else want
    have = st.session_state.get(key, _MISSING)
    if st.session_state.get(REASSIGNED, True) or not _same(have, want):
        st.session_state[key] = want


_MISSING = object()


def _same(a, b) -> bool:
    if a is _MISSING:
        return False
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


def from_widget(key: str) -> None:
    """A setting's widget changed in the browser (its ``on_change``): the model takes the
    widget's value; a moved threshold is exploratory (only the fields that moved)."""
    setting_moved()
    # A widget offers only valid values; should one not be, the model keeps its own.
    with contextlib.suppress(ValueError):
        set_value(key, _off_the_slider(_BY_KEY[key], st.session_state[key]),
                  how=EXPLORATORY if key in THRESHOLD_FIELDS else None)


def _off_the_slider(s: Setting, new):
    """A slider's value without the noise of its step arithmetic in the browser (0.1 + 3 ×
    0.01 arrives as 0.13000000000000003): six decimals, far below any slider step; a value
    that did not move keeps the model's exact value. Other widgets' values are kept as they
    come.

    A range slider moves one thumb at a time, but the browser sends both, and a thumb off
    the slider's grid (a typed 0.655, a guaranteed 0.083417, a link's 1e-07) comes back
    snapped to it (0.66, 0.08, 0): the thumb that did not move keeps the model's exact value
    (and its mark and guarantee: moving τ_pos marks τ_pos alone). The thumbs that moved are
    those that moved by a step or more; when neither did (an off-grid thumb moved one step
    onto the grid), the one that moved more."""
    if s.control != "slider" or s.kind not in ("float", "range"):
        return new
    old = model()[s.key]
    if s.kind == "float":
        return old if round(float(new), 6) == round(float(old), 6) else round(float(new), 6)
    got = tuple(round(float(n), 6) for n in new)
    was = tuple(float(o) for o in old)
    change = [abs(g - w) for g, w in zip(got, was, strict=True)]
    moved = [c >= float(s.step) - 1e-9 for c in change]
    if not any(moved) and max(change) > 1e-6:
        moved = [c == max(change) for c in change]
    kept = tuple(g if m else w for g, w, m in zip(got, was, moved, strict=True))
    return kept if kept[0] <= kept[1] else got


def fragment_rerun() -> bool:
    """True while a fragment reruns on its own (not as part of the app's run)."""
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    return bool(ctx is not None and ctx.fragment_ids_this_run)


def setting_moved() -> None:
    """Called by every setting widget's ``on_change`` (before the run)."""
    st.session_state[SETTING_MOVED] = True
    st.session_state.pop(LINK_NOTES, None)


def setting_kind(key: str) -> str | None:
    s = _BY_KEY.get(key)
    return None if s is None else s.kind


def current_settings() -> dict[str, Any]:
    """The current value of every setting (from the settings model)."""
    out = {}
    for s in SETTINGS:
        value = model()[s.key]
        if s.kind == "range":
            value = tuple(value)
        elif s.kind in ("multi", "gates"):
            value = tuple(value or ())
        out[s.key] = value
    return out


def link_settings() -> dict[str, Any]:
    """The settings the link writes: :func:`current_settings` with the link's cohort settings
    that wait for data that have them (:mod:`dashboard.pending_cohorts`), so that the link
    opened again waits for them too."""
    out = current_settings()
    waiting = st.session_state.get(PENDING_COHORTS) or {}
    for key in (COHORT_COLUMNS, COHORT_BINS, "cohort"):
        out[key] = (*out[key], *(v for v in waiting.get(key, ()) if v not in out[key]))
    return out
