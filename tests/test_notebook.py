"""The notebook API: ``metrics_core.evaluate`` and the figures of an evaluation.

``metrics_core.evaluate(queries, candidates=None, **settings)`` is the command line's
``evaluate`` for a notebook: the run façade (``open_run``) and the evaluator, so the same
settings give the same document (tests/test_documented_commands.py compares the README's
example with ``metrics-core evaluate``). Here: its arguments, its tables and its figures.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
import pytest

import metrics_core
from metrics_core.errors import SettingsError
from metrics_core.evaluation.result import TABLES, frame_records
from metrics_core.report import (
    decision_curve_figure,
    gate_flow_figure,
    k_histogram,
    per_criterion_figure,
    pr_figure,
    reliability_figure,
    roc_figure,
)
from metrics_core.shipped import ASSETS

ROOT = Path(__file__).resolve().parent.parent
QUERIES, CANDIDATES = ASSETS / "demo_queries.parquet", ASSETS / "demo_candidates.parquet"


@pytest.fixture(scope="module")
def evaluation():
    return metrics_core.evaluate(QUERIES, CANDIDATES, bootstrap=50, seed=3)


def test_evaluate_is_the_run_of_the_files(evaluation):
    """The inputs fingerprinted as the CLI does; the settings given; the rest the defaults."""
    run = evaluation.run
    assert [i["file"] for i in run["inputs"]] == ["demo_queries.parquet",
                                                  "demo_candidates.parquet"]
    assert run["inputs"][0]["bytes"] == QUERIES.stat().st_size
    assert evaluation.config.bootstrap == 50 and evaluation.config.seed == 3
    assert evaluation.config.tau_neg == 0.1   # the contract's default
    assert evaluation.summary["n_queries"] == 14770


def test_frames_give_the_files_numbers(evaluation):
    """DataFrames in place of the files: the same records (no file, no fingerprint)."""
    from_frames = metrics_core.evaluate(pd.read_parquet(QUERIES), pd.read_parquet(CANDIDATES),
                                        bootstrap=50, seed=3)
    assert from_frames.run["inputs"] == []
    assert from_frames.to_frame().equals(evaluation.to_frame())


def test_settings_filters_and_their_errors():
    part = metrics_core.evaluate(QUERIES, CANDIDATES, bootstrap=0, criteria=["A.1"],
                                 tau_pos=0.7)
    assert part.summary["n_queries"] == (pd.read_parquet(QUERIES)["criterion"] == "A.1").sum()
    assert part.config.filters.criteria == ("A.1",) and part.config.tau_pos == 0.7
    with pytest.raises(TypeError, match="unknown settings tau_neq; the settings are "):
        metrics_core.evaluate(QUERIES, CANDIDATES, tau_neq=0.1)
    with pytest.raises(SettingsError, match="bootstrap: must be a whole number"):
        metrics_core.evaluate(QUERIES, CANDIDATES, bootstrap=-1)
    with pytest.raises(ValueError, match=r"criterion_gates names criteria the data does not "
                                         r"have: 'Z\.9'"):
        metrics_core.evaluate(QUERIES, CANDIDATES, bootstrap=0,
                              criterion_gates=[("Z.9", 0.1, 0.6)])


def test_to_frame_and_every_table_are_the_documents(evaluation):
    document = json.loads(evaluation.to_json())
    frame = evaluation.to_frame()
    assert list(frame["name"]) == [r["name"] for r in document["metrics"]]
    auroc = frame.set_index("name").loc["auroc"]
    record = evaluation.record("auroc")
    assert (auroc["value"], auroc["ci_lo"], auroc["ci_hi"]) == (record.value, *record.ci95)
    for name in TABLES:
        table = evaluation.table(name)
        if name == "metrics":
            continue   # (the records' frame: ci_lo / ci_hi in place of ci95)
        assert table is not None, name
        rows = frame_records(table)
        assert rows == document[name], name
    assert len(evaluation.table("per_query")) == 14770
    with pytest.raises(KeyError, match="no table 'rocband'; have: metrics, tpr_at_fpr"):
        evaluation.table("rocband")


def test_a_table_the_run_has_not_is_none():
    evaluation = metrics_core.evaluate(QUERIES, CANDIDATES, bootstrap=0)
    assert evaluation.table("roc_band") is None and evaluation.table("pr_band") is None


def test_the_figures_of_an_evaluation(evaluation):
    """Each figure is a plotly figure with its title, drawn from the evaluation, in the form
    Jupyter draws (plotly's mimetype bundle)."""
    titles = {
        roc_figure: "ROC curve (all queries)",
        pr_figure: "Precision-recall curve (all queries)",
        reliability_figure: "Reliability diagram",
        gate_flow_figure: "Queries through the gate to the gold outcome",
    }
    for draw, title in titles.items():
        figure = draw(evaluation)
        assert isinstance(figure, go.Figure) and figure.layout.title.text == title, draw
    roc = roc_figure(evaluation)
    names = [trace.name for trace in roc.data]
    assert names[0] == "95% band"   # the run resampled
    assert any(n.startswith("ROC (AUROC 0.98") for n in names), names
    per_criterion = per_criterion_figure(evaluation, "auroc", label="AUROC")
    assert len(per_criterion.data[0].x) == len(evaluation.summary["criteria"]) == 10
    assert k_histogram(evaluation).data and decision_curve_figure(evaluation).data
    default = pio.renderers.default
    try:
        pio.renderers.default = "plotly_mimetype"   # what a Jupyter kernel uses
        bundle = roc._repr_mimebundle_()
    finally:
        pio.renderers.default = default
    drawn = bundle["application/vnd.plotly.v1+json"]
    assert drawn["layout"]["title"]["text"] == "ROC curve (all queries)"


def test_import_of_the_report_draws_nothing_until_asked(tmp_path):
    """``import metrics_core.report`` imports plotly only when a figure is asked for."""
    code = ("import sys, metrics_core.report as r\n"
            "print('plotly' in sys.modules)\n"
            "r.roc_figure\n"
            "print('plotly' in sys.modules)\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, env={"PYTHONPATH": str(ROOT),
                                                       "PATH": "/usr/bin:/bin"})
    assert done.stdout.split() == ["False", "True"], done.stderr


def test_adjudications_give_the_clis_document(tmp_path):
    """``evaluate(..., adjudications=...)``: the numbers ``metrics-core evaluate
    --adjudications`` writes for the same file and settings (its ``metrics`` and its
    ``adjudication`` block); a frame of the same verdicts gives the same adjudicated records;
    the original is the plain evaluation."""
    from metrics_core.cli import main

    frame = pd.read_parquet(QUERIES).head(3)
    adj = tmp_path / "adj.csv"
    adj.write_text("post_id,criterion,sent_uid,verdict,corrected_has_evidence\n"
                   f"{frame.post_id[0]},{frame.criterion[0]},,label_error,"
                   f"{1 - int(frame.has_evidence[0])}\n"
                   f"{frame.post_id[1]},{frame.criterion[1]},,ambiguous,\n")
    for extra in ((), ("--exclude-ambiguous",)):
        out = tmp_path / "m.json"
        assert main(["evaluate", str(QUERIES), str(CANDIDATES), "--out", str(out),
                     "--bootstrap", "50", "--seed", "3", "--adjudications", str(adj),
                     "--quiet", *extra]) == 0
        cli = json.loads(out.read_text())
        both = metrics_core.evaluate(QUERIES, CANDIDATES, bootstrap=50, seed=3,
                                     adjudications=adj, exclude_ambiguous=bool(extra))
        mine = json.loads(both.to_json())
        assert mine["adjudication"] == cli["adjudication"]
        assert mine["metrics"] == cli["metrics"]
        assert mine["adjudication"]["exclude_ambiguous"] is bool(extra)
        assert mine["adjudication"]["file"]["file"] == "adj.csv"
    assert json.loads(both.original.to_json())["metrics"] == json.loads(
        metrics_core.evaluate(QUERIES, CANDIDATES, bootstrap=50, seed=3).to_json())["metrics"]
    # The same verdicts as a frame: the same adjudicated records.
    as_frame = metrics_core.evaluate(QUERIES, CANDIDATES, bootstrap=50, seed=3,
                                     adjudications=pd.read_csv(adj, dtype=str,
                                                               keep_default_na=False),
                                     exclude_ambiguous=True)
    assert [r.to_dict() for r in as_frame.adjudicated.records] == [
        r.to_dict() for r in both.adjudicated.records]
    with pytest.raises(ValueError, match="exclude_ambiguous needs adjudications"):
        metrics_core.evaluate(QUERIES, CANDIDATES, exclude_ambiguous=True)
    with pytest.raises(metrics_core.InputError, match=r"adj\.csv"):
        bad = tmp_path / "bad" / "adj.csv"
        bad.parent.mkdir()
        bad.write_text("post_id,criterion,verdict\nnope,A,model_error\n")
        metrics_core.evaluate(QUERIES, CANDIDATES, bootstrap=0, adjudications=bad)
