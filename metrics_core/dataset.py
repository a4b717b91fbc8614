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

__all__ = ["CANDIDATE_COLUMNS", "QUERY_COLUMNS", "Dataset"]

#: Canonical query-table columns (contract §2); the first four are required.
QUERY_COLUMNS = ("post_id", "criterion", "has_evidence", "p_has_evidence", "fold", "split",
                 "n_gold")
#: Canonical candidate-table columns (contract §2); the first five are required.
CANDIDATE_COLUMNS = ("post_id", "criterion", "sent_uid", "score", "is_gold", "rank", "sentence",
                     "relevance")


@dataclass(frozen=True, eq=False)
class Dataset:
    """Queries and their ranked candidates as flat numpy arrays.

    Query arrays have length ``n_queries``; candidate arrays have length ``n_candidates`` and are
    grouped by query: the candidates of query ``q`` are ``offsets[q]:offsets[q + 1]`` in ranking
    order (position 1 first).

    Build one with :meth:`from_frames`; the loader in :mod:`metrics_core.io` does that after
    validation.
    """

    # --- queries ---
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
    # --- candidates (grouped by query, ranking order) ---
    offsets: np.ndarray  # int64, length n_queries + 1
    score: np.ndarray  # float64
    is_gold: np.ndarray  # bool
    sent_uid: np.ndarray  # object (str)
    sentence: np.ndarray | None = None  # object (str) or None
    relevance: np.ndarray | None = None  # int64 graded labels, or None
    ranked_by: str = "score"  # "rank" or "score"
    meta: dict = field(default_factory=dict)  # source file names etc.

    # ------------------------------------------------------------------ sizes
    @property
    def n_queries(self) -> int:
        return int(self.y.shape[0])

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
        return np.arange(self.n_candidates, dtype=np.int64) - np.repeat(
            self.offsets[:-1], self.n_cand) + 1

    @cached_property
    def cum_gold(self) -> np.ndarray:
        """Number of gold candidates at positions 1..i of the same query (int64, inclusive)."""
        total = np.cumsum(self.is_gold, dtype=np.int64)
        before = np.concatenate(([0], total))[self.offsets[:-1]]
        return total - np.repeat(before, self.n_cand)

    @cached_property
    def n_gold_found(self) -> np.ndarray:
        """Gold sentences among the candidates, per query (int64)."""
        total = np.concatenate(([0], np.cumsum(self.is_gold, dtype=np.int64)))
        return total[self.offsets[1:]] - total[self.offsets[:-1]]

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

    def candidate_slice(self, q: int) -> slice:
        """Slice of the candidate arrays belonging to query ``q``."""
        return slice(int(self.offsets[q]), int(self.offsets[q + 1]))

    # ------------------------------------------------------------- subsetting
    def subset(self, mask: np.ndarray) -> Dataset:
        """A new Dataset with only the queries where ``mask`` is true (their candidates follow)."""
        mask = np.asarray(mask, dtype=bool)
        if mask.shape != (self.n_queries,):
            raise ValueError(f"mask must have one entry per query ({self.n_queries}), "
                             f"got shape {mask.shape}")
        keep_c = np.repeat(mask, self.n_cand)
        n_cand = self.n_cand[mask]
        offsets = np.concatenate(([0], np.cumsum(n_cand, dtype=np.int64)))

        def q(a):
            return None if a is None else a[mask]

        def c(a):
            return None if a is None else a[keep_c]

        crit_used = np.unique(self.criterion_code[mask])
        remap = np.full(len(self.criteria), -1, dtype=np.int32)
        remap[crit_used] = np.arange(len(crit_used), dtype=np.int32)
        post_used, post_code = np.unique(self.post_code[mask], return_inverse=True)
        return Dataset(
            post_id=self.post_id[mask], criterion=self.criterion[mask],
            criterion_code=remap[self.criterion_code[mask]],
            criteria=tuple(self.criteria[i] for i in crit_used),
            post_code=post_code.astype(np.int64), posts=self.posts[post_used],
            y=self.y[mask], p=self.p[mask], fold=q(self.fold), split=q(self.split),
            n_gold_given=q(self.n_gold_given), offsets=offsets,
            score=self.score[keep_c], is_gold=self.is_gold[keep_c], sent_uid=self.sent_uid[keep_c],
            sentence=c(self.sentence), relevance=c(self.relevance), ranked_by=self.ranked_by,
            meta=dict(self.meta),
        )

    # ---------------------------------------------------------- construction
    @classmethod
    def from_frames(cls, queries: pd.DataFrame, candidates: pd.DataFrame,
                    *, meta: dict | None = None) -> Dataset:
        """Build from validated canonical frames (see :mod:`metrics_core.io`).

        ``queries`` must have unique ``(post_id, criterion)``; every candidate must belong to
        a query and ``(post_id, criterion, sent_uid)`` must be unique. Queries without
        candidates are kept with zero candidates. Validation with row-level messages is the
        loader's job; this raises a plain ``ValueError`` if the invariants do not hold.
        """
        q_post = queries["post_id"].astype(str).to_numpy(dtype=object)
        q_crit = queries["criterion"].astype(str).to_numpy(dtype=object)
        criteria = tuple(sorted(pd.unique(q_crit), key=_natural_key))
        crit_code_q = pd.Categorical(q_crit, categories=list(criteria)).codes.astype(np.int32)
        posts = np.array(sorted(pd.unique(q_post)), dtype=object)
        post_code_q = pd.Categorical(q_post, categories=posts).codes.astype(np.int64)

        # Canonical query order: by post then criterion.
        order = np.lexsort((crit_code_q, post_code_q))
        post_code_q, crit_code_q = post_code_q[order], crit_code_q[order]
        key_q = post_code_q * len(criteria) + crit_code_q
        if np.any(np.diff(key_q) == 0):
            raise ValueError("duplicate (post_id, criterion) in queries")
        lookup = np.full(len(posts) * max(len(criteria), 1), -1, dtype=np.int64)
        lookup[key_q] = np.arange(len(key_q), dtype=np.int64)

        def qcol(name, dtype=None):
            if name not in queries.columns or queries[name].isna().all():
                return None
            values = queries[name].to_numpy()[order]
            return values.astype(dtype) if dtype is not None else values

        # Candidates -> query index.
        c_post = pd.Categorical(candidates["post_id"].astype(str), categories=posts).codes
        c_crit = pd.Categorical(candidates["criterion"].astype(str),
                                categories=list(criteria)).codes
        bad = (c_post < 0) | (c_crit < 0)
        qidx = np.where(bad, -1, lookup[np.where(bad, 0, c_post.astype(np.int64) * len(criteria)
                                                 + c_crit)])
        if np.any(qidx < 0):
            raise ValueError("candidates reference queries that do not exist")

        score = candidates["score"].to_numpy(dtype=np.float64)
        sent_uid = candidates["sent_uid"].astype(str).to_numpy(dtype=object)
        has_rank = "rank" in candidates.columns and not candidates["rank"].isna().all()
        if has_rank:
            rank = candidates["rank"].to_numpy(dtype=np.float64)
            c_order = np.lexsort((rank, qidx))
        else:
            c_order = _score_order(qidx, score, sent_uid)
        qidx_sorted = qidx[c_order]
        n_cand = np.bincount(qidx_sorted, minlength=len(key_q)).astype(np.int64)
        offsets = np.concatenate(([0], np.cumsum(n_cand)))
        s_uid = sent_uid[c_order]
        dup = (np.diff(qidx_sorted) == 0) & (s_uid[1:] == s_uid[:-1]) if not has_rank else None
        if dup is not None and dup.any():
            raise ValueError("duplicate sent_uid within a query")

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
                found = np.add.reduceat(np.concatenate((is_gold, [False])).astype(np.int64),
                                        offsets[:-1]) * (n_cand > 0)
                given = np.where(np.isnan(given), found, given)
            n_gold_given = given.astype(np.int64)
        fold = qcol("fold")
        if fold is not None:
            fold = pd.to_numeric(pd.Series(fold)).to_numpy(dtype=np.int64)
        split = qcol("split")
        if split is not None:
            split = split.astype(str).astype(object)
        sentence = ccol("sentence")
        if sentence is not None:
            sentence = sentence.astype(str).astype(object)
        relevance = ccol("relevance")
        if relevance is not None:
            relevance = relevance.astype(np.int64)

        return cls(
            post_id=posts[post_code_q], criterion=np.array(criteria, dtype=object)[crit_code_q],
            criterion_code=crit_code_q, criteria=criteria, post_code=post_code_q, posts=posts,
            y=queries["has_evidence"].to_numpy()[order].astype(np.int8),
            p=queries["p_has_evidence"].to_numpy()[order].astype(np.float64),
            fold=fold, split=split, n_gold_given=n_gold_given, offsets=offsets,
            score=score[c_order], is_gold=is_gold,
            sent_uid=s_uid, sentence=sentence, relevance=relevance,
            ranked_by="rank" if has_rank else "score", meta=dict(meta or {}),
        )

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


def _natural_key(name: str):
    """Sort ``A.2`` before ``A.10``: digit runs compare as numbers."""
    import re

    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", str(name))]


def _score_order(qidx: np.ndarray, score: np.ndarray, sent_uid: np.ndarray) -> np.ndarray:
    """Candidate order: query, then score descending, then ``sent_uid`` descending (trec_eval).

    Sorts numerically first; only runs of equal (query, score) are re-sorted by their string
    ids, so the common case of distinct scores never compares strings.
    """
    order = np.lexsort((-score, qidx))
    if len(order) < 2:
        return order
    q_s, s_s = qidx[order], score[order]
    same = (q_s[1:] == q_s[:-1]) & (s_s[1:] == s_s[:-1])
    if not same.any():
        return order
    # Tie runs: mark members, label runs, re-sort members by (run, sent_uid desc).
    member = np.zeros(len(order), dtype=bool)
    member[1:] |= same
    member[:-1] |= same
    starts = np.ones(len(order), dtype=bool)
    starts[1:] = ~same
    run_id = np.cumsum(starts)
    idx = np.flatnonzero(member)
    ties = pd.DataFrame({"run": run_id[idx], "uid": sent_uid[order[idx]], "src": order[idx]})
    ties = ties.sort_values(["run", "uid"], ascending=[True, False], kind="mergesort")
    order = order.copy()
    order[idx] = ties["src"].to_numpy()
    return order
