"""The setting-dependent intervals from kept weighted sums (intervals on every slider move).

A setting change updates the previous setting's sums by the rows that changed; the intervals
must be exactly those of summing every row on a fresh evaluator, for any sequence of moves.
"""

from __future__ import annotations

import numpy as np
import pytest

from metrics_core.config import EvalConfig
from metrics_core.data.dataset import Dataset
from metrics_core.evaluation import operating_intervals as intervals
from metrics_core.evaluation.evaluator import Evaluator
from metrics_core.metrics.uncertainty import Bootstrap, DrawnCounts, bootstrap_sums
from tests.conftest import random_frames


@pytest.fixture(scope="module")
def dataset():
    q, c = random_frames(n_posts=90, seed=11, max_candidates=12)
    return Dataset.from_frames(q, c)


def _cis(ev, cfg):
    got = intervals.operating_intervals(ev, cfg, ev.intermediate(cfg))
    assert set(got) == set(intervals.OPERATING_NAMES)
    return {name: (ci.lo, ci.hi, ci.n_valid, ci.n_resamples, ci.unit) for name, ci in got.items()}


def _same(a, b):
    assert a.keys() == b.keys()
    for name in a:
        assert np.array_equal(np.array(a[name][:2]), np.array(b[name][:2]), equal_nan=True), name
        assert a[name][2:] == b[name][2:], name


MOVES = [{"tau_neg": 0.2, "tau_pos": 0.6}, {"tau_neg": 0.22, "tau_pos": 0.6},
         {"tau_neg": 0.22, "tau_pos": 0.64}, {"tau_neg": 0.22, "tau_pos": 0.64, "threshold": 0.45},
         {"tau_neg": 0.22, "tau_pos": 0.64, "gamma": 0.5},  # K shrinks: the K histogram narrows
         {"tau_neg": 0.22, "tau_pos": 0.64, "gamma": 0.99},  # and widens again
         {"tau_neg": 0.05, "tau_pos": 0.95},  # most states change: every row summed again
         {"tau_neg": 0.06, "tau_pos": 0.95}]


# 2048: the real-valued sums by (recall, precision) pair; 0: by block; 20: by pair for the
# move to γ 0.5 only (18 pairs; the others have 21-22), so the way of summing switches twice.
@pytest.mark.parametrize("max_pairs", [2048, 20, 0])
@pytest.mark.parametrize("unit", ["query", "post"])
def test_moves_on_one_evaluator_equal_fresh_evaluators_exactly(dataset, unit, max_pairs,
                                                                 monkeypatch):
    monkeypatch.setattr(intervals, "MAX_VALUE_PAIRS", max_pairs)
    ev = Evaluator(dataset)
    for move in MOVES:
        cfg = EvalConfig(bootstrap=150, seed=4, bootstrap_unit=unit, **move)
        _same(_cis(ev, cfg), _cis(Evaluator(dataset), cfg))


@pytest.mark.parametrize("max_pairs", [2048, 0])
def test_moves_make_no_transpose_of_the_count_matrix(dataset, monkeypatch, max_pairs):
    """A setting change reads the changed units' counts from the rows of the kept count
    matrix (DrawnCounts.unit_weights), never its whole transpose (by_unit: on the demo half a
    second of CPU and 148 MB kept, made by the first move while every reader waited), with
    the same intervals as a fresh evaluator's."""
    monkeypatch.setattr(intervals, "MAX_VALUE_PAIRS", max_pairs)

    def transposed(self):
        pytest.fail("the count matrix transposed")

    monkeypatch.setattr(DrawnCounts, "by_unit", transposed)
    ev = Evaluator(dataset)
    for move in MOVES:
        for unit in ("query", "post"):
            cfg = EvalConfig(bootstrap=120, seed=6, bootstrap_unit=unit, **move)
            _same(_cis(ev, cfg), _cis(Evaluator(dataset), cfg))


def test_unit_weights_are_the_transposes_rows():
    """unit_weights: the units' counts as float64, column-major (each unit's resamples
    contiguous, the layout the block products are made with), equal to by_unit's rows."""
    drawn = DrawnCounts(Bootstrap(3000, n_resamples=2500, seed=3))
    for units in (np.array([5]), np.array([2999, 0, 17, 17, 1024]), np.arange(0, 3000, 7)):
        got = drawn.unit_weights(units)
        want = np.take(drawn.by_unit(), units, axis=0).astype(np.float64).T
        assert got.shape == (2500, units.size) and got.dtype == np.float64
        assert got.flags.f_contiguous
        np.testing.assert_array_equal(got, want)
        np.testing.assert_array_equal(got, drawn.array()[:, units])


@pytest.mark.parametrize("max_pairs", [2048, 0])
def test_threshold_move_updates_only_the_changed_rows(dataset, monkeypatch, max_pairs):
    monkeypatch.setattr(intervals, "MAX_VALUE_PAIRS", max_pairs)
    ev = Evaluator(dataset)
    base = EvalConfig(bootstrap=100, seed=2, tau_neg=0.2, tau_pos=0.6)
    _cis(ev, base)
    calls = []
    real = intervals.bootstrap_sums
    monkeypatch.setattr(intervals, "bootstrap_sums",
                        lambda matrices, *a, **k: calls.append(len(matrices))
                        or real(matrices, *a, **k))
    moved = EvalConfig(bootstrap=100, seed=2, tau_neg=0.21, tau_pos=0.6)
    assert np.any(ev.intermediate(moved).states != ev.intermediate(base).states)
    updated = _cis(ev, moved)
    assert calls == [], "a small threshold move must not sum every row again"
    _same(updated, _cis(Evaluator(dataset), moved))
    calls.clear()
    kept = ev._cache[("operating_sums", moved.bootstrap_config)]
    assert kept.rows_summed == 0  # nothing real-valued changed
    assert kept.mode == ("pairs" if max_pairs else "blocks")
    # A threshold move that changes some queries' K: only their rows (by pair) or their
    # blocks are summed again.
    for tau_pos in np.arange(0.61, 0.9, 0.01):
        step = EvalConfig(bootstrap=100, seed=2, tau_neg=0.21, tau_pos=round(tau_pos, 2))
        before = intervals._float_columns(ev.intermediate(moved))
        changed = np.flatnonzero((intervals._float_columns(ev.intermediate(step))
                                  != before).any(axis=1))
        updated = _cis(ev, step)
        assert calls == []
        _same(updated, _cis(Evaluator(dataset), step))
        calls.clear()  # (the fresh evaluator's sums)
        moved = step
        if changed.size:
            if max_pairs:  # the rows whose (recall, precision) pair changed
                assert kept.rows_summed == changed.size
            else:
                assert kept.blocks_summed == np.unique(kept.block_of_row[changed]).size <= 3
            break
    else:
        pytest.fail("no threshold move changed the evidence columns")
    moves = EvalConfig(bootstrap=100, seed=2, tau_neg=0.21, tau_pos=0.6, gamma=0.6)
    assert np.any(ev.intermediate(moves).k != ev.intermediate(moved).k)
    _same(_cis(ev, moves), _cis(Evaluator(dataset), moves))


def test_intervals_equal_the_repeated_rows(dataset):
    """Evidence recall and mean K on each resample's repeated rows (numpy), and the sums of
    bootstrap_sums equal to the literal product of the drawn counts."""
    cfg = EvalConfig(bootstrap=60, seed=9, tau_neg=0.25, tau_pos=0.7)
    ev = Evaluator(dataset)
    inter = ev.intermediate(cfg)
    got = intervals.operating_intervals(ev, cfg, inter)
    counts = Bootstrap(dataset.n_queries, n_resamples=60, seed=9).counts()
    rec, k, emask = np.nan_to_num(inter.rec), inter.k, inter.emask
    recall, mean_k = [], []
    for row in counts:
        idx = np.repeat(np.arange(dataset.n_queries), row)
        sel = idx[emask[idx]]
        recall.append(rec[sel].mean() if sel.size else np.nan)
        mean_k.append(k[idx].mean())
    for name, draws in (("evidence_recall", recall), ("mean_k", mean_k)):
        valid = np.array(draws)[~np.isnan(draws)]
        assert (got[name].lo, got[name].hi) == pytest.approx(
            tuple(np.percentile(valid, [2.5, 97.5])), abs=1e-12), name
    matrix = np.stack([k.astype(float), emask.astype(float)], axis=1)
    (sums,) = bootstrap_sums([matrix], dataset.n_queries, n_resamples=60, seed=9)
    assert np.array_equal(sums, counts.astype(float) @ matrix)


@pytest.mark.parametrize("seed", range(3))
def test_joint_category_sums_equal_one_pass_per_category(seed):
    """The first setting's two category sums (the integer columns' categories and the
    (recall, precision) pairs) from one pass over the weights equal a pass for each, and
    the weights per category are the counts of the rows summed literally."""
    rng = np.random.default_rng(seed)
    n, n_codes, n_pairs, b = 500, (7, 40, 1)[seed], (5, 1, 90)[seed], 37
    codes = rng.integers(0, n_codes, n)
    pairs = rng.integers(0, n_pairs, n)
    counts = rng.integers(0, 4, size=(b, n)).astype(np.uint8)
    batches = [counts[i:i + 10] for i in range(0, b, 10)]
    seen = []
    by_code, by_pair = intervals._joint_category_sums(
        iter(batches), codes, n_codes + 2, pairs, n_pairs, b,
        lambda done, total: seen.append((done, total)))
    assert np.array_equal(by_code, intervals._category_sums(iter(batches), codes,
                                                            n_codes + 2, b))
    assert np.array_equal(by_pair, intervals._category_sums(iter(batches), pairs, n_pairs, b))
    literal = np.stack([[counts[r, codes == c].sum() for c in range(n_codes + 2)]
                        for r in range(b)])
    assert np.array_equal(by_code, literal)
    assert seen == [(10, b), (20, b), (30, b), (37, b)]


STEPS = [{"tau_neg": round(t, 2), "tau_pos": 0.6} for t in np.arange(0.1, 0.4, 0.02)] + [
    {"tau_neg": 0.38, "tau_pos": round(t, 2)} for t in np.arange(0.6, 0.9, 0.03)]


# 0: every move's changed units gathered from the count matrix's rows; 6 and 40: from the
# unit-major copy of the units near them in the order of p, gathered again as the moves leave it
@pytest.mark.parametrize("near", [0, 6, 40])
@pytest.mark.parametrize("unit", ["query", "post"])
def test_moves_read_near_units_from_a_bounded_copy_exactly(dataset, unit, near, monkeypatch):
    """A gate move's integer sums from the kept copy of the counts of the units near the
    changed ones (or from the count matrix's rows when they lie far apart): exactly a fresh
    evaluator's intervals, the copy bounded by three times NEAR_UNITS units."""
    monkeypatch.setattr(intervals, "NEAR_UNITS", near)
    ev = Evaluator(dataset)
    gathered = set()
    for move in MOVES + STEPS:
        cfg = EvalConfig(bootstrap=130, seed=5, bootstrap_unit=unit, **move)
        _same(_cis(ev, cfg), _cis(Evaluator(dataset), cfg))
        copy = ev._cache[("operating_sums", cfg.bootstrap_config)].near
        if copy.rows is not None:
            assert copy.units.size <= 3 * near + 1
            assert copy.rows.shape == (copy.units.size, 130)
            np.testing.assert_array_equal(copy.rows, copy.counts.array()[:, copy.units].T)
            gathered.add(copy.units.tobytes())
    if near:  # the copy was made, and made again as the moves went on
        assert len(gathered) >= 2
    else:
        assert not gathered


def test_verdicts_after_moves_equal_a_fresh_evaluations(dataset, monkeypatch):
    """The targets' verdicts (and the values and intervals they are judged on) of an
    evaluation made after a run of gate moves on one evaluator are those of a fresh
    evaluator's evaluation at that gate (the Gate page's tiles and table)."""
    import pandas as pd

    from metrics_core.report.wording import verdict_frame

    monkeypatch.setattr(intervals, "NEAR_UNITS", 6)
    ev = Evaluator(dataset)
    targets = ("evidence_recall>=0.5", "screening_sensitivity>=0.6", "alert_precision>=0.5",
               "auroc>=0.5")
    judged = []
    for move in STEPS[::3]:
        cfg = EvalConfig(bootstrap=140, seed=8, targets=targets, **move)
        moved = verdict_frame(ev.evaluate(cfg))
        fresh = verdict_frame(Evaluator(dataset).evaluate(cfg))
        pd.testing.assert_frame_equal(moved, fresh)
        assert list(moved["metric"]) == [t.split(">=")[0] for t in targets]
        judged.extend(moved["verdict"])
    assert {"point estimate only", "not computed"}.isdisjoint(judged)
