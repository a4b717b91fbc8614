"""The Cohorts page and the cohort choice on the Data page (AppTest): on the demo, site's
planted disparity at site_E is shown flagged, with the numbers metrics_core computes."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from dashboard import state
from metrics_core.config import EvalConfig
from metrics_core.demo import demo_paths
from metrics_core.report import decision_record as record
from tests.test_app import TIMEOUT, assert_clean, open_app, table, texts

#: The Cohorts page computes every cohort's intervals (2,000 resamples) on its first run.
COHORTS_TIMEOUT = 3 * TIMEOUT


def _choose(at, columns):
    at.switch_page("app_pages/data_source.py").run(timeout=TIMEOUT)
    assert_clean(at)
    at.multiselect(key="cohort_columns").set_value(columns).run(timeout=TIMEOUT)
    at.switch_page("app_pages/cohorts.py").run(timeout=COHORTS_TIMEOUT)
    assert_clean(at)
    return at


def test_cohorts_page_asks_for_columns_first_and_offers_them_itself():
    at = open_app(page="cohorts")
    assert_clean(at)
    asked = next(t for t in texts(at) if "Choose cohort columns above" in t)
    assert "site, sex, age_band" in asked.replace("\\_", "_")
    chooser = at.multiselect(key="cohort_columns")
    assert {"site", "sex", "age_band", "site*sex"} <= set(chooser.options)
    assert chooser.value == []
    # chosen on the Cohorts page: the page shows them, and the Data page's chooser (the same
    # setting) says the same
    chooser.set_value(["site"]).run(timeout=COHORTS_TIMEOUT)
    assert_clean(at)
    assert set(table(at, "cohort_table")["column"]) == {"site"}
    at.switch_page("app_pages/data_source.py").run(timeout=TIMEOUT)
    assert_clean(at)
    assert at.multiselect(key="cohort_columns").value == ["site"]
    assert at.query_params.get("cohort_columns") in (["site"], "site")


def test_data_page_offers_the_demo_cohort_columns_and_the_page_shows_them():
    at = open_app(page="data_source")
    options = at.multiselect(key="cohort_columns").options
    assert {"site", "sex", "age_band"} <= set(options)
    at = _choose(at, ["site", "sex"])
    shown = table(at, "cohort_table")
    assert set(shown["column"]) == {"site", "sex"}
    flagged = shown[shown["flagged"].astype(bool)]
    assert "site_E" in set(flagged["value"])
    assert any("disparity(ies) flagged" in t for t in texts(at))
    # one line per flagged cohort, the cohort named first, its count of flagged metrics
    alert = next(e.value for e in at.error if "disparity(ies) flagged" in e.value)
    cohorts = flagged.groupby(["column", "value"], sort=False).size()
    assert f"{len(flagged)} disparity(ies) flagged in {len(cohorts)} cohort(s)" in alert
    lines = [line for line in alert.splitlines() if line.startswith("- **")]
    assert len(lines) == len(cohorts)
    site_e = f"- **site = site_E** ({cohorts[('site', 'site_E')]}): "
    assert any(line.replace("\\_", "_").startswith(site_e) for line in lines), lines
    # the page says its resamples (the live 2,000) and the documents' (the run's number)
    exported = f"{EvalConfig().bootstrap:,}"
    assert any("Intervals from 2,000 resamples of posts" in t
               and f"use the run's {exported} resamples" in t for t in texts(at))
    # the numbers are metrics_core's: AUROC at site_E on its own rows
    from sklearn.metrics import roc_auc_score

    from metrics_core.demo import demo_paths
    from metrics_core.inputs.loading import load

    paths = demo_paths()
    loaded = load(paths.queries, paths.candidates)
    import pandas as pd

    q = pd.read_parquet(paths.queries)
    ds = loaded.dataset
    site = q.set_index(["post_id", "criterion"])["site"]
    at_e = site.loc[list(zip(ds.post_id, ds.criterion, strict=True))].to_numpy() == "site_E"
    row = shown[(shown["value"] == "site_E") & (shown["metric"] == "auroc")].iloc[0]
    assert np.isclose(row["estimate"], roc_auc_score(ds.y[at_e], ds.p[at_e]))
    weak = table(at, "weak_segments_table")
    assert len(weak) and "segment" in weak.columns
    # the choice survives a visit to another page
    at.switch_page("app_pages/overview.py").run(timeout=TIMEOUT)
    at.switch_page("app_pages/cohorts.py").run(timeout=TIMEOUT)
    assert set(table(at, "cohort_table")["column"]) == {"site", "sex"}


# ------------------------------------------------- the cohort columns: a setting like the others
#: Few resamples (the link sets it): the Cohorts page's intervals in seconds.
QUICK = {"bootstrap": "400"}
CHOSEN = ["site", "site*sex"]


def _cohorts_page(at) -> pd.DataFrame:
    at.switch_page("app_pages/cohorts.py").run(timeout=COHORTS_TIMEOUT)
    assert_clean(at)
    return table(at, "cohort_table")


def _apply(at, payload: bytes) -> None:
    at.sidebar.file_uploader(key=state.SETTINGS_FILE).set_value(
        ("settings.json", payload, "application/json")).run(timeout=TIMEOUT)
    at.button(key="apply_settings").click().run(timeout=TIMEOUT)


def test_the_cohort_columns_survive_pages_the_link_and_settings_json():
    """Chosen on the Data page (a column and an intersection): the same choice and the same
    Cohorts page after a visit to another page, in a new session opened from the link, and in
    a new session that restored the view's settings.json; the record says them."""
    at = open_app(QUICK, page="data_source")
    at.multiselect(key="cohort_columns").set_value(CHOSEN).run(timeout=TIMEOUT)
    assert_clean(at)
    shown = _cohorts_page(at)
    assert list(dict.fromkeys(shown["column"])) == CHOSEN
    assert {"site_E*F", "site_E*M"} <= set(shown["value"])
    # another page, then back
    at.switch_page("app_pages/gate.py").run(timeout=TIMEOUT)
    assert at.session_state[state.VIEW].cohort_columns == tuple(CHOSEN)
    pd.testing.assert_frame_equal(_cohorts_page(at), shown)
    at.switch_page("app_pages/data_source.py").run(timeout=TIMEOUT)
    assert at.multiselect(key="cohort_columns").value == CHOSEN
    # the link, opened in a new session
    address = dict(at.query_params)
    assert address == {**QUICK, "cohort_columns": CHOSEN}
    again = open_app(address, page="data_source")
    assert again.multiselect(key="cohort_columns").value == CHOSEN
    pd.testing.assert_frame_equal(_cohorts_page(again), shown)
    # settings.json, restored in a new session
    view = at.session_state[state.VIEW]
    payload = record.settings_json(view.evaluation, marks=view.marks,
                                   guarantees=view.guarantees,
                                   cohort_columns=view.cohort_columns)
    assert json.loads(payload)["cohort_columns"] == CHOSEN
    fresh = open_app(page="cohorts")
    assert fresh.session_state[state.VIEW].cohort_columns == ()
    _apply(fresh, payload.encode())
    assert fresh.session_state[state.VIEW].cohort_columns == tuple(CHOSEN)
    assert dict(fresh.query_params) == address
    pd.testing.assert_frame_equal(_cohorts_page(fresh), shown)
    # the record's settings table and its settings file say them
    page = record.settings_rows(view.evaluation.config, view.cohort_columns)
    assert ("cohort_columns", json.dumps(CHOSEN)) in page


def test_a_settings_file_naming_a_column_the_data_lack_is_refused_in_words():
    at = open_app(QUICK, page="overview")
    payload = {"schema": "metrics_core_settings/1", "config": EvalConfig(gamma=0.5).to_dict(),
               "cohort_columns": ["site", "region"]}
    _apply(at, json.dumps(payload).encode())
    assert_clean(at)
    error = " ".join(str(e.value) for e in at.error)
    assert ("settings.json was not applied; nothing changed. cohort_columns: "
            "must name cohort columns of these data: site, sex, age_band, or two of them "
            "joined by '*' (e.g. site*sex); got 'region'") in error.replace("\\", ""), error
    view = at.session_state[state.VIEW]
    assert view.cohort_columns == () and view.config.gamma == EvalConfig().gamma
    # a malformed one: the rule, in words
    payload["cohort_columns"] = "site"
    _apply(at, json.dumps(payload).encode())
    error = " ".join(str(e.value) for e in at.error)
    assert "cohort_columns: must be a list of at most 64 cohort column names" in error, error


def test_a_link_naming_a_column_the_demo_lacks_keeps_it_waiting_with_a_note():
    """A column of the user's data (the demo, where a new session opens, lacks it) waits for
    the upload: the others are chosen, the note names it, the link keeps it
    (tests/test_app_cohorts_link.py follows it to the upload)."""
    at = open_app({**QUICK, "cohort_columns": ["region", "site"]}, page="cohorts")
    assert_clean(at)
    assert at.session_state[state.VIEW].cohort_columns == ("site",)
    notes = " ".join(str(w.value) for w in at.warning).replace("\\", "")
    assert ("The link's cohort columns 'region' are not in the data shown: they wait for your "
            "data.") in notes, notes
    assert set(table(at, "cohort_table")["column"]) == {"site"}
    assert dict(at.query_params) == {**QUICK, "cohort_columns": ["site", "region"]}


def test_the_exported_document_has_the_cohort_tables_the_command_line_writes(tmp_path):
    """metrics_master.json from the app (the sidebar's download and the record's zip) with a
    cohort column chosen holds the cohort tables ``metrics-core evaluate --cohort`` writes with
    the same settings (the run's resamples, not the page's live ones); the view's own run,
    which other sessions of the demo share, stays without them."""
    from dashboard import data
    from metrics_core.cli import main
    from metrics_core.demo import demo_paths

    at = open_app(QUICK, page="data_source")
    at.multiselect(key="cohort_columns").set_value(["site"]).run(timeout=TIMEOUT)
    assert_clean(at)
    view = at.session_state[state.VIEW]
    doc = json.loads(data.exported_evaluation(view).to_json())
    assert "cohorts" not in json.loads(view.evaluation.to_json())
    paths = demo_paths()
    out = tmp_path / "metrics_master.json"
    assert main(["evaluate", str(paths.queries), str(paths.candidates), "--out", str(out),
                 "--bootstrap", "400", "--cohort", "site", "--quiet"]) == 0
    cli = json.loads(out.read_text())
    assert doc["config"]["bootstrap"] == 400
    assert {r["column"] for r in doc["cohorts"]} == {"site"}
    for name in ("metrics", "cohorts", "cohort_equalised_odds", "weak_segments"):
        assert doc[name] == cli[name], name


def test_the_forest_plot_names_the_cohorts_it_leaves_out_and_its_reference_under_a_filter():
    """Criterion A.3 only (four of the demo's site × age band cells have no A.3 evidence):
    their AUROC is undefined, not drawn, and the caption names them; the dotted line is the value on
    the data shown, which the caption says is criterion A.3's."""
    at = open_app({"bootstrap": "200", "criterion": "A.3", "cohort_columns": "site*age_band"},
                  page="cohorts")
    at.switch_page("app_pages/cohorts.py").run(timeout=COHORTS_TIMEOUT)
    assert_clean(at)
    assert at.selectbox(key=state.COHORT_METRIC).value == "auroc"
    q = pd.read_parquet(demo_paths().queries)
    a3 = q[q["criterion"] == "A.3"]
    cells = a3.groupby(["site", "age_band"])["has_evidence"].agg(["sum", "size"])
    one_class = [f"site*age_band = {s}*{a}" for s, a in
                 cells.index[(cells["sum"] == 0) | (cells["sum"] == cells["size"])]]
    assert len(one_class) == 4  # AUROC undefined there
    figure = json.loads(at.get("plotly_chart")[0].proto.spec)
    drawn = [y for trace in figure["data"] for y in trace["y"]]
    assert not set(one_class) & set(drawn) and len(drawn) == len(cells) - 4
    caption = next(t.replace("\\", "") for t in texts(at) if "Each cohort with" in t)
    assert "the value on the data shown (criteria A.3)" in caption
    assert ("Not drawn, AUROC undefined (a 0/0 ratio or only one class in the cohort): "
            + ", ".join(one_class) + ".") in caption


def test_a_flagged_small_cell_says_it_is_small():
    """At site_E (the cohort filter), the women aged 80+ (150 queries, 16 with evidence: a
    small cell) and the men aged 65-79 (24 with evidence) have flagged disparities: the page's
    alert says each cell is small, with its counts; the women aged 65-79 (240 queries, 59 with
    evidence) are flagged without it."""
    at = open_app({"bootstrap": "200", "cohort": "site=site_E",
                   "cohort_columns": "sex*age_band"}, page="cohorts")
    at.switch_page("app_pages/cohorts.py").run(timeout=COHORTS_TIMEOUT)
    assert_clean(at)
    q = pd.read_parquet(demo_paths().queries)
    cell = q[(q["site"] == "site_E") & (q["sex"] == "F") & (q["age_band"] == "80+")]
    assert (len(cell), int(cell["has_evidence"].sum())) == (150, 16)
    alert = next(e.value for e in at.error if "disparity(ies) flagged" in e.value)
    lines = [line.replace("\\", "") for line in alert.splitlines() if line.startswith("- **")]
    small = [line for line in lines if "F*80+" in line]
    assert len(small) == 1 and small[0].endswith(
        "(a small cell: 150 queries, 16 with evidence)"), lines
    men = [line for line in lines if "M*65-79" in line]  # 160 queries, 24 with evidence
    assert len(men) == 1 and men[0].endswith("(a small cell: 160 queries, 24 with evidence)")
    larger = [line for line in lines if "F*65-79" in line]  # 240 queries, 59 with evidence
    assert len(larger) == 1 and "small cell" not in larger[0]
