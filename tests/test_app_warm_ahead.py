"""What the app computes ahead once a view's intervals are refined (dashboard.refinement
.warm_ahead): for a bundled demo on a server, the data-only part of the criteria's intervals
with the configured resamples too."""

from __future__ import annotations

import pytest

from dashboard import computing, refinement
from dashboard.evaluations import Evaluations, shared
from metrics_core.config import Filters
from metrics_core.evaluation import intervals, tables
from metrics_core.evaluation.evaluator import Evaluator
from tests.test_app_turns import _warm_view


def _data_made(ev, cfg) -> list[bool]:
    """Per criterion: whether its run's data-only intervals are in its evaluator's memo."""
    made = []
    for name in ev.ds.criteria:
        one = cfg.replace(filters=Filters(criteria=(name,)))
        made.append(ev.for_filters(one.filters).computed(intervals.data_intervals_key(one)))
    return made


def test_a_demos_per_criterion_data_intervals_are_computed_ahead_once(monkeypatch):
    """For a bundled demo on a server, the warm-ups also compute every criterion's data-only
    intervals with the configured resamples, once: Per criterion's refinement then computes
    only the settings' part, and its table equals a fresh evaluator's."""
    view, ev, cfg, loaded = _warm_view("demo", seed=6)
    assert shared(view.source)
    memo = Evaluations(3)
    started = refinement.warm_ahead(view, cfg, memo, every_session=True)
    assert [t.name for t in started] == ["dashboard-group-intervals", "dashboard-finder",
                                         "dashboard-group-data"]
    for thread in started:
        thread.join(120)
    assert _data_made(ev, cfg) == [True, True, True]
    assert not tables.group_intervals_ready(ev, cfg)  # (only their data-only part)
    assert refinement.warm_ahead(view, cfg, memo, every_session=True) == []  # (once)

    def again(*args, **kwargs):
        pytest.fail("a criterion's data-only intervals computed again")

    monkeypatch.setattr(intervals, "bootstrap_columns", again)
    got = tables.group_intervals(ev, cfg, "auroc")
    monkeypatch.undo()
    want = tables.group_intervals(Evaluator(loaded.dataset), cfg, "auroc")
    assert got.equals(want)
    assert set(got["ci_method"]) == {f"bootstrap (query, {cfg.bootstrap} resamples, seed 1)"}


def test_an_uploads_per_criterion_data_intervals_are_not_computed_ahead():
    """An upload is never shared: its configured per-criterion resamples are computed on the
    page only, with progress (no work its user does not see)."""
    view, ev, cfg, _ = _warm_view("upload", seed=7)
    assert not shared(view.source)
    started = refinement.warm_ahead(view, cfg, Evaluations(3), every_session=True)
    assert [t.name for t in started] == ["dashboard-group-intervals", "dashboard-finder"]
    for thread in started:
        thread.join(120)
    assert _data_made(ev, cfg) == [False, False, False]


def test_without_a_server_a_demos_data_intervals_are_not_computed_ahead():
    """A plain call (or AppTest) has no other session to compute them for."""
    assert not computing.serving()
    view, ev, cfg, _ = _warm_view("demo", seed=10)
    started = refinement.warm_ahead(view, cfg, Evaluations(3))
    assert [t.name for t in started] == ["dashboard-group-intervals", "dashboard-finder"]
    for thread in started:
        thread.join(120)
    assert _data_made(ev, cfg) == [False, False, False]
