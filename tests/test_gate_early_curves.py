"""The Gate page draws its charts before a move's evaluation is computed only when their curves,
areas and bands are those of the evaluation before the move (dashboard.data.curves_unchanged):
the same data, filters and settings but τ_neg / τ_pos, that evaluation made with all its
resamples. Otherwise the page computes the move's evaluation first, as before."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from dashboard import data, state
from metrics_core.config import EvalConfig, Filters


@pytest.fixture(scope="module")
def source():
    return data.demo_source()


def view(source, config: EvalConfig, *, filters: Filters | None = None, ci: bool = True,
         made: EvalConfig | None = None) -> data.View:
    """A view of the demo; ``made``: the configuration its evaluation was made with (set as
    made, not computed)."""
    v = data.View(source=source, filters=filters or Filters(), config=config, show_bootstrap=ci)
    if made is not None:
        vars(v)["evaluation"] = SimpleNamespace(config=made)
    return v


def full(config: EvalConfig, filters: Filters | None = None) -> EvalConfig:
    return config.replace(filters=filters or Filters())


BASE = state.build_config({})
MOVED = BASE.replace(tau_neg=0.13)


def test_a_gate_move_draws_the_curves_of_the_evaluation_before_it(source):
    before = view(source, BASE, made=full(BASE))
    assert data.curves_unchanged(before, view(source, MOVED)) is vars(before)["evaluation"]
    # τ_pos too, and both
    assert data.curves_unchanged(before, view(source, BASE.replace(tau_pos=0.7))) is not None
    assert data.curves_unchanged(before, view(source, MOVED.replace(tau_pos=0.7))) is not None
    # intervals off: the evaluation before had no resamples, nor will the move's
    off = view(source, BASE, ci=False, made=full(BASE).replace(bootstrap=0))
    assert data.curves_unchanged(off, view(source, MOVED, ci=False)) is not None


def test_the_move_computes_its_evaluation_first_otherwise(source):
    before = view(source, BASE, made=full(BASE))
    assert data.curves_unchanged(before, before) is None  # the app's run: its own view
    assert data.curves_unchanged(view(source, BASE), view(source, MOVED)) is None  # not made
    # another setting than the gate changed
    assert data.curves_unchanged(before, view(source, MOVED.replace(threshold=0.4))) is None
    assert data.curves_unchanged(before, view(source, MOVED.replace(bootstrap=2_000))) is None
    assert data.curves_unchanged(before, view(source, MOVED, ci=False)) is None
    # other filters (another evaluator)
    criterion = source.dataset.criteria[0]
    assert data.curves_unchanged(
        before, view(source, MOVED, filters=Filters(criteria=(criterion,)))) is None
    # the evaluation before was made with fewer resamples (live) or none (paused budget)
    for made in (full(BASE).replace(bootstrap=2_000), full(BASE).replace(bootstrap=0)):
        assert data.curves_unchanged(view(source, BASE, made=made),
                                     view(source, MOVED)) is None


def test_same_curves_compares_all_but_the_gate():
    shown = SimpleNamespace(config=full(BASE))
    assert data.same_curves(None, SimpleNamespace(config=full(MOVED)))
    assert data.same_curves(shown, SimpleNamespace(config=full(MOVED)))
    assert not data.same_curves(shown, SimpleNamespace(config=full(MOVED).replace(bootstrap=0)))
    assert not data.same_curves(shown, SimpleNamespace(
        config=full(MOVED).replace(threshold=0.4)))


@pytest.mark.parametrize(("tau_neg", "tau_pos"), [(0.1, 0.6), (0.13, 0.6), (0.0, 1.0),
                                                  (0.35, 0.35)])
def test_the_gate_counted_ahead_is_the_evaluations(source, tau_neg, tau_pos):
    config = BASE.replace(tau_neg=tau_neg, tau_pos=tau_pos, bootstrap=0)
    v = view(source, config, ci=False)
    ahead, g = data.gate_ahead(v), v.evaluation.gate
    assert (ahead.count_neg, ahead.count_uncertain, ahead.count_pos, ahead.n) == (
        g.count_neg, g.count_uncertain, g.count_pos, g.n)
    for name in ("neg_rate", "uncertain_rate", "pos_rate", "screening_sensitivity",
                 "screening_fn_per_1000", "alert_precision"):
        assert getattr(ahead, name) == pytest.approx(getattr(g, name), nan_ok=True), name
        assert ahead.ci(name) == g.ci(name), name
    # counted from the data's own p: NEG are the queries with p < τ_neg
    p = source.dataset.p
    assert ahead.count_neg == int((p < tau_neg).sum())
    assert ahead.count_pos == int((p >= tau_pos).sum())
