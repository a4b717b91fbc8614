"""The prepared, sorted representation every metric kernel works on (contract §1-§3).

A :class:`Dataset` holds one row per query and one row per candidate, with the candidates of a
query stored contiguously in ranking order (``rank`` if given, else ``score`` descending with
ties broken by ``sent_uid`` descending, the trec_eval rule). Kernels use the group offsets and
the per-candidate position / cumulative-gold arrays, so no metric loops over queries in Python.

Everything here depends on the data only; it is computed once per data set and cached, and the
per-setting computations (gate, dynamic-K, thresholds) run on top of it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from metrics_core.data.ordering import QueryRuns
from metrics_core.data.ordering import grouped_order as _grouped_order

__all__ = ["CANDIDATE_COLUMNS", "QUERY_COLUMNS", "Dataset", "GatheredCandidates", "Queries"]

#: Canonical query-table columns (contract §2); the first four are required.
QUERY_COLUMNS = ("post_id", "criterion", "has_evidence", "p_has_evidence", "fold", "split",
                 "n_gold")
#: Canonical candidate-table columns (contract §2); the first five are required.
CANDIDATE_COLUMNS = ("post_id", "criterion", "sent_uid", "score", "is_gold", "rank", "sentence",
                     "relevance")


class _LazyStrings:
    """Strings kept in Arrow until first read: ``values`` taken in ``order``.

    The metric kernels never read candidate ids or texts, so :meth:`Dataset.from_frames` leaves
    them as Arrow strings; the object array is built on first access (case review, naive loops).
    """

    __slots__ = ("order", "values")

    def __init__(self, values, order: np.ndarray):
        self.values = values
        self.order = order

    def materialise(self) -> np.ndarray:
        values = self.values
        if isinstance(values, pa.ChunkedArray) and pa.types.is_dictionary(values.type):
            # Dictionary chunks (one dictionary each, as read): decoded chunk by chunk.
            values = pa.chunked_array([c.dictionary_decode() for c in values.chunks],
                                      type=values.type.value_type)
        values = values.to_numpy(zero_copy_only=False) if isinstance(
            values, pa.Array) else values.to_numpy()
        return np.asarray(values, dtype=object)[self.order]


class _StringField:
    """Descriptor of a Dataset string column: reads always return an object ndarray (or None).

    Assigning a :class:`_LazyStrings` defers building the Python strings to the first read; the
    result is then stored, so later reads cost nothing. Anything else is stored as given.
    """

    _NO_DEFAULT = object()

    def __init__(self, *, default=_NO_DEFAULT):
        self.default = default

    def __set_name__(self, owner, name):
        self.slot = f"_{name}_values"

    def __get__(self, obj, owner=None):
        if obj is None:  # class access: the dataclass default, if any
            if self.default is _StringField._NO_DEFAULT:
                raise AttributeError(self.slot)
            return self.default
        value = obj.__dict__[self.slot]
        if isinstance(value, _LazyStrings):
            value = value.materialise()
            obj.__dict__[self.slot] = value
        return value

    def __set__(self, obj, value):
        obj.__dict__[self.slot] = value


class GatheredCandidates:
    """What a data set whose candidates live elsewhere (the Dask engine's query-level data
    set, :class:`metrics_core.engines.gathered.QueryLevelDataset`) gives in their place: the
    kernels that read candidates ask ``isinstance(ds, GatheredCandidates)`` and then read
    these, computed where the candidates are, instead of the candidate arrays.

    ``gathered_tie_masks``: the data audit's per-query tie masks
    (:func:`metrics_core.inputs.audit.tie_masks`); :meth:`gathered_hits`: the gold within the
    first K of each query (:func:`metrics_core.metrics.dynamic_k.hits_within`).
    """

    gathered_tie_masks: dict

    def gathered_hits(self, k: np.ndarray) -> np.ndarray:
        """Gold within the first ``k[q]`` candidates of every query ``q`` (int64)."""
        raise NotImplementedError


@dataclass(frozen=True, eq=False)
class Queries:
    """The queries of a data set as flat numpy arrays, in canonical order (post, then
    criterion), and what derives from them alone.

    A subclass says where the candidates are and gives their counts per query, ``n_cand``
    and ``n_gold_found``, and their total ``n_candidates``: :class:`Dataset` holds the
    candidates themselves; the Dask engine's query-level data set
    (:class:`metrics_core.engines.gathered.QueryLevelDataset`) the counts gathered from the
    workers that hold them.
    """

    post_id: np.ndarray  # object (str), per query
    criterion: np.ndarray  # object (str), per query
    criterion_code: np.ndarray  # int32 index into ``criteria``
    criteria: tuple[str, ...]  # criterion names in first-seen sorted order
    post_code: np.ndarray  # int64 index into ``posts``
    posts: np.ndarray  # object (str), unique post ids
    y: np.ndarray  # int8 gold label has_evidence
    p: np.ndarray  # float64 p_has_evidence
    fold: np.ndarray | None  # int64 or None
    split: np.ndarray | None  # object (str) or None
    n_gold_given: np.ndarray | None  # int64 n_gold column, or None

    @property
    def n_queries(self) -> int:
        return int(self.y.shape[0])

    @cached_property
    def fold_codes(self) -> tuple[np.ndarray, np.ndarray] | None:
        """``pandas.factorize(fold)``: (code per query, distinct folds in first-seen order);
        None without a fold column. Computed once per data set."""
        return None if self.fold is None else pd.factorize(self.fold)

    @cached_property
    def split_codes(self) -> tuple[np.ndarray, np.ndarray] | None:
        """``pandas.factorize(split)``, as :attr:`fold_codes` (hashing a million strings takes
        tens of milliseconds: once per data set, not per check, summary or app rerun)."""
        return None if self.split is None else pd.factorize(self.split)

    @property
    def folds(self) -> list[int] | None:
        """The distinct folds, ascending (None without a fold column)."""
        return None if self.fold is None else sorted(int(f) for f in self.fold_codes[1])

    @property
    def splits(self) -> list[str] | None:
        """The distinct splits, sorted (None without a split column)."""
        return None if self.split is None else sorted(str(s) for s in self.split_codes[1])

    @cached_property
    def n_gold(self) -> np.ndarray:
        """``|Gold|`` per query: the ``n_gold`` column where given, else gold found (§3)."""
        if self.n_gold_given is None:
            return self.n_gold_found
        return self.n_gold_given

    @cached_property
    def positives(self) -> np.ndarray:
        """Mask of ``has_evidence = 1`` queries: the ``positives_only`` protocol (§1)."""
        return self.y == 1

    @property
    def n_positive(self) -> int:
        return int(self.y.sum())

    def query_frame(self) -> pd.DataFrame:
        """The queries as a DataFrame in canonical order (for tables and downloads)."""
        data = {"post_id": self.post_id, "criterion": self.criterion,
                "has_evidence": self.y, "p_has_evidence": self.p,
                "n_candidates": self.n_cand, "n_gold": self.n_gold}
        if self.fold is not None:
            data["fold"] = self.fold
        if self.split is not None:
            data["split"] = self.split
        return pd.DataFrame(data)

    def query_fields(self, mask: np.ndarray) -> dict:
        """The query fields of the queries where ``mask`` is true (criteria and posts
        renumbered over those kept), for a subclass's ``subset``."""
        mask = np.asarray(mask, dtype=bool)
        if mask.shape != (self.n_queries,):
            raise ValueError(f"mask must have one entry per query ({self.n_queries}), "
                             f"got shape {mask.shape}")
        crit_used = np.unique(self.criterion_code[mask])
        remap = np.full(len(self.criteria), -1, dtype=np.int32)
        remap[crit_used] = np.arange(len(crit_used), dtype=np.int32)
        post_used, post_code = np.unique(self.post_code[mask], return_inverse=True)
        return {"post_id": self.post_id[mask], "criterion": self.criterion[mask],
                "criterion_code": remap[self.criterion_code[mask]],
                "criteria": tuple(self.criteria[i] for i in crit_used),
                "post_code": post_code.astype(np.int64), "posts": self.posts[post_used],
                "y": self.y[mask], "p": self.p[mask],
                "fold": None if self.fold is None else self.fold[mask],
                "split": None if self.split is None else self.split[mask],
                "n_gold_given": None if self.n_gold_given is None else self.n_gold_given[mask]}


@dataclass(frozen=True, eq=False)
class Dataset(Queries):
    """Queries and their ranked candidates as flat numpy arrays.

    Query arrays (:class:`Queries`) have length ``n_queries``; candidate arrays have length
    ``n_candidates`` and are grouped by query: the candidates of query ``q`` are
    ``offsets[q]:offsets[q + 1]`` in ranking order (position 1 first).

    Build one with :meth:`from_frames`; the loader in :mod:`metrics_core.inputs.loading` does that
    after validation. ``sent_uid`` and ``sentence`` read as object arrays like every other string
    field, but :meth:`from_frames` keeps them as Arrow strings until their first read: no
    metric kernel needs them, and building millions of Python strings dominates the cost.
    """

    # --- candidates (grouped by query, ranking order) ---
    offsets: np.ndarray  # int64, length n_queries + 1
    score: np.ndarray  # float64
    is_gold: np.ndarray  # bool
    sent_uid: np.ndarray = _StringField()  # object (str)
    sentence: np.ndarray | None = _StringField(default=None)  # object (str) or None
    relevance: np.ndarray | None = None  # int64 graded labels, or None
    ranked_by: str = "score"  # "rank" or "score"
    meta: dict = field(default_factory=dict)  # source file names etc.

    # ------------------------------------------------------------------ sizes
    @property
    def n_candidates(self) -> int:
        return int(self.score.shape[0])

    @cached_property
    def n_cand(self) -> np.ndarray:
        """Number of candidates per query (int64)."""
        return np.diff(self.offsets)

    @cached_property
    def query_of_candidate(self) -> np.ndarray:
        """Query index of every candidate (int64)."""
        return np.repeat(np.arange(self.n_queries, dtype=np.int64), self.n_cand)

    @cached_property
    def position(self) -> np.ndarray:
        """1-based position of every candidate within its query's ranking (int64)."""
        position = np.arange(1, self.n_candidates + 1, dtype=np.int64)
        position -= np.repeat(self.offsets[:-1], self.n_cand)
        return position

    def locate(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(query index, 1-based position) of the candidate ``rows``: the values of
        :attr:`query_of_candidate` and :attr:`position` at those rows, found by binary search
        in ``offsets`` so that a kernel reading a few rows (the gold ones) does not build
        either full-length array.

        >>> import pandas as pd
        >>> q = pd.DataFrame({"post_id": ["p", "p"], "criterion": ["A", "B"],
        ...                   "has_evidence": [1, 1], "p_has_evidence": [0.9, 0.8]})
        >>> c = pd.DataFrame({"post_id": "p", "criterion": ["A", "A", "B"],
        ...                   "sent_uid": ["s1", "s2", "s1"], "score": [0.9, 0.8, 0.5],
        ...                   "is_gold": [0, 1, 1]})
        >>> query, position = Dataset.from_frames(q, c).locate(np.array([1, 2]))
        >>> query.tolist(), position.tolist()
        ([0, 1], [2, 1])
        """
        rows = np.asarray(rows, dtype=np.int64)
        query = np.searchsorted(self.offsets, rows, side="right") - 1
        return query, rows - self.offsets[query] + 1

    @cached_property
    def gold_located(self) -> tuple[np.ndarray, np.ndarray]:
        """(query index, 1-based position) of every gold candidate, in row order (read-only
        int64 arrays; :meth:`locate` of the gold rows, found once for every kernel that
        reads the gold: the ranking metrics, the evidence hits at each K)."""
        query, position = self.locate(np.flatnonzero(self.is_gold))
        query.setflags(write=False)
        position.setflags(write=False)
        return query, position

    @cached_property
    def cum_gold(self) -> np.ndarray:
        """Number of gold candidates at positions 1..i of the same query (int64, inclusive)."""
        # One cumulative sum that restarts at every query: at a query's first candidate,
        # subtract the gold of the preceding rows since the previous restart.
        counts = self.is_gold.astype(np.int64)
        starts = self.offsets[:-1][self.n_cand > 0]
        before = np.searchsorted(np.flatnonzero(self.is_gold), starts, side="left")
        counts[starts] -= np.diff(before, prepend=0)
        return np.cumsum(counts, out=counts)

    @cached_property
    def n_gold_found(self) -> np.ndarray:
        """Gold sentences among the candidates, per query (int64)."""
        before = np.searchsorted(np.flatnonzero(self.is_gold), self.offsets, side="left")
        return np.diff(before).astype(np.int64)

    def candidate_slice(self, q: int) -> slice:
        """Slice of the candidate arrays belonging to query ``q``."""
        return slice(int(self.offsets[q]), int(self.offsets[q + 1]))

    # ------------------------------------------------------------- subsetting
    def subset(self, mask: np.ndarray) -> Dataset:
        """A new Dataset with only the queries where ``mask`` is true (their candidates follow)."""
        queries = self.query_fields(mask)
        mask = np.asarray(mask, dtype=bool)
        keep_c = np.repeat(mask, self.n_cand)
        n_cand = self.n_cand[mask]
        offsets = np.concatenate(([0], np.cumsum(n_cand, dtype=np.int64)))

        def c(a):
            return None if a is None else a[keep_c]

        return Dataset(
            **queries, offsets=offsets,
            score=self.score[keep_c], is_gold=self.is_gold[keep_c], sent_uid=self.sent_uid[keep_c],
            sentence=c(self.sentence), relevance=c(self.relevance), ranked_by=self.ranked_by,
            meta=dict(self.meta),
        )

    # ---------------------------------------------------------- construction
    @classmethod
    def from_frames(cls, queries: pd.DataFrame, candidates: pd.DataFrame,
                    *, meta: dict | None = None) -> Dataset:
        """Build from validated canonical frames (see :mod:`metrics_core.inputs.loading`).

        ``queries`` must have unique ``(post_id, criterion)``; every candidate must belong to
        a query and ``(post_id, criterion, sent_uid)`` must be unique. Queries without
        candidates are kept with zero candidates. Validation with row-level messages is the
        loader's job; this raises a plain ``ValueError`` if the invariants do not hold.
        """
        q_post = _arrow_strings(queries["post_id"])
        q_crit = _arrow_strings(queries["criterion"])
        keys = _QueryKeys.of(q_post, q_crit)
        order = keys.order

        def qcol(name, dtype=None):
            if name not in queries.columns or queries[name].isna().all():
                return None
            values = queries[name].to_numpy()[order]
            return values.astype(dtype) if dtype is not None else values

        # Candidates -> query index (canonical order), then ranking order within each query.
        qidx = _query_index(_arrow_strings(candidates["post_id"]),
                            _arrow_strings(candidates["criterion"]), keys.posts, keys.criteria,
                            keys.sorted_key)
        uid = _arrow_strings(candidates["sent_uid"])
        has_rank = "rank" in candidates.columns and not candidates["rank"].isna().all()
        rank = candidates["rank"].to_numpy(dtype=np.float64) if has_rank else None
        score = candidates["score"].to_numpy(dtype=np.float64)
        c_order, offsets, score_sorted = _candidate_order(qidx, keys.n_queries, score, rank,
                                                          uid, check_unique=True)
        if uid.null_count:  # keep pandas' missing-value object (nan) in the object array
            sent_uid = candidates["sent_uid"].astype(str).to_numpy(dtype=object)[c_order]
        else:
            sent_uid = _LazyStrings(uid, c_order)

        def ccol(name, dtype=None):
            if name not in candidates.columns or candidates[name].isna().all():
                return None
            values = candidates[name].to_numpy()[c_order]
            return values.astype(dtype) if dtype is not None else values

        n_gold_given = qcol("n_gold")
        is_gold = candidates["is_gold"].to_numpy()[c_order].astype(bool)
        if n_gold_given is not None:
            # A blank n_gold means "not given" for that query: use the gold found.
            given = pd.to_numeric(pd.Series(n_gold_given)).to_numpy(dtype=np.float64)
            if np.isnan(given).any():
                n_cand = np.diff(offsets)
                found = np.add.reduceat(np.concatenate((is_gold, [False])).astype(np.int64),
                                        offsets[:-1]) * (n_cand > 0)
                given = np.where(np.isnan(given), found, given)
            n_gold_given = given.astype(np.int64)
        fold = qcol("fold")
        if fold is not None:
            fold = pd.to_numeric(pd.Series(fold)).to_numpy(dtype=np.int64)
        split = _split_objects(queries["split"], order) if "split" in queries.columns else None
        sentence = None
        if "sentence" in candidates.columns:
            text = candidates["sentence"]
            if isinstance(text.dtype, pd.StringDtype) and len(text) and not text.isna().any():
                sentence = _LazyStrings(_arrow_strings(text), c_order)
            else:
                sentence = ccol("sentence")
                if sentence is not None:
                    sentence = sentence.astype(str).astype(object)
        relevance = ccol("relevance")
        if relevance is not None:
            relevance = relevance.astype(np.int64)

        return cls(
            **keys.fields(),
            y=queries["has_evidence"].to_numpy()[order].astype(np.int8),
            p=queries["p_has_evidence"].to_numpy()[order].astype(np.float64),
            fold=fold, split=split, n_gold_given=n_gold_given, offsets=offsets,
            score=score_sorted, is_gold=is_gold,
            sent_uid=sent_uid, sentence=sentence, relevance=relevance,
            ranked_by="rank" if has_rank else "score", meta=dict(meta or {}),
        )

    @classmethod
    def from_checked(cls, q: dict, c: dict, c_query: np.ndarray | QueryRuns, *,
                      meta: dict | None = None) -> Dataset:
        """Build from columns the loader (:mod:`metrics_core.inputs.loading`) has parsed and
        validated.

        ``q`` and ``c`` map canonical names to numpy arrays (ids, ``split`` and ``sentence``:
        pandas ``str`` Series); ``c_query`` is every candidate's row in ``q`` (an array, or
        :class:`~metrics_core.data.ordering.QueryRuns` when each query's rows come together).
        The result equals :meth:`from_frames` of the same tables; the loader has checked the keys
        already, so the candidates' query lookup and the uniqueness check are not repeated.
        """
        keys = _QueryKeys.of_categories(q["post_id"], q["criterion"]) or _QueryKeys.of(
            _arrow_strings(q["post_id"]), _arrow_strings(q["criterion"]))
        order = keys.order
        if np.array_equal(order, np.arange(keys.n_queries)):  # queries in canonical order
            qidx = c_query
        else:
            canonical = np.empty(keys.n_queries, dtype=np.int64)
            canonical[order] = np.arange(keys.n_queries, dtype=np.int64)
            qidx = QueryRuns.renumber(c_query, canonical)
            del canonical
        uid = _uid_values(c["sent_uid"])
        rank = c.get("rank")
        score = c["score"]
        c_order, offsets, score_sorted = _candidate_order(
            qidx, keys.n_queries, score, None if rank is None else rank.astype(np.float64),
            uid, check_unique=False)
        del qidx
        sentence = None
        if "sentence" in c and len(c["sentence"]):  # (from_frames: no rows, no sentences)
            sentence = _LazyStrings(_arrow_strings(c["sentence"]), c_order)
        relevance = c.get("relevance")
        return cls(
            **keys.fields(),
            y=q["has_evidence"][order].astype(np.int8),
            p=q["p_has_evidence"][order].astype(np.float64),
            fold=None if "fold" not in q else q["fold"][order].astype(np.int64),
            split=_split_objects(q["split"], order) if "split" in q else None,
            n_gold_given=None if "n_gold" not in q else q["n_gold"][order].astype(np.int64),
            offsets=offsets, score=score_sorted, is_gold=_as_bool(c["is_gold"])[c_order],
            sent_uid=_LazyStrings(uid, c_order), sentence=sentence,
            relevance=None if relevance is None else relevance[c_order].astype(np.int64),
            ranked_by="score" if rank is None else "rank", meta=dict(meta or {}),
        )


def _as_bool(labels: np.ndarray) -> np.ndarray:
    """0/1 labels as bool: int8 ones viewed as they are (no copy), others converted."""
    return labels.view(bool) if labels.dtype == np.int8 else labels.astype(bool)


def _natural_key(name: str):
    """Sort ``A.2`` before ``A.10``: digit runs compare as numbers."""
    import re

    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", str(name))]


@dataclass(frozen=True)
class _QueryKeys:
    """The queries' ids as codes, and the canonical query order (post, then criterion)."""

    posts: np.ndarray  # object, sorted unique post ids
    criteria: tuple  # criterion names, natural sort
    post_code: np.ndarray  # int64 per query, canonical order
    crit_code: np.ndarray  # int32 per query, canonical order
    order: np.ndarray  # input row of each query in canonical order
    sorted_key: np.ndarray  # post code * n_criteria + criterion code, increasing

    @property
    def n_queries(self) -> int:
        return int(self.order.size)

    @classmethod
    def of(cls, q_post, q_crit) -> _QueryKeys:
        criteria = tuple(sorted(pc.unique(q_crit).to_pylist(), key=_natural_key))
        posts = np.array(sorted(pc.unique(q_post).to_pylist()), dtype=object)
        crit_code_q = _codes(q_crit, criteria).astype(np.int32)
        post_code_q = _codes(q_post, posts)
        return cls._of_codes(posts, criteria, post_code_q, crit_code_q)

    @classmethod
    def of_categories(cls, q_post: pd.Series, q_crit: pd.Series) -> _QueryKeys | None:
        """:meth:`of` of ids read as categoricals of strings (the loader reads a Parquet
        file's ids so), from their codes: the distinct ids are the categories in use, sorted
        once, and each query's code is a gather, not a string lookup. None when the ids are
        no such categoricals, or two criteria have the same natural sort key (their order
        then depends on where they first appear: :meth:`of` decides)."""
        post, crit = _used_categories(q_post), _used_categories(q_crit)
        if post is None or crit is None:
            return None
        (post_codes, post_names), (crit_codes, crit_names) = post, crit
        crit_keys = [_natural_key(c) for c in crit_names]
        if len({tuple(k) for k in crit_keys}) < len(crit_keys):
            return None
        by_name = sorted(range(len(post_names)), key=post_names.__getitem__)
        by_key = sorted(range(len(crit_names)), key=crit_keys.__getitem__)
        post_rank = np.empty(len(post_names), dtype=np.int64)
        post_rank[by_name] = np.arange(len(post_names), dtype=np.int64)
        crit_rank = np.empty(len(crit_names), dtype=np.int64)
        crit_rank[by_key] = np.arange(len(crit_names), dtype=np.int64)
        return cls._of_codes(np.array([post_names[i] for i in by_name], dtype=object),
                             tuple(crit_names[i] for i in by_key), post_rank[post_codes],
                             crit_rank[crit_codes].astype(np.int32))

    @classmethod
    def _of_codes(cls, posts, criteria, post_code_q, crit_code_q) -> _QueryKeys:
        # Canonical query order: by post then criterion. The (post, criterion) keys are
        # sorted, never spread over a dense posts x criteria table: memory stays proportional
        # to the number of queries however many distinct posts and criteria there are.
        key_q = post_code_q * max(len(criteria), 1) + crit_code_q
        order = np.argsort(key_q, kind="stable")
        sorted_key = key_q[order]
        if sorted_key.size > 1 and np.any(sorted_key[1:] == sorted_key[:-1]):
            raise ValueError("duplicate (post_id, criterion) in queries")
        return cls(posts, criteria, post_code_q[order], crit_code_q[order], order, sorted_key)

    def fields(self) -> dict:
        """The Dataset fields these keys determine."""
        return {"post_id": self.posts[self.post_code],
                "criterion": np.array(self.criteria, dtype=object)[self.crit_code],
                "criterion_code": self.crit_code, "criteria": self.criteria,
                "post_code": self.post_code, "posts": self.posts}


def _used_categories(values: pd.Series) -> tuple[np.ndarray, list[str]] | None:
    """(int64 code of every value, the distinct values as Python strings) of a categorical of
    strings without missing values, only the categories in use, in category order; None for
    any other column."""
    if not (isinstance(values.dtype, pd.CategoricalDtype) and not values.hasnans
            and isinstance(values.cat.categories.dtype, pd.StringDtype)):
        return None
    codes = np.asarray(values.cat.codes, dtype=np.int64)
    names = values.cat.categories.tolist()
    used = np.bincount(codes, minlength=len(names)) > 0
    if not used.all():  # categories no row has: renumber the ones in use
        codes = (np.cumsum(used) - 1)[codes]
        names = [name for name, u in zip(names, used.tolist(), strict=True) if u]
    return codes, names


def _split_objects(values: pd.Series, order: np.ndarray):
    """The ``split`` column in canonical order as an object array of str (None if empty)."""
    if values.isna().all():
        return None
    if isinstance(values.dtype, pd.StringDtype) and not values.hasnans:
        # Encode in Arrow and convert the few distinct values only (no str object per row).
        arr = _arrow_strings(values)
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        encoded = pc.dictionary_encode(arr)
        uniques = np.array(encoded.dictionary.to_pylist(), dtype=object).astype(str)
        return uniques.astype(object)[np.asarray(encoded.indices)[order]]
    split = values.to_numpy()[order]
    if isinstance(values.dtype, pd.StringDtype):
        # Few distinct values: convert those, and share one str object per value (less
        # memory; sorting and hashing compare identical objects quickly).
        codes, uniques = pd.factorize(split, use_na_sentinel=False)
        return np.asarray(uniques, dtype=object).astype(str).astype(object)[codes]
    return split.astype(str).astype(object)


def _candidate_order(qidx: np.ndarray, n_queries: int, score: np.ndarray, rank, uid, *,
                     check_unique: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row order grouped by query in ranking order, offsets, ``score`` in that order);
    ``rank`` (float) wins over ``score``, ties of score are broken by ``sent_uid``
    descending (contract §3).

    ``check_unique=False`` is for input validated already: ``rank`` and ``sent_uid`` unique
    within each query. Then no two rows of a query have the same rank, and rows of equal score
    are put in ``sent_uid`` order afterwards, so the first sort need not be stable.
    """
    stable = check_unique
    if rank is not None:
        c_order, n_cand = _grouped_order(qidx, n_queries, rank, stable=stable)
    else:
        c_order, n_cand = _grouped_order(qidx, n_queries, score, stable=stable,
                                         descending=True)
    offsets = np.concatenate(([0], np.cumsum(n_cand)))
    score_sorted = score[c_order]
    if rank is None:
        c_order = _break_ties(c_order, offsets, score_sorted, uid)
        if check_unique and _adjacent_equal(uid, c_order, offsets):
            raise ValueError("duplicate sent_uid within a query")
    return c_order, offsets, score_sorted


#: Up to this many tied candidates, the tie-break sorts with Python's ``sorted``.
_PYTHON_SORT_MAX = 10_000


def _arrow_strings(values: pd.Series):
    """The column as Arrow strings, value by value what ``values.astype(str)`` holds.

    pandas' ``str`` columns are Arrow-backed already (no copy); other columns go through
    ``astype(str)`` first, so numbers and objects become the same text as before.
    """
    if (isinstance(values.dtype, pd.CategoricalDtype) and not values.hasnans
            and isinstance(values.cat.categories.dtype, pd.StringDtype)):
        # Strings read as a dictionary (metrics_core.inputs.loading): decode the codes in Arrow.
        arr = pa.array(values)
        return arr.dictionary_decode() if isinstance(arr, pa.Array) else pa.chunked_array(
            [c.dictionary_decode() for c in arr.chunks], type=arr.type.value_type)
    text = values if isinstance(values.dtype, pd.StringDtype) else values.astype(str)
    if hasattr(text.array, "__arrow_array__"):
        return pa.array(text.array)
    return pa.array(text.to_numpy(dtype=object), type=pa.large_string(), from_pandas=True)


def dictionary_text(values: pd.Series) -> pa.ChunkedArray | None:
    """The Arrow dictionary chunks of a text column the loader keeps as read (one dictionary
    per Parquet row group; ``loading.read_table``'s ``arrow_dictionary_columns``), else None."""
    dtype = values.dtype
    if not (isinstance(dtype, pd.ArrowDtype) and is_dictionary_text(dtype.pyarrow_dtype)):
        return None
    return values.array.__arrow_array__()


def is_dictionary_text(arrow_type: pa.DataType) -> bool:
    """Whether an Arrow type is a dictionary of strings."""
    return pa.types.is_dictionary(arrow_type) and (
        pa.types.is_string(arrow_type.value_type)
        or pa.types.is_large_string(arrow_type.value_type))


def _uid_values(values: pd.Series):
    """The ids as Arrow: the loader's dictionary chunks as they are (never decoded as a
    whole), other columns as :func:`_arrow_strings`."""
    chunks = dictionary_text(values)
    return _arrow_strings(values) if chunks is None else chunks


def take_text(values, rows: np.ndarray) -> list[str]:
    """``values[rows]`` as Python strings. Arrow dictionary chunks whose dictionaries differ
    (one per Parquet row group, as read) are decoded at these rows only, chunk by chunk,
    instead of unifying every chunk's dictionary first."""
    rows = np.asarray(rows, dtype=np.int64)
    if not (isinstance(values, pa.ChunkedArray) and pa.types.is_dictionary(values.type)):
        return values.take(rows).to_pylist()
    offsets = np.cumsum([0] + [len(c) for c in values.chunks])
    which = np.searchsorted(offsets, rows, side="right") - 1
    out = np.empty(rows.size, dtype=object)
    for i in np.unique(which).tolist():
        at = np.flatnonzero(which == i)
        chunk = values.chunks[i].take(pa.array(rows[at] - offsets[i]))
        out[at] = chunk.dictionary_decode().to_pylist()
    return out.tolist()


def _codes(values, categories) -> np.ndarray:
    """int64 position of every Arrow string of ``values`` in ``categories`` (-1 if absent)."""
    found = pc.index_in(values, value_set=pa.array(list(categories), type=values.type))
    return np.asarray(found.fill_null(-1)).astype(np.int64)


def _query_index(post, crit, posts, criteria, query_key: np.ndarray) -> np.ndarray:
    """Query index of every candidate row from its ``post_id`` and ``criterion`` strings.

    ``query_key`` holds every query's ``post code * n_criteria + criterion code`` in increasing
    order (the canonical query order), so a binary search finds each candidate's query.
    Candidate tables usually list the rows of a query together, so the lookups run once per
    run of equal consecutive (post, criterion) pairs and the result is repeated over the run;
    with unordered rows every row is looked up.
    """
    n = len(post)
    heads = None
    if n > 1:
        change = pc.or_(pc.not_equal(post[1:], post[:-1]), pc.not_equal(crit[1:], crit[:-1]))
        heads = np.flatnonzero(np.concatenate(([True], np.asarray(change.fill_null(True)))))
        if heads.size > n // 2:
            heads = None
    if heads is not None:
        post, crit = post.take(heads), crit.take(heads)
    c_post, c_crit = _codes(post, posts), _codes(crit, criteria)
    if c_post.size and (c_post.min() < 0 or c_crit.min() < 0):
        raise ValueError("candidates reference queries that do not exist")
    key = c_post * max(len(criteria), 1) + c_crit
    qidx = np.searchsorted(query_key, key)
    if qidx.size and (qidx.max() >= query_key.size or np.any(query_key[qidx] != key)):
        raise ValueError("candidates reference queries that do not exist")
    return qidx if heads is None else np.repeat(qidx, np.diff(np.append(heads, n)))


def _within_query(same: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Clear the entries of a consecutive-pair mask (i, i + 1) that straddle two queries."""
    inner = offsets[1:-1]
    same[inner[(inner > 0) & (inner <= same.size)] - 1] = False
    return same


def _break_ties(c_order: np.ndarray, offsets: np.ndarray, score_sorted: np.ndarray,
                uid) -> np.ndarray:
    """Re-sort each run of equal scores within a query by ``sent_uid`` descending (trec_eval).

    Only the tied rows' ids are read, so data with distinct scores never compares strings.
    ``score_sorted`` (the scores in ``c_order``) is permuted along, so it stays
    ``score[c_order]``.
    """
    if c_order.size < 2:
        return c_order
    same = _within_query(score_sorted[1:] == score_sorted[:-1], offsets)
    pairs = np.flatnonzero(same)
    if pairs.size == 0:
        return c_order
    member = np.zeros(c_order.size, dtype=bool)
    member[pairs] = True
    member[pairs + 1] = True
    idx = np.flatnonzero(member)
    new_run = np.ones(idx.size, dtype=bool)
    new_run[1:] = ~same[idx[1:] - 1]
    runs = np.cumsum(new_run)
    uids = take_text(uid, c_order[idx])
    if idx.size <= _PYTHON_SORT_MAX:  # few ties (the common case): plain stable sorts
        by_uid = sorted(range(idx.size), key=uids.__getitem__, reverse=True)
        ranked = np.array(sorted(by_uid, key=runs.__getitem__), dtype=np.int64)
    else:
        ties = pd.DataFrame({"run": runs, "uid": pd.Series(uids, dtype=object)})
        ties = ties.sort_values(["run", "uid"], ascending=[True, False], kind="mergesort")
        ranked = ties.index.to_numpy()
    moved = idx[ranked]
    c_order[idx] = c_order[moved]  # the caller's own arrays: re-sorted in place
    score_sorted[idx] = score_sorted[moved]  # equal scores, but keep each one's sign of zero
    return c_order


def _adjacent_equal(uid, c_order: np.ndarray, offsets: np.ndarray) -> bool:
    """Whether two consecutive candidates of a query (in ``c_order``) share a ``sent_uid``."""
    if c_order.size < 2:
        return False
    ranked = (uid.combine_chunks() if isinstance(uid, pa.ChunkedArray) else uid).take(c_order)
    same = np.array(pc.equal(ranked[1:], ranked[:-1]).fill_null(False), dtype=bool)
    return bool(_within_query(same, offsets).any())
