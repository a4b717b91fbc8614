"""The bins of a numeric cohort column chosen on the Data page (AppTest): the command line's
``--cohort-bins`` SPEC, checked by its own parser; the Cohorts page then shows the groups
``metrics-core evaluate --cohort age --cohort-bins age=q3`` makes of the same files, and the
choice stays across pages and in the link."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dashboard import state
from metrics_core.cli import main
from metrics_core.demo import make_synthetic
from metrics_core.errors import SettingsError
from metrics_core.settings_file import cohort_bin_items
from tests.test_app import TIMEOUT, assert_clean, open_app, table, upload

QUICK = {"bootstrap": "400"}
COHORTS_TIMEOUT = 3 * TIMEOUT


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Queries with a numeric ``age`` per post (60 distinct values: binned) and candidates."""
    tmp = tmp_path_factory.mktemp("bins")
    queries, candidates = make_synthetic(120, n_criteria=4, seed=7, with_text=False)
    ids = queries["post_id"].unique()
    age = dict(zip(ids, np.random.default_rng(3).integers(18, 78, ids.size), strict=True))
    queries["age"] = queries["post_id"].map(age)
    paths = {"queries.csv": tmp / "queries.csv", "candidates.csv": tmp / "candidates.csv"}
    queries.to_csv(paths["queries.csv"], index=False)
    candidates.to_csv(paths["candidates.csv"], index=False)
    return tmp, paths


def _cohorts(at):
    at.switch_page("app_pages/cohorts.py").run(timeout=COHORTS_TIMEOUT)
    assert_clean(at)
    return table(at, "cohort_table")


def test_age_bins_q3_give_the_groups_of_the_command_line(files):
    tmp, paths = files
    at = upload(open_app(QUICK), *((n, paths[n].read_bytes(), "text/csv")
                                   for n in ("queries.csv", "candidates.csv")))
    at.switch_page("app_pages/data_source.py").run(timeout=TIMEOUT)
    at.multiselect(key=state.COHORT_COLUMNS).set_value(["age"]).run(timeout=TIMEOUT)
    assert at.text_input(key="cohort_bins_age").value == "q4"
    quartiles = set(_cohorts(at)["value"])
    assert len(quartiles) == 4
    # a bad value: refused naming the column, the rule and the value; nothing changed
    at.switch_page("app_pages/data_source.py").run(timeout=TIMEOUT)
    at.text_input(key="cohort_bins_age").set_value("q99").run(timeout=TIMEOUT)
    error = " ".join(str(e.value) for e in at.error)
    assert "Bins of age not applied: age: quantile bins must be 2 to 20, got 'q99'" in error
    assert at.session_state[state.VIEW].cohort_bins == {}
    at.text_input(key="cohort_bins_age").set_value("q3").run(timeout=TIMEOUT)
    assert_clean(at)
    assert at.session_state[state.VIEW].cohort_bins == {"age": "q3"}
    shown = _cohorts(at)
    out = tmp / "m.json"
    assert main(["evaluate", str(paths["queries.csv"]), str(paths["candidates.csv"]),
                 "--cohort", "age", "--cohort-bins", "age=q3", "--bootstrap", "400",
                 "--out", str(out), "--quiet"]) == 0
    cli = json.loads(out.read_text())["cohorts"]
    assert len({r["value"] for r in cli}) == 3
    assert set(shown["value"]) == {r["value"] for r in cli}
    rows = {(r["value"], r["metric"]): r for r in cli}
    for row in shown.to_dict("records"):
        want = rows[(row["value"], row["metric"])]
        assert (row["n"], row["n_positive"]) == (want["n"], want["n_positive"]), row
        assert np.isclose(row["estimate"], want["estimate"], rtol=0, atol=1e-12,
                          equal_nan=True), row
    # another page and back: the same choice
    at.switch_page("app_pages/gate.py").run(timeout=TIMEOUT)
    at.switch_page("app_pages/data_source.py").run(timeout=TIMEOUT)
    assert at.text_input(key="cohort_bins_age").value == "q3"
    assert dict(at.query_params)["cohort_bins"] == "age=q3"
    # the link, in a new session on the same upload (the demo it opens on has no age: the
    # column and its bins wait for the upload): the link's bins, and the same groups
    again = upload(open_app(dict(at.query_params)),
                   *((n, paths[n].read_bytes(), "text/csv")
                     for n in ("queries.csv", "candidates.csv")))
    again.switch_page("app_pages/data_source.py").run(timeout=TIMEOUT)
    assert again.multiselect(key=state.COHORT_COLUMNS).value == ["age"]
    assert again.text_input(key="cohort_bins_age").value == "q3"
    assert again.session_state[state.VIEW].cohort_bins == {"age": "q3"}
    assert set(_cohorts(again)["value"]) == set(shown["value"])


def test_the_bins_rule_is_the_command_lines():
    assert cohort_bin_items({"age": "40, 65"}) == ("age=40, 65",)
    for bad, said in (("age=q1", "age: quantile bins must be 2 to 20, got 'q1'"),
                      ("age=65,40", "age: bin edges must be finite and increasing"),
                      ("age", "must map at most 64 numeric cohort columns")):
        with pytest.raises(SettingsError) as err:
            cohort_bin_items([bad])
        assert said in str(err.value), str(err.value)
        assert "cohort_bins" in str(err.value)


def test_settings_json_carries_the_bins_and_refuses_a_bad_one(files, tmp_path):
    """The app's settings.json writes the bins beside cohort_columns; the app refuses a bad
    one naming the field, the column and the value; ``report --settings`` bins so."""
    import zipfile

    from metrics_core.config import EvalConfig
    from metrics_core.report import decision_record as record

    _, paths = files
    at = open_app(QUICK, page="overview")
    payload = {"schema": "metrics_core_settings/1", "config": EvalConfig(gamma=0.5).to_dict(),
               "cohort_bins": {"age": "q1"}}
    at.sidebar.file_uploader(key=state.SETTINGS_FILE).set_value(
        ("settings.json", json.dumps(payload).encode(), "application/json")
    ).run(timeout=TIMEOUT)
    at.button(key="apply_settings").click().run(timeout=TIMEOUT)
    error = " ".join(str(e.value) for e in at.error)
    assert "settings.json was not applied; nothing changed." in error, error
    assert "cohort_bins" in error and "age: quantile bins must be 2 to 20" in error, error
    assert "'q1'" in error, error
    assert at.session_state[state.VIEW].config.gamma == EvalConfig().gamma
    # written by the app beside cohort_columns, and read back by report --settings
    view = at.session_state[state.VIEW]
    text = record.settings_json(view.evaluation, cohort_columns=("age",),
                                cohort_bins={"age": "q3"})
    assert json.loads(text)["cohort_bins"] == {"age": "q3"}
    settings = tmp_path / "settings.json"
    settings.write_text(text)
    archive = tmp_path / "record.zip"
    qp, cp = str(paths["queries.csv"]), str(paths["candidates.csv"])
    assert main(["report", qp, cp, "--settings", str(settings), "--out", str(archive),
                 "--format", "zip", "--quiet"]) == 0
    with zipfile.ZipFile(archive) as z:
        doc = json.loads(z.read("metrics_master.json"))
        # the record's own settings (its settings.json and its settings table) say the bins
        assert json.loads(z.read("settings.json"))["cohort_bins"] == {"age": "q3"}
        page = z.read("decision_record.html").decode().replace("<wbr>", "")
    row = page.split("<td>cohort_bins</td>")  # the settings table's row
    assert len(row) == 2 and row[1].startswith("<td>{&quot;age&quot;: &quot;q3&quot;}</td>")
    out = tmp_path / "same.json"
    bootstrap = str(json.loads(text)["config"]["bootstrap"])
    assert main(["evaluate", qp, cp, "--out", str(out), "--bootstrap", bootstrap, "--quiet",
                 "--cohort", "age", "--cohort-bins", "age=q3"]) == 0
    assert len({r["value"] for r in doc["cohorts"]}) == 3
    assert doc["cohorts"] == json.loads(out.read_text())["cohorts"]


def test_unchoosing_a_column_drops_its_bins(files):
    """A column no longer chosen takes its bins out of the settings: the link, settings.json
    and the record have none, and choosing it again starts from q4; a link's bins of a column
    it does not choose are left out too."""
    from metrics_core.report import decision_record as record

    _, paths = files
    at = upload(open_app(QUICK), *((n, paths[n].read_bytes(), "text/csv")
                                   for n in ("queries.csv", "candidates.csv")))
    at.switch_page("app_pages/data_source.py").run(timeout=TIMEOUT)
    at.multiselect(key=state.COHORT_COLUMNS).set_value(["age"]).run(timeout=TIMEOUT)
    at.text_input(key="cohort_bins_age").set_value("q3").run(timeout=TIMEOUT)
    assert at.session_state[state.MODEL][state.COHORT_BINS] == ("age=q3",)
    assert dict(at.query_params) == {**QUICK, "cohort_columns": "age",
                                     "cohort_bins": "age=q3"}
    at.multiselect(key=state.COHORT_COLUMNS).set_value([]).run(timeout=TIMEOUT)
    assert_clean(at)
    assert at.session_state[state.MODEL][state.COHORT_BINS] == ()
    assert dict(at.query_params) == QUICK
    view = at.session_state[state.VIEW]
    assert view.cohort_columns == () and view.cohort_bins == {}
    saved = json.loads(record.settings_json(view.evaluation, cohort_columns=view.cohort_columns,
                                            cohort_bins=view.cohort_bins))
    assert "cohort_bins" not in saved and "cohort_columns" not in saved
    rows = dict(record.settings_rows(view.evaluation.config, view.cohort_columns,
                                     view.cohort_bins))
    assert "cohort_bins" not in rows
    at.multiselect(key=state.COHORT_COLUMNS).set_value(["age"]).run(timeout=TIMEOUT)
    assert at.text_input(key="cohort_bins_age").value == "q4"
    assert at.session_state[state.VIEW].cohort_bins == {}
    # a link with bins of a column it does not choose: none in the settings or the link
    at = open_app({**QUICK, "cohort_bins": "age=q3"})
    assert_clean(at)
    assert at.session_state[state.MODEL][state.COHORT_BINS] == ()
    assert dict(at.query_params) == QUICK
