"""A posts table for uploaded data: one row per ``post_id``, its other columns cohort columns
of every query of the post, as ``metrics-core evaluate --posts`` reads it (contract §9,
posts table).

The table is read and checked by :func:`metrics_core.inputs.cohort_columns.posts_table` (every
broken rule at once, each naming the file, the column, the rule and the rows), held in the
session's memory only and counted in the server's upload budget
(:func:`dashboard.data.read_within_budget`, a slot of its own). Its columns join those of the
queries table (:class:`CohortTables`; a queries column wins over a posts column of the same
name, as on the command line), and the source gets an evaluator of its own whose cohort
filter reads both tables.
"""

from __future__ import annotations

import dataclasses
import logging
import traceback
from dataclasses import dataclass

import streamlit as st

from dashboard import data, state
from dashboard.safe_text import escape_markdown
from dashboard.server_settings import ServerSettingsError, upload_limits
from dashboard.upload import UPLOAD_TYPES
from metrics_core.errors import InputError
from metrics_core.inputs.cohort_columns import (
    CohortColumns,
    CohortSource,
    cohort_columns,
    posts_table,
    read_cohorts,
)
from metrics_core.report import Evaluator

__all__ = ["CohortTables", "posts_name", "posts_step", "queries_columns", "with_posts",
           "without_posts"]

_LOG = logging.getLogger("dashboard")


@dataclass(frozen=True, eq=False)
class CohortTables:
    """The cohort columns of the queries table and of a posts table, offered together
    (``suggested``, ``others``: the queries table's, then the posts table's it lacks) and read
    from the first table that has each (:func:`read_cohorts`, as ``--posts`` does)."""

    queries: CohortColumns | None
    posts: CohortColumns

    @property
    def tables(self) -> tuple[CohortColumns, ...]:
        return tuple(t for t in (self.queries, self.posts) if t is not None)

    def _own(self, part: str) -> tuple[str, ...]:
        seen: list[str] = []
        for table in self.tables:
            taken = set() if table is self.tables[0] else set(self.tables[0].frame.columns)
            seen += [c for c in getattr(table, part) if c not in taken and c not in seen]
        return tuple(seen)

    @property
    def suggested(self) -> tuple[str, ...]:
        return self._own("suggested")

    @property
    def others(self) -> tuple[str, ...]:
        return self._own("others")

    @property
    def name(self) -> str:
        return ", ".join(t.name for t in self.tables)

    def attributes(self, loaded, declared, **kw):
        """The cohort columns ``declared`` (``"a*b"``: intersections, across the tables)."""
        return read_cohorts(declared, [(t.frame, t.name) for t in self.tables], loaded, **kw)


def queries_columns(source: data.Source) -> CohortColumns | None:
    """The cohort columns of the source's queries table alone (without a posts table)."""
    cohorts = source.cohorts
    return cohorts.queries if isinstance(cohorts, CohortTables) else cohorts


def posts_name(source: data.Source) -> str | None:
    """The file name of the source's posts table (None without one)."""
    cohorts = source.cohorts
    return cohorts.posts.name if isinstance(cohorts, CohortTables) else None


def _with_cohorts(source: data.Source, cohorts) -> data.Source:
    """``source`` with the cohort columns ``cohorts`` and an evaluator of its own whose cohort
    filter reads them (the same data set; every evaluation computed again)."""
    loaded = source.loaded
    base = source.evaluator()
    reader = None
    if cohorts is not None:
        reader = CohortSource(lambda names, bins: cohorts.attributes(loaded, names, bins=bins),
                              loaded)
    evaluator = Evaluator(base.ds, audit=base.audit, inputs=base.inputs, cohorts=reader)
    files = tuple(f for f in source.files if f != posts_name(source))
    if isinstance(cohorts, CohortTables):
        files = (*files, cohorts.posts.name)
    return dataclasses.replace(source, cohorts=cohorts, base=evaluator, files=files)


def with_posts(source: data.Source, name: str, payload: bytes) -> data.Source:
    """``source`` (uploaded data) with the posts table ``payload`` (named ``name``) read,
    checked and held to the upload budget in place of the session's previous posts table.
    Raises :class:`InputError` naming the file for a table that breaks a rule or does not
    fit the budget."""
    if source.kind != "upload" or source.loaded is None:
        raise InputError("a posts table adds cohort columns to uploaded queries",
                         file=name, hint="upload the queries (and candidates) first; the "
                                         "demo's queries carry their own cohort columns")
    loaded = source.loaded

    def read() -> CohortColumns:
        frame = posts_table(payload, loaded, name=name, limits=upload_limits())
        return cohort_columns(frame, loaded, name=name)

    table = data.read_within_budget(state.POSTS_HOLDER, name, len(payload), read,
                                    lambda columns: columns.frame)
    return _with_cohorts(source, CohortTables(queries_columns(source), table))


def without_posts(source: data.Source) -> data.Source:
    """``source`` without its posts table (its budget share released)."""
    data.release_upload(state.POSTS_HOLDER)
    return _with_cohorts(source, queries_columns(source))


# ------------------------------------------------------------------ the Data page's step
def posts_step(source: data.Source) -> None:
    """The Data page's posts table: its uploader and button (uploaded data only), the table
    in use with a button to remove it, and a refused table's message."""
    with st.expander("Posts table (optional): cohort columns keyed by post_id",
                     expanded=posts_name(source) is not None,
                     icon=":material/upload_file:"):
        if source.kind != "upload":
            st.caption("A posts table adds cohort columns to uploaded queries (the demo's "
                       "queries carry their own): upload your data first.")
            return
        name = posts_name(source)
        if name is not None:
            columns = source.cohorts.posts
            listed = [*columns.suggested, *columns.others]
            st.caption(escape_markdown(
                f"In use: {name}, columns {', '.join(listed) or '(none besides post_id)'}; "
                "a queries column of the same name wins."))
            st.button("Remove the posts table", key=state.REMOVE_POSTS, on_click=_on_remove,
                      icon=":material/delete:")
        st.file_uploader("Posts table (CSV, Parquet, JSON Lines)", type=list(UPLOAD_TYPES),
                         key=state.UPLOAD_POSTS,
                         help="One row per post_id; every other column is a cohort column of "
                              "each query of that post (a post it does not list: the cohort "
                              "'missing'), as metrics-core evaluate --posts reads it. Kept in "
                              "this session's memory only; never written to disk or shared.")
        st.button("Use this posts table", key=state.LOAD_POSTS, on_click=_on_load,
                  type="primary", disabled=st.session_state.get(state.UPLOAD_POSTS) is None)
        error = st.session_state.get(state.POSTS_ERROR)
        if error:
            st.error("The posts table was not used:\n\n" + escape_markdown(error),
                     icon=":material/block:")


def _use(source: data.Source) -> None:
    """Make ``source`` the session's, its cohort settings kept where it still has them."""
    data.set_source(source)
    choices = data.cohort_choices(source)
    state.set_value(state.COHORT_COLUMNS,
                    [c for c in state.value(state.COHORT_COLUMNS) if c in choices])
    values = data.cohort_options(source, data.settings_bins(source, state.model()))
    state.set_value("cohort", [c for c in state.value("cohort") if c in values])


def _on_load() -> None:
    """The button's callback: read the uploaded posts table (every failure a message)."""
    st.session_state.pop(state.POSTS_ERROR, None)
    uploaded = st.session_state.get(state.UPLOAD_POSTS)
    if uploaded is None:
        return
    try:
        source = with_posts(data.current_source(), uploaded.name, uploaded.getvalue())
    except InputError as exc:
        st.session_state[state.POSTS_ERROR] = exc.render()
        return
    except ServerSettingsError as exc:  # the server's, not the table's
        st.session_state[state.POSTS_ERROR] = f"The server's settings cannot be used: {exc}"
        return
    except Exception as exc:
        _LOG.warning("posts table failed: %s\n%s", type(exc).__name__,
                     "".join(traceback.format_tb(exc.__traceback__)))
        st.session_state[state.POSTS_ERROR] = (f"Something went wrong reading the file: "
                                               f"{type(exc).__name__}")
        return
    _use(source)


def _on_remove() -> None:
    st.session_state.pop(state.POSTS_ERROR, None)
    _use(without_posts(data.current_source()))
