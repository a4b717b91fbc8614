"""Typed thresholds, per-criterion gates and the pre-specified / exploratory marks."""

from __future__ import annotations

import pytest

from dashboard import state
from metrics_core.config import EvalConfig
from metrics_core.demo import demo_paths
from metrics_core.evaluation.evaluator import Evaluator
from metrics_core.inputs.loading import load
from tests.test_app import open_app, texts, upload, upload_files  # noqa: F401


def box(at, label: str):
    """The typed box of a threshold (its key carries a generation: found by its label)."""
    return next(n for n in at.number_input if n.label == f"{label} (type exactly)")


def header(at) -> str:
    return next(t for t in texts(at) if t.startswith("Thresholds:")).replace("\\_", "_")


def test_defaults_are_prespecified_and_a_moved_slider_is_exploratory():
    at = open_app()
    assert "τ_neg 0.1 (pre-specified)" in header(at)
    at.slider(key="gate").set_value((0.2, 0.6)).run()
    line = header(at)
    # only the end that moved is exploratory
    assert "τ_neg 0.2 (exploratory)" in line and "τ_pos 0.6 (pre-specified)" in line
    assert "γ 0.9 (pre-specified)" in line
    # the typed boxes follow the slider
    assert box(at, "τ_neg").value == pytest.approx(0.2)


def test_a_typed_threshold_moves_the_slider_and_is_prespecified():
    at = open_app()
    at.slider(key="gate").set_value((0.2, 0.6)).run()
    box(at, "τ_neg").set_value(0.035).run()
    assert at.slider(key="gate").value == pytest.approx((0.035, 0.6))
    assert "τ_neg 0.035 (pre-specified)" in header(at)
    box(at, "γ").set_value(0.825).run()
    assert at.slider(key="gamma").value == pytest.approx(0.825)
    assert "γ 0.825 (pre-specified)" in header(at)
    # typing τ_neg above τ_pos pulls τ_pos up to it (never an invalid gate)
    box(at, "τ_neg").set_value(0.7).run()
    assert at.slider(key="gate").value == pytest.approx((0.7, 0.7))


def test_moving_one_thumb_leaves_the_other_off_grid_end_as_it_was():
    """The browser sends both thumbs of the gate slider, an off-grid end snapped to the
    slider's grid (seen in Chromium: a guaranteed τ_neg 0.083417 came back as 0.08 when
    τ_pos moved one step; a typed τ_pos 0.6 came back as 0.598 when τ_neg moved): the end
    that did not move keeps its exact value, its mark and its guarantee (contract §9: moving
    τ_pos marks τ_pos alone)."""
    at = open_app({"gate": "0.083417,0.6",
                   "guaranteed": "tau_neg;screening_sensitivity>=0.99;0.1;1;all;14770"},
                  page="gate")
    assert "τ_neg 0.083417 (guaranteed: screening_sensitivity" in header(at)
    at.slider(key="gate").set_value((0.08, 0.61)).run()  # τ_pos moved one step
    line = header(at)
    assert "τ_neg 0.083417 (guaranteed: screening_sensitivity" in line
    assert "τ_pos 0.61 (exploratory)" in line
    assert at.session_state[state.VIEW].config.tau_neg == 0.083417
    assert at.query_params["gate"] == "0.083417,0.61"
    # a typed τ_pos, then τ_neg moved: τ_pos stays typed (pre-specified)
    box(at, "τ_pos").set_value(0.655).run()
    at.slider(key="gate").set_value((0.09, 0.66)).run()
    line = header(at)
    assert "τ_neg 0.09 (exploratory)" in line and "τ_pos 0.655 (pre-specified)" in line
    # an off-grid thumb moved one step onto the grid moves, the other stays
    at.slider(key="gate").set_value((0.09, 0.65)).run()
    assert at.session_state[state.VIEW].config.tau_pos == 0.65
    assert "τ_neg 0.09 (exploratory)" in header(at)


def test_a_link_is_prespecified_and_carries_per_criterion_gates():
    at = open_app({"gate": "0.05,0.7", "criterion_gates": ["A.1:0.02:0.9", "A.2:0.2:0.3"]},
                  page="gate")
    assert "τ_neg 0.05 (pre-specified)" in header(at)
    assert "2 per-criterion gate(s) (pre-specified)" in header(at)
    run = state_evaluation(at)
    cfg = EvalConfig(tau_neg=0.05, tau_pos=0.7, bootstrap=0,
                     criterion_gates=(("A.1", 0.02, 0.9), ("A.2", 0.2, 0.3)))
    paths = demo_paths()
    loaded = load(paths.queries, paths.candidates)
    want = Evaluator(loaded.dataset).evaluate(cfg)
    for name in ("screening_sensitivity", "alert_precision", "uncertain_rate"):
        assert run.record(name).value == pytest.approx(want.record(name).value)
    assert at.query_params["criterion_gates"] == ["A.1:0.02:0.9", "A.2:0.2:0.3"]


def test_the_sidebar_sets_and_removes_a_criterion_gate():
    at = open_app(page="gate")
    at.selectbox(key="cg_criterion").set_value("A.3").run()
    at.number_input(key="cg_lo_A.3").set_value(0.01).run()
    at.number_input(key="cg_hi_A.3").set_value(0.95).run()
    at.button(key="cg_set").click().run()
    assert at.session_state[state.MODEL]["criterion_gates"] == (("A.3", 0.01, 0.95),)
    assert state_evaluation(at).config.gate_of("A.3") == (0.01, 0.95)
    assert any("A.3: τ_neg 0.01, τ_pos 0.95" in t for t in texts(at))
    at.button(key="cg_remove").click().run()
    assert at.session_state[state.MODEL]["criterion_gates"] == ()


def state_evaluation(at):
    return at.session_state[state.VIEW].evaluation


def test_intervals_use_fewer_resamples_while_moving_then_the_full_number():
    from dashboard.data import LIVE_RESAMPLES
    from dashboard.evaluations import _shared_demo_evaluations

    at = open_app({"ci": "1", "bootstrap": "3000", "gamma": "0.87"}, page="gate")
    memo = _shared_demo_evaluations()  # the demo's evaluations are shared between sessions
    resamples = sorted(config.bootstrap for _, config in memo
                       if config.gamma == 0.87 and config.bootstrap)
    assert resamples == [LIVE_RESAMPLES, 3000]  # the live pass, then the refined one
    run = state_evaluation(at)
    assert run.config.bootstrap == 3000
    assert run.record("f1").ci_method == "bootstrap (query, 3000 resamples, seed 0)"
    assert run.record("auroc").ci95 is not None


def test_a_threshold_move_after_the_refinement_computes_the_full_resamples_at_once():
    """Once the data's intervals are made with the full resamples, a gate move has only its
    own intervals left (tens of milliseconds): no live pass and no second run for it."""
    from dashboard.evaluations import _shared_demo_evaluations

    at = open_app({"ci": "1", "bootstrap": "2500", "gamma": "0.86"}, page="gate")
    assert state_evaluation(at).config.bootstrap == 2500  # refined
    lo, hi = at.slider(key="gate").value
    at.slider(key="gate").set_value((round(lo + 0.013, 3), hi)).run()
    run = state_evaluation(at)
    assert run.config.bootstrap == 2500 and run.config.tau_neg == round(lo + 0.013, 3)
    assert run.record("screening_sensitivity").ci95 is not None
    assert run.record("f1").ci_method == "bootstrap (query, 2500 resamples, seed 0)"
    memo = _shared_demo_evaluations()
    moved = [config.bootstrap for _, config in memo
             if config.gamma == 0.86 and config.tau_neg == round(lo + 0.013, 3)]
    assert moved == [2500]  # no live pass for the new threshold
    assert at.session_state[state.VIEW].pending is None


def test_the_typed_boxes_change_key_with_every_value_the_server_sends():
    """Quick slider moves: the browser may send a typed box's older value back after the
    slider moved on. The boxes' widget keys carry a generation that changes with each value
    sent to them, so such an echo names a widget that no longer exists (Streamlit drops it);
    typing into the boxes drawn now is typing, however soon after the moves."""
    at = open_app(page="gate")
    first = box(at, "τ_neg").key
    at.slider(key="gate").set_value((0.12, 0.6)).run()
    second = box(at, "τ_neg").key
    at.slider(key="gate").set_value((0.14, 0.6)).run()
    third = box(at, "τ_neg").key
    assert len({first, second, third}) == 3
    assert box(at, "τ_neg").value == pytest.approx(0.14)
    box(at, "τ_neg").set_value(0.12).run()  # typed at once: taken
    assert at.slider(key="gate").value == pytest.approx((0.12, 0.6))
    assert "τ_neg 0.12 (pre-specified)" in header(at)


def test_the_per_criterion_intervals_are_computed_ahead_once_the_view_is_refined():
    """After the refinement the Per criterion page's intervals are started on a helper
    thread; the page then reads the same values a fresh evaluator computes."""
    from dashboard.refinement import _warm_group_intervals
    from metrics_core.evaluation import tables
    from tests.conftest import random_frames

    q, c = random_frames(n_posts=60, seed=3)
    loaded = load(q, c)
    cfg = EvalConfig(bootstrap=200)
    ahead = Evaluator(loaded.dataset)
    _warm_group_intervals(ahead, cfg).join()
    calls = []
    ahead.evaluate = lambda *a, **k: calls.append(a)  # nothing is evaluated again
    got = tables.group_intervals(ahead, cfg, "auroc")
    assert calls == []
    want = tables.group_intervals(Evaluator(loaded.dataset), cfg, "auroc")
    assert got.equals(want)


def _demo_view(seed: int, token: str):
    """``(loaded, evaluator, view)``: random data (60 posts, ``seed``) as a stand-in page view
    of a bundled demo, its evaluator's results kept under ``token``."""
    from types import SimpleNamespace

    from tests.conftest import random_frames

    q, c = random_frames(n_posts=60, seed=seed)
    loaded = load(q, c)
    ev = Evaluator(loaded.dataset)
    source = SimpleNamespace(kind="demo", token=(token, id(ev)),
                             evaluator=lambda filters=None: ev)
    return loaded, ev, SimpleNamespace(source=source)


def test_the_per_criterion_page_shows_live_intervals_until_the_full_ones_are_in():
    """Opened before its intervals are computed, the page shows every criterion's interval
    from the live resamples at once, and the configured number once the page has computed
    them: each equal to a fresh evaluator's at that number of resamples."""
    from dashboard import data, refinement
    from metrics_core.evaluation import tables

    loaded, ev, view = _demo_view(seed=4, token="per-criterion-test")
    cfg = EvalConfig(bootstrap=data.LIVE_RESAMPLES + 500)
    live = cfg.replace(bootstrap=data.LIVE_RESAMPLES)
    got, refining = refinement.group_intervals(view, cfg, "f1")
    assert refining
    assert got.equals(tables.group_intervals(Evaluator(loaded.dataset), live, "f1"))
    assert set(got["ci_method"]) == {f"bootstrap (query, {data.LIVE_RESAMPLES} resamples, "
                                     "seed 0)"}
    full = tables.group_intervals(ev, cfg, "f1")  # (what the page's refinement computes)
    assert tables.group_intervals_ready(ev, cfg)
    got, refining = refinement.group_intervals(view, cfg, "f1")
    assert got.equals(full)
    assert not refining
    assert got.equals(tables.group_intervals(Evaluator(loaded.dataset), cfg, "f1"))


def test_after_a_threshold_move_the_per_criterion_page_computes_the_full_resamples_at_once():
    """Once the criteria's data intervals are made with the configured resamples, a threshold
    move leaves only each criterion's own operating intervals: the page computes the
    configured number at once (no live pass, no refinement run), equal to a fresh
    evaluator's."""
    from dashboard import data, refinement
    from metrics_core.evaluation import tables

    loaded, ev, view = _demo_view(seed=6, token="per-criterion-move")
    cfg = EvalConfig(bootstrap=data.LIVE_RESAMPLES + 300)
    moved = cfg.replace(tau_neg=0.2)
    assert not tables.group_setting_left(ev, moved)  # nothing computed yet
    tables.group_intervals(ev, cfg, "f1")  # the refinement at the first thresholds
    assert tables.group_setting_left(ev, moved) and not tables.group_intervals_ready(ev, moved)
    got, refining = refinement.group_intervals(view, moved, "screening_sensitivity")
    assert not refining
    assert not tables.group_intervals_ready(
        ev, moved.replace(bootstrap=data.LIVE_RESAMPLES))  # no live pass
    want = tables.group_intervals(Evaluator(loaded.dataset), moved, "screening_sensitivity")
    assert got.equals(want)
    assert set(tables.group_intervals(ev, moved, "f1")["ci_method"]) == {
        f"bootstrap (query, {cfg.bootstrap} resamples, seed 0)"}


def test_the_finders_first_result_is_computed_ahead(monkeypatch):
    """The Decision support page's long computation (the default target's threshold with
    every resample re-selecting it) starts on a helper thread once the view is refined; the
    page then finds it, equal to computing it there."""
    from types import SimpleNamespace

    from dashboard import data, finder
    from metrics_core.metrics import decision
    from tests.conftest import random_frames

    q, c = random_frames(n_posts=60, seed=5)
    loaded = load(q, c)
    ev = Evaluator(loaded.dataset)
    view = SimpleNamespace(evaluator=ev, show_bootstrap=True, source=SimpleNamespace(
        loaded=loaded), config=EvalConfig(bootstrap=data.LIVE_RESAMPLES + 100, seed=2))
    assert data.finder_resamples(view) == data.LIVE_RESAMPLES
    finder.warm_finder(view).join()
    target = finder.default_finder_target()
    want = [r.to_dict() for r in decision.tune(loaded.dataset, [str(target)], by=None,
                                               bootstrap=data.LIVE_RESAMPLES, seed=2)]
    monkeypatch.setattr(decision, "tune", lambda *a, **k: pytest.fail("computed again"))
    assert finder.finder_results(ev, target, None, data.LIVE_RESAMPLES, 2) == want
    assert str(target) == "screening_sensitivity>=0.995"


def test_the_per_criterion_page_refines_its_intervals_on_the_page():
    """The page draws the live intervals, then computes the configured resamples itself
    (with progress, stopped by a move or another page) and draws again with them."""
    at = open_app({"bootstrap": "2500"}, page="per_criterion")
    assert not at.exception
    shown = "\n".join(str(c.value) for c in at.caption)
    assert "bootstrap (query, 2500 resamples, seed 0)" in shown
    assert "Intervals from 2,000 resamples per criterion" not in shown


def test_a_links_criteria_and_gates_for_criteria_the_data_lack_are_dropped_with_notes():
    at = open_app({"criterion": ["A.1", "Z.9"],
                   "criterion_gates": ["A.1:0.02:0.9", "Z.9:0.2:0.3"]}, page="gate")
    model = at.session_state[state.MODEL]
    assert list(model["criterion"]) == ["A.1"]
    assert model["criterion_gates"] == (("A.1", 0.02, 0.9),)
    shown = "\n".join(texts(at))
    assert "Some criteria in the link are not in this data set and were dropped." in shown
    assert ("Per-criterion thresholds for criteria this data set does not have were dropped."
            in shown)


def defaults_and_values(at) -> dict[str, tuple]:
    """Every setting widget drawn (the sliders, their typed boxes, the number inputs and
    toggles of the settings): label -> (the default it was drawn with, the value it shows).
    The default is what the browser shows and sends back when it draws the widget with no
    value sent with it."""
    keys = {s.key for s in state.SETTINGS}
    out = {}
    for w in at.slider:
        if w.key in keys:
            out[w.label] = (tuple(round(v, 6) for v in w.proto.default),
                            tuple(round(v, 6) for v in (w.value if isinstance(w.value, tuple)
                                                        else (w.value,))))
    for w in at.number_input:
        if w.key in keys or w.label.endswith("(type exactly)"):
            out[w.label] = (round(w.proto.default, 6), round(w.value, 6))
    for w in at.toggle:
        if w.key in keys:
            out[w.label] = (w.proto.default, w.value)
    return out


def test_every_setting_widget_is_drawn_with_the_models_value_as_its_default():
    """A widget the browser draws with no value sent with it shows and sends back its default.
    Each setting widget's default is the settings model's value, so it is never the widget's
    minimum: before, the γ box's default was 0.05, and a γ box drawn so in Chromium under load
    sent 0.05 back with the next move of the gate, which read as γ typed to 0.05
    (pre-specified)."""
    at = open_app({"gamma": "0.8", "bootstrap": "300"}, page="gate")
    at.slider(key="gate").set_value((0.07, 0.6)).run()
    box(at, "τ_pos").set_value(0.65).run()
    at.toggle(key="ci").set_value(False).run()
    drawn = defaults_and_values(at)
    assert {"γ (type exactly)", "τ_neg (type exactly)", "τ_pos (type exactly)",
            "Bootstrap resamples (0 = off)"} <= set(drawn), sorted(drawn)
    assert drawn["γ (type exactly)"] == (0.8, 0.8)
    assert drawn["τ_neg (type exactly)"] == (0.07, 0.07)
    assert drawn["τ_pos (type exactly)"] == (0.65, 0.65)
    assert drawn["Bootstrap resamples (0 = off)"] == (300, 300)
    for label, (default, shown) in drawn.items():
        assert default == shown, (label, default, shown)
    at.switch_page("app_pages/dynamic_k.py").run()
    for label, (default, shown) in defaults_and_values(at).items():
        assert default == shown, (label, default, shown)


def test_metrics_master_json_says_how_each_threshold_was_chosen():
    """The dashboard's metrics_master.json, the record's zip and settings.json say the same
    marks: a moved end exploratory, a guaranteed one guaranteed with its guarantee, the rest
    pre-specified; the command line's own document (the run shared by the sessions) stays
    every threshold pre-specified."""
    import io
    import json
    import zipfile

    from dashboard import data, gold
    from metrics_core.report import decision_record as record

    at = open_app({"gate": "0.083417,0.6",
                   "guaranteed": "tau_neg;screening_sensitivity>=0.99;0.1;1;all;14770"},
                  page="gate")
    at.slider(key="gate").set_value((0.08, 0.61)).run()  # τ_pos moved: exploratory
    v = at.session_state[state.VIEW]
    master = json.loads(gold.master_json(data.ViewRef(v), v)())
    want = {"tau_neg": "guaranteed", "tau_pos": "exploratory", "threshold": "pre-specified",
            "gamma": "pre-specified"}
    assert master["provenance"] == want
    assert master["guarantees"]["tau_neg"]["target"] == "screening_sensitivity>=0.99"
    assert master["config"]["tau_neg"] == 0.083417 and master["config"]["tau_pos"] == 0.61
    settings = json.loads(record.settings_json(v.evaluation, marks=v.marks,
                                               guarantees=v.guarantees))
    assert settings["provenance"] == want and settings["guarantees"] == master["guarantees"]
    packed = record.render_zip(v.evaluation, html_text="<html></html>", pdf=b"%PDF",
                               marks=v.marks, guarantees=v.guarantees)
    with zipfile.ZipFile(io.BytesIO(packed)) as z:
        zipped = json.loads(z.read("metrics_master.json"))
    assert zipped["provenance"] == want and zipped["guarantees"] == master["guarantees"]
    # the view's own run, which other sessions may share, is not marked by this session
    plain = json.loads(v.evaluation.to_json())
    assert plain["provenance"] == dict.fromkeys(want, "pre-specified")
    assert "guarantees" not in plain


def test_a_guaranteed_mark_without_its_guarantee_is_written_exploratory():
    from metrics_core.config import threshold_provenance

    cfg = EvalConfig(criterion_gates=(("A.1", 0.1, 0.6),))
    got = threshold_provenance(cfg, {"tau_neg": "guaranteed", "gamma": "exploratory"})
    assert got == {"provenance": {"tau_neg": "exploratory", "tau_pos": "pre-specified",
                                  "threshold": "pre-specified", "gamma": "exploratory",
                                  "criterion_gates": "pre-specified"}}


def test_a_switch_of_data_says_which_thresholds_and_filters_it_dropped(upload_files):  # noqa: F811
    """Per-criterion gates and filters chosen for the demo that an upload lacks are dropped
    with a note naming them (they used to vanish without a word)."""
    at = open_app({"criterion_gates": ["A.1:0.02:0.9", "A.2:0.2:0.3"], "criterion": ["A.1"]},
                  page="data_source")
    assert at.session_state[state.MODEL]["criterion_gates"] == (("A.1", 0.02, 0.9),
                                                                 ("A.2", 0.2, 0.3))
    upload(at, *upload_files)  # criteria C1..C3, no fold 2
    notes = " ".join(str(w.value) for w in at.warning)
    assert ("Per-criterion thresholds: 'A.1', 'A.2', chosen for the previous data, are not "
            "in these data and were dropped.") in notes
    assert ("Criterion filter: 'A.1', chosen for the previous data, is not in these data "
            "and was dropped.") in notes
    assert at.session_state[state.MODEL]["criterion_gates"] == ()
    assert at.session_state[state.MODEL]["criterion"] == ()
    assert "criterion_gates" not in at.query_params
