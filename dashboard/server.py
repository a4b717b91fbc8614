"""The dashboard's server entry: ``streamlit run dashboard/server.py``, which ``metrics-core app``
(and so ``./dev app``) runs from the installed package; Streamlit reads its settings from
``.streamlit/`` beside this file.

It serves the same app (:mod:`dashboard.app`) and adds HTTP security headers to every
response: the page may not be framed by another site (clickjacking), content types are not
sniffed, and no referrer leaves the page. The server process keeps freed memory for reuse
(:func:`metrics_core.allocator.keep_freed_memory`), as the command line does: the temporaries
of each rerun over a large upload are not page-faulted in afresh, and the objects its imports
made are kept out of the garbage collector's full collections (:func:`freeze_startup_objects`).
``metrics-core app`` gives the same malloc settings as ``GLIBC_TUNABLES`` from the process's start
(:func:`metrics_core.allocator.glibc_tunables`): set here, they would come after the server's
first threads, and the script runs could allocate from another arena.
"""

import gc
from pathlib import Path

import streamlit as st
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware

from metrics_core.allocator import keep_freed_memory

keep_freed_memory()


def freeze_startup_objects() -> None:
    """Import what every page uses, then move every object alive into the collector's
    permanent generation (``gc.freeze``), before any browser session exists.

    A full collection after every script run (Streamlit's ``runner.postScriptGC``; here a
    moment after it, :func:`collect_after_each_run_not_in_it`) walks every object the process
    tracks: about 120,000 made by importing Streamlit, pandas, plotly and this project, all
    alive until the process exits. That walk took 50 ms a run on this project's 2-core machine
    (150 ms while the browser draws on the same cores: more than the Gate page's own
    computation). Frozen, each collection walks only what was made since (the sessions' data
    and each run's temporaries). Frozen objects are still freed when their last reference
    goes; no session object is frozen, so what a session holds is collected as before when its
    tab closes.
    """
    import plotly.graph_objects  # noqa: F401  (the charts' figures)

    from dashboard import access, data, display, sidebar, state, upload  # noqa: F401
    from metrics_core.report import decision_record, figures  # noqa: F401

    first_run_imports()
    gc.collect()
    gc.freeze()


def first_run_imports() -> None:
    """What the first run of the first session would otherwise import or set up, while its
    browser waits for the first view: the image reader of the page icon, plotly's JSON
    writer, the evaluation's and the threshold pages' modules, the audit and cohort readers
    of the demo's load; and the stack inspection Streamlit makes once per process, at the
    first element any session draws (``inspect`` then maps every loaded module to its file:
    done here, only the modules imported since are looked at)."""
    import importlib
    import inspect

    from PIL import Image

    for name in ("plotly.io", "plotly.offline", "plotly.tools", "pyarrow.pandas_compat",
                 "dashboard.adjudication", "metrics_core.evaluation.assemble",
                 "metrics_core.evaluation.checks", "metrics_core.evaluation.sections",
                 "metrics_core.evaluation.tables",
                 "metrics_core.inputs.audit", "metrics_core.inputs.cohort_columns",
                 "metrics_core.metrics.decision", "metrics_core.metrics.risk_control",
                 "metrics_core.metrics.risk_coverage"):
        importlib.import_module(name)
    Image.preinit()  # the common formats' readers (the page icon is read on each run)
    inspect.stack()


freeze_startup_objects()


def collect_after_each_run_not_in_it() -> None:
    """No full collection on the script's thread after each run (Streamlit's
    ``runner.postScriptGC``, on by default; set here, for this app only): the app asks for one
    a moment after each run instead (:func:`dashboard.idle.collect_after_run`), once the run's
    end has been sent."""
    from streamlit import config

    config.set_option("runner.postScriptGC", False, where_defined=__file__)


collect_after_each_run_not_in_it()


def release_when_idle() -> None:
    """Once no session is left, let go of what the server kept for them
    (:func:`dashboard.idle.release_when_idle`): its memory returns to its start."""
    from dashboard import idle

    idle.release_when_idle()


release_when_idle()

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
