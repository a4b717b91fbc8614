"""Chart builders (metrics_core/report/figures/): the drawn values are the computed values.

Each builder gets small inputs computed by metrics_core; the tests assert that the traces
carry exactly those numbers (x / y arrays, marker positions at the operating points, box
quartiles, histogram counts) and that every figure has a title and axis labels.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import precision_recall_curve, roc_curve

from metrics_core.config import EvalConfig
from metrics_core.data.dataset import Dataset
from metrics_core.metrics.calibration import reliability_bins
from metrics_core.metrics.classification import pr_points, roc_points
from metrics_core.metrics.confusion import confusion_at
from metrics_core.report import Evaluator
from metrics_core.report.figures.breakdowns import distribution_figure, per_criterion_figure
from metrics_core.report.figures.calibration import reliability_figure
from metrics_core.report.figures.curves import (
    OperatingPoint,
    operating_point,
    pr_figure,
    roc_figure,
)
from metrics_core.report.figures.gate import gamma_sweep_figure, gate_grid_heatmap, k_histogram
from metrics_core.report.figures.style import MAX_CURVE_POINTS
from tests.conftest import random_frames

# Hand-made toy: 4 positives, 4 negatives, one tie across classes (p = 0.4).
Y = np.array([1, 1, 1, 1, 0, 0, 0, 0])
P = np.array([0.9, 0.7, 0.4, 0.2, 0.6, 0.4, 0.3, 0.1])


def _trace(fig, name_start: str):
    matches = [t for t in fig.data if (t.name or "").startswith(name_start)]
    assert len(matches) == 1, [t.name for t in fig.data]
    return matches[0]


def _assert_labelled(fig, title: str):
    assert fig.layout.title.text == title
    assert fig.layout.xaxis.title.text
    assert fig.layout.yaxis.title.text


@pytest.fixture(scope="module")
def evaluator():
    q, c = random_frames(n_posts=50, seed=11)
    return Evaluator(Dataset.from_frames(q, c))


@pytest.fixture(scope="module")
def evaluation(evaluator):
    return evaluator.evaluate(EvalConfig(bootstrap=0))


# --------------------------------------------------------------------------- ROC / PR
def test_operating_point_reads_the_confusion():
    # p >= 0.4: TP = 3 (0.9, 0.7, 0.4), FP = 2 (0.6, 0.4), so TPR 3/4, FPR 2/4, PPV 3/5.
    point = operating_point("τ", confusion_at(Y, P, threshold=0.4))
    assert point == OperatingPoint("τ", 0.4, 0.5, 0.75, 0.6)


def test_roc_figure_draws_the_curve_and_the_operating_points():
    roc = roc_points(Y, P)
    points = [operating_point("τ_neg", confusion_at(Y, P, threshold=0.25)),
              operating_point("τ_pos", confusion_at(Y, P, threshold=0.65))]
    fig = roc_figure(roc, points=points, auroc=0.8)
    curve = _trace(fig, "ROC")
    # Same points as scikit-learn's roc_curve(drop_intermediate=False) (contract §4).
    fpr, tpr, _ = roc_curve(Y, P, drop_intermediate=False)
    np.testing.assert_array_equal(curve.x, fpr)
    np.testing.assert_array_equal(curve.y, tpr)
    assert curve.name == "ROC (AUROC 0.800)"
    # p >= 0.25: TP 3 of 4, FP 3 of 4 (0.6, 0.4, 0.3); p >= 0.65: TP 2, FP 0.
    neg = _trace(fig, "τ_neg")
    pos = _trace(fig, "τ_pos")
    assert (neg.x[0], neg.y[0]) == (0.75, 0.75)
    assert (pos.x[0], pos.y[0]) == (0.0, 0.5)
    _assert_labelled(fig, "ROC curve (all queries)")


def test_pr_figure_draws_the_curve_baseline_and_points():
    pr = pr_points(Y, P)
    point = operating_point("τ", confusion_at(Y, P, threshold=0.4))
    fig = pr_figure(pr, 0.5, points=[point])
    curve = _trace(fig, "PR")
    precision, recall, _ = precision_recall_curve(Y, P)
    np.testing.assert_allclose(curve.x, recall)
    np.testing.assert_allclose(curve.y, precision)
    baseline = _trace(fig, "positive rate")
    assert list(baseline.y) == [0.5, 0.5]
    marker = _trace(fig, "τ")
    assert (marker.x[0], marker.y[0]) == (0.75, 0.6)
    _assert_labelled(fig, "Precision-recall curve (all queries)")


def test_undefined_operating_point_is_not_drawn():
    # Threshold above every p: no predicted positive, precision 0/0 is undefined.
    point = operating_point("τ", confusion_at(Y, P, threshold=0.95))
    assert np.isnan(point.precision)
    fig = pr_figure(pr_points(Y, P), 0.5, points=[point])
    assert not [t for t in fig.data if (t.name or "").startswith("τ")]
    roc_fig = roc_figure(roc_points(Y, P), points=[point])
    assert (_trace(roc_fig, "τ").x[0], _trace(roc_fig, "τ").y[0]) == (0.0, 0.0)


def test_long_curves_are_thinned_but_operating_points_stay_exact():
    rng = np.random.default_rng(0)
    y = (rng.random(50_000) < 0.2).astype(int)
    p = np.clip(rng.normal(0.3 + 0.3 * y, 0.2), 0, 1)
    roc = roc_points(y, p)
    assert roc.fpr.size > MAX_CURVE_POINTS
    conf = confusion_at(y, p, threshold=0.437)
    fig = roc_figure(roc, points=[operating_point("τ", conf)])
    curve = _trace(fig, "ROC")
    assert len(curve.x) <= MAX_CURVE_POINTS
    assert (curve.x[0], curve.y[0]) == (0.0, 0.0)
    assert (curve.x[-1], curve.y[-1]) == (1.0, 1.0)
    # Every drawn point is a real ROC point.
    real = set(zip(roc.fpr.tolist(), roc.tpr.tolist(), strict=True))
    assert set(zip(list(curve.x), list(curve.y), strict=True)) <= real
    marker = _trace(fig, "τ")
    assert (marker.x[0], marker.y[0]) == (conf.fp / (conf.fp + conf.tn),
                                          conf.tp / (conf.tp + conf.fn))


# --------------------------------------------------------------------------- calibration
def test_reliability_figure_draws_bins_counts_and_wilson_bands():
    y = np.array([0, 0, 1, 0, 1, 1, 1, 0, 1, 1])
    p = np.array([0.05, 0.1, 0.2, 0.3, 0.55, 0.6, 0.65, 0.7, 0.9, 1.0])
    table = reliability_bins(y, p, n_bins=4)  # bins [0, .25) [.25, .5) [.5, .75) [.75, 1]
    fig = reliability_figure(table)
    bars = _trace(fig, "queries in bin")
    np.testing.assert_array_equal(bars.y, [3, 1, 4, 2])
    observed = _trace(fig, "observed")
    np.testing.assert_allclose(observed.x, table.mean_confidence)
    np.testing.assert_allclose(observed.y, [1 / 3, 0.0, 3 / 4, 1.0])
    np.testing.assert_allclose(observed.error_y.array, table.wilson_hi - table.observed_frequency)
    np.testing.assert_allclose(observed.error_y.arrayminus,
                               table.observed_frequency - table.wilson_lo)
    _assert_labelled(fig, "Reliability diagram")


def test_reliability_figure_leaves_empty_bins_out():
    table = reliability_bins(np.array([0, 1]), np.array([0.1, 0.9]), n_bins=5)
    fig = reliability_figure(table)
    observed = _trace(fig, "observed")
    np.testing.assert_allclose(observed.x, [0.1, 0.9])
    np.testing.assert_array_equal(_trace(fig, "queries in bin").y, [1, 0, 0, 0, 1])


# --------------------------------------------------------------------------- gate grid
def test_gate_grid_heatmap_cells_equal_the_grid(evaluator):
    cfg = EvalConfig(tau_neg=0.2, tau_pos=0.6)
    steps = [0.0, 0.2, 0.4, 0.6, 0.8]
    grid = evaluator.gate_grid(cfg, steps, steps)
    fig = gate_grid_heatmap(grid, (0.2, 0.6), metric="alert_precision")
    heat = fig.data[0]
    assert list(heat.x) == steps and list(heat.y) == steps
    z = np.asarray(heat.z, dtype=float)
    for row in grid.itertuples():
        i, j = steps.index(row.tau_pos), steps.index(row.tau_neg)
        np.testing.assert_equal(z[i, j], row.alert_precision)
    # τ_neg > τ_pos is not a gate: blank cell.
    assert np.isnan(z[steps.index(0.2), steps.index(0.6)])
    current = _trace(fig, "current")
    assert (current.x[0], current.y[0]) == (0.2, 0.6)
    _assert_labelled(fig, "Alert precision over (τ_neg, τ_pos)")


# --------------------------------------------------------------------------- dynamic-K
def test_k_histogram_counts_per_state():
    k = np.array([0, 0, 2, 3, 3, 5, 0])
    states = np.array([0, 0, 1, 2, 2, 1, 1])
    fig = k_histogram(k, states)
    assert [t.name for t in fig.data] == ["NEG", "UNCERTAIN", "POS"]
    np.testing.assert_array_equal(fig.data[0].y, [2, 0, 0, 0, 0, 0])
    np.testing.assert_array_equal(fig.data[1].y, [1, 0, 1, 0, 0, 1])
    np.testing.assert_array_equal(fig.data[2].y, [0, 0, 0, 2, 0, 0])
    np.testing.assert_array_equal(fig.data[0].x, np.arange(6))
    # One panel per state, each on its own count axis (see test_charts_legible.py).
    assert [t.yaxis for t in fig.data] == ["y", "y2", "y3"]
    _assert_labelled(fig, "Selected K by gate state (one panel per state, own count axis)")


def test_gamma_sweep_figure_plots_recall_against_workload(evaluator):
    cfg = EvalConfig(gamma=0.85, bootstrap=0)
    sweep = evaluator.gamma_sweep(cfg, [0.95, 0.7, 0.85])
    fig = gamma_sweep_figure(sweep)
    line = _trace(fig, "γ sweep")
    ordered = sweep.sort_values("gamma")
    np.testing.assert_array_equal(line.x, ordered["workload_per_1000"])
    np.testing.assert_array_equal(line.y, ordered["evidence_recall"])
    assert [t.name for t in fig.data[1:]] == ["γ = 0.7", "γ = 0.85 (current)", "γ = 0.95"]
    current = _trace(fig, "γ = 0.85")
    row = sweep[sweep["gamma"] == 0.85].iloc[0]
    assert current.x[0] == row["workload_per_1000"]
    np.testing.assert_equal(current.y[0], row["evidence_recall"])
    _assert_labelled(fig, "Evidence recall vs workload (γ sweep)")


# --------------------------------------------------------------------------- breakdowns
def test_per_criterion_figure_dots_intervals_and_reference_lines(evaluation):
    table = evaluation.per_criterion
    fig = per_criterion_figure(table, "sensitivity")
    dots = fig.data[0]
    body = table.drop(index=["micro", "macro"])
    assert list(dots.x) == list(body.index)
    np.testing.assert_array_equal(dots.y, body["sensitivity"])
    np.testing.assert_allclose(dots.error_y.array,
                               body["sensitivity_ci_hi"] - body["sensitivity"])
    np.testing.assert_allclose(dots.error_y.arrayminus,
                               body["sensitivity"] - body["sensitivity_ci_lo"])
    micro = _trace(fig, "micro")
    assert list(micro.y) == [table.loc["micro", "sensitivity"]] * 2
    macro = _trace(fig, "macro")
    assert list(macro.y) == [table.loc["macro", "sensitivity"]] * 2
    _assert_labelled(fig, "sensitivity by criterion")


def test_per_criterion_figure_without_interval_columns(evaluation):
    fig = per_criterion_figure(evaluation.per_criterion, "mean_k", label="Mean K")
    assert fig.data[0].error_y.array is None
    _assert_labelled(fig, "Mean K by criterion")


def test_distribution_figure_boxes_from_exact_quartiles():
    values = {"recall@5": np.array([0.0, 0.5, 0.5, 1.0, np.nan]),
              "mrr": np.array([1.0, 0.5, 1 / 3, 0.25]),
              "empty": np.array([np.nan])}
    fig = distribution_figure(values, title="Per-query values")
    assert [t.name for t in fig.data] == ["recall@5", "mrr"]
    box = fig.data[0]
    # recall@5 without the NaN: 0, .5, .5, 1 -> quartiles .375, .5, .625 (linear), mean .5.
    assert (box.q1[0], box.median[0], box.q3[0]) == (0.375, 0.5, 0.625)
    assert (box.lowerfence[0], box.upperfence[0], box.mean[0]) == (0.0, 1.0, 0.5)
    q1, med, q3 = np.percentile(values["mrr"], [25, 50, 75])
    assert (fig.data[1].q1[0], fig.data[1].median[0], fig.data[1].q3[0]) == (q1, med, q3)
    _assert_labelled(fig, "Per-query values")


def test_builders_import_no_streamlit():
    import ast
    from pathlib import Path

    from metrics_core.report import figures

    modules = set()
    for path in Path(figures.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                modules.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom):
                modules.add((node.module or "").split(".")[0])
    assert "plotly" in modules
    assert "streamlit" not in modules


def test_figures_carry_no_external_resources(evaluation):
    fig = roc_figure(evaluation.roc)
    text = fig.to_json()
    assert "http://" not in text and "https://" not in text
