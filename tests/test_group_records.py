"""The per-criterion records (every criterion evaluated on its own queries, the Per criterion
page's intervals): the same records, bit for bit, as a full run filtered to each criterion,
with less computed for them."""

from __future__ import annotations

import dataclasses

import pytest

from metrics_core import registry
from metrics_core.config import EvalConfig, Filters
from metrics_core.data.dataset import Dataset
from metrics_core.evaluation import intervals, tables
from metrics_core.evaluation.evaluator import Evaluator
from tests.conftest import random_frames


def _exact(records) -> dict[str, str]:
    """name -> every field of the record, written exactly (NaN equal to NaN)."""
    return {r.name: repr(dataclasses.asdict(r)) for r in records}


@pytest.fixture(scope="module")
def dataset():
    q, c = random_frames(n_posts=60, seed=21)
    return Dataset.from_frames(q, c)


SETTINGS = (EvalConfig(bootstrap=300, seed=4),
            EvalConfig(bootstrap=300, seed=4, tau_neg=0.3, tau_pos=0.55, gamma=0.8),
            EvalConfig(bootstrap=250, seed=1, bootstrap_unit="post"))


@pytest.mark.parametrize("cfg", SETTINGS)
def test_a_run_without_the_bands_has_a_full_runs_records(dataset, cfg):
    """``evaluate(bands=False)`` (what the per-criterion records are made of) gives every
    record of a full run, bit for bit, without computing the curves' bands; the bands are
    computed when asked for, equal to the full run's."""
    for name in ("C1", "C3"):
        one = cfg.replace(filters=Filters(criteria=(name,)))
        lean = Evaluator(dataset)
        got = lean.evaluate(one, bands=False)
        want = Evaluator(dataset).evaluate(one)
        assert _exact(got.records) == _exact(want.records)
        assert not lean.for_filters(one.filters).computed(
            ("curve_intervals", cfg.bootstrap_config))
        assert got.roc_band.equals(want.roc_band)
        assert got.pr_band.equals(want.pr_band)


def test_the_discrimination_intervals_are_the_curve_passs(dataset):
    """AUROC, AP and AUROC per criterion from the pass without bands: the full pass's values
    (every criterion a group of the whole data), and the full pass's own when it is made."""
    cfg = EvalConfig(bootstrap=400, seed=7)
    lean = intervals.discrimination_intervals(Evaluator(dataset), cfg)
    full = intervals.curve_intervals(Evaluator(dataset), cfg)
    assert set(lean) == {"auroc", "auprc", "auroc_by_criterion"}
    assert len(lean["auroc_by_criterion"]) == 3
    for name in lean:
        assert repr(lean[name]) == repr(full[name])
    ev = Evaluator(dataset)
    made = intervals.curve_intervals(ev, cfg)
    assert intervals.discrimination_intervals(ev, cfg)["auroc"] is made["auroc"]


def _applying(records, place: str) -> dict[str, str]:
    return {name: text for name, text in _exact(records).items()
            if place in registry.spec(name).applies}


@pytest.mark.parametrize("cfg", SETTINGS[:2])
def test_the_per_criterion_records_are_each_criterions_full_run(dataset, cfg):
    """Each criterion's records in the per-criterion table's intervals equal a full run on a
    fresh evaluator filtered to that criterion, at a first setting and at moved ones: every
    metric that applies to a criterion (not the multi-label ones, over posts across
    criteria, whose intervals are not computed for them)."""
    ev = Evaluator(dataset)
    for setting in (cfg, cfg.replace(tau_neg=0.2), cfg.replace(tau_pos=0.7)):
        got = tables._group_records(ev, setting, "criterion", None)
        assert list(got) == ["C1", "C2", "C3"]
        for name, (n_positive, records) in got.items():
            want = Evaluator(dataset).evaluate(
                setting.replace(filters=Filters(criteria=(name,))))
            assert n_positive == want.summary["n_positive"]
            assert _exact(records.values()) == _applying(want.records, "criterion")
            assert "micro_f1" not in records and "f1" in records
    with pytest.raises(ValueError, match="'micro_f1' has no value per criterion"):
        tables.group_intervals(ev, cfg, "micro_f1")


def test_the_per_fold_records_are_each_folds_full_run(dataset):
    """Per fold, the multi-label metrics apply: each fold's records (with their intervals
    over posts) equal a full run filtered to the fold."""
    cfg = EvalConfig(bootstrap=200, seed=3)
    got = tables._group_records(Evaluator(dataset), cfg, "fold", None)
    assert list(got) == ["0", "1", "2", "3", "4"]
    for name, (_, records) in got.items():
        want = Evaluator(dataset).evaluate(cfg.replace(filters=Filters(fold=name)))
        assert _exact(records.values()) == _applying(want.records, "fold")
        assert records["micro_f1"].ci95 is not None
