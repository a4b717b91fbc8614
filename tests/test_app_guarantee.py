"""Decision support's guarantee mode: the guaranteed threshold shown is the library's, "Set the
gate" moves the slider and marks it guaranteed (its own provenance mark, with the target, δ, the
calibration data and the method) on every page's thresholds line, in the link, settings.json and
the record, a later move makes it exploratory, and the workload line compares it with the
finder's threshold."""

from __future__ import annotations

import re

import numpy as np
import pytest

from dashboard import guarantee_view, provenance, state
from metrics_core.metrics import decision, risk_control
from tests.test_app import assert_clean, metric, open_app, texts


@pytest.fixture(scope="module")
def demo():
    from metrics_core.demo import demo_paths
    from metrics_core.inputs import loading as mio

    paths = demo_paths()
    return mio.load(paths.queries, paths.candidates).dataset


def _unescaped(text) -> str:
    """Text as shown (Markdown's escapes removed)."""
    return re.sub(r"\\(.)", r"\1", str(text))


def _line(at) -> str:
    return next(_unescaped(c.value) for c in at.caption
                if str(c.value).startswith("Thresholds:"))


def test_guarantee_mode_sets_the_gate_with_a_guarantee(demo):
    """Set the gate: τ_neg takes the guaranteed value (six decimals, rounded down so that no
    calibration positive falls below it), marked guaranteed with its target, δ and
    calibration data on the thresholds line, in the link and in settings.json."""
    import json

    from metrics_core.report import decision_record as record

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
    tau = at.session_state[state.MODEL]["gate"][0]
    assert tau == risk_control.floor_threshold(want.value, "tau_neg") <= want.value
    assert want.value - tau < 1e-6
    # the positives missed at the set value are those missed at the guaranteed one
    pos = demo.p[demo.y == 1]
    assert int((pos < tau).sum()) == int((pos < want.value).sum())
    assert at.session_state[provenance.PROVENANCE] == {"tau_neg": state.GUARANTEED}
    mark = at.session_state[provenance.GUARANTEES]["tau_neg"]
    assert mark == risk_control.ThresholdGuarantee(
        "screening_sensitivity>=0.99", 0.1, 1, "all", demo.n_queries)
    assert _line(at).startswith(
        f"Thresholds: τ_neg {tau:g} (guaranteed: screening_sensitivity>=0.99, δ 0.1, "
        f"calibrated on all queries); τ_pos 0.6 (pre-specified);")
    assert dict(at.query_params) == {
        "gate": f"{tau:g},0.6",
        "guaranteed": f"tau_neg;screening_sensitivity>=0.99;0.1;1;all;{demo.n_queries}"}
    view = at.session_state[state.VIEW]
    saved = json.loads(record.settings_json(view.evaluation, marks=view.marks,
                                            guarantees=view.guarantees))
    assert saved["provenance"]["tau_neg"] == "guaranteed"
    assert saved["guarantees"] == {"tau_neg": {
        "target": "screening_sensitivity>=0.99", "delta": 0.1, "tests": 1, "delta_each": 0.1,
        "calibration": "all", "n_calibration": demo.n_queries,
        "method": "Learn-then-Test: fixed-sequence testing over the observed thresholds (the "
                  "risk grows with τ_neg), Hoeffding–Bentkus p-values (binomial tail)"}}
    # Meeting mode's thresholds line says the same
    at.switch_page("app_pages/meeting.py").run()
    assert_clean(at)
    assert "(guaranteed: screening_sensitivity>=0.99, δ 0.1" in _line(at)
    # moving the gate's other end leaves τ_neg guaranteed; moving τ_neg makes it exploratory
    at.slider(key="gate").set_value((tau, 0.7)).run()
    assert at.session_state[provenance.PROVENANCE] == {"tau_neg": state.GUARANTEED,
                                                  "tau_pos": state.EXPLORATORY}
    at.slider(key="gate").set_value((0.05, 0.7)).run()
    assert_clean(at)
    assert at.session_state[provenance.PROVENANCE] == {"tau_neg": state.EXPLORATORY,
                                                  "tau_pos": state.EXPLORATORY}
    assert at.session_state[provenance.GUARANTEES] == {}
    assert _line(at).startswith("Thresholds: τ_neg 0.05 (exploratory); τ_pos 0.7 "
                                "(exploratory);")
    assert dict(at.query_params) == {"gate": "0.05,0.7", "explored": "tau_neg,tau_pos"}


def test_a_link_carries_the_guarantee_and_a_broken_one_is_exploratory(demo):
    g = risk_control.ThresholdGuarantee("alert_precision>=0.9", 0.2, 4, "split=TUNE", 812)
    at = open_app({"gate": "0.05,0.71", "guaranteed": g.link("tau_pos")}, page="overview")
    assert_clean(at)
    assert at.session_state[provenance.GUARANTEES] == {"tau_pos": g}
    assert _line(at).startswith(
        "Thresholds: τ_neg 0.05 (pre-specified); τ_pos 0.71 (guaranteed: "
        "alert_precision>=0.9, δ 0.2 over 4 guarantees, calibrated on split TUNE);")
    # a target that sets τ_neg cannot guarantee τ_pos: noted, and τ_pos is exploratory
    at = open_app({"gate": "0.05,0.71",
                   "guaranteed": "tau_pos;screening_sensitivity>=0.99;0.1;1;all;10"})
    assert at.session_state[provenance.PROVENANCE] == {"tau_pos": state.EXPLORATORY}
    shown = _unescaped("\n".join(texts(at)))
    assert "is not a valid guarantee: screening_sensitivity>=0.99 sets tau_neg, not " \
           "tau_pos; tau_pos counts as exploratory" in shown


def test_a_settings_file_carries_the_guarantee():
    import json

    from dashboard import sidebar
    from metrics_core.config import EvalConfig

    g = risk_control.ThresholdGuarantee("screening_fn_per_1000<=5", 0.05, 1, "fold=2", 300)
    payload = {"schema": "metrics_core_settings/1",
               "config": EvalConfig(tau_neg=0.04, bootstrap=0).to_dict(),
               "provenance": {"tau_neg": "guaranteed", "gamma": "exploratory"},
               "guarantees": {"tau_neg": g.to_dict()}}
    values, (explored, guaranteed), error = sidebar.settings_verdict(
        json.dumps(payload).encode(), "s.json", {})
    assert error is None and explored == ("gamma",) and guaranteed == {"tau_neg": g}
    assert values["gate"] == (0.04, 0.6)
    # a guaranteed mark needs its guarantee, and a guarantee needs its mark
    bad = dict(payload, guarantees={})
    _, marks, error = sidebar.settings_verdict(json.dumps(bad).encode(), "s.json", {})
    assert marks == ((), {}) and "provenance.tau_neg" in error
    assert "is 'guaranteed' but guarantees has no tau_neg" in error
    bad = dict(payload, guarantees={"tau_neg": dict(g.to_dict(), delta=1.5)})
    _, _, error = sidebar.settings_verdict(json.dumps(bad).encode(), "s.json", {})
    assert "guarantees.tau_neg" in error and "delta must be a number within (0, 1)" in error


def test_the_record_states_the_guarantee(demo):
    """The decision record's section: the guarantee, δ, the calibration data, the method."""
    from metrics_core.config import EvalConfig
    from metrics_core.report import Evaluator
    from metrics_core.report import decision_record as record

    r = risk_control.guarantee(demo, ["alert_precision>=0.9"], delta=0.1,
                               calibrate_on="split=TUNE")[0]
    g = risk_control.ThresholdGuarantee.of(r)
    assert (g.calibration, g.tests, g.n_calibration) == ("split=TUNE", 1, r.n_calibration)
    evaluation = Evaluator(demo).evaluate(EvalConfig(tau_pos=r.value, bootstrap=0))
    html = record.render_html(evaluation, marks={"tau_pos": "guaranteed"},
                              guarantees={"tau_pos": g})
    assert "Thresholds with a guarantee" in html
    assert (f"τ_pos = {r.value:g} was found on data with a guarantee: the probability that "
            f"false alerts among alerts on new queries exceeds 0.1 (alert_precision&gt;=0.9) "
            f"is at most 0.1, over the draw of the calibration data (split TUNE, "
            f"{r.n_calibration:,} queries") in html
    assert "Learn-then-Test: Bonferroni over a fixed grid of 100 thresholds" in html
    assert '&quot;tau_pos&quot;: &quot;guaranteed&quot;' in html
    # two set one at a time: each δ is its own, jointly at most their sum
    g_neg = risk_control.ThresholdGuarantee("screening_sensitivity>=0.99", 0.05, 1, "all", 10)
    both = record.render_html(evaluation, marks={"tau_pos": "guaranteed",
                                                 "tau_neg": "guaranteed"},
                              guarantees={"tau_pos": g, "tau_neg": g_neg})
    assert ("These 2 guarantees were computed separately: the chance that at least one of "
            "them fails is at most the sum of their δ (0.15).") in both
    assert "computed separately" not in html
    # no mark, no section
    assert "Thresholds with a guarantee" not in record.render_html(
        evaluation, guarantees={"tau_pos": g})


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
    # Set each criterion's τ_neg: its own guaranteed threshold (rounded down), τ_pos the
    # overall gate's; criteria with none keep the overall gate; the gates marked guaranteed
    # with δ split over all queries and every criterion
    at.button(key="guarantee_apply_per_criterion").click().run()
    assert_clean(at)
    expected = tuple(sorted(
        (r.subset.removeprefix("criterion "),
         min(risk_control.floor_threshold(r.value, "tau_neg"), 0.6), 0.6)
        for r in want[1:] if r.value is not None))
    assert expected and at.session_state[state.MODEL]["criterion_gates"] == expected
    assert at.session_state[provenance.PROVENANCE] == {"criterion_gates": state.GUARANTEED}
    mark = at.session_state[provenance.GUARANTEES]["criterion_gates"]
    assert mark == risk_control.ThresholdGuarantee(
        "screening_sensitivity>=0.95", 0.1, len(want), "all", demo.n_queries)
    assert mark.delta_each == pytest.approx(0.1 / len(want))
    assert (f"{len(expected)} per-criterion gate(s) (guaranteed: "
            f"screening_sensitivity>=0.95, δ 0.1 over {len(want)} guarantees, calibrated on "
            "all queries)") in _line(at)
    assert mark.sentence("criterion_gates").startswith(
        "The per-criterion gates' τ_neg was found on data with a guarantee")
    assert (f"δ is split evenly over the {len(want)} guarantees computed together "
            f"({0.1 / len(want):.3g} each), so the chance that any of them fails is at most "
            "0.1") in mark.sentence("criterion_gates")
    # the gates now hold each criterion's value: the per-criterion evaluation uses them
    cfg = at.session_state[state.VIEW].config
    assert cfg.criterion_gates == expected


def test_guarantee_mode_says_when_no_threshold_can_be_guaranteed(demo):
    """Sensitivity ≥ 0.9999 at δ 0.1 needs 23,025 positives with no miss: the demo has fewer,
    so the page says so with the smallest n that could, and offers no button."""
    at = open_app(page="decision")
    at.selectbox(key="finder_target").set_value(("screening_sensitivity", ">=")).run()
    at.number_input(key="finder_value").set_value(0.9999).run()
    at.toggle(key="guarantee_mode").set_value(True).run()
    assert_clean(at)
    want = risk_control.guarantee(demo, ["screening_sensitivity>=0.9999"], delta=0.1)[0]
    n_pos = int(demo.y.sum())
    assert want.value is None and want.n_needed == 23_025 and n_pos < 23_025
    warned = [_unescaped(w.value) for w in at.warning]
    assert (f"No τ_neg can be guaranteed: no threshold can be guaranteed at this n ({n_pos} "
            f"positives): at least 23025 positives are needed, with no miss among them."
            ) in warned
    assert not [b for b in at.button if b.key == "guarantee_apply"]


def test_a_data_switch_keeps_the_value_and_drops_the_guarantee():
    """A guarantee was computed on the data shown: switching the data (another demo, an
    upload) keeps the threshold's value and makes it exploratory, with a note naming the
    guarantee, on the thresholds line, in the link, settings.json and the record alike; the
    same data (another page, a new session on the link) keep it guaranteed."""
    import json

    from dashboard import data
    from metrics_core.report import decision_record as record
    from tests.conftest import random_frames
    from tests.test_app import upload

    g = risk_control.ThresholdGuarantee("screening_sensitivity>=0.99", 0.1, 1, "all", 14770)
    link = {"gate": "0.0312,0.6", "guaranteed": g.link("tau_neg"), "bootstrap": "400"}
    at = open_app(link, page="overview")
    at.switch_page("app_pages/gate.py").run()
    assert_clean(at)
    assert at.session_state[provenance.GUARANTEES] == {"tau_neg": g}
    assert dict(at.query_params) == link

    def dropped(at):
        assert_clean(at)
        assert at.session_state[state.MODEL]["gate"] == (0.0312, 0.6)
        assert at.session_state[provenance.PROVENANCE] == {"tau_neg": state.EXPLORATORY}
        assert at.session_state[provenance.GUARANTEES] == {}
        assert _line(at).startswith("Thresholds: τ_neg 0.0312 (exploratory); τ_pos 0.6 "
                                    "(pre-specified);")
        assert dict(at.query_params) == {"gate": "0.0312,0.6", "explored": "tau_neg",
                                         "bootstrap": "400"}
        view = at.session_state[state.VIEW]
        saved = json.loads(record.settings_json(view.evaluation, marks=view.marks,
                                                guarantees=view.guarantees))
        assert saved["provenance"]["tau_neg"] == "exploratory"
        assert "guarantees" not in saved
        assert _line(at).startswith(provenance.describe_thresholds(
            view.config, view.marks, view.guarantees) + ".")
        shown = _unescaped("\n".join(texts(at)))
        assert ("τ_neg was set with a guarantee (screening_sensitivity>=0.99, δ 0.1, "
                "calibrated on all queries) on the data shown before; on these data it keeps "
                "its value and is exploratory") in shown, shown

    at.radio(key=state.DEMO_VARIANT).set_value(data.DEMO_PROBLEMS).run()
    dropped(at)
    # from the demo to an upload
    at = open_app(link, page="gate")
    assert at.session_state[provenance.GUARANTEES] == {"tau_neg": g}
    q, c = random_frames(n_posts=40, seed=5)
    dropped(upload(at, ("queries.csv", q.to_csv(index=False).encode(), "text/csv"),
                   ("candidates.csv", c.to_csv(index=False).encode(), "text/csv")))
