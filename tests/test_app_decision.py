"""The Decision support page: targets, the threshold finder (which moves the sliders) and the
decision curve, all equal to what metrics_core computes."""

from __future__ import annotations

import pytest

from dashboard import state
from metrics_core.config import EvalConfig
from metrics_core.metrics import decision
from tests.test_app import assert_clean, open_app, table


@pytest.fixture(scope="module")
def demo():
    from metrics_core.demo import demo_paths
    from metrics_core.inputs import loading as mio
    from metrics_core.report import Evaluator

    paths = demo_paths()
    return Evaluator(mio.load(paths.queries, paths.candidates).dataset)


def test_decision_page_shows_targets_and_curve(demo):
    at = open_app(page="decision")
    assert_clean(at)
    want = demo.evaluate(EvalConfig())  # intervals on by default
    shown = table(at, "targets_table")
    assert list(shown["metric"]) == list(want.targets["metric"])
    assert list(shown["status"]) == list(want.targets["status"])
    # each target's n is its denominator (it was 14,770 for every row)
    n = dict(zip(shown["metric"], shown["n"], strict=True))
    assert (n["screening_sensitivity"], n["alert_precision"]) == (1379, 1028)
    assert n["screening_fn_per_1000"] == n["auroc"] == 14770
    # the decision curve's table is drawn only when asked for, with the computed curve
    with pytest.raises(KeyError):
        at.get_by_key("decision_curve_table")
    at.session_state["decision_curve_table_open"] = True
    at.run()
    assert_clean(at)
    curve = table(at, "decision_curve_table")
    point = decision.decision_curve(demo.ds.y, demo.ds.p)
    assert len(curve) == len(point)
    for column in ("threshold", "net_benefit", "net_benefit_treat_all"):
        assert list(curve[column]) == pytest.approx(list(point[column]), rel=0, abs=1e-12)


def test_finder_result_moves_the_gate_slider(demo):
    at = open_app(page="decision")
    at.selectbox(key="finder_target").set_value(("screening_sensitivity", ">=")).run()
    at.number_input(key="finder_value").set_value(0.99).run()
    value, _ = decision.find_threshold(demo.ds.y, demo.ds.p, "screening_sensitivity>=0.99")
    at.button(key="finder_apply").click().run()
    assert_clean(at)
    assert at.session_state[state.MODEL]["gate"][0] == pytest.approx(value)


def test_a_session_holding_an_upload_is_released_when_its_tab_closes(monkeypatch):
    """Uploads mark the session not resumable, so closing the tab shuts it down and frees its
    files at once (Streamlit otherwise keeps a closed tab's session for reconnection)."""
    from dashboard import upload
    from tests.test_app import open_app

    marked = []

    def mark(session_id):
        marked.append(session_id)
        return True

    monkeypatch.setattr(upload, "_mark_nonresumable", mark)
    at = open_app()
    assert marked == []  # the demo alone holds nothing uploaded
    at.file_uploader(key="upload_queries").set_value(
        ("q.csv", b"post_id,criterion,has_evidence,p_has_evidence\np,A,1,0.5\n", "text/csv")
    ).run()
    assert len(marked) == 1
    at.run()
    assert len(marked) == 1  # once per session
    assert upload.release_on_close.__doc__


def test_back_to_the_demo_resets_an_upload_filter_without_a_link_warning():
    from tests.conftest import random_frames
    from tests.test_app import open_app

    q, c = random_frames(n_posts=20, seed=1)
    q["fold"] = q["fold"] + 10  # folds the demo does not have
    at = open_app()
    at.file_uploader(key="upload_queries").set_value(
        ("q.csv", q.to_csv(index=False).encode(), "text/csv")).run()
    at.file_uploader(key="upload_candidates").set_value(
        ("c.csv", c.to_csv(index=False).encode(), "text/csv")).run()
    at.button(key="load_upload").click().run()
    at.selectbox(key="fold").set_value("12").run()
    assert at.session_state["fold"] == "12"
    at.button(key="use_demo").click().run()
    assert at.session_state["fold"] == "all"
    # no note about a link that was never used: the switch says it reset the fold
    assert [(w.value, w.icon) for w in at.warning] == [
        ("fold='12', chosen for the previous data, is not in this data set; showing all.",
         ":material/swap_horiz:")]


def test_the_triage_demo_is_its_own_section_without_evidence_settings():
    from tests.test_app import open_triage_demo

    at = open_app(page="gate")
    assert list(at.sidebar.slider)  # the evidence demo has the gate settings...
    at = open_triage_demo()
    assert_clean(at)
    assert not list(at.sidebar.slider)  # ...the triage demo has none
    assert at.session_state["_view"].source.loaded is None


def test_edited_targets_drive_the_table_and_the_link(demo):
    at = open_app(page="decision")
    with pytest.raises(KeyError):  # the closed section draws no editor
        at.text_area(key="targets_editor")
    at.session_state["targets_editor_open"] = True
    at.run()
    at.text_area(key="targets_editor").set_value("auroc>=0.99\nece<0.5").run()
    assert_clean(at)
    shown = table(at, "targets_table")
    assert list(shown["metric"]) == ["auroc", "ece"]
    assert shown["status"].iloc[0] == "not met"  # demo AUROC 0.98
    assert at.query_params["targets"] == ["auroc>=0.99", "ece<0.5"]
    at.text_area(key="targets_editor").set_value("auroc is high").run()
    assert any("not of the form" in e.value for e in at.error)
    assert list(table(at, "targets_table")["metric"]) == ["auroc", "ece"]  # unchanged


def test_per_criterion_finder_sets_each_criterions_gate(demo):
    at = open_app(page="decision")
    at.selectbox(key="finder_target").set_value(("screening_sensitivity", ">=")).run()
    at.number_input(key="finder_value").set_value(0.9).run()
    at.toggle(key="finder_by_criterion").set_value(True).run()
    found = table(at, "finder_table")
    want = decision.tune(demo.ds, ["screening_sensitivity>=0.9"], by="criterion")
    assert list(found["tau_neg"]) == pytest.approx([r.value for r in want])
    at.button(key="finder_apply_per_criterion").click().run()
    assert_clean(at)
    gates = {g[0]: g[1] for g in at.session_state[state.MODEL]["criterion_gates"]}
    assert gates == pytest.approx({r.subset.removeprefix("criterion "): r.value
                                   for r in want[1:]}, abs=1e-6)
    run = at.session_state["_view"].evaluation
    first = demo.ds.criteria[0]
    crit = demo.ds.criterion_code == 0
    assert ((demo.ds.p[crit] < gates[first]) == (run.states[crit] == 0)).all()
    assert "per-criterion gate(s) (exploratory)" in " ".join(
        c.value for c in at.caption).replace("\\_", "_")


def test_prevalence_table_reprojects_the_gate(demo):
    at = open_app(page="decision")
    at.number_input(key="deployment_prevalence").set_value(0.02).run()
    assert_clean(at)
    shown = table(at, "prevalence_table")
    from metrics_core.metrics.gate import states_to_prediction

    want = decision.reproject(demo.ds.y, states_to_prediction(
        demo.evaluate(EvalConfig(bootstrap=0)).states), 0.02)
    assert list(shown["at 0.020"]) == pytest.approx(list(want["deployment"]))


def test_nested_check_of_a_found_threshold(demo):
    at = open_app(page="decision")
    at.selectbox(key="finder_target").set_value(("screening_sensitivity", ">=")).run()
    at.number_input(key="finder_value").set_value(0.95).run()
    assert_clean(at)
    with pytest.raises(KeyError):  # the closed section computes and draws nothing
        at.get_by_key("finder_nested_table")
    at.session_state["finder_nested_open"] = True
    at.run()
    assert_clean(at)
    shown = table(at, "finder_nested_table").set_index("held_out")
    want = decision.nested_summary(demo.ds, "screening_sensitivity>=0.95", "folds")
    assert shown.loc["pooled", "achieved"] == pytest.approx(
        want.set_index("held_out").loc["pooled", "achieved"])
    at.radio(key="finder_nested").set_value("split").run()
    shown = table(at, "finder_nested_table").set_index("held_out")
    assert "split TEST" in shown.index
    for open_ in (False, True):  # closed (its radio not drawn) and opened again
        at.session_state["finder_nested_open"] = open_
        at.run()
    assert at.radio(key="finder_nested").value == "split"
    assert "split TEST" in table(at, "finder_nested_table").set_index("held_out").index
