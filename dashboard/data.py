"""Data sources of the dashboard and the cached computations on them.

Two kinds of source: the bundled synthetic demo, and the user's upload. Their data never mix:

- The demo's :class:`~metrics_core.report.Evaluator` (and its filtered variants) live in
  ``st.cache_resource``: the data are synthetic and identical for everyone.
- Uploaded bytes, the loaded data set and its evaluators live in ``st.session_state`` only.
  Nothing uploaded is written to disk, logged, or put in a cache shared between sessions.

Everything that depends only on the data (sorting, curves, ranking arrays, mass profiles) is
cached inside the Evaluator; a settings change recomputes only the setting-dependent parts.

Sources: "contract §N" is section N of ``docs/CONTRACT.md``; "seed 003" is
``docs/seeds/003-evidence-pipeline-contract.txt``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import logging
import os
import re
import threading
import time
import tomllib
from collections import OrderedDict, deque
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
from metrics_core import triage as mtriage
from metrics_core.config import EvalConfig, Filters
from metrics_core.demo import DEMO_LABEL, DEMO_PROBLEMS_LABEL, demo_paths
from metrics_core.errors import InputError
from metrics_core.evaluation.intervals import only_the_setting_left
from metrics_core.inputs import loading as mio
from metrics_core.metrics.classification import confusion_sweep
from metrics_core.report import Evaluation, Evaluator
from metrics_core.run import Run, open_run

__all__ = [
    "Filters",
    "Source",
    "Upload",
    "View",
    "current_source",
    "demo_source",
    "load_upload",
    "use_demo",
    "view",
]

#: Evaluations kept per session (the last few settings, for instant back-and-forth).
_EVALUATIONS_KEPT = 3

_LOG = logging.getLogger("dashboard")
_SOURCE_KEY = state.SOURCE
_VIEW_KEY = state.VIEW
_EVAL_KEY = state.EVALUATIONS


# ------------------------------------------------------------------------------- sources
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
DEMO, DEMO_PROBLEMS, DEMO_TRIAGE = "demo", "demo_problems", "demo_triage"
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


def cohort_options(source: Source) -> tuple[str, ...]:
    """``column=value`` for every value of the source's suggested cohort columns (the
    sidebar's cohort filter; a missing value is the value ``missing``); a column that cannot
    be read is left out."""
    if source.cohorts is None or source.loaded is None:
        return ()
    reader = source.evaluator().cohorts
    out = []
    for column in source.cohorts.suggested:
        try:
            values = reader.values([column])[column]
        except (InputError, ValueError):
            continue
        out.extend(f"{column}={value}" for value in values)
    return tuple(out)


def cohort_result(v: View, columns, *, in_page: bool = False):
    """The cohort tables of the view ``v`` for the chosen ``columns`` (kept in the source's
    evaluator per settings): a :class:`metrics_core.evaluation.cohorts.CohortResult`.
    ``in_page``: called in the session's run (not for a download made on click), which
    shows their progress and charges the session's computing budget."""
    from metrics_core.evaluation.cohorts import evaluate_cohorts

    source = v.source
    attributes = source.cohorts.attributes(source.loaded, list(columns))
    kept = None if source.adjudicated is None else source.adjudicated.kept
    if kept is not None:  # the adjudicated gold without its ambiguous queries
        attributes = {k: dataclasses.replace(a, codes=a.codes[kept])
                      for k, a in attributes.items()}
    # The app's live resamples (2,000 at most): the page answers in seconds, with progress.
    config = v.config.replace(filters=v.filters, bootstrap=finder_resamples(v))
    if not in_page:
        return evaluate_cohorts(source.evaluator(), config, list(attributes.values()))
    progress = StepProgress(st.empty(), "Cohort intervals")
    with metered():
        result = evaluate_cohorts(source.evaluator(), config, list(attributes.values()),
                                  progress=progress)
    progress.done()
    return result


def current_source() -> Source:
    """The session's source: its upload if one was loaded, else the chosen demo."""
    source = st.session_state.get(_SOURCE_KEY)
    if source is not None:
        return source
    return demo_source(st.session_state.get(state.DEMO_VARIANT) or DEMO)


def use_demo(variant: str = DEMO) -> None:
    """Switch the session to a demo (an upload is dropped from memory, and from the budget)."""
    release_upload()
    st.session_state[_SOURCE_KEY] = None
    st.session_state[state.DEMO_VARIANT] = variant
    st.session_state.pop(_EVAL_KEY, None)


# ------------------------------------------------------------------------------- uploads
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


def _holder(slot: str = state.UPLOAD_HOLDER) -> budget.Holder:
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
    cap, holder = memory_budget(), _holder(slot)
    UPLOADS.check(holder, files, cap, name=name)
    value = read()
    UPLOADS.claim(holder, files + budget.held_bytes(contents(value)), cap, name=name)
    return value


def release_upload(slot: str = state.UPLOAD_HOLDER) -> None:
    """This session's ``slot`` holds no upload any more (for the budget)."""
    UPLOADS.release(_holder(slot))


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
            data = mtriage.parse_triage(frame, name=upload.queries_name)
            return Source(kind="upload", label=f"Uploaded triage file: {upload.queries_name}",
                          synthetic=False, token=upload.digest, triage=data,
                          triage_label=upload.queries_name, files=(upload.queries_name,))
        run = open_run(upload.queries, queries_name=upload.queries_name, tables=(frame, None),
                       audit_failure="log")
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


#: The server's own settings (upload limits, interaction caps, sign-in allow-list): the
#: ``[limits]``, ``[interaction]`` and ``[auth]`` tables of this file (in the package, beside the
#: server's Streamlit settings), else the defaults below.
LIMITS_FILE = Path(__file__).resolve().parent / ".streamlit" / "metrics_core.toml"
#: The environment variable that names another settings file in place of :data:`LIMITS_FILE`
#: (a deployment's own, kept outside the installed package).
SETTINGS_ENV = "METRICS_CORE_APP_SETTINGS"


def settings_file() -> Path:
    """The server's settings file: ``$METRICS_CORE_APP_SETTINGS`` if set, else
    :data:`LIMITS_FILE`."""
    return Path(os.environ.get(SETTINGS_ENV) or LIMITS_FILE)


#: A shared app server gets tighter defaults than the command line (Limits' own defaults).
#: 25M rows admit a 1,000,000-query set with about 20 candidates a query (the speed targets'
#: large case: 20.0M candidate rows, 176 MiB of Parquet content).
APP_LIMITS = MappingProxyType({"max_decompressed_bytes": 512 << 20, "max_rows": 25_000_000,
                               "max_columns": 200, "max_cell_bytes": 1 << 20})


#: Bytes the uploads of all sessions may hold together: ``[memory]`` of :data:`LIMITS_FILE`,
#: else this default (dashboard.budget).
#: ``shared_cache_bytes``: the most the evaluations shared between sessions (the bundled
#: demos') may hold; the server's memory for data is at most the sum of the two.
UPLOAD_BUDGET = MappingProxyType({"upload_budget_bytes": 4 << 30,
                                  "shared_cache_bytes": 256 << 20})


class ServerSettingsError(ValueError):
    """The server's settings file breaks a rule (shown as the server's problem, not the
    upload's)."""


#: What a link or a settings file may ask this server to compute, and what it computes
#: without a click: the ``[interaction]`` table of :data:`LIMITS_FILE`, else these defaults
#: (the command line has its own, larger bounds: metrics_core.config); the per-session
#: computing budget ``cpu_seconds_per_minute`` (:class:`CpuBudget`). ``max_link_resamples``
#: / ``max_link_bins``: the most bootstrap resamples / calibration bins a link or a settings
#: file may ask for (dashboard.state.LINK_CAPS); ``max_live_resamples``: the most resamples
#: computed for a view without the user asking in the page (more set under Uncertainty run on
#: the page's button, with progress and a cancel button).
INTERACTION = MappingProxyType({"max_link_resamples": 10_000, "max_link_bins": 100,
                                "max_live_resamples": 10_000, "cpu_seconds_per_minute": 40})


def _server_table(path: Path, table: str, defaults: Mapping, what: str) -> dict:
    """``defaults`` overridden by the ``[table]`` of ``path`` (an unknown key is an error)."""
    values = dict(defaults)
    if path.exists():
        with path.open("rb") as fh:
            try:
                given = tomllib.load(fh).get(table, {})
            except tomllib.TOMLDecodeError as exc:
                raise ServerSettingsError(f"{path.name} is not valid TOML: {exc}") from None
        unknown = sorted(set(given) - set(values))
        if unknown:
            raise ServerSettingsError(f"{path.name}: unknown {what} {', '.join(unknown)}; known: "
                                      f"{', '.join(values)}")
        values.update(given)
    return values


def interaction_caps(path: Path | None = None) -> dict[str, int]:
    """:data:`INTERACTION`, overridden by ``[interaction]`` in ``path`` (the
    :func:`settings_file` when not given)."""
    return _server_table(path or settings_file(), "interaction", INTERACTION,
                         "interaction settings")


def upload_limits(path: Path | None = None) -> mio.Limits:
    """The limits on uploads: :data:`APP_LIMITS`, overridden by ``[limits]`` in ``path`` (the
    :func:`settings_file` when not given)."""
    return mio.Limits(**_server_table(path or settings_file(), "limits", APP_LIMITS, "limits"))


def memory_budget(path: Path | None = None) -> int:
    """Bytes the uploads of all sessions may hold together: :data:`UPLOAD_BUDGET`, overridden
    by ``[memory]`` in ``path`` (the :func:`settings_file` when not given).

    Raises :class:`ServerSettingsError` naming the file, the field and the value when it is
    not a positive whole number.
    """
    return _memory_setting("upload_budget_bytes", path)


def shared_cache_budget(path: Path | None = None) -> int:
    """Bytes the evaluations shared between sessions may hold (``[memory]
    shared_cache_bytes``)."""
    return _memory_setting("shared_cache_bytes", path)


def _memory_setting(name: str, path: Path | None) -> int:
    path = path or settings_file()
    table = _server_table(path, "memory", UPLOAD_BUDGET, "memory settings")
    value = table[name]
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ServerSettingsError(f"{path.name}: [memory] {name} must be a "
                                  f"positive whole number of bytes; got {value!r}")
    return value


_ADDRESS = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")
_DOMAIN = re.compile(r"@[^@\s]+\.[^@\s]+")


def sign_in_allow(path: Path | None = None) -> tuple[str, ...]:
    """Who may use the app once signed in: ``allow`` of the ``[auth]`` table of ``path`` (the
    :func:`settings_file` when not given), e-mail addresses (``name@example.org``) and domains
    (``@example.org``), lower-cased; empty (the default) lets every signed-in user in.

    Raises :class:`ServerSettingsError` naming the file, the field and the value when an entry
    is neither.
    """
    path = path or settings_file()
    allow = _server_table(path, "auth", {"allow": []}, "sign-in settings")["allow"]
    if not isinstance(allow, list):
        raise ServerSettingsError(
            f"{path.name}: [auth] allow must be a list of e-mail addresses and domains, e.g. "
            f"[\"a@example.org\", \"@example.org\"]; got {allow!r}")
    for entry in allow:
        if not isinstance(entry, str) or not (_ADDRESS.fullmatch(entry)
                                              or _DOMAIN.fullmatch(entry)):
            raise ServerSettingsError(f"{path.name}: [auth] allow: {entry!r} is neither an "
                                      "e-mail address (name@example.org) nor a domain "
                                      "(@example.org)")
    return tuple(entry.lower() for entry in allow)


def is_allowed(email: object, allow: tuple[str, ...], *, verified: object = None) -> bool:
    """Whether a signed-in user with this e-mail address may use the app under ``allow``
    (:func:`sign_in_allow`): every user when ``allow`` is empty; else only an address listed,
    or one of a listed domain, that the provider does not say is unverified.

    >>> allow = ("ana@example.org", "@hospital.org")
    >>> [is_allowed(e, allow) for e in ("Ana@Example.org", "bo@hospital.org", "bo@example.org")]
    [True, True, False]
    >>> is_allowed("x@sub.hospital.org", allow), is_allowed(None, allow), is_allowed(None, ())
    (False, False, True)
    >>> is_allowed("bo@hospital.org", allow, verified=False)
    False
    """
    if not allow:
        return True
    if not isinstance(email, str) or verified is False or not _ADDRESS.fullmatch(email):
        return False
    email = email.lower()
    return email in allow or "@" + email.rsplit("@", 1)[1] in allow


def _mapping_digest(mapping) -> str:
    if not mapping:
        return ""
    return hashlib.sha256(repr(sorted(mapping.items(), key=str)).encode()).hexdigest()[:8]


def set_source(source: Source) -> None:
    """Make ``source`` the session's source (session state only)."""
    st.session_state[_SOURCE_KEY] = source
    st.session_state.pop(_EVAL_KEY, None)


# ------------------------------------------------------------------------ computing budget
class CpuBudget:
    """The computing time one session spent in the last minute, against the server's budget
    (``[interaction] cpu_seconds_per_minute``): the CPU time of the session's script thread
    (``time.thread_time``) around each computation of its views (:func:`metered`), and the
    CPU time of every helper thread the engine starts for the session's run (the resamples'
    draw and index generator, the setting's intervals, the curves, the tables and values
    built ahead, the warm-ups after a refinement: :mod:`metrics_core.cpu_account`), each
    measured inside its thread and charged when it ends. What another session computed and
    this one reads from the shared cache is not counted. Over the budget, the session's
    views show point values and the intervals it has (no new bootstrap) until the minute's
    spending falls below it."""

    WINDOW = 60.0

    def __init__(self) -> None:
        self._spent: deque = deque()  # (monotonic time at the end, CPU seconds)
        self._lock = threading.Lock()

    def charge(self, seconds: float, now: float | None = None) -> None:
        with self._lock:
            self._spent.append((time.monotonic() if now is None else now, max(seconds, 0.0)))

    def used(self, now: float | None = None) -> float:
        """CPU seconds of the last :attr:`WINDOW` seconds."""
        now = time.monotonic() if now is None else now
        with self._lock:
            while self._spent and self._spent[0][0] < now - self.WINDOW:
                self._spent.popleft()
            return sum(s for _, s in self._spent)

    def wait(self, limit: float, now: float | None = None) -> float:
        """Seconds until the minute's spending is below ``limit`` again (0: it is)."""
        now = time.monotonic() if now is None else now
        used = self.used(now)
        if used < limit:
            return 0.0
        with self._lock:
            for at, spent in self._spent:
                used -= spent
                if used < limit:
                    return max(at + self.WINDOW - now, 0.0)
        return self.WINDOW


def cpu_budget() -> CpuBudget:
    """The session's :class:`CpuBudget` (made on first use)."""
    meter = st.session_state.get(state.CPU_BUDGET)
    if meter is None:
        meter = st.session_state[state.CPU_BUDGET] = CpuBudget()
    return meter


def over_budget() -> str | None:
    """The message to show when this session has spent its computing budget, else None."""
    limit = float(interaction_caps()["cpu_seconds_per_minute"])
    meter = cpu_budget()
    used = meter.used()
    if used < limit:
        return None
    return (f"This session used {used:.0f} s of computing time in the last minute; this "
            f"server gives each session {limit:g} s a minute ([interaction] "
            f"cpu_seconds_per_minute). Until it falls below that (about "
            f"{max(meter.wait(limit), 1):.0f} s), new settings show point values and "
            f"intervals computed already; nothing else is computed.")


@contextlib.contextmanager
def metered(meter: CpuBudget | None = None):
    """Charge ``meter`` (the session's :class:`CpuBudget` when not given) with the
    computation inside (also when it fails or is stopped): this thread's CPU time, and that
    of the helper threads started inside, when each ends (:func:`charged_to_session`)."""
    meter = cpu_budget() if meter is None else meter
    start = time.thread_time()
    try:
        with charged_to_session(meter):
            yield
    finally:
        meter.charge(time.thread_time() - start)


def charged_to_session(meter: CpuBudget | None = None):
    """A context in which the helper threads started (by the engine or the app) pay their CPU
    time to ``meter`` (the session's :class:`CpuBudget` when not given) when they end; this
    thread's own time is not measured (:func:`metered` does)."""
    from metrics_core.cpu_account import charged_to

    return charged_to((cpu_budget() if meter is None else meter).charge)


# ------------------------------------------------------------------------------- the view
#: Bootstrap resamples while the settings move; the full number follows when they rest.
LIVE_RESAMPLES = 2_000


@dataclass(eq=False)
class View:
    """What a page shows: source, filters and settings, with lazily computed results."""

    source: Source
    filters: Filters
    config: EvalConfig
    show_bootstrap: bool = False
    #: How each threshold got its value when the view was made (dashboard.state.marks): the
    #: pages, settings.json and the record say what the view says.
    marks: Mapping[str, str] = field(default_factory=dict)
    #: The guarantees of the thresholds marked guaranteed (dashboard.state.guarantees).
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
        memo = _memo(self.source)
        if (self.source.token, config) not in memo:
            most = interaction_caps()["max_live_resamples"]
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


def evaluations_of(source: Source) -> Callable[..., Evaluation]:
    """A function giving the evaluation of ``source`` at exactly a configuration (filters
    included), from the same kept evaluations as the views' (computed when called if it is
    not kept): the original gold's beside an adjudicated view, at the resamples that view has.
    It holds what it needs, so a download can call it on click, outside the session's run."""
    memo, evaluator = _memo(source), source.evaluator()

    def at(config: EvalConfig, progress: Callable[[int, int], None] | None = None):
        return memo.compute((source.token, config),
                            lambda: evaluator.evaluate(config, progress=progress))

    return at


def evaluation_at(source: Source, config: EvalConfig) -> Evaluation:
    """:func:`evaluations_of`' evaluation now (charged to the session's budget, with a
    progress bar for a long bootstrap)."""
    with metered():
        return evaluations_of(source)(config, _progress_bar(config))


class _Evaluations:
    """The last few evaluations, newest last, keyed by (source token, configuration): at most
    ``kept`` of them and about ``max_bytes`` (:func:`dashboard.budget.held_bytes` of each when
    stored; the newest is always kept). Safe to share between the threads of several
    sessions: an evaluation asked for while another session computes it is waited for, not
    computed again (:meth:`compute`)."""

    def __init__(self, kept: int, max_bytes: int | None = None):
        from metrics_core.evaluation.inflight import ComputeOnce

        self._kept = kept
        self._max_bytes = max_bytes
        self._items: OrderedDict = OrderedDict()
        self._sizes: dict = {}
        self._once = ComputeOnce()
        self._lock = self._once.lock
        self._seen: set = set()

    def nbytes(self) -> int:
        """Bytes held by the evaluations kept (as estimated when each was stored)."""
        with self._lock:
            return sum(self._sizes.values())

    def compute(self, key, make, *, poll=None):
        """The evaluation of ``key``: kept, in the making by another thread (waited for), or
        made now by ``make()`` and kept. ``poll()`` is called a few times a second while
        another thread makes it (a Streamlit call there lets a new move stop this run instead
        of waiting for another session's computation to end)."""
        while poll is not None:
            with self._lock:
                running = None if key in self._items else self._once.running.get(key)
            if running is None:
                break
            while not running.wait(0.25):
                poll()

        def stored(k):
            found = self._items.get(k)
            if found is not None:
                self._items.move_to_end(k)
            return found is not None, found

        return self._once.get(key, stored, make, self._store)

    def first_time(self, key) -> bool:
        """True the first time ``key`` is asked about (work started once per key)."""
        with self._lock:
            if key in self._seen:
                return False
            self._seen.add(key)
            return True

    def __contains__(self, key) -> bool:
        with self._lock:
            return key in self._items

    def __iter__(self):
        with self._lock:
            return iter(list(self._items))

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def get(self, key):
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found

    def put(self, key, evaluation) -> None:
        with self._lock:
            self._store(key, evaluation)

    def _store(self, key, evaluation) -> None:
        """Keep ``evaluation`` (the lock held)."""
        self._items[key] = evaluation
        self._items.move_to_end(key)
        self._sizes[key] = budget.held_bytes(evaluation) if self._max_bytes else 0
        while len(self._items) > 1 and (
                len(self._items) > self._kept
                or (self._max_bytes and sum(self._sizes.values()) > self._max_bytes)):
            old, _ = self._items.popitem(last=False)
            self._sizes.pop(old, None)


#: Evaluations of the bundled demos kept for every session (the data are synthetic and the
#: same for everyone: the second person to open a view gets it from memory).
_SHARED_KEPT = 24


@st.cache_resource(show_spinner=False)
def _shared_demo_evaluations() -> _Evaluations:
    return _Evaluations(_SHARED_KEPT, shared_cache_budget())


def _memo(source: Source) -> _Evaluations:
    """Where the evaluations of ``source`` are kept: shared between sessions for a demo, in
    the session alone for an upload or an adjudicated gold (never shared)."""
    if source.kind == "demo" and source.adjudicated is None:
        return _shared_demo_evaluations()
    memo = st.session_state.get(_EVAL_KEY)
    if not isinstance(memo, _Evaluations):
        memo = st.session_state[_EVAL_KEY] = _Evaluations(_EVALUATIONS_KEPT)
    return memo


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


def stop_if_closed() -> None:
    """Stop this script run when its browser tab has gone (the session is no longer
    connected): a long computation's progress callback calls this at every update, so no
    work goes on for a closed tab beyond one batch (Streamlit asks a disconnected session's
    run to stop too; this does not depend on it)."""
    from streamlit import runtime
    from streamlit.runtime.scriptrunner import get_script_run_ctx
    from streamlit.runtime.scriptrunner_utils.exceptions import StopException

    ctx = get_script_run_ctx()
    if ctx is None or not runtime.exists():  # no server (AppTest, a plain call)
        return
    if not runtime.get_instance().is_active_session(ctx.session_id):
        raise StopException()


def bar_progress(bar, text_of) -> Callable[[int, int], None]:
    """A bootstrap's progress callback that updates ``bar`` with ``text_of(done, total)`` at
    most four times a second (each update is a message and a redraw in the browser, and the
    point where a new move stops this run), and stops the run when its tab has closed."""
    last = [0.0]

    def progress(done: int, total: int) -> None:
        stop_if_closed()
        now = time.monotonic()
        if now - last[0] >= 0.25 or done >= total:
            last[0] = now
            bar.progress(min(done / max(total, 1), 1.0), text=text_of(done, total))

    return progress


def refine_intervals(v: View | None, *, fragment: bool = False, slot=None) -> None:
    """After a page drew with :data:`LIVE_RESAMPLES`, compute the full bootstrap (with a
    progress bar) and draw again. A setting moved meanwhile stops this run at the next bar
    update, so nothing queues behind it. ``fragment``: called at the end of a page fragment's
    rerun, whose bar is drawn in the fragment and which draws only the fragment again.

    Resamples above the server's live cap (:attr:`View.heavy`) are offered in ``slot`` (a
    container at the top of the page; the app's run only) with a button, and computed when it
    is clicked, with progress and a cancel button."""
    if v is None:
        return
    paused = v.paused or (over_budget() if v.pending is not None or v.heavy is not None
                          else None)
    if paused is not None:
        if fragment or slot is None:
            st.warning(paused, icon=":material/hourglass_top:")
        else:
            slot.warning(paused, icon=":material/hourglass_top:")
        return
    if v.pending is None:
        if v.heavy is not None and not fragment and slot is not None:
            _heavy_intervals(v, slot)
        return
    config = v.pending
    memo = _memo(v.source)
    key = (v.source.token, config)
    if key not in memo:
        with contextlib.nullcontext() if fragment else st.sidebar:  # a fragment: in itself
            bar = st.progress(0.0, text="Refining the intervals…")

        progress = bar_progress(bar, lambda done, total: f"Refining the intervals: "
                                                          f"{done:,} of {total:,} resamples")

        def waiting() -> None:  # another session computes these intervals
            stop_if_closed()
            bar.progress(0.0, text="Refining the intervals (computed for another session "
                                   "too)…")

        with metered():
            memo.compute(key, lambda: v.source.evaluator().evaluate(config, progress=progress),
                         poll=waiting)
        # Once per data set, resamples and filters: the first computation is the long one
        # (every criterion's resamples); later moves update it in a fraction of the time.
        # The criteria's live intervals, then the finder: a second or two each, one after
        # the other.
        with charged_to_session():  # the warm-ups' threads pay the session's budget
            groups = (_warm_group_intervals(v.source.evaluator(), config) if memo.first_time(
                ("groups", v.source.token, config.bootstrap_config, config.filters)) else None)
            if memo.first_time(("finder", v.source.token, config.filters, config.seed,
                                finder_resamples(v))):
                _warm_finder(v, after=groups)
    v.pending = None
    st.rerun(scope="fragment" if fragment else "app")


def _heavy_intervals(v: View, slot) -> None:
    """The resamples above the live cap: a button that asks for them, or (asked) their run
    with a progress bar and a cancel button (the cancel, or any other change, stops it at the
    next update; closing the tab too)."""
    config = v.heavy
    memo = _memo(v.source)
    key = (v.source.token, config)
    shown = v.evaluation.config.bootstrap
    if st.session_state.get(state.HEAVY_ASKED) != config:
        with slot.container():
            st.info(f"Intervals from {shown:,} resamples: this server computes at most that "
                    f"many without asking. The {config.bootstrap:,} set under Uncertainty run "
                    f"when asked for, with progress; any change stops them.",
                    icon=":material/speed:")
            st.button(f"Compute the intervals with {config.bootstrap:,} resamples",
                      key=state.RUN_HEAVY, on_click=_ask_heavy, args=(config,))
        return
    with slot.container():
        bar = st.progress(0.0, text=f"Intervals with {config.bootstrap:,} resamples…")
        st.button("Cancel", key=state.CANCEL_HEAVY, on_click=_ask_heavy, args=(None,))
    progress = bar_progress(bar, lambda done, total: f"Intervals: {done:,} of {total:,} "
                                                      "resamples")

    def waiting() -> None:  # another session computes these intervals
        stop_if_closed()
        bar.progress(0.0, text=f"Intervals with {config.bootstrap:,} resamples (computed for "
                               f"another session too)…")

    with metered():
        memo.compute(key, lambda: v.source.evaluator().evaluate(config, progress=progress),
                     poll=waiting)
    st.session_state.pop(state.HEAVY_ASKED, None)
    st.rerun(scope="app")


def _ask_heavy(config: EvalConfig | None) -> None:
    """The button asking for the resamples above the live cap (``None``: cancel)."""
    if config is None:
        st.session_state.pop(state.HEAVY_ASKED, None)
    else:
        st.session_state[state.HEAVY_ASKED] = config


def _warm_group_intervals(evaluator: Evaluator, config: EvalConfig, *,
                          after: threading.Thread | None = None) -> threading.Thread:
    """Start the per-criterion intervals of ``config`` with :data:`LIVE_RESAMPLES` (every
    criterion evaluated on its own queries, the Per criterion page's table until the
    configured number is in) on a helper thread once the view's own intervals are refined,
    after ``after``'s work (if any): a second or two, so that the page is drawn at once when
    it is opened. The configured number is computed by the page itself, with progress
    (:func:`refine_group_intervals`). The values are the evaluator's memo: a page that
    needs them sooner waits for the computation in flight instead of starting another."""
    from metrics_core.evaluation.inflight import in_background
    from metrics_core.evaluation.tables import group_intervals

    live = config.replace(bootstrap=min(config.bootstrap, LIVE_RESAMPLES))
    return in_background((lambda: after is not None and after.join(),
                          lambda: group_intervals(evaluator, live, "auroc")),
                         "dashboard-group-intervals")


def finder_resamples(v: View) -> int:
    """Resamples of the threshold finder's re-selected intervals (0 with intervals off)."""
    return min(v.config.bootstrap, LIVE_RESAMPLES) if v.show_bootstrap else 0


def default_finder_target():
    """The finder's target as the Decision support page first shows it."""
    from metrics_core.metrics import decision

    metric, ops = next(iter(decision.FINDERS.items()))
    op = next(iter(ops))
    return decision.Target(metric, op, 0.995 if op == ">=" else 5.0)


def finder_results(evaluator: Evaluator, target, by: str | None, n_boot: int,
                   seed: int, *, progress: Callable[[int, int], None] | None = None
                   ) -> list[dict]:
    """The threshold finder's results (overall first, then per ``by`` group), kept in the
    evaluator's memo (a session's own for an upload, never shared between sessions).
    ``progress``: told the re-selecting resamples as they are computed (a
    :class:`StepProgress`: each subset's in turn)."""
    from metrics_core.metrics import decision

    return evaluator.cached(
        ("tune", str(target), by, n_boot, seed),
        lambda: [r.to_dict() for r in decision.tune(evaluator.ds, [str(target)], by=by,
                                                    bootstrap=n_boot, seed=seed,
                                                    progress=progress)])


class StepProgress:
    """The progress callback of a computation in named steps (``stage(name)``:
    metrics_core.progress.stage), drawn as a bar in ``slot`` (an ``st.empty()``) at its first
    update only, so nothing shows when the result is at hand; the bar says ``text``, the step
    and its resamples, and stops the run when its tab has closed (:func:`bar_progress`).
    :meth:`done` takes the bar away."""

    def __init__(self, slot, text: str):
        self._slot, self._text, self._step = slot, text, ""
        self._update: Callable[[int, int], None] | None = None

    def stage(self, name: str) -> None:
        self._step = name

    def __call__(self, done: int, total: int) -> None:
        if self._update is None:
            bar = self._slot.progress(0.0, text=self._text + "…")
            self._update = bar_progress(bar, lambda d, t: f"{self._text}: {self._step}"
                                                          f"{', ' if self._step else ''}"
                                                          f"{d:,} of {t:,} resamples")
        self._update(done, total)

    def done(self) -> None:
        self._slot.empty()


def _warm_finder(v: View, *, after: threading.Thread | None = None) -> threading.Thread:
    """The Decision support page's first finder result (its default target, every resample
    re-selecting the threshold: the page's one long computation) on a helper thread, after
    ``after``'s work, so that the page is computed before it is opened."""
    from metrics_core.evaluation.inflight import in_background

    evaluator, n_boot, seed = v.evaluator, finder_resamples(v), v.config.seed
    return in_background(
        (lambda: after is not None and after.join(),
         lambda: finder_results(evaluator, default_finder_target(), None, n_boot, seed)),
        "dashboard-finder")


def group_intervals(v: View, config: EvalConfig, metric: str) -> tuple[pd.DataFrame, bool]:
    """``(table, refining)``: the per-criterion intervals of ``metric`` at ``config`` when
    they are computed; else with :data:`LIVE_RESAMPLES` (every criterion's queries resampled
    fewer times: about a fifth of the time, and usually computed ahead) and ``refining``
    true: the page shows them and computes the configured number with
    :func:`refine_group_intervals`."""
    from metrics_core.evaluation import tables

    evaluator = v.source.evaluator()
    live = config.replace(bootstrap=min(config.bootstrap, LIVE_RESAMPLES))
    if live == config or tables.group_intervals_ready(evaluator, config):
        return tables.group_intervals(evaluator, config, metric), False
    return tables.group_intervals(evaluator, live, metric), True


def refine_group_intervals(v: View, config: EvalConfig) -> None:
    """Compute the per-criterion intervals of ``config`` (the configured resamples) with a
    progress bar where this is called (the end of the Per criterion page), then draw the
    page again. Visible work only: a move or another page stops it at the next bar update,
    and so does a closed tab (:func:`stop_if_closed`)."""
    from metrics_core.evaluation import tables

    evaluator = v.source.evaluator()
    paused = over_budget()
    if paused is not None:
        st.warning(paused, icon=":material/hourglass_top:")
        return
    n = len(tables.group_codes(evaluator.for_filters(config.filters), "criterion")[1])
    text = (f"Refining the per-criterion intervals: {config.bootstrap:,} resamples for each "
            f"of {n} criteria, one after the other")
    bar = st.progress(0.0, text=text + "…")
    tables.group_intervals(evaluator, config, "auroc",
                           progress=bar_progress(bar, lambda done, total: text))
    bar.empty()
    st.rerun(scope="app")


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


# ------------------------------------------------------------------------ idle server
def release_shared_memory() -> None:
    """Let go of everything kept for sessions and give the freed memory back to the system:
    the demos' run, evaluator and shared evaluations (``st.cache_resource``), the count
    matrices kept for the process, then a full collection and ``malloc_trim`` (the server
    keeps freed memory for reuse while it serves: metrics_core.allocator.keep_freed_memory)."""
    st.cache_resource.clear()
    from metrics_core.evaluation import intervals

    shared = getattr(intervals, "_SHARED_COUNTS", None)
    if shared is not None:
        with shared.lock:
            shared.kept.clear()
    return_freed_memory()


def return_freed_memory() -> None:
    """A full collection, then glibc's ``malloc_trim``: the freed pages go back to the
    system."""
    import gc

    gc.collect()
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: the allocator keeps what it keeps
        pass


def release_when_idle(idle_seconds: float = 20.0, every: float = 5.0, *,
                      stop: threading.Event | None = None) -> threading.Thread:
    """A helper thread that calls :func:`release_shared_memory` once the server has had no
    session for ``idle_seconds`` (every tab closed, and the closed tabs' sessions gone after
    ``server.disconnectedSessionTTL``), once per idle spell: the server's memory goes back to
    what it was before the sessions came, instead of staying at its high-water mark. The next
    session loads the demo again (a fraction of a second). ``stop``: ends the thread when set.
    """

    def sessions() -> int | None:
        from streamlit import runtime

        if not runtime.exists():
            return None
        manager = getattr(runtime.get_instance(), "_session_mgr", None)
        # list_sessions also drops the stored sessions of closed tabs past their TTL.
        return None if manager is None else len(manager.list_sessions())

    def loop() -> None:
        idle_since, released, trimmed = None, True, 0.0
        while not (stop or threading.Event()).wait(every):
            try:
                count = sessions()
            except Exception:  # the runtime stopping: nothing to do
                continue
            if count is None:
                continue
            if count:
                idle_since, released = None, False
                continue
            now = time.monotonic()
            idle_since = now if idle_since is None else idle_since
            if not released and now - idle_since >= idle_seconds:
                release_shared_memory()
                released, trimmed = True, now
            elif released and now - trimmed >= 2 * idle_seconds:
                # What the sessions' helper threads still held at the release (a computation
                # they finish alone) is freed when they end: returned too.
                return_freed_memory()
                trimmed = now

    thread = threading.Thread(target=loop, name="dashboard-release-when-idle", daemon=True)
    thread.start()
    return thread
