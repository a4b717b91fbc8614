"""The sidebar's settings sections: a closed one draws no widget (the browser re-renders every
drawn widget on each run of the app); opened, its widgets show the settings' values."""

from __future__ import annotations

from dashboard import state
from dashboard.sidebar import section_key
from tests.test_app import assert_clean, open_app

KINDS = ("slider", "number_input", "toggle", "selectbox", "multiselect", "radio")


def drawn(at) -> set[str]:
    """The keys of the setting widgets drawn."""
    keys = {s.key for s in state.SETTINGS}
    return {w.key for kind in KINDS for w in getattr(at, kind) if w.key in keys}


def test_a_closed_section_draws_no_widget_and_an_opened_one_the_settings_values():
    at = open_app({"bootstrap": "400", "seed": "3", "ci": "1"}, sections=False)
    assert_clean(at)
    shown = drawn(at)
    assert {"gate", "gamma"} <= shown  # the sections open at the start
    assert not shown & {"bootstrap", "seed", "ci", "fold", "split", "n_bins", "gain"}
    assert at.session_state[state.VIEW].config.bootstrap == 400  # the settings still apply
    at.session_state[section_key("uncertainty")] = True
    at.run()
    assert {"bootstrap", "seed", "ci"} <= drawn(at)
    assert at.number_input(key="bootstrap").value == 400
    assert at.number_input(key="seed").value == 3
    at.number_input(key="seed").set_value(5).run()
    assert at.session_state[state.MODEL]["seed"] == 5
    at.session_state[section_key("uncertainty")] = False  # closed again: the value stays
    at.run()
    assert "seed" not in drawn(at)
    assert at.session_state[state.MODEL]["seed"] == 5
    assert at.session_state[state.VIEW].config.seed == 5
    assert at.query_params["seed"] in ("5", ["5"])
    assert_clean(at)
