"""metrics_core: exact, vectorised metrics for evidence retrieval and no-evidence detection.

Definitions live in the data and metric contract (CONTRACT.md); each function cites its section.
"""

__version__ = "0.1.0"
