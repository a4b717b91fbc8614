"""CSV exports that spreadsheets cannot execute (CLI, dashboard and decision records share it).

A text cell that starts with ``=``, ``+``, ``-``, ``@`` (or a tab / carriage return) is read as
a formula by spreadsheet programs (CSV injection). :func:`neutralise_frame` prefixes such text
cells with an apostrophe. Numbers stay numbers: a numeric column is never touched, and a text
cell that is just a number written out (``-0.5``, ``+3``, ``-1e-3``) is left alone too, since
a spreadsheet reads it as that number and nothing else.

Counts are written as whole numbers: a float column of counts (a metric whose registry unit is
``count``, or ``n`` / ``n_positive``; pandas keeps counts as floats beside a missing value)
writes ``86``, not ``86.0``; a cell that is no whole number (a macro mean of counts) keeps its
decimals and a missing one stays empty.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

__all__ = ["FORMULA_PREFIXES", "csv_bytes", "neutralise_cell", "neutralise_frame",
           "whole_counts"]

#: First characters that make a spreadsheet treat a cell as a formula.
FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")

_PLAIN_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
_RISKY = "[" + re.escape("".join(FORMULA_PREFIXES)) + "]"


def neutralise_cell(value):
    """``value`` made safe for a spreadsheet: risky text gets a leading apostrophe."""
    if not isinstance(value, str) or not value.startswith(FORMULA_PREFIXES):
        return value
    if _PLAIN_NUMBER.fullmatch(value):
        return value
    return "'" + value


def _is_text(series: pd.Series) -> bool:
    return pd.api.types.is_string_dtype(series.dtype) or series.dtype == object or isinstance(
        series.dtype, pd.CategoricalDtype)


def neutralise_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` whose text cells and column names cannot run as formulas.

    Numeric, boolean and datetime columns are returned unchanged (``-0.5`` stays a number).
    """
    out = frame.copy()
    out.columns = [neutralise_cell(str(c)) if isinstance(c, str) else c for c in out.columns]
    if out.index.name is not None and isinstance(out.index.name, str):
        out.index.name = neutralise_cell(out.index.name)
    for position in range(out.shape[1]):
        column = out.iloc[:, position]
        if not _is_text(column):
            continue
        if isinstance(column.dtype, pd.CategoricalDtype):
            column = column.astype(object)
        risky = _risky(column)
        if risky is not None and risky.any():
            fixed = column.astype(object)
            fixed[risky] = "'" + column[risky].astype(str)
            out.isetitem(position, fixed)
    if not isinstance(out.index, pd.RangeIndex) and _is_text(out.index.to_series()):
        out.index = pd.Index([neutralise_cell(v) for v in out.index], name=out.index.name)
    return out


def _risky(column: pd.Series) -> pd.Series | None:
    """Mask of text cells that would run as formulas (vectorised; None if no text at all)."""
    try:
        text = column.str
    except AttributeError:  # an object column without any string
        return None
    starts = text.match(_RISKY, na=False).astype(bool)
    number = text.fullmatch(_PLAIN_NUMBER.pattern, na=False).astype(bool)
    return starts & ~number


#: Count columns that are no metric of the registry.
_COUNT_COLUMNS = frozenset({"n", "n_positive", "n_queries", "n_posts", "n_candidates", "n_gold"})


def _is_count(name) -> bool:
    from metrics_core import registry

    if not isinstance(name, str):
        return False
    if name in _COUNT_COLUMNS:
        return True
    try:
        return registry.spec(name).unit == "count"
    except KeyError:
        return False


def whole_counts(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with its float count columns' whole values as integers (the same frame when
    there is none): ``86.0`` -> ``86``, ``105.8`` stays, NaN stays missing.

    >>> whole_counts(pd.DataFrame({"tp": [86.0, None, 105.8]}))["tp"].tolist()
    [86, None, 105.8]
    """
    out = None
    for position in range(frame.shape[1]):
        series = frame.iloc[:, position]
        if not (pd.api.types.is_float_dtype(series) and _is_count(frame.columns[position])):
            continue
        values = series.to_numpy(dtype=np.float64)
        finite = np.isfinite(values)
        whole = finite & (values == np.round(np.where(finite, values, 0.0)))
        if not whole.any():
            continue
        cells = np.where(whole, 0, values).astype(object)
        cells[whole] = [int(v) for v in values[whole]]
        cells[np.isnan(values)] = None
        out = frame.copy() if out is None else out
        out.isetitem(position, pd.Series(cells, index=frame.index, dtype=object))
    return frame if out is None else out


def csv_bytes(frame: pd.DataFrame, *, index: bool = False) -> bytes:
    """``frame`` as UTF-8 CSV bytes with text cells neutralised and counts written as whole
    numbers (see module docstring)."""
    return neutralise_frame(whole_counts(frame)).to_csv(index=index).encode("utf-8")
