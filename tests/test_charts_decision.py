"""Figures of decision support and run comparison: traces hold the computed values, names
from the data are escaped."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from metrics_core.metrics import bands, classification
from metrics_core.metrics.calibration import reliability_bins
from metrics_core.metrics.decision import decision_curve
from metrics_core.report.figures.curves import decision_curve_figure, roc_figure
from metrics_core.report.figures.gate import gate_flow_figure
from metrics_core.report.figures.runs import (
    forest_figure,
    overlay_decision_figure,
    overlay_pr_figure,
    overlay_reliability_figure,
    overlay_roc_figure,
)


def _data(seed=0):
    rng = np.random.default_rng(seed)
    y = (rng.random(200) < 0.3).astype(int)
    return y, np.clip(rng.random(200) * 0.6 + 0.3 * y, 0, 1)


def test_decision_curve_figure_has_model_and_references():
    y, p = _data()
    curve = decision_curve(y, p)
    curve["net_benefit_ci_lo"] = curve["net_benefit"] - 0.01
    curve["net_benefit_ci_hi"] = curve["net_benefit"] + 0.01
    fig = decision_curve_figure(curve, tau_pos=0.6)
    names = [t.name for t in fig.data]
    assert names == ["model 95% band", "model", "treat all", "treat none"]
    assert list(fig.data[1].y) == list(curve["net_benefit"])
    assert fig.layout.shapes[0].x0 == 0.6


def test_overlays_escape_run_names():
    y, p = _data()
    evil = '<a href="http://evil.example">run</a>'
    roc = {evil: classification.roc_points(y, p), "b": classification.roc_points(y, p[::-1])}
    fig = overlay_roc_figure(roc, {evil: 0.8, "b": None})
    assert "<a" not in fig.data[1].name and fig.data[1].name.startswith("&lt;a")
    pr = overlay_pr_figure({evil: classification.pr_points(y, p)}, {evil: 0.5}, 0.3)
    assert "<a" not in pr.data[1].name
    rel = overlay_reliability_figure({evil: reliability_bins(y, p)})
    assert "<a" not in rel.data[1].name
    dc = overlay_decision_figure({evil: decision_curve(y, p)})
    assert "<a" not in dc.data[0].name


def test_forest_figure_draws_differences_and_intervals():
    rows = pd.DataFrame({"subset": ["criterion A", "criterion <b>B</b>", "criterion C"],
                         "difference": [0.1, -0.05, None], "ci95": [[0.0, 0.2], None, None]})
    fig = forest_figure(rows, title="t")
    trace = fig.data[0]
    assert list(trace.x[:2]) == [0.1, -0.05] and np.isnan(trace.x[2])
    assert list(trace.y) == ["criterion A", "criterion &lt;b&gt;B&lt;/b&gt; (no interval)",
                             "criterion C (undefined)"]
    assert np.allclose(trace.error_x.array[:1], [0.1]) and np.isnan(trace.error_x.array[1])


def test_gate_flow_counts_are_the_gate_counts():
    from metrics_core.metrics.gate import assign_states, gate_summary

    y, p = _data(3)
    g = gate_summary(y, assign_states(p, tau_neg=0.2, tau_pos=0.6))
    fig = gate_flow_figure(g)
    link = fig.data[0].link
    assert sum(v for s, v in zip(link.source, link.value, strict=True) if s == 0) == g.n
    assert sum(v for t, v in zip(link.target, link.value, strict=True) if t == 4) == g.n_pos


def test_roc_band_brackets_the_curve_and_is_drawn():
    y, p = _data(4)
    grid, lo, hi = bands.roc_band(y, p, n_resamples=300, seed=2)
    roc = classification.roc_points(y, p)
    for g in (0.1, 0.3, 0.5):
        i = np.searchsorted(roc.fpr, g, side="right") - 1
        j = int(np.argmin(np.abs(grid - g)))
        assert lo[j] <= roc.tpr[i] <= hi[j]
    band = pd.DataFrame({"fpr": grid, "tpr_lo": lo, "tpr_hi": hi})
    fig = roc_figure(roc, band=band)
    assert fig.data[0].name == "95% band" and len(fig.data[0].x) == 2 * grid.size


def test_pr_band_equals_a_literal_loop_over_resamples_with_sklearn():
    from sklearn.metrics import precision_recall_curve

    from metrics_core.metrics.uncertainty import Bootstrap

    y, p = _data(5)
    p = np.round(p, 2)  # ties
    grid = np.array([0.0, 0.1, 0.25, 0.5, 0.8, 1.0])
    _, lo, hi = bands.pr_band(y, p, n_resamples=150, seed=4, grid=grid)
    draws = []
    for counts in Bootstrap(y.size, n_resamples=150, seed=4).count_batches():
        for w in counts:
            keep = w > 0
            precision, recall, _ = precision_recall_curve(y[keep], p[keep],
                                                          sample_weight=w[keep])
            # sklearn lists points by increasing threshold; the last one is (1, 0) by
            # convention: drop it, then take, for each r, the highest threshold with recall >= r
            precision, recall = precision[:-1], recall[:-1]
            row = []
            for r in grid:
                ok = np.flatnonzero(recall >= r - 1e-12)
                row.append(precision[ok[-1]] if ok.size else np.nan)
            draws.append(row)
    want = np.nanpercentile(np.array(draws), [2.5, 97.5], axis=0)
    np.testing.assert_allclose(lo, want[0], atol=1e-12)
    np.testing.assert_allclose(hi, want[1], atol=1e-12)


def _area_under_drawn_steps(trace) -> float:
    """The area under a PR trace as plotly draws it (its line shape between the points)."""
    x, y = np.asarray(trace.x, float), np.asarray(trace.y, float)
    level = y[:-1] if trace.line.shape == "hv" else y[1:]  # "vh": the next point's height
    return float(np.sum(np.abs(np.diff(x)) * level))


@pytest.mark.parametrize("tied", [False, True])
def test_a_drawn_pr_curve_encloses_its_average_precision(tied):
    """Each recall interval is drawn at the precision of its upper end, as average precision
    counts it: the area under the drawn curve is scikit-learn's average precision, on the
    Calibration page's curve and the Compare page's overlay alike. A run with one score for
    every query (precision = the positive rate at every recall) was drawn at precision 1."""
    from sklearn.metrics import average_precision_score

    from metrics_core.metrics.classification import pr_points
    from metrics_core.report.figures.curves import pr_figure

    rng = np.random.default_rng(4)
    y = (rng.random(300) < 0.2).astype(int)
    p = np.full(300, 0.5) if tied else np.round(rng.random(300) * 0.5 + 0.4 * y, 2)
    want = average_precision_score(y, p)
    pr = pr_points(y, p)
    single = next(t for t in pr_figure(pr, float(y.mean())).data if t.name.startswith("PR"))
    overlay = overlay_pr_figure({"run": pr}, {"run": want}, float(y.mean())).data[1]
    for trace in (single, overlay):
        assert _area_under_drawn_steps(trace) == pytest.approx(want, abs=1e-12)
