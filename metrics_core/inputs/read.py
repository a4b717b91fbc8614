"""Reading one input file into a DataFrame (contract §2).

:func:`read_table` detects the format (CSV, optionally gzip-compressed, TSV, Parquet, JSON
Lines), checks the file against its :class:`~metrics_core.inputs.limits.Limits` while scanning
(size after decompression, rows, columns, cell length) and reads the id columns as text. Bad
input raises :class:`~metrics_core.errors.InputError` naming the file and the rule.
"""

from __future__ import annotations

import csv
import gzip
import io
import os
import zlib
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pyarrow.json as pa_json

from metrics_core.data.dataset import (
    is_dictionary_text,
)
from metrics_core.errors import InputError
from metrics_core.inputs.limits import DEFAULT_LIMITS, Limits
from metrics_core.inputs.parquet import (
    ALIASES,
    read_parquet,
)
from metrics_core.inputs.parquet import PARQUET_MAGIC as _PARQUET_MAGIC
from metrics_core.inputs.parquet import check_shape as _check_shape
from metrics_core.inputs.parquet import norm as _norm

#: Canonical columns read as text (ids must stay strings: post "007" is not post 7).
TEXT_COLUMNS = ("post_id", "criterion", "sent_uid", "split", "sentence")

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
        data, path, name, head, fmt = open_source(source, name)
    try:
        if fmt == "parquet":
            table = (read_parquet(path, data, name, limits,
                                  [*category_columns, *arrow_dictionary_columns])
                     if table is None else table)
            _check_table(table, name, limits)
            frame = _to_pandas(table, arrow_dictionary_columns)
        else:
            check_text(head, name)
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
        raise InputError(failure_reason(f"cannot read the file as {fmt.upper()}", exc),
                         file=name) from exc
    if len(frame) == 0:
        raise InputError("file has no data rows", file=name,
                         hint=f"columns found: {name_list(frame.columns)}", code="no_data")
    # Lines before data row 1, for messages with line numbers as an editor counts them: the
    # header line of delimited text; none in JSON Lines; Parquet and JSON have no lines.
    frame.attrs["line_offset"] = {"csv": 1, "tsv": 1, "jsonl": 0}.get(fmt)
    frame.columns = [str(c) for c in frame.columns]
    if len(set(frame.columns)) < len(frame.columns):
        cols = list(frame.columns)
        dupes = sorted({c for c in cols if cols.count(c) > 1})
        raise InputError(f"duplicate column names: {name_list(dupes)}", file=name,
        code="duplicate_column")
    return frame


def _to_pandas(table: pa.Table, arrow_dictionary_columns) -> pd.DataFrame:
    """The frame of a Parquet table; its dictionary columns named in
    ``arrow_dictionary_columns`` stay Arrow dictionaries (see :func:`read_table`), its other
    dictionaries of text become categoricals (:func:`_categorical`)."""
    wanted = {_norm(c) for c in arrow_dictionary_columns}
    kept = [i for i, f in enumerate(table.schema)
            if _norm(f.name) in wanted and is_dictionary_text(f.type)]
    kept_set = set(kept)
    categorical = {i: cat for i, f in enumerate(table.schema)
                   if i not in kept_set and is_dictionary_text(f.type)
                   and (cat := _categorical(table.column(i))) is not None}
    # One block per column (``split_blocks``): numeric columns without nulls are taken as
    # they are, not copied into one consolidated block per type.
    if not kept and not categorical:
        return table.to_pandas(split_blocks=True)
    frame = table.drop_columns([table.schema[i].name for i in sorted({*kept, *categorical})]
                               ).to_pandas(split_blocks=True)
    for i in sorted({*kept, *categorical}):  # at its place among the columns
        values = (categorical[i] if i in categorical
                  else pd.arrays.ArrowExtensionArray(table.column(i)))
        frame.insert(i, table.schema[i].name, pd.Series(values, index=frame.index))
    return frame


def _categorical(column: pa.ChunkedArray) -> pd.Categorical | None:
    """The pandas categorical ``to_pandas`` makes of a column of Arrow dictionaries of text
    (the chunks' dictionaries unified; a null is code -1), built from the unified codes
    without checking each code against the categories again (they index the dictionary by
    construction); the categories are checked unique as ``to_pandas`` checks them. None when
    there is no chunk or the dictionary holds a null (``to_pandas`` converts those)."""
    if column.num_chunks == 0:
        return None
    unified = column.unify_dictionaries()
    dictionary = unified.chunks[0].dictionary
    if dictionary.null_count:
        return None
    # The codes in the smallest type that holds them, as pandas keeps them: one pass
    # over the rows, no second copy in ``from_codes``.
    size = len(dictionary)
    code_type = next(t for t in (np.int8, np.int16, np.int32, np.int64)
                     if size < np.iinfo(t).max)
    codes = np.concatenate([chunk.indices.fill_null(-1).to_numpy() if chunk.null_count
                            else chunk.indices.to_numpy() for chunk in unified.chunks],
                           dtype=code_type, casting="same_kind")
    dtype = pd.CategoricalDtype(pd.Index(dictionary.to_pandas()), ordered=column.type.ordered)
    return pd.Categorical.from_codes(codes, dtype=dtype, validate=False)


def open_source(source, name):
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


def failure_reason(what: str, exc: BaseException) -> str:
    """``what: the parser's message``, or ``what`` alone when the parser said nothing (never a
    dangling colon)."""
    brief = _brief(exc).strip().rstrip(":").strip()
    return f"{what}: {brief}" if brief else what


def check_text(head: bytes, name) -> None:
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
        raise InputError(failure_reason("cannot read the file", exc), file=name) from exc


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
                       if (value := length_range(chunk)[1]) is not None), default=None)
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


#: Values whose byte lengths :func:`length_range` reads at a time (an 8 MB buffer, reused).
_LENGTH_BLOCK = 1 << 20
#: Offset width of the text and binary layouts :func:`length_range` reads directly.
_OFFSET_WIDTH = MappingProxyType({pa.string(): np.int32, pa.binary(): np.int32,
                                  pa.large_string(): np.int64, pa.large_binary(): np.int64})


def length_range(chunk: pa.Array) -> tuple[int | None, int | None]:
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
        raise InputError(f"duplicate column names: {name_list(dupes)}", file=name,
                         code="duplicate_column")
    as_text = {h: pa.string() for h in header
               if h in string_columns or _ALIAS_OWNER.get(_norm(h)) in TEXT_COLUMNS}
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


def name_list(names, limit=20) -> str:
    names = [str(n) for n in names]
    more = f", ... ({len(names) - limit} more)" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more
