"""Root pytest configuration: which package files doctest collection must not import.

``pyproject.toml`` runs pytest with ``--doctest-modules`` over ``tests``, ``metrics_core`` and
``dashboard``, so every docstring example runs. Importing these files has effects, so they
are left out of collection: ``metrics_core/__main__.py`` runs the command line and exits,
``dashboard/app.py`` starts the Streamlit app (``dashboard/server.py`` builds its server),
and the page scripts in ``dashboard/app_pages/``
draw Streamlit elements when executed. Their behaviour is covered by tests/test_cli.py,
tests/test_app.py and tests/test_browser.py.
"""

collect_ignore = ["metrics_core/__main__.py", "dashboard/app.py", "dashboard/server.py"]
collect_ignore_glob = ["dashboard/app_pages/*"]
