"""Sign-in: who may see the dashboard on a shared server.

With an ``[auth]`` table in ``.streamlit/secrets.toml`` (Streamlit's own authentication over
OpenID Connect: ``st.login``, ``st.user``, ``st.logout``), :func:`sign_in_gate` shows nothing
but a sign-in page until the user signs in; a signed-in user outside the allow-list (``[auth]
allow`` in the server's settings file, :func:`dashboard.server_settings.sign_in_allow`) sees a
refusal with a sign-out button and nothing else; everyone else gets a sign-out button in the
sidebar. Without ``[auth]`` the gate lets everyone in (the server listens on 127.0.0.1 only;
``./dev app --share`` refuses to start without sign-in unless ``--no-auth`` is spelled out,
:mod:`dashboard.addresses`). Settings the gate cannot read stop the app with a plain message: a
broken allow-list never lets anyone in. Nothing here logs an address, a name or a token.
"""

from __future__ import annotations

import tomllib

import streamlit as st

from dashboard import server_settings
from dashboard.safe_text import escape_markdown

__all__ = ["sign_in_configured", "sign_in_gate"]

_TITLE = "Evidence pipeline metrics"


def sign_in_configured() -> bool:
    """Whether this server has sign-in: an ``[auth]`` table in its secrets."""
    return bool(st.secrets.load_if_toml_exists() and "auth" in st.secrets)


def _sign_out_button(key: str) -> None:
    st.button("Sign out", key=key, on_click=st.logout, icon=":material/logout:")


def _stop_with(message: str) -> None:
    st.title(_TITLE)
    st.error(message, icon=":material/lock:")
    st.stop()


def sign_in_gate() -> None:
    """Let the session through only when it may see the app (see the module's text); else
    draw the sign-in page or the refusal and stop the script run here."""
    try:
        allow = server_settings.sign_in_allow()
    except (ValueError, tomllib.TOMLDecodeError, OSError) as exc:
        _stop_with("The server's sign-in settings cannot be used, so the dashboard stays "
                   f"closed: {escape_markdown(str(exc))}")
    if not sign_in_configured():
        if allow:
            _stop_with(f"{server_settings.settings_file().name} has an allow-list ([auth] allow) "
                       "but sign-in is not configured ([auth] in .streamlit/secrets.toml), so "
                       "the dashboard stays closed.")
        return
    user = st.user
    if not user.get("is_logged_in"):
        st.title(_TITLE)
        st.markdown("This dashboard is for signed-in users only. Sign in to open it.")
        st.button("Sign in", key="sign_in", type="primary", on_click=st.login,
                  icon=":material/login:")
        st.stop()
    email = user.get("email")
    if not server_settings.is_allowed(email, allow, verified=user.get("email_verified")):
        st.title(_TITLE)
        who = escape_markdown(str(email)) if isinstance(email, str) else "this account"
        st.error(f"You are signed in as {who}, which may not use this dashboard. Ask its "
                 "administrator to add you, or sign out and sign in with another account.",
                 icon=":material/block:")
        _sign_out_button("sign_out_refused")
        st.stop()
    with st.sidebar:
        shown = user.get("name") or email
        if isinstance(shown, str) and shown:
            st.caption(f"Signed in as {escape_markdown(shown)}")
        _sign_out_button("sign_out")
