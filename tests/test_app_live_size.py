"""The intervals a view computes without being asked shrink with the data's size: the server's
``[interaction] max_live_resample_rows`` bounds resamples times queries (a bootstrap's work
grows with both), and a data set too large for the live resamples shows exact point values
with its intervals on the page's button (contract §9)."""

from __future__ import annotations

import pytest

from dashboard import data, server_settings, state
from tests.test_app import TIMEOUT, assert_clean, open_app
from tests.test_app_request_bounds import recorded  # noqa: F401  (a fixture)

DEMO_QUERIES = 14_770


def _caps(tmp_path, monkeypatch, text: str) -> None:
    toml = tmp_path / "metrics_core.toml"
    toml.write_text("[interaction]\n" + text)
    monkeypatch.setattr(server_settings, "LIMITS_FILE", toml)


@pytest.mark.parametrize(("rows", "cap"), [
    (None, 10_000),                             # the default: the demo takes every resample
    (DEMO_QUERIES * 10_000, 10_000),            # exactly enough
    (DEMO_QUERIES * 10_000 - 1, 9_999),         # one short: one resample fewer
    (DEMO_QUERIES * 3_000 + 7, 3_000),
    (DEMO_QUERIES * data.LIVE_RESAMPLES, data.LIVE_RESAMPLES),
    (DEMO_QUERIES * data.LIVE_RESAMPLES - 1, 0),  # fewer than the live resamples: none
    (0, 0),
])
def test_the_live_cap_is_resamples_times_queries(tmp_path, monkeypatch, rows, cap):
    _caps(tmp_path, monkeypatch, "" if rows is None else f"max_live_resample_rows = {rows}\n")
    source = data.demo_source()
    assert source.loaded.dataset.n_queries == DEMO_QUERIES
    assert data.live_cap(source) == cap


def test_the_resamples_cap_still_bounds_small_data(tmp_path, monkeypatch):
    _caps(tmp_path, monkeypatch, "max_live_resamples = 2_500\n")
    assert data.live_cap(data.demo_source()) == 2_500


def test_data_too_large_for_live_intervals_shows_point_values_until_asked(
        tmp_path, monkeypatch, recorded):  # noqa: F811
    _caps(tmp_path, monkeypatch, f"max_live_resample_rows = {DEMO_QUERIES * 1_000}\n")
    # A seed no other test asks for: the demo's evaluations are shared between sessions, and
    # the intervals computed on the button below stay in memory for the tests after this one.
    at = open_app({"bootstrap": "3000", "seed": "17"}, page="overview")
    assert_clean(at)
    view = at.session_state[state.VIEW]
    assert view.evaluation.config.bootstrap == 0
    ours = [c for c in recorded if c.seed == 17]
    assert ours and all(c.bootstrap == 0 for c in ours)
    infos = " ".join(str(i.value) for i in at.info)
    assert f"No intervals yet: on {DEMO_QUERIES:,} queries" in infos
    assert "The 3,000 set under Uncertainty run when asked" in infos
    at.button(key=state.RUN_HEAVY).click().run(timeout=TIMEOUT)
    assert_clean(at)
    assert at.session_state[state.VIEW].evaluation.config.bootstrap == 3_000
    assert not [b for b in at.button if b.key == state.RUN_HEAVY]
