"""The intervals refined after a page drew with the live resamples
(:data:`dashboard.data.LIVE_RESAMPLES`): the view's full bootstrap, the resamples above the
server's live cap on the page's button, the per-criterion intervals, and the warm-ups that
compute the next pages' intervals ahead."""

from __future__ import annotations

import contextlib
import threading

import pandas as pd
import streamlit as st

from dashboard import state
from dashboard.computing import (
    ahead_progress,
    bar_progress,
    charged_to_session,
    interactive,
    metered,
    over_budget,
    stop_if_closed,
)
from dashboard.data import LIVE_RESAMPLES, View, finder_resamples
from dashboard.evaluations import memo_of
from dashboard.finder import warm_finder
from metrics_core.config import EvalConfig
from metrics_core.report import Evaluator


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
    memo = memo_of(v.source)
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
                warm_finder(v, after=groups)
    v.pending = None
    st.rerun(scope="fragment" if fragment else "app")


def _heavy_intervals(v: View, slot) -> None:
    """The resamples above the live cap: a button that asks for them, or (asked) their run
    with a progress bar and a cancel button (the cancel, or any other change, stops it at the
    next update; closing the tab too)."""
    config = v.heavy
    memo = memo_of(v.source)
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
                          lambda: group_intervals(evaluator, live, "auroc",
                                                  progress=ahead_progress)),
                         "dashboard-group-intervals")


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
    running = tables.group_intervals_in_the_making(evaluator, live)
    if running is not None:  # computed ahead: it does not give way to a run waiting for it
        with interactive(False):
            running.wait()
    return tables.group_intervals(evaluator, live, metric), True


def refine_group_intervals(v: View, config: EvalConfig) -> None:
    """Compute the per-criterion intervals of ``config`` (the configured resamples) with a
    progress bar where this is called (the end of the Per criterion page), then draw the
    page again. Visible work only: a move or another page stops it at the next bar update,
    and so does a closed tab (:func:`stop_if_closed`)."""

    with interactive(False):  # a refinement, with progress: the moves of others first
        _refine_group_intervals(v, config)


def _refine_group_intervals(v: View, config: EvalConfig) -> None:
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
    running = tables.group_intervals_in_the_making(evaluator, config)
    if running is not None:
        # Another session computes them: waited for in steps, each a Streamlit call where a
        # move or another page stops this run (a closed tab too), instead of blocking in it.
        while not running.wait(0.25):
            stop_if_closed()
            bar.progress(0.0, text=text + " (computed for another session too)…")
    with metered():
        tables.group_intervals(evaluator, config, "auroc",
                               progress=bar_progress(bar, lambda done, total: text))
    bar.empty()
    st.rerun(scope="app")
