"""The Streamlit app over :mod:`metrics_core` (``app.py`` is its entry; ``docs/ARCHITECTURE.md``).

A regular package, so that tools that read the import graph (import-linter, tests/test_layers.py)
see exactly this folder's modules.
"""
