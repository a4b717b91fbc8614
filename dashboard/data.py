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

import hashlib
import logging
import traceback
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd
import streamlit as st

from metrics_core import io as mio
from metrics_core import triage as mtriage
from metrics_core.audit import audit as run_audit
from metrics_core.classification import confusion_sweep
from metrics_core.config import EvalConfig
from metrics_core.demo import DEMO_LABEL, demo_paths
from metrics_core.errors import InputError
from metrics_core.report import Evaluation, Evaluator

__all__ = [
    "GAMMA_SWEEP",
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

#: γ values of the sweep (contract §7, seed 003 §8.2); the current γ is added.
GAMMA_SWEEP = (0.7, 0.8, 0.9, 0.95)
#: Grid of the (τ_neg, τ_pos) heatmap.
GRID_STEPS = np.round(np.arange(0.0, 1.0001, 0.05), 2)
#: Evaluations kept per session (the last few settings, for instant back-and-forth).
_EVALUATIONS_KEPT = 3
#: Filtered evaluators kept per uploaded source.
_EVALUATORS_KEPT = 8

_LOG = logging.getLogger("dashboard")
_SOURCE_KEY = "_source"
_VIEW_KEY = "_view"
_EVAL_KEY = "_evaluations"


# ------------------------------------------------------------------------------- filters
@dataclass(frozen=True)
class Filters:
    """Which queries are evaluated: one fold, one split, some criteria (``None`` / () = all)."""

    fold: str | None = None
    split: str | None = None
    criteria: tuple[str, ...] = ()

    @property
    def active(self) -> bool:
        return self.fold is not None or self.split is not None or bool(self.criteria)

    def describe(self) -> str:
        parts = []
        if self.fold is not None:
            parts.append(f"fold {self.fold}")
        if self.split is not None:
            parts.append(f"split {self.split}")
        if self.criteria:
            parts.append("criteria " + ", ".join(self.criteria))
        return "; ".join(parts) if parts else "all queries"

    def mask(self, ds) -> np.ndarray | None:
        """Query mask of the filter on ``ds`` (None when nothing is filtered)."""
        if not self.active:
            return None
        keep = np.ones(ds.n_queries, dtype=bool)
        if self.fold is not None and ds.fold is not None:
            keep &= ds.fold == int(self.fold)
        if self.split is not None and ds.split is not None:
            keep &= ds.split == self.split
        if self.criteria:
            keep &= np.isin(ds.criterion, np.array(self.criteria, dtype=object))
        return keep


# ------------------------------------------------------------------------------- sources
@dataclass(eq=False)
class Source:
    """A data source: the demo or an upload (evidence data and / or a triage file).

    ``token`` identifies the source in memo keys. For an upload, ``evaluators`` caches the
    filtered evaluators of this session (never shared).
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
    evaluators: OrderedDict = field(default_factory=OrderedDict)

    @property
    def is_triage(self) -> bool:
        """An upload that holds only a triage file (the triage view)."""
        return self.loaded is None and self.triage is not None

    @property
    def dataset(self):
        return None if self.loaded is None else self.loaded.dataset

    def evaluator(self, filters: Filters) -> Evaluator:
        """The (cached) evaluator of the filtered data set."""
        if self.loaded is None:
            raise InputError("this source has no evidence data (queries / candidates)")
        if self.kind == "demo":
            return _demo_evaluator(filters)
        if filters not in self.evaluators:
            self.evaluators[filters] = _make_evaluator(self.loaded, self.audit, filters)
            while len(self.evaluators) > _EVALUATORS_KEPT:
                self.evaluators.popitem(last=False)
        return self.evaluators[filters]


def _make_evaluator(loaded: mio.Loaded, audit, filters: Filters) -> Evaluator:
    ds = loaded.dataset
    mask = filters.mask(ds)
    if mask is None:
        return Evaluator(ds, audit=audit)
    if not mask.any():
        raise InputError(f"no queries match the filter ({filters.describe()})",
                         hint="choose another fold, split or criteria")
    return Evaluator(ds.subset(mask))


def _audit(dataset, loaded):
    """The data audit of metrics_core; None (and a log line) if it cannot run.

    The audit informs; a failure in it must not keep valid data from being shown.
    """
    try:
        return run_audit(dataset, loaded=loaded)
    except Exception as exc:
        _LOG.warning("data audit failed: %s\n%s", type(exc).__name__,
                     "".join(traceback.format_tb(exc.__traceback__)))
        return None


@st.cache_resource(show_spinner="Loading the synthetic demo data…")
def _demo_parts() -> tuple[mio.Loaded, object, mtriage.TriageData]:
    paths = demo_paths()
    loaded = mio.load(paths.queries, paths.candidates)
    triage = mtriage.load_triage(paths.triage)
    return loaded, _audit(loaded.dataset, loaded), triage


@st.cache_resource(max_entries=32, show_spinner="Preparing the demo data…")
def _demo_evaluator(filters: Filters) -> Evaluator:
    loaded, audit, _ = _demo_parts()
    return _make_evaluator(loaded, audit, filters)


def demo_source() -> Source:
    """The bundled synthetic demo (cached for every session: it holds no real data)."""
    loaded, audit, triage = _demo_parts()
    return Source(kind="demo", label=DEMO_LABEL, synthetic=True, token="demo", loaded=loaded,
                  audit=audit, triage=triage, triage_label=f"{DEMO_LABEL} (triage)",
                  files=tuple(p.name for p in (demo_paths().queries, demo_paths().candidates)))


def current_source() -> Source:
    """The session's source: its upload if one was loaded, else the demo."""
    source = st.session_state.get(_SOURCE_KEY)
    return source if source is not None else demo_source()


def use_demo() -> None:
    """Switch the session back to the demo data (the upload is dropped from memory)."""
    st.session_state[_SOURCE_KEY] = None
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

    @property
    def digest(self) -> str:
        h = hashlib.sha256()
        for part in (self.queries_name, self.queries, self.candidates_name or "",
                     self.candidates or b""):
            h.update(part.encode() if isinstance(part, str) else part)
            h.update(b"\0")
        return h.hexdigest()[:16]

    def columns(self) -> tuple[list[str], list[str] | None]:
        """Column names of the uploaded tables (for the column-mapping step)."""
        q = list(mio.read_table(self.queries, name=self.queries_name).columns)
        c = None
        if self.candidates is not None:
            c = list(mio.read_table(self.candidates, name=self.candidates_name).columns)
        return q, c


def load_upload(upload: Upload, *, mapping: dict | None = None) -> Source:
    """Read, validate and audit an upload; a single triage file becomes the triage view.

    Raises :class:`~metrics_core.errors.InputError` for bad input (shown by the app).
    """
    name = ", ".join(n for n in (upload.queries_name, upload.candidates_name) if n)
    if upload.candidates is None and not mapping:
        frame = mio.read_table(upload.queries, name=upload.queries_name)
        if mtriage.detect_triage(frame):
            data = mtriage.parse_triage(frame, name=upload.queries_name)
            return Source(kind="upload", label=f"Uploaded triage file: {upload.queries_name}",
                          synthetic=False, token=upload.digest, triage=data,
                          triage_label=upload.queries_name, files=(upload.queries_name,))
        loaded = mio.load(frame, queries_name=upload.queries_name)
    else:
        loaded = mio.load(upload.queries, upload.candidates, queries_name=upload.queries_name,
                          candidates_name=upload.candidates_name, mapping=mapping or None)
    files = tuple(n for n in (upload.queries_name, upload.candidates_name) if n)
    return Source(kind="upload", label=f"Uploaded data: {name}", synthetic=False,
                  token=upload.digest + _mapping_digest(mapping), loaded=loaded,
                  audit=_audit(loaded.dataset, loaded), files=files)


def _mapping_digest(mapping) -> str:
    if not mapping:
        return ""
    return hashlib.sha256(repr(sorted(mapping.items(), key=str)).encode()).hexdigest()[:8]


def set_source(source: Source) -> None:
    """Make ``source`` the session's source (session state only)."""
    st.session_state[_SOURCE_KEY] = source
    st.session_state.pop(_EVAL_KEY, None)


# ------------------------------------------------------------------------------- the view
@dataclass(eq=False)
class View:
    """What a page shows: source, filters and settings, with lazily computed results."""

    source: Source
    filters: Filters
    config: EvalConfig
    show_bootstrap: bool = False

    @property
    def evaluator(self) -> Evaluator:
        return self.source.evaluator(self.filters)

    @cached_property
    def evaluation(self) -> Evaluation:
        """All metrics at the current settings (memoised per session for recent settings).

        Bootstrap CIs are computed only when asked for (they take seconds, not milliseconds);
        otherwise the run is ``bootstrap = 0`` and the JSON records exactly that.
        """
        config = self.config if self.show_bootstrap else self.config.replace(bootstrap=0)
        key = (self.source.token, self.filters, config)
        memo = st.session_state.setdefault(_EVAL_KEY, OrderedDict())
        if key not in memo:
            memo[key] = self.evaluator.evaluate(config)
            while len(memo) > _EVALUATIONS_KEPT:
                memo.popitem(last=False)
        else:
            memo.move_to_end(key)
        return memo[key]

    @cached_property
    def operating_points(self) -> dict:
        """Confusion at τ_neg (screen-in), τ_pos (alert) and τ: the points on ROC / PR."""
        ds = self.evaluator.ds
        c = self.config
        sweep = confusion_sweep(ds.y, ds.p, [c.tau_neg, c.tau_pos, c.threshold])
        return {"τ_neg (screened in)": sweep.at(0), "τ_pos (alert)": sweep.at(1),
                "τ (fixed threshold)": sweep.at(2)}

    def ranking_values(self, names) -> dict[str, np.ndarray]:
        """Per-query values of ranking metrics on the ranking protocol's queries."""
        per_query = self.evaluator.ranking(self.config)
        mask = self.evaluator.ranking_mask(self.config)
        return {name: per_query[name][mask] for name in names if name in per_query}

    def gamma_sweep(self) -> pd.DataFrame:
        gammas = sorted({*GAMMA_SWEEP, self.config.gamma})
        return self.evaluator.gamma_sweep(self.config, gammas)

    def gate_grid(self) -> pd.DataFrame:
        steps = sorted({*GRID_STEPS.tolist(), self.config.tau_neg, self.config.tau_pos})
        return self.evaluator.gate_grid(self.config, steps, steps)

    def case_review(self) -> dict[str, pd.DataFrame]:
        return self.evaluator.case_review(self.config, self.evaluation)

    def sentences(self, post_id: str, criterion: str) -> pd.DataFrame:
        return self.evaluator.sentences(self.config, post_id, criterion)


def set_view(v: View) -> None:
    st.session_state[_VIEW_KEY] = v


def view() -> View:
    """The view the app prepared for this run (pages call this)."""
    v = st.session_state.get(_VIEW_KEY)
    if v is None:
        raise InputError("no data loaded yet")
    return v
