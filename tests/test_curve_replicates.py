"""The fast bootstrap engine against the straightforward computation, exactly.

Every interval of a run comes from one count matrix drawn on a helper thread
(:class:`DrawnCounts`), the score-ordered statistics from integer cumulative sums in the order
of p (:mod:`metrics_core.metrics.curve_replicates`) and the means and bin sums from one product per
batch. Each is held here to the plain computation on the same resamples: the weighted kernels
per resample (``auroc_auprc_weighted``, ``roc_auc_weighted``, ``ece_weighted``,
``mce_weighted``, ``weighted_means``) and the per-resample curve loops of
:mod:`metrics_core.metrics._reference`; equality is bit for bit (``array_equal``), ties, one-class
resamples, empty groups and the cluster bootstrap included.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metrics_core.config import EvalConfig
from metrics_core.data.dataset import Dataset
from metrics_core.evaluation import intervals
from metrics_core.evaluation.evaluator import Evaluator
from metrics_core.metrics import _reference, bands, calibration, classification, decision
from metrics_core.metrics.curve_replicates import ScoreLayout, curve_replicates
from metrics_core.metrics.uncertainty import Bootstrap, DrawnCounts, bootstrap_cis, weighted_means
from tests.conftest import random_frames


@st.composite
def samples(draw):
    n = draw(st.integers(1, 60))
    seed = draw(st.integers(0, 10 ** 6))
    rng = np.random.default_rng(seed)
    kind = draw(st.sampled_from(["mixed", "one class", "rare"]))
    if kind == "one class":
        y = np.full(n, draw(st.integers(0, 1)))
    else:
        y = (rng.random(n) < (0.08 if kind == "rare" else 0.4)).astype(int)
    decimals = draw(st.sampled_from([1, 2, 6]))  # 1: many ties
    p = np.round(np.clip(rng.normal(0.35 + 0.3 * y, 0.25), 0, 1), decimals)
    n_units = draw(st.integers(1, n))
    unit_of_row = (None if draw(st.booleans()) else rng.integers(0, n_units, n))
    n_resamples = draw(st.integers(1, 40))
    return y, p, unit_of_row, (n if unit_of_row is None else n_units), n_resamples, seed


def _weights(counts, unit_of_row):
    w = counts.astype(np.float64)
    return w if unit_of_row is None else Bootstrap.expand(w, unit_of_row)


@settings(max_examples=150, deadline=None)
@given(samples())
def test_replicates_equal_the_weighted_kernels(sample):
    y, p, unit_of_row, n_units, n_resamples, seed = sample
    counts = Bootstrap(n_units, n_resamples=n_resamples, seed=seed).compact_counts()
    order = np.argsort(p, kind="stable")
    columns = order if unit_of_row is None else unit_of_row[order]
    groups_of_row = np.arange(y.size) % 3
    groups = [np.flatnonzero(groups_of_row[order] == g) for g in range(4)]  # 4: empty
    batch = int(np.random.default_rng(seed).integers(1, n_resamples + 1))
    got = curve_replicates(ScoreLayout(p[order], y[order], columns),
                           (counts[i:i + batch] for i in range(0, n_resamples, batch)),
                           groups=groups)
    w = _weights(counts, unit_of_row)
    auc, ap = classification.auroc_auprc_weighted(y, p, w)
    np.testing.assert_array_equal(got["auroc"], auc)
    np.testing.assert_array_equal(got["auprc"], ap)
    for g in range(4):
        m = groups_of_row == g
        want = (classification.roc_auc_weighted(y[m], p[m], w[:, m]) if m.any()
                else np.full(n_resamples, np.nan))
        np.testing.assert_array_equal(got["auroc_by_group"][:, g], want)


@settings(max_examples=100, deadline=None)
@given(samples(), st.sampled_from(["default", "custom"]))
def test_bands_equal_the_per_resample_curves(sample, grids):
    y, p, unit_of_row, n_units, n_resamples, seed = sample
    kwargs = {"n_resamples": n_resamples, "seed": seed, "unit_of_row": unit_of_row,
              "n_units": n_units}
    grid = None if grids == "default" else np.array([-0.1, 0.0, 0.03, 0.3, 1 / 3, 0.5, 1.0,
                                                     1.2])
    for fast, plain in ((bands.roc_band, _reference.naive_roc_band),
                        (bands.pr_band, _reference.naive_pr_band)):
        for got, want in zip(fast(y, p, grid=grid, **kwargs), plain(y, p, grid=grid, **kwargs),
                             strict=True):
            np.testing.assert_array_equal(got, want)
    thresholds = (decision.DECISION_THRESHOLDS if grids == "default"
                  else [0.0, 0.1, 0.35, 0.5, 0.99])  # (t = 1: odds infinite)
    for got, want in zip(decision.decision_curve_bands(y, p, thresholds=thresholds, **kwargs),
                         _reference.naive_decision_curve_bands(y, p, thresholds=thresholds,
                                                               **kwargs), strict=True):
        np.testing.assert_array_equal(got, want)


def test_roc_grid_exactly_on_fractions_of_the_negatives():
    """Grid FPRs equal to k / N (0.25 with 4 negatives, 1/3 with 3): the point at exactly
    that FPR counts (FPR <= g), as in the per-resample rule, whatever the float rounding."""
    y = np.array([1, 0, 1, 0, 0, 1, 0, 1, 0, 0, 1, 0])
    p = np.linspace(0.05, 0.95, y.size)
    grid = np.array([k / d for d in (3, 4, 5, 6, 7, 10) for k in range(d + 1)])
    for n_resamples, seed in ((50, 0), (200, 3)):
        kwargs = {"n_resamples": n_resamples, "seed": seed, "grid": grid}
        for fast, plain in ((bands.roc_band, _reference.naive_roc_band),
                            (bands.pr_band, _reference.naive_pr_band)):
            np.testing.assert_array_equal(fast(y, p, **kwargs)[1:], plain(y, p, **kwargs)[1:])


def test_layout_positions_and_hand_worked_auroc():
    """p = (.2, .4, .4, .9), y = (0, 1, 0, 1), every row drawn once: pairs (pos > neg) 3,
    tie 1 (one half): AUROC 3.5 / 4; AP: at .9 precision 1, at .4 precision 2/3 -> 5/6."""
    layout = ScoreLayout([0.2, 0.4, 0.4, 0.9], [0, 1, 0, 1])
    assert layout.starts.tolist() == [0, 1, 3]
    assert (layout.positive_lo.tolist(), layout.positive_hi.tolist()) == ([3, 1], [4, 3])
    got = curve_replicates(layout, [np.ones((1, 4), dtype=np.uint8)])
    assert got["auroc"].tolist() == [0.875]
    assert got["auprc"][0] == pytest.approx(5 / 6, abs=1e-15)


# ------------------------------------------------------------------------ the evaluator
@pytest.fixture(scope="module")
def dataset():
    q, c = random_frames(n_posts=70, seed=21, max_candidates=10)
    return Dataset.from_frames(q, c)


def _plain_data_intervals(ev, cfg):
    """The data-only intervals as computed before the engine: every statistic on every
    batch of weights through bootstrap_cis."""
    ds = ev.ds
    y, p = ds.y, ds.p
    rk, rmask = ev.ranking(cfg), ev.ranking_mask(cfg)
    columns = {name: (values, rmask) for name, values in rk.items()
               if not name.startswith("hit@")}
    columns["brier"] = ((p - y) ** 2, None)
    conf, outcome = ev.calibration_inputs(cfg)
    crit = ds.criterion_code
    members = [crit == c for c in range(len(ds.criteria))]
    prepared = classification.prepare(y, p)
    by_criterion = [classification.prepare(y[m], p[m]) for m in members]

    def discrimination(w):
        return np.stack(classification.auroc_auprc_weighted(prepared, weights=w), axis=1)

    discrimination.names = ("auroc", "auprc")
    statistics = {
        "means": weighted_means(columns),
        "discrimination": discrimination,
        "ece": lambda w: calibration.ece_weighted(outcome, conf, w, n_bins=cfg.n_bins,
                                                  strategy=cfg.binning),
        "mce": lambda w: calibration.mce_weighted(outcome, conf, w, n_bins=cfg.n_bins,
                                                  strategy=cfg.binning),
        "auroc_by_criterion": lambda w: np.stack(
            [classification.roc_auc_weighted(s, weights=w[:, m])
             for s, m in zip(by_criterion, members, strict=True)], axis=1),
    }
    post = cfg.bootstrap_unit == "post"
    return bootstrap_cis(statistics, int(ds.posts.size) if post else ds.n_queries,
                         unit_of_row=ds.post_code if post else None,
                         n_resamples=cfg.bootstrap, seed=cfg.seed, unit=cfg.bootstrap_unit)


def _same_ci(got, want, name, rel=0.0):
    assert got.unit == want.unit, name
    assert (got.lo, got.hi, got.n_valid, got.n_resamples) == pytest.approx(
        (want.lo, want.hi, want.n_valid, want.n_resamples), abs=0, rel=rel, nan_ok=True), name


#: The weighted means, ECE and MCE come from one matrix product per batch (the weights
#: read once), the plain statistics from one product per statistic: BLAS may round the
#: same sums differently by the last bit. The score-ordered statistics are exact.
_PRODUCT_NAMES = frozenset({"ece", "mce", "brier"})


@pytest.mark.parametrize("options", [
    {"bootstrap": 120, "seed": 3},
    {"bootstrap": 90, "seed": 5, "bootstrap_unit": "post"},
    {"bootstrap": 60, "seed": 1, "binning": "quantile", "n_bins": 7,
     "calibration_view": "top_label", "ranking_protocol": "all_queries"},
])
def test_data_intervals_equal_the_plain_statistics(dataset, options, monkeypatch):
    cfg = EvalConfig(**options)
    want = _plain_data_intervals(Evaluator(dataset), cfg)
    for kept in (True, False):  # the kept count matrix, or drawn batch by batch
        if not kept:
            monkeypatch.setattr(intervals, "KEEP_COUNTS_CELLS", 0)
        got = intervals.data_intervals(Evaluator(dataset), cfg)
        assert set(got) == set(want)
        for name, ci in want.items():
            if isinstance(ci, tuple):
                for g, w in zip(got[name], ci, strict=True):
                    _same_ci(g, w, name)
            else:
                linear = name in _PRODUCT_NAMES or "@" in name
                _same_ci(got[name], ci, name, rel=1e-12 if linear else 0.0)


@pytest.mark.parametrize("unit", ["query", "post"])
def test_evaluator_bands_equal_the_plain_bands(dataset, unit):
    cfg = EvalConfig(bootstrap=80, seed=2, bootstrap_unit=unit)
    ev = Evaluator(dataset)
    post = unit == "post"
    kwargs = {"n_resamples": 80, "seed": 2, "unit_of_row": dataset.post_code if post else None,
              "n_units": int(dataset.posts.size) if post else None}
    y, p = dataset.y, dataset.p
    _, lo, hi = _reference.naive_roc_band(y, p, **kwargs)
    band = ev.roc_band(cfg)
    np.testing.assert_array_equal(band["tpr_lo"], lo)
    np.testing.assert_array_equal(band["tpr_hi"], hi)
    _, lo, hi = _reference.naive_pr_band(y, p, **kwargs)
    band = ev.pr_band(cfg)
    np.testing.assert_array_equal(band["precision_lo"], lo)
    np.testing.assert_array_equal(band["precision_hi"], hi)
    lo, hi = _reference.naive_decision_curve_bands(y, p, **kwargs)
    curve = ev.decision_curve(cfg)
    np.testing.assert_array_equal(curve["net_benefit_ci_lo"], lo)
    np.testing.assert_array_equal(curve["net_benefit_ci_hi"], hi)


# ------------------------------------------------------------------------ the draw
def test_drawn_counts_equal_the_compact_counts_read_while_drawn():
    boot = Bootstrap(3_000, n_resamples=700, seed=8)
    drawn = DrawnCounts(boot)
    parts = list(drawn.batches(33))  # read while the helper thread draws
    want = boot.compact_counts()
    np.testing.assert_array_equal(np.concatenate(parts), want)
    np.testing.assert_array_equal(drawn[100:250], want[100:250])
    assert drawn.array().dtype == want.dtype == np.uint8
    with pytest.raises(TypeError, match="row slices"):
        drawn[3]


def test_drawn_counts_widen_to_uint16_keeping_the_rows_drawn():
    n = 300  # a unit drawn 300 times does not fit in a byte

    class Draws:
        n_resamples, n_units = 3, n

        def index_batches(self):
            yield np.arange(n, dtype=np.int32)[None, :]
            yield np.stack([np.zeros(n, dtype=np.int32), np.arange(n, dtype=np.int32)])

    drawn = DrawnCounts(Draws())
    want = np.ones((3, n), dtype=np.int64)
    want[1] = 0
    want[1, 0] = n
    np.testing.assert_array_equal(drawn.array(), want)
    assert drawn.dtype == np.uint16
    np.testing.assert_array_equal(drawn.by_unit(), want.T)


def test_a_failed_draw_is_raised_to_every_reader():
    class Draws:
        n_resamples, n_units = 4, 2

        def index_batches(self):
            yield np.array([[0, 1], [1, 0]], dtype=np.int32)
            raise MemoryError("no room")

    drawn = DrawnCounts(Draws())
    assert drawn.rows(0, 2).tolist() == [[1, 1], [1, 1]]
    with pytest.raises(RuntimeError, match="drawing the bootstrap resamples failed"):
        drawn.rows(0, 4)


def test_count_matrices_are_shared_by_size_resamples_and_seed(monkeypatch):
    """Two evaluators of different data with as many units share one draw (it depends on
    nothing else); another seed or size draws anew; a failed draw is drawn again."""
    from metrics_core.evaluation import intervals as iv

    monkeypatch.setattr(iv, "_SHARED_COUNTS", iv._SharedCounts(1 << 30))
    a, b = (Dataset.from_frames(*random_frames(n_posts=30, seed=s)) for s in (1, 2))
    assert a.n_queries == b.n_queries
    cfg = EvalConfig(bootstrap=50, seed=3)
    first = iv.kept_count_matrix(Evaluator(a), cfg)
    assert iv.kept_count_matrix(Evaluator(b), cfg) is first
    assert iv.kept_count_matrix(Evaluator(b), cfg.replace(seed=4)) is not first
    np.testing.assert_array_equal(first.array(), Bootstrap(a.n_queries, n_resamples=50,
                                                           seed=3).compact_counts())
    first._error = MemoryError("no room")  # (as a failed draw leaves it)
    again = iv.kept_count_matrix(Evaluator(a), cfg)
    assert again is not first and not again.failed
    small = iv._SharedCounts(60 * a.n_queries)  # room for one matrix
    kept = small.get(a.n_queries, 50, 3)
    small.get(a.n_queries, 50, 4)
    assert small.get(a.n_queries, 50, 3) is not kept  # the least recently used went
