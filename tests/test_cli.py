"""The command line on good and bad files: exit 2 with a clear message, never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from metrics_core.cli import main
from tests.conftest import random_frames


@pytest.fixture
def files(tmp_path):
    q, c = random_frames(n_posts=30, seed=4)
    qp, cp = tmp_path / "queries.csv", tmp_path / "candidates.parquet"
    q.to_csv(qp, index=False)
    c.to_parquet(cp)
    return qp, cp


def test_evaluate_writes_metrics_master(files, tmp_path, capsys):
    qp, cp = files
    out = tmp_path / "out" / "metrics_master.json"
    code = main(["evaluate", str(qp), str(cp), "--out", str(out), "--bootstrap", "100",
                 "--tau-neg", "0.2", "--map-denominator", "min_gold_k"])
    assert code == 0
    data = json.loads(out.read_text())
    assert data["config"]["tau_neg"] == 0.2
    assert data["config"]["map_denominator"] == "min_gold_k"
    assert data["config"]["bootstrap"] == 100
    names = {m["name"] for m in data["metrics"]}
    assert {"auroc", "tpr@fpr=0.05", "recall@10", "ndcg@10", "map@10", "mrr", "mrr@10", "hit@5",
            "ece", "screening_sensitivity", "alert_precision", "evidence_recall",
            "samples_f1"} <= names
    assert "wrote" in capsys.readouterr().out


def test_bootstrap_zero_turns_cis_off(files, tmp_path):
    qp, cp = files
    out = tmp_path / "m.json"
    assert main(["evaluate", str(qp), str(cp), "--out", str(out), "--bootstrap", "0",
                 "--quiet"]) == 0
    data = json.loads(out.read_text())
    assert next(m for m in data["metrics"] if m["name"] == "auroc")["ci95"] is None


def test_bad_probability_exits_2_naming_file_column_rows(files, tmp_path, capsys):
    qp, cp = files
    text = qp.read_text().splitlines()
    header = text[0].split(",")
    col = header.index("p_has_evidence")
    row = text[3].split(",")
    row[col] = "1.7"
    text[3] = ",".join(row)
    qp.write_text("\n".join(text) + "\n")
    code = main(["evaluate", str(qp), str(cp), "--out", str(tmp_path / "m.json")])
    err = capsys.readouterr().err
    assert code == 2
    assert "queries.csv" in err and "p_has_evidence" in err
    # data row 3 is line 4 of the file (the header is line 1), with its value
    assert "values must be within [0, 1] (line 4: value 1.7)" in err
    assert "Traceback" not in err


def test_missing_column_and_missing_file_exit_2(files, tmp_path, capsys):
    _qp, cp = files
    q, _ = random_frames(n_posts=5, seed=1)
    bad = tmp_path / "bad.csv"
    q.drop(columns="has_evidence").to_csv(bad, index=False)
    assert main(["evaluate", str(bad), str(cp), "--out", str(tmp_path / "m.json")]) == 2
    assert "has_evidence" in capsys.readouterr().err
    assert main(["evaluate", str(tmp_path / "nope.csv"), "--out",
                 str(tmp_path / "m.json")]) == 2
    assert "nope.csv" in capsys.readouterr().err


def test_invalid_option_exits_2(files, tmp_path, capsys):
    qp, cp = files
    assert main(["evaluate", str(qp), str(cp), "--tau-neg", "0.7", "--tau-pos", "0.6",
                 "--out", str(tmp_path / "m.json")]) == 2
    assert capsys.readouterr().err == ("metrics-core: invalid option: --tau-neg: must be at most "
                                       "--tau-pos (0.6); got 0.7\n")


def test_module_entry_point_runs_as_a_process(files, tmp_path):
    qp, cp = files
    out = tmp_path / "m.json"
    proc = subprocess.run([sys.executable, "-m", "metrics_core", "evaluate", str(qp), str(cp),
                           "--out", str(out), "--bootstrap", "0"], capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(out.read_text())["dataset"]["n_queries"] == 90
    # The process ends without the interpreter's teardown: what it printed is all there.
    assert str(out) in proc.stdout and proc.stdout.endswith("\n")
    bad = tmp_path / "bad.csv"
    bad.write_text("post_id,criterion,has_evidence,p_has_evidence\np1,A,1,1.5\n")
    proc = subprocess.run([sys.executable, "-m", "metrics_core", "evaluate", str(bad),
                           "--out", str(tmp_path / "n.json")], capture_output=True, text=True,
                          check=False)
    assert proc.returncode == 2
    assert "bad.csv" in proc.stderr and "p_has_evidence" in proc.stderr
    assert not (tmp_path / "n.json").exists()


def test_triage_command(tmp_path):
    import pandas as pd

    rows = pd.DataFrame({
        "label": ["fake", "fake", "fake", "real", "real", "real", "fake", "real"],
        "prediction": ["fake", "real", "uncertain", "real", "fake", "real", "fake", "uncertain"],
    })
    path = tmp_path / "triage.csv"
    rows.to_csv(path, index=False)
    out = tmp_path / "t.json"
    assert main(["triage", str(path), "--out", str(out), "--quiet"]) == 0
    data = json.dumps(json.loads(out.read_text()))
    assert "coverage" in data


def test_triage_bad_value_exits_2(tmp_path, capsys):
    import pandas as pd

    path = tmp_path / "triage.csv"
    pd.DataFrame({"label": ["fake", "maybe"], "prediction": ["fake", "real"]}).to_csv(
        path, index=False)
    assert main(["triage", str(path), "--out", str(tmp_path / "t.json")]) == 2
    err = capsys.readouterr().err
    assert "label" in err and "Traceback" not in err
