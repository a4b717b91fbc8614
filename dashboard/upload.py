"""The data source part of the sidebar: upload, load, errors and the column-mapping form.

Uploaded bytes live in ``st.session_state`` only (never on disk, in a log or in a cache shared
between sessions). The columns of an upload are read once per upload from its header or schema
(:func:`metrics_core.inputs.loading.sniff`) and kept with the upload's digest; whether the mapping
form opens is decided by the error's code (:data:`metrics_core.errors.MAPPING_CODES`), never by its
wording. Every name from a file is shown escaped (:mod:`dashboard.safe_text`).
"""

from __future__ import annotations

import logging
import traceback

import streamlit as st

from dashboard import computing, data, server_settings, state
from dashboard.safe_text import escape_markdown
from metrics_core.data.dataset import CANDIDATE_COLUMNS, QUERY_COLUMNS
from metrics_core.errors import InputError
from metrics_core.inputs import loading as mio

__all__ = ["UPLOAD_TYPES", "EarlierUpload", "data_sidebar", "mapping_step"]

#: Upload formats (contract §2): CSV, gzip CSV, Parquet, JSON Lines (and TSV / JSON).
UPLOAD_TYPES = ("csv", "gz", "parquet", "pq", "jsonl", "ndjson", "json", "tsv")
_AUTOMATIC, _NONE = "(automatic)", "(none)"
_LOG = logging.getLogger("dashboard")


def release_on_close() -> None:
    """Let this session's uploads go when its tab closes.

    Streamlit keeps a closed tab's session (and its uploaded files) for a while so that a
    reconnecting tab can resume it. A session that holds uploaded data is marked not
    resumable instead: closing the tab shuts it down and frees its uploads at once (a tab that
    loses its connection then starts a new session and the files are uploaded again).
    """
    if st.session_state.get(state.RELEASE_MARKED):
        return
    from streamlit.runtime.scriptrunner import get_script_run_ctx

    ctx = get_script_run_ctx()
    if ctx is not None and _mark_nonresumable(ctx.session_id):
        st.session_state[state.RELEASE_MARKED] = True


class EarlierUpload:
    """Whether a page shows again what it read from its own upload (the Compare and RAG
    pages). Streamlit empties a page's uploader when the session shows another page; the page
    keeps what it read in the session, and coming back shows it, until a new upload or the
    demo replaces it or the page's Forget button drops it. A file removed from the uploader
    is not brought back. Made before the page draws its uploader: ``uploader`` is its key,
    ``marker`` the session key that holds "showing the earlier upload" across the page's
    reruns."""

    def __init__(self, uploader: str, marker: str) -> None:
        self.returning = uploader not in st.session_state  # not drawn in the last run
        self.marker = marker

    def shown(self, *, fresh: bool, kept: bool) -> bool:
        """``fresh``: the page has an upload or the demo this run; ``kept``: it keeps data
        read from an upload."""
        if fresh:
            st.session_state.pop(self.marker, None)
            return False
        if kept and (self.returning or st.session_state.get(self.marker)):
            st.session_state[self.marker] = True
            return True
        return False

    @staticmethod
    def notice(text: str, *, button: str, key: str) -> bool:
        """Say the page shows the earlier upload (``text``, escaped by the caller); whether
        its Forget button (``button``, ``key``) was clicked."""
        st.info(text, icon=":material/history:")
        return st.button(button, key=key)


def _mark_nonresumable(session_id: str) -> bool:
    """Tell the Streamlit runtime not to keep ``session_id`` for reconnection."""
    from streamlit import runtime

    if not runtime.exists():  # e.g. under AppTest
        return False
    runtime.get_instance().mark_session_nonresumable(session_id)
    return True


def _current_upload() -> data.Upload | None:
    """The files in the upload widgets; their digest is computed once per pair of files."""
    q = st.session_state.get(state.UPLOAD_QUERIES)
    c = st.session_state.get(state.UPLOAD_CANDIDATES)
    if q is None:
        return None
    upload = data.Upload(queries_name=q.name, queries=q.getvalue(),
                         candidates_name=None if c is None else c.name,
                         candidates=None if c is None else c.getvalue())
    ids = (q.file_id, None if c is None else c.file_id)
    kept = st.session_state.get(state.UPLOAD_DIGEST)
    if kept is None or kept[0] != ids:
        kept = st.session_state[state.UPLOAD_DIGEST] = (ids, upload.digest)
    object.__setattr__(upload, "digest", kept[1])
    return upload


def _load(upload: data.Upload, mapping: dict | None = None) -> None:
    """Load an upload (runs in a button callback: every failure becomes a message).

    The callback runs before the app's script, outside the script's interactive part: the
    load is marked interactive itself, so that work computed ahead (the warm-ups of the data
    shown before) gives way to it (:class:`dashboard.computing.Turns`)."""
    try:
        with computing.interactive():
            source = data.load_upload(upload, mapping=mapping)
    except InputError as exc:
        error = {"message": exc.render(), "mapping": exc.needs_mapping}
    except server_settings.ServerSettingsError as exc:  # the server's, not the upload's
        error = {"message": f"The server's settings cannot be used: {exc}", "mapping": False}
    except ValueError as exc:  # e.g. a column mapping metrics_core rejects
        error = {"message": str(exc), "mapping": True}
    except Exception as exc:
        _LOG.warning("upload failed: %s\n%s", type(exc).__name__,
                     "".join(traceback.format_tb(exc.__traceback__)))
        error = {"message": f"Something went wrong reading the files: {type(exc).__name__}",
                 "mapping": False}
    else:
        st.session_state.pop(state.UPLOAD_ERROR, None)
        st.session_state.pop(state.SNIFFED, None)
        data.release_upload(state.POSTS_HOLDER)  # a posts table belonged to the data left
        data.set_source(source)
        return
    st.session_state[state.UPLOAD_ERROR] = {"digest": upload.digest, **error}


def _on_load() -> None:
    st.session_state[state.UPLOAD_RERUN] = True  # the whole app shows the outcome
    upload = _current_upload()
    if upload is not None:
        _load(upload)


def _on_demo(variant: str | None = None) -> None:
    st.session_state.pop(state.UPLOAD_ERROR, None)
    st.session_state.pop(state.SNIFFED, None)
    data.use_demo(variant or st.session_state.get(state.DEMO_VARIANT) or data.DEMO)


def data_sidebar(source: data.Source | None) -> None:
    """Which data is shown, the way back to the demo, and the upload widgets."""
    if (st.session_state.get(state.UPLOAD_QUERIES) is not None
            or st.session_state.get(state.UPLOAD_CANDIDATES) is not None
            or (source is not None and source.kind == "upload")):
        release_on_close()
    st.subheader("Data")
    if source is None:
        st.caption("No data loaded: upload your files below.")
    elif source.synthetic:
        st.caption("Showing the bundled **synthetic** demo data (not real patients).")
        st.session_state.setdefault(state.DEMO_VARIANT, source.token)
        st.radio("Demo data set", tuple(data.DEMOS), format_func=data.DEMOS.get,
                 key=state.DEMO_VARIANT, on_change=_on_demo,
                 help="Plain: a good screening model, no data problems. With data problems: "
                      "posts in two folds, labels that disagree, tied scores… (see Data & "
                      "audit). Triage: an image classifier that may abstain (its own page).")
    else:
        st.caption(escape_markdown(source.label))
        st.button("Back to the demo data", key=state.USE_DEMO, on_click=_on_demo,
                  args=(data.DEMO,), icon=":material/undo:")
    with st.expander("Upload your data", expanded=False, icon=":material/upload_file:"):
        _upload_widgets()


@st.fragment
def _upload_widgets() -> None:
    """The upload widgets and the Load button, a fragment: adding or removing a file reruns
    these alone (the page's charts are not computed and drawn again for files that are not
    loaded yet). A Load, and a change of files while a failed upload's message is shown (the
    message and its mapping form belong to the files that failed), rerun the whole app."""
    files = _file_ids()
    if (st.session_state.pop(state.UPLOAD_RERUN, False)
            or (st.session_state.get(state.UPLOAD_ERROR) is not None
                and st.session_state.get(state.UPLOAD_SEEN) not in (None, files))):
        st.session_state[state.UPLOAD_SEEN] = files
        st.rerun()
    st.session_state[state.UPLOAD_SEEN] = files
    if files != (None, None):
        release_on_close()
    st.file_uploader("Queries table, one long table, or a triage file",
                     type=list(UPLOAD_TYPES), key=state.UPLOAD_QUERIES,
                     help="CSV, gzip CSV, Parquet or JSON Lines. Kept in this session's "
                          "memory only; never written to disk or shared.")
    st.file_uploader("Candidates table (optional)", type=list(UPLOAD_TYPES),
                     key=state.UPLOAD_CANDIDATES,
                     help="One row per query × sentence; leave empty for a long table.")
    st.button("Load the uploaded files", key=state.LOAD_UPLOAD, on_click=_on_load,
              type="primary", disabled=st.session_state.get(state.UPLOAD_QUERIES) is None)


def _file_ids() -> tuple:
    """The ids of the files in the two upload widgets (None where empty)."""
    return tuple(getattr(st.session_state.get(key), "file_id", None)
                 for key in (state.UPLOAD_QUERIES, state.UPLOAD_CANDIDATES))


def _sniffed(upload: data.Upload) -> mio.Sniffed | None:
    """The upload's layout and columns, read once per upload (kept with its digest)."""
    kept = st.session_state.get(state.SNIFFED)
    if kept is not None and kept[0] == upload.digest:
        return kept[1]
    try:
        found = mio.sniff(upload.queries, upload.candidates, queries_name=upload.queries_name,
                          candidates_name=upload.candidates_name)
    except InputError:
        found = None
    st.session_state[state.SNIFFED] = (upload.digest, found)
    return found


def mapping_step() -> None:
    """After a failed upload: the message, and a column-mapping form when columns are the
    problem (decided by the error's code)."""
    error = st.session_state.get(state.UPLOAD_ERROR)
    if not error:
        return
    st.error("The uploaded files were not loaded:\n\n" + escape_markdown(error["message"]),
             icon=":material/block:")
    upload = _current_upload()
    if upload is None or upload.digest != error["digest"]:
        st.button("Dismiss", key=state.DISMISS_UPLOAD_ERROR,
                  on_click=lambda: st.session_state.pop(state.UPLOAD_ERROR, None))
        return
    sniffed = _sniffed(upload)
    if sniffed is None:
        return
    two = sniffed.layout == "two_tables"
    with st.expander("Map columns by hand", expanded=error["mapping"],
                     icon=":material/swap_horiz:"):
        st.caption("Choose which column of your file holds each field; *automatic* uses the "
                   "recognised names (aliases), *none* leaves an optional field out.")
        tables = [("queries", "q", sniffed.queries_columns, sniffed.required["queries"])]
        if two:
            tables.append(("candidates", "c", sniffed.candidates_columns,
                           sniffed.required["candidates"]))
        for table, prefix, columns, required in tables:
            shown = ", ".join(columns[:12]) + (", …" if len(columns) > 12 else "")
            st.markdown(f"**{table.capitalize()} table** ({escape_markdown(shown)})")
            cols = st.columns(3)
            for i, canon in enumerate(_fields(table if two else "long")):
                options = [_AUTOMATIC, *([] if canon in required else [_NONE]), *columns]
                cols[i % 3].selectbox(f"{canon}{' *' if canon in required else ''}", options,
                                      key=f"{state.MAP_PREFIX}{prefix}_{canon}")
        st.button("Load with this mapping", key=state.LOAD_MAPPED, type="primary",
                  on_click=_on_load_mapped, args=(two,))


def _mapping_from_state(two_tables: bool) -> dict | None:
    """The column mapping chosen in the form (read when the button is pressed)."""
    tables: dict[str, dict] = {"queries": {}, "candidates": {}}
    for table, prefix in (("queries", "q"), ("candidates", "c")):
        for canon in _fields("long"):
            value = st.session_state.get(f"{state.MAP_PREFIX}{prefix}_{canon}", _AUTOMATIC)
            if value != _AUTOMATIC:
                tables[table][canon] = None if value == _NONE else value
    if not two_tables:
        return tables["queries"] or None
    chosen = {k: v for k, v in tables.items() if v}
    return chosen or None


def _on_load_mapped(two_tables: bool) -> None:
    upload = _current_upload()
    if upload is not None:
        _load(upload, _mapping_from_state(two_tables))


def _fields(kind: str) -> tuple[str, ...]:
    if kind == "queries":
        return QUERY_COLUMNS
    if kind == "candidates":
        return CANDIDATE_COLUMNS
    return tuple(dict.fromkeys(QUERY_COLUMNS + CANDIDATE_COLUMNS))
