"""Hostile links and settings files in the dashboard: refused with the field, the rule and the
value, never a crash, never a silent change, never a reset of the valid settings."""

from __future__ import annotations

import codecs
import json

import pytest

from dashboard import state
from metrics_core.config import EvalConfig
from tests.test_app import TIMEOUT, assert_clean, open_app, texts


def warnings_of(at) -> str:
    return " ".join(str(w.value) for w in at.warning)


def view_config(at) -> EvalConfig:
    return at.session_state[state.VIEW].config


@pytest.mark.parametrize("query", [
    {"bootstrap": "inf"}, {"k_min": "inf"}, {"seed": "1e400"}, {"hard_cap": "-inf"},
    {"k_min": "nan"}, {"seed": "NaN"}, {"temperature": "1e300"}, {"n_bins": "1000000000"},
    {"hard_cap": "1e18"}, {"seed": "-1"}, {"k_min": "2.5"}, {"gate": "0.1,inf"},
    {"gate": "0.1,0.2,0.3"}, {"targets": "junk"}, {"gamma": "x" * 100_000},
    {"criterion": ["A.1"] * 500}])
def test_a_bad_link_value_is_a_note_and_the_rest_of_the_link_holds(query):
    link = {**query, "gamma": query.get("gamma", "0.8"), "threshold": "0.3"}
    at = open_app(link)
    assert_clean(at)
    key = next(iter(query))
    notes = warnings_of(at)
    assert key in notes and ("not valid" in notes or "allowed" in notes), notes
    cfg = view_config(at)
    assert cfg.threshold == 0.3  # the valid settings of the link hold
    if key != "gamma":
        assert cfg.gamma == 0.8
    default = EvalConfig()
    for name in ("bootstrap", "k_min", "seed", "hard_cap", "temperature", "n_bins"):
        assert getattr(cfg, name) == getattr(default, name)
    # the refused value is not written back into the address (a reload does not repeat it)
    assert key not in at.query_params or key == "gamma"
    again = open_app(dict(at.query_params), page="gate")
    assert_clean(again)


def test_integers_in_a_link_are_exact():
    at = open_app({"seed": "1234567", "ci": "1", "bootstrap": "500"}, page="overview")
    assert view_config(at).seed == 1234567
    assert at.query_params["seed"] == "1234567"


def test_repeated_keys_take_the_last_value_and_say_so():
    at = open_app({"gamma": ["0.7", "0.8"], "gate": ["0.1,0.6", "0.1,0.6"]})
    assert view_config(at).gamma == 0.8
    notes = warnings_of(at)
    assert "gamma is given 2 times in the link with different values ('0.7', '0.8')" in notes
    assert "the last, '0.8', is used" in notes
    assert "gate is given" not in notes  # the same value twice says one thing
    assert view_config(at).tau_neg == 0.1


def _apply(at, payload: bytes, name: str = "settings.json"):
    at.sidebar.file_uploader(key=state.SETTINGS_FILE).set_value(
        (name, payload, "application/json")).run(timeout=TIMEOUT)
    at.button(key="apply_settings").click().run(timeout=TIMEOUT)
    return at


def _settings(**config) -> bytes:
    return json.dumps({"schema": "metrics_core_settings/1", "config": config}).encode()


@pytest.mark.parametrize(("payload", "field"), [
    (_settings(gate_aware="false"), "gate_aware"),
    (_settings(seed="abc"), "seed"),
    (b'{"config": {"ks": [Infinity]}}', "Infinity"),
    (b"[" * 100_000 + b"]" * 100_000, "nest"),
    (_settings(hard_cap=1e18), "hard_cap"),
    (_settings(k_min=1e12), "k_min"),
    (_settings(temperature=1e300), "temperature"),
    (_settings(n_bins=1e9), "n_bins"),
    (_settings(seed=-1), "seed"),
    (_settings(k_min=2.5), "k_min"),
    (_settings(ks=[1e18]), "ks"),
    (_settings(tpr_fprs=[0.1, "x"]), "tpr_fprs"),
    (_settings(targets="auroc>=0.9"), "targets"),
    (_settings(filters={"criteria": "A.1"}), "criteria"),
    (_settings(targets=["foo>=1"]), "foo"),
    (b"\x00\x01not json", "settings.json"),
])
def test_a_bad_settings_file_is_refused_whole_and_the_view_stays(payload, field):
    at = open_app({"gamma": "0.8"}, page="overview")
    before = view_config(at)
    _apply(at, payload)
    assert_clean(at)
    shown = " ".join(str(e.value) for e in at.error)
    assert "was not applied" in shown and field in shown, shown
    assert "not supported between" not in shown and "Traceback" not in shown
    assert view_config(at) == before
    # the app keeps working: a move after the refusal is a move
    at.slider(key="gamma").set_value(0.7).run(timeout=TIMEOUT)
    assert_clean(at)
    assert view_config(at).gamma == 0.7


def test_a_huge_settings_file_is_refused_by_its_size():
    payload = _settings(targets=["auroc>=0.5"] * 4_000_000)
    at = _apply(open_app(page="overview"), payload)
    shown = " ".join(str(e.value) for e in at.error)
    assert "bytes" in shown and "was not applied" in shown
    assert len(str(dict(at.query_params))) < 1_000


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16"])
def test_a_settings_file_with_a_byte_order_mark_is_read(encoding):
    text = json.dumps({"schema": "metrics_core_settings/1",
                       "config": EvalConfig(tau_neg=0.05, gamma=0.8).to_dict()})
    payload = text.encode(encoding)
    if encoding == "utf-16":
        assert payload.startswith(codecs.BOM_UTF16)
    at = _apply(open_app(page="overview"), payload)
    assert not at.error
    cfg = view_config(at)
    assert (cfg.tau_neg, cfg.gamma) == (0.05, 0.8)


def test_a_link_cannot_ask_for_more_resamples_than_the_server_computes_for_links():
    at = open_app({"bootstrap": "100000", "gamma": "0.8"})
    notes = warnings_of(at)
    assert "bootstrap=100,000" in notes and "at most 10,000" in notes
    cfg = view_config(at)
    assert cfg.bootstrap == EvalConfig().bootstrap and cfg.gamma == 0.8
    at = _apply(open_app(page="overview"), _settings(bootstrap=100_000))
    shown = " ".join(str(e.value) for e in at.error)
    assert "was not applied" in shown and "at most 10,000" in shown


@pytest.mark.parametrize(("field", "value"), [("ks", [1, 5]), ("tpr_fprs", [0.2])])
def test_a_settings_file_setting_what_the_dashboard_does_not_offer_is_refused(field, value):
    at = _apply(open_app(page="overview"), _settings(**{field: value}, gamma=0.7))
    shown = " ".join(str(e.value) for e in at.error)
    assert "was not applied" in shown and field in shown and "report --settings" in shown
    assert view_config(at).gamma == EvalConfig().gamma  # nothing applied, nothing dropped


def test_thresholds_of_a_link_and_a_settings_file_keep_their_exact_value():
    """A threshold with more than six decimals is the threshold of the view, of the link and
    of metrics_master.json exactly as given (contract §13: numbers keep their exact value, as
    the command line keeps them); it was rounded to six decimals, so τ_neg = 1e-07 became 0
    (no query NEG) and `report --settings` of the same file disagreed with the app."""
    at = open_app({"gate": "1e-07,0.6123456789", "gamma": "0.8500001", "ci": "0"},
                  page="gate")
    assert_clean(at)
    cfg = view_config(at)
    assert (cfg.tau_neg, cfg.tau_pos, cfg.gamma) == (1e-07, 0.6123456789, 0.8500001)
    assert at.query_params["gate"] == "1e-07,0.6123456789"
    assert at.query_params["gamma"] == "0.8500001"
    # the page states them exactly, and its exact-value boxes hold them
    assert any("Thresholds: τ_neg 1e-07 (pre-specified); τ_pos 0.6123456789 (pre-specified)"
               in t.replace("\\_", "_") for t in texts(at))
    boxes = {n.label: n.value for n in at.number_input if "type exactly" in n.label}
    assert boxes["τ_neg (type exactly)"] == 1e-07
    assert boxes["τ_pos (type exactly)"] == 0.6123456789
    # the link written back reads back to the same view in a new session
    again = open_app(dict(at.query_params), page="gate")
    cfg = view_config(again)
    assert (cfg.tau_neg, cfg.tau_pos, cfg.gamma) == (1e-07, 0.6123456789, 0.8500001)

    at = _apply(open_app({"ci": "0"}), _settings(tau_neg=1e-07, tau_pos=0.6123456789,
                                                  temperature=12.3456789))
    assert_clean(at)
    cfg = view_config(at)
    assert (cfg.tau_neg, cfg.tau_pos, cfg.temperature) == (1e-07, 0.6123456789, 12.3456789)
    assert at.query_params["temperature"] == "12.3456789"


@pytest.mark.parametrize(("query", "hint", "not_hint"), [
    ({"bootstrap": "0"}, "set *Bootstrap resamples* above 0", "switch on *Compute bootstrap"),
    ({"ci": "0"}, "switch on *Compute bootstrap CIs*", "set *Bootstrap resamples*")])
def test_without_intervals_the_pages_name_the_control_that_is_off(query, hint, not_hint):
    """A link's (or a settings file's) ``bootstrap = 0`` leaves *Compute bootstrap CIs* on with
    no resamples: the Overview and Per criterion said to switch on the switch that was on;
    they name the resamples then, and the switch when it is off."""
    for page in ("overview", "per_criterion"):
        at = open_app(query, page=page)
        assert_clean(at)
        shown = " ".join(texts(at))
        assert hint in shown and not_hint not in shown, page
