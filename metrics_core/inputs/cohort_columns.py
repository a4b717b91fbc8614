"""Cohort attributes: extra columns of the queries table that name groups of queries (§9).

A *cohort column* is any column of the queries table (or of a long table) that the loader does
not use, e.g. ``site``, ``sex`` or ``age``. :func:`cohort_attributes` reads the declared ones,
validates them and gives each query of a loaded data set its cohort (in the data set's
canonical query order):

- text (or integer) columns are categories: a missing or empty value is the cohort
  ``missing`` (never dropped); a column with more than ``max_values`` distinct values is
  refused, naming the file, the column, the count and the limit;
- numeric columns with more distinct values than ``max_values`` (or any numeric column given
  ``bins``) are binned: into ``q`` quantile bins (``"q4"``, the default) or at given edges
  (``"40,65"``), labelled ``[40, 65)``;
- ``"site*sex"`` is the intersection of two declared columns (values ``S1*F``).

>>> import pandas as pd
>>> from metrics_core.inputs.loading import load
>>> q = pd.DataFrame({"post_id": ["1", "1", "2", "3"], "criterion": ["A", "B", "A", "A"],
...                   "has_evidence": [1, 0, 0, 1], "p_has_evidence": [.9, .2, .3, .8],
...                   "site": ["x", "x", None, "y"]})
>>> loaded = load(q)
>>> attrs = cohort_attributes(q, loaded, ["site"])
>>> attrs["site"].values, attrs["site"].codes.tolist()
(('missing', 'x', 'y'), [1, 1, 0, 2])
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from metrics_core.errors import InputError
from metrics_core.filters import bins_text, parse_bins

__all__ = ["MAX_COHORT_VALUES", "MISSING", "CohortAttribute", "CohortColumns", "CohortSource",
           "cohort_attributes", "cohort_columns", "parse_bins", "posts_table", "read_cohorts"]

#: Most distinct values a cohort column may have (a finer column is refused or binned).
MAX_COHORT_VALUES = 20
#: The cohort of a query whose value is missing or empty.
MISSING = "missing"
#: Default number of quantile bins of a numeric column.
DEFAULT_QUANTILES = 4


@dataclass(frozen=True, eq=False)
class CohortAttribute:
    """One cohort column: ``codes`` (one per query, into ``values``) and how it was made."""

    name: str
    values: tuple[str, ...]
    codes: np.ndarray
    binned: str | None = None  # "quantiles (4)", "edges 40, 65" or None (categories)

    def counts(self) -> dict[str, int]:
        """Queries per cohort value."""
        n = np.bincount(self.codes, minlength=len(self.values))
        return dict(zip(self.values, n.tolist(), strict=True))


def _text_ids(s: pd.Series) -> np.ndarray:
    """Ids as the loader reads them: numbers as their integer text ("7", not "7.0")."""
    if pd.api.types.is_float_dtype(s.dtype):
        v = s.to_numpy(dtype=np.float64, na_value=np.nan)
        finite = v[np.isfinite(v)]
        if np.all(finite == np.round(finite)):
            s = pd.Series(v).astype("Int64")
    return s.astype(str).to_numpy(dtype=object)


def _find(columns, name: str) -> str | None:
    """The column called ``name`` (exactly, else ignoring case, spaces, hyphens)."""
    if name in columns:
        return name

    def key(c):
        return re.sub(r"[\s\-_]", "", str(c)).lower()

    hits = [c for c in columns if key(c) == key(name)]
    return hits[0] if len(hits) == 1 else None


def _missing(s: pd.Series) -> np.ndarray:
    missing = np.array(s.isna(), dtype=bool)
    if s.dtype == object or pd.api.types.is_string_dtype(s.dtype):
        text = s.astype(str).str.strip()
        missing = missing | np.array(text == "", dtype=bool)
    return missing


def _label(lo: float, hi: float, last: bool) -> str:
    return f"[{lo:g}, {hi:g}]" if last else f"[{lo:g}, {hi:g})"


def _binned(values: np.ndarray, missing: np.ndarray, bins) -> tuple[tuple, np.ndarray, str]:
    """(labels, codes, description) of numeric values cut into bins; missing -> MISSING."""
    x = values[~missing]
    if isinstance(bins, int):
        edges = np.unique(np.quantile(x, np.linspace(0, 1, bins + 1))) if x.size else np.array([])
        how = f"quantiles ({bins})"
        inner = edges[1:-1]
        labels = ([_label(lo, hi, i == edges.size - 2)
                   for i, (lo, hi) in enumerate(itertools.pairwise(edges))]
                  if edges.size > 1 else ([f"{edges[0]:g}"] if edges.size else []))
    else:
        inner = np.asarray(bins, dtype=np.float64)
        how = "edges " + ", ".join(f"{e:g}" for e in inner)
        bounds = [-np.inf, *inner, np.inf]
        labels = []
        for lo, hi in itertools.pairwise(bounds):
            labels.append(f"< {hi:g}" if lo == -np.inf else f"≥ {lo:g}" if hi == np.inf
                          else f"[{lo:g}, {hi:g})")
    codes = np.searchsorted(inner, values, side="right").astype(np.int64)
    return (*_with_missing(tuple(labels), codes, missing), how)


def _with_missing(labels: tuple, codes: np.ndarray, missing: np.ndarray
                  ) -> tuple[tuple, np.ndarray]:
    """Only the observed values kept; missing ones the value ``missing`` (first)."""
    used = np.unique(codes[~missing])
    names = [labels[i] for i in used]
    remap = np.full(len(labels) + 1, -1, dtype=np.int64)
    remap[used] = np.arange(used.size)
    codes = remap[np.where(missing, len(labels), codes)]
    if missing.any():
        codes = np.where(missing, 0, codes + 1)
        names = [MISSING, *names]
    return tuple(names), codes.astype(np.int64)


def _one(values: pd.Series, name: str, file: str, bins, max_values: int) -> CohortAttribute:
    missing = _missing(values)
    typed = (pd.api.types.is_numeric_dtype(values.dtype)
             and not pd.api.types.is_bool_dtype(values.dtype))
    if typed:
        x = values.to_numpy(dtype=np.float64, na_value=np.nan)
    else:  # text (a CSV read as text): numbers if every value reads as one
        x = pd.to_numeric(values.where(~missing), errors="coerce").to_numpy(
            dtype=np.float64, na_value=np.nan)
    missing = missing | (typed & ~np.isfinite(x))
    numeric = bool(np.isfinite(x[~missing]).all()) and bool((~missing).any())
    if bins is not None and not numeric:
        raise InputError("cohort bins need a numeric column", file=file, column=name,
                         hint=f"'{name}' holds text; declare it without bins",
                         code="invalid_value")
    if typed:
        text = np.array([f"{v:g}" if np.isfinite(v) else "" for v in x], dtype=object)
    else:
        text = values.astype(str).str.strip().to_numpy(dtype=object)
    text = np.where(missing, "", text).astype(str)
    distinct, codes = np.unique(text, return_inverse=True)
    n_distinct = int(distinct.size - (1 if missing.any() else 0))
    if bins is None and n_distinct > max_values:
        if not numeric:
            raise InputError(f"cohort column has {n_distinct:,} distinct values, more than "
                             f"the limit of {max_values}", file=file, column=name,
                             hint="a cohort column names a few groups (site, sex, age band); "
                                  "bin a numeric column, or raise --cohort-max-values",
                             code="invalid_value")
        bins = DEFAULT_QUANTILES
    if bins is not None:
        labels, codes, how = _binned(np.where(missing, 0.0, x), missing, bins)
        return CohortAttribute(name, labels, codes, how)
    if numeric:  # categories in numeric order (2 before 10)
        order = np.argsort([float(d) if d else -np.inf for d in distinct], kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        distinct, codes = distinct[order], rank[codes]
    labels, codes = _with_missing(tuple(str(d) for d in distinct), codes.astype(np.int64),
                                  missing | (text == ""))
    return CohortAttribute(name, labels, codes)


def _intersection(name: str, parts: Sequence[CohortAttribute]) -> CohortAttribute:
    codes = np.zeros(parts[0].codes.size, dtype=np.int64)
    for part in parts:
        codes = codes * len(part.values) + part.codes
    used, local = np.unique(codes, return_inverse=True)
    labels = []
    for combined in used.tolist():
        names = []
        for part in reversed(parts):
            combined, index = divmod(combined, len(part.values))
            names.append(part.values[index])
        labels.append("*".join(reversed(names)))
    return CohortAttribute(name, tuple(labels), local.astype(np.int64))


def cohort_attributes(queries, loaded, declared: Sequence[str], *,
                      name: str | None = None, bins: Mapping[str, object] | None = None,
                      max_values: int = MAX_COHORT_VALUES, limits=None
                      ) -> dict[str, CohortAttribute]:
    """The declared cohort columns of ``queries`` (path, bytes or DataFrame) for the queries
    of ``loaded`` (a :class:`~metrics_core.inputs.loading.Loaded` of that file).

    ``declared``: column names, or ``"a*b"`` intersections of declared or listed columns.
    ``bins``: ``{column: "q4" | "40,65" | 4 | (40, 65)}`` for numeric columns.
    Raises :class:`InputError` naming the file and the column (absent column, a column the
    loader uses, too many distinct values, a value that differs within one query of a long
    table, bins on a text column).
    """
    from metrics_core.inputs.loading import read_table

    file = name or loaded.dataset.meta.get("queries_file") or "queries"
    q_map = loaded.column_map.get("queries", {})
    used = {str(v) for v in q_map.values()} | {
        str(v) for v in loaded.column_map.get("candidates", {}).values()}
    singles: list[str] = []
    for item in declared:
        parts = [part.strip() for part in str(item).split("*")]
        for part in parts:
            if not part:
                raise InputError("empty cohort column name", file=file, column=str(item),
                                 hint="write --cohort site or --cohort 'site*sex'",
                                 code="invalid_value")
            if part not in singles:
                singles.append(part)
        _check_distinct(parts, file)
    bins = {str(k): (parse_bins(v) if isinstance(v, str) else v)
            for k, v in (bins or {}).items()}
    if isinstance(queries, pd.DataFrame):
        frame = queries
    else:
        frame = read_table(queries, name=file, string_columns=singles, limits=limits)  # as text
    columns = [str(c) for c in frame.columns]
    found = {}
    for single in singles:
        col = _find(columns, single)
        if col is None:
            raise InputError("cohort column not found", file=file, column=single,
                             hint="columns found: " + ", ".join(columns[:20]),
                             code="invalid_value")
        if col in used:
            raise InputError("a column the evaluation reads cannot be a cohort column",
                             file=file, column=col, hint=f"'{col}' is read as an input",
                             code="invalid_value")
        found[single] = col
    unknown = [k for k in bins if k not in found]
    if unknown:
        raise InputError("bins given for a column that is not a declared cohort",
                         file=file, column=unknown[0], code="invalid_value")
    ds = loaded.dataset
    rows = _rows_of_queries(frame, q_map, ds, file)
    out: dict[str, CohortAttribute] = {}
    for single, col in found.items():
        values = frame[col]
        _check_constant(values, rows, file, col)
        picked = values.iloc[rows[0]].reset_index(drop=True)
        out[single] = _one(picked, single, file, bins.get(single), max_values)
    for item in declared:
        parts = [p.strip() for p in str(item).split("*")]
        if len(parts) > 1:
            key = "*".join(parts)
            out[key] = _intersection(key, [out[p] for p in parts])
    return {("*".join(p.strip() for p in str(d).split("*"))): out[
        "*".join(p.strip() for p in str(d).split("*"))] for d in declared}


def _check_distinct(parts: Sequence[str], file: str) -> None:
    """An intersection names each column once (``site*sex*age_band``; ``site*site`` is
    refused naming the column)."""
    twice = sorted({p for p in parts if parts.count(p) > 1})
    if twice:
        raise InputError("an intersection names a column twice", file=file,
                         column="*".join(parts),
                         hint=f"'{twice[0]}' appears more than once; join different columns, "
                              "such as site*sex or site*sex*age_band",
                         code="invalid_value")


def _rows_of_queries(frame: pd.DataFrame, q_map: Mapping, ds, file: str):
    """(first row of each data-set query in ``frame``, every row's query or -1)."""
    post_col, crit_col = q_map.get("post_id"), q_map.get("criterion")
    if post_col is None or crit_col is None or post_col not in frame or crit_col not in frame:
        raise InputError("the cohort columns' table lacks the query columns", file=file,
                         hint="post_id and criterion identify each query", code="invalid_value")
    key = pd.Series(_text_ids(frame[post_col])) + "\x1f" + pd.Series(_text_ids(frame[crit_col]))
    wanted = pd.Index(pd.Series(ds.post_id.astype(str)) + "\x1f"
                      + pd.Series(ds.criterion.astype(str)))
    of_row = wanted.get_indexer(key)
    first = np.full(ds.n_queries, -1, dtype=np.int64)
    present = np.flatnonzero(of_row >= 0)
    # the first row of each query: rows reversed, so the earliest write wins
    first[of_row[present[::-1]]] = present[::-1]
    if (first < 0).any():
        raise InputError("queries missing from the cohort columns' table", file=file,
                         n_rows=int((first < 0).sum()), code="invalid_value")
    return first, of_row


def _check_constant(values: pd.Series, rows, file: str, col: str) -> None:
    """In a long table, a query's rows must agree on a cohort value."""
    first, of_row = rows
    if len(values) == first.size:
        return
    present = np.flatnonzero(of_row >= 0)
    mine = values.iloc[present].astype(str).to_numpy(dtype=object)
    theirs = values.iloc[first[of_row[present]]].astype(str).to_numpy(dtype=object)
    bad = present[mine != theirs]
    if bad.size:
        raise InputError("a cohort value differs between the rows of one query", file=file,
                         column=col, rows=bad[:10] + 1, n_rows=int(bad.size),
                         code="invalid_value")


@dataclass(frozen=True, eq=False)
class CohortColumns:
    """The columns of a queries table that may name cohorts (those the loader does not read),
    with the query ids, as read: ``frame``; ``suggested``: the ones with at most
    :data:`MAX_COHORT_VALUES` distinct values, or numeric (to be binned); ``name``: the file."""

    frame: pd.DataFrame
    suggested: tuple[str, ...]
    others: tuple[str, ...]
    name: str

    def attributes(self, loaded, declared, **kw) -> dict[str, CohortAttribute]:
        """:func:`cohort_attributes` of these columns."""
        return cohort_attributes(self.frame, loaded, declared, name=self.name, **kw)


def cohort_columns(queries, loaded, *, name: str | None = None, limits=None,
                   max_values: int = MAX_COHORT_VALUES) -> CohortColumns:
    """The unused columns of the queries table ``queries`` (path, bytes or DataFrame) of
    ``loaded``, to offer as cohort columns (the app's Data page)."""
    from metrics_core.inputs.loading import read_table

    file = name or loaded.dataset.meta.get("queries_file") or "queries"
    frame = queries if isinstance(queries, pd.DataFrame) else read_table(
        queries, name=file, limits=limits)
    used = {str(v) for table in loaded.column_map.values() for v in table.values()}
    q_map = loaded.column_map.get("queries", {})
    ids = [c for c in (q_map.get("post_id"), q_map.get("criterion")) if c is not None]
    extra = [str(c) for c in frame.columns if str(c) not in used]
    suggested, others = [], []
    for column in extra:
        values = frame[column]
        numeric = (pd.api.types.is_numeric_dtype(values.dtype)
                   and not pd.api.types.is_bool_dtype(values.dtype))
        few = values.nunique(dropna=True) <= max_values
        (suggested if numeric or few else others).append(column)
    return CohortColumns(frame[[*ids, *extra]], tuple(suggested), tuple(others), file)


class CohortSource:
    """The cohort columns of one loaded data set, read when first asked for: what an
    :class:`~metrics_core.evaluation.evaluator.Evaluator` filters a cohort with
    (``Filters.cohorts`` with its ``cohort_bins``, contract §9).

    ``columns``: a :class:`CohortColumns` (the table as read) or a callable
    ``(declared, bins) -> {name: CohortAttribute}`` in the order of ``loaded``'s queries
    (``bins``: ``{column: spec}`` of the numeric columns given bins; the others with their
    default bins).

    >>> import pandas as pd
    >>> from metrics_core.inputs.loading import load
    >>> q = pd.DataFrame({"post_id": ["1", "1", "2"], "criterion": ["A", "B", "A"],
    ...                   "has_evidence": [1, 0, 0], "p_has_evidence": [.9, .2, .3],
    ...                   "site": ["x", "x", "y"], "age": [30, 30, 70]})
    >>> loaded = load(q)
    >>> source = CohortSource(cohort_columns(q, loaded), loaded)
    >>> source.keep(loaded.dataset, {"site": ("y",)}).tolist()
    [False, False, True]
    >>> source.values(["age"]), source.values(["age"], bins={"age": "40"})
    ({'age': ('30', '70')}, {'age': ('< 40', '≥ 40')})
    """

    def __init__(self, columns, loaded):
        self._read = columns.attributes if isinstance(columns, CohortColumns) else columns
        self.columns = columns if isinstance(columns, CohortColumns) else None
        self.loaded = loaded
        self._kept: dict[tuple, CohortAttribute] = {}

    def attributes(self, names: Sequence[str], *, bins: Mapping[str, object] | None = None
                   ) -> dict[str, CohortAttribute]:
        """The cohort columns ``names`` with the bins ``bins`` of their numeric columns
        (``{column: "40,65" | "q3"}``; a column without: its default bins), each read once
        per bins, then kept."""
        names = ["*".join(p.strip() for p in str(n).split("*")) for n in names]
        bins = {str(c).strip(): bins_text(b) for c, b in (bins or {}).items()}

        def key(name: str) -> tuple:
            return name, tuple((p, bins[p]) for p in name.split("*") if p in bins)

        wanted = [n for n in dict.fromkeys(names) if key(n) not in self._kept]
        if wanted:
            used = {p: bins[p] for n in wanted for p in n.split("*") if p in bins}
            if self.columns is not None:
                found = self._read(self.loaded, wanted, bins=used)
            else:
                found = self._read(wanted, used)
            self._kept.update({key(n): a for n, a in found.items()})
        return {n: self._kept[key(n)] for n in names}

    def values(self, names: Sequence[str], *, bins: Mapping[str, object] | None = None
               ) -> dict[str, tuple[str, ...]]:
        """The cohort values of each column in ``names`` (with the bins ``bins``)."""
        return {n: a.values for n, a in self.attributes(names, bins=bins).items()}

    def keep(self, ds, wanted: Mapping[str, Sequence[str]], *,
             bins: Mapping[str, object] | None = None) -> np.ndarray:
        """Which queries of ``ds`` (the loaded data set, or a data set of some of its queries)
        are in the cohort ``wanted`` (``{column: values}``: any of a column's values, every
        column), the numeric columns cut by ``bins`` (``{column: spec}``; a column without:
        its default bins). Raises :class:`InputError` naming the column, the value it lacks
        and the bins it was read with."""
        base = self.loaded.dataset
        attrs = self.attributes(list(wanted), bins=bins)
        keep = np.ones(base.n_queries, dtype=bool)
        for column, values in wanted.items():
            attr = attrs[column]
            unknown = [v for v in values if v not in attr.values]
            if unknown:
                shown = ", ".join(attr.values[:20]) + (", …" if len(attr.values) > 20 else "")
                cut = "; ".join(f"{p} binned {bins_text(bins[p])}"
                                for p in column.split("*") if p in (bins or {}))
                raise InputError(f"the cohort filter names a value the column does not have: "
                                 f"{', '.join(map(repr, unknown))}", column=column,
                                 file=self.columns.name if self.columns is not None else None,
                                 hint=f"values{f' ({cut})' if cut else ''}: {shown}",
                                 code="invalid_value")
            codes = [attr.values.index(v) for v in values]
            keep &= np.isin(attr.codes, codes)
        if ds is base or (ds.n_queries == base.n_queries
                          and np.array_equal(ds.post_id, base.post_id)
                          and np.array_equal(ds.criterion, base.criterion)):
            return keep
        keys = pd.Index(pd.Series(base.post_id.astype(str)) + "\x1f"
                        + pd.Series(base.criterion.astype(str)))
        rows = keys.get_indexer(pd.Series(ds.post_id.astype(str)) + "\x1f"
                                + pd.Series(ds.criterion.astype(str)))
        return np.where(rows >= 0, keep[np.maximum(rows, 0)], False)


def posts_table(posts, loaded, *, name: str | None = None, limits=None) -> pd.DataFrame:
    """A posts table (path, bytes or DataFrame: one row per ``post_id``, any other columns)
    as cohort columns of ``loaded``'s queries: one row per query, in the data set's order,
    with the query id columns of the queries table and the posts' other columns.

    Checked (every broken rule at once, each naming the file, the column, the rule and the
    rows): a ``post_id`` column, every post id given, each once, each a post of the data set.
    A post of the data set the table does not list has missing values (the cohort
    ``missing``), never dropped.

    >>> import pandas as pd
    >>> from metrics_core.inputs.loading import load
    >>> q = pd.DataFrame({"post_id": ["1", "1", "2"], "criterion": ["A", "B", "A"],
    ...                   "has_evidence": [1, 0, 0], "p_has_evidence": [.9, .2, .3]})
    >>> loaded = load(q)
    >>> posts_table(pd.DataFrame({"post_id": ["1"], "site": ["x"]}), loaded)["site"].tolist()
    ['x', 'x', nan]
    """
    from metrics_core.errors import InputErrors
    from metrics_core.inputs.loading import read_table

    file = name or "posts"
    frame = posts if isinstance(posts, pd.DataFrame) else read_table(
        posts, name=file, string_columns=["post_id"], limits=limits)
    columns = [str(c) for c in frame.columns]
    post_col = _find(columns, "post_id")
    if post_col is None:
        raise InputError("a posts table needs a post_id column", file=file, column="post_id",
                         hint="columns found: " + ", ".join(columns[:20]),
                         code="invalid_value")
    ids = pd.Series(_text_ids(frame[post_col]))
    errors = []
    empty = np.flatnonzero(_missing(frame[post_col].reset_index(drop=True)))
    if empty.size:
        errors.append(InputError("post_id must be given on every row", file=file,
                                 column=post_col, rows=empty + 1, n_rows=int(empty.size)))
    given = np.flatnonzero(~_missing(frame[post_col].reset_index(drop=True)))
    twice = given[ids.iloc[given].duplicated(keep=False).to_numpy()]
    if twice.size:
        errors.append(InputError("post_id must be unique: one row per post", file=file,
                                 column=post_col, rows=twice + 1, n_rows=int(twice.size)))
    ds = loaded.dataset
    known = pd.Index(pd.Series(ds.posts).astype(str))
    unknown = given[known.get_indexer(ids.iloc[given]) < 0]
    if unknown.size:
        errors.append(InputError("post_id names posts the data set does not have", file=file,
                                 column=post_col, rows=unknown + 1, n_rows=int(unknown.size),
                                 hint="first: " + ", ".join(map(repr, ids.iloc[unknown[:5]]))))
    InputErrors.raise_if_any(errors)
    rows = pd.Index(ids.iloc[given]).get_indexer(pd.Series(ds.post_id).astype(str))
    others = frame.drop(columns=[post_col]).iloc[given].reset_index(drop=True)
    out = others.reindex(rows).reset_index(drop=True)  # -1: a post not listed, all missing
    q_map = loaded.column_map.get("queries", {})
    ids_out = {q_map.get("post_id", "post_id"): ds.post_id.astype(str),
               q_map.get("criterion", "criterion"): ds.criterion.astype(str)}
    clash = [c for c in ids_out if c in out.columns]
    out = out.drop(columns=clash)
    return pd.concat([pd.DataFrame(ids_out), out], axis=1)


def read_cohorts(names: Sequence[str], tables: Sequence[tuple[object, str]], loaded, *,
                 bins: Mapping[str, object] | None = None,
                 max_values: int = MAX_COHORT_VALUES, limits=None
                 ) -> dict[str, CohortAttribute]:
    """The cohort columns ``names`` (``"a*b"``: intersections) from the first of ``tables``
    (``(source, file name)``: the queries table, then a posts table from :func:`posts_table`)
    that has each column; :func:`cohort_attributes` reads and checks them. A column none of
    them has is refused naming every table."""
    bins = dict(bins or {})
    keys = ["*".join(p.strip() for p in str(n).split("*")) for n in names]
    for key in keys:
        _check_distinct(key.split("*"), ", ".join(f for _, f in tables))
    singles = list(dict.fromkeys(p for k in keys for p in k.split("*")))
    found: dict[str, CohortAttribute] = {}
    for single in singles:
        for i, (source, file) in enumerate(tables):
            try:
                found.update(cohort_attributes(
                    source, loaded, [single], name=file, max_values=max_values, limits=limits,
                    bins={single: bins[single]} if single in bins else None))
                break
            except InputError as err:
                if err.rule != "cohort column not found" or i == len(tables) - 1:
                    if len(tables) > 1 and err.rule == "cohort column not found":
                        raise InputError("cohort column not found", column=single,
                                         file=", ".join(f for _, f in tables),
                                         hint="neither the queries table nor the posts table "
                                              "has it", code="invalid_value") from None
                    raise
    out = {}
    for key in keys:
        parts = key.split("*")
        out[key] = found[key] if len(parts) == 1 else _intersection(
            key, [found[p] for p in parts])
    return out
