"""The cohort settings of a link that wait for the data they name.

A new session opens on the demo, and the user's data (whose cohort columns a link names) is
uploaded afterwards. A link's cohort columns (``cohort_columns``), their bins
(``cohort_bins``) and cohort filter values (``cohort``) that the demo lacks are therefore
neither dropped nor shown: they wait (:data:`dashboard.state.PENDING_COHORTS`), named on the
Data page and kept in the link, and are chosen as soon as data that have them are loaded. When
an upload lacks some, a message names them and they wait on for a posts table added to the
upload (its columns may be there), chosen when it has them; a posts table lacking some leaves
those out with a message naming them. The Data page's button dismisses what waits (contract §9,
"Cohort columns chosen").
"""

from __future__ import annotations

import streamlit as st

from dashboard import data, state
from dashboard.state import COHORT_BINS, COHORT_COLUMNS, short_repr

__all__ = ["describe_waiting", "dismiss", "follow", "missed", "waiting"]

#: The settings that wait, in the order the notes name them.
_KEYS = (COHORT_COLUMNS, COHORT_BINS, "cohort")


def describe_waiting() -> str | None:
    """What waits, for the Data page (None: nothing)."""
    found = waiting()
    if not found:
        return None
    return (st.session_state.get(state.PENDING_COHORTS) or {}).get("note") or _wait_note(found)


def dismiss() -> None:
    """The Data page's button (a callback): what waits is left out (the link drops it)."""
    pending = st.session_state.pop(state.PENDING_COHORTS, None) or {}
    if pending.get("note"):
        _unsay(pending["note"])


def waiting() -> dict[str, tuple[str, ...]]:
    """The link's cohort settings waiting for data that have them: setting key -> values (none
    waiting: empty)."""
    found = st.session_state.get(state.PENDING_COHORTS) or {}
    return {k: tuple(found[k]) for k in _KEYS if found.get(k)}


def missed() -> str | None:
    """The message about the link's cohort settings the last data loaded lacked (None: none)."""
    return st.session_state.get(state.PENDING_MISSED)


def _names(values) -> str:
    return ", ".join(short_repr(v) for v in values)


def _split(source: data.Source, values: dict) -> tuple[dict, dict]:
    """``values`` (setting key -> values) split into those ``source`` has and those it
    lacks."""
    columns = data.cohort_choices(source)
    has = tuple(c for c in values.get(COHORT_COLUMNS, ()) if c in columns)
    lacks = tuple(c for c in values.get(COHORT_COLUMNS, ()) if c not in columns)
    bins = values.get(COHORT_BINS, ())
    found = {COHORT_COLUMNS: has,
             COHORT_BINS: tuple(b for b in bins
                                if b.split("=", 1)[0] in state.bin_columns(has))}
    # a numeric column's values: cohorts of the bins chosen with it (contract §9)
    options = data.cohort_options(source, data.settings_bins(source, found))
    found["cohort"] = tuple(c for c in values.get("cohort", ()) if c in options)
    # the bins of a column no column chosen uses are neither chosen nor waiting
    lacking = {COHORT_COLUMNS: lacks,
               COHORT_BINS: tuple(b for b in bins if b not in found[COHORT_BINS]
                                  and b.split("=", 1)[0] in state.bin_columns(lacks)),
               "cohort": tuple(c for c in values.get("cohort", ()) if c not in options)}
    return found, {k: v for k, v in lacking.items() if v}


def _unsay(note: str) -> None:
    """The link's notes without ``note`` (what waited is now settled)."""
    kept = st.session_state.get(state.LINK_NOTES)
    if kept and note in kept:
        st.session_state[state.LINK_NOTES] = [n for n in kept if n != note]


def _listed(values: dict) -> str:
    """``cohort columns 'age', bins 'age=q3' and cohort filter values 'ward=W1'``."""
    said = [f"{what} {_names(values[key])}" for key, what in (
        (COHORT_COLUMNS, "cohort columns"), (COHORT_BINS, "bins"),
        ("cohort", "cohort filter values")) if values.get(key)]
    return said[0] if len(said) == 1 else ", ".join(said[:-1]) + " and " + said[-1]


def _wait_note(lacking: dict) -> str:
    return (f"The link's {_listed(lacking)} are not in the data shown: they wait for your "
            "data. Upload data that have them (Data & audit) and they are chosen; the link "
            "keeps them meanwhile.")


def _posts_wait_note(lacking: dict, source: data.Source) -> str:
    from dashboard.sidebar import cohort_columns_rule

    return (f"The link's {_listed(lacking)} are not in the data loaded ({COHORT_COLUMNS} "
            f"{cohort_columns_rule(source)}): they wait for a posts table that has them (Data "
            "& audit, Posts table) and are chosen when it is added; the link keeps them "
            "meanwhile. Dismiss them there to leave them out.")


def _posts(source: data.Source) -> str | None:
    """The name of the posts table the source uses (None: none)."""
    from dashboard.posts import posts_name

    return posts_name(source)


def follow(source: data.Source) -> list[str]:
    """:func:`_follow`, its notes kept with the link's (shown until a setting changes)."""
    from dashboard import link

    notes = _follow(source)
    for note in notes:
        link.keep_link_note(note)
    return notes


def _follow(source: data.Source) -> list[str]:
    """At the start of the app's run (after :func:`dashboard.data.follow_data`): on the
    session's first run, the link's cohort settings the data shown lack start to wait; on
    other data, those waiting that the data have are chosen, and an upload lacking some leaves
    them out with a message naming them. Returns the notes to show."""
    first = not st.session_state.get(state.PENDING_CHECKED)
    st.session_state[state.PENDING_CHECKED] = True
    if first:
        if source.kind == "upload":  # a link is read on the demo; nothing waits for other data
            return []
        chosen = {k: tuple(state.value(k)) for k in _KEYS}
        found, lacking = _split(source, chosen)
        if not lacking:
            return []
        for key in _KEYS:
            state.set_value(key, found[key])
        note = _wait_note(lacking)
        st.session_state[state.PENDING_COHORTS] = {**lacking, "token": source.token,
                                                   "note": note}
        return [note]
    pending = st.session_state.get(state.PENDING_COHORTS)
    if not pending or source.loaded is None or (
            (pending.get("token"), pending.get("posts")) == (source.token, _posts(source))):
        return []  # the same data, with the same posts table (or none)
    found, lacking = _split(source, pending)
    _unsay(pending.get("note") or _wait_note({k: pending[k] for k in _KEYS if pending.get(k)}))
    for key in _KEYS:
        if found[key]:
            have = tuple(state.value(key))
            if key == COHORT_BINS:  # a column's own bins chosen meanwhile win
                columns = {b.split("=", 1)[0] for b in have}
                have += tuple(b for b in found[key] if b.split("=", 1)[0] not in columns)
            else:
                have += tuple(v for v in found[key] if v not in have)
            state.set_value(key, have)
    st.session_state.pop(state.PENDING_MISSED, None)
    if not lacking:
        st.session_state.pop(state.PENDING_COHORTS, None)
        return []
    if source.kind != "upload" or _posts(source) is None:
        # another demo: the rest waits on; an upload: the rest waits for a posts table
        note = (_wait_note(lacking) if source.kind != "upload"
                else _posts_wait_note(lacking, source))
        st.session_state[state.PENDING_COHORTS] = {**lacking, "token": source.token,
                                                   "posts": None, "note": note}
        return [note]
    st.session_state.pop(state.PENDING_COHORTS, None)  # a posts table lacking some
    from dashboard.sidebar import cohort_columns_rule

    message = (f"The link's {_listed(lacking)} are not in the data loaded and were left out "
               f"({COHORT_COLUMNS} {cohort_columns_rule(source)}).")
    st.session_state[state.PENDING_MISSED] = message
    return [message]
