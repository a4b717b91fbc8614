"""Downloads of the dashboard: the CSV neutralisation of :mod:`metrics_core.report.export`."""

from metrics_core.report.export import (
    FORMULA_PREFIXES,
    csv_bytes,
    neutralise_cell,
    neutralise_frame,
)

__all__ = ["FORMULA_PREFIXES", "csv_bytes", "neutralise_cell", "neutralise_frame"]
