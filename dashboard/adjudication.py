"""The session's verdicts on cases (contract §14) and the metrics on the adjudicated gold.

The verdicts live in the session's state only, one table per data source (never on disk,
never logged, never shared between sessions): the reviewers keep them by downloading the
adjudication file and bring them back by uploading it. Every change is checked against the
data set by :func:`metrics_core.inputs.adjudications.adjudications_of`, the rules the command
line applies to the same file, and the adjudicated run is the library's
(:func:`metrics_core.evaluation.adjudicated.adjudicated_evaluator`), so the app and
``metrics-core evaluate --adjudications`` give the same numbers.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

import pandas as pd
import streamlit as st

from dashboard import data, state
from metrics_core.evaluation.adjudicated import AdjudicatedRun, adjudicated_evaluator
from metrics_core.inputs.adjudications import (
    COLUMNS,
    CORRECTING,
    adjudications_of,
    empty_frame,
    read_adjudications,
    to_csv,
)

__all__ = ["adjudicated", "download_bytes", "read_upload", "remove_verdict", "set_verdict",
           "verdict_of", "verdicts"]

#: The file name of the download.
FILE_NAME = "adjudications.csv"


def _store() -> dict:
    """data source token -> its verdicts (a table of :data:`COLUMNS`), in the session."""
    return st.session_state.setdefault(state.ADJ_VERDICTS, {})


def verdicts(source) -> pd.DataFrame:
    """The session's verdicts on ``source`` (an empty table when there are none)."""
    return _store().get(source.token, empty_frame())


def _put(source, frame: pd.DataFrame) -> None:
    _store()[source.token] = frame.reset_index(drop=True)


def _key(post_id, criterion, sent_uid) -> tuple[str, str, str]:
    return str(post_id), str(criterion), "" if sent_uid is None else str(sent_uid)


def _rows(frame: pd.DataFrame, key) -> pd.Series:
    return ((frame["post_id"] == key[0]) & (frame["criterion"] == key[1])
            & (frame["sent_uid"].fillna("") == key[2]))


def verdict_of(source, post_id, criterion, sent_uid: str = "") -> dict | None:
    """The verdict row of one case, or None."""
    frame = verdicts(source)
    hit = frame[_rows(frame, _key(post_id, criterion, sent_uid))]
    return None if hit.empty else hit.iloc[0].to_dict()


def set_verdict(source, post_id, criterion, sent_uid: str = "", *, verdict: str,
                reviewer: str = "", note: str = "", now: datetime | None = None) -> None:
    """Record (or replace) the verdict of one case. A ``label_error`` corrects the gold to
    its other value (the labels are 0 / 1); the table is checked against the data set before
    it is kept (InputError otherwise, the session's verdicts unchanged)."""
    key = _key(post_id, criterion, sent_uid)
    ds = source.dataset
    corrected_y = corrected_gold = ""
    if verdict == CORRECTING:
        q = _query_index(ds, key)
        if key[2]:
            sentences = ds.sent_uid[ds.candidate_slice(q)].astype(str)
            row = ds.offsets[q] + int((sentences == key[2]).argmax())
            corrected_gold = str(1 - int(ds.is_gold[row]))
        else:
            corrected_y = str(1 - int(ds.y[q]))
    time = (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    row = {"post_id": key[0], "criterion": key[1], "sent_uid": key[2], "verdict": verdict,
           "corrected_has_evidence": corrected_y, "corrected_is_gold": corrected_gold,
           "reviewer": reviewer.strip(), "note": note.strip(), "time": time}
    frame = verdicts(source)
    at = _rows(frame, key)
    if at.any():
        frame = frame.copy()
        frame.loc[at, list(COLUMNS)] = [row[c] for c in COLUMNS]
    else:
        frame = pd.concat([frame, pd.DataFrame([row], columns=list(COLUMNS))],
                          ignore_index=True)
    _put(source, adjudications_of(frame.astype(object), ds, file=FILE_NAME).frame)


def remove_verdict(source, post_id, criterion, sent_uid: str = "") -> None:
    frame = verdicts(source)
    _put(source, frame[~_rows(frame, _key(post_id, criterion, sent_uid))])


def _query_index(ds, key) -> int:
    hit = (ds.post_id == key[0]) & (ds.criterion == key[1])
    if not hit.any():
        raise KeyError(f"no query ({key[0]!r}, {key[1]!r})")
    return int(hit.argmax())


def download_bytes(frame: pd.DataFrame) -> bytes:
    """The adjudication file of verdicts (:func:`verdicts`, read while the page is drawn: a
    download's data is made on click, outside the session's run, where the session's state
    is not at hand)."""
    return to_csv(frame)


def read_upload(source, content: bytes, name: str) -> int:
    """Replace the session's verdicts on ``source`` by an uploaded adjudication file (checked
    whole first: InputError naming the file, line, column and rule, the verdicts unchanged).
    Returns the number of verdicts read."""
    adj = read_adjudications(bytes(content), source.dataset, name=name)
    _put(source, adj.frame)
    return len(adj)


def _digest(frame: pd.DataFrame) -> str:
    return hashlib.sha256(to_csv(frame)).hexdigest()


def adjudicated(v, *, exclude_ambiguous: bool = False) -> AdjudicatedRun | None:
    """The view's run on the adjudicated gold beside its own (None without verdicts).

    Point values (no resamples): the page sets the numbers side by side. The last one is
    kept in the session for the same data, settings and verdicts.
    """
    frame = verdicts(v.source)
    if frame.empty:
        return None
    config = v.config.replace(filters=v.filters, bootstrap=0)
    key = (v.source.token, config, _digest(frame), exclude_ambiguous)
    kept = st.session_state.get(state.ADJ_RUN)
    if kept is not None and kept[0] == key:
        return kept[1]
    adj = adjudications_of(frame, v.source.dataset, file=FILE_NAME)
    with data.metered():
        evaluation = adjudicated_evaluator(v.source.evaluator(), adj,
                                           exclude_ambiguous=exclude_ambiguous).evaluate(config)
    run = AdjudicatedRun(adjudications=adj, original=v.evaluation, adjudicated=evaluation,
                         exclude_ambiguous=exclude_ambiguous)
    st.session_state[state.ADJ_RUN] = (key, run)
    return run
