"""Ranking metrics per query: recall, precision, hit, MAP, nDCG and MRR at cut-offs (contract §3).

Protocol ``positives_only`` (contract §1): the kernel returns one value for *every* query of a
:class:`~metrics_core.data.dataset.Dataset`, and the reducer selects the subset. Under the default
protocol reduce with ``ds.positives`` (``has_evidence = 1``), e.g.
``summarize(values["ndcg@10"], ds.positives)``; the ``all_queries`` variant reduces over all
queries.

Queries with ``|Gold| = 0`` (:func:`undefined_mask`) carry ``0.0`` in every array: the seeds'
convention (seed 000 ``if not gold: return 0.0``), which is what the ``all_queries`` variant
reports. Those values are conventions, not measurements; a reducer that needs to say so uses
:func:`undefined_mask`. A ``has_evidence = 1`` query without gold is reported by the data audit.

The kernel is vectorised: it works on the gold (or positively graded) candidates only, sums
their per-query contributions with one :func:`numpy.bincount` over (query, cut-off band) and a
cumulative sum over the bands, so every cut-off costs one pass for all queries.
The reference loop that follows the seed code literally is the private
``metrics_core.metrics._reference.naive_ranking_per_query``; the two agree to 1e-12
(tests/test_ranking.py).

Sources: "contract §N" is section N of ``docs/CONTRACT.md``; "seed 000" is
``docs/seeds/000-metric-specification.txt``; "seed 002" is
``docs/seeds/002-rag-evaluation-spec.txt``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from metrics_core.choices import GAINS, MAP_DENOMINATORS, PRECISION_DENOMINATORS
from metrics_core.data.dataset import Dataset
from metrics_core.metrics.dynamic_k import cumsum_rows

__all__ = [
    "DEFAULT_KS",
    "GAINS",
    "MAP_DENOMINATORS",
    "PRECISION_DENOMINATORS",
    "RankingSummary",
    "metric_names",
    "ranking_per_query",
    "summarize",
    "undefined_mask",
]

#: Default cut-offs (contract §3).
DEFAULT_KS = (1, 3, 5, 10, 20)
# PRECISION_DENOMINATORS, MAP_DENOMINATORS, GAINS: the variant values (metrics_core.choices).

#: Largest graded label: 2^1023 - 1 is the last gain a float64 holds.
_MAX_RELEVANCE = 1023

_AT_K = ("recall", "precision", "hit", "map", "ndcg", "mrr")


def metric_names(ks=DEFAULT_KS) -> tuple[str, ...]:
    """Names of the arrays :func:`ranking_per_query` returns, in its order (contract §3).

    >>> metric_names((1, 5))[:3]
    ('recall@1', 'recall@5', 'precision@1')
    """
    ks = check_ks(ks)
    return (*(f"{m}@{k}" for m in _AT_K for k in ks), "mrr")


def undefined_mask(ds: Dataset) -> np.ndarray:
    """Queries whose ranking metrics are undefined: ``|Gold| = 0`` (contract §3).

    Their per-query values are ``0.0`` by the seeds' convention. Under the default
    ``positives_only`` protocol the reducer uses ``ds.positives``, not this mask.
    """
    return np.asarray(ds.n_gold) == 0


def ranking_per_query(
    ds: Dataset,
    *,
    ks=DEFAULT_KS,
    precision_denominator: str = "k",
    map_denominator: str = "n_gold",
    gain: str = "binary",
) -> dict[str, np.ndarray]:
    """Ranking metrics of every query, one float64 array of length ``n_queries`` each (§3).

    Candidates are taken in the Dataset's ranking order; ``|Gold|`` is ``ds.n_gold`` (gold the
    candidate list missed counts). For each ``K`` in ``ks``:

    - ``recall@K`` = ``|TopK ∩ Gold| / |Gold|``;
    - ``precision@K`` = ``|TopK ∩ Gold| / K``, or ``/ min(K, n_candidates)`` with
      ``precision_denominator="min_k_n"`` (seed 002; ``0.0`` for a query without candidates,
      as for an empty selection in contract §7);
    - ``hit@K`` = 1 if ``TopK ∩ Gold`` is non-empty;
    - ``map@K`` = sum of ``precision@i`` at the gold hits ``i <= K`` divided by ``|Gold|``
      (trec_eval ``map_cut``), by ``min(|Gold|, K)`` (``"min_gold_k"``, seed 000) or by the
      number of hits within K (``"hits"``, seed 002; ``0.0`` without hits);
    - ``ndcg@K``: binary gain, ``DCG = Σ rel_i / log2(i + 1)`` over the top K, IDCG over
      ``min(|Gold|, K)`` ideal hits; with ``gain="graded"`` the gain is ``2^rel - 1`` from
      ``ds.relevance`` and the IDCG is the DCG@K of the query's candidate labels sorted
      descending (``0.0`` where that IDCG is 0);
    - ``mrr@K`` = 1 / position of the first gold if it is within K, else 0;

    and ``mrr`` = 1 / position of the first gold in the whole list (0 if none).

    Every value of a query with ``|Gold| = 0`` is ``0.0`` (seed convention; see
    :func:`undefined_mask`). Reduce with ``ds.positives`` for the default ``positives_only``
    protocol, e.g. with :func:`summarize`.

    Parameters
    ----------
    ds : Dataset
    ks : iterable of int, default (1, 3, 5, 10, 20)
        Cut-offs, each ``>= 1``.
    precision_denominator : {"k", "min_k_n"}, default "k"
    map_denominator : {"n_gold", "min_gold_k", "hits"}, default "n_gold"
    gain : {"binary", "graded"}, default "binary"

    Returns
    -------
    dict of str to ndarray
        Keys ``recall@K``, ``precision@K``, ``hit@K``, ``map@K``, ``ndcg@K``, ``mrr@K`` for every
        K, and ``mrr``, in the order of :func:`metric_names`.

    Raises
    ------
    ValueError
        For an unknown option, a cut-off below 1, ``gain="graded"`` on a Dataset without
        relevance labels or with negative labels, or a query whose ``n_gold`` is smaller than
        the gold found among its candidates.

    Examples
    --------
    >>> import pandas as pd
    >>> queries = pd.DataFrame({"post_id": ["p"], "criterion": ["A.1"],
    ...                         "has_evidence": [1], "p_has_evidence": [0.9]})
    >>> candidates = pd.DataFrame({"post_id": "p", "criterion": "A.1",
    ...                            "sent_uid": ["s1", "s2", "s3"], "score": [0.9, 0.8, 0.1],
    ...                            "is_gold": [0, 1, 0]})
    >>> values = ranking_per_query(Dataset.from_frames(queries, candidates), ks=(1, 3))
    >>> float(values["mrr"][0]), float(values["recall@1"][0]), float(values["recall@3"][0])
    (0.5, 0.0, 1.0)
    """
    ks = check_ks(ks)
    check_option("precision_denominator", precision_denominator, PRECISION_DENOMINATORS)
    check_option("map_denominator", map_denominator, MAP_DENOMINATORS)
    check_option("gain", gain, GAINS)
    relevance = check_relevance(ds) if gain == "graded" else None

    n_all = ds.n_queries
    # Gold candidates only: their query, 1-based position and rank among the query's gold.
    gold_q, gold_pos = ds.gold_located
    n_found = np.bincount(gold_q, minlength=n_all)
    gold_rank = _rank_within_query(gold_q, n_found)
    n_gold_all = check_n_gold(np.asarray(ds.n_gold, dtype=np.int64), n_found)

    # Every value of a query without gold is 0: compute over the queries with gold only
    # (under a tenth of the queries in a typical screening set) and place them at the end.
    with_gold = np.flatnonzero(n_gold_all > 0)
    compact = np.full(n_all + 1, -1, dtype=np.int64)  # the last slot serves index -1
    compact[with_gold] = np.arange(with_gold.size, dtype=np.int64)
    gold_q = compact[gold_q]  # every gold candidate's query has n_gold >= 1
    n_queries = with_gold.size
    n_cand = np.asarray(ds.n_cand, dtype=np.int64)[with_gold]
    n_gold = n_gold_all[with_gold]  # every one >= 1
    n_gold_f = n_gold.astype(np.float64)

    # Cut-off bands: band j holds positions cutoffs[j-1] < i <= cutoffs[j]. A per-query sum over
    # positions <= K is one bincount over (query, band) followed by a cumulative sum over bands.
    cutoffs = np.array(sorted(ks), dtype=np.int64)
    column = {int(k): j for j, k in enumerate(cutoffs)}
    n_bands, max_k = cutoffs.size, int(cutoffs[-1])
    band_of = np.searchsorted(cutoffs, np.arange(max_k + 1))

    def band_keys(q, pos):
        keep = pos <= max_k
        return keep, q[keep] * n_bands + band_of[pos[keep]]

    def up_to_cutoffs(keys, weights=None):
        sums = np.bincount(keys, weights=weights, minlength=n_queries * n_bands)
        return cumsum_rows(sums.reshape(n_queries, n_bands))

    # discount[i] = 1 / log2(i + 1) for positions i = 1..; ideal[m] = Σ_{i <= m} discount[i].
    max_pos = max(max_k, int(np.asarray(ds.n_cand).max(initial=0)))
    discount = np.zeros(max_pos + 1)
    discount[1:] = 1.0 / np.log2(np.arange(2, max_pos + 2, dtype=np.float64))
    ideal = np.cumsum(discount)

    # Hits and the map numerator (precision at each gold hit) at every cut-off.
    keep, keys = band_keys(gold_q, gold_pos)
    hits = up_to_cutoffs(keys)
    ap_sums = up_to_cutoffs(keys, gold_rank[keep] / gold_pos[keep])
    if relevance is None:
        dcgs = up_to_cutoffs(keys, discount[gold_pos[keep]])
        idcgs = None
    else:
        graded = np.flatnonzero(relevance > 0)
        (gr_q, gr_pos), gr_rel = ds.locate(graded), relevance[graded]
        gr_q = compact[gr_q]
        mine = gr_q >= 0  # labels of a query without gold count nowhere (its nDCG is 0)
        gr_q, gr_pos, gr_rel = gr_q[mine], gr_pos[mine], gr_rel[mine]
        keep, keys = band_keys(gr_q, gr_pos)
        dcgs = up_to_cutoffs(keys, (np.exp2(gr_rel[keep].astype(np.float64)) - 1.0)
                             * discount[gr_pos[keep]])
        # Ideal order: the query's positive labels sorted descending. gr_q is sorted, so
        # sorting the key (query, top label - label) sorts the labels within each query.
        top = int(gr_rel.max(initial=0))
        ideal_rel = top - np.sort(gr_q * (top + 1) + (top - gr_rel)) % (top + 1)
        ideal_pos = _rank_within_query(gr_q, np.bincount(gr_q, minlength=n_queries))
        keep, keys = band_keys(gr_q, ideal_pos)
        idcgs = up_to_cutoffs(keys, (np.exp2(ideal_rel[keep].astype(np.float64)) - 1.0)
                              * discount[ideal_pos[keep]])

    # First gold position (0 where the list holds no gold).
    first_pos = np.zeros(n_queries, dtype=np.int64)
    first = gold_rank == 1
    first_pos[gold_q[first]] = gold_pos[first]
    inv_first = np.zeros(n_queries)
    np.divide(1.0, first_pos, out=inv_first, where=first_pos > 0)

    out = {f"{m}@{k}": None for m in _AT_K for k in ks}
    for k in ks:
        j = column[k]
        hits_f = hits[:, j].astype(np.float64)

        out[f"recall@{k}"] = hits_f / n_gold_f

        if precision_denominator == "k":
            out[f"precision@{k}"] = hits_f / k
        else:
            denom = np.minimum(k, n_cand)
            out[f"precision@{k}"] = np.divide(hits_f, denom, out=np.zeros(n_queries),
                                              where=denom > 0)

        out[f"hit@{k}"] = (hits_f > 0).astype(np.float64)

        if map_denominator == "n_gold":
            ap_denom = n_gold_f
        elif map_denominator == "min_gold_k":
            ap_denom = np.minimum(n_gold_f, k)
        else:
            ap_denom = np.maximum(hits_f, 1.0)
        out[f"map@{k}"] = ap_sums[:, j] / ap_denom

        idcg = ideal[np.minimum(n_gold, k)] if idcgs is None else idcgs[:, j]
        out[f"ndcg@{k}"] = np.divide(dcgs[:, j], idcg, out=np.zeros(n_queries),
                                     where=idcg > 0)

        out[f"mrr@{k}"] = np.where(first_pos <= k, inv_first, 0.0)

    out["mrr"] = inv_first
    if n_queries == n_all:
        return out
    for name, values in out.items():
        full = np.zeros(n_all)
        full[with_gold] = values
        out[name] = full
    return out


def _rank_within_query(q: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """1-based index of each element among its query's elements (``q`` sorted, ``counts`` per
    query)."""
    return np.arange(q.size, dtype=np.int64) - (np.cumsum(counts) - counts)[q] + 1


@dataclass(frozen=True)
class RankingSummary:
    """Aggregate of one per-query ranking metric over a subset of queries (contract §3).

    ``std`` uses ``ddof = 0``; percentiles use numpy's default linear interpolation. All
    fields are ``nan`` and ``n = 0`` when the subset is empty.
    """

    mean: float
    std: float
    median: float
    p25: float
    p75: float
    n: int


def summarize(values, mask=None) -> RankingSummary:
    """Mean, std (ddof 0), median, P25 and P75 of ``values`` where ``mask`` is true (§3).

    Under the default ``positives_only`` protocol pass ``mask=ds.positives``; ``None`` means
    all queries (the ``all_queries`` variant).

    >>> summarize(np.array([0.0, 0.5, 1.0, 0.25]), np.array([True, True, True, False]))
    RankingSummary(mean=0.5, std=0.408248290463863, median=0.5, p25=0.25, p75=0.75, n=3)
    """
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 1:
        raise ValueError(f"values must be one-dimensional, got shape {values.shape}")
    if mask is not None:
        mask = np.asarray(mask)
        if mask.dtype != bool or mask.shape != values.shape:
            raise ValueError(f"mask must be a boolean array of shape {values.shape}, "
                             f"got {mask.dtype} of shape {mask.shape}")
        values = values[mask]
    if values.size == 0:
        nan = float("nan")
        return RankingSummary(mean=nan, std=nan, median=nan, p25=nan, p75=nan, n=0)
    p25, median, p75 = np.percentile(values, [25, 50, 75])
    return RankingSummary(mean=float(values.mean()), std=float(values.std()),
                          median=float(median), p25=float(p25), p75=float(p75),
                          n=int(values.size))


# ------------------------------------------------------------------------------ validation
def check_ks(ks) -> tuple[int, ...]:
    try:
        values = tuple(ks)
    except TypeError:
        raise ValueError(f"ks must be an iterable of integers >= 1, got {ks!r}") from None
    if not values:
        raise ValueError("ks must hold at least one cut-off")
    out = []
    for k in values:
        if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
            raise ValueError(f"ks must hold integers >= 1, got {k!r}")
        if int(k) in out:
            raise ValueError(f"ks must not repeat a cut-off, got {k!r} twice")
        out.append(int(k))
    return tuple(out)


def check_option(name: str, value, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {allowed}, got {value!r}")


def check_relevance(ds: Dataset) -> np.ndarray:
    if ds.relevance is None:
        raise ValueError("gain='graded' needs graded relevance labels (candidate column "
                         "'relevance'); this Dataset has none")
    relevance = np.asarray(ds.relevance, dtype=np.int64)
    bad = np.flatnonzero((relevance < 0) | (relevance > _MAX_RELEVANCE))
    if bad.size:
        raise ValueError(f"relevance must be an integer in [0, {_MAX_RELEVANCE}] for "
                         f"gain='graded' (2^rel - 1 must fit a float64), got "
                         f"{relevance[bad[0]]} at candidate {int(bad[0])}")
    return relevance


def check_n_gold(n_gold: np.ndarray, n_found: np.ndarray) -> np.ndarray:
    short = n_gold < n_found
    if short.any():
        q = int(np.flatnonzero(short)[0])
        raise ValueError(f"n_gold must be >= the gold found among the candidates; query {q} "
                         f"has n_gold {int(n_gold[q])} but {int(n_found[q])} gold candidates "
                         f"({int(short.sum())} such queries)")
    return n_gold
