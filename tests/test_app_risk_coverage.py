"""Risk–coverage on the gate and triage pages: the areas shown are those the library computes,
and the figure draws the curve and the gate's point."""

from __future__ import annotations

from metrics_core.demo import demo_paths
from metrics_core.report.figures.gate import risk_coverage_figure
from metrics_core.triage import load_triage, triage_metrics
from tests.test_app import assert_clean, metric, open_app, open_triage_demo


def test_triage_page_shows_the_aurc_of_the_report():
    at = open_triage_demo()
    assert_clean(at)
    got = triage_metrics(load_triage(demo_paths().triage)).risk_coverage
    assert metric(at, "AURC") == f"{got['aurc']:.4f}"
    assert metric(at, "E-AURC") == f"{got['excess_aurc']:.4f}"
    assert at.get_by_key("triage_risk_coverage_chart") is not None


def test_gate_page_shows_the_runs_risk_coverage():
    from metrics_core.config import EvalConfig
    from metrics_core.inputs import loading as mio
    from metrics_core.report import Evaluator

    at = open_app(page="gate")
    at.toggle(key="gate_risk_coverage").set_value(True).run()
    assert_clean(at)
    paths = demo_paths()
    evaluation = Evaluator(mio.load(paths.queries, paths.candidates).dataset).evaluate(
        EvalConfig())
    want = evaluation.gate_risk_coverage
    assert metric(at, "AURC") == f"{want['aurc']:.4f}"
    assert metric(at, "Optimal AURC") == f"{want['optimal_aurc']:.4f}"


def test_figure_draws_the_curve_and_the_gates_point():
    curve = {"aurc": 0.1, "excess_aurc": 0.02, "curve": {"coverage": [0.5, 1.0],
                                                         "risk": [0.0, 0.2]},
             "gate": {"coverage": 0.8, "risk": 0.1, "tau_neg": 0.2, "tau_pos": 0.6}}
    fig = risk_coverage_figure(curve)
    assert list(fig.data[0].x) == [0.5, 1.0] and list(fig.data[0].y) == [0.0, 0.2]
    assert "AURC 0.1000, E-AURC 0.0200" in fig.data[0].name
    assert list(fig.data[1].x) == [0.8] and "τ_neg 0.2" in fig.data[1].name
