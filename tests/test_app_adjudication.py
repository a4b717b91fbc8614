"""Case review's verdicts in the app (contract §14): marking cases, the count left, the
adjudication file downloaded and uploaded again (the same verdicts, the same numbers), a bad
file refused naming its line, and the adjudicated numbers equal to the library's (and so to
``metrics-core evaluate --adjudications``) for the same file."""

from __future__ import annotations

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from dashboard import display, state
from metrics_core.config import EvalConfig
from metrics_core.demo import demo_paths
from metrics_core.evaluation.adjudicated import evaluate_adjudicated
from metrics_core.inputs.adjudications import read_adjudications, to_csv
from metrics_core.run import open_run
from tests.test_app import APP, table

#: Seconds a run may take: a few pages on a loaded machine (the Decision support page among them).
TIMEOUT = 180


def case_review() -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.run(timeout=TIMEOUT)
    at.switch_page("app_pages/case_review.py").run(timeout=TIMEOUT)
    assert not at.exception
    return at


def mark(at: AppTest, verdict: str, *, reviewer: str = "Dr A", note: str = "") -> None:
    at.radio(key=state.VERDICT_CHOICE).set_value(verdict)
    at.text_input(key=state.VERDICT_REVIEWER).set_value(reviewer)
    at.text_input(key=state.VERDICT_NOTE).set_value(note)
    at.button(key=state.VERDICT_SAVE).click().run(timeout=TIMEOUT)
    assert not at.exception and not at.error


def verdicts(at: AppTest) -> pd.DataFrame:
    return at.session_state[state.ADJ_VERDICTS]["demo"]


def captions(at: AppTest) -> list[str]:
    return [str(c.value) for c in at.caption]


@pytest.fixture(scope="module")
def demo_run():
    paths = demo_paths()
    return open_run(paths.queries, paths.candidates)


def test_marking_cases_counts_down_and_shows_the_adjudicated_numbers(demo_run):
    at = case_review()
    total = next(c for c in captions(at) if "cases left to review" in c)
    n = int(total.split(" of ")[1].split(" ")[0].replace(",", ""))
    assert total.startswith(f"**{n:,} of {n:,} cases left")
    mark(at, "label_error", note="no evidence in this post")
    mark(at, "model_error")
    mark(at, "ambiguous", reviewer="Dr B")
    assert f"**{n - 3:,} of {n:,} cases left to review** (3 with a verdict)." in captions(at)
    frame = verdicts(at)
    assert frame["verdict"].tolist() == ["label_error", "model_error", "ambiguous"]
    assert frame["corrected_has_evidence"].tolist() == ["0", "", ""]  # missed positives: y = 1
    assert frame["reviewer"].tolist() == ["Dr A", "Dr A", "Dr B"]
    assert len(set(frame["post_id"] + frame["criterion"])) == 3  # three different cases
    # The numbers beside each other are the library's for the same file.
    adj = read_adjudications(to_csv(frame), demo_run.dataset)
    lib = evaluate_adjudicated(demo_run.evaluator, adj, EvalConfig(bootstrap=0))
    shown = table(at, "adjudicated").set_index("name")
    for name in shown.index:
        assert shown.loc[name, "original"] == display.fmt_metric(
            name, lib.original.record(name).value)
        assert shown.loc[name, "adjudicated"] == display.fmt_metric(
            name, lib.adjudicated.record(name).value)
    assert shown.loc["sensitivity", "adjudicated"] != shown.loc["sensitivity", "original"]
    # Review first: the library's suggestions, as listed.
    at.segmented_control(key="case_kind").set_value("suggested").run(timeout=TIMEOUT)
    assert not at.exception
    from metrics_core.evaluation.adjudicated import review_suggestions

    top = review_suggestions(demo_run.evaluator, demo_run.evaluator.evaluate(
        EvalConfig(bootstrap=0))).head(3)
    assert at.selectbox(key="case_query").options[:3] == [
        f"{p} · {c}" for p, c in zip(top["post_id"], top["criterion"], strict=True)]
    at.segmented_control(key="case_kind").set_value("missed_positives").run(timeout=TIMEOUT)
    # The Decision support page draws with the verdicts (its record adds their section).
    at.switch_page("app_pages/decision.py").run(timeout=TIMEOUT)
    assert not at.exception
    at.switch_page("app_pages/case_review.py").run(timeout=TIMEOUT)
    # The filter shows what is left, then a verdict's cases.
    at.selectbox(key=state.CASE_REVIEWED).set_value("label_error").run(timeout=TIMEOUT)
    assert at.selectbox(key="case_query").options == [
        f"{frame['post_id'][0]} · {frame['criterion'][0]}"]


def test_the_adjudication_file_round_trips_through_download_and_upload():
    at = case_review()
    mark(at, "label_error", note="=1+1, a note with a comma")
    mark(at, "acceptable")
    at.selectbox(key=state.VERDICT_TARGET).set_value(
        at.selectbox(key=state.VERDICT_TARGET).options[1])
    mark(at, "label_error", reviewer="Dr C")  # a sentence's gold
    before = verdicts(at)
    assert before["corrected_is_gold"].tolist()[2] in ("0", "1")
    # The bytes the page's download button sends (adjudication.download_bytes).
    assert at.get_by_key(state.ADJ_DOWNLOAD) is not None
    content = to_csv(before)
    fresh = case_review()
    fresh.file_uploader(key=state.ADJ_UPLOAD).set_value(
        ("adjudications.csv", content, "text/csv"))
    fresh.run(timeout=TIMEOUT)
    assert not fresh.exception and not fresh.error
    pd.testing.assert_frame_equal(verdicts(fresh), before)
    assert any("Read 3 verdicts" in str(s.value) for s in fresh.success)
    pd.testing.assert_frame_equal(table(fresh, "adjudicated"), table(at, "adjudicated"))


def test_a_bad_file_is_refused_naming_its_line_and_keeps_the_verdicts():
    at = case_review()
    mark(at, "model_error")
    before = verdicts(at)
    bad = b"post_id,criterion,verdict\nnope,A.1,model_error\n"
    at.file_uploader(key=state.ADJ_UPLOAD).set_value(("adj.csv", bad, "text/csv"))
    at.run(timeout=TIMEOUT)
    errors = [str(e.value) for e in at.error]
    assert any("adj.csv: column 'post_id': no such query" in e and "line 2" in e
               for e in errors), errors
    pd.testing.assert_frame_equal(verdicts(at), before)


def test_meeting_mode_marks_its_cases_into_the_same_verdicts(demo_run):
    """Meeting mode shows the Review first cases one at a time with the same verdict form:
    a verdict given there is Case review's, and the gold switch there applies it."""
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    at.run(timeout=TIMEOUT)
    at.switch_page("app_pages/meeting.py").run(timeout=TIMEOUT)
    at.segmented_control(key="meeting_chart").set_value("Cases to review").run(timeout=TIMEOUT)
    assert not at.exception
    from metrics_core.evaluation.adjudicated import review_suggestions

    top = review_suggestions(demo_run.evaluator, demo_run.evaluator.evaluate(
        EvalConfig(bootstrap=0)))
    first = top.iloc[0]
    assert at.selectbox(key="meeting_case").value == 0
    assert any(c.startswith(f"**{len(top):,} of {len(top):,} cases left to review**")
               for c in captions(at))
    mark(at, "label_error", reviewer="Dr M")
    frame = verdicts(at)
    assert frame[["post_id", "criterion", "verdict", "reviewer"]].values.tolist() == [
        [first["post_id"], first["criterion"], "label_error", "Dr M"]]
    assert frame["corrected_has_evidence"].tolist() == [str(1 - int(first["has_evidence"]))]
    assert at.selectbox(key="meeting_case").value == 1  # on to the next case
    assert any(c.startswith(f"**{len(top) - 1:,} of {len(top):,} cases left")
               for c in captions(at))
    # Case review lists the same verdict.
    at.switch_page("app_pages/case_review.py").run(timeout=TIMEOUT)
    at.segmented_control(key="case_kind").set_value("suggested").run(timeout=TIMEOUT)
    listed = table(at, "case_table")
    assert listed.loc[(listed["post_id"] == first["post_id"])
                      & (listed["criterion"] == first["criterion"]), "verdict"].tolist() == [
        "label_error"]
    # The gold switch drawn in Meeting mode applies it there.
    at.switch_page("app_pages/meeting.py").run(timeout=TIMEOUT)
    at.radio(key="gold").set_value("adjudicated").run(timeout=TIMEOUT)
    assert not at.exception
    lib = evaluate_adjudicated(demo_run.evaluator,
                               read_adjudications(to_csv(frame), demo_run.dataset),
                               EvalConfig(bootstrap=0))
    shown = at.session_state[state.VIEW].evaluation
    assert [(r.name, r.value) for r in shown.records] == [
        (r.name, r.value) for r in lib.adjudicated.records]
