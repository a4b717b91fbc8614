"""The reruns the app asks for itself (the intervals refined after a page drew:
dashboard/refinement.py, dashboard/page_resamples.py) leave the widgets the browser shows
alone (:func:`dashboard.reruns.quiet_rerun`).

Streamlit's own ``st.rerun`` carries no widget states, so its run sends every keyed widget
whose value is not the widget's default with ``set_value``, which overwrites what the browser
shows: a key pressed on the τ_neg slider while that message was on its way was undone on the
page while the server kept it, and the next interaction sent the old value back. Checked here
at the message level (each widget's ``set_value`` in the last run's element protos), and the
Streamlit internals the quiet rerun uses are pinned, so that an upgrade that changes them fails
here. tests/test_browser.py presses the key in that window in Chromium.
"""

from __future__ import annotations

import json
import re

import pytest
from streamlit.proto.WidgetStates_pb2 import WidgetStates
from streamlit.runtime.scriptrunner_utils.script_requests import (
    RerunData,
    ScriptRequests,
    ScriptRequestType,
)
from streamlit.testing.v1 import AppTest

from dashboard import data, reruns, server_settings, state
from metrics_core.config import EvalConfig
from tests.test_app import APP, TIMEOUT, assert_clean, open_app

#: Resamples only the first test asks for (above the live ones).
UNIQUE_RESAMPLES = 2_222
#: The widget kinds that draw settings (AppTest's element lists).
KINDS = ("slider", "number_input", "toggle", "radio", "multiselect", "selectbox")


def _sent_again(at) -> list[str]:
    """The keyed widgets the last run sent with a value the browser must take."""
    return [w.key for kind in KINDS for w in getattr(at, kind)
            if w.key is not None and w.proto.set_value]


def _thresholds_line(at) -> str:
    return next(re.sub(r"\\(.)", r"\1", str(c.value)) for c in at.caption
                if str(c.value).startswith("Thresholds:"))


def _refined(at, bootstrap: int) -> None:
    """The last run is the refinement's rerun: the view's full resamples are in."""
    view = at.session_state[state.VIEW]
    assert view.pending is None
    assert view.evaluation.config.bootstrap == bootstrap


def test_the_first_views_refinement_sends_no_widget_value_again():
    """A link's gate (τ_neg 0.11, not the default) with 2,222 resamples: the first
    run draws with the live resamples and sends the link's values; its refinement's rerun sends
    none again, and the slider, the caption and the link still say 0.11."""
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    # Resamples no other test asks for: the demo's evaluations are shared between sessions,
    # and one another test computed would be shown at once, with no refinement.
    at.query_params.update({"gate": "0.11,0.6", "bootstrap": str(UNIQUE_RESAMPLES)})
    at.switch_page("app_pages/gate.py").run(timeout=TIMEOUT)  # the link opens the Gate page
    assert_clean(at)
    assert at.title[0].value == "Gate & thresholds"
    _refined(at, UNIQUE_RESAMPLES)
    assert UNIQUE_RESAMPLES > data.LIVE_RESAMPLES  # so the first view refined
    assert _sent_again(at) == []
    assert tuple(at.slider(key="gate").value) == (0.11, 0.6)
    assert "τ_neg 0.11 (pre-specified)" in _thresholds_line(at)
    assert at.query_params["gate"] == "0.11,0.6"


def test_a_moved_threshold_is_not_sent_again_by_a_refinement():
    """τ_neg moved (exploratory), then a cohort chosen: the view's new filters refine their
    intervals after the page drew, and that rerun does not send the moved slider back."""
    at = open_app({"bootstrap": "2400"}, page="gate")
    at.slider(key="gate").set_value((0.11, 0.6)).run(timeout=TIMEOUT)
    at.multiselect(key="cohort").set_value(["sex=F"]).run(timeout=TIMEOUT)
    assert_clean(at)
    _refined(at, 2400)
    assert at.session_state[state.VIEW].filters.cohorts == ("sex=F",)
    assert _sent_again(at) == []
    assert tuple(at.slider(key="gate").value) == (0.11, 0.6)
    assert "τ_neg 0.11 (exploratory)" in _thresholds_line(at)
    assert at.query_params["gate"] == "0.11,0.6"


def test_a_genuine_assignment_is_still_sent():
    """What the app assigns still reaches the browser: a link's values (in a run with no
    refinement: 400 resamples are the live ones), a typed threshold's slider, and a restored
    settings.json."""
    at = open_app({"gate": "0.11,0.6", "bootstrap": "400"})
    assert {"gate", "bootstrap"} <= set(_sent_again(at))
    box = next(n for n in at.number_input if n.label == "τ_neg (type exactly)")
    box.set_value(0.15).run(timeout=TIMEOUT)
    assert at.slider(key="gate").proto.set_value
    assert tuple(at.slider(key="gate").value) == (0.15, 0.6)
    config = EvalConfig(tau_neg=0.2, tau_pos=0.7, bootstrap=400)
    payload = {"schema": "metrics_core_settings/1", "config": config.to_dict(),
               "provenance": dict.fromkeys(("tau_neg", "tau_pos", "threshold", "gamma"),
                                           "pre-specified")}
    at.sidebar.file_uploader(key=state.SETTINGS_FILE).set_value(
        ("settings.json", json.dumps(payload).encode(), "application/json")).run(
        timeout=TIMEOUT)
    at.button(key="apply_settings").click().run(timeout=TIMEOUT)
    assert_clean(at)
    assert at.slider(key="gate").proto.set_value
    assert tuple(at.slider(key="gate").value) == (0.2, 0.7)
    assert "τ_neg 0.2 (pre-specified)" in _thresholds_line(at)


def test_a_button_does_not_fire_again_in_the_quiet_rerun(tmp_path, monkeypatch):
    """The button that asks for the resamples above the server's live cap: its run computes
    them, then reruns quietly; the click is not given to that rerun, so the ask is spent (a
    second firing would ask again and draw the progress bar and Cancel)."""
    toml = tmp_path / "metrics_core.toml"
    toml.write_text("[interaction]\nmax_live_resamples = 2_100\n")
    monkeypatch.setattr(server_settings, "LIMITS_FILE", toml)
    at = open_app({"bootstrap": "2200", "gate": "0.11,0.6"})
    at.button(key=state.RUN_HEAVY).click().run(timeout=TIMEOUT)
    assert_clean(at)
    assert state.HEAVY_ASKED not in at.session_state
    assert not [b for b in at.button if b.key in (state.RUN_HEAVY, state.CANCEL_HEAVY)]
    assert at.session_state[state.VIEW].evaluation.config.bootstrap == 2200
    assert _sent_again(at) == []


# ------------------------------------------------------- the Streamlit internals it uses
def _states(value: float) -> WidgetStates:
    out = WidgetStates()
    w = out.widgets.add()
    w.id, w.double_array_value.data[:] = "gate-slider", [value, 0.6]
    return out


def test_a_waiting_browser_rerun_keeps_its_newer_widget_values():
    """A key pressed during the refinement: the browser's rerun (τ_neg 0.11) waits when the
    quiet rerun is asked for; the quiet rerun's values (0.1) must not replace it. Nothing
    waiting: the quiet rerun carries its values; the browser's rerun arriving after it wins
    (Streamlit's merge takes the newer request's values)."""
    browser = RerunData(widget_states=_states(0.11), fragment_id_queue=["gate-fragment"])
    ours = RerunData()  # a full app rerun
    requests = ScriptRequests()
    requests.request_rerun(browser)
    assert reruns.request_quietly(requests, ours, _states(0.1)) is False
    got = requests.on_scriptrunner_ready()
    assert got.type is ScriptRequestType.RERUN
    assert list(got.rerun_data.widget_states.widgets[0].double_array_value.data) == [0.11, 0.6]
    assert got.rerun_data.fragment_id_queue == []  # the whole app, as the refinement asked

    requests = ScriptRequests()
    assert reruns.request_quietly(requests, ours, _states(0.1)) is True
    requests.request_rerun(browser)
    got = requests.on_scriptrunner_ready()
    assert list(got.rerun_data.widget_states.widgets[0].double_array_value.data) == [0.11, 0.6]


def test_the_streamlit_internals_of_the_quiet_rerun_are_there():
    """The private names quiet_rerun reads (Streamlit 1.67): should an upgrade move them, this
    fails and names the one that went."""
    from streamlit.commands import execution_control
    from streamlit.runtime.scriptrunner_utils.shared_run_state import SharedRunState
    from streamlit.runtime.state.safe_session_state import SafeSessionState
    from streamlit.runtime.state.session_state import SessionState, WStates

    for owner, name in ((execution_control, "_new_fragment_id_queue"),
                        (execution_control, "_is_fragment_scoped"),
                        (execution_control, "_force_yield_point"),
                        (ScriptRequests, "_request_rerun_locked"),
                        (SessionState, "_getitem"), (WStates, "as_widget_states")):
        assert callable(getattr(owner, name, None)), name
    requests = ScriptRequests()
    assert requests._state is ScriptRequestType.CONTINUE and hasattr(requests._lock, "acquire")
    session = SessionState()
    for name in ("_new_widget_state", "_new_session_state", "_key_id_mapper", "_old_state"):
        assert hasattr(session, name), name
    assert hasattr(session._key_id_mapper, "id_key_mapping")
    assert callable(SharedRunState().widget_ids_this_run.snapshot)
    safe = SafeSessionState(session, lambda: None)
    assert safe._state is session and hasattr(safe._lock, "acquire")
    assert execution_control._is_fragment_scoped("fragment") is True
    assert execution_control._is_fragment_scoped("app") is False


@pytest.mark.parametrize("scope", ["app", "fragment"])
def test_quiet_rerun_outside_a_script_run_does_what_st_rerun_does(scope):
    """Bare mode (no script run): nothing to rerun, nothing raised."""
    assert reruns.quiet_rerun(scope) is None


def test_the_apps_own_reruns_where_settings_are_drawn_are_quiet():
    """Streamlit's own rerun is left only after a click or an upload (the page changes what
    it shows on purpose); every rerun the app asks for itself goes through
    ``reruns.quiet_rerun``. The Gate page's fragment reran itself with ``st.rerun`` when its
    curves' intervals were paused: a key pressed on the gate slider then could be undone."""
    from pathlib import Path

    root = Path(data.__file__).parent
    plain = sorted(f"{path.relative_to(root)}"
                   for path in root.rglob("*.py") if path.name != "reruns.py"
                   and re.search(r"\bst\.rerun\(", path.read_text(encoding="utf-8")))
    # the Compare and RAG pages' "Forget ..." buttons: a click
    assert plain == ["adjudication.py", "app_pages/case_review.py", "app_pages/compare.py",
                     "app_pages/data_source.py", "app_pages/rag.py", "upload.py"]
