"""Orders of rows grouped by query: the within-query sort of the candidates, the stable sort of
small integer codes that the data set, the dynamic-K profile and the group tables share, and
the split of per-query work over two threads (:func:`by_halves`).

numpy only (no pandas): code that runs before pandas is imported can use it.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from metrics_core.cpu_account import charged

__all__ = ["PARALLEL_SORT_ROWS", "QueryRuns", "by_halves", "grouped_order", "repeats_within",
           "runs_of_parts", "stable_argsort"]


def stable_argsort(values: np.ndarray) -> np.ndarray:
    """``np.argsort(values, kind="stable")`` of integers (candidates per query, group codes):
    the same order, by numpy's radix sort when every value fits 16 unsigned bits (several
    times faster than its merge sort of 64-bit integers)."""
    values = np.asarray(values)
    if (values.size and values.dtype.kind in "iu" and values.min() >= 0
            and values.max() < (1 << 16)):
        return np.argsort(values.astype(np.uint16), kind="stable")
    return np.argsort(values, kind="stable")


class QueryRuns:
    """Every row's query given by runs of consecutive rows: run ``r`` is the ``lengths[r]``
    rows from row ``starts[r]`` on, all of query ``query[r]``; every row is in one run and no
    query has two. It stands for ``np.repeat(query, lengths)`` (:meth:`rows`) without an array
    of one query per row: a loader that found each query's rows together passes it as
    :func:`grouped_order`'s ``qidx``."""

    __slots__ = ("lengths", "query", "starts")

    def __init__(self, starts: np.ndarray, lengths: np.ndarray, query: np.ndarray):
        self.starts, self.lengths, self.query = starts, lengths, query

    def __len__(self) -> int:
        return int(self.lengths.sum())

    def rows(self) -> np.ndarray:
        """The query of every row."""
        return np.repeat(self.query, self.lengths)

    @staticmethod
    def rows_of(qidx: np.ndarray | QueryRuns, rows: np.ndarray | None = None) -> np.ndarray:
        """The query of every row (``rows``: of those rows only) of a query index given as an
        array or as :class:`QueryRuns`."""
        if not isinstance(qidx, QueryRuns):
            return qidx if rows is None else qidx[rows]
        if rows is None:
            return qidx.rows()
        return qidx.query[np.searchsorted(qidx.starts, rows, side="right") - 1]

    @staticmethod
    def renumber(qidx: np.ndarray | QueryRuns, new: np.ndarray) -> np.ndarray | QueryRuns:
        """The query index with query ``q`` as ``new[q]``, in the form it came in."""
        if not isinstance(qidx, QueryRuns):
            return new[qidx]
        return QueryRuns(qidx.starts, qidx.lengths, new[qidx.query])


def grouped_order(qidx: np.ndarray | QueryRuns, n_queries: int, key: np.ndarray, *,
                  stable: bool = True, descending: bool = False):
    """Stable order of the rows by (query, ``key`` ascending), and the rows per query.

    Equivalent to ``np.lexsort((key, qidx))`` without sorting all rows at once: the rows are
    grouped by query (a no-op when they already are; else :func:`_grouping`); rows in order
    within each query already are left as they are (one pass over them); else each query's
    rows are sorted by ``key``, one 2-D ``argsort`` per distinct number of rows per query.
    ``stable=False``: rows of one query with equal keys may come in any order (numpy's SIMD
    quicksort, about twice as fast), for callers that order such ties themselves.
    ``descending``: sort by ``-key`` (negated block by block, without a negated copy of the
    whole column). ``qidx`` may be :class:`QueryRuns`: the same result, from the runs.
    """
    if isinstance(qidx, QueryRuns):
        return _runs_order(qidx, n_queries, key, stable, descending)
    n = qidx.size
    grouped = None
    if n > 1 and np.any(qidx[1:] < qidx[:-1]):
        grouped = _grouping(qidx, n_queries)
        key = key[grouped]
        if _in_order(qidx[grouped], key, descending):  # each query's rows in order already
            return grouped, np.bincount(qidx, minlength=n_queries).astype(np.int64)
    elif _in_order(qidx, key, descending):
        return np.arange(n, dtype=np.int64), np.bincount(
            qidx, minlength=n_queries).astype(np.int64)
    n_cand = np.bincount(qidx, minlength=n_queries).astype(np.int64)
    order = _sorted_within(key, np.cumsum(n_cand) - n_cand, n_cand, stable, descending)
    return (order if grouped is None else grouped[order]), n_cand


def _runs_order(runs: QueryRuns, n_queries: int, key: np.ndarray, stable: bool,
                descending: bool):
    """:func:`grouped_order` of rows given as :class:`QueryRuns`: the queries' rows are
    grouped by moving whole runs when the runs are not in query order, and the pairs of rows
    of one query are those within a run (no query of every row, no count of every row)."""
    n = key.size
    n_cand = np.zeros(n_queries, dtype=np.int64)
    n_cand[runs.query] = runs.lengths
    starts, lengths, grouped = runs.starts, runs.lengths, None
    if runs.query.size > 1 and np.any(runs.query[1:] < runs.query[:-1]):
        by_query = stable_argsort(runs.query)
        grouped = _moved_runs(starts[by_query], lengths[by_query], n)
        lengths = lengths[by_query]
        starts = np.cumsum(lengths) - lengths
        key = key[grouped]
    if _runs_in_order(starts, key, descending):
        return (np.arange(n, dtype=np.int64) if grouped is None else grouped), n_cand
    order = _sorted_within(key, starts, lengths, stable, descending)
    return (order if grouped is None else grouped[order]), n_cand


def _sorted_within(key: np.ndarray, start: np.ndarray, n_cand: np.ndarray, stable: bool,
                   descending: bool) -> np.ndarray:
    """The order of rows grouped by query (query ``i``: ``n_cand[i]`` rows from ``start[i]``,
    the rows of no query outside them) by ``key`` within each query."""
    order = np.arange(key.size, dtype=np.int64)
    multi = np.flatnonzero(n_cand > 1)
    if multi.size:
        multi = multi[stable_argsort(n_cand[multi])]
        lengths, first = np.unique(n_cand[multi], return_index=True)
        bounds = np.append(first, multi.size)
        # A query's rows are one window of the grouped arrays: read and written through
        # window views (no index matrix).
        kind = "stable" if stable else "quicksort"

        def sort(length: int, heads: np.ndarray) -> None:
            block = sliding_window_view(key, length)[heads]  # (queries, length), a copy
            if descending:
                np.negative(block, out=block)
            ranked = np.argsort(block, axis=1, kind=kind)
            ranked += heads[:, None]
            sliding_window_view(order, length, writeable=True)[heads] = ranked

        work = [(length, start[multi[bounds[i]:bounds[i + 1]]])
                for i, length in enumerate(lengths.tolist())]  # per distinct list length
        # Each query's rows are sorted on their own, into their own window of ``order``.
        by_halves(sort, work, parallel=key.size >= PARALLEL_SORT_ROWS)
    return order


def _moved_runs(starts: np.ndarray, lengths: np.ndarray, n: int) -> np.ndarray:
    """The rows of runs taken in the given order (each run's rows as they are)."""
    # Row k of the output is row (start of its run) + (k - first output row of its run).
    shift = starts - (np.cumsum(lengths) - lengths)
    return np.arange(n, dtype=np.int64) + np.repeat(shift, lengths)


def _grouping(qidx: np.ndarray, n_queries: int) -> np.ndarray:
    """``np.argsort(qidx, kind="stable")``: the rows grouped by query, each query's rows in
    their own order. Rows that come in runs of one query (a file listing each query's rows
    together, its queries in another order than the data set's) are grouped by moving whole
    runs, in one pass: the runs ordered by query (stable), each run's rows as they are; other
    files take one integer sort of ``qidx`` with the row number packed into the low bits."""
    n = qidx.size
    heads = np.flatnonzero(qidx[1:] != qidx[:-1]) + 1
    if heads.size < n // 4:  # runs of four rows or more on average
        starts = np.concatenate(([0], heads))
        lengths = np.diff(np.append(starts, n))
        runs = stable_argsort(qidx[starts])
        return _moved_runs(starts[runs], lengths[runs], n)
    bits = int(n - 1).bit_length()
    if int(n_queries).bit_length() + bits <= 62:
        packed = (qidx << bits) | np.arange(n, dtype=np.int64)
        packed.sort()
        return packed & ((1 << bits) - 1)
    return np.argsort(qidx, kind="stable")


#: Rows whose order :func:`_in_order` checks first (a file not in order usually shows it here).
_FIRST_ROWS = 1 << 14


def _in_order(qidx: np.ndarray, key: np.ndarray, descending: bool) -> bool:
    """Whether the rows of each query (``qidx`` grouped) already come by ``key`` (ascending,
    or descending), as a ranker's output file usually lists them: then the sort's order is
    the rows' own, ties included (a stable sort keeps tied rows in place). The first rows are
    checked first, so a file in another order costs a glance; a NaN key is out of order."""
    n = qidx.size
    for a, b in ((0, min(n, _FIRST_ROWS)), (max(min(n, _FIRST_ROWS) - 1, 0), n)):
        k, q = key[a:b], qidx[a:b]
        ordered = (k[1:] <= k[:-1]) if descending else (k[1:] >= k[:-1])
        if np.any(~ordered & (q[1:] == q[:-1])):
            return False
    return True


def _runs_in_order(starts: np.ndarray, key: np.ndarray, descending: bool) -> bool:
    """:func:`_in_order` of rows grouped by query, each query's rows one run from ``starts``
    (in order): the pairs of rows (i, i + 1) straddling two queries are not compared."""
    n = key.size
    for a, b in ((0, min(n, _FIRST_ROWS)), (max(min(n, _FIRST_ROWS) - 1, 0), n)):
        k = key[a:b]
        out = ~((k[1:] <= k[:-1]) if descending else (k[1:] >= k[:-1]))
        heads = starts[(starts > a) & (starts < b)]
        out[heads - a - 1] = False
        if out.any():
            return False
    return True


def repeats_within(values: np.ndarray, starts: np.ndarray, lengths: np.ndarray,
                   within: np.ndarray) -> bool:
    """Whether a value repeats within the rows of one of the queries in the mask ``within``
    (query ``i``: the ``lengths[i]`` rows of ``values`` from ``starts[i]``): each such query's
    values sorted, one 2-D sort per number of rows per query, and neighbours compared."""
    within = within & (lengths > 1)
    queries = np.flatnonzero(within)
    queries = queries[stable_argsort(lengths[queries])]
    sizes, first = np.unique(lengths[queries], return_index=True)
    groups = np.split(starts[queries], first[1:]) if queries.size else []
    repeated = []

    def check(size: int, heads: np.ndarray) -> None:
        block = sliding_window_view(values, size)[heads]  # (queries, size), a copy
        block.sort(axis=1)
        if (block[:, 1:] == block[:, :-1]).any():
            repeated.append(size)

    # (two threads from PARALLEL_SORT_ROWS rows on: numpy sorts without the interpreter)
    by_halves(check, list(zip(sizes.tolist(), groups, strict=True)),
              parallel=values.size >= PARALLEL_SORT_ROWS)
    return bool(repeated)


def runs_of_parts(parts: list, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The rows of the runs (run ``i``: the ``lengths[i]`` rows from row ``starts[i]``, all in
    one of ``parts``) of the arrays ``parts`` laid end to end, run after run: a copy of these
    rows alone, without joining the parts."""
    first = np.cumsum([0] + [part.size for part in parts])
    total = int(lengths.sum())
    rows = np.arange(total, dtype=np.int64) + np.repeat(starts - (np.cumsum(lengths) - lengths),
                                                         lengths)
    part_of = np.repeat(np.searchsorted(first, starts, side="right") - 1, lengths)
    out = np.empty(total, dtype=np.result_type(*parts))
    for k in np.unique(part_of).tolist():
        at = part_of == k
        out[at] = parts[k][rows[at] - first[k]]
    return out


def by_halves(fn, work, *, parallel: bool) -> None:
    """``fn(length, heads)`` for every ``(length, heads)`` of ``work`` (the queries of each
    number of rows, by their first rows), each query's rows handled on their own into their
    own rows of the output. ``parallel``: a second thread takes the first half of the queries
    of every length (numpy releases the interpreter while it copies and computes these
    blocks); the same result, as no query is split."""
    if not parallel:
        for length, heads in work:
            fn(length, heads)
        return
    with ThreadPoolExecutor(max_workers=1) as pool:
        helper = pool.submit(charged(lambda: [fn(length, heads[:heads.size // 2])
                                              for length, heads in work]))
        for length, heads in work:
            fn(length, heads[heads.size // 2:])
        helper.result()  # (raises what the helper raised)


#: From this many candidate rows on, :func:`grouped_order` sorts on two threads (and
#: :mod:`metrics_core.metrics.dynamic_k` cumulates the mass on two).
PARALLEL_SORT_ROWS = 2_000_000
