"""The intervals refined after a page drew with the live resamples
(:data:`dashboard.data.LIVE_RESAMPLES`): the view's full bootstrap, the resamples above the
server's live cap on the page's button, the per-criterion intervals, and the warm-ups that
compute the next pages' intervals ahead."""

from __future__ import annotations

import contextlib
import threading

import pandas as pd
import streamlit as st

from dashboard import reruns, state
from dashboard.computing import (
    ahead_progress,
    bar_progress,
    charged_to_session,
    interactive,
    metered,
    over_budget,
    serving,
    stop_if_closed,
)
from dashboard.data import LIVE_RESAMPLES, View, finder_resamples
from dashboard.evaluations import memo_of, shared
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
        with charged_to_session():  # the warm-ups' threads pay the session's budget
            warm_ahead(v, config, memo)
    v.pending = None
    reruns.quiet_rerun(scope="fragment" if fragment else "app")


def warm_ahead(v: View, config: EvalConfig, memo, *,
               every_session: bool | None = None) -> list[threading.Thread]:
    """The next pages' values computed ahead on helper threads once the view's intervals at
    ``config`` are refined, one after the other (the threads started, in order), once per
    data set, resamples and filters (``memo``'s :meth:`~dashboard.evaluations.Evaluations.
    first_time`): the first computation is the long one, later settings update it in a
    fraction of the time.

    - the criteria's intervals with :data:`LIVE_RESAMPLES` (a second or so), the Per
      criterion page's table until the configured number is in;
    - the Decision support page's first finder result (a second or two);
    - for a bundled demo on a server (:func:`dashboard.evaluations.shared`, ``every_session``:
      by default :func:`dashboard.computing.serving`; computed once for every session), the
      data-only part of the criteria's intervals with the configured resamples
      (:func:`metrics_core.evaluation.tables.group_data_intervals`: each criterion's AUROC,
      AP, ranking means, Brier, ECE, MCE; about 2.5 s of CPU on the demo, three quarters of the
      criteria's first computation), so that the Per criterion page's refinement computes
      only what the settings change. What it keeps is a few numbers per criterion; an
      upload's are computed on the page only, with progress.
    """
    if every_session is None:
        every_session = serving()
    token, evaluator = v.source.token, v.source.evaluator()
    started: list[threading.Thread] = []
    groups = finder = None
    if memo.first_time(("groups", token, config.bootstrap_config, config.filters)):
        groups = _warm_group_intervals(evaluator, config)
        started.append(groups)
    if memo.first_time(("finder", token, config.filters, config.seed, finder_resamples(v))):
        finder = warm_finder(v, after=groups)
        started.append(finder)
    if (every_session and shared(v.source) and config.bootstrap > LIVE_RESAMPLES
            and memo.first_time(("groups' data", token, config.bootstrap_config,
                                 config.ranking, config.calibration, config.filters))):
        started.append(_warm_group_data(evaluator, config, after=finder or groups))
    return started


def _warm_group_data(evaluator: Evaluator, config: EvalConfig, *,
                     after: threading.Thread | None = None) -> threading.Thread:
    """Start :func:`~metrics_core.evaluation.tables.group_data_intervals` of ``config`` on a
    helper thread, after ``after``'s work (if any), giving way between its batches to the
    interactive runs in flight (:func:`dashboard.computing.ahead_progress`)."""
    from metrics_core.evaluation.inflight import in_background
    from metrics_core.evaluation.tables import group_data_intervals

    return in_background((lambda: after is not None and after.join(),
                          lambda: group_data_intervals(evaluator, config,
                                                       progress=ahead_progress)),
                         "dashboard-group-data")


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
            if shown:
                said = (f"Intervals from {shown:,} resamples: this server computes at most "
                        "that many without asking")
            else:
                n = v.source.loaded.dataset.n_queries
                said = (f"No intervals yet: on {n:,} queries this server computes none "
                        "without asking (`[interaction] max_live_resample_rows`, resamples "
                        "times queries); the values shown are exact")
            st.info(f"{said}. The {config.bootstrap:,} set under Uncertainty run when asked "
                    f"for, with progress; any change stops them.", icon=":material/speed:")
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
    reruns.quiet_rerun(scope="app")


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
    they are computed, or when only the setting's own intervals are left to compute for
    every criterion (:func:`~metrics_core.evaluation.tables.group_setting_left`: after a
    threshold move, the criteria's data intervals made earlier; computed here, in one run,
    a fraction of the live pass and the refinement's second run together); else with
    :data:`LIVE_RESAMPLES` (every criterion's queries resampled fewer times: about a fifth of
    the time, and usually computed ahead) and ``refining`` true: the page shows them and
    computes the configured number with :func:`refine_group_intervals`."""
    from metrics_core.evaluation import tables

    evaluator = v.source.evaluator()
    live = config.replace(bootstrap=min(config.bootstrap, LIVE_RESAMPLES))
    if live == config or tables.group_setting_left(evaluator, config):
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
    reruns.quiet_rerun(scope="app")
