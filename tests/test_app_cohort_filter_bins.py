"""The sidebar's cohort filter on a numeric column with bins chosen on the Data page
(AppTest): it offers the cohorts of those bins, a chosen one gives the numbers
``metrics-core evaluate --cohort-bins age=40,65 --cohort-filter "age=[40, 65)"`` gives, the link
and settings.json carry the filter with its bins and bring back the same numbers, and a bins
change that removes the filtered cohort says so (contract §9, cohort filter)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dashboard import state
from metrics_core.cli import main
from metrics_core.config import Filters
from metrics_core.demo import make_synthetic
from metrics_core.report import decision_record as record
from tests.test_app import TIMEOUT, assert_clean, metric, open_app, texts, upload

QUICK = {"bootstrap": "200"}
AGE = "age=[40, 65)"
FILTER = Filters(cohorts=(AGE,), cohort_bins={"age": "40,65"})
COMPARED = ("auroc", "brier", "screening_sensitivity", "evidence_recall")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Queries with a numeric ``age`` per post (60 distinct values: quartiles by default),
    the candidates, and the command line's run filtered to ages 40 to 65."""
    tmp = tmp_path_factory.mktemp("filter_bins")
    queries, candidates = make_synthetic(120, n_criteria=4, seed=7, with_text=False)
    ids = queries["post_id"].unique()
    age = dict(zip(ids, np.random.default_rng(3).integers(18, 78, ids.size), strict=True))
    queries["age"] = queries["post_id"].map(age)
    q, c = tmp / "queries.csv", tmp / "candidates.csv"
    queries.to_csv(q, index=False)
    candidates.to_csv(c, index=False)
    out = tmp / "cli.json"
    assert main(["evaluate", str(q), str(c), "--cohort", "age", "--cohort-bins", "age=40,65",
                 "--cohort-filter", AGE, "--bootstrap", "0", "--out", str(out),
                 "--quiet"]) == 0
    n = int(queries["age"].between(40, 65, inclusive="left").sum())
    return ((q.name, q.read_bytes(), "text/csv"), (c.name, c.read_bytes(), "text/csv"),
            json.loads(out.read_text()), n)


def _same_as_cli(at, cli: dict, n: int) -> None:
    assert_clean(at)
    view = at.session_state[state.VIEW]
    assert view.filters == FILTER
    evaluation = view.evaluation
    assert evaluation.summary["n_queries"] == n == cli["dataset"]["n_queries"]
    assert metric(at, "Queries (post × criterion)") == f"{n:,}"
    records = {r["name"]: r for r in cli["metrics"]}
    for name in COMPARED:
        assert evaluation.record(name).value == pytest.approx(records[name]["value"],
                                                              rel=1e-12, abs=1e-15), name
    assert any(t.replace("\\", "").startswith("Evaluated: cohort age = [40, 65) (age binned "
                                              "40,65)") for t in texts(at))


def test_the_filter_offers_and_evaluates_the_chosen_bins_cohorts(files):
    queries, candidates, cli, n = files
    at = upload(open_app(QUICK), queries, candidates)
    at.switch_page("app_pages/data_source.py").run(timeout=TIMEOUT)
    at.multiselect(key=state.COHORT_COLUMNS).set_value(["age"]).run(timeout=TIMEOUT)
    assert "age = [40, 65)" not in at.multiselect(key="cohort").options  # (quartiles)
    at.text_input(key="cohort_bins_age").set_value("40,65").run(timeout=TIMEOUT)
    assert_clean(at)
    options = at.multiselect(key="cohort").options  # (shown as labels)
    assert [o for o in options if o.startswith("age")] == [
        "age = < 40", "age = [40, 65)", "age = ≥ 65"]
    at.multiselect(key="cohort").set_value([AGE]).run(timeout=TIMEOUT)
    at.switch_page("app_pages/overview.py").run(timeout=TIMEOUT)
    _same_as_cli(at, cli, n)
    # the link carries the filter with its bins: opened again, on the same data
    link = dict(at.query_params)
    assert link["cohort"] in (AGE, [AGE]) and link["cohort_bins"] in ("age=40,65",
                                                                      ["age=40,65"])
    again = upload(open_app(link, page="overview"), queries, candidates)
    again.switch_page("app_pages/overview.py").run(timeout=TIMEOUT)
    _same_as_cli(again, cli, n)
    assert again.multiselect(key="cohort").value == [AGE]
    # settings.json names the bins of its filter's values, and restores the view
    view = at.session_state[state.VIEW]
    payload = record.settings_json(view.evaluation, marks=view.marks,
                                   cohort_columns=view.cohort_columns,
                                   cohort_bins=view.cohort_bins)
    written = json.loads(payload)
    assert written["config"]["filters"]["cohort_bins"] == {"age": "40,65"}
    assert written["cohort_bins"] == {"age": "40,65"}
    fresh = upload(open_app(QUICK), queries, candidates)
    fresh.sidebar.file_uploader(key=state.SETTINGS_FILE).set_value(
        ("settings.json", payload.encode(), "application/json")).run(timeout=TIMEOUT)
    fresh.button(key="apply_settings").click().run(timeout=TIMEOUT)
    fresh.switch_page("app_pages/overview.py").run(timeout=TIMEOUT)
    _same_as_cli(fresh, cli, n)
    # a settings.json whose filter names other bins than its cohort_bins: refused whole
    contradicting = json.dumps({**written, "cohort_bins": {"age": "q3"}}).encode()
    fresh.sidebar.file_uploader(key=state.SETTINGS_FILE).set_value(
        ("settings.json", contradicting, "application/json")).run(timeout=TIMEOUT)
    fresh.button(key="apply_settings").click().run(timeout=TIMEOUT)
    shown = " ".join(str(e.value) for e in fresh.error)
    assert "age is binned 40,65 in the cohort filter, but cohort_bins gives it q3" in shown
    assert fresh.session_state[state.VIEW].filters == FILTER


def test_bins_that_no_longer_make_the_filtered_cohort_drop_it_with_a_note(files):
    queries, candidates, *_ = files
    at = upload(open_app(QUICK), queries, candidates)
    at.switch_page("app_pages/data_source.py").run(timeout=TIMEOUT)
    at.multiselect(key=state.COHORT_COLUMNS).set_value(["age"]).run(timeout=TIMEOUT)
    at.text_input(key="cohort_bins_age").set_value("40,65").run(timeout=TIMEOUT)
    at.multiselect(key="cohort").set_value([AGE]).run(timeout=TIMEOUT)
    assert at.session_state[state.VIEW].filters == FILTER
    at.text_input(key="cohort_bins_age").set_value("30,50").run(timeout=TIMEOUT)
    assert_clean(at)
    view = at.session_state[state.VIEW]
    assert view.filters == Filters() and view.cohort_bins == {"age": "30,50"}
    assert at.multiselect(key="cohort").value == []
    said = [t.replace("\\", "") for t in texts(at) if "is not a cohort of age" in t]
    assert said and "'age=[40, 65)'" in said[0] and "age binned 30,50" in said[0]
    assert "all queries" in said[0]
    beside = [str(w.value) for w in at.warning if "is not a cohort of age" in str(w.value)]
    assert len(beside) == 2  # at the top of the page, and by the bins
    # a cohort the new bins make: kept when the bins change to others that make it too
    at.multiselect(key="cohort").set_value(["age=[30, 50)"]).run(timeout=TIMEOUT)
    at.text_input(key="cohort_bins_age").set_value("20,30,50").run(timeout=TIMEOUT)
    view = at.session_state[state.VIEW]
    assert view.filters == Filters(cohorts=("age=[30, 50)",), cohort_bins={"age": "20,30,50"})
    # the bins left (the column no longer chosen): its default bins, which lack the cohort
    at.multiselect(key=state.COHORT_COLUMNS).set_value([]).run(timeout=TIMEOUT)
    assert_clean(at)
    assert at.session_state[state.VIEW].filters == Filters()
    assert any("age with its default bins" in t for t in texts(at))
