"""The cohort filter (``Filters.cohorts``, contract §9): a run restricted to one cohort equals
the run of the data set subset to that cohort's rows, whichever way the filter comes in (the
constructor, ``--cohort-filter``, a settings.json given to ``metrics-core report``); bad
filters are refused naming the rule, the column and the value."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from metrics_core.cli import main
from metrics_core.config import EvalConfig, Filters
from metrics_core.demo import make_synthetic
from metrics_core.errors import InputError, SettingsError
from metrics_core.evaluation.evaluator import Evaluator
from metrics_core.inputs.cohort_columns import CohortSource, cohort_columns
from metrics_core.inputs.loading import load

CONFIG = EvalConfig(bootstrap=0)


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    q, c = make_synthetic(80, n_criteria=3, seed=11, with_text=False)
    rng = np.random.default_rng(3)
    posts = q["post_id"].unique()
    q["site"] = q["post_id"].map(dict(zip(posts, rng.choice(["S1", "S2", "S3"], posts.size),
                                          strict=True)))
    q["sex"] = q["post_id"].map(dict(zip(posts, rng.choice(["F", "M"], posts.size),
                                         strict=True)))
    q.loc[q["post_id"] == posts[0], "sex"] = None  # a missing value: the cohort "missing"
    tmp = tmp_path_factory.mktemp("cohort_filter")
    qp, cp = tmp / "queries.csv", tmp / "candidates.csv"
    q.to_csv(qp, index=False)
    c.to_csv(cp, index=False)
    loaded = load(q, c)
    return q, c, loaded, tmp, qp, cp


def _rows(q, ds, **wanted):
    """Each query of ``ds`` in the cohort: from the table itself (pandas, not the code)."""
    table = q.set_index(["post_id", "criterion"])
    keys = list(zip(ds.post_id, ds.criterion, strict=True))
    keep = np.ones(ds.n_queries, dtype=bool)
    for column, values in wanted.items():
        got = table[column].loc[keys].fillna("missing").astype(str).to_numpy()
        keep &= np.isin(got, values)
    return keep


def _same(a, b):
    assert a.summary["n_queries"] == b.summary["n_queries"]
    for r in a.records:
        other = b.record(r.name)
        assert r.defined == other.defined, r.name
        if r.defined:
            assert r.value == pytest.approx(other.value, rel=1e-12, abs=1e-12), r.name


def test_filters_hold_cohorts_as_column_value_items():
    f = Filters(cohorts=["site=S1", " sex = F ", "site=S1", "site=S3"])
    assert f.cohorts == ("site=S1", "sex=F", "site=S3")  # trimmed, once each
    assert f.cohort_values() == {"site": ("S1", "S3"), "sex": ("F",)}
    assert f.active and f.describe() == "cohort site = S1 or S3, sex = F"
    assert f.to_dict()["cohorts"] == ["site=S1", "sex=F", "site=S3"]
    assert "cohorts" not in Filters().to_dict()  # the document is unchanged without one
    assert EvalConfig(filters={"cohorts": ["site=S2"]}).filters.cohorts == ("site=S2",)


@pytest.mark.parametrize("bad", [["site"], ["=S1"], ["site="], "site=S1", [3],
                                 ["x=" + "v" * 300], [f"c{i}=v" for i in range(65)]])
def test_bad_cohort_filters_are_refused_naming_the_rule(bad):
    with pytest.raises(SettingsError, match="cohorts"):
        Filters(cohorts=bad)


def test_a_cohort_run_equals_the_run_of_the_cohorts_rows(data):
    q, _, loaded, *_ = data
    ds = loaded.dataset
    ev = Evaluator(ds, cohorts=CohortSource(cohort_columns(q, loaded), loaded))
    for wanted in ({"site": ["S2"]}, {"site": ["S1", "S3"]}, {"site": ["S1"], "sex": ["F"]},
                   {"sex": ["missing"]}):
        items = tuple(f"{k}={v}" for k, vs in wanted.items() for v in vs)
        got = ev.evaluate(CONFIG.replace(filters=Filters(cohorts=items)))
        keep = _rows(q, ds, **wanted)
        assert 0 < keep.sum() < ds.n_queries
        _same(got, Evaluator(ds.subset(keep)).evaluate(CONFIG))
        assert got.config.filters.cohorts == items


def test_a_cohort_filter_combines_with_the_other_filters(data):
    q, _, loaded, *_ = data
    ds = loaded.dataset
    ev = Evaluator(ds, cohorts=CohortSource(cohort_columns(q, loaded), loaded))
    crit = ds.criteria[1]
    got = ev.evaluate(CONFIG.replace(filters=Filters(criteria=(crit,), cohorts=("site=S3",))))
    keep = _rows(q, ds, site=["S3"]) & (ds.criterion == crit)
    _same(got, Evaluator(ds.subset(keep)).evaluate(CONFIG))


def test_a_cohort_runs_cohort_tables_are_those_of_the_cohorts_rows(data):
    """Under a cohort filter the cohort tables list the cohorts that have queries in the run
    (none left empty by the filter, n = 0), with the values of the run on the rows alone."""
    from metrics_core.evaluation.cohorts import evaluate_cohorts
    from metrics_core.inputs.cohort_columns import cohort_attributes

    q, _, loaded, *_ = data
    ds = loaded.dataset
    ev = Evaluator(ds, cohorts=CohortSource(cohort_columns(q, loaded), loaded))
    cfg = EvalConfig(bootstrap=50, seed=4)
    got = evaluate_cohorts(ev, cfg.replace(filters=Filters(cohorts=("site=S2",))),
                           list(cohort_attributes(q, loaded, ["site", "sex"]).values()))
    keep = _rows(q, ds, site=["S2"])
    rows = q.set_index(["post_id", "criterion"]).loc[
        list(zip(ds.post_id[keep], ds.criterion[keep], strict=True))].reset_index()
    sub = load(rows, data[1][data[1].set_index(["post_id", "criterion"]).index.isin(
        rows.set_index(["post_id", "criterion"]).index)])
    want = evaluate_cohorts(Evaluator(sub.dataset), cfg, list(
        cohort_attributes(rows, sub, ["site", "sex"]).values()))
    assert sorted(set(got.cohorts["value"][got.cohorts["column"] == "site"])) == ["S2"]
    assert (got.cohorts["n"] > 0).all() and (got.equalised_odds["n"] > 0).all()
    key = ["column", "value", "metric"]
    a = got.cohorts.set_index(key).sort_index()
    b = want.cohorts.set_index(key).sort_index()
    assert a.index.equals(b.index)
    assert list(got.equalised_odds["value"]) == list(want.equalised_odds["value"])
    for column in ("estimate", "rest_estimate", "difference", "p_value", "p_adjusted"):
        np.testing.assert_allclose(a[column].astype(float), b[column].astype(float),
                                   rtol=1e-12, atol=1e-12, err_msg=column)
    assert list(a["n"]) == list(b["n"]) and list(a["flagged"]) == list(b["flagged"])


def test_unknown_cohort_values_and_columns_are_named(data):
    q, _, loaded, *_ = data
    ev = Evaluator(loaded.dataset, cohorts=CohortSource(cohort_columns(q, loaded), loaded))
    with pytest.raises(InputError) as err:
        ev.evaluate(CONFIG.replace(filters=Filters(cohorts=("site=S9",))))
    assert err.value.column == "site" and "'S9'" in str(err.value)
    assert "values: S1, S2, S3" in str(err.value)
    with pytest.raises(InputError, match="cohort column not found") as err:
        ev.evaluate(CONFIG.replace(filters=Filters(cohorts=("ward=w1",))))
    assert err.value.column == "ward"
    with pytest.raises(InputError, match="needs the data's cohort columns"):
        Evaluator(loaded.dataset).evaluate(CONFIG.replace(filters=Filters(cohorts=("a=b",))))


def test_the_adjudicated_evaluator_keeps_the_cohort_columns(data):
    from metrics_core.evaluation.adjudicated import adjudicated_evaluator
    from metrics_core.inputs.adjudications import adjudications_of

    q, _, loaded, *_ = data
    ds = loaded.dataset
    ev = Evaluator(ds, cohorts=CohortSource(cohort_columns(q, loaded), loaded))
    first = int(np.flatnonzero(ds.y == 1)[0])
    verdicts = pd.DataFrame({"post_id": [ds.post_id[first]], "criterion": [ds.criterion[first]],
                             "verdict": ["label_error"], "corrected_has_evidence": [0]})
    adj = adjudicated_evaluator(ev, adjudications_of(verdicts, ds))
    got = adj.evaluate(CONFIG.replace(filters=Filters(cohorts=("site=S1",))))
    keep = _rows(q, ds, site=["S1"])
    assert got.summary["n_queries"] == int(keep.sum())
    _same(got, Evaluator(adj.ds.subset(keep)).evaluate(CONFIG))


def test_cli_cohort_filter_and_a_settings_file_with_one(data, capsys):
    q, _, _, tmp, qp, cp = data
    ds = load(qp, cp).dataset
    keep = _rows(q, ds, site=["S2"], sex=["M"])
    out = tmp / "m.json"
    assert main(["evaluate", str(qp), str(cp), "--out", str(out), "--bootstrap", "0",
                 "--cohort-filter", "site=S2", "--cohort-filter", "sex=M"]) == 0
    doc = json.loads(out.read_text())
    assert doc["config"]["filters"]["cohorts"] == ["site=S2", "sex=M"]
    want = Evaluator(ds.subset(keep)).evaluate(CONFIG)
    assert doc["dataset"]["n_queries"] == want.summary["n_queries"] == int(keep.sum())
    got = {m["name"]: m["value"] for m in doc["metrics"] if m["subset"] == "all_queries"}
    assert got["auroc"] == pytest.approx(want.record("auroc").value)
    assert "filtered: cohort site = S2, sex = M" in capsys.readouterr().out
    # the same filter from a settings.json (as the dashboard writes it)
    settings = tmp / "settings.json"
    settings.write_text(json.dumps({"schema": "metrics_core_settings/1", "config": {
        "bootstrap": 0, "filters": {"cohorts": ["site=S2", "sex=M"]}}}))
    record = tmp / "record.html"
    assert main(["report", str(qp), str(cp), "--settings", str(settings), "--format", "html",
                 "--out", str(record), "--quiet"]) == 0
    assert "cohort site = S2, sex = M" in record.read_text()


@pytest.mark.parametrize(("flag", "message"), [
    ("site", "--cohort-filter: item 1 must be 'column=value'"),
    ("site=S9", "values: S1, S2, S3"),
    ("ward=x", "cohort column not found"),
])
def test_cli_refuses_a_bad_cohort_filter(data, capsys, flag, message):
    *_, tmp, qp, cp = data
    code = main(["evaluate", str(qp), str(cp), "--out", str(tmp / "x.json"), "--bootstrap",
                 "0", "--cohort-filter", flag])
    assert code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_a_pair_with_a_column_of_one_cohort_adds_no_weak_segment(data):
    """At site S2 (the cohort filter) the pair site*sex has sex's cohorts again, each a
    segment already tried: the weak segments are those of the run without the pair, not each
    listed twice nor counted twice in Holm's adjustment."""
    from metrics_core.evaluation.cohorts import evaluate_cohorts
    from metrics_core.inputs.cohort_columns import cohort_attributes

    q, _, loaded, *_ = data
    ev = Evaluator(loaded.dataset, cohorts=CohortSource(cohort_columns(q, loaded), loaded))
    cfg = EvalConfig(bootstrap=50, seed=4, filters=Filters(cohorts=("site=S2",)))
    attrs = cohort_attributes(q, loaded, ["site", "sex"])
    both = evaluate_cohorts(ev, cfg, list(attrs.values()), min_size=5).weak_segments
    alone = evaluate_cohorts(ev, cfg, [attrs["sex"]], min_size=5).weak_segments
    assert len(alone) and set(alone["columns"]) == {"sex"}
    assert set(both["columns"]) == {"sex"}  # no "site*sex" copy of a sex segment
    pd.testing.assert_frame_equal(both.reset_index(drop=True), alone.reset_index(drop=True))
