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
import io
import json
import os
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pa_parquet

from metrics_core.cpu_account import charged
from metrics_core.data.dataset import (
    CANDIDATE_COLUMNS,
    QUERY_COLUMNS,
    Dataset,
)
from metrics_core.data.ordering import QueryRuns, repeats_within, runs_of_parts
from metrics_core.errors import InputError, InputErrors, shown_value
from metrics_core.inputs.columns import (
    KIND_COLUMNS,
    REQUIRED,
    check_mapping,
    match_columns,
    renamed_columns,
    resolve_columns,
)
from metrics_core.inputs.limits import DEFAULT_LIMITS, Limits
from metrics_core.inputs.parquet import (
    ALIASES,
    ARROW_IDS,
    REPEATED_IDS,
    dictionary_names,
)
from metrics_core.inputs.parquet import norm as _norm
from metrics_core.inputs.read import (
    TEXT_COLUMNS,
    check_text,
    failure_reason,
    name_list,
    open_source,
    read_table,
)
from metrics_core.inputs.validate import (
    Checker,
    all_missing,
    as_arrow,
    dictionary_chunks,
    dictionary_strings,
    duplicated_rows,
    equal_runs,
    factorize_values,
    group_first,
    lookup_codes,
    text_values,
)

#: Ids repeated on every candidate row of a query: read from Parquet as categoricals.
_REPEATED_IDS = REPEATED_IDS

__all__ = ["ALIASES", "DEFAULT_LIMITS", "EXCLUSION_COLUMNS", "REQUIRED", "Limits", "Loaded",
           "Sniffed", "columns_of", "load", "read_table", "resolve_columns", "sniff"]

#: Columns of :attr:`Loaded.exclusions`.
EXCLUSION_COLUMNS = ("file", "row", "post_id", "criterion", "sent_uid", "column", "reason")

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
    c_query: np.ndarray | QueryRuns  # query index of every candidate (-1: no such query)
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
        q_map, q_err = match_columns(q_df.columns, kind, q_mapping, q_file)
        warnings += _unused(q_df.columns, q_map, q_file, queries=True)
        InputErrors.raise_if_any(q_err)
        table = renamed_columns(q_df, q_map)
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
        q_map, q_err = match_columns(q_df.columns, "queries", _present(q_mapping, q_df),
                                      q_file)
        c_map, c_err = match_columns(c_df.columns, "candidates", _present(c_mapping, c_df),
                                      c_file)
        warnings += (_unused(q_df.columns, q_map, q_file, queries=True)
                     + _unused(c_df.columns, c_map, c_file))
        InputErrors.raise_if_any(errors + q_err + c_err)
        q_table = _drop_empty_optional(renamed_columns(q_df, q_map), REQUIRED["queries"], q_file,
                                       warnings)
        c_table = _drop_empty_optional(renamed_columns(c_df, c_map), REQUIRED["candidates"], c_file,
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
    probe = match_columns(columns, "long", mapping, file, require=False)[0]
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
    data, path, name, head, fmt = open_source(source, name)
    try:
        if fmt == "parquet":
            schema = pa_parquet.read_schema(path if data is None else pa.BufferReader(data))
            return tuple(str(c) for c in schema.names)
        check_text(head, name)
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
        raise InputError(failure_reason(f"cannot read the columns as {fmt.upper()}", exc),
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
    check_mapping(q)
    check_mapping(c)
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
                    if k in TEXT_COLUMNS and v is not None]
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
            if src is None or canon not in KIND_COLUMNS[kind] or _has_column(df, src):
                continue
            if shared and any(canon in KIND_COLUMNS[k] and _has_column(d, src)
                              for k, d, _, _ in tables):
                continue
            errors.append(InputError("mapped column not found", file=file, column=str(src),
                                     hint=f"mapped to '{canon}'; columns found: "
                                          f"{name_list(df.columns)}", code="bad_mapping"))


def _unused(columns, column_map, file, *, queries: bool = False) -> list[str]:
    """The note naming a table's columns that no field reads; a queries table's may be cohort
    columns (contract §9), which the note says rather than calling them unused."""
    used = set(column_map.values())
    unused = [str(c) for c in columns if str(c) not in used]
    if not unused:
        return []
    what = ("not used by the metrics (cohort columns may be chosen among them)" if queries
            else "not used")
    return [f"{file}: column(s) {what}: {name_list(unused)}"]


def _drop_empty_optional(table: dict, required, file, warnings) -> dict:
    """Optional columns with no value at all are treated as absent (with a warning)."""
    empty = [c for c in table if c not in required and all_missing(table[c])]
    for col in empty:
        warnings.append(f"{file}: column '{col}' has no values and is ignored")
    return {c: s for c, s in table.items() if c not in empty}


def _kept_columns(column_map: dict, table: dict) -> dict:
    return {k: v for k, v in column_map.items() if k in table}


def _no_candidates() -> dict:
    return {"post_id": pd.Series([], dtype="str"), "criterion": pd.Series([], dtype="str"),
            "sent_uid": pd.Series([], dtype="str"), "score": pd.Series([], dtype=np.float64),
            "is_gold": pd.Series([], dtype=np.int8)}


def _check_queries(table: dict, chk: Checker) -> tuple[dict, np.ndarray]:
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
        split, missing = text_values(table["split"])
        chk.flag(missing, "values must not be empty", "split")
        q["split"] = split
    return q, p_missing


def _check_candidates(table: dict, chk: Checker) -> tuple[dict, np.ndarray]:
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
        c["sentence"] = text_values(table["sentence"])[0].fillna("")
    return c, score_missing


def _two_tables(q_table, q_rows, q_file, q_map, c_table, c_file, c_map, errors) -> _Parts:
    """Check a queries table and a candidates table and match candidates to queries."""
    q_chk = Checker(q_file, q_rows, q_map, errors)
    q, p_missing = _check_queries(q_table, q_chk)
    n_q, n_c = len(q_table["post_id"]), len(c_table["post_id"])
    c_rows = _RowNumbers(n_c)
    c_chk = Checker(c_file, c_rows, c_map, errors)
    c, score_missing = _check_candidates(c_table, c_chk)
    parts = _Parts(q, q_rows, p_missing, c, c_rows, None, score_missing)
    if not (q_chk.ids_ok and c_chk.ids_ok):
        parts.c_query = np.full(n_c, -1, dtype=np.int64)
        return parts
    # The ids' order along the rows (for the uniqueness check within queries) is compared on
    # a thread, in Arrow without the interpreter, while the queries are matched here.
    increasing = None
    if n_c >= _THREADED_UID_ROWS and dictionary_chunks(c["sent_uid"]) is None:
        pool = ThreadPoolExecutor(max_workers=1)
        increasing = pool.submit(charged(_uid_steps), c["sent_uid"])
        pool.shutdown(wait=False)
    q_post, posts = factorize_values(q["post_id"])
    q_crit, crits = factorize_values(q["criterion"])
    n_keys = len(posts) * len(crits)
    q_key = q_post * len(crits) + q_crit
    q_chk.flag(duplicated_rows(q_key), "(post_id, criterion) must be unique",
               hint=None if c_file else "a long table needs a sent_uid column; map it by "
                                        "hand if it has another name")
    # Look up each run of rows with one (post_id, criterion), not each row.
    starts, lengths = equal_runs(c["post_id"], c["criterion"])
    run_post = lookup_codes(c["post_id"].iloc[starts], posts)
    run_crit = lookup_codes(c["criterion"].iloc[starts], crits)
    run_key = np.where((run_post >= 0) & (run_crit >= 0), run_post * len(crits) + run_crit, -1)
    if n_keys <= 4 * n_q + 1_000_000:  # dense key space: direct lookup table
        lookup = np.full(n_keys + 1, -1, dtype=np.int64)  # the last slot serves key -1
        lookup[q_key] = np.arange(n_q, dtype=np.int64)
        run_query = lookup[run_key]
    else:  # sparse key space: binary search
        order = np.argsort(q_key, kind="stable")
        pos = np.searchsorted(q_key[order], run_key).clip(max=n_q - 1)
        run_query = np.where(q_key[order][pos] == run_key, order[pos], -1)
    # Each query's rows together (no query starts two runs): the runs stand for the queries.
    grouped = bool(np.all(run_query >= 0)) and int(np.bincount(run_query, minlength=1).max()) <= 1
    runs = QueryRuns(starts, lengths, run_query)
    parts.c_query = runs if grouped else runs.rows()
    if not grouped and (run_query < 0).any():
        c_chk.flag(parts.c_query < 0, "every candidate must belong to a query",
                   hint=f"no row with this (post_id, criterion) in {q_file}",
                   values=lambda idx: [f"({shown_value(p)}, {shown_value(k)})" for p, k in zip(
                       c["post_id"].iloc[idx].tolist(), c["criterion"].iloc[idx].tolist(),
                       strict=True)])
    _check_within_query(parts, q_chk, c_chk, increasing=increasing)
    return parts


#: From this many candidate rows on, the ids' order is compared on a thread.
_THREADED_UID_ROWS = 100_000


def _split_long(table, rows, file, q_map, c_map, errors) -> _Parts:
    """Split a long table into queries and candidates; the per-query columns must repeat
    the same value on every row of a query."""
    chk = Checker(file, rows, {**q_map, **c_map}, errors)
    q_all, p_missing_all = _check_queries(table, chk)
    no_cand = text_values(table["sent_uid"])[1]
    c_idx = np.flatnonzero(~no_cand)
    c_table = table if len(c_idx) == len(rows) else {
        k: v.iloc[c_idx].reset_index(drop=True) for k, v in table.items()}
    c_chk = Checker(file, rows[c_idx], c_map, errors)
    c, score_missing = _check_candidates(c_table, c_chk)
    if not chk.ids_ok:
        return _Parts(q_all, rows, p_missing_all, c, c_chk.rows,
                      np.zeros(len(c_idx), dtype=np.int64), score_missing)
    # Group the runs of rows with one (post_id, criterion), then expand to rows.
    starts, lengths = equal_runs(q_all["post_id"], q_all["criterion"])
    post = factorize_values(q_all["post_id"].iloc[starts])[0]
    crit, crits = factorize_values(q_all["criterion"].iloc[starts])
    run_code, first_run = group_first(post * len(crits) + crit)
    qcode, first = np.repeat(run_code, lengths), starts[first_run]
    for canon in ("has_evidence", "p_has_evidence", "fold", "n_gold", "split"):
        if canon not in q_all:
            continue
        values = q_all[canon]
        if isinstance(values, pd.Series):
            values = factorize_values(values)[0]
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
    arr = as_arrow(uid)
    step = compare(arr.slice(1), arr.slice(0, n - 1)).to_numpy()
    return step if step.flags.writeable else step.copy()


def _ordered_within_runs(uid: pd.Series, starts: np.ndarray, increasing=None) -> bool:
    """Whether ``sent_uid`` strictly increases (or strictly decreases) along the rows of every
    query, the rows of each query being consecutive from ``starts``: then no id repeats within
    a query, and no id needs hashing. Candidate files written query by query in id order take
    this path. ``increasing``: :func:`_uid_steps` of ``uid`` computed already (a future)."""
    if len(uid) < 2:
        return True
    chunks = dictionary_chunks(uid)
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
    caller's full check to find the rows. Within a chunk equal codes are equal ids: a query
    whose codes strictly increase along its rows repeats none (one pass over the rows); the
    codes of each other query are sorted and neighbours compared. A query whose rows straddle
    two chunks (two dictionaries) is checked by its strings."""
    indices = [c.indices.to_numpy() for c in chunks]
    ends = np.append(starts[1:], n)
    lengths = ends - starts
    bounds = np.cumsum([len(c) for c in chunks])[:-1]
    bounds = bounds[(bounds > 0) & (bounds < n)]
    by_bound = np.searchsorted(starts, bounds, side="right") - 1
    straddling = np.unique(by_bound[starts[by_bound] < bounds])
    within = np.zeros(starts.size, dtype=bool)
    within[_codes_not_increasing(indices, starts, bounds)] = True
    within[straddling] = False
    if within.any():
        if int(lengths[within].sum()) <= n // 4:  # these queries' codes alone, not every row's
            few = lengths[within]
            if repeats_within(runs_of_parts(indices, starts[within], few), np.cumsum(few) - few,
                              few, np.ones(few.size, dtype=bool)):
                return False
        elif repeats_within(np.concatenate(indices), starts, lengths, within):
            return False
    for q in straddling.tolist():
        ids = dictionary_strings(chunks, np.arange(starts[q], ends[q]))
        if len(set(ids)) < len(ids):
            return False
    return True


def _codes_not_increasing(codes: np.ndarray | list, starts: np.ndarray,
                          bounds: np.ndarray) -> np.ndarray:
    """The queries (rows consecutive from ``starts``) whose codes do not strictly increase
    along their rows within a chunk, in one pass: every other query repeats no code. A file
    written query by query with each query's ids in order, their dictionary built as they
    first appear, has none. ``bounds``: the first row of every chunk but the first (a pair of
    rows of two chunks holds codes of two dictionaries, and is not compared). ``codes``: the
    codes of every row, or the chunks' codes (compared chunk by chunk, not concatenated)."""
    parts = [codes] if isinstance(codes, np.ndarray) else codes
    down = np.zeros(sum(part.size for part in parts), dtype=bool)  # codes[i + 1] <= codes[i]
    at = 0
    for part in parts:  # (a chunk's last row has no pair within the chunk: it stays False)
        np.less_equal(part[1:], part[:-1], out=down[at:at + max(part.size - 1, 0)])
        at += part.size
    down[starts[1:] - 1] = False  # the pairs (i, i + 1) of two queries
    down[bounds - 1] = False
    # The few rows that step down, each to its query (no pass over every query's rows).
    return np.unique(np.searchsorted(starts, np.flatnonzero(down), side="right") - 1)


def _check_within_query(parts: _Parts, q_chk: Checker, c_chk: Checker, *, increasing=None):
    """Checks that need each candidate's query: ``sent_uid`` and ``rank`` unique within a
    query, ``n_gold`` not below the gold found. ``parts.c_query`` as :class:`QueryRuns`: every
    candidate has a query and the rows of each query are consecutive."""
    c_query = parts.c_query
    run_starts = c_query.starts if isinstance(c_query, QueryRuns) else None
    if run_starts is not None:  # every candidate has its query: no mask of the known ones
        known, all_known, any_known = None, True, len(c_query) > 0
    else:
        known = c_query >= 0
        all_known, any_known = bool(known.all()), bool(known.any())

    rows_query = []  # every candidate's query, expanded from the runs once if a check needs it

    def within_query(code, n_code):
        if not rows_query:
            rows_query.append(QueryRuns.rows_of(c_query))
        key = rows_query[0] * n_code + code
        if not all_known:  # a candidate without a query is unique by construction
            key = np.where(known, key, -1 - np.arange(len(key), dtype=np.int64))
        return key

    if any_known:
        if not (run_starts is not None
                and _ordered_within_runs(parts.c["sent_uid"], run_starts, increasing)):
            uid, uids = factorize_values(parts.c["sent_uid"])
            c_chk.flag(duplicated_rows(within_query(uid, len(uids))),
                       "(post_id, criterion, sent_uid) must be unique")
        if "rank" in parts.c:
            rank = parts.c["rank"]
            if rank.max() < (1 << 31):
                rank_code, n_rank = rank, int(rank.max()) + 1
            else:
                rank_code, n_rank = np.unique(rank, return_inverse=True)[1], len(rank)
            c_chk.flag(duplicated_rows(within_query(rank_code, n_rank)),
                       "values must be unique within a query", "rank")
    if "n_gold" in parts.q:
        # The gold rows are few: their queries counted (no pass over every query's rows).
        gold = np.flatnonzero(parts.c["is_gold"] == 1)
        if known is not None:
            gold = gold[known[gold]]
        found = np.bincount(QueryRuns.rows_of(c_query, gold), minlength=len(parts.q_rows))
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
    # every candidate's query, expanded from the runs once where something is excluded
    rows_query = QueryRuns.rows_of(parts.c_query) if queries_dropped else None
    c_by_query = q_drop[rows_query] if queries_dropped else np.zeros(0, dtype=bool)
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
    c_query = parts.c_query if c_keep is None else (
        rows_query if rows_query is not None else QueryRuns.rows_of(parts.c_query))
    if queries_dropped:  # renumber the kept queries
        c_query = QueryRuns.renumber(c_query, np.cumsum(~q_drop) - 1)
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
