"""The "Gold labels" switch (contract §14): a setting of the settings model, in the link, that
every evidence page follows and names in its header. On the adjudicated gold every number,
interval included, is the one ``metrics-core evaluate --adjudications`` writes in its
``adjudication`` block for the same file; the original numbers stay beside them."""

from __future__ import annotations

import json

import pytest

from dashboard import display, state
from metrics_core.cli import main
from metrics_core.demo import demo_paths
from metrics_core.inputs.adjudications import to_csv
from tests.test_app import EVIDENCE_PAGES, assert_clean, open_app, table
from tests.test_app_adjudication import TIMEOUT, mark, verdicts

#: Few resamples: the intervals are computed at once (below the live 2,000) on both sides.
RESAMPLES = "300"


def gold_line(at) -> str:
    lines = [str(c.value) for c in at.caption if str(c.value).startswith("**Gold labels:")]
    assert len(lines) == 1, lines
    return lines[0]


def cli_document(tmp_path, frame, *extra) -> dict:
    """metrics-core evaluate on the demo files with the session's verdicts as a file."""
    paths = demo_paths()
    adj, out = tmp_path / "adjudications.csv", tmp_path / "metrics_master.json"
    adj.write_bytes(to_csv(frame))
    assert main(["evaluate", str(paths.queries), str(paths.candidates), "--out", str(out),
                 "--bootstrap", RESAMPLES, "--adjudications", str(adj), "--quiet",
                 *extra]) == 0
    return json.loads(out.read_text())


def records(evaluation) -> list[dict]:
    return json.loads(json.dumps([r.to_dict() for r in evaluation.records]))


@pytest.fixture(scope="module")
def marked():
    """The demo's Case review with three verdicts: a query's gold corrected, a sentence's
    gold corrected, an ambiguous query."""
    at = open_app({"bootstrap": RESAMPLES}, page="case_review")
    mark(at, "label_error")
    at.selectbox(key=state.VERDICT_TARGET).set_value(
        at.selectbox(key=state.VERDICT_TARGET).options[1])
    mark(at, "label_error", reviewer="Dr B")
    mark(at, "ambiguous")
    assert verdicts(at)["verdict"].tolist() == ["label_error", "label_error", "ambiguous"]
    return at


def test_every_page_follows_the_switch_and_the_numbers_are_the_clis(marked, tmp_path):
    at = marked
    frame = verdicts(at)
    assert gold_line(at).startswith("**Gold labels: original (the files' labels) (3 verdicts")
    original = at.session_state[state.VIEW].evaluation
    at.radio(key="gold").set_value("adjudicated").run(timeout=TIMEOUT)
    assert_clean(at)
    assert at.query_params["gold"] == "adjudicated"
    expected = cli_document(tmp_path, frame)
    for page in EVIDENCE_PAGES:
        at.switch_page(f"app_pages/{page}.py").run(timeout=TIMEOUT)
        assert_clean(at)
        assert gold_line(at) == ("**Gold labels: adjudicated (3 verdicts, 2 labels corrected); "
                                 "the original gold's numbers stay beside them.**"), page
        view = at.session_state[state.VIEW]
        assert view.source.adjudicated is not None, page
        # Every record, intervals included, is the CLI's adjudicated record.
        assert records(view.evaluation) == expected["adjudication"]["metrics"], page
    # The original numbers are never replaced: the CLI's top-level records, as before.
    assert records(original) == expected["metrics"]
    # The Overview sets both side by side with the difference.
    at.switch_page("app_pages/overview.py").run(timeout=TIMEOUT)
    shown = table(at, "overview_gold").set_index("name")
    by_name = {r["name"]: r for r in expected["metrics"]}
    adjudicated = {r["name"]: r for r in expected["adjudication"]["metrics"]}
    for name in shown.index:
        assert shown.loc[name, "original"] == display.fmt_metric(name, by_name[name]["value"])
        assert shown.loc[name, "adjudicated"] == display.fmt_metric(
            name, adjudicated[name]["value"])
    assert shown.loc["sensitivity", "original"] != shown.loc["sensitivity", "adjudicated"]


def test_ambiguous_cases_left_out_everywhere(marked, tmp_path):
    at = marked
    at.radio(key="gold").set_value("adjudicated_unambiguous").run(timeout=TIMEOUT)
    assert_clean(at)
    assert at.query_params["gold"] == "adjudicated_unambiguous"
    expected = cli_document(tmp_path, verdicts(at), "--exclude-ambiguous")
    for page in ("overview", "per_criterion", "cohorts", "decision"):
        at.switch_page(f"app_pages/{page}.py").run(timeout=TIMEOUT)
        assert_clean(at)
        assert "1 ambiguous query left out" in gold_line(at)
        view = at.session_state[state.VIEW]
        assert view.evaluation.summary["n_queries"] == \
            expected["adjudication"]["dataset"]["n_queries"]
        assert records(view.evaluation) == expected["adjudication"]["metrics"]
    # The cohorts are formed on the queries kept: the ambiguous one is in no cohort.
    at.switch_page("app_pages/data_source.py").run(timeout=TIMEOUT)
    at.multiselect(key="cohort_columns").set_value(["site"]).run(timeout=TIMEOUT)
    at.switch_page("app_pages/cohorts.py").run(timeout=3 * TIMEOUT)
    assert_clean(at)
    shown = table(at, "cohort_table")
    auroc = shown[shown["metric"] == "auroc"]
    assert int(auroc["n"].sum()) == expected["adjudication"]["dataset"]["n_queries"]


def test_the_link_carries_the_switch_and_the_file_brings_the_numbers_back(marked):
    at = marked
    at.radio(key="gold").set_value("adjudicated").run(timeout=TIMEOUT)
    want = records(at.session_state[state.VIEW].evaluation)
    content = to_csv(verdicts(at))
    link = dict(at.query_params)
    # (the cohort columns an earlier test of this session chose are a setting of the link too)
    assert {k: v for k, v in link.items() if k != "cohort_columns"} == {
        "bootstrap": RESAMPLES, "gold": "adjudicated"}
    # A colleague opens the link: the switch is set, but the verdicts are the file's to bring.
    fresh = open_app(link, page="case_review")
    assert_clean(fresh)
    assert fresh.radio(key="gold").value == "adjudicated"
    assert gold_line(fresh) == "**Gold labels: original (no verdict yet).**"
    assert any("no verdict on these data yet" in str(w.value) for w in fresh.warning)
    fresh.file_uploader(key=state.ADJ_UPLOAD).set_value(
        ("adjudications.csv", content, "text/csv"))
    fresh.run(timeout=TIMEOUT)
    assert_clean(fresh)
    assert dict(fresh.query_params) == link
    assert gold_line(fresh).startswith("**Gold labels: adjudicated (3 verdicts")
    assert records(fresh.session_state[state.VIEW].evaluation) == want
    # Back to the original gold: the original numbers, unchanged.
    fresh.radio(key="gold").set_value("original").run(timeout=TIMEOUT)
    assert "gold" not in fresh.query_params
    assert fresh.session_state[state.VIEW].source.adjudicated is None
