"""Targets: each row's n is its metric's denominator, and a target names a metric the run
computes (contract §6, §11; seed 003)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.metrics import precision_score, recall_score

from metrics_core.cli import main
from metrics_core.config import EvalConfig
from metrics_core.demo import demo_paths
from metrics_core.inputs import loading as mio
from metrics_core.report import Evaluator
from metrics_core.targets import canonical_targets, parse_target


@pytest.fixture(scope="module")
def demo():
    paths = demo_paths()
    ds = mio.load(paths.queries, paths.candidates).dataset
    return ds, Evaluator(ds).evaluate(EvalConfig(bootstrap=0))


def test_the_targets_n_is_each_metrics_denominator(demo):
    """The plain demo at the default gate (τ_neg 0.1, τ_pos 0.6): screening sensitivity rests
    on the 1,379 queries with evidence, alert precision on the 1,028 POS alerts, the missed
    positives per 1,000 on all 14,770 queries (the issue's table said 14,770 for all three)."""
    ds, run = demo
    n = dict(zip(run.targets["metric"], run.targets["n"], strict=True))
    n_pos, n_alerts = int(ds.y.sum()), int((ds.p >= 0.6).sum())
    assert (n_pos, n_alerts, ds.n_queries) == (1379, 1028, 14770)
    assert n["screening_sensitivity"] == n_pos
    assert n["alert_precision"] == n_alerts
    assert n["screening_fn_per_1000"] == ds.n_queries
    assert n["evidence_recall"] == n_pos  # positives_only
    assert n["auroc"] == n["auprc"] == n["ece"] == n["brier"] == ds.n_queries
    # the value is its numerator over that n: a whole number of queries
    value = dict(zip(run.targets["metric"], run.targets["value"], strict=True))
    for name in ("screening_sensitivity", "alert_precision"):
        k = value[name] * n[name]
        assert k == pytest.approx(round(k), abs=1e-9)
    assert round(value["alert_precision"] * n_alerts) == int(ds.y[ds.p >= 0.6].sum())
    # scikit-learn on the gate's decisions: screening sensitivity is the recall of "not NEG",
    # alert precision the precision of "POS"
    assert value["screening_sensitivity"] == pytest.approx(recall_score(ds.y, ds.p >= 0.1))
    assert value["alert_precision"] == pytest.approx(precision_score(ds.y, ds.p >= 0.6))
    # the document carries the same n in the targets and in the metric records
    doc = json.loads(run.to_json())
    by_record = {m["name"]: m["n"] for m in doc["metrics"]}
    for row in doc["targets"]:
        assert row["n"] == n[row["metric"]] == by_record[row["metric"]]


def test_every_proportion_record_has_its_denominator_as_n(demo):
    """A record with a Wilson interval is k / n with its own n: recomputing the interval from
    (round(value × n), n) gives the interval reported."""
    from metrics_core.metrics.uncertainty import wilson_interval

    _, run = demo
    checked = 0
    for r in run.records:
        if r.ci_method != "wilson" or r.ci95 is None or r.name.endswith("_per_1000"):
            continue
        k = round(r.value * r.n)
        assert r.value * r.n == pytest.approx(k, abs=1e-6), r.name
        lo, hi = wilson_interval(k, r.n)
        assert (float(lo), float(hi)) == pytest.approx(r.ci95, abs=1e-12), r.name
        checked += 1
    assert checked >= 25


def test_record_and_app_show_the_same_n(demo):
    from metrics_core.report import decision_record as record

    _, run = demo
    page = record.render_html(run)
    table = page[page.index("<h2>Targets</h2>"):]
    table = table[:table.index("</table>")]
    assert ">1379<" in table or ">1,379<" in table
    assert ">1028<" in table or ">1,028<" in table


@pytest.mark.parametrize(("text", "want"), [
    ("AUROC>=0.85", ("auroc", ">=", 0.85)),
    ("Screening_Sensitivity >= 0.995", ("screening_sensitivity", ">=", 0.995)),
    ("Recall@10>0.5", ("recall@10", ">", 0.5)),
    ("tpr@fpr=0.1>=0.8", ("tpr@fpr=0.10", ">=", 0.8)),
])
def test_target_names_are_case_insensitive(text, want):
    assert parse_target(text) == want
    name = want[0]
    assert canonical_targets([text])[0].startswith(name + want[1])


@pytest.mark.parametrize(("text", "message"), [
    ("foo>=1", "no metric is called 'foo'; valid metrics: auroc, auprc"),
    ("recall@x>=1", "needs a cut-off K >= 1"),
    ("auroc>=1e400", "finite"),
    ("auroc is high", "must be a target such as"),
])
def test_an_unknown_target_is_an_error_naming_the_valid_names(text, message):
    with pytest.raises(ValueError, match=message):
        EvalConfig(targets=[text])


def test_a_target_must_be_computed_by_the_run():
    with pytest.raises(ValueError, match=r"recall@7 is not computed \(the run's cut-offs K: "
                                         r"1, 3, 5, 10, 20\)"):
        EvalConfig(targets=["recall@7>=0.5"])
    assert EvalConfig(ks=(7,), targets=["recall@7>=0.5"]).targets == ("recall@7>=0.5",)
    with pytest.raises(ValueError, match=r"tpr@fpr=0\.20 is not computed"):
        EvalConfig(targets=["tpr@fpr=0.2>=0.5"])


def test_settings_json_accepts_any_case_and_refuses_unknown_names():
    cfg = EvalConfig.from_dict({"targets": ["AUROC>=0.9"]})
    assert cfg.targets == ("auroc>=0.9",)
    with pytest.raises(ValueError, match="no metric is called 'foo'"):
        EvalConfig.from_dict({"targets": ["foo>=1"]})


def test_cli_refuses_an_unknown_target_with_exit_2(tmp_path, capsys):
    paths = demo_paths()
    out = tmp_path / "m.json"
    code = main(["evaluate", str(paths.queries), str(paths.candidates), "--bootstrap", "0",
                 "--targets", "foo>=1", "--out", str(out), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and not out.exists()
    assert "no metric is called 'foo'" in err and "screening_sensitivity" in err
    code = main(["evaluate", str(paths.queries), str(paths.candidates), "--bootstrap", "0",
                 "--targets", "AUROC>=0.85", "--out", str(out), "--quiet"])
    assert code == 0
    doc = json.loads(out.read_text())
    assert doc["config"]["targets"] == ["auroc>=0.85"]
    assert doc["targets"][0]["metric"] == "auroc"
    assert doc["targets"][0]["status"].startswith("met")
    assert np.isclose(doc["targets"][0]["value"], doc["metrics"][0]["value"])
