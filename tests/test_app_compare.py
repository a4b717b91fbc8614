"""The Compare runs page: the synthetic demo runs and uploaded runs give the numbers that
metrics_core.compare computes."""

from __future__ import annotations

import io as _io

import pytest

from metrics_core import compare
from metrics_core.config import EvalConfig
from metrics_core.demo import make_runs
from metrics_core.inputs import loading as mio
from tests.test_app import assert_clean, open_app, table


def test_compare_page_on_the_demo_runs():
    at = open_app(page="compare")
    assert_clean(at)
    at.toggle(key="compare_demo").set_value(True).run(timeout=120)
    at.number_input(key="compare_bootstrap").set_value(0).run(timeout=120)
    assert_clean(at)
    runs = [compare.Run(n, mio.load(f).dataset) for n, f in make_runs(300).items()]
    want = compare.ablation_table(runs, EvalConfig(bootstrap=0))
    shown = table(at, "ablation_table")
    assert list(shown["run"]) == ["baseline", "candidate"]
    assert list(shown["auroc"]) == pytest.approx(list(want["auroc"]))
    diffs = table(at, "comparison_table").set_index("metric")
    assert diffs.loc["auroc", "difference"] == pytest.approx(
        want["auroc"].iloc[1] - want["auroc"].iloc[0])


def test_compare_page_with_uploaded_runs():
    runs = make_runs(60, seed=3)
    at = open_app(page="compare")
    files = []
    for name, frame in runs.items():
        buf = _io.BytesIO()
        frame.to_parquet(buf)
        files.append((f"{name}.parquet", buf.getvalue(), "application/octet-stream"))
    at.file_uploader(key="compare_files").set_value(files).run(timeout=120)
    assert_clean(at)
    shown = table(at, "ablation_table")
    assert list(shown["run"]) == ["baseline", "candidate"]


def _uploads(named) -> list:
    """``[(file name, long table), ...]`` as uploaded Parquet files."""
    files = []
    for file_name, frame in named:
        buf = _io.BytesIO()
        frame.to_parquet(buf)
        files.append((file_name, buf.getvalue(), "application/octet-stream"))
    return files


def test_compare_page_refuses_two_runs_of_one_name():
    """run0.parquet and run0.pq are both "run0": refused as the CLI refuses it, instead of a
    "run0 − run0" comparison."""
    frame = next(iter(make_runs(60, seed=3).values()))
    at = open_app(page="compare")
    at.file_uploader(key="compare_files").set_value(
        _uploads([("run0.parquet", frame), ("run0.pq", frame)])).run(timeout=120)
    errors = " ".join(e.value for e in at.error)
    assert "every run needs its own name" in errors and "run0" in errors
    assert not at.dataframe  # no ablation table, no differences


def test_compare_page_refuses_runs_with_different_gold():
    base, other = make_runs(60, seed=3).values()
    other = other.copy()
    post, crit = other.loc[other["has_evidence"] == 1, ["post_id", "criterion"]].iloc[0]
    rows = (other["post_id"] == post) & (other["criterion"] == crit)
    other.loc[rows, ["has_evidence", "is_gold", "n_gold"]] = 0
    at = open_app(page="compare")
    at.file_uploader(key="compare_files").set_value(
        _uploads([("baseline.parquet", base), ("candidate.parquet", other)])).run(timeout=120)
    errors = " ".join(e.value for e in at.error)
    assert "different gold labels" in errors and "'baseline' and 'candidate'" in errors
    assert f"post_id {post!r}, criterion {crit!r}" in errors.replace("\\", "")
    assert not at.dataframe
