"""Sign-in in headless Chromium against a local OpenID provider (``oidc-provider-mock``).

The provider runs on a free port in a process of its own (its warnings are not this test
run's errors); the app server
(``dashboard/server.py``) runs with a secrets file of the test's own (``--secrets.files``, so the
repository's ``.streamlit`` is not written) whose ``[auth]`` table points at the provider, and
with a settings file of its own (``METRICS_CORE_APP_SETTINGS``) whose allow-list admits
``@hospital.org``. The provider's authorization form lets the test choose who signs in (the
address typed is the user's ``sub`` and e-mail address). Signed out, the browser receives no
data; signed in from the allowed domain, the Overview; from another, the refusal.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys

import pytest

from dashboard import server_settings
from metrics_core.demo import DEMO_LABEL
from tests.app_server import free_port, running_app, wait_until_serving
from tests.test_browser import (
    ARTIFACTS,
    CHROMIUM,
    CHROMIUM_ARGS,
    TIMEOUT_MS,
    VIEWPORT,
    expect,
    wait_idle,
)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(),
                       reason="needs Debian's chromium at /usr/bin/chromium "
                              "(./dev test installs it; CI does)"),
    pytest.mark.skipif(importlib.util.find_spec("oidc_provider_mock") is None,
                       reason="needs oidc-provider-mock (the dev extra)"),
]

#: Text of the Overview that only data can produce (its metric labels and the demo's label).
DATA_TEXT = ("Screening sensitivity", "AUROC", DEMO_LABEL, "synthetic")


@pytest.fixture(scope="module")
def provider():
    """The local OpenID provider's base URL (stopped after the module)."""
    port = free_port()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with (ARTIFACTS / "oidc_provider.log").open("w") as log:
        proc = subprocess.Popen([sys.executable, "-m", "oidc_provider_mock", "--host",
                                 "127.0.0.1", "--port", str(port)], stdout=log,
                                stderr=subprocess.STDOUT)
        base = f"http://127.0.0.1:{port}"
        try:
            wait_until_serving(f"{base}/.well-known/openid-configuration", proc,
                               ARTIFACTS / "oidc_provider.log", give_up_after=60)
            yield base
        finally:
            proc.terminate()
            proc.wait(timeout=15)


@pytest.fixture(scope="module")
def app_url(provider, tmp_path_factory):
    folder = tmp_path_factory.mktemp("sign_in")
    secrets = folder / "secrets.toml"
    secrets.write_text(
        "[auth]\n"
        'redirect_uri = "http://localhost:{port}/oauth2callback"\n'
        'cookie_secret = "a-long-random-secret-for-the-sign-in-test"\n'
        'client_id = "metrics-dashboard"\n'
        'client_secret = "not-a-real-secret"\n'
        f'server_metadata_url = "{provider}/.well-known/openid-configuration"\n')
    settings = folder / "metrics_core.toml"
    settings.write_text(server_settings.LIMITS_FILE.read_text()
                        + '\n[auth]\nallow = ["@hospital.org"]\n')
    with running_app("dashboard/server.py", ARTIFACTS / "streamlit_sign_in.log",
                     options=("--secrets.files", str(secrets)),
                     env={server_settings.SETTINGS_ENV: str(settings)}) as url:
        # The redirect URI names localhost: the sign-in cookie belongs to that host.
        yield url.replace("127.0.0.1", "localhost")


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser, app_url):
    """A fresh browser context (no cookies: signed out) on the app."""
    context = browser.new_context(viewport=VIEWPORT)
    context.set_default_timeout(TIMEOUT_MS)
    try:
        page = context.new_page()
        page.goto(app_url)
        yield page
    finally:
        context.close()


def sign_in_button(page):
    return page.get_by_role("button", name=re.compile("Sign in"))


def sign_out_button(page):
    return page.get_by_role("button", name=re.compile("Sign out"))


def assert_no_data(page) -> None:
    """Nothing the browser holds is data: no metric, chart, table or upload, no data text."""
    wait_idle(page)
    for test_id in ("stMetric", "stPlotlyChart", "stDataFrame", "stTable", "stFileUploader",
                    "stSidebarNav", "stPageLink"):
        assert page.get_by_test_id(test_id).count() == 0, test_id
    html = page.content()
    for text in DATA_TEXT:
        assert text not in html, text


def assert_log_clean() -> None:
    """The app server logs no address of a user and no token (it logs warnings only)."""
    log = (ARTIFACTS / "streamlit_sign_in.log").read_text()
    for text in ("hospital.org", "example.org", "eyJ"):   # "eyJ": a JSON Web Token's start
        assert text not in log, text


def sign_in_as(page, provider: str, who: str) -> None:
    sign_in_button(page).click()
    page.wait_for_url(re.compile(re.escape(provider) + "/oauth2/authorize"))
    page.fill('input[name="sub"]', who)
    page.get_by_role("button", name="Authorize").click()


def test_signed_out_sees_only_the_sign_in_page(page):
    expect(sign_in_button(page)).to_be_visible()
    expect(page.get_by_text("This dashboard is for signed-in users only.")).to_be_visible()
    assert_no_data(page)


def test_signed_in_from_the_allowed_domain_sees_the_overview_then_signs_out(page, provider,
                                                                            app_url):
    sign_in_as(page, provider, "ana@hospital.org")
    expect(page.locator("h1").filter(has_text=re.compile("^Overview$"))).to_be_visible(
        timeout=TIMEOUT_MS)
    wait_idle(page)
    expect(page.get_by_test_id("stMetric").first).to_be_visible()
    sidebar = page.get_by_test_id("stSidebar")
    expect(sidebar.get_by_text("Signed in as")).to_be_visible()
    # Signed in, the session stays signed in across a reload (the identity cookie).
    page.reload()
    expect(page.locator("h1").filter(has_text=re.compile("^Overview$"))).to_be_visible(
        timeout=TIMEOUT_MS)
    sign_out_button(sidebar).click()
    # The provider's end-session page (the mock asks to confirm), then back to the app.
    page.wait_for_url(re.compile(re.escape(provider) + "/oauth2/end_session"))
    page.get_by_role("button", name="End session").click()
    page.wait_for_url(re.compile(re.escape(app_url)))
    expect(sign_in_button(page)).to_be_visible()
    assert_no_data(page)
    assert_log_clean()


def test_signed_in_from_another_domain_sees_the_refusal(page, provider):
    sign_in_as(page, provider, "eve@example.org")
    expect(page.get_by_text("which may not use this dashboard")).to_be_visible(
        timeout=TIMEOUT_MS)
    expect(sign_out_button(page)).to_be_visible()
    assert_no_data(page)
    assert_log_clean()
