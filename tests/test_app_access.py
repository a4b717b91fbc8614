"""Sign-in on a shared server (dashboard/access.py), driven with AppTest.

``AppTest.secrets`` stands for ``.streamlit/secrets.toml`` (its ``[auth]`` table turns sign-in
on) and ``AppTest.user`` for ``st.user`` (what the OpenID provider said about the user); the
allow-list comes from a server settings file named by ``METRICS_CORE_APP_SETTINGS``. The
sign-in flow itself (the provider, the redirect, the cookie) runs in Chromium against a local
provider in tests/test_browser_sign_in.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dashboard import server_settings
from dashboard.safe_text import escape_markdown
from metrics_core.demo import DEMO_LABEL

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "dashboard" / "app.py"
TIMEOUT = 60
AUTH = {"redirect_uri": "http://localhost:8501/oauth2callback",
        "cookie_secret": "a-long-random-secret-for-tests", "client_id": "dashboard",
        "client_secret": "secret",
        "server_metadata_url": "http://localhost:1/.well-known/openid-configuration"}
SIGNED_IN = {"is_logged_in": True, "email": "ana@hospital.org", "name": "Ana Example"}


def run_app(*, auth: bool = True, user: dict | None = None) -> AppTest:
    at = AppTest.from_file(str(APP), default_timeout=TIMEOUT)
    if auth:
        at.secrets["auth"] = dict(AUTH)
    if user is not None:
        at.user = dict(user)
    return at.run(timeout=TIMEOUT)


def shown(at: AppTest) -> str:
    parts = []
    for kind in ("title", "markdown", "caption", "error", "warning", "info", "subheader"):
        parts += [str(e.value) for e in getattr(at, kind)]
    return "\n".join(parts)


def buttons(at: AppTest) -> list[str]:
    return [b.label for b in at.button]


def assert_nothing_but_the_gate(at: AppTest) -> None:
    """No data: no metric, no table, no chart, no upload widget, no demo label, no page."""
    assert not at.exception, [e.value for e in at.exception]
    assert len(at.metric) == 0 and len(at.dataframe) == 0 and len(at.table) == 0
    assert len(at.get("plotly_chart")) == 0
    assert len(at.file_uploader) == 0 and len(at.slider) == 0
    assert DEMO_LABEL not in shown(at) and "synthetic" not in shown(at)


@pytest.fixture
def settings(tmp_path, monkeypatch):
    """A server settings file of the test's own (the repository's stays as it is)."""
    path = tmp_path / "metrics_core.toml"
    monkeypatch.setenv(server_settings.SETTINGS_ENV, str(path))
    return path


def test_without_sign_in_configured_the_app_opens_as_before(settings):
    at = run_app(auth=False)
    assert not at.exception
    assert len(at.metric) > 0 and "Sign out" not in buttons(at) and "Sign in" not in buttons(at)


def test_signed_out_sees_only_the_sign_in_page(settings):
    for user in (None, {"is_logged_in": False}):   # the default user is not signed in
        at = run_app(user=user)
        assert_nothing_but_the_gate(at)
        assert buttons(at) == ["Sign in"]
        assert "for signed-in users only" in shown(at)


def test_signed_in_sees_the_overview_and_a_sign_out_button(settings):
    at = run_app(user=SIGNED_IN)
    assert not at.exception
    assert [t.value for t in at.title] == ["Overview"] and len(at.metric) > 0
    assert "Sign out" in [b.label for b in at.sidebar.button]
    assert "Signed in as Ana Example" in [c.value for c in at.sidebar.caption]
    at.button(key="sign_out").click().run(timeout=TIMEOUT)   # st.logout: signed out
    assert at.user.get("is_logged_in") is False
    assert_nothing_but_the_gate(at)
    assert buttons(at) == ["Sign in"]


def test_the_allow_list_lets_in_addresses_and_domains_and_refuses_others(settings):
    settings.write_text('[auth]\nallow = ["bo@example.org", "@Hospital.org"]\n')
    for email in ("ana@hospital.org", "BO@example.org"):
        at = run_app(user={**SIGNED_IN, "email": email})
        assert not at.exception and len(at.metric) > 0, email
    for user in ({**SIGNED_IN, "email": "eve@example.org"},
                 {**SIGNED_IN, "email": "ana@evil-hospital.org"},
                 {**SIGNED_IN, "email": "ana@hospital.org", "email_verified": False},
                 {"is_logged_in": True, "name": "No address"}):
        at = run_app(user=user)
        assert_nothing_but_the_gate(at)
        assert buttons(at) == ["Sign out"], user   # the refusal's own sign-out button
        assert "which may not use this dashboard" in shown(at), user
    at = run_app(user={**SIGNED_IN, "email": "eve@example.org"})
    assert f"You are signed in as {escape_markdown('eve@example.org')}, which" in shown(at)


@pytest.mark.parametrize(("table", "said"), [
    ('[auth]\nallow = ["ana"]\n',
     "metrics_core.toml: [auth] allow: 'ana' is neither an e-mail address"),
    ('[auth]\nallow = "@hospital.org"\n', "[auth] allow must be a list of e-mail addresses"),
    ('[auth]\nallow = [3]\n', "[auth] allow: 3 is neither"),
    ('[auth]\nallowed = ["@hospital.org"]\n', "unknown sign-in settings allowed"),
    ("[auth\n", "cannot be used"),
])
def test_bad_sign_in_settings_keep_the_dashboard_closed(settings, table, said):
    settings.write_text(table)
    at = run_app(user=SIGNED_IN)
    assert_nothing_but_the_gate(at)
    assert buttons(at) == []
    assert "sign-in settings cannot be used, so the dashboard stays closed" in shown(at)
    assert escape_markdown(said) in shown(at)


def test_an_allow_list_without_sign_in_keeps_the_dashboard_closed(settings):
    settings.write_text('[auth]\nallow = ["@hospital.org"]\n')
    at = run_app(auth=False)
    assert_nothing_but_the_gate(at)
    assert "has an allow-list ([auth] allow) but sign-in is not configured" in shown(at)


def test_the_repositorys_settings_have_no_allow_list():
    assert server_settings.sign_in_allow(server_settings.LIMITS_FILE) == ()
