"""The run's one sort of p (``Evaluator.p_order``), which the classification, calibration and
decision-curve kernels and the per-group tables gather along instead of sorting again: each
kernel given an order returns exactly (``==``, not approximately) what it returns when it
sorts for itself, on data with many ties; a wrong order is refused; the tables' per-group
orders are the groups' own stable sorts.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metrics_core.config import EvalConfig
from metrics_core.data.dataset import Dataset
from metrics_core.evaluation import kernels, tables
from metrics_core.evaluation.evaluator import Evaluator
from metrics_core.metrics import calibration, classification, decision
from tests.conftest import random_frames


def _data(seed: int, n: int, levels: int):
    """Labels and probabilities on ``levels`` distinct values (ties), both classes present."""
    rng = np.random.default_rng(seed)
    p = rng.integers(0, levels + 1, n) / levels
    y = (rng.random(n) < p).astype(np.int8)
    y[:2] = [0, 1]
    return y, p


def _same_prepared(a: classification.PreparedScores, b: classification.PreparedScores):
    for name in ("pos_sorted", "neg_sorted", "thresholds", "tps", "fps"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    assert (a.n, a.n_pos, a.n_neg) == (b.n, b.n_pos, b.n_neg)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(2, 400), levels=st.sampled_from([1, 3, 20,
                                                                                   10_000]))
def test_kernels_given_an_order_equal_the_kernels_that_sort(seed, n, levels):
    y, p = _data(seed, n, levels)
    # Any ascending order will do (ties in any order): a stable one and a reversed-tie one.
    for order in (np.argsort(p, kind="stable"), np.lexsort((-np.arange(n), p))):
        with_order = classification.prepare(y, p, order=order)
        _same_prepared(with_order, classification.prepare(y, p))
        assert (classification.roc_auc(with_order).value
                == classification.roc_auc(y, p).value or not with_order.n_neg)
        a = calibration.logistic_calibration(y, p, order=order)
        b = calibration.logistic_calibration(y, p)
        assert repr(a) == repr(b)
        for got, want in zip(calibration._distinct_rows(y, p, order),
                             calibration._distinct_rows(y, p), strict=True):
            np.testing.assert_array_equal(got, want)
        pd_a = decision.decision_curve(y, p, order=order)
        pd_b = decision.decision_curve(y, p)
        assert pd_a.equals(pd_b)


def test_smoothed_calibration_and_bands_given_an_order_are_the_same():
    y, p = _data(3, 3_000, 500)
    order = np.argsort(p, kind="stable")
    a = calibration.smoothed_calibration(y, p, order=order)
    assert len(a) > 50
    assert a.equals(calibration.smoothed_calibration(y, p))
    kwargs = {"n_resamples": 200, "seed": 1}
    for got, want in zip(decision.decision_curve_bands(y, p, order=order, **kwargs),
                         decision.decision_curve_bands(y, p, **kwargs), strict=True):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("bad", [
    "descending", "repeated row", "out of range", "float", "short",
])
def test_an_order_that_does_not_sort_p_is_refused(bad):
    y, p = _data(0, 50, 7)
    order = np.argsort(p, kind="stable")
    order = {"descending": order[::-1].copy(),
             "repeated row": np.where(np.arange(50) == 49, order[0], order),
             "out of range": np.where(np.arange(50) == 0, 50, order),
             "float": order.astype(np.float64),
             "short": order[:-1]}[bad]
    for call in (lambda: classification.prepare(y, p, order=order),
                 lambda: calibration.logistic_calibration(y, p, order=order),
                 lambda: calibration.smoothed_calibration(y, p, order=order),
                 lambda: decision.decision_curve(y, p, order=order)):
        with pytest.raises(ValueError, match="order must"):
            call()


@pytest.mark.parametrize("label", ["criterion", "fold", "pooled"])
def test_group_orders_are_each_groups_own_stable_sort(label):
    queries, candidates = random_frames(60, ("A", "B", "C", "D"), seed=5, tie_share=0.6)
    ev = Evaluator(Dataset.from_frames(queries, candidates))
    codes, names = tables.group_codes(ev, label)
    groups = kernels.members_by_p(ev, label, codes, len(names))
    assert len(groups) == len(names)
    for i, (members, order) in enumerate(groups):
        np.testing.assert_array_equal(members, np.flatnonzero(codes == i))
        np.testing.assert_array_equal(order, np.argsort(ev.ds.p[members], kind="stable"))


def test_the_evaluators_order_is_read_only_and_computed_once():
    queries, candidates = random_frames(30, seed=2)
    ev = Evaluator(Dataset.from_frames(queries, candidates))
    order = ev.p_order()
    assert order is ev.p_order()
    assert not order.flags.writeable
    np.testing.assert_array_equal(order, np.argsort(ev.ds.p, kind="stable"))
    ev.evaluate(EvalConfig(bootstrap=0)).to_json()  # every table on the one order
    assert order is ev.p_order()
