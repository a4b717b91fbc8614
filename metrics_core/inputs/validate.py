"""Per-column value checks of the input tables, and the grouping of ids (contract §2).

:class:`Checker` validates the columns of one table and collects every problem found (missing
values, non-binary labels, probabilities outside [0, 1], nested or temporal values, integers
beyond 2^53); the helpers below it group rows by key (runs, duplicates, codes), on Arrow
dictionary chunks where the ids were read as such. All vectorised.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from metrics_core.data.dataset import (
    dictionary_text,
    take_text,
)
from metrics_core.errors import InputError
from metrics_core.inputs.read import length_range

_NA_TOKENS = frozenset({"", "nan", "-nan", "na", "n/a", "nat", "null", "none", "<na>"})
_TRUE_TOKENS = ("1", "1.0", "true")
_FALSE_TOKENS = ("0", "0.0", "false")

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


def text_values(s: pd.Series) -> tuple[pd.Series, np.ndarray]:
    """(string values, missing-or-empty mask); numbers read from typed files become their
    integer text ("7", not "7.0"). A categorical of strings stays one: its codes say which
    rows are missing or empty; so does a column of Arrow dictionary chunks."""
    chunks = dictionary_chunks(s)
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
        arr = as_arrow(s)  # Arrow strings already: no null and no empty value is the usual case
        if arr.null_count == 0 and all(length_range(chunk)[0] > 0
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


def dictionary_chunks(s: pd.Series) -> list[pa.DictionaryArray] | None:
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


def dictionary_strings(chunks: list, rows: np.ndarray) -> list[str]:
    """The text of ``rows`` of dictionary chunks, decoding those rows only."""
    return take_text(pa.chunked_array(chunks), rows)


def all_missing(s: pd.Series) -> bool:
    """True when a column holds no value at all (null or empty text everywhere)."""
    if pd.api.types.is_numeric_dtype(s.dtype):
        return bool(s.isna().all())
    return bool(text_values(s)[1].all())


class Checker:
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
        values, missing = text_values(s)
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


def group_first(key: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
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


def equal_runs(*columns: pd.Series) -> tuple[np.ndarray, np.ndarray]:
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
            arr = as_arrow(col)
            change[1:] |= pc.not_equal(arr.slice(1), arr.slice(0, n - 1)).to_numpy()
    starts = np.flatnonzero(change)
    return starts, np.diff(np.append(starts, n))


def duplicated_rows(key: np.ndarray) -> np.ndarray:
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


def as_arrow(values: pd.Series) -> pa.ChunkedArray:
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


def factorize_values(values: pd.Series) -> tuple[np.ndarray, pa.Array]:
    """(int64 code of every value, distinct values in order of appearance); missing -> -1.

    Arrow's hash kernel: about twice as fast as ``pandas.factorize`` on arrow strings. Arrow
    dictionary chunks are unified into one dictionary (their strings hashed, not the rows').
    """
    if _string_categories(values):  # the codes, renumbered in order of appearance
        return _factorized_categories(values)
    chunks = dictionary_chunks(values)
    if chunks is not None:
        value_type = values.dtype.pyarrow_dtype.value_type
        if not chunks:
            return np.zeros(0, dtype=np.int64), pa.array([], type=value_type)
        unified = pa.chunked_array(chunks, type=values.dtype.pyarrow_dtype).unify_dictionaries()
        return _dictionary_codes(unified.chunks), unified.chunks[0].dictionary
    encoded = pc.dictionary_encode(as_arrow(values))
    if encoded.num_chunks == 0:
        return np.zeros(0, dtype=np.int64), pa.array([], type=encoded.type.value_type)
    indices = pa.chunked_array([c.indices for c in encoded.chunks], type=encoded.type.index_type)
    return _int_codes(indices), encoded.chunks[-1].dictionary


def _factorized_categories(values: pd.Series) -> tuple[np.ndarray, pa.Array]:
    """:func:`factorize_values` of a categorical of strings from its codes: the categories in
    use numbered in order of first appearance (as hashing the decoded values numbers them),
    no string decoded or hashed per row."""
    codes = np.asarray(values.cat.codes, dtype=np.int64)
    uniques = as_arrow(pd.Series(values.cat.categories)).combine_chunks()
    if codes.size and codes[0] == 0:
        # Codes numbered in order of first appearance already (a Parquet dictionary is built
        # as its values first appear): each code at most one above every code before it.
        top = np.maximum.accumulate(codes)
        if not np.any(codes[1:] > top[:-1] + 1):
            return codes, uniques.slice(0, int(top[-1]) + 1)
    present = codes >= 0
    used, first = np.unique(codes[present], return_index=True)
    appearance = used[np.argsort(first, kind="stable")]  # category codes by first row
    renumber = np.full(len(values.cat.categories) + 1, -1, dtype=np.int64)  # [-1] -> -1
    renumber[appearance] = np.arange(appearance.size, dtype=np.int64)
    return renumber[codes], uniques.take(pa.array(appearance))


def lookup_codes(values: pd.Series, categories: pa.Array) -> np.ndarray:
    """Position of every value in ``categories`` (-1 where absent)."""
    if _string_categories(values):  # each category looked up once, then its codes
        names = as_arrow(pd.Series(values.cat.categories))
        found = np.append(_int_codes(pc.index_in(names, value_set=categories.cast(
            names.type))), -1)  # [-1] (a missing value) -> -1
        return found[np.asarray(values.cat.codes, dtype=np.int64)]
    arr = as_arrow(values)
    return _int_codes(pc.index_in(arr, value_set=categories.cast(arr.type)))
