"""Bounds on one input file (:class:`Limits`), kept free of numpy, pandas and pyarrow.

:mod:`metrics_core.inputs.loading` applies them (and re-exports both names); the command line reads
the defaults for its flags from here, so ``metrics-core --help`` does not import the data stack.
"""

from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral

__all__ = ["DEFAULT_LIMITS", "Limits"]


@dataclass(frozen=True)
class Limits:
    """Bounds on one input file, each checked before the memory it guards is committed.

    The defaults are generous for real data (the reference set is a few MB) and stop hostile
    or broken files (gzip bombs, a file of one endless line, a million columns) with a clear
    :class:`~metrics_core.errors.InputError` instead of exhausting memory.

    Attributes
    ----------
    max_decompressed_bytes : int, default 1 GiB
        Content size after decompression (the file size for an uncompressed file). A gzip
        stream is decompressed chunk by chunk and abandoned at the limit, before anything is
        parsed; for Parquet the uncompressed size recorded in the file's metadata counts.
    max_rows : int, default 50,000,000
        Data rows. Delimited text and JSON Lines count lines while decompressing (a quoted
        value with line breaks counts once per line); Parquet reads the count from its
        metadata; the parsed table is checked again.
    max_columns : int, default 200
        Columns, from the header line (delimited text) or the metadata (Parquet), before the
        rows are parsed.
    max_cell_bytes : int, default 1 MiB
        Bytes of one value (UTF-8 text). Delimited text is scanned for over-long lines before
        parsing (a line longer than ``max_columns`` quoted cells of this size cannot be
        valid); every text value is then checked, naming the column and the rows.

    Examples
    --------
    >>> Limits(max_rows=1_000).max_rows
    1000
    """

    max_decompressed_bytes: int = 1 << 30
    max_rows: int = 50_000_000
    max_columns: int = 200
    max_cell_bytes: int = 1 << 20

    def __post_init__(self) -> None:
        for name in ("max_decompressed_bytes", "max_rows", "max_columns", "max_cell_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")

    @property
    def max_line_bytes(self) -> int:
        """Longest line of delimited text that can still be valid: ``max_columns`` cells of
        ``max_cell_bytes``, each quoted with every character escaped, plus delimiters."""
        return self.max_columns * (2 * self.max_cell_bytes + 3)


#: The limits :func:`~metrics_core.inputs.loading.load` and
#: :func:`~metrics_core.inputs.loading.read_table` apply when given none.
DEFAULT_LIMITS = Limits()
