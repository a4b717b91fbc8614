"""Evidence pipeline metrics dashboard: ``streamlit run dashboard/app.py``.

The entry file routes: page configuration, the sign-in gate (:mod:`dashboard.access`: with
sign-in configured, nothing else runs until the user signs in), session defaults and the link,
the sidebar parts (:mod:`dashboard.upload`, :mod:`dashboard.sidebar`), the
:class:`dashboard.data.View` the pages show, and the error boundary around the page. Every
number comes from :mod:`metrics_core`.
"""

from __future__ import annotations

import sys
from pathlib import Path

_ROOT = Path(__file__).resolve().parents[1]
if str(_ROOT) not in sys.path:  # `streamlit run dashboard/app.py` puts only dashboard/ on it
    sys.path.insert(0, str(_ROOT))

import streamlit as st  # noqa: E402

from dashboard import (  # noqa: E402
    access,
    computing,
    data,
    display,
    idle,
    link,
    pending_cohorts,
    refinement,
    server_settings,
    sidebar,
    state,
    upload,
)
from dashboard.safe_text import escape_markdown  # noqa: E402
from metrics_core.shipped import ASSETS  # noqa: E402

_PAGES = Path(__file__).resolve().parent / "app_pages"
# A local icon: a Material icon name here would make browsers fetch it from a font CDN.
_FAVICON = ASSETS / "favicon.png"
#: Evidence pages: (file, title, url path, icon).
_EVIDENCE_PAGES = (
    ("overview.py", "Overview", "overview", ":material/dashboard:"),
    ("gate.py", "Gate & thresholds", "gate", ":material/tune:"),
    ("dynamic_k.py", "Dynamic-K", "dynamic-k", ":material/format_list_numbered:"),
    ("ranking.py", "Ranking", "ranking", ":material/leaderboard:"),
    ("calibration.py", "Calibration", "calibration", ":material/straighten:"),
    ("per_criterion.py", "Per criterion", "per-criterion", ":material/view_list:"),
    ("per_post.py", "Per post", "per-post", ":material/article:"),
    ("folds.py", "Folds", "folds", ":material/splitscreen:"),
    ("cohorts.py", "Cohorts", "cohorts", ":material/groups:"),
    ("case_review.py", "Case review", "case-review", ":material/search:"),
    ("decision.py", "Decision support", "decision", ":material/balance:"),
    ("compare.py", "Compare runs", "compare", ":material/compare_arrows:"),
    ("meeting.py", "Meeting mode", "meeting", ":material/co_present:"),
)
#: Pages that draw their own few controls (or need none) instead of the settings sidebar.
_OWN_CONTROLS = ("meeting", "triage", "rag", "help")
_TRIAGE = ("triage.py", "Triage", "triage", ":material/rule:")
_DATA = ("data_source.py", "Data & audit", "data", ":material/database:")
_RAG = ("rag.py", "RAG", "rag", ":material/quiz:")
_HELP = ("glossary.py", "Help & glossary", "help", ":material/help:")


def _page(file: str, title: str, url_path: str, icon: str, *, default: bool = False):
    return st.Page(_PAGES / file, title=title, url_path=url_path, icon=icon, default=default)


def _pages(source: data.Source) -> list:
    if source.is_triage:
        return [_page(*_TRIAGE, default=True), _page(*_RAG), _page(*_DATA), _page(*_HELP)]
    pages = [_page(*_EVIDENCE_PAGES[0], default=True), *(_page(*p) for p in _EVIDENCE_PAGES[1:])]
    if source.triage is not None:
        pages.append(_page(*_TRIAGE))
    return [*pages, _page(*_RAG), _page(*_DATA), _page(*_HELP)]


def _navigation(pages: list, slot) -> st.Page:
    """The current page of ``pages``, with a link to each drawn in ``slot`` (the sidebar's top).

    The links are page links, elements of the sidebar, not Streamlit's own navigation menu:
    the browser redraws that menu (every link) on every update a run sends, 30-40 % of what a
    Gate move's updates cost it to draw; elements that did not change are not redrawn."""
    page = st.navigation(pages, position="hidden")
    with slot:
        for p in pages:
            st.page_link(p)
        st.divider()
    return page


def _view(source: data.Source, notes: list[str], *, widgets: bool = True,
          page: str = "") -> data.View:
    """The settings sidebar and downloads, and the view they define (``widgets=False``: the
    page draws its own controls; the other settings keep their values). On the pages of
    :data:`sidebar.PAGE_CONTROLS` the page draws those settings itself, in a fragment."""
    if source.loaded is None:
        return data.View(source=source, filters=data.Filters(), config=state.build_config({}))
    if widgets:
        sidebar.settings_sidebar(source, notes, on_page=sidebar.PAGE_CONTROLS.get(page, ()))
    v = sidebar.build_view(source, notes)
    if widgets:
        sidebar.downloads_sidebar(v)
    return v


def main() -> None:
    st.set_page_config(page_title="Evidence pipeline metrics", page_icon=str(_FAVICON),
                       layout="wide", initial_sidebar_state="expanded",
                       menu_items={"Get help": None, "Report a bug": None,
                                   "About": "Evidence pipeline metrics (metrics_core)."})
    access.sign_in_gate()  # with sign-in configured: nothing below runs before it
    link.load_from_url(caps=server_settings.interaction_caps())
    try:
        source = data.current_source()
    except Exception as exc:  # the demo files are missing or unreadable: uploads still work
        display.show_failure(exc)
        with st.sidebar:
            upload.data_sidebar(None)
        upload.mapping_step()
        st.stop()
    # other data: a guarantee does not follow; a link's cohort settings wait or are chosen
    data.follow_data(source)
    pending_cohorts.follow(source)
    notes = link.link_notes()  # with their notes, and without those now settled
    links = st.sidebar.container()  # the pages' links, at the top of the sidebar
    with st.sidebar:
        upload.data_sidebar(source)
    with computing.interactive():  # served before the work computed ahead (computing.Turns)
        page = _navigation(_pages(source), links)
        state.begin_run()
        with st.sidebar:
            data.set_view(_view(source, notes, widgets=page.url_path not in _OWN_CONTROLS,
                                page=page.url_path))
        link.write_to_url()
        top = st.container()  # the offer of resamples above the live cap (refine_intervals)
        for note in dict.fromkeys(notes):  # the link's, and those of a switch of data
            st.warning(escape_markdown(note), icon=":material/swap_horiz:"
                       if sidebar.SWITCH_NOTE in note else ":material/link:")
        upload.mapping_step()
    with computing.charged_to_session():  # the engine's helper threads pay the session's budget
        try:
            with computing.interactive():
                page.run()
        except Exception as exc:
            display.show_failure(exc)
        else:
            link.write_to_url(always=True)  # the address of the run that finished last
            refinement.refine_intervals(st.session_state.get(state.VIEW), slot=top)
    idle.collect_after_run()  # its cyclic garbage, once the run's end has been sent


main()
