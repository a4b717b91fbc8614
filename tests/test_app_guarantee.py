"""Decision support's guarantee mode: the guaranteed threshold shown is the library's, "Set the
gate" moves the slider and marks it found on data (exploratory) with the guarantee in the
record's text, and the workload line compares it with the finder's threshold."""

from __future__ import annotations

import numpy as np
import pytest

from dashboard import guarantee_view, state
from metrics_core.metrics import decision, risk_control
from tests.test_app import assert_clean, metric, open_app, texts


@pytest.fixture(scope="module")
def demo():
    from metrics_core.demo import demo_paths
    from metrics_core.inputs import loading as mio

    paths = demo_paths()
    return mio.load(paths.queries, paths.candidates).dataset


def test_guarantee_mode_sets_the_gate_with_a_guarantee(demo):
    at = open_app(page="decision")
    at.selectbox(key="finder_target").set_value(("screening_sensitivity", ">=")).run()
    at.number_input(key="finder_value").set_value(0.99).run()
    at.toggle(key="guarantee_mode").set_value(True).run()
    assert_clean(at)
    want = risk_control.guarantee(demo, ["screening_sensitivity>=0.99"], delta=0.1)[0]
    assert metric(at, "Guaranteed τ_neg") == f"{want.value:.4f}"
    plain, _ = decision.find_threshold(demo.y, demo.p, "screening_sensitivity>=0.99")
    shown = "\n".join(texts(at))
    assert guarantee_view.workload(demo.p, "tau_neg", want.value, plain) in shown
    assert "exchangeable" in shown and "does not say that every batch" in shown
    at.button(key="guarantee_apply").click().run()
    assert_clean(at)
    assert at.session_state[state.MODEL]["gate"][0] == pytest.approx(want.value)
    assert at.session_state[state.PROVENANCE]["tau_neg"] == state.EXPLORATORY
    note = at.session_state[state.GUARANTEE_SET]
    assert note["value"] == want.value and "with a guarantee" in note["text"]
    assert "δ = 0.1" in note["text"] and "calibration data: all queries" in note["text"]
    assert guarantee_view.record_sentence(note, at.session_state[state.MODEL]["gate"]) \
        == " " + note["text"]


def test_the_record_states_the_guarantee_while_the_gate_holds_it(demo):
    """The sentence "Set the gate" stores goes into the decision record's thresholds line
    (the page's ``_html``) while the gate holds the guaranteed value, and not once it moved."""
    from metrics_core.config import EvalConfig
    from metrics_core.report import Evaluator
    from metrics_core.report import decision_record as record

    r = risk_control.guarantee(demo, ["alert_precision>=0.9"], delta=0.1,
                               calibrate_on="split=TUNE")[0]
    note = {"parameter": "tau_pos", "value": r.value,
            "text": f"τ_pos {r.value:.6g} was found on data with a guarantee: {r.statement}. "
                    f"δ = {r.delta:g}; calibration data: {r.calibration}; method: {r.method}."}
    sentence = guarantee_view.record_sentence(note, (0.1, r.value))
    assert sentence == " " + note["text"]
    assert guarantee_view.record_sentence(note, (0.1, r.value + 0.01)) == ""
    assert guarantee_view.record_sentence(None, (0.1, r.value)) == ""
    evaluation = Evaluator(demo).evaluate(EvalConfig(bootstrap=0))
    html = record.render_html(evaluation, thresholds="Thresholds: …." + sentence)
    assert "was found on data with a guarantee" in html and "split TUNE" in html
    assert "Learn-then-Test: Bonferroni over a fixed grid of 100 thresholds" in html


def test_guarantee_mode_calibrates_on_tune_and_shows_the_held_out_value(demo):
    at = open_app(page="decision")
    at.selectbox(key="finder_target").set_value(("alert_precision", ">=")).run()
    at.number_input(key="finder_value").set_value(0.9).run()
    at.toggle(key="guarantee_mode").set_value(True).run()
    at.selectbox(key="guarantee_calibrate").set_value("split=TUNE").run()
    at.number_input(key="guarantee_delta").set_value(0.2).run()
    assert_clean(at)
    want = risk_control.guarantee(demo, ["alert_precision>=0.9"], delta=0.2,
                                  calibrate_on="split=TUNE")[0]
    assert metric(at, "Guaranteed τ_pos") == f"{want.value:.4f}"
    assert metric(at, f"Held out ({want.held_out['n']:,})") == f"{want.held_out['value']:.4f}"


def test_workload_line_by_hand():
    p = np.array([0.1, 0.2, 0.3, 0.4])
    # τ_neg 0.25 clears 2 of 4 (500 per 1,000), the finder's 0.35 clears 3 (750)
    assert guarantee_view.workload(p, "tau_neg", 0.25, 0.35) == (
        "500.0 per 1,000 auto-cleared (NEG) at the guaranteed threshold, 750.0 at the "
        "finder's threshold (0.3500): 250.0 per 1,000 more sent to review")


def test_guarantee_mode_per_criterion_splits_delta(demo):
    at = open_app(page="decision")
    at.selectbox(key="finder_target").set_value(("screening_sensitivity", ">=")).run()
    at.number_input(key="finder_value").set_value(0.95).run()
    at.toggle(key="finder_by_criterion").set_value(True).run()
    at.toggle(key="guarantee_mode").set_value(True).run()
    assert_clean(at)
    want = risk_control.guarantee(demo, ["screening_sensitivity>=0.95"], delta=0.1,
                                  by="criterion")
    shown = at.get_by_key("guarantee_table").dataframe[0].value
    assert list(shown["subset"]) == [r.subset for r in want]
    assert shown["tau_neg"].tolist() == pytest.approx(
        [np.nan if r.value is None else r.value for r in want], nan_ok=True)
    assert shown["delta_each"].tolist() == pytest.approx([0.1 / len(want)] * len(want))
