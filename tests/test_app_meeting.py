"""The Overview as a meeting's first page and Meeting mode: every target judged on its interval
(met / not met / undecided, point estimate only without one, not computed with the reason),
the headline numbers a clinician asks about, the ROC with its band, plain cells, and the
thresholds line with its provenance.

Expected values come from ``Evaluator(...).evaluate(config)`` and the library's targets table
(metrics_core.targets), independently of the app.
"""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from dashboard import display
from metrics_core import registry
from metrics_core.config import EvalConfig
from metrics_core.demo import demo_paths
from metrics_core.evaluation.result import MetricRecord
from metrics_core.inputs import loading as mio
from metrics_core.report import Evaluator
from metrics_core.targets import target_table
from tests.test_app import TIMEOUT, assert_clean, metric, open_app, table


@pytest.fixture(scope="module")
def demo_evaluator():
    paths = demo_paths()
    return Evaluator(mio.load(paths.queries, paths.candidates).dataset)


# -------------------------------------------------------------- verdicts, hand-worked
def _evaluation(records, targets):
    by_name = {r.name: r for r in records}

    def record(name):
        return by_name[name]

    return SimpleNamespace(targets=target_table(records, targets),
                           config=SimpleNamespace(targets=tuple(targets)), record=record)


def _rec(name, value, ci=None, n=100, defined=True):
    return MetricRecord(name=name, value=value, subset="all_queries", n=n, ci95=ci,
                        defined=defined)


def test_each_target_is_judged_on_its_whole_interval():
    records = [_rec("auroc", 0.90, (0.86, 0.93)),            # whole interval >= 0.85: met
               _rec("auprc", 0.56, (0.50, 0.61)),            # straddles 0.55: undecided
               _rec("sensitivity", 0.50, (0.45, 0.54)),      # whole interval < 0.55: not met
               _rec("ece", 0.04),                             # no interval: not judged
               _rec("brier", 0.12, (0.11, 0.13)),            # "<": whole interval misses
               _rec("mcc", None, n=0, defined=False)]        # undefined: not computed
    targets = ("auroc>=0.85", "auprc>=0.55", "sensitivity>=0.55", "ece<0.05", "brier<0.1",
               "mcc>=0.3", "f1>=0.5")                         # f1 is not in the run
    frame = display.verdict_frame(_evaluation(records, targets)).set_index("metric")
    assert frame["verdict"].to_dict() == {
        "auroc": "met", "auprc": "undecided", "sensitivity": "not met",
        "ece": "point estimate only", "brier": "not met", "mcc": "not computed",
        "f1": "not computed"}
    # The library's own table calls the straddling AUPRC "met by the point estimate, not by
    # the whole interval" and the ECE "met by the point estimate (no interval)"; neither is
    # reported as met here.
    assert frame.loc["auroc", "shown"] == "0.900"
    assert frame.loc["auroc", "ci95"] == "[0.860, 0.930]"
    assert frame.loc["auroc", "target"] == "≥ 0.85"
    assert frame.loc["brier", "target"] == "< 0.1"
    assert frame.loc["ece", "detail"].startswith("the point estimate clears it; no 95% interval")
    assert frame.loc["mcc", "detail"] == "undefined: no queries in this subset"
    assert frame.loc["f1", "detail"] == "not computed in this run"
    assert frame.loc["mcc", "shown"] == "—"
    assert display.verdict_summary(frame.reset_index()) == (
        "1 of 7 targets met, 2 not met, 1 undecided, 1 point estimate only, 2 not computed.")


def test_an_interval_ending_on_the_target_follows_the_operator():
    records = [_rec("auroc", 0.90, (0.85, 0.95)), _rec("ece", 0.04, (0.03, 0.05))]
    frame = display.verdict_frame(_evaluation(records, ("auroc>=0.85", "ece<0.05")))
    assert list(frame["verdict"]) == ["met", "undecided"]  # 0.85 >= 0.85; 0.05 < 0.05 fails


def test_a_one_class_convention_value_is_not_judged():
    records = [_rec("auroc", 0.5, None, defined=False)]  # one-class AUROC 0.5 by convention
    frame = display.verdict_frame(_evaluation(records, ("auroc>=0.45",)))
    assert frame["verdict"].tolist() == ["not computed"]
    assert "only one class" in frame["detail"].iloc[0]


def test_verdict_lines_carry_a_badge_the_numbers_and_the_target():
    records = [_rec("auroc", 0.90, (0.86, 0.93)), _rec("auprc", 0.56, (0.50, 0.61))]
    lines = display.verdict_lines(display.verdict_frame(
        _evaluation(records, ("auroc>=0.85", "auprc>=0.55"))))
    # The undecided one first (the misses lead), then the met one.
    assert lines[0].startswith(":orange-badge[:material/help: undecided] **AUPRC**")
    assert lines[1].startswith(":green-badge[:material/check_circle: met] **AUROC** 0.900 "
                               "\\[0.860, 0.930\\] · target ≥ 0.85")


# ---------------------------------------------------------------------------- the app
def test_the_overview_opens_with_the_verdicts_then_the_headline_numbers(demo_evaluator):
    at = open_app({"ci": "0"})  # intervals switched off: the point-estimate-only verdicts
    assert_clean(at)
    want = demo_evaluator.evaluate(EvalConfig(bootstrap=0))
    assert at.subheader[0].value == "Does the model meet its targets?"
    lines = [m.value for m in at.get_by_key("overview_verdicts").markdown]
    assert len(lines) == len(want.targets)
    status = dict(zip(want.targets["metric"], want.targets["status"], strict=True))
    labels = {registry.label(m): m for m in want.targets["metric"]}
    by_metric = {labels[re.search(r"\*\*(.+?)\*\*", line).group(1)]: line for line in lines}
    # The misses first: not met, then met, then the targets without an interval.
    assert [line.split("]")[0].split(": ")[-1] for line in lines][:3] == [
        "not met", "met", "met"]
    g = want.gate
    lo, hi = g.ci("screening_sensitivity")
    assert hi < 0.995 and status["screening_sensitivity"] == "not met"
    assert by_metric["screening_sensitivity"].startswith(
        f":red-badge[:material/cancel: not met] **Screening sensitivity** "
        f"{g.screening_sensitivity:.3f} \\[{lo:.3f}, {hi:.3f}\\] · target ≥ 0.995")
    assert status["alert_precision"] == "met (whole interval)"
    assert "green-badge[:material/check_circle: met] **Alert precision**" in \
        by_metric["alert_precision"]
    # Bootstrap off: AUROC has only its point estimate, and is not called met.
    assert by_metric["auroc"].startswith(
        ":gray-badge[:material/radio_button_unchecked: point estimate only] **AUROC**")
    assert "bootstrap intervals are off" in by_metric["auroc"]
    summary = at.markdown[0].value
    assert summary.startswith("2 of 8 targets met, 1 not met, 5 point estimate only.")
    # The headline tiles, in the order a clinician asks.
    labels = [m.label for m in at.metric]
    assert labels[:7] == ["Screening sensitivity", "Alert precision", "AUROC",
                          "Evidence recall", "Auto-cleared (NEG)", "Sent to review (UNCERTAIN)",
                          "Alerts (POS)"]
    assert metric(at, "Screening sensitivity") == f"{g.screening_sensitivity:.3f}"
    assert metric(at, "Auto-cleared (NEG)") == f"{g.neg_rate * 100:.1f}%"
    assert metric(at, "Sent to review (UNCERTAIN)") == f"{g.uncertain_rate * 100:.1f}%"
    assert metric(at, "Alerts (POS)") == f"{g.pos_rate * 100:.1f}%"
    assert metric(at, "AUROC") == f"{want.record('auroc').value:.3f}"
    assert metric(at, "Evidence recall") == f"{want.record('evidence_recall').value:.3f}"
    captions = [c.value for c in at.caption]
    assert f"95% CI [{lo:.3f}, {hi:.3f}]; n = {g.n_pos:,} queries with evidence" in captions
    lo_u, hi_u = g.ci("uncertain_rate")
    assert f"{g.count_uncertain:,} of {g.n:,} queries; 95% CI [{lo_u * 100:.1f}%, " \
           f"{hi_u * 100:.1f}%]" in captions
    # The ROC, without a band while bootstrap is off (and said so).
    assert any("No 95% band" in c for c in captions)


def test_the_overview_judges_every_target_once_intervals_are_on(demo_evaluator):
    at = open_app()
    at.number_input(key="bootstrap").set_value(200)
    at.toggle(key="ci").set_value(True).run(timeout=TIMEOUT)
    assert_clean(at)
    want = demo_evaluator.evaluate(EvalConfig(bootstrap=200))
    verdicts = [m.value for m in at.get_by_key("overview_verdicts").markdown]
    assert not any("point estimate only" in line for line in verdicts)
    lo, hi = want.record("auroc").ci95
    assert lo >= 0.85
    auroc = next(line for line in verdicts if "**AUROC**" in line)
    assert auroc.startswith(f":green-badge[:material/check_circle: met] **AUROC** "
                            f"{want.record('auroc').value:.3f} \\[{lo:.3f}, {hi:.3f}\\]")
    assert any(c.value == "The markers are the operating points of τ_neg, τ_pos and τ. The "
               "shaded band is the pointwise 95% bootstrap band." for c in at.caption)


def test_metric_cells_say_the_queries_not_the_protocol_formula():
    at = open_app()
    frame = table(at, "headline_table").set_index("metric")
    cells = set(frame["computed_on"])
    assert not any(s in c for c in cells for s in ("|TopK", "÷", "trec_eval", "positives_only",
                                                   "all_queries", "softmax"))
    assert frame.loc["recall@10", "computed_on"] == "queries with evidence"
    assert frame.loc["auroc", "computed_on"] == "all queries"
    assert frame.loc["screening_sensitivity", "computed_on"] == \
        "all queries at τ_neg=0.1, τ_pos=0.6"
    assert frame.loc["recall@10", "variant"].startswith("precision |TopK ∩ Gold| / K")


def test_meeting_mode_shows_the_thresholds_line_and_target_badges(demo_evaluator):
    at = open_app({"ci": "0"}, page="meeting")
    assert_clean(at)
    captions = [c.value for c in at.caption]
    assert any(c.startswith("Thresholds: τ\\_neg 0.1 (pre-specified); τ\\_pos 0.6 "
                            "(pre-specified)") for c in captions)
    tiles = {m.label: m for m in at.metric}
    sens = tiles["Screening sensitivity"].proto
    assert sens.delta == "not met: target ≥ 0.995"
    assert tiles["Alert precision"].proto.delta == "met: target ≥ 0.9"
    assert tiles["Mean K"].proto.delta == "no target"
    lines = [m.value for m in at.get_by_key("meeting_verdicts").markdown]
    assert lines[0] == "**Targets:** 2 of 8 targets met, 1 not met, 5 point estimate only."
    # The line follows the meeting's own slider.
    at.slider(key="gate").set_value((0.05, 0.6)).run(timeout=TIMEOUT)
    assert_clean(at)
    assert any(c.value.startswith("Thresholds: τ\\_neg 0.05 (exploratory); τ\\_pos 0.6 "
                                  "(pre-specified)") for c in at.caption)
    g = demo_evaluator.evaluate(EvalConfig(bootstrap=0, tau_neg=0.05)).gate
    assert metric(at, "Screening sensitivity") == f"{g.screening_sensitivity:.3f}"


# ------------------------------------------------------------- plain page text
def _strings(node) -> list[str]:
    """Every string a page's main area holds (element protos: texts, labels, help, options)."""
    out = []
    proto = getattr(node, "proto", None)
    if proto is not None and not hasattr(node, "children"):
        out.append(str(proto))
    for child in getattr(node, "children", {}).values():
        out += _strings(child)
    return out


@pytest.mark.parametrize("page", ["overview", "gate", "dynamic_k", "ranking", "calibration",
                                  "per_criterion", "per_post", "folds", "case_review",
                                  "decision", "meeting", "data_source", "glossary", "rag"])
def test_no_page_cites_a_document(page):
    at = open_app(page=page)
    assert_clean(at)
    shown = "\n".join(_strings(at.main))
    for reference in ("contract §", "§", "CONTRACT.md", "docs/", "seed 00"):
        assert reference not in shown, (page, reference)


def test_the_audit_cites_no_document():
    from metrics_core.inputs.audit import audit

    paths = demo_paths()
    loaded = mio.load(paths.problems_queries, paths.problems_candidates)
    messages = [f.message for f in audit(loaded.dataset, loaded=loaded).findings]
    assert messages
    assert not [m for m in messages if "§" in m or "contract" in m]


# ------------------------------------------------------------------ calibration words
def _calibration(slope, intercept, ece, targets=("ece<0.05",)):
    records = [_rec("calibration_slope", *slope), _rec("calibration_intercept", *intercept),
               _rec("ece", *ece)]
    return _evaluation(records, targets)


def test_well_calibrated_only_when_every_interval_says_so():
    well, text = display.calibration_verdict(_calibration(
        (1.02, (0.95, 1.09)), (0.01, (-0.05, 0.07)), (0.02, (0.015, 0.03))))
    assert well and text.startswith("Well calibrated: the calibration slope's 95% interval "
                                    "holds 1, the intercept's holds 0, and ECE 0.020 [0.015, "
                                    "0.030] against its target < 0.05: met.")


def test_a_slope_above_one_is_not_well_calibrated_whatever_the_ece():
    # The demo's numbers: slope 1.68 [1.59, 1.77], intercept -0.58 [-0.66, -0.50], ECE 0.035.
    well, text = display.calibration_verdict(_calibration(
        (1.68, (1.59, 1.77)), (-0.58, (-0.66, -0.50)), (0.035, (0.03, 0.04))))
    assert not well
    assert text == ("Not well calibrated. Predicted risks are too modest, not spread enough "
                    "(calibration slope above 1): 1.680 [1.590, 1.770], ideal 1; and too high "
                    "on average (calibration intercept below 0): -0.580 [-0.660, -0.500], "
                    "ideal 0. ECE 0.035 [0.030, 0.040] against its target < 0.05: met.")


def test_too_extreme_risks_and_an_ece_without_interval():
    well, text = display.calibration_verdict(_calibration(
        (0.7, (0.6, 0.8)), (0.0, (-0.1, 0.1)), (0.03,)))
    assert not well
    assert "too extreme (calibration slope below 1): 0.700 [0.600, 0.800]" in text
    assert text.endswith("ECE 0.030 against its target < 0.05: point estimate only.")


def test_the_calibration_page_follows_the_slope_interval(demo_evaluator):
    at = open_app({"ci": "0"}, page="calibration")
    assert_clean(at)
    ev = demo_evaluator.evaluate(EvalConfig(bootstrap=0))
    lo, hi = ev.record("calibration_slope").ci95
    assert lo > 1  # the demo's slope interval lies above 1
    assert not at.success
    warning = at.warning[0].value
    assert warning.startswith("Not well calibrated. Predicted risks are too modest")
    assert f"[{lo:.3f}, {hi:.3f}]" in warning
    shown = "\n".join(_strings(at.main))
    # before: "ECE band (...): **well calibrated**." beside the slope's interval above 1
    assert not re.search(r"(?<!not )well calibrated", shown, flags=re.IGNORECASE)
    # the ECE band and, bootstrap off, where its intervals are switched on: one caption
    assert any(c.value.startswith("ECE alone: below 0.05 (point estimate, no interval).")
               and c.value.endswith("\n\nECE, MCE and Brier get their bootstrap intervals when "
                                    "*Compute bootstrap CIs* is on (under *Uncertainty*).")
               for c in at.caption)


def test_the_record_judges_the_targets_as_the_pages_do(demo_evaluator):
    from metrics_core.report import decision_record as record

    evaluation = demo_evaluator.evaluate(EvalConfig(bootstrap=0))
    page = record.render_html(evaluation)
    targets = page.split("<h2>Targets</h2>", 1)[1].split("<h2>", 1)[0]
    assert "2 of 8 targets met, 1 not met, 5 point estimate only." in targets
    verdicts = display.verdict_frame(evaluation)
    for r in verdicts.to_dict("records"):
        assert f"<td>{r['verdict']}</td>" in targets
    assert "met (whole interval)" not in targets  # the library's wording is not mixed in


def test_the_overview_roc_draws_its_curve_in_the_band_colour():
    from metrics_core.metrics.classification import roc_points
    from metrics_core.report.figures.curves import CURVE_COLOUR, roc_figure

    curve = roc_points([0, 0, 1, 1], [0.1, 0.4, 0.35, 0.8])
    fig = roc_figure(curve, auroc=0.75)
    line = next(t for t in fig.data if t.name == "ROC (AUROC 0.750)")
    assert line.line.color == CURVE_COLOUR == "#4c78a8"  # before: the theme's red


def test_the_decision_page_gives_the_same_verdicts(demo_evaluator):
    at = open_app(page="decision")
    assert_clean(at)
    shown = table(at, "targets_table")
    # intervals on by default: the verdicts of the configured resamples
    want = display.verdict_frame(demo_evaluator.evaluate(EvalConfig()))
    assert list(shown["verdict"]) == list(want["verdict"])
    assert "point estimate only" not in set(shown["verdict"])
    order = list(at.get_by_key("targets_table").dataframe[0].proto.column_order)
    assert "verdict" in order and "status" not in order


def test_the_gate_card_gives_the_same_verdicts(demo_evaluator):
    at = open_app(page="gate")
    assert_clean(at)
    tiles = {m.label: m.proto for m in at.metric}
    assert tiles["Screening sensitivity"].delta == "not met: target ≥ 0.995"
    assert tiles["Alert precision"].delta == "met: target ≥ 0.9"  # before: "met (whole ..."
    at.session_state["gate_card_table_open"] = True
    at.run(timeout=TIMEOUT)
    card = table(at, "gate_card_table").set_index("metric")
    assert card.loc["screening_sensitivity", "result"] == "not met"
    assert card.loc["alert_precision", "result"] == "met"


def test_no_targets_is_said_so():
    frame = display.verdict_frame(_evaluation([_rec("auroc", 0.9)], ()))
    assert frame.empty and list(frame.columns)[:2] == ["label", "verdict"]
    assert display.verdict_summary(frame) == "No targets set."
    assert display.verdict_lines(frame) == []


def test_the_overview_draws_its_roc_with_vega_lite_not_plotly(demo_evaluator):
    """The first page a visitor opens needs no plotly in the browser: its ROC is the Gate
    page's Vega-Lite chart, with the curve's AUROC in its legend, the 95% band and the
    operating points of the view's gate."""
    import json

    import pyarrow as pa

    from dashboard import state

    at = open_app(page="overview")
    assert_clean(at)
    assert at.get("plotly_chart") == []
    (chart,) = at.get("vega_lite_chart")
    spec = json.loads(chart.proto.spec)
    assert spec["title"]["text"] == "ROC curve (all queries)"
    frames = {d.name: pa.ipc.open_stream(d.data.data).read_all().to_pandas()
              for d in chart.proto.datasets}
    view = at.session_state[state.VIEW]
    auroc = view.evaluation.record("auroc").value
    assert abs(auroc - demo_evaluator.evaluate(EvalConfig()).record("auroc").value) < 1e-12
    assert set(frames["curve"]["series"]) == {f"ROC (AUROC {auroc:.3f})"}
    assert {"band", "points"} <= set(frames)  # intervals on by default: the band is drawn
    want = {label: conf.fpr for label, conf in view.operating_points.items()}
    assert len(frames["points"]) == len(want) == 3
    assert sorted(frames["points"]["x"]) == pytest.approx(sorted(want.values()), abs=1e-12)
