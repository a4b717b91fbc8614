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

from datetime import UTC, datetime
from types import MappingProxyType

import pandas as pd
import streamlit as st

from dashboard import display, gold, state
from dashboard.safe_text import escape_markdown, neutralise_bidi
from metrics_core import registry
from metrics_core.errors import InputError
from metrics_core.evaluation.adjudicated import AdjudicatedRun
from metrics_core.inputs.adjudications import (
    COLUMNS,
    CORRECTING,
    VERDICTS,
    adjudications_of,
    read_adjudications,
    to_csv,
)

__all__ = [
    "VERDICT_LABELS",
    "adjudicated",
    "case_panel",
    "download_bytes",
    "read_upload",
    "remove_verdict",
    "set_verdict",
    "show_differences",
    "verdict_of",
    "verdicts",
]

#: How the verdicts are named on the pages.
VERDICT_LABELS = MappingProxyType({"label_error": "Label error", "model_error": "Model error",
                                   "ambiguous": "Ambiguous", "acceptable": "Acceptable"})

#: The file name of the download.
FILE_NAME = gold.FILE_NAME


def verdicts(source) -> pd.DataFrame:
    """The session's verdicts on ``source``'s data (an empty table when there are none)."""
    return gold.verdicts(source)


def _put(source, frame: pd.DataFrame) -> None:
    store = st.session_state.setdefault(state.ADJ_VERDICTS, {})
    store[gold.original_source(source).token] = frame.reset_index(drop=True)
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
    source = gold.original_source(source)
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
    adj = read_adjudications(bytes(content), gold.original_source(source).dataset, name=name)
    _put(source, adj.frame)
    return len(adj)


def adjudicated(v) -> AdjudicatedRun | None:
    """The view's numbers on both labelings (:func:`dashboard.gold.adjudicated_run`): None
    without verdicts."""
    return gold.adjudicated_run(v)


def show_differences(run: AdjudicatedRun, *, key: str) -> None:
    """The verdicts' counts, the headline numbers that changed and every headline number on
    both labelings with the difference (adjudicated − original)."""
    counts = run.adjudications.counts()
    st.caption("Verdicts: " + ", ".join(f"{VERDICT_LABELS[k]} {n:,}" for k, n in counts.items())
               + (" (ambiguous queries left out of the adjudicated gold)"
                  if run.exclude_ambiguous else "")
               + ". The original numbers are never replaced.")
    diff = run.differences().set_index("name")
    names = [n for n in display.HEADLINE if n in diff.index]
    changed = [f"{registry.label(n)} {display.fmt_metric(n, diff.loc[n, 'original'])}"
               f" → {display.fmt_metric(n, diff.loc[n, 'adjudicated'])}"
               for n in names if display.fmt_metric(n, diff.loc[n, "original"])
               != display.fmt_metric(n, diff.loc[n, "adjudicated"])]
    with st.container(key=f"{key}_changes"):
        st.markdown("**Changed on the adjudicated gold:** " + escape_markdown(
            "; ".join(changed) if changed else "no headline number."))
    rows = [{"metric": registry.label(n),
             "original": display.fmt_metric(n, diff.loc[n, "original"]),
             "adjudicated": display.fmt_metric(n, diff.loc[n, "adjudicated"]),
             "difference": display.fmt_metric(n, diff.loc[n, "difference"]), "name": n}
            for n in names]
    display.show_table(pd.DataFrame(rows), key=key)


def _save(source, post_id: str, criterion: str, advance, args) -> None:
    """The verdict form's submit: keep the verdict, then ``advance(*args)`` (on to the next
    case)."""
    choice = st.session_state.get(state.VERDICT_CHOICE)
    if choice is None:
        st.session_state[state.ADJ_ERROR] = "Choose a verdict first."
        return
    try:
        set_verdict(source, post_id, criterion, st.session_state.get(state.VERDICT_TARGET) or "",
                    verdict=choice, reviewer=st.session_state.get(state.VERDICT_REVIEWER) or "",
                    note=st.session_state.get(state.VERDICT_NOTE) or "")
    except InputError as err:
        st.session_state[state.ADJ_ERROR] = err.render()
        return
    st.session_state[state.VERDICT_CHOICE] = None
    st.session_state[state.VERDICT_NOTE] = ""
    st.session_state[state.VERDICT_TARGET] = ""
    if advance is not None:
        advance(*args)


def case_panel(v, row, *, key: str, advance=None, args: tuple = ()) -> None:
    """One query shown on its own, wherever a page shows one: its candidate sentences (with
    their verdicts) and the verdict form (the query or one of its sentences, the verdict, the
    reviewer, a note; Enter saves, then ``advance(*args)`` moves on). ``row``: the query's
    row of a case table (``post_id``, ``criterion``, ``has_evidence``). The verdicts are the
    session's, the same on every page (:func:`verdicts`)."""
    source = v.source
    post_id, criterion = str(row["post_id"]), str(row["criterion"])
    frame = verdicts(source)
    sentences = v.sentences(post_id, criterion)
    on_sentence = frame[(frame["post_id"] == post_id) & (frame["criterion"] == criterion)
                        & (frame["sent_uid"] != "")]
    marks = dict(zip(on_sentence["sent_uid"], on_sentence["verdict"], strict=True))
    sentences = sentences.assign(verdict=[marks.get(str(u), "") for u in sentences["sent_uid"]])
    display.show_table(sentences, key=key, column_config={
        "is_gold": "gold", "selected": "selected",
        "sentence": st.column_config.TextColumn(width="large")})

    st.subheader("Verdict")
    current = verdict_of(source, post_id, criterion)
    if current is not None:
        who = f" by {escape_markdown(current['reviewer'])}" if current["reviewer"] else ""
        st.caption(f"This query's verdict: **{VERDICT_LABELS[current['verdict']]}**{who}.")
    error = st.session_state.pop(state.ADJ_ERROR, None)
    if error:
        st.error(escape_markdown(error), icon=":material/error:")
    uids = [str(u) for u in sentences["sent_uid"]]
    is_gold = dict(zip(uids, sentences["is_gold"].astype(int), strict=True))
    with st.form("verdict_form", enter_to_submit=True):
        st.selectbox("Case", ["", *uids], key=state.VERDICT_TARGET, format_func=lambda u: (
            f"the query (has_evidence = {int(row['has_evidence'])})" if u == "" else
            neutralise_bidi(f"sentence {u} (is_gold = {is_gold[u]})")))
        st.radio("Verdict", VERDICTS, index=None, horizontal=True, key=state.VERDICT_CHOICE,
                 format_func=VERDICT_LABELS.get,
                 help=f"{VERDICT_LABELS[CORRECTING]} corrects the gold to its other value: "
                      "has_evidence for the query, is_gold for a sentence.")
        st.text_input("Reviewer", key=state.VERDICT_REVIEWER)
        st.text_input("Note (Enter saves)", key=state.VERDICT_NOTE)
        st.form_submit_button("Save and go to the next case", key=state.VERDICT_SAVE,
                              on_click=_save, args=(source, post_id, criterion, advance, args),
                              type="primary")
    if current is not None and st.button("Remove this query's verdict",
                                         key=state.VERDICT_REMOVE):
        remove_verdict(source, post_id, criterion)
        st.rerun()
