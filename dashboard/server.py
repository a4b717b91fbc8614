"""The dashboard's server entry: ``streamlit run dashboard/server.py`` (what ``./dev app`` runs).

It serves the same app (:mod:`dashboard.app`) and adds HTTP security headers to every
response: the page may not be framed by another site (clickjacking), content types are not
sniffed, and no referrer leaves the page. The server process keeps freed memory for reuse
(:func:`metrics_core.allocator.keep_freed_memory`), as the command line does: the temporaries
of each rerun over a large upload are not page-faulted in afresh.
"""

from pathlib import Path

import streamlit as st
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware

from metrics_core.allocator import keep_freed_memory

keep_freed_memory()

#: Headers added to every HTTP response of the app.
SECURITY_HEADERS = (
    ("X-Frame-Options", "DENY"),
    ("Content-Security-Policy", "frame-ancestors 'none'"),
    ("X-Content-Type-Options", "nosniff"),
    ("Referrer-Policy", "no-referrer"),
)


class SecurityHeaders(BaseHTTPMiddleware):
    """Adds :data:`SECURITY_HEADERS` to every HTTP response."""

    async def dispatch(self, request, call_next):
        response = await call_next(request)
        for name, value in SECURITY_HEADERS:
            response.headers[name] = value
        return response


app = st.App(str(Path(__file__).resolve().parent / "app.py"),
             middleware=[Middleware(SecurityHeaders)])
