"""Per-criterion gate thresholds: the gate, its metrics, the per-criterion table, the CLI and
the settings use each criterion's own (τ_neg, τ_pos)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from metrics_core.cli import main
from metrics_core.config import EvalConfig, parse_criterion_gate
from metrics_core.data.dataset import Dataset
from metrics_core.evaluation.evaluator import Evaluator
from metrics_core.metrics.gate import assign_states, gate_summary
from tests.conftest import random_frames

GATES = (("C1", 0.05, 0.8), ("C3", 0.3, 0.4))


@pytest.fixture(scope="module")
def dataset():
    q, c = random_frames(n_posts=60, seed=4)
    return Dataset.from_frames(q, c)


def hand_states(ds, cfg):
    states = assign_states(ds.p, tau_neg=cfg.tau_neg, tau_pos=cfg.tau_pos)
    for name, lo, hi in cfg.criterion_gates:
        rows = np.asarray(ds.criteria)[ds.criterion_code] == name
        states[rows] = assign_states(ds.p[rows], tau_neg=lo, tau_pos=hi)
    return states


def test_gate_metrics_use_each_criterions_thresholds(dataset):
    cfg = EvalConfig(bootstrap=0, criterion_gates=GATES)
    run = Evaluator(dataset).evaluate(cfg)
    states = hand_states(dataset, cfg)
    np.testing.assert_array_equal(run.states, states)
    assert not np.array_equal(states, assign_states(dataset.p, tau_neg=0.1, tau_pos=0.6))
    want = gate_summary(dataset.y, states)
    assert run.record("screening_sensitivity").value == pytest.approx(
        want.screening_sensitivity)
    assert run.record("alert_precision").value == pytest.approx(want.alert_precision)
    assert "C1: 0.05 / 0.8" in run.record("screening_sensitivity").subset
    table = run.per_criterion
    crit = np.asarray(dataset.criteria)[dataset.criterion_code]
    for name, lo, hi in (*GATES, ("C2", 0.1, 0.6)):
        rows = crit == name
        own = gate_summary(dataset.y[rows], assign_states(dataset.p[rows], tau_neg=lo,
                                                          tau_pos=hi))
        assert table.loc[name, "screening_sensitivity"] == pytest.approx(
            own.screening_sensitivity)
        assert table.loc[name, "uncertain_rate"] == pytest.approx(own.uncertain_rate)


def test_config_round_trip_and_validation():
    cfg = EvalConfig(criterion_gates=[("C3", 0.3, 0.4), ["C1", 0.05, 0.8]])
    assert cfg.criterion_gates == GATES
    with pytest.raises(ValueError, match="'C1' needs 0 <= tau_neg <= tau_pos"):
        EvalConfig(criterion_gates=[["C1", "0.05", 0.8]])  # text is not a number here
    assert EvalConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
    assert cfg.gate_of("C3") == (0.3, 0.4) and cfg.gate_of("C2") == (0.1, 0.6)
    with pytest.raises(ValueError, match="'C1' needs 0 <= tau_neg <= tau_pos"):
        EvalConfig(criterion_gates=(("C1", 0.7, 0.2),))
    with pytest.raises(ValueError, match="'C1' is given twice"):
        EvalConfig(criterion_gates=(("C1", 0.1, 0.2), ("C1", 0.1, 0.3)))
    assert parse_criterion_gate("a=b=0.1:0.2") == ("a=b", 0.1, 0.2)
    with pytest.raises(ValueError, match="CRITERION=TAU_NEG:TAU_POS"):
        parse_criterion_gate("C1=0.1")


def test_cli_takes_criterion_gates_and_refuses_unknown_criteria(tmp_path, capsys):
    q, c = random_frames(n_posts=30, seed=2)
    qp, cp = tmp_path / "q.csv", tmp_path / "c.csv"
    q.to_csv(qp, index=False)
    c.to_csv(cp, index=False)
    out = tmp_path / "m.json"
    assert main(["evaluate", str(qp), str(cp), "--out", str(out), "--bootstrap", "0",
                 "--quiet", "--criterion-gate", "C1=0.05:0.8",
                 "--criterion-gate", "C3=0.3:0.4"]) == 0
    payload = json.loads(out.read_text())
    assert payload["config"]["criterion_gates"] == [list(g) for g in GATES]
    ds = Dataset.from_frames(q, c)
    want = gate_summary(ds.y, hand_states(ds, EvalConfig(criterion_gates=GATES)))
    got = {m["name"]: m["value"] for m in payload["metrics"]}
    assert got["screening_sensitivity"] == pytest.approx(want.screening_sensitivity)
    assert main(["evaluate", str(qp), str(cp), "--out", str(tmp_path / "x.json"),
                 "--criterion-gate", "C9=0.1:0.5"]) == 2
    assert "criteria the data does not have: 'C9'" in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()
