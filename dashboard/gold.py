"""The gold labels a view is computed on: the files' own, or the adjudicated gold (contract §14).

The ``gold`` setting (:data:`dashboard.state.SETTINGS`: in the link, like every setting) picks
``original``, ``adjudicated`` or ``adjudicated_unambiguous`` (the queries with an
``ambiguous`` verdict left out). On an adjudicated gold the view's source is
:func:`gold_source`'s: the original source with the corrected labels of the session's
verdicts (:func:`verdicts`, Case review's table for that source), an evaluator of its own and
a token of its own, so every page, every interval and every download is computed by the same
kept computations as on the original gold (:class:`dashboard.data.View`). The original source
is never changed: :func:`original_evaluation` gives its numbers at the view's exact settings,
and :func:`adjudicated_run` sets both side by side (the ``adjudication`` block of
``metrics-core evaluate --adjudications``).
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections import OrderedDict
from collections.abc import Callable

import numpy as np
import pandas as pd
import streamlit as st

from dashboard import computing, data, evaluations, state
from dashboard.budget import held_bytes, size_text
from dashboard.server_settings import ServerSettingsError, memory_budget
from metrics_core.evaluation.adjudicated import AdjudicatedRun, adjudicated_evaluator
from metrics_core.inputs.adjudications import adjudications_of, empty_frame, to_csv

__all__ = ["ADJUDICATED", "ORIGINAL", "UNAMBIGUOUS", "Adjudicated", "adjudicated_run",
           "copy_bytes", "follow_gold", "gold_source", "master_json", "original_evaluation",
           "original_source", "refusal", "run_maker", "verdicts"]

#: The values of the ``gold`` setting.
ORIGINAL, ADJUDICATED, UNAMBIGUOUS = "original", "adjudicated", "adjudicated_unambiguous"
#: The file name the verdicts are checked under (and downloaded as).
FILE_NAME = "adjudications.csv"
#: Adjudicated sources kept per session (each holds a copy of the labels).
_KEPT = 2


@dataclasses.dataclass(frozen=True, eq=False)
class Adjudicated:
    """What makes a source's gold adjudicated (:attr:`dashboard.data.Source.adjudicated`):
    the original source, the checked verdicts, whether ambiguous queries are left out, and
    which of the original queries are kept (None: all)."""

    original: data.Source
    adjudications: object
    exclude_ambiguous: bool
    kept: np.ndarray | None
    #: Bytes of the copy of the labels (what the adjudicated data set does not share with
    #: the original's), counted in the server's upload budget.
    nbytes: int = 0


def original_source(source: data.Source) -> data.Source:
    """The source with the files' own gold (``source`` itself unless it is adjudicated)."""
    return source if source.adjudicated is None else source.adjudicated.original


def verdicts(source: data.Source) -> pd.DataFrame:
    """The session's verdicts on ``source``'s data (an empty table when there are none); the
    verdicts belong to the original source, whichever gold a view shows."""
    store = st.session_state.get(state.ADJ_VERDICTS) or {}
    found = store.get(original_source(source).token)
    return empty_frame() if found is None else found


def verdict_count(source: data.Source) -> int:
    """How many verdicts the session has on ``source``'s data (read on every run of every
    session: no table is made for it)."""
    store = st.session_state.get(state.ADJ_VERDICTS) or {}
    found = store.get(original_source(source).token)
    return 0 if found is None else len(found)


def digest(frame: pd.DataFrame) -> str:
    return hashlib.sha256(to_csv(frame)).hexdigest()


def _describe(adj, exclude: bool) -> str:
    counts = adj.counts()
    corrected = counts.get("label_error", 0)
    text = (f"adjudicated ({len(adj):,} verdict{'' if len(adj) == 1 else 's'}, {corrected:,} "
            f"label{'' if corrected == 1 else 's'} corrected")
    if exclude:
        text += f"; {int(adj.ambiguous.size):,} ambiguous quer" + (
            "y" if adj.ambiguous.size == 1 else "ies") + " left out"
    return text + "); the original gold's numbers stay beside them"


def gold_source(source: data.Source, gold: str, notes: list[str] | None = None
                ) -> tuple[data.Source, str]:
    """``(source, words)``: the source of the gold ``gold`` (a value of the setting) and how
    the pages' headers name it. Without verdicts, or when they leave no query, the original
    source with a note in ``notes`` saying why."""
    source = original_source(source)
    if gold == ORIGINAL or source.loaded is None:
        n = verdict_count(source)
        extra = (f" ({n:,} verdict{'' if n == 1 else 's'} in this session: "
                 "the adjudicated gold is a switch away)") if n else ""
        return source, "original (the files' labels)" + extra
    frame = verdicts(source)
    if frame.empty:
        if notes is not None:
            notes.append("The adjudicated gold was asked for, but this session has no verdict "
                         "on these data yet (mark cases on Case review, or upload an "
                         "adjudication file there): the original gold is shown.")
        return source, "original (no verdict yet)"
    exclude = gold == UNAMBIGUOUS
    key = (source.token, digest(frame), exclude)
    kept = st.session_state.setdefault(state.ADJ_SOURCES, OrderedDict())
    found = kept.get(key)
    if found is None:
        adj = adjudications_of(frame, source.dataset, file=FILE_NAME)
        try:
            evaluator = adjudicated_evaluator(source.evaluator(), adj, exclude_ambiguous=exclude)
        except ValueError as err:
            if notes is not None:
                notes.append(f"{err}: the original gold is shown.")
            return source, "original (the adjudicated gold leaves no query)"
        rows = None
        if exclude and adj.ambiguous.size:
            rows = np.ones(source.dataset.n_queries, dtype=bool)
            rows[adj.ambiguous] = False
        nbytes = copy_bytes(source.dataset, evaluator.ds)
        refused = _claim(kept, nbytes)
        if refused is not None:
            if notes is not None:
                notes.append(refused)
            return source, "original (the adjudicated gold does not fit the memory budget)"
        found = dataclasses.replace(
            source, token=f"{source.token}~adjudicated-{key[1][:16]}{'-u' if exclude else ''}",
            base=evaluator, adjudicated=Adjudicated(source, adj, exclude, rows, nbytes))
        kept[key] = found
        while len(kept) > _KEPT:
            kept.popitem(last=False)
    kept.move_to_end(key)
    return found, _describe(found.adjudicated.adjudications, exclude)


def _labels(shown: data.Source) -> tuple[str, str | None]:
    """``(data, labels)``: the token of the data ``shown`` is on and which gold labels it
    shows (None: the files' own). Leaving no ambiguous query out gives the adjudicated
    labels themselves."""
    a = shown.adjudicated
    if a is None:
        return shown.token, None
    token = shown.token if a.kept is not None else shown.token.removesuffix("-u")
    return a.original.token, token


def follow_gold(shown: data.Source, notes: list[str]) -> None:
    """When the view is made: ``shown`` is the source of the gold the view shows. When it shows
    the data of the last view with other gold labels (the adjudicated instead of the original,
    or back, or other verdicts), a threshold set with a guarantee keeps its value and is
    exploratory, as on other data (:func:`dashboard.data.follow_data`): the guarantee was
    computed on the other labels. The notes go to ``notes`` and stay with the link's until a
    setting changes."""
    labels = _labels(shown)
    before = st.session_state.get(state.GOLD_SHOWN)
    st.session_state[state.GOLD_SHOWN] = labels
    if before is None or before[0] != labels[0] or before == labels:
        return  # a new session, other data (follow_data's), or the same labels
    from dashboard import link, provenance

    for note in provenance.data_switched("gold"):
        link.keep_link_note(note)
        notes.append(note)


def copy_bytes(original, adjudicated) -> int:
    """Bytes the adjudicated data set ``adjudicated`` holds that the ``original`` one does not
    (its copies of the labels; every array of a subset), by
    :func:`dashboard.budget.held_bytes`."""
    return held_bytes((original, adjudicated)) - held_bytes(original)


def _claim(kept: OrderedDict, nbytes: int) -> str | None:
    """Count a new adjudicated copy of ``nbytes`` with those of the session it keeps beside it
    (the newest ``_KEPT - 1`` of ``kept``) in the server's upload budget, in place of what the
    session's copies held: None, or the message of the refusal (nothing counted then, and the
    refusal kept for Case review, :func:`refusal`)."""
    from metrics_core.errors import InputError

    beside = sum(s.adjudicated.nbytes
                 for s in list(kept.values())[max(0, len(kept) - (_KEPT - 1)):])
    holder = data.holder(state.ADJ_HOLDER)
    try:
        data.UPLOADS.claim(holder, beside + nbytes, memory_budget(),
                           name="the adjudicated gold")
    except (InputError, ServerSettingsError) as exc:
        said = exc.rule if isinstance(exc, InputError) else f"the server's settings cannot " \
                                                             f"be used: {exc}"
        message = (f"The adjudicated gold was not made, so the original gold is shown: its "
                   f"copy of the labels ({size_text(nbytes)}) counts in the server's memory "
                   f"budget for uploaded data, and {said}. It is made once uploads (this "
                   f"session's or others') are closed.")
        st.session_state[state.ADJ_REFUSED] = message
        return message
    st.session_state.pop(state.ADJ_REFUSED, None)
    return None


def refusal() -> str | None:
    """Why the session's last adjudicated gold was not made (the upload budget), else None."""
    return st.session_state.get(state.ADJ_REFUSED)


def original_evaluation(v: data.View):
    """The original gold's evaluation at the view's exact settings (its resamples too): the
    view's own on the original gold."""
    if v.source.adjudicated is None:
        return v.evaluation
    return data.evaluation_at(v.source.adjudicated.original, v.evaluation.config)


def run_maker(v: data.View) -> Callable[[], AdjudicatedRun] | None:
    """A function giving both labelings of the view side by side (None without verdicts);
    it holds what it needs, so a download can call it on click, outside the session's run
    (given a view of the same source and gold, it gives that view's: a page fragment's).

    On an adjudicated gold: the view's evaluation and the original's at the same settings and
    resamples (what ``metrics-core evaluate --adjudications`` writes). On the original gold:
    the view's evaluation and the adjudicated gold's point values (all verdicts counted).
    """
    if v.source.adjudicated is not None:
        a = v.source.adjudicated
        original_at = evaluations.evaluations_of(a.original)

        def both(view: data.View | None = None) -> AdjudicatedRun:
            shown = (view or v).evaluation
            return AdjudicatedRun(adjudications=a.adjudications,
                                  original=original_at(shown.config), adjudicated=shown,
                                  exclude_ambiguous=a.exclude_ambiguous)
        return both
    source, _ = gold_source(v.source, ADJUDICATED)
    if source.adjudicated is None:
        return None
    adjudicated_at, adj = evaluations.evaluations_of(source), source.adjudicated.adjudications

    def beside(view: data.View | None = None) -> AdjudicatedRun:
        shown = (view or v).evaluation
        return AdjudicatedRun(adjudications=adj, original=shown,
                              adjudicated=adjudicated_at(shown.config.replace(bootstrap=0)),
                              exclude_ambiguous=False)
    return beside


def adjudicated_run(v: data.View) -> AdjudicatedRun | None:
    """:func:`run_maker`'s run now (charged to the session's computing budget)."""
    make = run_maker(v)
    if make is None:
        return None
    with computing.metered():
        return make()


def master_json(ref: data.ViewRef, v: data.View) -> Callable[[], str]:
    """``metrics_master.json`` of the view shown when it is clicked (``ref``; ``v``: this run's,
    of the same gold), with its thresholds' provenance: on the original
    gold the view's document; on an adjudicated gold the original gold's document with the
    ``adjudication`` block (the adjudicated records beside), as ``metrics-core evaluate
    --adjudications`` writes it: the original numbers are never replaced."""
    from metrics_core.evaluation.adjudicated import with_adjudication

    make = run_maker(v) if v.source.adjudicated is not None else None

    def document() -> str:
        v = ref.view  # a page fragment's rerun may have replaced the view (same gold)
        # how the view's thresholds were chosen, as its settings.json and record say
        if make is None or v.source.adjudicated is None:
            return data.exported_evaluation(v).with_provenance(v.marks, v.guarantees).to_json()
        run = make(v)
        return with_adjudication(run.original.with_provenance(v.marks, v.guarantees).to_json(),
                                 run)
    return document
