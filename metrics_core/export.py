"""CSV exports that spreadsheets cannot execute (CLI, dashboard and decision records share it).

A text cell that starts with ``=``, ``+``, ``-``, ``@`` (or a tab / carriage return) is read as
a formula by spreadsheet programs (CSV injection). :func:`neutralise_frame` prefixes such text
cells with an apostrophe. Numbers stay numbers: a numeric column is never touched, and a text
cell that is just a number written out (``-0.5``, ``+3``, ``-1e-3``) is left alone too, since
a spreadsheet reads it as that number and nothing else.
"""

from __future__ import annotations

import re

import pandas as pd

__all__ = ["FORMULA_PREFIXES", "csv_bytes", "neutralise_cell", "neutralise_frame"]

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


def csv_bytes(frame: pd.DataFrame, *, index: bool = False) -> bytes:
    """``frame`` as UTF-8 CSV bytes with text cells neutralised (see module docstring)."""
    return neutralise_frame(frame).to_csv(index=index).encode("utf-8")
