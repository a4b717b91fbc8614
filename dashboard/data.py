"""The data a page shows: the session's source and its view.

Two kinds of source: the bundled synthetic demo, and the user's upload. Their data never mix:

- The demo's :class:`~metrics_core.report.Evaluator` (and its filtered variants) live in
  ``st.cache_resource``: the data are synthetic and identical for everyone.
- Uploaded bytes, the loaded data set and its evaluators live in ``st.session_state`` only.
  Nothing uploaded is written to disk, logged, or put in a cache shared between sessions.

Everything that depends only on the data (sorting, curves, ranking arrays, mass profiles) is
cached inside the Evaluator; a settings change recomputes only the setting-dependent parts.
The :class:`View` (source, filters, settings) computes its evaluation with
:data:`LIVE_RESAMPLES` while the settings move; :mod:`dashboard.refinement` computes the rest,
:mod:`dashboard.evaluations` keeps them, :mod:`dashboard.computing` meters them against the
session's budget, :mod:`dashboard.server_settings` holds the server's limits and caps.

Sources: "contract §N" is section N of ``docs/CONTRACT.md``; "seed 003" is
``docs/seeds/003-evidence-pipeline-contract.txt``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import logging
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd
import streamlit as st

from dashboard import budget, state
from dashboard.computing import StepProgress, metered, over_budget, stop_if_closed
from dashboard.evaluations import evaluations_of, memo_of
from dashboard.server_settings import interaction_caps, memory_budget, upload_limits
from metrics_core import triage as mtriage
from metrics_core.config import EvalConfig, Filters
from metrics_core.demo import DEMO_LABEL, DEMO_PROBLEMS_LABEL, demo_paths
from metrics_core.errors import InputError, InputErrors
from metrics_core.evaluation.intervals import only_the_setting_left
from metrics_core.inputs import loading as mio
from metrics_core.metrics.confusion import confusion_sweep
from metrics_core.report import Evaluation, Evaluator
from metrics_core.run import Run, open_run

__all__ = [
    "Filters",
    "Source",
    "Upload",
    "View",
    "current_source",
    "demo_source",
    "exported_evaluation",
    "load_upload",
    "use_demo",
    "view",
]


_LOG = logging.getLogger("dashboard")
_SOURCE_KEY = state.SOURCE
_VIEW_KEY = state.VIEW
_EVAL_KEY = state.EVALUATIONS


@dataclass(eq=False)
class Source:
    """A data source: the demo or an upload (evidence data and / or a triage file).

    ``token`` identifies the source in memo keys. For an upload, ``base`` is the session's
    evaluator of the whole data set (never shared); it keeps its filtered evaluators itself.
    """

    kind: str  # "demo" | "upload"
    label: str
    synthetic: bool
    token: str
    loaded: mio.Loaded | None = None
    audit: object | None = None
    triage: mtriage.TriageData | None = None
    triage_label: str = ""
    files: tuple[str, ...] = ()
    base: Evaluator | None = None
    #: Columns mapped by hand in the upload's mapping form: (table, field) -> column or None.
    by_hand: dict = field(default_factory=dict)
    #: The queries table's columns that may name cohorts (contract §9), or None.
    cohorts: object | None = None
    #: A source whose gold is adjudicated (:mod:`dashboard.gold`): the original source, the
    #: verdicts and the queries kept; ``base`` is then the adjudicated evaluator. None for the
    #: files' own gold.
    adjudicated: object | None = None

    @property
    def is_triage(self) -> bool:
        """An upload that holds only a triage file (the triage view)."""
        return self.loaded is None and self.triage is not None

    @property
    def dataset(self):
        return None if self.loaded is None else self.loaded.dataset

    def evaluator(self, filters: Filters | None = None) -> Evaluator:
        """The evaluator of the filtered data set (the whole one's caches it)."""
        if self.loaded is None:
            raise InputError("this source has no evidence data (queries / candidates)")
        base = (_demo_evaluator(self.token == DEMO_PROBLEMS)
                if self.kind == "demo" and self.base is None else self.base)
        return base if filters is None else base.for_filters(filters)


#: Tokens of the demos: the plain one, the one with planted data problems, the triage one.
DEMO, DEMO_PROBLEMS, DEMO_TRIAGE = "demo", "demo_problems", state.TRIAGE_DEMO


DEMOS = MappingProxyType({DEMO: "Plain demo", DEMO_PROBLEMS: "Demo with data problems",
                          DEMO_TRIAGE: "Triage demo (abstaining classifier)"})


def _demo_files(problems: bool) -> tuple[Path, Path]:
    paths = demo_paths()
    return ((paths.problems_queries, paths.problems_candidates) if problems
            else (paths.queries, paths.candidates))


@st.cache_resource(show_spinner="Loading the synthetic demo data…")
def _demo_parts(problems: bool = False) -> tuple[Run, mtriage.TriageData, object]:
    """The demo's run (a failed audit is logged, not shown: it must not hide the data), the
    triage demo and the demo's cohort columns (synthetic)."""
    run = open_run(*_demo_files(problems), audit_failure="log")
    cohorts = _cohort_columns(_demo_files(problems)[0], run.loaded)
    _attach_cohorts(run, cohorts)
    return run, mtriage.load_triage(demo_paths().triage), cohorts


def _demo_evaluator(problems: bool = False) -> Evaluator:
    """The demo's evaluator (shared by every session, with the demo's run)."""
    return _demo_parts(problems)[0].evaluator


def demo_source(variant: str = DEMO) -> Source:
    """A bundled synthetic demo (cached for every session: it holds no real data): the plain
    evidence demo, the one with planted data problems that shows the audit at work, or the
    triage demo (an abstaining classifier, seed 004), which has its own pages."""
    if variant not in DEMOS:
        raise ValueError(f"unknown demo {variant!r}; one of {', '.join(DEMOS)}")
    problems = variant == DEMO_PROBLEMS
    run, triage, cohorts = _demo_parts(problems)
    if variant == DEMO_TRIAGE:
        return Source(kind="demo", label=f"{DEMO_LABEL} (triage)", synthetic=True,
                      token=DEMO_TRIAGE, triage=triage,
                      triage_label=f"{DEMO_LABEL} (triage)",
                      files=(demo_paths().triage.name,))
    label = DEMO_PROBLEMS_LABEL if problems else DEMO_LABEL
    return Source(kind="demo", label=label, synthetic=True, token=variant, loaded=run.loaded,
                  audit=run.audit, files=tuple(p.name for p in _demo_files(problems)),
                  cohorts=cohorts)


def _cohort_columns(queries, loaded, name=None, limits=None):
    """The queries table's possible cohort columns; None when they cannot be read."""
    from metrics_core.inputs.cohort_columns import cohort_columns

    try:
        return cohort_columns(queries, loaded, name=name, limits=limits)
    except (InputError, ValueError, KeyError):
        return None


def _attach_cohorts(run, columns) -> None:
    """The run's evaluator reads its cohort filter from ``columns`` (none: no cohort filter)."""
    if columns is not None:
        from metrics_core.inputs.cohort_columns import CohortSource

        run.evaluator.cohorts = CohortSource(columns, run.loaded)


def cohort_choices(source: Source) -> tuple[str, ...]:
    """The cohort columns one may choose on ``source``: its suggested columns (at most 20
    values, or numbers), then every pair of them as an intersection (``site*sex``)."""
    if source.cohorts is None or source.loaded is None:
        return ()
    single = tuple(source.cohorts.suggested)
    return (*single, *(f"{a}*{b}" for a, b in itertools.combinations(single, 2)))


def cohort_options(source: Source, bins: Mapping[str, str] | None = None
                   ) -> tuple[str, ...]:
    """``column=value`` for every value of the source's suggested cohort columns (the
    sidebar's cohort filter; a missing value is the value ``missing``), a numeric column cut
    by its bins in ``bins`` (the view's: :func:`settings_bins`; a column without: its default
    bins), as the filter's evaluation cuts it (contract §9, cohort filter); a column that
    cannot be read is left out."""
    if source.cohorts is None or source.loaded is None:
        return ()
    reader = source.evaluator().cohorts
    bins = bins or {}
    out = []
    for column in source.cohorts.suggested:
        try:
            values = reader.values([column], bins={column: bins[column]} if column in bins
                                   else None)[column]
        except (InputError, ValueError):
            continue
        out.extend(f"{column}={value}" for value in values)
    return tuple(out)


def numeric_cohort_columns(source: Source, columns) -> tuple[str, ...]:
    """The numeric columns among the cohort ``columns`` (and their intersections' parts):
    those one may give bins."""
    if source.cohorts is None:
        return ()
    # the queries table's columns, and a posts table's (dashboard.posts.CohortTables): each
    # column read from the first table that has it, as the cohorts are
    frames = [t.frame for t in getattr(source.cohorts, "tables", (source.cohorts,))]
    out = []
    for part in dict.fromkeys(p.strip() for c in columns for p in str(c).split("*")):
        frame = next((f for f in frames if part in f.columns), None)
        if (frame is not None and pd.api.types.is_numeric_dtype(frame[part].dtype)
                and not pd.api.types.is_bool_dtype(frame[part].dtype)):
            out.append(part)
    return tuple(out)


def chosen_bins(source: Source, columns, bins: Mapping[str, str]) -> dict[str, str]:
    """The bins ``bins`` of the numeric ones of the cohort ``columns`` (others left out)."""
    numeric = numeric_cohort_columns(source, columns)
    return {c: b for c, b in bins.items() if c in numeric}


def settings_bins(source: Source, values: Mapping[str, Any]) -> dict[str, str]:
    """The bins the view of the settings ``values`` cuts its numeric cohort columns with
    (the Cohorts page's and the cohort filter's): ``values``' ``cohort_bins`` of its chosen
    cohort columns that ``source`` offers, the numeric ones only (:func:`chosen_bins`)."""
    choices = cohort_choices(source)
    columns = tuple(c for c in values[state.COHORT_COLUMNS] if c in choices)
    return chosen_bins(source, columns, dict(
        str(item).split("=", 1) for item in values[state.COHORT_BINS]))


def cohort_result(v: View, columns, *, in_page: bool = False, exported: bool = False):
    """The cohort tables of the view ``v`` for the chosen ``columns`` (kept in the source's
    evaluator per settings): a :class:`metrics_core.evaluation.cohorts.CohortResult`.
    ``in_page``: called in the session's run (not for a download made on click), which
    shows their progress and charges the session's computing budget. ``exported``: for the
    view's documents (metrics_master.json, the record), with the resamples of the view's run
    as the document states them, which ``metrics-core evaluate --cohort`` computes with the
    same settings; else the live resamples."""
    from metrics_core.evaluation.cohorts import evaluate_cohorts

    source = v.source
    attributes = source.cohorts.attributes(source.loaded, list(columns),
                                           bins=chosen_bins(source, columns, v.cohort_bins))
    kept = None if source.adjudicated is None else source.adjudicated.kept
    if kept is not None:  # the adjudicated gold without its ambiguous queries
        attributes = {k: dataclasses.replace(a, codes=a.codes[kept])
                      for k, a in attributes.items()}
    # The app's live resamples (2,000 at most): the page answers in seconds, with progress.
    config = v.config.replace(filters=v.filters, bootstrap=finder_resamples(v))
    if exported:
        config = v.evaluation.config
    if not in_page:
        return evaluate_cohorts(source.evaluator(), config, list(attributes.values()))
    progress = StepProgress(st.empty(), "Cohort intervals")
    with metered():
        result = evaluate_cohorts(source.evaluator(), config, list(attributes.values()),
                                  progress=progress)
    progress.done()
    return result


def cohort_resamples(v: View) -> tuple[int, int]:
    """(the Cohorts page's resamples, the view's documents'): :func:`cohort_result`'s live
    number and the view's run's, which metrics_master.json and the record use."""
    return finder_resamples(v), int(v.evaluation.config.bootstrap)


def exported_evaluation(v: View) -> Evaluation:
    """The view's run as its documents write it (metrics_master.json, the record's zip): with
    the cohort tables of the columns chosen on the Data page when there are any
    (:func:`cohort_result`, ``exported``), made on first use; the view's run itself, which
    other sessions may share, is left as it is."""
    if not v.cohort_columns or v.source.cohorts is None:
        return v.evaluation
    from metrics_core.evaluation.cohorts import document_tables

    return v.evaluation.with_tables(**document_tables(
        lambda: cohort_result(v, v.cohort_columns, exported=True)))


def current_source() -> Source:
    """The session's source: its upload if one was loaded, else the chosen demo."""
    source = st.session_state.get(_SOURCE_KEY)
    if source is not None:
        return source
    return demo_source(st.session_state.get(state.DEMO_VARIANT) or DEMO)


def use_demo(variant: str = DEMO) -> None:
    """Switch the session to a demo (an upload is dropped from memory, and from the budget)."""
    release_upload()
    release_upload(state.POSTS_HOLDER)
    st.session_state[_SOURCE_KEY] = None
    st.session_state[state.DEMO_VARIANT] = variant
    st.session_state.pop(_EVAL_KEY, None)
    st.session_state.pop(state.ADJ_SOURCES, None)  # the adjudicated gold of the data left
    release_upload(state.ADJ_HOLDER)


def follow_data(source: Source) -> list[str]:
    """At the start of the app's run: the session's data are ``source``. When they are not the
    data of the last run (another demo, an upload, another upload) a threshold set with a
    guarantee keeps its value and is exploratory, with a note
    (:func:`dashboard.provenance.data_switched`); the same data keep every mark (a posts table
    adds cohort columns to the same queries; a new session's link is read on its data).
    Returns the notes (kept with the link's until a setting changes)."""
    before = st.session_state.get(state.DATA_SHOWN)
    st.session_state[state.DATA_SHOWN] = source.token
    if before in (None, source.token):
        return []
    from dashboard import link, provenance

    notes = provenance.data_switched()
    for note in notes:
        link.keep_link_note(note)
    return notes


def set_source(source: Source) -> None:
    """Make ``source`` the session's source (session state only)."""
    st.session_state[_SOURCE_KEY] = source
    st.session_state.pop(_EVAL_KEY, None)
    st.session_state.pop(state.ADJ_SOURCES, None)  # the adjudicated gold of the data left
    release_upload(state.ADJ_HOLDER)


@dataclass(frozen=True)
class Upload:
    """Uploaded files held in memory: (name, bytes) of the queries (or long / triage) table
    and of the optional candidates table."""

    queries_name: str
    queries: bytes
    candidates_name: str | None = None
    candidates: bytes | None = None

    @cached_property
    def digest(self) -> str:
        """Short SHA-256 of names and bytes (identifies the upload in memo keys)."""
        h = hashlib.sha256()
        for part in (self.queries_name, self.queries, self.candidates_name or "",
                     self.candidates or b""):
            h.update(part.encode() if isinstance(part, str) else part)
            h.update(b"\0")
        return h.hexdigest()[:16]


#: The uploads of every session of this server process, against the memory budget
#: (numbers only: see dashboard.budget).
UPLOADS = budget.UploadBudget()


T = TypeVar("T")


def holder(slot: str = state.UPLOAD_HOLDER) -> budget.Holder:
    """This session's key in :data:`UPLOADS` for one kind of upload (``slot``: the data
    source's, :data:`state.UPLOAD_HOLDER`, or the compared runs', :data:`state.COMPARE_HOLDER`),
    made on first use and kept in its state."""
    holder = st.session_state.get(slot)
    if holder is None:
        holder = st.session_state[slot] = budget.Holder()
    return holder


def read_within_budget(slot: str, name: str, files: int, read: Callable[[], T],
                       contents: Callable[[T], object]) -> T:
    """``read()`` of uploaded files of ``files`` bytes, held to the server-wide memory budget
    (:func:`memory_budget`): refused before it is read when the files alone would pass it,
    else counted once read (the files and ``contents`` of what was read,
    :func:`dashboard.budget.held_bytes`) in place of what this session's ``slot`` held.

    Raises :class:`~metrics_core.errors.InputError` naming ``name``, the budget and the
    amounts when over it (nothing is recorded then: the session keeps what it held).
    """
    cap, key = memory_budget(), holder(slot)
    UPLOADS.check(key, files, cap, name=name)
    value = read()
    UPLOADS.claim(key, files + budget.held_bytes(contents(value)), cap, name=name)
    return value


def release_upload(slot: str = state.UPLOAD_HOLDER) -> None:
    """This session's ``slot`` holds no upload any more (for the budget)."""
    UPLOADS.release(holder(slot))


def load_upload(upload: Upload, *, mapping: dict | None = None) -> Source:
    """Read, validate and audit an upload; a single triage file becomes the triage view.

    The upload is held to the server-wide memory budget (:func:`read_within_budget`), in
    place of the session's previous upload.

    Raises :class:`~metrics_core.errors.InputError` for bad input or an upload over the budget
    (shown by the app; the session keeps its source).
    """
    name = ", ".join(n for n in (upload.queries_name, upload.candidates_name) if n)
    return read_within_budget(
        state.UPLOAD_HOLDER, name, len(upload.queries) + len(upload.candidates or b""),
        lambda: _read_upload(upload, mapping=mapping),
        lambda source: (source.loaded, source.audit, source.triage))


def _read_upload(upload: Upload, *, mapping: dict | None = None) -> Source:
    name = ", ".join(n for n in (upload.queries_name, upload.candidates_name) if n)
    if upload.candidates is None and not mapping:
        frame = mio.read_table(upload.queries, name=upload.queries_name, limits=upload_limits())
        if mtriage.detect_triage(frame):
            # read as the command line reads it: labels, verdicts and trial ids as text
            data = mtriage.load_triage(upload.queries, name=upload.queries_name,
                                       limits=upload_limits())
            return Source(kind="upload", label=f"Uploaded triage file: {upload.queries_name}",
                          synthetic=False, token=upload.digest, triage=data,
                          triage_label=upload.queries_name, files=(upload.queries_name,))
        try:
            run = open_run(upload.queries, queries_name=upload.queries_name,
                           tables=(frame, None), audit_failure="log")
        except InputError as exc:  # a triage file not read as one says why, first
            hint = mtriage.triage_hint(frame, name=upload.queries_name)
            if hint is None:
                raise
            raise InputErrors([hint, *(exc if isinstance(exc, InputErrors) else [exc])]
                              ) from None
    else:
        run = open_run(upload.queries, upload.candidates, queries_name=upload.queries_name,
                       candidates_name=upload.candidates_name, mapping=mapping,
                       limits=upload_limits(), audit_failure="log")
    files = tuple(n for n in (upload.queries_name, upload.candidates_name) if n)
    cohorts = _cohort_columns(upload.queries, run.loaded, upload.queries_name, upload_limits())
    _attach_cohorts(run, cohorts)
    return Source(kind="upload", label=f"Uploaded data: {name}", synthetic=False,
                  token=upload.digest + _mapping_digest(mapping), loaded=run.loaded,
                  audit=run.audit, files=files, by_hand=_by_hand(mapping), base=run.evaluator,
                  cohorts=cohorts)


def _by_hand(mapping) -> dict:
    """``(table, field) -> column`` of a mapping chosen by hand (one table: "queries")."""
    if not mapping:
        return {}
    tables = mapping if set(mapping) <= {"queries", "candidates"} else {"queries": mapping}
    return {(table, canon): src for table, chosen in tables.items()
            for canon, src in (chosen or {}).items()}


def _mapping_digest(mapping) -> str:
    if not mapping:
        return ""
    return hashlib.sha256(repr(sorted(mapping.items(), key=str)).encode()).hexdigest()[:8]


#: Bootstrap resamples while the settings move; the full number follows when they rest.
LIVE_RESAMPLES = 2_000


@dataclass(eq=False)
class View:
    """What a page shows: source, filters and settings, with lazily computed results."""

    source: Source
    filters: Filters
    config: EvalConfig
    show_bootstrap: bool = False
    #: How each threshold got its value when the view was made (dashboard.provenance.marks): the
    #: pages, settings.json and the record say what the view says.
    marks: Mapping[str, str] = field(default_factory=dict)
    #: The guarantees of the thresholds marked guaranteed (dashboard.provenance.guarantees).
    guarantees: Mapping[str, Any] = field(default_factory=dict)
    #: The full-resample configuration still to compute (set by a live-resample evaluation).
    pending: EvalConfig | None = None
    #: The configuration set, when its resamples are above the server's live cap
    #: (``max_live_resamples``): computed only when the user asks for it in the page.
    heavy: EvalConfig | None = None
    #: Why this view's intervals were not computed: the session's computing budget is spent
    #: (:func:`over_budget`'s message).
    paused: str | None = None
    #: Which gold the view is computed on, in words for the pages' headers
    #: (:func:`dashboard.gold.gold_source`).
    gold: str = "original (the files' labels)"
    #: The cohort columns chosen (the setting ``cohort_columns``, checked against the data:
    #: :func:`cohort_choices`): the Cohorts page's groups, the record's and settings.json's.
    cohort_columns: tuple[str, ...] = ()
    #: The bins of the chosen numeric cohort columns (the setting ``cohort_bins``, those of
    #: :func:`numeric_cohort_columns` only): ``{column: "q3" | "40,65"}``.
    cohort_bins: Mapping[str, str] = field(default_factory=dict)

    @property
    def evaluator(self) -> Evaluator:
        return self.source.evaluator(self.filters)

    @cached_property
    def evaluation(self) -> Evaluation:
        """All metrics at the current settings (memoised per session for recent settings).

        Bootstrap CIs are computed only when asked for (they take seconds, not milliseconds);
        otherwise the run is ``bootstrap = 0`` and the JSON records exactly that.
        """
        config = self.config.replace(filters=self.filters)
        if not self.show_bootstrap:
            config = config.replace(bootstrap=0)
        memo = memo_of(self.source)
        if (self.source.token, config) not in memo:
            most = live_cap(self.source)
            if config.bootstrap > most:
                # More resamples than this server computes without a click: the live cap's
                # now, the rest when asked for in the page (refine_intervals).
                self.heavy = config
                config = config.replace(bootstrap=most)
        quick = only_the_setting_left(self.evaluator, config)
        if (config.bootstrap > LIVE_RESAMPLES and not quick
                and (self.source.token, config) not in memo):
            # While the settings move: fewer resamples now, the full run once they rest
            # (refine_intervals, at the end of the run). Not when only the setting's own
            # intervals are left (a threshold move once the data's are made): the full number
            # at once costs a few milliseconds more than the live one and spares the page a
            # second run and drawing.
            self.pending = config
            config = config.replace(bootstrap=LIVE_RESAMPLES)
        key = (self.source.token, config)
        found = memo.get(key)
        if found is None and config.bootstrap:
            self.paused = over_budget()
            if self.paused is not None:  # spent: point values, no new bootstrap
                self.pending = self.heavy = None
                config = config.replace(bootstrap=0)
                key = (self.source.token, config)
                found = memo.get(key)
        if found is None:
            with metered():
                found = memo.compute(key, lambda: self.source.evaluator().evaluate(
                    config, progress=None if quick else _progress_bar(config)))
        return found

    @cached_property
    def operating_points(self) -> dict:
        """Confusion at τ_neg (screen-in), τ_pos (alert) and τ: the points on ROC / PR."""
        c = self.config
        sweep = confusion_sweep(self.evaluator.prepared(), thresholds=[c.tau_neg, c.tau_pos,
                                                                      c.threshold])
        return {"τ_neg (screened in)": sweep.at(0), "τ_pos (alert)": sweep.at(1),
                "τ (fixed threshold)": sweep.at(2)}

    def ranking_values(self, names) -> dict[str, np.ndarray]:
        """Per-query values of ranking metrics on the ranking protocol's queries."""
        per_query = self.evaluator.ranking(self.config)
        mask = self.evaluator.ranking_mask(self.config)
        return {name: per_query[name][mask] for name in names if name in per_query}

    def gamma_sweep(self) -> pd.DataFrame:
        return self.evaluation.gamma_sweep

    def gate_grid(self) -> pd.DataFrame:
        return self.evaluation.gate_grid

    def case_review(self) -> dict[str, pd.DataFrame]:
        return self.evaluator.case_review(self.config, self.evaluation)

    def sentences(self, post_id: str, criterion: str) -> pd.DataFrame:
        return self.evaluator.sentences(self.config, post_id, criterion)


def _full_config(v: View) -> EvalConfig:
    """The configuration of ``v``'s evaluation when none of its resamples are held back (no
    live, capped or paused intervals: :attr:`View.evaluation`)."""
    config = v.config.replace(filters=v.filters)
    return config if v.show_bootstrap else config.replace(bootstrap=0)


def _gate_of(config: EvalConfig, other: EvalConfig) -> EvalConfig:
    return config.replace(tau_neg=other.tau_neg, tau_pos=other.tau_pos)


def curves_unchanged(before: View, v: View) -> Evaluation | None:
    """The evaluation of the view ``before`` if ``v`` differs from it in τ_neg / τ_pos only
    and that evaluation is made already with all its resamples (not live, capped or paused):
    its ROC and PR curves, their areas and bands are then those of ``v``'s (they do not depend
    on the gate), to draw before ``v``'s evaluation is computed. None otherwise (also when
    ``before`` is ``v``)."""
    found = vars(before).get("evaluation")  # (made, not computed here)
    if (before is v or found is None or before.source.token != v.source.token
            or before.evaluator is not v.evaluator
            or before.show_bootstrap != v.show_bootstrap or found.config != _full_config(before)
            or _gate_of(_full_config(before), v.config) != _full_config(v)):
        return None
    return found


def gate_ahead(v: View):
    """The gate's outcome of ``v`` (counts, rates, their Wilson intervals) counted ahead of its
    evaluation: the same as ``v.evaluation.gate`` (the same states of the same queries)."""
    from metrics_core.metrics.gate import gate_summary

    ev = v.evaluator
    return gate_summary(ev.ds.y, ev.states(v.config))


def same_curves(shown: Evaluation | None, evaluation: Evaluation) -> bool:
    """True if the curves, areas and bands drawn from ``shown`` (:func:`curves_unchanged`;
    None: from ``evaluation`` itself) are those of ``evaluation``: the same configuration but
    for the gate."""
    return shown is None or _gate_of(evaluation.config, shown.config) == shown.config


def evaluation_at(source: Source, config: EvalConfig) -> Evaluation:
    """:func:`evaluations_of`' evaluation now (charged to the session's budget, with a
    progress bar for a long bootstrap)."""
    with metered():
        return evaluations_of(source)(config, _progress_bar(config))


def _progress_bar(config: EvalConfig):
    """A progress callback for a bootstrap run (None without one).

    Updating the bar is a Streamlit call: when the user moves a slider meanwhile, Streamlit
    stops this run there and starts the new one, so a long bootstrap is cancelled.
    """
    if config.bootstrap <= LIVE_RESAMPLES:
        # A live pass takes a fraction of a second: a bar would only send the browser a
        # redraw per batch before the charts.
        return None
    bar = st.progress(0.0, text="Bootstrap intervals…")

    def progress(done: int, total: int) -> None:
        stop_if_closed()
        bar.progress(done / total, text=f"Bootstrap intervals: {done:,} of {total:,} resamples")
        if done >= total:
            bar.empty()

    return progress


def finder_resamples(v: View) -> int:
    """Resamples of the threshold finder's re-selected intervals and of the Cohorts page (0
    with intervals off, or when the data are too large for live intervals: :func:`live_cap`)."""
    return min(v.config.bootstrap, LIVE_RESAMPLES, live_cap(v.source)) if v.show_bootstrap else 0


def live_cap(source: Source) -> int:
    """The most resamples computed for a view of ``source`` without the user asking in the
    page: ``[interaction] max_live_resamples``, and at most ``max_live_resample_rows``
    resamples times the data's queries (a bootstrap's work grows with both); 0 when that
    leaves fewer than :data:`LIVE_RESAMPLES`, the live resamples while the settings move (a
    data set that large shows point values, and its intervals run on the page's button)."""
    caps = interaction_caps()
    most = int(caps["max_live_resamples"])
    if source.loaded is None:
        return most
    by_size = int(caps["max_live_resample_rows"]) // max(source.loaded.dataset.n_queries, 1)
    if by_size >= most:
        return most
    return by_size if by_size >= LIVE_RESAMPLES else 0


@dataclass(eq=False)
class ViewRef:
    """The view the page shows now: the sidebar's downloads are made on click from it (a page
    fragment's rerun replaces the view of the app's run)."""

    view: View | None = None


def view_ref() -> ViewRef:
    """The session's :class:`ViewRef` (made on first use)."""
    ref = st.session_state.get(state.VIEW_REF)
    if ref is None:
        ref = st.session_state[state.VIEW_REF] = ViewRef()
    return ref


def set_view(v: View) -> None:
    st.session_state[_VIEW_KEY] = v
    view_ref().view = v


def view() -> View:
    """The view the app prepared for this run (pages call this)."""
    v = st.session_state.get(_VIEW_KEY)
    if v is None:
        raise InputError("no data loaded yet")
    return v
