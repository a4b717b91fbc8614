"""The files shipped inside the package, wherever it is installed.

The demo data (``assets/`` of the repository) and the data and metric contract
(``docs/CONTRACT.md``) are in the package as ``metrics_core/assets`` and
``metrics_core/CONTRACT.md`` (links to the repository's files in a checkout, copies in a
wheel), so an installed ``metrics-core`` finds them without the repository.

>>> ASSETS.name, (ASSETS / "demo_queries.parquet").exists(), CONTRACT.exists()
('assets', True, True)
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["ASSETS", "CONTRACT"]

_PACKAGE = Path(__file__).resolve().parent
#: The folder of the demo data and the app's favicon.
ASSETS = _PACKAGE / "assets"
#: The data and metric contract (Markdown).
CONTRACT = _PACKAGE / "CONTRACT.md"
