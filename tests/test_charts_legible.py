"""Legible charts: no overlapping labels, no swamped bars, clean count axes, coinciding
operating points both visible, a target line on the threshold grid, a folds chart, and
shares instead of flat boxes for mostly-0/1 metrics.

Every expected number here is worked by hand from the small inputs (or read from the
metrics_core result the chart is given) and asserted on the plotly figure objects.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from metrics_core.config import EvalConfig
from metrics_core.data.dataset import Dataset
from metrics_core.metrics.calibration import reliability_bins
from metrics_core.metrics.classification import pr_points, roc_points
from metrics_core.metrics.confusion import confusion_at
from metrics_core.report import Evaluator
from metrics_core.report.figures.breakdowns import distribution_figure, folds_figure
from metrics_core.report.figures.calibration import reliability_figure
from metrics_core.report.figures.curves import operating_point, pr_figure, roc_figure
from metrics_core.report.figures.gate import gamma_sweep_figure, gate_grid_heatmap, k_histogram
from metrics_core.report.figures.style import count_axis
from tests.conftest import random_frames

Y = np.array([1, 1, 1, 1, 0, 0, 0, 0])
P = np.array([0.9, 0.7, 0.4, 0.2, 0.6, 0.4, 0.3, 0.1])


@pytest.fixture(scope="module")
def evaluator():
    q, c = random_frames(n_posts=50, seed=11)
    return Evaluator(Dataset.from_frames(q, c))


# ------------------------------------------------------------------------ 1. γ sweep
def test_gamma_sweep_has_no_text_labels_and_one_legend_entry_per_gamma(evaluator):
    cfg = EvalConfig(gamma=0.9, bootstrap=0)
    sweep = evaluator.gamma_sweep(cfg, [0.7, 0.8, 0.9, 0.95])
    fig = gamma_sweep_figure(sweep)
    # No text drawn on the chart (it overlapped and was clipped: "=0.7").
    assert all("text" not in (t.mode or "") for t in fig.data)
    assert not fig.layout.annotations
    points = fig.data[1:]
    assert [t.name for t in points] == ["γ = 0.7", "γ = 0.8", "γ = 0.9 (current)", "γ = 0.95"]
    ordered = sweep.sort_values("gamma").reset_index(drop=True)
    for trace, (_, row) in zip(points, ordered.iterrows(), strict=True):
        assert trace.x[0] == row["workload_per_1000"]
        np.testing.assert_equal(trace.y[0], row["evidence_recall"])
        assert trace.customdata[0][0] == row["gamma"]
    # Distinct colours, and the current γ is the star.
    assert len({t.marker["color"] for t in points}) == 4
    assert [t.marker["symbol"] for t in points] == ["circle", "circle", "star", "circle"]


# ------------------------------------------------------------------ 2. K histogram
def test_k_histogram_gives_each_state_its_own_count_axis():
    # 13,600 NEG queries at K = 0 and a few UNCERTAIN / POS ones: on one shared axis the
    # small bars were 1/1000 of the height; each panel now scales to its own counts.
    k = np.r_[np.zeros(13_600, dtype=int), [1, 2, 2, 3], [3, 3, 4]]
    states = np.r_[np.zeros(13_600, dtype=int), [1, 1, 1, 1], [2, 2, 2]]
    fig = k_histogram(k, states)
    neg, unc, pos = fig.data
    np.testing.assert_array_equal(neg.y, [13_600, 0, 0, 0, 0])
    np.testing.assert_array_equal(unc.y, [0, 1, 2, 1, 0])
    np.testing.assert_array_equal(pos.y, [0, 0, 0, 2, 1])
    layout = fig.layout
    axes = [layout.yaxis, layout.yaxis2, layout.yaxis3]
    # Own ranges from 0. NEG: step = the first of 1, 2, 5, 10 x 1,000 >= 13,600 / 5 = 2,720,
    # i.e. 5,000; end = ceil(13,600 * 1.05 / 5,000) * 5,000 = 15,000. UNCERTAIN and POS
    # (max 2): step 1, end ceil(2.1) = 3.
    assert [list(a.range) for a in axes] == [[0, 15_000], [0, 3], [0, 3]]
    assert [a.dtick for a in axes] == [5_000, 1, 1]
    assert all(a.tickformat == ",d" for a in axes)
    # Panels do not overlap and stack top to bottom.
    domains = [list(a.domain) for a in axes]
    assert domains[0][0] > domains[1][1] and domains[1][0] > domains[2][1]
    # The shared K axis sits under the bottom panel, not across the middle one.
    assert layout.xaxis.anchor == "y3"
    assert [a.text for a in layout.annotations] == [
        "<b>NEG</b>: 13,600 queries", "<b>UNCERTAIN</b>: 4 queries", "<b>POS</b>: 3 queries"]


# --------------------------------------------------------------- 3. reliability counts
@pytest.mark.parametrize(("top", "step", "end"), [
    (0, 1, 1), (3, 1, 4), (7, 2, 8), (130, 50, 150), (13_620, 5_000, 15_000),
    (449, 100, 500), (1_000, 200, 1_200)])
def test_count_axis_starts_at_zero_with_round_integer_steps(top, step, end):
    axis = count_axis(top)
    assert axis["range"] == [0, end]
    assert axis["dtick"] == step and axis["tick0"] == 0
    assert axis["tickformat"] == ",d"  # 13,620 not 13.62k
    assert end >= top and end / step <= 6


def test_reliability_count_axis_is_integer_and_from_zero():
    rng = np.random.default_rng(3)
    p = np.r_[np.full(13_620, 0.02), rng.random(130)]
    y = (rng.random(p.size) < p).astype(int)
    table = reliability_bins(y, p, n_bins=10)
    fig = reliability_figure(table)
    counts = np.asarray(fig.data[0].y)
    assert counts.sum() == 13_750 and counts[0] >= 13_620  # every query in a bin
    axis = fig.layout.yaxis2
    assert axis.range[0] == 0 and axis.range[1] >= counts.max()
    assert axis.tickformat == ",d" and axis.tick0 == 0 and float(axis.dtick).is_integer()


# ------------------------------------------------------- 4. coinciding operating points
def test_coinciding_operating_points_both_stay_visible():
    # τ_pos = 0.65 and τ = 0.8 give the same confusion (TP 2: 0.9, 0.7; FP 0): same spot.
    points = [operating_point("τ_neg", confusion_at(Y, P, threshold=0.25)),
              operating_point("τ_pos", confusion_at(Y, P, threshold=0.65)),
              operating_point("τ", confusion_at(Y, P, threshold=0.7))]
    for fig, x, y in ((roc_figure(roc_points(Y, P), points=points), "x", "y"),
                      (pr_figure(pr_points(Y, P), 0.5, points=points), "x", "y")):
        marks = [t for t in fig.data if t.mode == "markers"]
        assert [t.name for t in marks] == [
            "τ_neg (p ≥ 0.25)", "τ_pos (p ≥ 0.65)", "τ (p ≥ 0.7), same point as τ_pos"]
        assert getattr(marks[1], x)[0] == getattr(marks[2], x)[0]
        assert getattr(marks[1], y)[0] == getattr(marks[2], y)[0]
        sizes = [t.marker["size"] for t in marks]
        assert sizes[0] > sizes[1] > sizes[2]  # the later one sits inside the earlier one
        assert len({t.marker["symbol"] for t in marks}) == 3
        assert len({t.marker["color"] for t in marks}) == 3


# --------------------------------------------------------------- 5. target on the grid
def _grid():
    # Two τ_neg x two τ_pos, one invalid cell (τ_neg 0.5 > τ_pos 0.2) left blank.
    return pd.DataFrame({"tau_neg": [0.1, 0.1, 0.5], "tau_pos": [0.2, 0.6, 0.6],
                         "screening_sensitivity": [0.999, 0.996, 0.95]})


def test_gate_grid_draws_a_contour_at_the_target_and_outlines_meeting_cells():
    fig = gate_grid_heatmap(_grid(), (0.1, 0.6), target=(">=", 0.995))
    contour = next(t for t in fig.data if t.type == "contour")
    assert contour.contours.start == contour.contours.end == 0.995
    assert contour.contours.coloring == "none"
    assert contour.name == "target >= 0.995 (line)"
    outline = next(t for t in fig.data if (t.name or "").startswith("meets target"))
    # Cells (τ_neg 0.1, τ_pos 0.2) and (0.1, 0.6) meet it, (0.5, 0.6) does not; blank excluded.
    assert outline.name == "meets target >= 0.995: 2 of 3 cells"
    # The outline is the left column: x from 0.1 - 0.2 = -0.1 to 0.3, y from -0.0 to 0.8.
    xs = [v for v in outline.x if v is not None]
    ys = [v for v in outline.y if v is not None]
    assert min(xs) == pytest.approx(-0.1) and max(xs) == pytest.approx(0.3)
    assert min(ys) == pytest.approx(0.0) and max(ys) == pytest.approx(0.8)
    # Six edge segments: each cell's outer sides (bottom / top, left, right towards the blank
    # and the failing cell); the side the two meeting cells share is not drawn.
    assert list(outline.x).count(None) == 6


def test_gate_grid_target_for_an_upper_bound_and_bad_operator():
    grid = _grid().rename(columns={"screening_sensitivity": "review_rate"})
    fig = gate_grid_heatmap(grid, (0.1, 0.6), metric="review_rate", target=("<", 0.99))
    outline = next(t for t in fig.data if (t.name or "").startswith("meets target"))
    assert outline.name == "meets target < 0.99: 1 of 3 cells"
    with pytest.raises(ValueError, match="target operator"):
        gate_grid_heatmap(grid, (0.1, 0.6), metric="review_rate", target=("=", 1))
    assert not [t for t in gate_grid_heatmap(grid, (0.1, 0.6),
                                             metric="review_rate").data
                if t.type == "contour"]


# ------------------------------------------------------------------------- 6. folds
def test_folds_figure_draws_each_fold_and_mean_plus_minus_std(evaluator):
    ev = evaluator.evaluate(EvalConfig(bootstrap=0))
    fig = folds_figure(ev.per_fold, ev.fold_summary, "auroc", label="AUROC")
    # Band, mean line, pooled line, then the fold points on top.
    assert [t.name.split(" ")[0] for t in fig.data] == ["mean", "mean", "pooled", "AUROC"]
    dots = fig.data[-1]
    folds = ev.per_fold.drop(index=["mean", "std", "pooled"])
    assert list(dots.x) == [f"fold {i}" for i in folds.index]
    # Folds in their own order (the band's two ends must not reorder the categories).
    assert list(fig.layout.xaxis.categoryarray) == [f"fold {i}" for i in folds.index]
    np.testing.assert_array_equal(dots.y, folds["auroc"].to_numpy(dtype=float))
    values = folds["auroc"].to_numpy(dtype=float)
    mean, std = values.mean(), values.std(ddof=0)  # contract §9: ddof = 0
    band = fig.data[0]
    np.testing.assert_allclose(band.y, [mean + std, mean + std, mean - std, mean - std])
    line = fig.data[1]
    np.testing.assert_allclose(line.y, [mean, mean])
    assert line.name == f"mean {mean:.3f} ± {std:.3f}"
    assert fig.layout.title.text == "AUROC per fold (mean ± std over folds)"
    with pytest.raises(ValueError, match="no row for metric 'nope'"):
        folds_figure(ev.per_fold, ev.fold_summary, "nope")


# ------------------------------------------------------------- 7. mostly-0/1 metrics
def test_mostly_binary_metrics_are_shares_with_mean_and_interval():
    hit = np.array([1, 1, 1, 0, 1, np.nan, 1, 1, 0, 1])  # 9 defined: 7 at 1, 2 at 0
    mrr = np.array([1, 0.5, 0.25, 1, 0.33, 0.5, 1, 0.2, 0.5, 1.0])  # 4 of 10 at 0 / 1
    fig = distribution_figure({"hit@10": hit, "mrr": mrr},
                              intervals={"hit@10": (0.45, 0.94)})
    boxes = [t for t in fig.data if t.type == "box"]
    assert [b.name for b in boxes] == ["mrr"]
    bars = [t for t in fig.data if t.type == "bar"]
    assert [b.name for b in bars] == ["queries at 0", "queries in between", "queries at 1"]
    np.testing.assert_allclose([b.y[0] for b in bars], [2 / 9, 0, 7 / 9])
    assert all(b.xaxis == "x2" for b in bars)
    mean = next(t for t in fig.data if t.name == "mean (95% CI)")
    np.testing.assert_allclose(mean.y, [7 / 9])
    np.testing.assert_allclose(mean.error_y.array, [0.94 - 7 / 9])
    np.testing.assert_allclose(mean.error_y.arrayminus, [7 / 9 - 0.45])
    assert fig.layout.barmode == "stack"
    # Both panels side by side without overlap.
    assert fig.layout.xaxis.domain[1] < fig.layout.xaxis2.domain[0]


def test_only_binary_metrics_use_the_whole_width_and_no_interval_is_nan():
    fig = distribution_figure({"hit@5": np.array([0.0, 1, 1, 1])})
    assert not [t for t in fig.data if t.type == "box"]
    assert list(fig.layout.xaxis2.domain) == [0, 1]
    mean = next(t for t in fig.data if t.name == "mean (95% CI)")
    assert mean.y[0] == 0.75 and np.isnan(mean.error_y.array[0])
