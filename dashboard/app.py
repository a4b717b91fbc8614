"""Evidence pipeline metrics dashboard: ``streamlit run dashboard/app.py``.

The entry file routes (``st.navigation``), owns the sidebar (data source, settings, filters,
downloads) and the session defaults, and prepares the :class:`dashboard.data.View` the pages
show. Pages are thin; charts come from :mod:`dashboard.charts`; every number comes from
:mod:`metrics_core`. Every setting lives in the URL query string (:mod:`dashboard.state`).
"""

from __future__ import annotations

import logging
import sys
import traceback
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[1]
if str(_ROOT) not in sys.path:  # `streamlit run dashboard/app.py` puts only dashboard/ on it
    sys.path.insert(0, str(_ROOT))

import pandas as pd  # noqa: E402
import streamlit as st  # noqa: E402

from dashboard import data, state  # noqa: E402
from dashboard.state import ALL, SETTINGS, Setting  # noqa: E402
from metrics_core import io as mio  # noqa: E402
from metrics_core.errors import InputError  # noqa: E402

_PAGES = Path(__file__).resolve().parent / "app_pages"
# A local icon: a Material icon name here would make browsers fetch it from a font CDN.
_FAVICON = _ROOT / "assets" / "favicon.png"
_LOG = logging.getLogger("dashboard")
#: Upload formats (contract §2): CSV, gzip CSV, Parquet, JSON Lines (and TSV / JSON).
UPLOAD_TYPES = ["csv", "gz", "parquet", "pq", "jsonl", "ndjson", "json", "tsv"]
_UPLOAD_ERROR = "_upload_error"
_SECTIONS = {
    "gate": ("Gate & thresholds", True),
    "dynamic_k": ("Dynamic-K", True),
    "filters": ("Filters", False),
    "ranking": ("Ranking variants", False),
    "calibration": ("Calibration", False),
    "multilabel": ("Per-post decision rule", False),
    "uncertainty": ("Uncertainty", False),
}


# ---------------------------------------------------------------------------- pages
def _page(file: str, title: str, url_path: str, icon: str, *, default: bool = False):
    return st.Page(_PAGES / file, title=title, url_path=url_path, icon=icon, default=default)


def _pages(source: data.Source) -> list:
    data_page = _page("data_source.py", "Data & audit", "data", ":material/database:")
    if source.is_triage:
        return [_page("triage.py", "Triage", "triage", ":material/rule:", default=True),
                data_page]
    pages = [
        _page("overview.py", "Overview", "overview", ":material/dashboard:", default=True),
        _page("gate.py", "Gate & thresholds", "gate", ":material/tune:"),
        _page("dynamic_k.py", "Dynamic-K", "dynamic-k", ":material/format_list_numbered:"),
        _page("ranking.py", "Ranking", "ranking", ":material/leaderboard:"),
        _page("calibration.py", "Calibration", "calibration", ":material/straighten:"),
        _page("per_criterion.py", "Per criterion", "per-criterion", ":material/view_list:"),
        _page("per_post.py", "Per post", "per-post", ":material/article:"),
        _page("folds.py", "Folds", "folds", ":material/splitscreen:"),
        _page("case_review.py", "Case review", "case-review", ":material/search:"),
        _page("decision.py", "Decision support", "decision", ":material/balance:"),
    ]
    if source.triage is not None:
        pages.append(_page("triage.py", "Triage (seed 004)", "triage", ":material/rule:"))
    pages.append(data_page)
    return pages


# ---------------------------------------------------------------------- error display
def _show_failure(exc: BaseException) -> None:
    """A plain message; the traceback (without the exception text) goes to the server log."""
    if isinstance(exc, InputError):
        st.error(exc.render(), icon=":material/error:")
        return
    _LOG.warning("view failed: %s\n%s", type(exc).__name__,
                 "".join(traceback.format_tb(exc.__traceback__)))
    st.error(f"Something went wrong computing this view: {type(exc).__name__}",
             icon=":material/error:")


# ---------------------------------------------------------------------- data source
def _upload_from_widgets() -> data.Upload | None:
    q = st.session_state.get("upload_queries")
    c = st.session_state.get("upload_candidates")
    if q is None:
        return None
    return data.Upload(queries_name=q.name, queries=q.getvalue(),
                       candidates_name=None if c is None else c.name,
                       candidates=None if c is None else c.getvalue())


def _load(upload: data.Upload, mapping: dict | None = None) -> None:
    """Load an upload (runs in a button callback: every failure becomes a message)."""
    try:
        source = data.load_upload(upload, mapping=mapping)
    except InputError as exc:
        error = {"message": exc.render(), "missing": _missing_columns(exc)}
    except ValueError as exc:  # e.g. a column mapping metrics_core rejects
        error = {"message": str(exc), "missing": True}
    except Exception as exc:
        _LOG.warning("upload failed: %s\n%s", type(exc).__name__,
                     "".join(traceback.format_tb(exc.__traceback__)))
        error = {"message": f"Something went wrong reading the files: {type(exc).__name__}",
                 "missing": False}
    else:
        st.session_state.pop(_UPLOAD_ERROR, None)
        data.set_source(source)
        return
    st.session_state[_UPLOAD_ERROR] = {"digest": upload.digest, **error}


def _missing_columns(exc: InputError) -> bool:
    errors = getattr(exc, "errors", [exc])
    return any("column" in e.rule and ("missing" in e.rule or "not found" in e.rule
                                       or "several columns" in e.rule) for e in errors)


def _on_load() -> None:
    upload = _upload_from_widgets()
    if upload is not None:
        _load(upload)


def _on_demo() -> None:
    st.session_state.pop(_UPLOAD_ERROR, None)
    data.use_demo()


def _data_sidebar(source: data.Source | None) -> None:
    st.subheader("Data")
    if source is None:
        st.caption("No data loaded: upload your files below.")
    elif source.synthetic:
        st.caption("Showing the bundled **synthetic** demo data (not real patients).")
    else:
        st.caption(source.label)
        st.button("Back to the demo data", key="use_demo", on_click=_on_demo,
                  icon=":material/undo:")
    with st.expander("Upload your data", expanded=False, icon=":material/upload_file:"):
        st.file_uploader("Queries table, one long table, or a triage file",
                         type=UPLOAD_TYPES, key="upload_queries",
                         help="CSV, gzip CSV, Parquet or JSON Lines. Kept in this session's "
                              "memory only; never written to disk or shared.")
        st.file_uploader("Candidates table (optional)", type=UPLOAD_TYPES,
                         key="upload_candidates",
                         help="One row per query × sentence; leave empty for a long table.")
        st.button("Load the uploaded files", key="load_upload", on_click=_on_load,
                  type="primary", disabled=st.session_state.get("upload_queries") is None)


def _mapping_step() -> None:
    """After a failed upload: the message, and a column mapping form when names are unknown."""
    error = st.session_state.get(_UPLOAD_ERROR)
    if not error:
        return
    st.error("The uploaded files were not loaded:\n\n" + error["message"],
             icon=":material/block:")
    upload = _upload_from_widgets()
    if upload is None or upload.digest != error["digest"]:
        st.button("Dismiss", key="dismiss_upload_error",
                  on_click=lambda: st.session_state.pop(_UPLOAD_ERROR, None))
        return
    try:
        q_cols, c_cols = upload.columns()
    except InputError:
        return
    with st.expander("Map columns by hand", expanded=error["missing"],
                     icon=":material/swap_horiz:"):
        st.caption("Choose which column of your file holds each field; *automatic* uses the "
                   "recognised names (aliases), *none* leaves an optional field out.")
        tables = [("queries", "q", q_cols, mio.REQUIRED["queries"] if c_cols is not None
                   else mio.REQUIRED["long"] if "sent_uid" in q_cols else
                   mio.REQUIRED["queries"])]
        if c_cols is not None:
            tables.append(("candidates", "c", c_cols, mio.REQUIRED["candidates"]))
        for table, prefix, columns, required in tables:
            st.markdown(f"**{table.capitalize()} table** ({', '.join(columns[:12])}"
                        f"{', …' if len(columns) > 12 else ''})")
            wanted = _mapping_fields(table if c_cols is not None else "long")
            cols = st.columns(3)
            for i, canon in enumerate(wanted):
                options = ["(automatic)", *([] if canon in required else ["(none)"]), *columns]
                cols[i % 3].selectbox(f"{canon}{' *' if canon in required else ''}", options,
                                      key=f"{_MAP_PREFIX}{prefix}_{canon}")
        st.button("Load with this mapping", key="load_mapped", type="primary",
                  on_click=_on_load_mapped, args=(c_cols is not None,))


_MAP_PREFIX = "map_"


def _mapping_from_state(two_tables: bool) -> dict | None:
    """The column mapping chosen in the form (read when the button is pressed)."""
    tables: dict[str, dict] = {"queries": {}, "candidates": {}}
    for table, prefix in (("queries", "q"), ("candidates", "c")):
        for canon in _mapping_fields("long"):
            value = st.session_state.get(f"{_MAP_PREFIX}{prefix}_{canon}", "(automatic)")
            if value != "(automatic)":
                tables[table][canon] = None if value == "(none)" else value
    if not two_tables:
        return tables["queries"] or None
    chosen = {k: v for k, v in tables.items() if v}
    return chosen or None


def _on_load_mapped(two_tables: bool) -> None:
    upload = _upload_from_widgets()
    if upload is not None:
        _load(upload, _mapping_from_state(two_tables))


def _mapping_fields(kind: str) -> tuple[str, ...]:
    from metrics_core.dataset import CANDIDATE_COLUMNS, QUERY_COLUMNS

    if kind == "queries":
        return QUERY_COLUMNS
    if kind == "candidates":
        return CANDIDATE_COLUMNS
    return tuple(dict.fromkeys(QUERY_COLUMNS + CANDIDATE_COLUMNS))


# ---------------------------------------------------------------------- settings
def _widget(s: Setting, *, options: tuple = (), disabled: bool = False) -> None:
    """The widget of a setting; its value lives under ``s.key`` in the session state."""
    common = {"key": s.key, "help": s.help or None, "disabled": disabled}
    if s.kind == "range" or (s.kind == "float" and s.control == "slider"):
        st.slider(s.label, float(s.low), float(s.high), step=float(s.step), **common)
    elif s.kind == "float":
        st.number_input(s.label, float(s.low), float(s.high), step=float(s.step), **common)
    elif s.kind == "int":
        st.number_input(s.label, int(s.low), int(s.high), step=int(s.step), **common)
    elif s.kind == "bool":
        st.toggle(s.label, **common)
    elif s.kind == "choice":
        st.selectbox(s.label, s.options, format_func=s.format_option, **common)
    elif s.kind == "text":
        st.selectbox(s.label, options, format_func=lambda v: "all" if v == ALL else str(v),
                     **common)
    elif s.kind == "multi":
        st.multiselect(s.label, options, placeholder="all", **common)


def _filter_options(source: data.Source) -> dict[str, tuple]:
    ds = source.dataset
    # pd.unique is hash-based and vectorised: cheap even at a million queries.
    folds = () if ds is None or ds.fold is None else tuple(
        str(f) for f in sorted(int(v) for v in pd.unique(ds.fold)))
    splits = () if ds is None or ds.split is None else tuple(
        sorted(str(v) for v in pd.unique(ds.split)))
    criteria = () if ds is None else tuple(ds.criteria)
    return {"fold": (ALL, *folds), "split": (ALL, *splits), "criterion": criteria}


def _settings_sidebar(source: data.Source, notes: list[str]) -> None:
    options = _filter_options(source)
    # A filter value from a link that this data set does not have falls back to "all".
    for key in ("fold", "split"):
        if st.session_state.get(key) not in options[key]:
            notes.append(f"{key}={st.session_state.get(key)!r} is not in this data set; "
                         f"showing all.")
            st.session_state[key] = ALL
    chosen = [c for c in st.session_state.get("criterion", []) if c in options["criterion"]]
    if chosen != list(st.session_state.get("criterion", [])):
        notes.append("Some criteria in the link are not in this data set and were dropped.")
        st.session_state["criterion"] = chosen
    for section, (title, expanded) in _SECTIONS.items():
        with st.expander(title, expanded=expanded):
            for s in SETTINGS:
                if s.section != section:
                    continue
                if s.kind in ("text", "multi"):
                    _widget(s, options=options[s.key], disabled=len(options[s.key]) <= 1
                            and s.kind == "text")
                else:
                    _widget(s)
    st.caption("Every setting is in the page address: copy it to share this exact view.")


def _downloads_sidebar(v: data.View) -> None:
    from dashboard import display

    st.subheader("Downloads")
    st.download_button("metrics_master.json", data=lambda: v.evaluation.to_json(),
                       file_name="metrics_master.json", mime="application/json",
                       key="download_master", on_click="ignore", icon=":material/download:",
                       help="Every metric, the configuration and the checks at these settings.")
    display.download_csv("Per-query results (CSV)", lambda: v.evaluation.per_query,
                         "per_query.csv", key="download_per_query")
    display.download_csv("Per-criterion table (CSV)", lambda: v.evaluation.per_criterion,
                         "per_criterion.csv", key="download_per_criterion", index=True)


def _filters(values: dict) -> data.Filters:
    return data.Filters(fold=None if values["fold"] == ALL else str(values["fold"]),
                        split=None if values["split"] == ALL else str(values["split"]),
                        criteria=tuple(values["criterion"]))


# ---------------------------------------------------------------------------- main
def main() -> None:
    st.set_page_config(page_title="Evidence pipeline metrics", page_icon=str(_FAVICON),
                       layout="wide", initial_sidebar_state="expanded",
                       menu_items={"Get help": None, "Report a bug": None,
                                   "About": "Evidence pipeline metrics (metrics_core)."})
    state.init_defaults()
    notes = list(state.load_from_url())
    try:
        source = data.current_source()
    except Exception as exc:  # the demo files are missing or unreadable: uploads still work
        _show_failure(exc)
        with st.sidebar:
            _data_sidebar(None)
        _mapping_step()
        st.stop()
    with st.sidebar:
        _data_sidebar(source)
    page = st.navigation(_pages(source))
    v = None
    with st.sidebar:
        if source.loaded is not None:
            _settings_sidebar(source, notes)
            values = state.current_settings()
            try:
                config = state.build_config(values)
            except ValueError as exc:
                notes.append(f"{exc}; the defaults are used.")
                config = state.build_config({})
            v = data.View(source=source, filters=_filters(values), config=config,
                          show_bootstrap=bool(values["ci"]))
            _downloads_sidebar(v)
    data.set_view(v if v is not None else data.View(source=source, filters=data.Filters(),
                                                     config=state.build_config({})))
    state.write_to_url()
    for note in dict.fromkeys(notes):
        st.warning(note, icon=":material/link:")
    _mapping_step()
    try:
        page.run()
    except Exception as exc:
        _show_failure(exc)


main()
