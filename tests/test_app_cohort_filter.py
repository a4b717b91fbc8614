"""The sidebar's cohort filter (AppTest): one cohort chosen, every page shows it, with the numbers
``metrics_core`` computes on that cohort's rows; the link, settings.json and a new session
opened from either show the same cohort (contract §9, cohorts; dashboard settings model)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from dashboard import state
from metrics_core.config import Filters
from metrics_core.demo import demo_paths
from metrics_core.evaluation.evaluator import Evaluator
from metrics_core.inputs.loading import load
from metrics_core.report import decision_record as record
from tests.test_app import TIMEOUT, assert_clean, metric, open_app, texts

#: Few resamples, so that each run is quick.
QUICK = {"bootstrap": "200"}
SITE_E = "site=site_E"
PAGES = ("gate", "per_criterion", "calibration", "cohorts", "decision", "meeting")


@pytest.fixture(scope="module")
def site_e():
    """The demo's data set and which of its queries are at site_E (read with pandas)."""
    paths = demo_paths()
    ds = load(paths.queries, paths.candidates).dataset
    q = pd.read_parquet(paths.queries).set_index(["post_id", "criterion"])
    keys = list(zip(ds.post_id, ds.criterion, strict=True))
    return ds, q["site"].loc[keys].to_numpy() == "site_E"


def _shows_site_e(at) -> None:
    assert_clean(at)
    view = at.session_state[state.VIEW]
    assert view.filters.cohorts == (SITE_E,)
    assert view.config.filters.cohorts == (SITE_E,)
    assert any(t.replace("\\_", "_").startswith("Evaluated: cohort site = site_E")
               for t in texts(at))


def test_one_cohort_on_every_page_in_the_link_and_settings_json(site_e):
    ds, at_e = site_e
    at = open_app(QUICK, page="overview")
    assert "site = site_E" in at.multiselect(key="cohort").options  # (shown as labels)
    at.multiselect(key="cohort").set_value([SITE_E]).run(timeout=TIMEOUT)
    _shows_site_e(at)
    n = int(at_e.sum())
    assert metric(at, "Queries (post × criterion)") == f"{n:,}"
    view = at.session_state[state.VIEW]
    want = Evaluator(ds.subset(at_e)).evaluate(view.config.replace(filters=Filters(),
                                                                   bootstrap=0))
    for name in ("auroc", "brier", "screening_sensitivity", "evidence_recall"):
        got = view.evaluation.record(name)
        assert got.value == pytest.approx(want.record(name).value, rel=1e-12), name
    for page in PAGES:
        at.switch_page(f"app_pages/{page}.py").run(timeout=3 * TIMEOUT)
        _shows_site_e(at)
        assert at.session_state[state.VIEW].evaluation.summary["n_queries"] == n
    at.switch_page("app_pages/overview.py").run(timeout=TIMEOUT)
    assert at.multiselect(key="cohort").value == [SITE_E]
    # the link and settings.json carry it
    link = dict(at.query_params)
    assert link["cohort"] in (SITE_E, [SITE_E])
    view = at.session_state[state.VIEW]
    payload = record.settings_json(view.evaluation, marks=view.marks)
    assert json.loads(payload)["config"]["filters"]["cohorts"] == [SITE_E]
    # a colleague opens the link: the same cohort, the same numbers
    again = open_app(link, page="per_criterion")
    _shows_site_e(again)
    assert again.multiselect(key="cohort").value == [SITE_E]
    assert again.session_state[state.VIEW].evaluation.summary["n_queries"] == n
    # settings.json restored in a new session
    fresh = open_app(QUICK, page="overview")
    assert fresh.session_state[state.VIEW].filters.cohorts == ()
    fresh.sidebar.file_uploader(key=state.SETTINGS_FILE).set_value(
        ("settings.json", payload.encode(), "application/json")).run(timeout=TIMEOUT)
    fresh.button(key="apply_settings").click().run(timeout=TIMEOUT)
    _shows_site_e(fresh)
    assert fresh.multiselect(key="cohort").value == [SITE_E]
    assert metric(fresh, "Queries (post × criterion)") == f"{n:,}"


def test_two_columns_are_their_intersection(site_e):
    ds, at_e = site_e
    q = pd.read_parquet(demo_paths().queries).set_index(["post_id", "criterion"])
    female = q["sex"].loc[list(zip(ds.post_id, ds.criterion, strict=True))].to_numpy() == "F"
    at = open_app({**QUICK, "cohort": [SITE_E, "sex=F"]}, page="overview")
    assert_clean(at)
    assert metric(at, "Queries (post × criterion)") == f"{int((at_e & female).sum()):,}"
    assert any(t.replace("\\_", "_").startswith("Evaluated: cohort site = site_E, sex = F")
               for t in texts(at))


def test_a_link_with_an_unknown_or_malformed_cohort_says_so():
    # a value the demo lacks waits for the user's data (tests/test_app_cohorts_link.py)
    at = open_app({**QUICK, "cohort": ["site=site_Z"]})  # (notes: on the link's first run)
    assert_clean(at)
    assert at.session_state[state.VIEW].filters.cohorts == ()
    assert any("cohort filter values 'site=site_Z' are not in the data shown: they wait for your "
               "data" in t for t in texts(at))
    at = open_app({**QUICK, "cohort": ["site"]})
    assert_clean(at)
    assert at.session_state[state.VIEW].filters.cohorts == ()
    assert any("must be 'column=value'" in t for t in texts(at))


def test_the_cohort_is_dropped_silently_for_data_without_cohort_columns():
    at = open_app({**QUICK, "cohort": [SITE_E]}, page="overview")
    _shows_site_e(at)
    at.radio(key=state.DEMO_VARIANT).set_value("demo_problems").run(timeout=TIMEOUT)
    assert_clean(at)
    assert at.session_state[state.VIEW].filters.cohorts == ()
    assert not any("cohort values in the link" in t for t in texts(at))
    assert list(at.multiselect(key="cohort").options) == []
    assert at.multiselect(key="cohort").disabled


def test_every_page_says_the_cohorts_size_and_the_data_page_that_its_counts_are_the_files(
        site_e):
    """Under the filter, each page's Evaluated line gives the cohort's queries, positives and
    posts (counted here with pandas on the demo's rows); the Data & audit page, whose counts
    are the whole files', says so and names the cohort the other pages show."""
    ds, _ = site_e
    q = pd.read_parquet(demo_paths().queries)
    rows = q[q["site"] == "site_E"]
    size = (f"{len(rows):,} queries ({int(rows['has_evidence'].sum()):,} with evidence) on "
            f"{rows['post_id'].nunique():,} posts")
    assert size == "2,810 queries (539 with evidence) on 281 posts"
    at = open_app({**QUICK, "cohort": SITE_E}, page="overview")
    for page in ("overview", "dynamic_k", "ranking", "per_post", "folds", "case_review",
                 "meeting"):
        at.switch_page(f"app_pages/{page}.py").run(timeout=3 * TIMEOUT)
        assert_clean(at)
        said = [t.replace("\\_", "_") for t in texts(at) if t.startswith("Evaluated:")]
        assert said and said[0].startswith(f"Evaluated: cohort site = site_E · {size}"), (
            page, said)
    at.switch_page("app_pages/data_source.py").run(timeout=TIMEOUT)
    assert_clean(at)
    assert metric(at, "Queries") == f"{ds.n_queries:,}"  # the files'
    assert any(t.replace("\\_", "_") == (
        "The counts, loader notes and audit on this page are the whole files'. The other "
        f"pages show cohort site = site_E only: {size}.") for t in texts(at))
    # without a filter the line is as it was
    plain = open_app(QUICK, page="overview")
    assert "Evaluated: all queries" in texts(plain)
