"""The Gate page's live ROC / PR charts (dashboard/live_charts.py).

They draw what the exported plotly figures (metrics_core/report/figures/curves.py) draw: the
same curve points, band, reference line, operating points and legend names. And a move of the
thresholds changes their operating points only: the specification and every other data set stay
byte for byte the same, which is what lets the browser update the points in place.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from sklearn.metrics import precision_recall_curve, roc_curve

from dashboard import live_charts
from metrics_core.metrics.classification import pr_points, roc_points
from metrics_core.metrics.confusion import confusion_at
from metrics_core.report.figures.curves import operating_point, pr_figure, roc_figure

# The toy of tests/test_charts.py: 4 positives, 4 negatives, one tie across classes (p = 0.4).
Y = np.array([1, 1, 1, 1, 0, 0, 0, 0])
P = np.array([0.9, 0.7, 0.4, 0.2, 0.6, 0.4, 0.3, 0.1])


def _points(tau_neg: float, tau_pos: float, tau: float = 0.5):
    return [operating_point(label, confusion_at(Y, P, threshold=t))
            for label, t in (("τ_neg", tau_neg), ("τ_pos", tau_pos), ("τ", tau))]


def _fixed(spec: dict) -> str:
    """The specification without the operating points: what a threshold move must not change."""
    rest = {k: v for k, v in spec.items() if k != "datasets"}
    frames = {name: frame.to_dict("list") for name, frame in spec["datasets"].items()
              if name != "points"}
    return json.dumps([rest, frames], sort_keys=True, allow_nan=True)


def _names(fig) -> list[str]:
    return [t.name for t in fig.data if t.mode == "markers"]


def test_roc_chart_draws_the_curve_and_the_points_of_the_plotly_figure():
    roc = roc_points(Y, P)
    points = _points(0.25, 0.65)
    spec = live_charts.roc_chart(roc, points=points, auroc=0.8)
    curve = spec["datasets"]["curve"]
    # Same points as scikit-learn's roc_curve(drop_intermediate=False) (contract §4).
    fpr, tpr, _ = roc_curve(Y, P, drop_intermediate=False)
    np.testing.assert_array_equal(curve["x"], fpr)
    np.testing.assert_array_equal(curve["y"], tpr)
    assert set(curve["series"]) == {"ROC (AUROC 0.800)"}
    assert curve["threshold"].iloc[0] == "all negative" and curve["threshold"].iloc[1] == "p ≥ 0.9"
    drawn = spec["datasets"]["points"]
    # p >= 0.25: TP 3 of 4, FP 3 of 4; p >= 0.65: TP 2, FP 0; p >= 0.5: TP 2, FP 1.
    assert drawn[["x", "y"]].to_numpy().tolist() == [[0.75, 0.75], [0.0, 0.5], [0.25, 0.5]]
    assert drawn["order"].tolist() == [0, 1, 2]
    fig = roc_figure(roc, points=points, auroc=0.8)
    assert drawn["name"].tolist() == _names(fig)
    assert spec["title"]["text"] == fig.layout.title.text == "ROC curve (all queries)"
    reference = spec["datasets"]["reference"]
    assert reference[["x", "y"]].to_numpy().tolist() == [[0.0, 0.0], [1.0, 1.0]]
    assert "band" not in spec["datasets"]


def test_pr_chart_draws_the_curve_baseline_and_points_of_the_plotly_figure():
    pr = pr_points(Y, P)
    points = _points(0.25, 0.65, 0.4)
    spec = live_charts.pr_chart(pr, 0.5, points=points, auprc=0.75)
    curve = spec["datasets"]["curve"]
    precision, recall, _ = precision_recall_curve(Y, P)
    np.testing.assert_allclose(curve["x"], recall)
    np.testing.assert_allclose(curve["y"], precision)
    assert set(curve["series"]) == {"PR (AUPRC 0.750)"}
    assert spec["datasets"]["reference"]["y"].tolist() == [0.5, 0.5]
    assert set(spec["datasets"]["reference"]["series"]) == {"positive rate 0.500 (random)"}
    drawn = spec["datasets"]["points"]
    # p >= 0.4: TP 3 (0.9, 0.7, 0.4), FP 2 (0.6, 0.4): recall 0.75, precision 0.6.
    assert drawn.iloc[2][["x", "y"]].tolist() == [0.75, 0.6]
    assert drawn["name"].tolist() == _names(pr_figure(pr, 0.5, points=points))
    layers = [layer["mark"]["type"] for layer in spec["layer"]]
    assert layers == ["line", "line", "point", "point"]
    assert spec["layer"][1]["mark"]["interpolate"] == "step-before"  # precision as steps


def test_an_undefined_point_keeps_its_row_and_says_so():
    # Threshold above every p: no predicted positive, precision 0/0 is undefined.
    points = _points(0.25, 0.95)
    spec = live_charts.pr_chart(pr_points(Y, P), 0.5, points=points)
    drawn = spec["datasets"]["points"]
    assert drawn["order"].tolist() == [0, 1, 2]  # τ keeps the third colour and symbol
    assert drawn.iloc[1]["name"] == "τ_pos (p ≥ 0.95): undefined, not drawn"
    assert drawn.iloc[1]["x"] < -0.01 and drawn.iloc[1]["y"] < -0.01  # off the drawn area
    assert spec["layer"][-1]["mark"]["clip"] is True
    # On the ROC curve the same threshold is the point (0, 0) and is drawn.
    roc = live_charts.roc_chart(roc_points(Y, P), points=points)["datasets"]["points"]
    assert roc.iloc[1][["x", "y"]].tolist() == [0.0, 0.0]


def test_coinciding_points_are_named_as_in_the_plotly_figure():
    points = _points(0.5, 0.5, 0.5)
    spec = live_charts.roc_chart(roc_points(Y, P), points=points)
    names = spec["datasets"]["points"]["name"].tolist()
    assert names == _names(roc_figure(roc_points(Y, P), points=points))
    assert names[2].endswith("same point as τ_neg and τ_pos")


def test_a_threshold_move_changes_the_points_only():
    roc, pr = roc_points(Y, P), pr_points(Y, P)
    band = pd.DataFrame({"fpr": [0.0, 0.5, 1.0], "tpr_lo": [0.0, 0.4, 1.0],
                         "tpr_hi": [0.2, 0.9, 1.0]})
    before = live_charts.roc_chart(roc, points=_points(0.25, 0.65), auroc=0.8, band=band)
    after = live_charts.roc_chart(roc, points=_points(0.3, 0.7), auroc=0.8, band=band)
    assert _fixed(before) == _fixed(after)
    assert not before["datasets"]["points"].equals(after["datasets"]["points"])
    pr_before = live_charts.pr_chart(pr, 0.5, points=_points(0.25, 0.65))
    pr_after = live_charts.pr_chart(pr, 0.5, points=_points(0.2, 0.6))
    assert _fixed(pr_before) == _fixed(pr_after)


def test_the_band_is_drawn_between_its_bounds():
    band = pd.DataFrame({"fpr": [0.0, 0.5, 1.0], "tpr_lo": [0.0, 0.4, 1.0],
                         "tpr_hi": [0.2, 0.9, 1.0]})
    spec = live_charts.roc_chart(roc_points(Y, P), band=band)
    drawn = spec["datasets"]["band"]
    assert drawn[["x", "lo", "hi"]].to_numpy().tolist() == band.to_numpy().tolist()
    assert spec["layer"][0]["mark"] == {"type": "area", "interpolate": "step-after",
                                        "opacity": 1}
    legend = spec["layer"][0]["encoding"]["color"]["scale"]["domain"]
    assert legend == ["95% band", "chance", "ROC"]
    pr_band = pd.DataFrame({"recall": [0.0, 0.5, 1.0], "precision_lo": [0.5, np.nan, 0.4],
                            "precision_hi": [1.0, np.nan, 0.6]})
    pr_spec = live_charts.pr_chart(pr_points(Y, P), 0.5, band=pr_band)
    assert pr_spec["datasets"]["band"]["x"].tolist() == [0.0, 1.0]  # undefined rows dropped


def test_the_same_point_twice_keeps_both_rows_in_order():
    point = operating_point("τ", confusion_at(Y, P, threshold=0.4))
    drawn = live_charts.roc_chart(roc_points(Y, P), points=[point, point])["datasets"]["points"]
    assert drawn["order"].tolist() == [0, 1]
    assert drawn["name"].tolist() == ["τ (p ≥ 0.4)", "τ (p ≥ 0.4), same point as τ"]


def test_a_move_reuses_the_curves_frames_and_bytes_and_serialises_its_points_only():
    import gc

    import pyarrow as pa

    from dashboard.chart_data import ByObject, arrow_datasets

    roc = roc_points(Y, P)
    band = pd.DataFrame({"fpr": [0.0, 0.5, 1.0], "tpr_lo": [0.0, 0.4, 1.0],
                         "tpr_hi": [0.2, 0.9, 1.0]})
    kept = ByObject(64)
    before = live_charts.roc_chart(roc, points=_points(0.25, 0.65), auroc=0.8, band=band,
                                   kept=kept)
    after = live_charts.roc_chart(roc, points=_points(0.3, 0.7), auroc=0.8, band=band,
                                  kept=kept)
    for name in ("curve", "band", "reference"):
        assert after["datasets"][name] is before["datasets"][name]
    # Kept or not, the same chart.
    assert _fixed(after) == _fixed(live_charts.roc_chart(roc, points=_points(0.3, 0.7),
                                                         auroc=0.8, band=band))
    sent_before, sent_after = arrow_datasets(before, kept), arrow_datasets(after, kept)
    assert sent_after["datasets"]["curve"] is sent_before["datasets"]["curve"]
    assert sent_after["datasets"]["points"] != sent_before["datasets"]["points"]
    for name, frame in after["datasets"].items():  # the bytes are the frames
        table = pa.ipc.open_stream(sent_after["datasets"][name]).read_all()
        pd.testing.assert_frame_equal(table.to_pandas(), frame.reset_index(drop=True))
    assert {k: v for k, v in sent_after.items() if k != "datasets"} == {
        k: v for k, v in after.items() if k != "datasets"}
    # What was made of a curve goes with it.
    n_kept = len(kept)
    del roc, before, after, sent_before, sent_after, frame, table
    gc.collect()
    assert 0 < len(kept) < n_kept  # the band's frames remain while the band lives
    del band
    gc.collect()
    assert len(kept) == 0
