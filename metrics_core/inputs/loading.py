"""Reading, column mapping and validation of the input files (contract §2).

The input is either two tables (queries, candidates) or one long table carrying both (one row
per query x sentence, the per-query columns repeated; a query without candidates appears as a
row with an empty ``sent_uid``). Files may be CSV (optionally gzip-compressed), TSV, Parquet or
JSON Lines; uploads arrive as bytes with a file name.

:func:`load` reads, maps column names (:data:`ALIASES`, or an explicit mapping), validates every
rule of contract §2 at once, excludes (never silently) the rows that can be excluded, and builds
the :class:`~metrics_core.data.dataset.Dataset`. Bad input raises
:class:`~metrics_core.errors.InputError` (several problems: :class:`~.errors.InputErrors`) naming
file, column, rule and the first offending 1-based data rows. All checks are vectorised: a
file of 20 million candidate rows validates in a few seconds.
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import io
import json
import math
import os
import zlib
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.json as pa_json
import pyarrow.parquet as pa_parquet
from numpy.lib.stride_tricks import sliding_window_view

from metrics_core.data.dataset import (
    CANDIDATE_COLUMNS,
    QUERY_COLUMNS,
    Dataset,
    dictionary_text,
    is_dictionary_text,
    take_text,
)
from metrics_core.data.ordering import PARALLEL_SORT_ROWS, by_halves, stable_argsort
from metrics_core.errors import InputError, InputErrors, shown_value
from metrics_core.inputs.limits import DEFAULT_LIMITS, Limits
from metrics_core.inputs.parquet import (
    ALIASES,
    ARROW_IDS,
    REPEATED_IDS,
    dictionary_names,
    read_parquet,
)
from metrics_core.inputs.parquet import PARQUET_MAGIC as _PARQUET_MAGIC
from metrics_core.inputs.parquet import check_shape as _check_shape
from metrics_core.inputs.parquet import norm as _norm

#: Ids repeated on every candidate row of a query: read from Parquet as categoricals.
_REPEATED_IDS = REPEATED_IDS

__all__ = ["ALIASES", "EXCLUSION_COLUMNS", "REQUIRED", "Limits", "Loaded", "Sniffed",
           "columns_of", "load", "read_table", "resolve_columns", "sniff"]

#: Required canonical columns per table kind (contract §2).
REQUIRED: dict[str, tuple[str, ...]] = {
    "queries": QUERY_COLUMNS[:4],
    "candidates": CANDIDATE_COLUMNS[:5],
    "long": tuple(dict.fromkeys(QUERY_COLUMNS[:4] + CANDIDATE_COLUMNS[:5])),
}
_KIND_COLUMNS: dict[str, tuple[str, ...]] = {
    "queries": QUERY_COLUMNS,
    "candidates": CANDIDATE_COLUMNS,
    "long": tuple(dict.fromkeys(QUERY_COLUMNS + CANDIDATE_COLUMNS)),
}
#: Canonical columns read as text (ids must stay strings: post "007" is not post 7).
_TEXT_COLUMNS = ("post_id", "criterion", "sent_uid", "split", "sentence")
#: Columns of :attr:`Loaded.exclusions`.
EXCLUSION_COLUMNS = ("file", "row", "post_id", "criterion", "sent_uid", "column", "reason")

_NA_TOKENS = frozenset({"", "nan", "-nan", "na", "n/a", "nat", "null", "none", "<na>"})
_TRUE_TOKENS = ("1", "1.0", "true")
_FALSE_TOKENS = ("0", "0.0", "false")
_GZIP_MAGIC = b"\x1f\x8b"
_CHUNK = 1 << 20  # bytes read or decompressed at a time while scanning
_MAX_BLOCK = (1 << 31) - 1  # largest block pyarrow's CSV reader takes


_ALIAS_OWNER = {_norm(a): canon for canon, names in ALIASES.items() for a in (canon, *names)}


# ---------------------------------------------------------------------------------- reading
def read_table(source, *, name: str | None = None,
               string_columns=(), limits: Limits | None = None,
               category_columns=(), arrow_dictionary_columns=()) -> pd.DataFrame:
    """Read one input table from a path or from bytes (contract §2, formats).

    Parameters
    ----------
    source : str, os.PathLike, bytes, binary file-like or pyarrow.Table
        A path, or the file's content (an upload). File-like objects are read whole. An Arrow
        table counts as a Parquet file read already (:func:`metrics_core.run.open_run`'s
        ``tables``): its text values are checked and it is converted as a Parquet file's
        table is.
    name : str, optional
        File name used to pick the format and in error messages (default: the path's name).
    string_columns : iterable of str, optional
        Further column names to read as text, on top of every column whose name is an id-like
        canonical name or alias (``post_id``, ``criterion``, ``sent_uid``, ``split``,
        ``sentence``): ids such as ``"007"`` stay strings.
    limits : Limits, optional
        Bounds on size, rows, columns and cell size (default :data:`DEFAULT_LIMITS`), each
        checked before the memory it guards is committed.
    category_columns : iterable of str, optional
        Parquet only: text columns of these names (matched as column names are, ignoring
        case, spaces and hyphens) are read as pandas categoricals of their strings, straight
        from the file's dictionary encoding. Ids that repeat on many rows (``post_id`` and
        ``criterion`` of a candidates table) then cost one small code per row instead of one
        string; the values are the same.
    arrow_dictionary_columns : iterable of str, optional
        Parquet only: text columns of these names are read as Arrow dictionaries too, and kept
        so in the frame (a pandas ``ArrowDtype`` of the file's dictionary chunks, one per row
        group, as read): no string per row, and no pandas categorical, whose categories would
        need one dictionary for all row groups.

    Returns
    -------
    pandas.DataFrame
        The table as read; column names unchanged.

    Raises
    ------
    InputError
        The path is missing or is a directory; the file is empty, has no data rows, cannot be
        parsed (bad compression, broken text, random bytes), has duplicate column names, or
        exceeds one of the ``limits``. Never another exception for any file content.

    Notes
    -----
    The format comes from the name's extension (``.csv``, ``.tsv``, ``.parquet``/``.pq``,
    ``.jsonl``/``.ndjson``, each optionally ``.gz``); without a known extension, from the
    content (Parquet and gzip magic bytes, JSON Lines if the text starts with ``{``, else
    delimited text with the delimiter sniffed from the header line).
    """
    limits = DEFAULT_LIMITS if limits is None else limits
    if not isinstance(limits, Limits):
        raise TypeError(f"limits must be a Limits, got {type(limits).__name__}")
    if isinstance(source, pa.Table):  # read already (as Parquet is read: see above)
        data = path = head = None
        table, name, fmt = source, name or "<table>", "parquet"
    else:
        table = None
        data, path, name, head, fmt = _open(source, name)
    try:
        if fmt == "parquet":
            table = (read_parquet(path, data, name, limits,
                                  [*category_columns, *arrow_dictionary_columns])
                     if table is None else table)
            _check_table(table, name, limits)
            frame = _to_pandas(table, arrow_dictionary_columns)
        else:
            _check_text(head, name)
            # old Mac files end lines with CR alone
            newline = b"\r" if b"\n" not in head and b"\r" in head else b"\n"
            scan = _scan(data, path, name, limits, count_lines=fmt != "json", newline=newline)
            if fmt == "json":
                frame = pd.read_json(io.BytesIO(_raw_text(data, path)), dtype=False)
                _check_frame(frame, name, limits)
            elif fmt == "jsonl":
                frame = _read_jsonl(data, path, name, limits)
            else:
                frame = _read_delimited(data, path, head, fmt, set(string_columns), name,
                                        limits, scan)
    except InputError:
        raise
    except (pa.ArrowException, OSError, ValueError, UnicodeError, EOFError, csv.Error,
            zlib.error, TypeError, KeyError, IndexError, OverflowError, RecursionError) as exc:
        raise InputError(_reason(f"cannot read the file as {fmt.upper()}", exc),
                         file=name) from exc
    if len(frame) == 0:
        raise InputError("file has no data rows", file=name,
                         hint=f"columns found: {_list(frame.columns)}", code="no_data")
    # Lines before data row 1, for messages with line numbers as an editor counts them: the
    # header line of delimited text; none in JSON Lines; Parquet and JSON have no lines.
    frame.attrs["line_offset"] = {"csv": 1, "tsv": 1, "jsonl": 0}.get(fmt)
    frame.columns = [str(c) for c in frame.columns]
    if len(set(frame.columns)) < len(frame.columns):
        cols = list(frame.columns)
        dupes = sorted({c for c in cols if cols.count(c) > 1})
        raise InputError(f"duplicate column names: {_list(dupes)}", file=name,
        code="duplicate_column")
    return frame


def _to_pandas(table: pa.Table, arrow_dictionary_columns) -> pd.DataFrame:
    """The frame of a Parquet table; its dictionary columns named in
    ``arrow_dictionary_columns`` stay Arrow dictionaries (see :func:`read_table`)."""
    wanted = {_norm(c) for c in arrow_dictionary_columns}
    kept = [i for i, f in enumerate(table.schema)
            if _norm(f.name) in wanted and is_dictionary_text(f.type)]
    if not kept:
        return table.to_pandas()
    frame = table.drop_columns([table.schema[i].name for i in kept]).to_pandas()
    for i in kept:  # at its place among the columns
        frame.insert(i, table.schema[i].name,
                     pd.Series(pd.arrays.ArrowExtensionArray(table.column(i)), index=frame.index))
    return frame


def _open(source, name):
    """(bytes or None, path or None, display name, first content bytes, format) of a source."""
    data, path, name = _source_bytes(source, name)
    head = _head(data, path, name)
    if not head.strip():
        raise InputError("file is empty", file=name, code="no_data")
    return data, path, name, head, _detect_format(name, head)


def _brief(exc: BaseException, limit: int = 200) -> str:
    """A parser's message on one line, printable, at most ``limit`` characters (an Arrow
    message may quote a whole line of random bytes)."""
    text = " ".join(str(exc).split())
    text = "".join(ch if ch.isprintable() and ch != "\ufffd" else "?" for ch in text)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _reason(what: str, exc: BaseException) -> str:
    """``what: the parser's message``, or ``what`` alone when the parser said nothing (never a
    dangling colon)."""
    brief = _brief(exc).strip().rstrip(":").strip()
    return f"{what}: {brief}" if brief else what


def _check_text(head: bytes, name) -> None:
    """Text formats must be UTF-8: say so up front for UTF-16 files and binary data, instead of
    a parser error quoting random bytes."""
    if head[:2] in (b"\xff\xfe", b"\xfe\xff"):
        raise InputError("the file is UTF-16 text; text files must be UTF-8", file=name,
                         hint="save it as UTF-8 (e.g. \"CSV UTF-8\" in a spreadsheet)")
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 3:  # not just a character cut at the end of the head
            raise InputError(
                "the file is not UTF-8 text", file=name,
                hint=f"byte 0x{head[exc.start]:02x} at offset {exc.start} is not valid UTF-8; "
                     f"binary data, or text in another encoding (save it as UTF-8)") from None
    nul = head.find(b"\x00")
    if nul >= 0:
        raise InputError("the file is not UTF-8 text", file=name,
                         hint=f"it holds NUL bytes (offset {nul}): binary data, or UTF-16 "
                              f"without a byte-order mark")


def _source_bytes(source, name):
    """(bytes or None, path or None, display name) of an input source."""
    if isinstance(source, bytes | bytearray | memoryview):
        return bytes(source), None, name or "<upload>"
    if isinstance(source, str | os.PathLike):
        path = Path(source)
        if path.is_dir():
            raise InputError("is a directory, not a file", file=name or str(source),
                             hint="give the path of a CSV, TSV, Parquet or JSON Lines file")
        if not path.exists():
            raise InputError("file not found", file=name or str(source))
        if not path.is_file():
            raise InputError("not a regular file", file=name or str(source))
        return None, path, name or path.name
    if hasattr(source, "getvalue"):
        return bytes(source.getvalue()), None, name or getattr(source, "name", None) or "<upload>"
    if hasattr(source, "read"):
        return bytes(source.read()), None, name or getattr(source, "name", None) or "<upload>"
    raise TypeError(f"source must be a path, bytes or a binary file object, "
                    f"got {type(source).__name__}")


def _head(data, path, name, size=1 << 16) -> bytes:
    """The first bytes of the (decompressed) content."""
    try:
        if data is not None:
            raw = data[:size]
            if raw[:2] == _GZIP_MAGIC:
                with gzip.GzipFile(fileobj=io.BytesIO(data)) as fh:
                    return fh.read(size)
            return raw
        with open(path, "rb") as fh:
            raw = fh.read(size)
        if raw[:2] == _GZIP_MAGIC:
            with gzip.open(path, "rb") as fh:
                return fh.read(size)
        return raw
    except (OSError, EOFError, zlib.error) as exc:
        raise InputError(_reason("cannot read the file", exc), file=name) from exc


@dataclass(frozen=True)
class _Scan:
    """What a streaming pass over the (decompressed) content found."""

    n_bytes: int
    n_lines: int  # line breaks (a last line without one counts too)
    longest_line: int  # bytes


def _raw_chunks(data, path):
    """The stored bytes, chunk by chunk."""
    if data is not None:
        view = memoryview(data)
        for i in range(0, len(view), _CHUNK):
            yield view[i:i + _CHUNK]
        return
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            yield chunk


def _content_chunks(data, path, name):
    """The content, decompressed chunk by chunk when it is gzip (no chunk over _CHUNK bytes
    of output, so a bomb never expands in memory); concatenated gzip members follow on."""
    raw = _raw_chunks(data, path)
    first = next(raw, b"")
    if bytes(first[:2]) != _GZIP_MAGIC:
        if first:
            yield bytes(first)
        for chunk in raw:
            yield bytes(chunk)
        return
    inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)

    def pending(chunk):
        nonlocal inflate
        while chunk:
            out = inflate.decompress(chunk, _CHUNK)
            chunk = inflate.unconsumed_tail
            if out:
                yield out
            if inflate.eof:
                rest = inflate.unused_data
                if rest[:2] != _GZIP_MAGIC:
                    return  # trailing bytes after the last member are ignored, as gzip does
                inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
                chunk = rest

    try:
        for chunk in _chain(first, raw):
            yield from pending(bytes(chunk))
        if not inflate.eof:
            raise InputError("the gzip data ends early (truncated file)", file=name)
    except zlib.error as exc:
        raise InputError(f"cannot decompress the file: {_brief(exc)}", file=name) from exc


def _chain(first, rest):
    yield first
    yield from rest


def _scan(data, path, name, limits: Limits, *, count_lines: bool = True,
          newline: bytes = b"\n") -> _Scan:
    """Stream over the content once, keeping nothing, and stop at the first limit exceeded:
    decompressed size, rows (lines) and line length. Runs before any parsing.

    ``longest_line`` is exact for lines that cross a chunk boundary; lines inside one chunk
    are shorter than a chunk (1 MiB), which is all the callers need to know about them.
    """
    n_bytes = n_lines = longest = run = 0
    max_lines = limits.max_rows + 1  # the header line
    max_line = limits.max_line_bytes
    last = newline
    for chunk in _content_chunks(data, path, name):
        n_bytes += len(chunk)
        if n_bytes > limits.max_decompressed_bytes:
            raise InputError(
                f"content exceeds the size limit of {limits.max_decompressed_bytes:,} bytes "
                f"(after decompression)", file=name,
                hint="raise Limits.max_decompressed_bytes if the file is genuine",
                code="too_large")
        if not count_lines:
            continue
        found = chunk.count(newline)
        if found:
            n_lines += found
            longest = max(longest, run + chunk.find(newline))
            run = len(chunk) - 1 - chunk.rfind(newline)
        else:
            run += len(chunk)
        longest = max(longest, run)
        last = chunk[-1:]
        if n_lines > max_lines:
            raise InputError(
                f"more than {limits.max_rows:,} rows: the row limit", file=name,
                hint="counted as lines while reading; raise Limits.max_rows if the file "
                     "is genuine", code="too_large")
        if longest > max_line:
            raise InputError(
                f"a line is longer than {max_line:,} bytes: no more than "
                f"{limits.max_columns} cells of at most {limits.max_cell_bytes:,} bytes fit "
                f"in a line", file=name,
                hint="raise Limits.max_cell_bytes or Limits.max_columns if the file is "
                     "genuine", code="too_large")
    if count_lines and n_bytes and last != newline:
        n_lines += 1
    return _Scan(n_bytes, n_lines, longest)


def _check_table(table: pa.Table, name, limits: Limits) -> None:
    """Rows, columns and the byte length of every text value of a parsed Arrow table."""
    _check_shape(table.num_rows, table.num_columns, name, limits)
    for column_name, column in zip(table.column_names, table.columns, strict=True):
        if pa.types.is_dictionary(column.type):
            # Every value is one of its chunk's dictionary: check those, and decode the
            # column (to find the rows) only when one of them is over the limit.
            if not (pa.types.is_string(column.type.value_type)
                    or pa.types.is_large_string(column.type.value_type)
                    or pa.types.is_binary(column.type.value_type)
                    or pa.types.is_large_binary(column.type.value_type)):
                continue
            longest = max((value for chunk in column.chunks if len(chunk.dictionary)
                           if (value := pc.max(pc.binary_length(chunk.dictionary)).as_py())
                           is not None), default=None)
            if longest is None or longest <= limits.max_cell_bytes:
                continue
            column = column.cast(column.type.value_type)
        if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)
                or pa.types.is_binary(column.type) or pa.types.is_large_binary(column.type)):
            continue
        # The longest value, chunk by chunk: no column-long array of lengths at once.
        chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
        longest = max((value for chunk in chunks if len(chunk)
                       if (value := _length_range(chunk)[1]) is not None), default=None)
        if longest is not None and longest > limits.max_cell_bytes:
            lengths = pc.binary_length(column)
            too_long = np.asarray(pc.fill_null(pc.greater(lengths, limits.max_cell_bytes),
                                               False).to_numpy(zero_copy_only=False))
            raise InputError.from_mask(
                too_long, f"values must be at most {limits.max_cell_bytes:,} bytes (the cell "
                          f"size limit)", row_numbers=np.arange(1, len(too_long) + 1),
                file=name, column=str(column_name),
                hint=f"the longest has {longest:,} bytes; raise Limits.max_cell_bytes if "
                     f"the file is genuine", code="too_large")


#: Values whose byte lengths :func:`_length_range` reads at a time (an 8 MB buffer, reused).
_LENGTH_BLOCK = 1 << 20
#: Offset width of the text and binary layouts :func:`_length_range` reads directly.
_OFFSET_WIDTH = MappingProxyType({pa.string(): np.int32, pa.binary(): np.int32,
                                  pa.large_string(): np.int64, pa.large_binary(): np.int64})


def _length_range(chunk: pa.Array) -> tuple[int | None, int | None]:
    """(shortest, longest) byte length of the non-null values of a string or binary array,
    (None, None) without any: ``pc.min`` / ``pc.max`` of ``pc.binary_length``.

    Without nulls, the lengths are read from the array's offsets a block at a time, in a buffer
    numpy reuses; Arrow's kernel allocates an array of every length per call (160 MB for 20M
    values, page-faulted anew each time).
    """
    width = _OFFSET_WIDTH.get(chunk.type)
    if width is None or chunk.null_count or len(chunk) == 0:
        lengths = pc.binary_length(chunk)
        return pc.min(lengths).as_py(), pc.max(lengths).as_py()
    offsets = np.frombuffer(chunk.buffers()[1], dtype=width)[
        chunk.offset:chunk.offset + len(chunk) + 1]
    shortest, longest = None, None
    for lo in range(0, len(chunk), _LENGTH_BLOCK):
        lengths = np.diff(offsets[lo:lo + _LENGTH_BLOCK + 1])
        low, high = int(lengths.min()), int(lengths.max())
        shortest = low if shortest is None else min(shortest, low)
        longest = high if longest is None else max(longest, high)
    return shortest, longest


def _check_frame(frame: pd.DataFrame, name, limits: Limits) -> None:
    """:func:`_check_table` for a table pandas parsed (text columns only)."""
    _check_shape(len(frame), len(frame.columns), name, limits)
    text = {str(c): pa.array(frame.iloc[:, i].astype("str").array)
            for i, c in enumerate(frame.columns)
            if pd.api.types.is_object_dtype(frame.dtypes.iloc[i])
            or isinstance(frame.dtypes.iloc[i], pd.StringDtype)}
    if text:
        _check_table(pa.table(text), name, Limits(
            max_decompressed_bytes=limits.max_decompressed_bytes, max_rows=limits.max_rows,
            max_columns=max(limits.max_columns, len(text)),
            max_cell_bytes=limits.max_cell_bytes))


def _detect_format(name: str, head: bytes) -> str:
    if head[:4] == _PARQUET_MAGIC:
        return "parquet"
    lower = name.lower()
    for suffix in (".gz", ".gzip"):
        lower = lower.removesuffix(suffix)
    ext = Path(lower).suffix
    by_ext = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".parquet": "parquet",
              ".pq": "parquet", ".jsonl": "jsonl", ".ndjson": "jsonl"}
    if ext in by_ext:
        return by_ext[ext]
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if text[:1] == b"{":
        return "jsonl"
    if text[:1] == b"[":
        return "json"
    return "csv"


def _input_stream(data, path):
    if data is not None:
        compression = "gzip" if data[:2] == _GZIP_MAGIC else None
        return pa.input_stream(pa.py_buffer(data), compression=compression)
    with open(path, "rb") as fh:
        compression = "gzip" if fh.read(2) == _GZIP_MAGIC else None
    return pa.input_stream(str(path), compression=compression)


def _raw_text(data, path) -> bytes:
    with _input_stream(data, path) as stream:
        return stream.read()


def _read_delimited(data, path, head: bytes, fmt: str, string_columns: set,
                    name: str, limits: Limits = DEFAULT_LIMITS,
                    scan: _Scan | None = None) -> pd.DataFrame:
    text = head.decode("utf-8-sig", errors="replace")
    first_line = text.splitlines()[0] if text.splitlines() else ""
    if fmt == "tsv":
        delimiter = "\t"
    else:
        counts = {d: first_line.count(d) for d in (",", "\t", ";")}
        delimiter = max(counts, key=lambda d: (counts[d], d == ","))
    # newline=None: CR-only and CR LF line ends read like LF ones
    header = next(csv.reader(io.StringIO(text, newline=None), delimiter=delimiter), [])
    if len(header) > limits.max_columns:
        _check_shape(0, len(header), name, limits)
    if len(set(header)) < len(header):
        dupes = sorted({h for h in header if header.count(h) > 1})
        raise InputError(f"duplicate column names: {_list(dupes)}", file=name,
                         code="duplicate_column")
    as_text = {h: pa.string() for h in header
               if h in string_columns or _ALIAS_OWNER.get(_norm(h)) in _TEXT_COLUMNS}
    convert = pa_csv.ConvertOptions(column_types=as_text, strings_can_be_null=False)
    # A block must hold the longest line (the default 1 MiB does not hold a long sentence).
    longest = 0 if scan is None else scan.longest_line
    block = int(min(max(1 << 20, 2 * longest + 1024), _MAX_BLOCK))

    def parse(newlines_in_values: bool, block_size: int) -> pa.Table:
        with _input_stream(data, path) as stream:
            return pa_csv.read_csv(
                stream, convert_options=convert,
                read_options=pa_csv.ReadOptions(block_size=block_size),
                parse_options=pa_csv.ParseOptions(delimiter=delimiter,
                                                  newlines_in_values=newlines_in_values))

    try:
        table = parse(False, block)
    except pa.ArrowInvalid:
        # Quoted values with line breaks (sentence text) need the slower parser setting.
        try:
            table = parse(True, block)
        except pa.ArrowInvalid as exc:
            if "straddl" not in str(exc) or scan is None:
                raise
            # A record spanning many lines: one block holding the whole (bounded) content.
            table = parse(True, int(min(scan.n_bytes + 1024, _MAX_BLOCK)))
    _check_table(table, name, limits)
    return table.to_pandas()


def _read_jsonl(data, path, name: str = "<upload>",
                limits: Limits = DEFAULT_LIMITS) -> pd.DataFrame:
    try:
        with _input_stream(data, path) as stream:
            table = pa_json.read_json(stream)
    except pa.ArrowInvalid:
        # Mixed value types in one field (e.g. ids written as both 7 and "007"): pandas
        # keeps every value as written.
        frame = pd.read_json(io.BytesIO(_raw_text(data, path)), lines=True, dtype=False)
        _check_frame(frame, name, limits)
        return frame
    _check_table(table, name, limits)
    return table.to_pandas()


def _list(names, limit=20) -> str:
    names = [str(n) for n in names]
    more = f", ... ({len(names) - limit} more)" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


# ----------------------------------------------------------------------- column mapping
def _match_columns(columns, kind: str, mapping: Mapping | None, file: str | None,
                   *, require: bool = True):
    """Decide which source column becomes which canonical column.

    Returns ``(column_map, errors)``; ``column_map`` is {canonical: source}. An explicit
    ``mapping`` entry wins (``None`` means "no column for this canonical name"); then the
    canonical name itself (other aliases present are then left unused); then the aliases. Two
    columns matching one canonical name otherwise is ambiguous and an error.
    """
    columns = [str(c) for c in columns]
    wanted = _KIND_COLUMNS[kind]
    by_norm: dict[str, list[str]] = {}
    for c in columns:
        by_norm.setdefault(_norm(c), []).append(c)
    result: dict[str, str | None] = {}
    errors: list[InputError] = []
    for canon, src in (mapping or {}).items():
        if canon not in wanted:
            continue
        if src is None:
            result[canon] = None
            continue
        found = [src] * columns.count(src) if src in columns else by_norm.get(_norm(src), [])
        if len(found) == 1:
            result[canon] = found[0]
        else:
            result[canon] = None
            errors.append(InputError(
                "mapped column not found" if not found else "mapped column name is ambiguous",
                file=file, column=str(src), hint=f"columns found: {_list(columns)}",
                code="bad_mapping"))
    mapped = [v for v in result.values() if v is not None]
    for src in sorted({s for s in mapped if mapped.count(s) > 1}):
        errors.append(InputError(
            "one column cannot be mapped to two canonical columns", file=file, column=src,
            hint="mapped to " + ", ".join(k for k, v in result.items() if v == src),
            code="bad_mapping"))
    used = set(mapped)
    for canon in wanted:
        if canon in result:
            continue
        exact = [c for c in by_norm.get(canon, []) if c not in used]
        others = [c for a in ALIASES[canon] for c in by_norm.get(_norm(a), []) if c not in used]
        if len(exact) > 1 or (not exact and len(others) > 1):
            result[canon] = None
            errors.append(InputError(
                f"several columns match '{canon}': {_list(exact or others)}", file=file,
                hint="choose one with a column mapping", code="ambiguous_column"))
        elif exact or others:
            result[canon] = (exact or others)[0]
    column_map = {k: v for k, v in result.items() if v is not None}
    if require:
        for canon in REQUIRED[kind]:
            if canon not in result:
                errors.append(InputError(
                    "required column is missing", file=file, column=canon,
                    hint=f"columns found: {_list(columns)}; accepted names: "
                         f"{_list((canon, *ALIASES[canon]))}; or map a column by hand",
                         code="missing_column"))
            elif result[canon] is None and canon in (mapping or {}) and mapping[canon] is None:
                errors.append(InputError("required column is mapped to nothing", file=file,
                                         column=canon, code="bad_mapping"))
    return column_map, errors


def resolve_columns(df: pd.DataFrame, kind: str, *, mapping: Mapping | None = None,
                    file: str | None = None) -> pd.DataFrame:
    """Rename a table's columns to the canonical names of contract §2.

    Parameters
    ----------
    df : pandas.DataFrame
        The table as read.
    kind : {"queries", "candidates", "long"}
        Which table it is (``"long"``: one table carrying both).
    mapping : mapping of str to str or None, optional
        Explicit ``{canonical: source_column}`` choices; they win over :data:`ALIASES`.
        ``None`` as a source means "do not use any column for this canonical name".
    file : str, optional
        File name for error messages.

    Returns
    -------
    pandas.DataFrame
        Only the recognised columns, renamed to canonical names, in canonical order.

    Raises
    ------
    InputError
        A required column is missing, a mapped column does not exist, or two columns match
        one canonical name (all problems at once, as :class:`InputErrors` if several).
    """
    if kind not in _KIND_COLUMNS:
        raise ValueError(f"kind must be one of {sorted(_KIND_COLUMNS)}, got {kind!r}")
    _check_mapping(mapping)
    column_map, errors = _match_columns(df.columns, kind, mapping, file)
    InputErrors.raise_if_any(errors)
    return pd.DataFrame({c: s.array for c, s in _renamed(df, column_map).items()})


def _renamed(df: pd.DataFrame, column_map: dict) -> dict[str, pd.Series]:
    """The mapped columns by canonical name, in canonical order, index reset (no copy)."""
    return {c: df[column_map[c]].reset_index(drop=True) for c in _KIND_COLUMNS["long"]
            if c in column_map}


def _check_mapping(mapping) -> None:
    if mapping is None:
        return
    if not isinstance(mapping, Mapping):
        raise ValueError(f"mapping must be a mapping of canonical name to column, "
                         f"got {type(mapping).__name__}")
    unknown = [k for k in mapping if k not in _KIND_COLUMNS["long"]]
    if unknown:
        raise ValueError(f"mapping has unknown canonical column(s) {unknown}; "
                         f"known: {list(_KIND_COLUMNS['long'])}")


# ------------------------------------------------------------------------- value checks
def _nan_like(values: pd.Series, idx: np.ndarray) -> np.ndarray:
    """Which of ``values[idx]`` are missing (null or an NA token such as "" or "nan")."""
    sub = values.iloc[idx]
    tokens = sub.astype("str").str.strip().str.lower()
    return (sub.isna() | tokens.isin(_NA_TOKENS)).to_numpy(dtype=bool)


def _as_float(s: pd.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(float64 values, missing mask, non-numeric mask)."""
    if s.dtype == np.float64 and isinstance(s.dtype, np.dtype):  # the usual case: no copy
        values = s.to_numpy()
        return values, np.isnan(values), np.zeros(len(values), dtype=bool)
    if pd.api.types.is_numeric_dtype(s.dtype):
        values = s.to_numpy(dtype=np.float64, na_value=np.nan)
        return values, np.isnan(values), np.zeros(len(values), dtype=bool)
    values = pd.to_numeric(s, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
    nan_idx = np.flatnonzero(np.isnan(values))
    missing = np.zeros(len(values), dtype=bool)
    missing[nan_idx] = _nan_like(s, nan_idx)
    return values, missing, np.isnan(values) & ~missing


def _as_binary(s: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """(int8 0/1 values, invalid mask); accepts bool, 0/1 numbers, "0"/"1", "true"/"false"."""
    if (pd.api.types.is_integer_dtype(s.dtype) or pd.api.types.is_bool_dtype(s.dtype)) \
            and isinstance(s.dtype, np.dtype):  # the usual case: no float copy of the column
        v = s.to_numpy()
        one = v == 1
        return one.view(np.int8), ~(one | (v == 0))
    if pd.api.types.is_numeric_dtype(s.dtype):
        v = s.to_numpy(dtype=np.float64, na_value=np.nan)
        one = v == 1
        return one.astype(np.int8), ~(one | (v == 0))
    tokens = s.astype("str").str.strip().str.lower()
    one = tokens.isin(_TRUE_TOKENS).to_numpy(dtype=bool)
    zero = tokens.isin(_FALSE_TOKENS).to_numpy(dtype=bool)
    return one.astype(np.int8), ~(one | zero)


def _as_text(s: pd.Series) -> tuple[pd.Series, np.ndarray]:
    """(string values, missing-or-empty mask); numbers read from typed files become their
    integer text ("7", not "7.0"). A categorical of strings stays one: its codes say which
    rows are missing or empty; so does a column of Arrow dictionary chunks."""
    chunks = _dictionary_chunks(s)
    if chunks is not None:
        return s.reset_index(drop=True), _dictionary_missing(chunks, len(s))
    if _string_categories(s):
        codes = np.asarray(s.array.codes)
        missing = codes < 0
        empty = np.asarray(s.cat.categories == "", dtype=bool)
        if empty.any():
            missing |= empty[codes] & ~missing
        return s.reset_index(drop=True), missing
    if pd.api.types.is_float_dtype(s.dtype):
        v = s.to_numpy(dtype=np.float64, na_value=np.nan)
        finite = v[np.isfinite(v)]
        if np.all((finite == np.round(finite)) & (np.abs(finite) < 2.0**53)):
            s = pd.Series(v).astype("Int64")
    elif pd.api.types.is_bool_dtype(s.dtype) and s.dtype != object:
        s = s.astype("boolean")
    text = s.astype("str")
    if isinstance(s.dtype, pd.StringDtype) and s.dtype.storage == "pyarrow" and len(s):
        arr = _arrow(s)  # Arrow strings already: no null and no empty value is the usual case
        if arr.null_count == 0 and all(_length_range(chunk)[0] > 0
                                       for chunk in arr.chunks if len(chunk)):
            return text.reset_index(drop=True), np.zeros(len(s), dtype=bool)
    missing = s.isna().to_numpy(dtype=bool) | (text == "").to_numpy(dtype=bool, na_value=True)
    return text.reset_index(drop=True), missing


def _string_categories(s: pd.Series) -> bool:
    """Whether ``s`` is a categorical whose categories are all strings (as Parquet
    dictionaries read by :func:`read_table` are): its codes then stand for its text."""
    if not isinstance(s.dtype, pd.CategoricalDtype):
        return False
    categories = s.cat.categories
    return (isinstance(categories.dtype, pd.StringDtype)
            or pd.api.types.infer_dtype(categories, skipna=False) in ("string", "empty"))


def _dictionary_chunks(s: pd.Series) -> list[pa.DictionaryArray] | None:
    """The chunks of :func:`~metrics_core.data.dataset.dictionary_text`, else None."""
    chunked = dictionary_text(s)
    return None if chunked is None else list(chunked.chunks)


def _dictionary_missing(chunks: list, n: int) -> np.ndarray:
    """Rows of dictionary chunks that are null or the empty string."""
    missing = np.zeros(n, dtype=bool)
    start = 0
    for chunk in chunks:
        size = len(chunk)
        bad = (pc.equal(pc.binary_length(chunk.dictionary), 0).fill_null(True)
               .to_numpy(zero_copy_only=False))
        if chunk.null_count or bad.any():
            codes = chunk.indices.fill_null(0).to_numpy()
            part = bad[codes] if bad.size else np.zeros(size, dtype=bool)
            if chunk.null_count:
                part |= chunk.indices.is_null().to_numpy(zero_copy_only=False)
            missing[start:start + size] = part
        start += size
    return missing


def _dictionary_codes(chunks: list) -> np.ndarray:
    """The int64 codes of dictionary chunks, each into its own chunk's dictionary."""
    if not chunks:
        return np.zeros(0, dtype=np.int64)
    return np.concatenate([c.indices.fill_null(-1).to_numpy() for c in chunks]).astype(
        np.int64, copy=False)


def _dictionary_strings(chunks: list, rows: np.ndarray) -> list[str]:
    """The text of ``rows`` of dictionary chunks, decoding those rows only."""
    return take_text(pa.chunked_array(chunks), rows)


def _all_missing(s: pd.Series) -> bool:
    """True when a column holds no value at all (null or empty text everywhere)."""
    if pd.api.types.is_numeric_dtype(s.dtype):
        return bool(s.isna().all())
    return bool(_as_text(s)[1].all())


class _Checker:
    """Validates the columns of one table and collects every problem found.

    ``rows`` are the 1-based data-row numbers of the checked rows in the source file;
    ``column_map`` turns canonical names into the file's own names for messages.
    """

    def __init__(self, file: str | None, rows: np.ndarray, column_map: dict,
                 errors: list[InputError]) -> None:
        self.file, self.rows, self.column_map, self.errors = file, rows, column_map, errors
        self.ids_ok = True  # no empty id: key-based checks can run

    def flag(self, mask, rule: str, canon: str | None = None, *, hint: str | None = None,
             rows: np.ndarray | None = None, values=None) -> None:
        """Record an error for the rows in ``mask``; ``values`` (the checked values, or a
        callable of the offending positions) puts the offending values in the message."""
        if mask.any():
            error = InputError.from_mask(
                mask, rule, row_numbers=self.rows if rows is None else rows, file=self.file,
                column=None if canon is None else self.column_map.get(canon, canon),
                hint=hint, values=values)
            if all(str(e) != str(error) for e in self.errors):  # a long table: checked twice
                self.errors.append(error)

    def scalars(self, s: pd.Series, canon: str) -> np.ndarray:
        """Flag records and lists (a JSON object, a Parquet struct or list) where one value
        belongs; returns the mask of flagged rows (``np.False_`` for a column whose type
        holds none: no column-long mask to build and scan)."""
        if not _may_nest(s.dtype):
            return np.False_
        nested = _nested(s)
        self.flag(nested, "values must be single values, not nested objects or lists", canon,
                  hint="flatten the field into plain text or numbers")
        return nested

    def numeric_type(self, s: pd.Series, canon: str) -> bool:
        """Flag a column stored as dates or times where numbers belong; True if flagged."""
        if not _temporal(s.dtype):
            return False
        self.flag(np.ones(len(s), dtype=bool), "values must be numbers, not dates or times",
                  canon, hint=f"the column is stored as {s.dtype}")
        return True

    def ids(self, s: pd.Series, canon: str) -> pd.Series:
        nested = self.scalars(s, canon)
        values, missing = _as_text(s)
        if nested.any():
            self.ids_ok = False
        if missing.any():
            self.ids_ok = False
            self.flag(missing, "values must not be empty", canon)
        return values

    def binary(self, s: pd.Series, canon: str) -> np.ndarray:
        if s.dtype in (np.int8, np.bool_) and isinstance(s.dtype, np.dtype) and len(s):
            values = s.to_numpy().view(np.int8)
            if values.min() >= 0 and values.max() <= 1:  # the usual column: nothing to flag
                return values
        if self.numeric_type(s, canon):
            return np.zeros(len(s), dtype=np.int8)
        nested = self.scalars(s, canon)
        values, bad = _as_binary(s)
        self.flag(bad & ~nested, "values must be 0 or 1", canon, values=s)
        return values

    def number(self, s: pd.Series, canon: str, *, unit_interval: bool = False):
        """(float values, missing mask); missing values are for the caller to exclude."""
        if s.dtype == np.float64 and isinstance(s.dtype, np.dtype):
            values = s.to_numpy()
            # The usual column: no NaN and no infinity, as one sum says (either makes the sum
            # NaN or infinite; finite values whose sum overflows take the full checks).
            if math.isfinite(np.add.reduce(values)):
                if unit_interval:
                    self.flag((values < 0) | (values > 1), "values must be within [0, 1]",
                              canon, values=s)
                return values, np.zeros(len(values), dtype=bool)
        if self.numeric_type(s, canon):
            return np.zeros(len(s)), np.zeros(len(s), dtype=bool)
        nested = self.scalars(s, canon)
        values, missing, bad = _as_float(s)
        self.flag(bad & ~nested, "values must be numbers", canon, values=s)
        if unit_interval:
            self.flag((values < 0) | (values > 1), "values must be within [0, 1]", canon,
                      values=s)
        else:
            self.flag(np.isinf(values), "values must be finite", canon, values=s)
        return values, missing

    def integer(self, s: pd.Series, canon: str, *, minimum: int | None = None) -> np.ndarray:
        """Whole numbers (``minimum``: 1 for positive, 0 for non-negative); invalid -> 0.

        Magnitudes above 2^53 are rejected: they would not survive the float arithmetic
        downstream (and text such as 99999999999999999999 would otherwise wrap around).
        """
        rule = {None: "values must be integers", 0: "values must be non-negative integers",
                1: "values must be positive integers"}[minimum]
        if self.numeric_type(s, canon):
            return np.zeros(len(s), dtype=np.int64)
        nested = self.scalars(s, canon)
        if (pd.api.types.is_integer_dtype(s.dtype) and not s.hasnans
                and not (pd.api.types.is_unsigned_integer_dtype(s.dtype)
                         and getattr(s.dtype, "itemsize", 8) >= 8)):  # the usual case: fast
            values = s.to_numpy(dtype=np.int64)
            huge = (values > _MAX_INT) | (values < -_MAX_INT)
            if minimum is not None:
                self.flag((values < minimum) & ~huge, rule, canon, values=s)
            self.flag(huge, _OVERFLOW_RULE, canon, values=s)
            return np.where(huge, 0, values)
        values = _as_float(s)[0]
        huge = np.abs(values) > _MAX_INT  # infinite values too: not integers either way
        ok = np.isfinite(values) & ~huge
        ok[ok] = values[ok] == np.round(values[ok])
        if minimum is not None:
            ok &= ~(values < minimum)
        self.flag(~ok & ~huge & ~nested, rule, canon, values=s)
        self.flag(huge & np.isfinite(values), _OVERFLOW_RULE, canon, values=s)
        return np.where(ok, values, 0).astype(np.int64)


#: Largest integer magnitude accepted: every integer up to 2^53 is exact as a float64.
_MAX_INT = 1 << 53
_OVERFLOW_RULE = "values must be integers of magnitude at most 2^53 = 9007199254740992"
#: ``pandas.api.types.infer_dtype`` kinds that cannot hold a record or list.
_SCALAR_KINDS = frozenset({"string", "bytes", "integer", "floating", "mixed-integer-float",
                           "decimal", "boolean", "empty", "datetime", "date", "time",
                           "timedelta", "categorical"})


def _may_nest(dtype) -> bool:
    """Whether a column of this type can hold a record or a list (objects, Arrow nested)."""
    if isinstance(dtype, pd.ArrowDtype):
        return pa.types.is_nested(dtype.pyarrow_dtype)
    return pd.api.types.is_object_dtype(dtype)


def _nested(s: pd.Series) -> np.ndarray:
    """Mask of the values that are records or lists (JSON objects, Parquet structs / lists)."""
    dtype = s.dtype
    if isinstance(dtype, pd.ArrowDtype) and pa.types.is_nested(dtype.pyarrow_dtype):
        return s.notna().to_numpy(dtype=bool)
    if (not pd.api.types.is_object_dtype(dtype)
            or pd.api.types.infer_dtype(s, skipna=True) in _SCALAR_KINDS):
        return np.zeros(len(s), dtype=bool)
    return np.fromiter((isinstance(v, dict | list | tuple | set | np.ndarray) for v in s),
                       dtype=bool, count=len(s))


def _temporal(dtype) -> bool:
    """Whether a column type holds dates, times or durations."""
    if isinstance(dtype, pd.ArrowDtype):
        return pa.types.is_temporal(dtype.pyarrow_dtype)
    if isinstance(dtype, np.dtype):
        return dtype.kind in "mM"
    return isinstance(dtype, pd.DatetimeTZDtype | pd.PeriodDtype | pd.IntervalDtype)


def _group_first(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Groups of equal keys: (group code of every row, first row of every group).

    Groups are numbered in key order; a group's first row is its earliest row. The stable
    argsort takes linear time when rows already come grouped, as they usually do.
    """
    order = np.argsort(key, kind="stable")
    sorted_key = key[order]
    starts = np.ones(len(key), dtype=bool)
    starts[1:] = sorted_key[1:] != sorted_key[:-1]
    codes = np.empty(len(key), dtype=np.int64)
    codes[order] = np.cumsum(starts) - 1
    return codes, order[starts]


def _runs(*columns: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """(start row, length) of the maximal runs of consecutive rows equal in all ``columns``.

    Rows usually come grouped by query, so keys are looked up once per run instead of once
    per row; comparing neighbours is several times cheaper than hashing every string.
    """
    n = len(columns[0])
    change = np.ones(n, dtype=bool)
    if n > 1:
        change[1:] = False
        for col in columns:
            if _string_categories(col):  # equal codes, equal strings (categories are unique)
                codes = np.asarray(col.array.codes)
                change[1:] |= codes[1:] != codes[:-1]
                continue
            arr = _arrow(col)
            change[1:] |= pc.not_equal(arr.slice(1), arr.slice(0, n - 1)).to_numpy()
    starts = np.flatnonzero(change)
    return starts, np.diff(np.append(starts, n))


def _duplicated(key: np.ndarray) -> np.ndarray:
    """Mask of the rows whose key occurs more than once (every row of such a group)."""
    dup = np.zeros(len(key), dtype=bool)
    if len(key) < 2 or np.all(key[1:] > key[:-1]):  # strictly increasing: the usual case
        return dup
    order = np.argsort(key, kind="stable")
    sorted_key = key[order]
    same = sorted_key[1:] == sorted_key[:-1]
    dup[order[1:][same]] = True
    dup[order[:-1][same]] = True
    return dup


def _arrow(values: pd.Series) -> pa.ChunkedArray:
    """The column as an Arrow array of its values (a categorical's decoded)."""
    arr = pa.array(values)
    chunks = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
    if pa.types.is_dictionary(arr.type):
        return pa.chunked_array([c.dictionary_decode() for c in chunks],
                                type=arr.type.value_type)
    return arr if isinstance(arr, pa.ChunkedArray) else pa.chunked_array([arr])


def _int_codes(chunked: pa.ChunkedArray) -> np.ndarray:
    """int64 numpy codes of an arrow integer array; nulls become -1."""
    if chunked.num_chunks == 0:
        return np.zeros(0, dtype=np.int64)
    filled = pc.fill_null(chunked, -1)
    return np.concatenate([c.to_numpy() for c in filled.chunks]).astype(np.int64, copy=False)


def _factorize(values: pd.Series) -> tuple[np.ndarray, pa.Array]:
    """(int64 code of every value, distinct values in order of appearance); missing -> -1.

    Arrow's hash kernel: about twice as fast as ``pandas.factorize`` on arrow strings. Arrow
    dictionary chunks are unified into one dictionary (their strings hashed, not the rows').
    """
    chunks = _dictionary_chunks(values)
    if chunks is not None:
        value_type = values.dtype.pyarrow_dtype.value_type
        if not chunks:
            return np.zeros(0, dtype=np.int64), pa.array([], type=value_type)
        unified = pa.chunked_array(chunks, type=values.dtype.pyarrow_dtype).unify_dictionaries()
        return _dictionary_codes(unified.chunks), unified.chunks[0].dictionary
    encoded = pc.dictionary_encode(_arrow(values))
    if encoded.num_chunks == 0:
        return np.zeros(0, dtype=np.int64), pa.array([], type=encoded.type.value_type)
    indices = pa.chunked_array([c.indices for c in encoded.chunks], type=encoded.type.index_type)
    return _int_codes(indices), encoded.chunks[-1].dictionary


def _lookup(values: pd.Series, categories: pa.Array) -> np.ndarray:
    """Position of every value in ``categories`` (-1 where absent)."""
    arr = _arrow(values)
    return _int_codes(pc.index_in(arr, value_set=categories.cast(arr.type)))


# ---------------------------------------------------------------------------- loading
@dataclass(frozen=True, eq=False)
class Loaded:
    """A loaded, validated data set and everything the loader decided on the way.

    Attributes
    ----------
    dataset : Dataset
        The validated data, excluded rows removed.
    exclusions : pandas.DataFrame
        One row per excluded input row, columns :data:`EXCLUSION_COLUMNS`: ``file``, 1-based
        data ``row``, ``post_id``, ``criterion``, ``sent_uid`` ("" for a query row), the
        canonical ``column`` whose value caused it, and the ``reason``.
    warnings : list of str
        Plain-language notes: unused columns, exclusion counts, empty optional columns.
    column_map : dict
        ``{"queries": {canonical: source}, "candidates": {canonical: source}}``.
    """

    dataset: Dataset
    exclusions: pd.DataFrame
    warnings: list[str] = field(default_factory=list)
    column_map: dict = field(default_factory=dict)

    @property
    def n_excluded_queries(self) -> int:
        return int((self.exclusions["sent_uid"] == "").sum())

    @property
    def n_excluded_candidates(self) -> int:
        return int((self.exclusions["sent_uid"] != "").sum())


class _RowNumbers:
    """The 1-based data-row numbers 1..n of a table read as is, without an n-row array: it is
    built only when an error lists rows (``np.asarray``); indexing returns the numbers."""

    __slots__ = ("n",)

    def __init__(self, n: int):
        self.n = int(n)

    def __len__(self) -> int:
        return self.n

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        return np.arange(1, self.n + 1, dtype=np.int64 if dtype is None else dtype)

    def __getitem__(self, index) -> np.ndarray:
        index = np.asarray(index)
        if index.dtype == bool:
            index = np.flatnonzero(index)
        if index.size and (index.min() < -self.n or index.max() >= self.n):
            raise IndexError(f"row index out of range for {self.n} rows")
        return np.where(index < 0, index + self.n, index).astype(np.int64) + 1


@dataclass
class _Parts:
    """Parsed columns of both tables, validated, before exclusion (internal)."""

    q: dict  # canonical -> parsed values, one per query
    q_rows: np.ndarray  # source row of every query
    p_missing: np.ndarray
    c: dict  # canonical -> parsed values, one per candidate
    c_rows: np.ndarray | _RowNumbers
    c_query: np.ndarray  # query index of every candidate (-1: no such query)
    score_missing: np.ndarray


def load(queries, candidates=None, *, queries_name: str | None = None,
         candidates_name: str | None = None, mapping: Mapping | None = None,
         limits: Limits | None = None) -> Loaded:
    """Read, map and validate the input, then build the :class:`Dataset` (contract §2).

    Parameters
    ----------
    queries : path, bytes, file-like or pandas.DataFrame
        The queries table, or a long table carrying queries and candidates.
    candidates : path, bytes, file-like or pandas.DataFrame, optional
        The candidates table. Without it, ``queries`` is a long table if it has a
        ``sent_uid`` column (a row with an empty ``sent_uid`` is a query without candidates),
        else a queries-only table (no candidates at all).
    queries_name, candidates_name : str, optional
        File names shown in messages; for bytes they also pick the format.
    mapping : mapping, optional
        ``{canonical: source_column}`` choices that win over :data:`ALIASES` in every table
        holding the source column (``None``: use no column for that name), or
        ``{"queries": {...}, "candidates": {...}}`` per table.
    limits : Limits, optional
        Bounds on every file read (decompressed size, rows, columns, cell size), each checked
        before the memory it guards is committed; default :data:`DEFAULT_LIMITS`. Tables
        given as DataFrames are already in memory and are not checked.

    Returns
    -------
    Loaded
        The dataset, the exclusions, the warnings and the column map.

    Raises
    ------
    InputError
        Bad input; several problems come together as :class:`InputErrors`. Checked: required
        columns; ids not empty; ``has_evidence`` / ``is_gold`` binary; ``p_has_evidence`` a
        number in [0, 1]; ``score`` a finite number; ``fold`` integer; ``n_gold`` a
        non-negative integer not below the gold found; ``rank`` a positive integer, unique
        within a query; unique ``(post_id, criterion)`` and ``(post_id, criterion,
        sent_uid)``; every candidate has a query; in a long table, the per-query columns
        constant within a query; every value a single value (not a JSON object, a Parquet
        struct or list); numeric columns not stored as dates or times; integers of
        magnitude at most 2^53. Unreadable files (random bytes, not UTF-8, broken gzip) and
        files over the ``limits`` raise it too (see :func:`read_table`).

    Notes
    -----
    Excluded, never silently: a query whose ``p_has_evidence`` is missing (NaN or empty),
    with its candidates, and a candidate whose ``score`` is missing. They are listed in
    :attr:`Loaded.exclusions` and counted in :attr:`Loaded.warnings`. An optional column
    without any value is treated as absent (with a warning).
    """
    offsets: dict = {}
    try:
        return _load(queries, candidates, queries_name, candidates_name, mapping, limits,
                     offsets)
    except InputError as err:
        _with_lines(err, offsets)
        raise


def _with_lines(err: InputError, offsets: dict) -> None:
    """Give the errors about text files their line numbers (``offsets``: file -> lines
    before data row 1)."""
    for e in getattr(err, "errors", None) or [err]:
        if e.file in offsets and e.line_offset is None:
            e.line_offset = offsets[e.file]
            e.args = (e.render(),)
    err.args = (err.render(),)


def _load(queries, candidates, queries_name, candidates_name, mapping, limits,
          offsets: dict) -> Loaded:
    q_mapping, c_mapping = _split_mapping(mapping)
    if candidates is None and q_mapping is not c_mapping:  # one table: both mappings apply
        q_mapping = {**(c_mapping or {}), **(q_mapping or {})}
    q_df, q_file = _frame_of(queries, queries_name, "queries", q_mapping, limits)
    offsets[q_file] = q_df.attrs.get("line_offset")
    errors: list[InputError] = []
    warnings: list[str] = []
    if candidates is None:
        kind = "long" if _layout(q_df.columns, q_mapping, q_file) == "long" else "queries"
        q_map, q_err = _match_columns(q_df.columns, kind, q_mapping, q_file)
        warnings += _unused(q_df.columns, q_map, q_file)
        InputErrors.raise_if_any(q_err)
        table = _renamed(q_df, q_map)
        rows = np.arange(1, len(q_df) + 1, dtype=np.int64)
        if kind == "long":
            c_map = {k: v for k, v in q_map.items() if k in CANDIDATE_COLUMNS}
            q_map = {k: v for k, v in q_map.items() if k in QUERY_COLUMNS}
            table = _drop_empty_optional(table, REQUIRED["long"], q_file, warnings)
            q_map, c_map = _kept_columns(q_map, table), _kept_columns(c_map, table)
            parts = _split_long(table, rows, q_file, q_map, c_map, errors)
            layout, c_file = "long table", q_file
        else:
            c_map, c_file, layout = {}, None, "queries only"
            warnings.append(f"{q_file}: no candidates (no sent_uid column): ranking and "
                            f"extraction metrics have nothing to rank")
            table = _drop_empty_optional(table, REQUIRED["queries"], q_file, warnings)
            q_map = _kept_columns(q_map, table)
            parts = _two_tables(table, rows, q_file, q_map, _no_candidates(), None, {}, errors)
    else:
        c_df, c_file = _frame_of(candidates, candidates_name, "candidates", c_mapping, limits)
        offsets[c_file] = c_df.attrs.get("line_offset")
        tables = (("queries", q_df, q_file, q_mapping), ("candidates", c_df, c_file, c_mapping))
        _check_mapped_sources(tables, shared=q_mapping is c_mapping, errors=errors)
        q_map, q_err = _match_columns(q_df.columns, "queries", _present(q_mapping, q_df),
                                      q_file)
        c_map, c_err = _match_columns(c_df.columns, "candidates", _present(c_mapping, c_df),
                                      c_file)
        warnings += _unused(q_df.columns, q_map, q_file) + _unused(c_df.columns, c_map, c_file)
        InputErrors.raise_if_any(errors + q_err + c_err)
        q_table = _drop_empty_optional(_renamed(q_df, q_map), REQUIRED["queries"], q_file,
                                       warnings)
        c_table = _drop_empty_optional(_renamed(c_df, c_map), REQUIRED["candidates"], c_file,
                                       warnings)
        q_map, c_map = _kept_columns(q_map, q_table), _kept_columns(c_map, c_table)
        parts = _two_tables(q_table, np.arange(1, len(q_df) + 1, dtype=np.int64), q_file,
                            q_map, c_table, c_file, c_map, errors)
        layout = "two tables"
    InputErrors.raise_if_any(errors)
    return _finish(parts, q_file, c_file, layout, warnings,
                   {"queries": q_map, "candidates": c_map})


def _layout(columns, mapping, file) -> str:
    """``"long"`` when one table's columns carry candidates (a ``sent_uid``), else
    ``"queries_only"``: the one rule :func:`load` and :func:`sniff` share."""
    probe = _match_columns(columns, "long", mapping, file, require=False)[0]
    return "long" if "sent_uid" in probe else "queries_only"


@dataclass(frozen=True)
class Sniffed:
    """What an input looks like before it is read: its layout and column names.

    ``layout`` is ``"two_tables"``, ``"long"`` or ``"queries_only"``; ``required`` maps each
    table (``"queries"``, ``"candidates"``) to the canonical columns it must provide.
    """

    layout: str
    queries_columns: tuple[str, ...]
    candidates_columns: tuple[str, ...] | None
    required: Mapping[str, tuple[str, ...]]


def columns_of(source, *, name: str | None = None) -> tuple[str, ...]:
    """The column names of one input file, read from its header or schema only.

    >>> columns_of(b"post_id,criterion,p\\n1,A,0.5\\n", name="q.csv")
    ('post_id', 'criterion', 'p')
    """
    data, path, name, head, fmt = _open(source, name)
    try:
        if fmt == "parquet":
            schema = pa_parquet.read_schema(path if data is None else pa.BufferReader(data))
            return tuple(str(c) for c in schema.names)
        _check_text(head, name)
        text = head.decode("utf-8-sig", errors="replace")
        if fmt in ("jsonl", "json"):
            first = text.lstrip()
            first = first[1:] if fmt == "json" else first
            record = json.JSONDecoder().raw_decode(first.lstrip())[0]
            if not isinstance(record, dict):
                raise ValueError("the first record is not an object")
            return tuple(str(c) for c in record)
        first_line = next(iter(text.splitlines()), "")
        delimiter = "\t" if fmt == "tsv" else max(
            (",", "\t", ";"), key=lambda d: (first_line.count(d), d == ","))
        return tuple(next(csv.reader(io.StringIO(text, newline=None), delimiter=delimiter), []))
    except InputError:
        raise
    except (pa.ArrowException, OSError, ValueError, csv.Error) as exc:
        raise InputError(_reason(f"cannot read the columns as {fmt.upper()}", exc),
                         file=name) from exc


def sniff(queries, candidates=None, *, queries_name: str | None = None,
          candidates_name: str | None = None, mapping: Mapping | None = None) -> Sniffed:
    """Layout and columns of an input without reading its rows (for a column-mapping form).

    The layout rule is :func:`load`'s: one table is a long table when a column maps to
    ``sent_uid``.
    """
    q_cols = columns_of(queries, name=queries_name)
    if candidates is not None:
        c_cols = columns_of(candidates, name=candidates_name)
        return Sniffed("two_tables", q_cols, c_cols,
                       MappingProxyType({"queries": REQUIRED["queries"],
                                         "candidates": REQUIRED["candidates"]}))
    q_mapping, c_mapping = _split_mapping(mapping)
    merged = {**(c_mapping or {}), **(q_mapping or {})} or None
    layout = _layout(q_cols, merged, queries_name)
    kind = "long" if layout == "long" else "queries"
    return Sniffed(layout, q_cols, None, MappingProxyType({"queries": REQUIRED[kind]}))


def _split_mapping(mapping):
    """Per-table mappings from a flat ``{canonical: source}`` mapping (shared by both
    tables) or a nested ``{"queries": {...}, "candidates": {...}}`` one."""
    if mapping is None:
        return None, None
    if not isinstance(mapping, Mapping):
        raise ValueError(f"mapping must be a mapping of canonical name to column, "
                         f"got {type(mapping).__name__}")
    if mapping and set(mapping) <= {"queries", "candidates"} and all(
            isinstance(v, Mapping) for v in mapping.values()):
        q, c = mapping.get("queries"), mapping.get("candidates")
    else:
        q = c = mapping
    _check_mapping(q)
    _check_mapping(c)
    return q, c


def _frame_of(source, name, default_name, mapping,
              limits: Limits | None = None) -> tuple[pd.DataFrame, str]:
    """The table of one input argument, and its display name."""
    if isinstance(source, pd.DataFrame):
        if not all(isinstance(c, str) for c in source.columns):
            source = source.rename(columns=str)
        return source, name or default_name
    if name is None and isinstance(source, str | os.PathLike):
        name = Path(source).name
    elif name is None:
        name = getattr(source, "name", None) or default_name
    text_sources = [v for k, v in (mapping or {}).items()
                    if k in _TEXT_COLUMNS and v is not None]
    # The ids every candidate row repeats, read as categoricals (their names, aliases and
    # mapped sources; the loader takes categoricals of strings as they are).
    return (read_table(source, name=str(name), string_columns=text_sources, limits=limits,
                       category_columns=dictionary_names(mapping, _REPEATED_IDS),
                       arrow_dictionary_columns=dictionary_names(mapping, ARROW_IDS)),
            str(name))


def _has_column(df: pd.DataFrame, src) -> bool:
    return _norm(src) in {_norm(c) for c in df.columns}


def _present(mapping, df):
    """A mapping restricted to the entries whose source column ``df`` has (or None ones)."""
    if mapping is None:
        return None
    return {k: v for k, v in mapping.items() if v is None or _has_column(df, v)}


def _check_mapped_sources(tables, *, shared: bool, errors: list) -> None:
    """Every mapped source column must exist in a table its canonical column belongs to
    (with one mapping shared by both tables, in at least one of them)."""
    for kind, df, file, mapping in tables:
        for canon, src in (mapping or {}).items():
            if src is None or canon not in _KIND_COLUMNS[kind] or _has_column(df, src):
                continue
            if shared and any(canon in _KIND_COLUMNS[k] and _has_column(d, src)
                              for k, d, _, _ in tables):
                continue
            errors.append(InputError("mapped column not found", file=file, column=str(src),
                                     hint=f"mapped to '{canon}'; columns found: "
                                          f"{_list(df.columns)}", code="bad_mapping"))


def _unused(columns, column_map, file) -> list[str]:
    used = set(column_map.values())
    unused = [str(c) for c in columns if str(c) not in used]
    return [f"{file}: column(s) not used: {_list(unused)}"] if unused else []


def _drop_empty_optional(table: dict, required, file, warnings) -> dict:
    """Optional columns with no value at all are treated as absent (with a warning)."""
    empty = [c for c in table if c not in required and _all_missing(table[c])]
    for col in empty:
        warnings.append(f"{file}: column '{col}' has no values and is ignored")
    return {c: s for c, s in table.items() if c not in empty}


def _kept_columns(column_map: dict, table: dict) -> dict:
    return {k: v for k, v in column_map.items() if k in table}


def _no_candidates() -> dict:
    return {"post_id": pd.Series([], dtype="str"), "criterion": pd.Series([], dtype="str"),
            "sent_uid": pd.Series([], dtype="str"), "score": pd.Series([], dtype=np.float64),
            "is_gold": pd.Series([], dtype=np.int8)}


def _check_queries(table: dict, chk: _Checker) -> tuple[dict, np.ndarray]:
    """Parse and check the per-query columns (of a queries table or a long table)."""
    q = {canon: chk.ids(table[canon], canon) for canon in ("post_id", "criterion")}
    q["has_evidence"] = chk.binary(table["has_evidence"], "has_evidence")
    q["p_has_evidence"], p_missing = chk.number(table["p_has_evidence"], "p_has_evidence",
                                                unit_interval=True)
    if "fold" in table:
        q["fold"] = chk.integer(table["fold"], "fold")
    if "n_gold" in table:
        q["n_gold"] = chk.integer(table["n_gold"], "n_gold", minimum=0)
    if "split" in table:
        chk.scalars(table["split"], "split")
        split, missing = _as_text(table["split"])
        chk.flag(missing, "values must not be empty", "split")
        q["split"] = split
    return q, p_missing


def _check_candidates(table: dict, chk: _Checker) -> tuple[dict, np.ndarray]:
    """Parse and check the per-candidate columns."""
    c = {canon: chk.ids(table[canon], canon) for canon in ("post_id", "criterion", "sent_uid")}
    c["score"], score_missing = chk.number(table["score"], "score")
    c["is_gold"] = chk.binary(table["is_gold"], "is_gold")
    if "rank" in table:
        c["rank"] = chk.integer(table["rank"], "rank", minimum=1)
    if "relevance" in table:
        c["relevance"] = chk.integer(table["relevance"], "relevance", minimum=0)
    if "sentence" in table:
        chk.scalars(table["sentence"], "sentence")
        c["sentence"] = _as_text(table["sentence"])[0].fillna("")
    return c, score_missing


def _two_tables(q_table, q_rows, q_file, q_map, c_table, c_file, c_map, errors) -> _Parts:
    """Check a queries table and a candidates table and match candidates to queries."""
    q_chk = _Checker(q_file, q_rows, q_map, errors)
    q, p_missing = _check_queries(q_table, q_chk)
    n_q, n_c = len(q_table["post_id"]), len(c_table["post_id"])
    c_rows = _RowNumbers(n_c)
    c_chk = _Checker(c_file, c_rows, c_map, errors)
    c, score_missing = _check_candidates(c_table, c_chk)
    parts = _Parts(q, q_rows, p_missing, c, c_rows, None, score_missing)
    if not (q_chk.ids_ok and c_chk.ids_ok):
        parts.c_query = np.full(n_c, -1, dtype=np.int64)
        return parts
    # The ids' order along the rows (for the uniqueness check within queries) is compared on
    # a thread, in Arrow without the interpreter, while the queries are matched here.
    increasing = None
    if n_c >= _THREADED_UID_ROWS and _dictionary_chunks(c["sent_uid"]) is None:
        pool = ThreadPoolExecutor(max_workers=1)
        increasing = pool.submit(_uid_steps, c["sent_uid"])
        pool.shutdown(wait=False)
    q_post, posts = _factorize(q["post_id"])
    q_crit, crits = _factorize(q["criterion"])
    n_keys = len(posts) * len(crits)
    q_key = q_post * len(crits) + q_crit
    q_chk.flag(_duplicated(q_key), "(post_id, criterion) must be unique",
               hint=None if c_file else "a long table needs a sent_uid column; map it by "
                                        "hand if it has another name")
    # Look up each run of rows with one (post_id, criterion), not each row.
    starts, lengths = _runs(c["post_id"], c["criterion"])
    run_post = _lookup(c["post_id"].iloc[starts], posts)
    run_crit = _lookup(c["criterion"].iloc[starts], crits)
    run_key = np.where((run_post >= 0) & (run_crit >= 0), run_post * len(crits) + run_crit, -1)
    if n_keys <= 4 * n_q + 1_000_000:  # dense key space: direct lookup table
        lookup = np.full(n_keys + 1, -1, dtype=np.int64)  # the last slot serves key -1
        lookup[q_key] = np.arange(n_q, dtype=np.int64)
        run_query = lookup[run_key]
    else:  # sparse key space: binary search
        order = np.argsort(q_key, kind="stable")
        pos = np.searchsorted(q_key[order], run_key).clip(max=n_q - 1)
        run_query = np.where(q_key[order][pos] == run_key, order[pos], -1)
    parts.c_query = np.repeat(run_query, lengths)
    if (run_query < 0).any():
        c_chk.flag(parts.c_query < 0, "every candidate must belong to a query",
                   hint=f"no row with this (post_id, criterion) in {q_file}",
                   values=lambda idx: [f"({shown_value(p)}, {shown_value(k)})" for p, k in zip(
                       c["post_id"].iloc[idx].tolist(), c["criterion"].iloc[idx].tolist(),
                       strict=True)])
    # Each query's rows together: no query starts two runs.
    grouped = bool(np.all(run_query >= 0)) and int(
        np.bincount(run_query, minlength=1).max(initial=0)) <= 1
    _check_within_query(parts, q_chk, c_chk, run_starts=starts if grouped else None,
                        increasing=increasing)
    return parts


#: From this many candidate rows on, the ids' order is compared on a thread.
_THREADED_UID_ROWS = 100_000


def _split_long(table, rows, file, q_map, c_map, errors) -> _Parts:
    """Split a long table into queries and candidates; the per-query columns must repeat
    the same value on every row of a query."""
    chk = _Checker(file, rows, {**q_map, **c_map}, errors)
    q_all, p_missing_all = _check_queries(table, chk)
    no_cand = _as_text(table["sent_uid"])[1]
    c_idx = np.flatnonzero(~no_cand)
    c_table = table if len(c_idx) == len(rows) else {
        k: v.iloc[c_idx].reset_index(drop=True) for k, v in table.items()}
    c_chk = _Checker(file, rows[c_idx], c_map, errors)
    c, score_missing = _check_candidates(c_table, c_chk)
    if not chk.ids_ok:
        return _Parts(q_all, rows, p_missing_all, c, c_chk.rows,
                      np.zeros(len(c_idx), dtype=np.int64), score_missing)
    # Group the runs of rows with one (post_id, criterion), then expand to rows.
    starts, lengths = _runs(q_all["post_id"], q_all["criterion"])
    post = _factorize(q_all["post_id"].iloc[starts])[0]
    crit, crits = _factorize(q_all["criterion"].iloc[starts])
    run_code, first_run = _group_first(post * len(crits) + crit)
    qcode, first = np.repeat(run_code, lengths), starts[first_run]
    for canon in ("has_evidence", "p_has_evidence", "fold", "n_gold", "split"):
        if canon not in q_all:
            continue
        values = q_all[canon]
        if isinstance(values, pd.Series):
            values = _factorize(values)[0]
        ref = values[first][qcode]
        differs = values != ref
        if values.dtype.kind == "f":
            differs &= ~(np.isnan(values) & np.isnan(ref))
        chk.flag(differs, "values must be the same on every row of a query (long table)",
                 canon, hint="these rows differ from the first row of their query")
    q = {k: (v.iloc[first].reset_index(drop=True) if isinstance(v, pd.Series) else v[first])
         for k, v in q_all.items()}
    parts = _Parts(q, rows[first], p_missing_all[first], c, c_chk.rows, qcode[c_idx],
                   score_missing)
    _check_within_query(parts, chk, c_chk)
    return parts


def _uid_steps(uid: pd.Series, compare=pc.greater) -> np.ndarray | None:
    """``compare(uid[i + 1], uid[i])`` for every pair of consecutive rows (numpy bool, a copy
    the caller may change); None for fewer than two rows."""
    n = len(uid)
    if n < 2:
        return None
    arr = _arrow(uid)
    step = compare(arr.slice(1), arr.slice(0, n - 1)).to_numpy()
    return step if step.flags.writeable else step.copy()


def _ordered_within_runs(uid: pd.Series, starts: np.ndarray, increasing=None) -> bool:
    """Whether ``sent_uid`` strictly increases (or strictly decreases) along the rows of every
    query, the rows of each query being consecutive from ``starts``: then no id repeats within
    a query, and no id needs hashing. Candidate files written query by query in id order take
    this path. ``increasing``: :func:`_uid_steps` of ``uid`` computed already (a future)."""
    if len(uid) < 2:
        return True
    chunks = _dictionary_chunks(uid)
    if chunks is not None:
        return _codes_unique_within_runs(chunks, starts, len(uid))
    straddle = starts[1:] - 1  # the pairs (i, i + 1) of two queries
    for compare in (pc.greater, pc.less):
        step = None
        if compare is pc.greater and increasing is not None:
            with contextlib.suppress(Exception):  # (computed here again if that failed)
                step = increasing.result()
        if step is None:
            step = _uid_steps(uid, compare)
        step[straddle] = True
        if step.all():
            return True
    return False


def _codes_unique_within_runs(chunks: list, starts: np.ndarray, n: int) -> bool:
    """:func:`_ordered_within_runs` of Arrow dictionary chunks: True when no id repeats within
    a query (the rows of each query consecutive from ``starts``); False when one may, for the
    caller's full check to find the rows. Within a chunk equal codes are equal ids, so each
    query's codes are sorted (one 2-D sort per number of rows per query) and neighbours
    compared; a query whose rows straddle two chunks (two dictionaries) is checked by its
    strings."""
    codes = np.concatenate([c.indices.to_numpy() for c in chunks])
    ends = np.append(starts[1:], n)
    lengths = ends - starts
    bounds = np.cumsum([len(c) for c in chunks])[:-1]
    bounds = bounds[(bounds > 0) & (bounds < n)]
    by_bound = np.searchsorted(starts, bounds, side="right") - 1
    straddling = np.unique(by_bound[starts[by_bound] < bounds])
    within = lengths > 1
    within[straddling] = False
    queries = np.flatnonzero(within)
    queries = queries[stable_argsort(lengths[queries])]
    sizes, first = np.unique(lengths[queries], return_index=True)
    groups = np.split(starts[queries], first[1:]) if queries.size else []
    repeated = []

    def check(size: int, heads: np.ndarray) -> None:
        block = sliding_window_view(codes, size)[heads]  # (queries, size), a copy
        block.sort(axis=1)
        if (block[:, 1:] == block[:, :-1]).any():
            repeated.append(size)

    # (two threads from PARALLEL_SORT_ROWS rows on: numpy sorts without the interpreter)
    by_halves(check, list(zip(sizes.tolist(), groups, strict=True)),
              parallel=n >= PARALLEL_SORT_ROWS)
    if repeated:
        return False
    for q in straddling.tolist():
        ids = _dictionary_strings(chunks, np.arange(starts[q], ends[q]))
        if len(set(ids)) < len(ids):
            return False
    return True


def _check_within_query(parts: _Parts, q_chk: _Checker, c_chk: _Checker, *,
                        run_starts: np.ndarray | None = None, increasing=None) -> None:
    """Checks that need each candidate's query: ``sent_uid`` and ``rank`` unique within a
    query, ``n_gold`` not below the gold found. ``run_starts``: the first row of each query,
    when every candidate has a query and the rows of each query are consecutive."""
    c_query = parts.c_query
    if run_starts is not None:  # every candidate has its query: no mask of the known ones
        known, all_known, any_known = None, True, len(c_query) > 0
    else:
        known = c_query >= 0
        all_known, any_known = bool(known.all()), bool(known.any())

    def within_query(code, n_code):
        key = c_query * n_code + code
        if not all_known:  # a candidate without a query is unique by construction
            key = np.where(known, key, -1 - np.arange(len(key), dtype=np.int64))
        return key

    if any_known:
        if not (run_starts is not None
                and _ordered_within_runs(parts.c["sent_uid"], run_starts, increasing)):
            uid, uids = _factorize(parts.c["sent_uid"])
            c_chk.flag(_duplicated(within_query(uid, len(uids))),
                       "(post_id, criterion, sent_uid) must be unique")
        if "rank" in parts.c:
            rank = parts.c["rank"]
            if rank.max() < (1 << 31):
                rank_code, n_rank = rank, int(rank.max()) + 1
            else:
                rank_code, n_rank = np.unique(rank, return_inverse=True)[1], len(rank)
            c_chk.flag(_duplicated(within_query(rank_code, n_rank)),
                       "values must be unique within a query", "rank")
    if "n_gold" in parts.q:
        gold = parts.c["is_gold"] == 1
        if known is not None:
            gold &= known
        found = np.bincount(c_query[gold], minlength=len(parts.q_rows))
        q_chk.flag(parts.q["n_gold"] < found,
                   "values must not be smaller than the gold candidates found", "n_gold",
                   rows=parts.q_rows)


def _finish(parts: _Parts, q_file, c_file, layout, warnings, column_map) -> Loaded:
    """Exclude the excludable rows, with their reasons, and build the Dataset."""
    q, c = parts.q, parts.c
    n_q = len(parts.q_rows)
    if n_q == 0:
        raise InputError("no queries", file=q_file, code="no_data")
    q_drop = parts.p_missing
    queries_dropped = bool(q_drop.any())
    # Candidate-length masks only where something is excluded (the usual case: nothing).
    c_by_query = q_drop[parts.c_query] if queries_dropped else np.zeros(0, dtype=bool)
    c_by_score = parts.score_missing & ~c_by_query if queries_dropped else parts.score_missing
    if q_drop.all():
        raise InputError("every query has an empty p_has_evidence: nothing to evaluate",
                         file=q_file, column=column_map["queries"].get("p_has_evidence"),
                         rows=parts.q_rows[:10], n_rows=n_q, code="no_data")
    exclusions = _exclusions([
        (q_file, parts.q_rows, q, q_drop, False, "p_has_evidence",
         "p_has_evidence is missing: query excluded"),
        (c_file, parts.c_rows, c, c_by_query, True, "p_has_evidence",
         "its query is excluded (p_has_evidence is missing)"),
        (c_file, parts.c_rows, c, c_by_score, True, "score",
         "score is missing: candidate excluded"),
    ])
    if queries_dropped:
        warnings.append(f"{int(q_drop.sum())} queries excluded from {q_file}: p_has_evidence "
                        f"is missing (with their {int(c_by_query.sum())} candidates); see "
                        f"the exclusions")
    if c_by_score.any():
        warnings.append(f"{int(c_by_score.sum())} candidates excluded from {c_file}: score "
                        f"is missing; see the exclusions")
        gold_lost = int((c_by_score & (c["is_gold"] == 1)).sum())
        if gold_lost:
            warnings.append(f"{gold_lost} excluded candidates are gold: without an n_gold "
                            f"column they no longer count in |Gold|")
    c_excluded = (c_by_query | c_by_score) if queries_dropped else c_by_score
    n_excluded = int(c_excluded.sum())
    c_keep = ~c_excluded if n_excluded else None
    c_query = parts.c_query
    if queries_dropped:  # renumber the kept queries
        c_query = (np.cumsum(~q_drop) - 1)[c_query]
    meta = {"queries_file": q_file, "candidates_file": c_file, "layout": layout,
            "n_excluded_queries": int(q_drop.sum()), "n_excluded_candidates": n_excluded}
    dataset = Dataset.from_checked(
        {k: _kept(v, ~q_drop) for k, v in q.items()}, {k: _kept(v, c_keep) for k, v in c.items()},
        _kept(c_query, c_keep), meta=meta)
    return Loaded(dataset=dataset, exclusions=exclusions, warnings=warnings,
                  column_map=column_map)


def _kept(values, keep: np.ndarray | None):
    """``values`` (a pandas Series or a numpy array) at the ``keep`` rows (None: every row);
    no copy when all."""
    if keep is None or keep.all():
        return values
    return values[keep].reset_index(drop=True) if isinstance(values, pd.Series) else values[keep]


def _exclusions(groups) -> pd.DataFrame:
    """The exclusions table from (file, rows, values, mask, is_candidate, column, reason)."""
    frames = []
    for file, rows, values, mask, is_candidate, column, reason in groups:
        idx = np.flatnonzero(mask)
        if len(idx) == 0:
            continue
        uid = (values["sent_uid"].iloc[idx].to_numpy(dtype=object) if is_candidate
               else np.full(len(idx), "", dtype=object))
        frames.append(pd.DataFrame({
            "file": file, "row": rows[idx],
            "post_id": values["post_id"].iloc[idx].to_numpy(dtype=object),
            "criterion": values["criterion"].iloc[idx].to_numpy(dtype=object),
            "sent_uid": uid, "column": column, "reason": reason}))
    if not frames:
        return pd.DataFrame({c: pd.Series([], dtype=np.int64 if c == "row" else "str")
                             for c in EXCLUSION_COLUMNS})
    out = pd.concat(frames, ignore_index=True)
    return out.astype({c: "str" for c in EXCLUSION_COLUMNS if c != "row"})
