"""A cohort filter on a numeric column names a cohort of the column's bins as the run chose
them (``Filters.cohort_bins``, contract §9): the evaluation keeps exactly the queries of that
interval, whichever way the filter comes in (the constructor, ``--cohort-filter`` with
``--cohort-bins``, a settings.json given to ``metrics-core report``), and a document says
which bins its filter's values are of."""

from __future__ import annotations

import json

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from metrics_core.cli import main
from metrics_core.config import SETTINGS_SCHEMA_ID, EvalConfig, Filters
from metrics_core.demo import make_synthetic
from metrics_core.errors import InputError, SettingsError
from metrics_core.evaluation.evaluator import Evaluator
from metrics_core.inputs.cohort_columns import CohortSource, cohort_columns
from metrics_core.inputs.loading import load

CONFIG = EvalConfig(bootstrap=0)
FILTER = Filters(cohorts=("age=[40, 65)",), cohort_bins={"age": "40,65"})


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    q, c = make_synthetic(120, n_criteria=3, seed=5, with_text=False)
    rng = np.random.default_rng(8)
    posts = q["post_id"].unique()
    q["age"] = q["post_id"].map(dict(zip(posts, rng.integers(18, 90, posts.size).tolist(),
                                         strict=True)))
    q["site"] = q["post_id"].map(dict(zip(posts, rng.choice(["S1", "S2"], posts.size),
                                          strict=True)))
    tmp = tmp_path_factory.mktemp("cohort_filter_bins")
    qp, cp = tmp / "queries.parquet", tmp / "candidates.parquet"
    q.to_parquet(qp, index=False)
    c.to_parquet(cp, index=False)
    return q, c, load(q, c), tmp, qp, cp


def _ages(q, ds) -> np.ndarray:
    """Each query's age, from the table itself (pandas, not the code)."""
    table = q.set_index(["post_id", "criterion"])["age"]
    return table.loc[list(zip(ds.post_id, ds.criterion, strict=True))].to_numpy(dtype=float)


def test_filter_bins_are_checked_and_kept_in_one_text():
    f = Filters(cohorts=["age=[40, 65)", "site*age=S1*< 40"],
                cohort_bins={" age ": "40.0, 65"})
    assert f.cohort_bins == (("age", "40,65"),)
    assert f.bins_of_cohorts() == {"age": "40,65"}
    assert f.to_dict()["cohort_bins"] == {"age": "40,65"}
    assert f.describe() == "cohort age = [40, 65), site*age = S1*< 40 (age binned 40,65)"
    assert f == Filters(cohorts=f.cohorts, cohort_bins=(("age", "40,65"),))  # one key
    assert "cohort_bins" not in Filters(cohorts=("age=[40, 65)",)).to_dict()
    assert Filters(cohorts=("age=x",), cohort_bins={"age": "Q3"}).cohort_bins == (("age", "q3"),)
    got = EvalConfig(filters={"cohorts": ["age=[40, 65)"], "cohort_bins": {"age": "40,65"}})
    assert got.filters == FILTER
    # the run's chosen bins, of the filter's columns only
    assert (Filters(cohorts=("age=[40, 65)",)).with_cohort_bins({"age": "40,65", "bmi": "q3"})
            == FILTER)


@pytest.mark.parametrize("bins, rule", [
    ({"bmi": "q3"}, "not a column of the cohort filter"),
    ({"age": "65,40"}, "increasing"), ({"age": "q1"}, "quantile bins must be 2 to 20"),
    ({"age": "young"}, "qN"), ("age=40", "cohort_bins must map")])
def test_bad_filter_bins_are_refused_naming_the_rule(bins, rule):
    with pytest.raises(SettingsError, match=rule):
        Filters(cohorts=("age=[40, 65)",), cohort_bins=bins)


def test_a_binned_cohort_is_the_queries_of_its_interval(data):
    q, _, loaded, *_ = data
    ds = loaded.dataset
    ev = Evaluator(ds, cohorts=CohortSource(cohort_columns(q, loaded), loaded))
    got = ev.evaluate(CONFIG.replace(filters=FILTER))
    age = _ages(q, ds)
    keep = (age >= 40) & (age < 65)
    assert 0 < keep.sum() < ds.n_queries
    assert got.summary["n_queries"] == int(keep.sum())
    assert got.record("auroc").value == pytest.approx(roc_auc_score(ds.y[keep], ds.p[keep]),
                                                      abs=1e-12)
    assert got.config.filters == FILTER
    assert json.loads(got.to_json())["config"]["filters"]["cohort_bins"] == {"age": "40,65"}
    # the other bins' cohorts of the same column, on the same reader (kept per bins)
    under = ev.evaluate(CONFIG.replace(filters=Filters(cohorts=("age=< 40",),
                                                       cohort_bins={"age": "40,65"})))
    assert under.summary["n_queries"] == int((age < 40).sum())
    quartile = ev.cohorts.values(["age"])["age"]  # default bins: quartiles (72 ages)
    assert len(quartile) == 4 and "[40, 65)" not in quartile
    first = ev.evaluate(CONFIG.replace(filters=Filters(cohorts=(f"age={quartile[0]}",))))
    lo = np.quantile(age[~np.isnan(age)], [0, .25])  # (every query has an age)
    assert first.summary["n_queries"] == int(((age >= lo[0]) & (age < lo[1])).sum())


def test_a_binned_value_without_its_bins_is_refused_naming_them(data):
    q, _, loaded, *_ = data
    ev = Evaluator(loaded.dataset, cohorts=CohortSource(cohort_columns(q, loaded), loaded))
    with pytest.raises(InputError, match="does not have") as err:
        ev.evaluate(CONFIG.replace(filters=Filters(cohorts=("age=[40, 65)",))))
    assert "[40, 65)" not in err.value.hint
    with pytest.raises(InputError, match="does not have") as err:
        ev.evaluate(CONFIG.replace(filters=Filters(cohorts=("age=[40, 65)",),
                                                   cohort_bins={"age": "30,50"})))
    assert "age binned 30,50" in err.value.hint and "[30, 50)" in err.value.hint


def test_the_command_line_filter_uses_its_bins_and_says_them(data):
    q, _, loaded, tmp, qp, cp = data
    out = tmp / "run.json"
    assert main(["evaluate", str(qp), str(cp), "--cohort", "age", "--cohort-bins",
                 "age=40,65", "--cohort-filter", "age=[40, 65)", "--bootstrap", "0",
                 "--out", str(out), "--quiet"]) == 0
    doc = json.loads(out.read_text())
    age = _ages(q, loaded.dataset)
    assert doc["dataset"]["n_queries"] == int(((age >= 40) & (age < 65)).sum())
    assert doc["config"]["filters"]["cohort_bins"] == {"age": "40,65"}


def _settings(tmp, name, filters, bins):
    path = tmp / name
    path.write_text(json.dumps({
        "schema": SETTINGS_SCHEMA_ID,
        "config": {"bootstrap": 0, "filters": filters},
        "cohort_columns": ["age"], "cohort_bins": bins}))
    return path


def test_a_settings_file_filter_uses_the_files_bins(data, capsys):
    *_, tmp, qp, cp = data
    good = _settings(tmp, "good.json", {"cohorts": ["age=[40, 65)"],
                                        "cohort_bins": {"age": "40,65"}}, {"age": "40,65"})
    out = tmp / "record.html"
    assert main(["report", str(qp), str(cp), "--settings", str(good), "--format", "html",
                 "--out", str(out), "--quiet"]) == 0
    page = out.read_text()
    assert "age binned 40,65" in page
    path = _settings(tmp, "bad.json", {"cohorts": ["age=[40, 65)"],
                                       "cohort_bins": {"age": "40,65"}}, {"age": "q3"})
    assert main(["report", str(qp), str(cp), "--settings", str(path), "--format", "html",
                 "--out", str(tmp / "bad.html"), "--quiet"]) != 0
    err = capsys.readouterr().err
    assert "age is binned 40,65 in the cohort filter" in err and "q3" in err
