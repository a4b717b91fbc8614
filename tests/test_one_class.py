"""One test over the whole registry: on data with one class only, every record and every
per-criterion cell is either defined with a value in its range, or undefined with the reason;
never a number that needs the absent class (contract §4, §9; scikit-learn's test_common.py).

The class a metric needs is the registry's ``needs``. scikit-learn agrees where it has the
metric: ``roc_curve`` on one class warns that FPR (or TPR) is undefined, so TPR at an FPR,
and the threshold read off that ROC point, are undefined too.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from sklearn.exceptions import UndefinedMetricWarning
from sklearn.metrics import roc_curve

from metrics_core import registry
from metrics_core.config import EvalConfig
from metrics_core.data.dataset import Dataset
from metrics_core.report import Evaluator
from tests.conftest import random_frames

ABSENT = {1: "negative", 0: "positive"}  # the label every query has -> the class missing


def _one_class(label: int, *, criteria=("C1", "C2", "C3"), only=None):
    """Random data whose queries (those of criterion ``only``, if given) all have ``label``."""
    q, c = random_frames(n_posts=30, criteria=criteria, seed=5)
    q = q.drop(columns=["n_gold"], errors="ignore")
    rows = q.index if only is None else q.index[q["criterion"] == only]
    q.loc[rows, "has_evidence"] = label
    if label == 0:
        keys = set(map(tuple, q.loc[rows, ["post_id", "criterion"]].to_numpy()))
        gold = [k in keys for k in zip(c["post_id"], c["criterion"], strict=True)]
        c.loc[gold, "is_gold"] = 0
    else:  # every query with evidence has a gold sentence
        first = c.groupby(["post_id", "criterion"]).head(1).index
        in_rows = set(map(tuple, q.loc[rows, ["post_id", "criterion"]].to_numpy()))
        pick = [i for i in first if (c.at[i, "post_id"], c.at[i, "criterion"]) in in_rows]
        c.loc[pick, "is_gold"] = 1
    return Dataset.from_frames(q, c)


def _needs(name: str, absent: str) -> bool:
    return registry.spec(name).needs in (absent, "both")


@pytest.fixture(scope="module", params=[1, 0], ids=["all positive", "all negative"])
def one_class(request):
    label = request.param
    ds = _one_class(label)
    assert set(np.unique(ds.y).tolist()) == {label}
    return ABSENT[label], Evaluator(ds).evaluate(EvalConfig(bootstrap=60))


def test_every_registered_metric_is_recorded(one_class):
    _, evaluation = one_class
    recorded = {registry.spec(r.name).name for r in evaluation.records}
    assert recorded == {s.name for s in registry.SPECS}


def test_no_record_is_a_number_that_needs_the_absent_class(one_class):
    absent, evaluation = one_class
    for r in evaluation.records:
        if _needs(r.name, absent):
            assert r.defined is False, r.name
            assert r.ci95 is None, r.name
            assert r.reason == registry.ONE_CLASS_REASONS["both" if registry.spec(
                r.name).needs == "both" else absent], r.name
            if r.name in registry.ONE_CLASS_CONVENTIONS:  # seed 000: kept, flagged
                assert r.value is not None, r.name
            else:
                assert r.value is None, r.name
        elif r.defined:
            assert r.value is not None and math.isfinite(r.value), r.name
            assert registry.in_range(r.name, r.value), (r.name, r.value)
            assert r.reason is None, r.name
        else:
            assert r.reason, r.name
            assert r.to_dict()["reason"] == r.reason


def test_tpr_at_fpr_is_undefined_as_auroc_is(one_class):
    """The issue's case: with no negatives TPR at FPR ≤ 5 % was 0.0, defined, CI [0, 0.39]."""
    _, evaluation = one_class
    assert evaluation.record("auroc").defined is False
    for t in evaluation.tpr_at_fpr:
        assert t.defined is False
    doc = evaluation.to_dict()
    for row in doc["tpr_at_fpr"]:
        assert row["defined"] is False and row["tpr"] is None and row["threshold"] is None
    for name in ("tpr@fpr=0.05", "threshold@fpr=0.05"):
        rec = next(m for m in doc["metrics"] if m["name"] == name)
        assert rec["defined"] is False and rec["value"] is None and rec["ci95"] is None
        assert rec["reason"] == registry.ONE_CLASS_REASONS["both"]


def test_scikit_learn_also_finds_the_roc_undefined(one_class):
    absent, _ = one_class
    y = np.full(50, 1 if absent == "negative" else 0)
    p = np.linspace(0.0, 1.0, 50)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fpr, tpr, _ = roc_curve(y, p)
    assert any(issubclass(w.category, UndefinedMetricWarning) for w in caught)
    assert np.isnan(fpr if absent == "negative" else tpr).all()


@pytest.mark.parametrize("table_name", ["per_criterion", "per_fold"])
def test_group_cells_that_need_the_absent_class_are_empty(one_class, table_name):
    absent, evaluation = one_class
    table = getattr(evaluation, table_name)
    for column in table.columns:
        try:
            needed = _needs(column, absent)
        except KeyError:  # n, n_positive, interval columns
            continue
        values = table[column].to_numpy(dtype=float)
        if needed:
            assert np.isnan(values).all(), column
        else:  # (the per-fold ``std`` row is a spread, not a value of the metric)
            values = table.loc[table.index != "std", column].to_numpy(dtype=float)
            finite = values[np.isfinite(values)]
            assert all(registry.in_range(column, v) for v in finite), column


@pytest.mark.parametrize("label", [1, 0], ids=["C3 all positive", "C3 all negative"])
def test_a_one_class_criterion_has_empty_cells_and_undefined_records(label):
    """Per criterion (the table and the records of a run filtered to it): the one-class
    criterion's cells are empty where the metric needs the absent class; the others keep
    their values."""
    from metrics_core.evaluation.tables import group_intervals

    absent = ABSENT[label]
    ds = _one_class(label, only="C3")
    cfg = EvalConfig(bootstrap=0)
    ev = Evaluator(ds)
    table = ev.evaluate(cfg).per_criterion
    needing = [c for c in table.columns if _is_metric(c) and _needs(c, absent)]
    assert {"auroc", "tpr@fpr=0.05", "threshold@fpr=0.05", "mcc"} <= set(needing)
    assert table.loc["C3", needing].isna().all()
    assert table.loc[["C1", "C2", "micro"], ["auroc", "tpr@fpr=0.05"]].notna().all().all()
    rows = group_intervals(ev, cfg, "tpr@fpr=0.05").set_index("group")
    assert not rows.loc["C3", "defined"] and math.isnan(rows.loc["C3", "value"])
    assert rows.loc["C1", "defined"]


def _is_metric(column: str) -> bool:
    try:
        registry.spec(column)
    except KeyError:
        return False
    return True
