"""Dynamic-K evidence extraction: per-query K from cumulative candidate mass (contract §7).

Per query, the candidates (in ranking order) carry masses ``m = softmax(score / T)`` (default) or,
variant ``"probability"``, ``m = score / Σ score``. ``K_γ`` is the smallest K whose cumulative
mass is ``≥ γ``; the selected K is ``min(n, max(k_min, min(K_γ, k_max)))`` with
``k_max = min(hard_cap, floor(n × k_max_ratio))``. The gate-aware policy (default on) selects
nothing for ``NEG`` queries and uses ``γ_uncertain`` for ``UNCERTAIN`` ones.

Two stages, so that moving a slider is cheap:

* :class:`MassProfile` depends on the data only (scores, order, mass rule, temperature). It holds
  the cumulative mass of every candidate within its query, computed exactly per query: queries
  are bucketed by candidate count and each bucket is one 2-D ``cumsum`` along the rows, so every
  value is bit-identical to a per-query ``np.cumsum`` (a global cumsum minus per-query starts
  would not be). Each query's cumulative mass is divided by its own last cumulative value, so
  the last candidate's cumulative mass is exactly 1.0 and ``γ = 1`` is always reachable.
* :func:`select_k` turns the profile into K for a setting of γ, caps and gate states. Cumulative
  masses are non-decreasing within a query (sums of non-negative terms, divided by one positive
  number), so ``K_γ = 1 + #{candidates with cumulative mass < γ}``; and because K never exceeds
  ``hard_cap``, only the first ``hard_cap - 1`` positions of each query need comparing. The
  profile caches those positions as a (positions x queries) matrix, so a slider move is a few
  vector comparisons over the queries.

The literal per-query loops of the contract text, the references for the tests and the baselines
of the benchmark, are private: ``metrics_core.metrics._reference.naive_select_k`` and
``naive_evidence_per_query``.

Sources: "contract §N" is section N of ``docs/CONTRACT.md``; "seed 000" is
``docs/seeds/000-metric-specification.txt``; "seed 003" is
``docs/seeds/003-evidence-pipeline-contract.txt``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
import pandas as pd
from numpy.lib.stride_tricks import sliding_window_view

from metrics_core.choices import EVIDENCE_PROTOCOLS, MASS_RULES
from metrics_core.data import ordering
from metrics_core.data.dataset import Dataset, GatheredCandidates
from metrics_core.data.ordering import by_halves, stable_argsort
from metrics_core.registry import GATE_STATES

__all__ = [
    "EVIDENCE_PROTOCOLS",
    "MASS_RULES",
    "KStats",
    "KSummary",
    "MassProfile",
    "evidence_per_query",
    "hits_within",
    "k_max_per_query",
    "k_stats_by_group",
    "k_summary",
    "select_k",
]

# MASS_RULES and EVIDENCE_PROTOCOLS: the variant values (metrics_core.choices).

# Gate state codes (metrics_core.metrics.gate.GateState); repeated here to keep this module free of
# a dependency on the gate's result types.
_NEG, _UNCERTAIN, _POS = 0, 1, 2
_STATE_NAMES = GATE_STATES


# --------------------------------------------------------------------------- mass profile
@dataclass(frozen=True, eq=False)
class MassProfile:
    """Cumulative candidate mass within each query, in ranking order (contract §7).

    Depends on the data, the mass rule and the temperature only; build it once per data set
    with :meth:`from_dataset` and pass it to :func:`select_k` for every setting of γ and caps.

    Attributes
    ----------
    cum_mass : ndarray of float64, shape (n_candidates,)
        Cumulative mass of the candidates at positions 1..i of the same query, normalised by
        the query's own total (the last candidate of every query holds exactly 1.0).
    offsets : ndarray of int64, shape (n_queries + 1,)
        Group offsets, as in :class:`~metrics_core.data.dataset.Dataset`.
    mass : str
        ``"softmax"`` or ``"probability"``.
    temperature : float
        Softmax temperature ``T`` (1.0 for the probability rule, where it does not apply).
    """

    cum_mass: np.ndarray
    offsets: np.ndarray
    mass: str = "softmax"
    temperature: float = 1.0
    _heads: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def n_queries(self) -> int:
        return int(self.offsets.shape[0] - 1)

    @cached_property
    def n_cand(self) -> np.ndarray:
        """Number of candidates per query (int64)."""
        return np.diff(self.offsets)

    @cached_property
    def max_n(self) -> int:
        """Largest candidate count of a query (0 without queries)."""
        return int(self.n_cand.max()) if self.n_queries else 0

    @classmethod
    def from_dataset(cls, ds: Dataset, *, mass: str = "softmax",
                     temperature: float = 1.0) -> MassProfile:
        """Compute the cumulative mass of every candidate (contract §7).

        Parameters
        ----------
        ds : Dataset
            Queries and their ranked candidates.
        mass : {"softmax", "probability"}, default "softmax"
            ``"softmax"``: ``m = softmax(score / T)`` within the query, computed stably (the
            query's largest ``score / T`` is subtracted first). ``"probability"``: scores are
            probabilities and ``m = score / Σ score``.
        temperature : float, default 1.0
            Softmax temperature ``T > 0``.

        Raises
        ------
        ValueError
            If ``mass`` is unknown, ``temperature`` is not a finite positive number, a score is
            not finite, or (probability rule) a score is outside [0, 1] or a query's scores sum
            to 0.

        Examples
        --------
        Two candidates with scores 0 and 0 share the mass: cumulative masses 0.5, 1.0.

        >>> import pandas as pd
        >>> queries = pd.DataFrame({"post_id": ["p"], "criterion": ["A.1"],
        ...                         "has_evidence": [1], "p_has_evidence": [0.9]})
        >>> candidates = pd.DataFrame({"post_id": "p", "criterion": "A.1", "sent_uid": ["a", "b"],
        ...                            "score": [0.0, 0.0], "is_gold": [1, 0]})
        >>> MassProfile.from_dataset(Dataset.from_frames(queries, candidates)).cum_mass.tolist()
        [0.5, 1.0]
        """
        if mass not in MASS_RULES:
            raise ValueError(f"mass must be one of {MASS_RULES}, got {mass!r}")
        temperature = float(temperature)
        if not (math.isfinite(temperature) and temperature > 0):
            raise ValueError(f"temperature must be a finite number > 0, got {temperature}")
        score = np.asarray(ds.score, dtype=np.float64)
        bad = ~np.isfinite(score)
        if bad.any():
            raise ValueError(f"score must be finite for the {mass} mass rule (contract §7); "
                             f"{int(bad.sum())} candidate(s) are not, first at candidate "
                             f"{_describe_candidate(ds, int(np.flatnonzero(bad)[0]))}")
        if mass == "probability":
            bad = (score < 0) | (score > 1)
            if bad.any():
                raise ValueError(
                    "score must be in [0, 1] for the probability mass rule m = score / Σ score "
                    f"(contract §7); {int(bad.sum())} candidate(s) are not, first at candidate "
                    f"{_describe_candidate(ds, int(np.flatnonzero(bad)[0]))}")
        offsets = np.asarray(ds.offsets, dtype=np.int64)
        cum = _cumulative_mass(score, offsets, mass=mass, temperature=temperature,
                               descending=ds.ranked_by == "score")
        if mass == "probability":
            zero = np.flatnonzero(np.isnan(cum))
            if zero.size:
                q = int(np.searchsorted(offsets, zero[0], side="right") - 1)
                n_bad = len(np.unique(np.searchsorted(offsets, zero, side="right")))
                raise ValueError(
                    "the scores of a query sum to 0, so the probability mass rule "
                    f"m = score / Σ score is undefined (contract §7); {n_bad} query(ies), first "
                    f"post_id={ds.post_id[q]!r} criterion={ds.criterion[q]!r}")
            temperature = 1.0
        return cls(cum_mass=cum, offsets=offsets, mass=mass, temperature=temperature)

    def head(self, width: int) -> np.ndarray:
        """Cumulative masses at positions 1..``width`` as a (width, n_queries) matrix.

        Positions a query does not have hold ``+inf`` (never below any γ). Cached per width.
        """
        cached = self._heads.get(width)
        if cached is not None:
            return cached
        n_cand = self.n_cand
        out = np.empty((width, self.n_queries))
        if self.cum_mass.shape[0] == 0:
            out.fill(np.inf)
        else:
            # A few thousand queries at a time: each query's first positions are read together
            # (one or two cache lines), then written transposed; ~2x faster than one strided
            # gather over all queries per position.
            last = self.cum_mass.shape[0] - 1
            steps = np.arange(width, dtype=np.int64)
            starts = self.offsets[:-1]
            for a in range(0, self.n_queries, _HEAD_CHUNK):  # loop over chunks of queries
                b = min(a + _HEAD_CHUNK, self.n_queries)
                index = starts[a:b, None] + steps
                np.minimum(index, last, out=index)
                block = self.cum_mass.take(index)
                block[n_cand[a:b, None] <= steps] = np.inf
                out[:, a:b] = block.T
        self._heads[width] = out
        return out


#: Queries per step of :meth:`MassProfile.head` (a block of ~4,096 x hard_cap stays in cache).
_HEAD_CHUNK = 1 << 12


def _describe_candidate(ds: Dataset, i: int) -> str:
    q = int(np.searchsorted(ds.offsets, i, side="right") - 1)
    return f"post_id={ds.post_id[q]!r} criterion={ds.criterion[q]!r} sent_uid={ds.sent_uid[i]!r}"


def cumsum_rows(block: np.ndarray) -> np.ndarray:
    """``np.cumsum(block, axis=1, out=block)``, one column at a time: the same additions in
    the same order (bit-identical), but whole columns per step instead of numpy's per-row
    loop over a few columns, several times faster for many short rows."""
    for j in range(1, block.shape[1]):
        np.add(block[:, j], block[:, j - 1], out=block[:, j])
    return block


def _max_rows(block: np.ndarray) -> np.ndarray:
    """``block.max(axis=1)`` one column at a time (exact: a maximum does not round), whole
    columns per step instead of numpy's per-row loop over a few columns."""
    top = block[:, 0].copy()
    for j in range(1, block.shape[1]):
        np.maximum(top, block[:, j], out=top)
    return top


def _cumulative_mass(score: np.ndarray, offsets: np.ndarray, *, mass: str,
                     temperature: float, descending: bool = False) -> np.ndarray:
    """Exact per-query cumulative mass, one 2-D cumsum per distinct candidate count (on two
    threads from :data:`metrics_core.data.ordering.PARALLEL_SORT_ROWS` candidates on).

    Returns NaN for every candidate of a query whose total is 0 (probability rule only).
    ``descending``: each query's scores are in descending order (a Dataset ranked by score),
    so its largest is its first.
    """
    n_cand = np.diff(offsets)
    cum = np.empty(score.shape[0], dtype=np.float64)
    # Queries grouped by candidate count once (a stable sort), then sliced per count; a
    # query's candidates are one window of the flat arrays, so rows are read and written
    # through window views, without an index matrix.
    by_length = stable_argsort(n_cand)
    lengths, first = np.unique(n_cand[by_length], return_index=True)
    bounds = np.append(first, by_length.size)

    def rows_of(length: int, starts: np.ndarray) -> None:
        block = sliding_window_view(score, length)[starts]  # (queries, length), a copy
        if mass == "softmax":
            if temperature != 1.0:  # x / 1.0 == x: skip the pass
                block /= temperature
            block -= (block[:, 0].copy() if descending else _max_rows(block))[:, None]
            np.exp(block, out=block)
        cumsum_rows(block)
        total = block[:, -1:].copy()
        rows = sliding_window_view(cum, length, writeable=True)
        if mass == "softmax":  # the top candidate contributes exp(0) = 1: total >= 1
            block /= total
            rows[starts] = block
            return
        with np.errstate(invalid="ignore", divide="ignore"):
            rows[starts] = np.where(total > 0, block / np.where(total > 0, total, 1.0), np.nan)

    work = [(length, offsets[by_length[bounds[i]:bounds[i + 1]]])
            for i, length in enumerate(lengths.tolist()) if length]  # per distinct count
    by_halves(rows_of, work, parallel=score.shape[0] >= ordering.PARALLEL_SORT_ROWS)
    return cum


# --------------------------------------------------------------------------- K selection
def check_k_options(gamma, gamma_uncertain, k_min, hard_cap, k_max_ratio):
    for name, value in (("gamma", gamma), ("gamma_uncertain", gamma_uncertain)):
        if not (isinstance(value, int | float | np.floating | np.integer)
                and 0 < float(value) <= 1):
            raise ValueError(f"{name} must be a number in (0, 1], got {value!r}")
    for name, value, low in (("k_min", k_min, 0), ("hard_cap", hard_cap, 1)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < low:
            raise ValueError(f"{name} must be an integer >= {low}, got {value!r}")
    if not (isinstance(k_max_ratio, int | float | np.floating | np.integer)
            and 0 < float(k_max_ratio) <= 1):
        raise ValueError(f"k_max_ratio must be a number in (0, 1], got {k_max_ratio!r}")


def _check_states(states, n_queries: int) -> np.ndarray:
    states = np.asarray(states)
    if states.shape != (n_queries,):
        raise ValueError(f"states must have one entry per query ({n_queries}), "
                         f"got shape {states.shape}")
    if states.size and (not np.issubdtype(states.dtype, np.integer)
                        or states.min() < _NEG or states.max() > _POS):
        raise ValueError("states must hold gate states 0 (NEG), 1 (UNCERTAIN), 2 (POS)")
    return states


def k_max_per_query(n_cand: np.ndarray, *, hard_cap: int = 10,
                    k_max_ratio: float = 0.5) -> np.ndarray:
    """``k_max = min(hard_cap, floor(n × k_max_ratio))`` per query (contract §7)."""
    n_cand = np.asarray(n_cand, dtype=np.int64)
    if n_cand.size == 0:
        return np.zeros(0, dtype=np.int64)
    # One value per distinct count: a table over 0..max(n), gathered per query.
    n_values = np.arange(int(n_cand.max()) + 1, dtype=np.int64)
    table = np.minimum(hard_cap, np.floor(n_values * float(k_max_ratio)).astype(np.int64))
    return table[n_cand]


def select_k(profile: MassProfile, states=None, *, gamma: float = 0.9,
             gamma_uncertain: float = 0.95, k_min: int = 2, hard_cap: int = 10,
             k_max_ratio: float = 0.5, gate_aware: bool = True) -> np.ndarray:
    """Number of candidates extracted per query (contract §7).

    ``K_γ`` = smallest K whose cumulative mass is ``≥ γ``;
    ``k_max = min(hard_cap, floor(n × k_max_ratio))``;
    ``K = min(n, max(k_min, min(K_γ, k_max)))``. A query without candidates gets ``K = 0``.
    Gate-aware (default, needs ``states``): ``NEG`` -> 0, ``UNCERTAIN`` -> ``γ_uncertain``,
    ``POS`` -> ``γ``. Without ``states`` (or with ``gate_aware=False``) every query uses ``γ``.

    Parameters
    ----------
    profile : MassProfile
        Cumulative masses from :meth:`MassProfile.from_dataset`.
    states : array-like of int, shape (n_queries,), optional
        Gate states (:class:`metrics_core.metrics.gate.GateState` codes 0 / 1 / 2).
    gamma, gamma_uncertain : float in (0, 1]
        Mass targets for ``POS`` (and every query when not gate-aware) and ``UNCERTAIN``.
    k_min : int >= 0, hard_cap : int >= 1, k_max_ratio : float in (0, 1]
        Caps, defaults 2, 10, 0.5.
    gate_aware : bool, default True

    Returns
    -------
    ndarray of int64, shape (n_queries,)
        K per query, in ``[0, n]``.

    Examples
    --------
    Scores (2, 1, 0, -1, -5, -5) have softmax cumulative masses 0.6432, 0.8798, 0.9668, 0.9988,
    0.9994, 1.0; γ = 0.9 gives K_γ = 3, k_max = min(10, floor(6 × 0.5)) = 3, so K = 3.

    >>> import pandas as pd
    >>> queries = pd.DataFrame({"post_id": ["p"], "criterion": ["A.1"],
    ...                         "has_evidence": [1], "p_has_evidence": [0.9]})
    >>> candidates = pd.DataFrame({"post_id": "p", "criterion": "A.1", "sent_uid": list("abcdef"),
    ...                            "score": [2, 1, 0, -1, -5, -5], "is_gold": [1, 0, 0, 0, 0, 0]})
    >>> profile = MassProfile.from_dataset(Dataset.from_frames(queries, candidates))
    >>> profile.cum_mass.round(4).tolist()
    [0.6432, 0.8798, 0.9668, 0.9988, 0.9994, 1.0]
    >>> select_k(profile, gamma=0.9).tolist(), select_k(profile, gamma=0.5).tolist()
    ([3], [2])
    """
    check_k_options(gamma, gamma_uncertain, k_min, hard_cap, k_max_ratio)
    n_queries = profile.n_queries
    n_cand = profile.n_cand
    gate = states is not None and gate_aware
    if states is not None:
        states = _check_states(states, n_queries)
    if gate:
        gamma_q = np.where(states == _UNCERTAIN, float(gamma_uncertain), float(gamma))
    else:
        gamma_q = np.full(n_queries, float(gamma))
    k_max = k_max_per_query(n_cand, hard_cap=hard_cap, k_max_ratio=k_max_ratio)
    # min(K_γ, k_max) needs K_γ only up to hard_cap: count below-γ positions among the first
    # hard_cap - 1 (the masses are non-decreasing within a query, so the count is a prefix).
    width = max(min(hard_cap - 1, profile.max_n - 1), 0)
    k = _count_below(profile, gamma_q, width)
    k += 1  # K_γ, capped at width + 1 >= k_max
    np.minimum(k, k_max, out=k)
    np.maximum(k, k_min, out=k)
    np.minimum(k, n_cand, out=k)
    if gate:
        k[states == _NEG] = 0
    return k


def _count_below(profile: MassProfile, gamma_q: np.ndarray, width: int) -> np.ndarray:
    """Per query, ``min(width, #{candidates with cumulative mass < γ_q})`` (int64)."""
    n_queries = profile.n_queries
    if width == 0 or n_queries == 0:
        return np.zeros(n_queries, dtype=np.int64)
    if width * n_queries <= profile.cum_mass.shape[0]:
        head = profile.head(width)
        small = np.int8 if width < 127 else np.int64
        count = np.zeros(n_queries, dtype=small)
        for row in head:  # loop over positions (< hard_cap)
            np.add(count, row < gamma_q, out=count, casting="unsafe")
        return count.astype(np.int64)
    return np.minimum(_count_below_flat(profile, gamma_q), width)


def _count_below_flat(profile: MassProfile, gamma_q: np.ndarray) -> np.ndarray:
    """Per query ``#{candidates with cumulative mass < γ_q}``: one comparison + segment count."""
    n_cand = profile.n_cand
    below = profile.cum_mass < np.repeat(gamma_q, n_cand)
    total = np.concatenate(([0], np.cumsum(below, dtype=np.int64)))
    return total[profile.offsets[1:]] - total[profile.offsets[:-1]]


# --------------------------------------------------------------------------- evidence
def _check_k(ds: Dataset, k) -> np.ndarray:
    k = np.asarray(k)
    if k.shape != (ds.n_queries,):
        raise ValueError(f"k must have one entry per query ({ds.n_queries}), got shape {k.shape}")
    if (k.size and not np.issubdtype(k.dtype, np.integer)
            and (not np.all(np.isfinite(k)) or np.any(k != np.round(k)))):
        raise ValueError("k must hold whole numbers")
    k = k.astype(np.int64)
    bad = (k < 0) | (k > ds.n_cand)
    if bad.any():
        raise ValueError(f"k must be in [0, n_candidates] per query; {int(bad.sum())} "
                         f"query(ies) are not, first at query {int(np.flatnonzero(bad)[0])}")
    return k


def evidence_per_query(ds: Dataset, k, *,
                       protocol: str = "positives_only") -> tuple[np.ndarray, np.ndarray]:
    """Evidence recall and precision of the top-K selection, per query (contract §7).

    ``hits`` = gold among the first K candidates; ``recall = hits / |Gold|`` (``|Gold|`` is
    ``ds.n_gold``, which counts gold the candidate list missed when ``n_gold`` is given);
    ``precision = hits / K``.

    * ``"positives_only"`` (seed 003, default): values for ``has_evidence = 1`` queries, NaN
      elsewhere; precision is 0 when nothing is selected; recall of a positive query without
      gold is 0/0 and NaN (the data audit reports such queries).
    * ``"all_queries"`` (seed 000): every query; empty gold gives recall 1.0 if nothing is
      selected else 0.0; nothing selected gives precision 1.0 if the gold is empty else 0.0.

    Returns
    -------
    recall, precision : ndarray of float64, shape (n_queries,)
        Reduce with ``np.nanmean`` (or the bootstrap) one level up.
    """
    if protocol not in EVIDENCE_PROTOCOLS:
        raise ValueError(f"protocol must be one of {EVIDENCE_PROTOCOLS}, got {protocol!r}")
    k = _check_k(ds, k)
    n_gold = np.asarray(ds.n_gold, dtype=np.int64)
    selected = k > 0
    hits = hits_within(ds, k)
    has_gold = n_gold > 0
    with np.errstate(invalid="ignore", divide="ignore"):
        recall = np.where(has_gold, hits / np.where(has_gold, n_gold, 1), np.nan)
        precision = np.where(selected, hits / np.where(selected, k, 1), 0.0)
    if protocol == "positives_only":
        recall[~ds.positives] = np.nan
        precision[~ds.positives] = np.nan
    else:
        recall[~has_gold] = np.where(selected[~has_gold], 0.0, 1.0)
        precision[~selected] = np.where(has_gold[~selected], 0.0, 1.0)
    return recall, precision


def hits_within(ds: Dataset, k: np.ndarray) -> np.ndarray:
    """Gold candidates among the first ``k[q]`` of every query (int64, exact).

    Reads ``ds.cum_gold`` when the Dataset has computed it already; otherwise counts the gold
    candidates by position (``ds.gold_located``, found once per data set), which touches the
    gold rows only instead of building the per-candidate cumulative array. A data set whose
    candidates live elsewhere (a :class:`~metrics_core.data.dataset.GatheredCandidates`, the
    Dask engine's) answers from the counts gathered where they are.
    """
    if isinstance(ds, GatheredCandidates):
        return ds.gathered_hits(k)
    if "cum_gold" in vars(ds):  # cached_property already computed: one gather per query
        idx = ds.offsets[:-1] + np.maximum(k, 1) - 1
        return np.where(k > 0, ds.cum_gold[np.minimum(idx, max(ds.n_candidates - 1, 0))]
                        if ds.n_candidates else 0, 0).astype(np.int64)
    query, position = ds.gold_located
    within = position <= k[query]
    return np.bincount(query[within], minlength=ds.n_queries).astype(np.int64)


# --------------------------------------------------------------------------- K summary
def _k_codes(k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the K values counted, ascending; each query's index into them): the range from the
    smallest K to the largest when it is narrow (as selected K are), else the distinct K."""
    if k.size == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.intp)
    low, high = int(k.min()), int(k.max())
    if high - low < max(2 * k.size, 1024):
        return np.arange(low, high + 1, dtype=np.int64), (k - low).astype(np.intp)
    values, codes = np.unique(k, return_inverse=True)
    return values, codes.astype(np.intp)


@dataclass(frozen=True)
class KStats:
    """Distribution of K over a group of queries (contract §7, seed 003 §4.1).

    ``p90`` uses numpy's linear percentile; ``workload`` is the number of sentences extracted
    and ``workload_per_1000`` = workload / n × 1000. Statistics of an empty group are NaN.
    """

    n: int
    mean: float
    median: float
    p90: float
    min: float
    max: float
    workload: int
    workload_per_1000: float

    @classmethod
    def of(cls, k: np.ndarray) -> KStats:
        values, codes = _k_codes(np.asarray(k, dtype=np.int64))
        return cls.of_counts(np.bincount(codes, minlength=values.size), values)

    @classmethod
    def of_counts(cls, counts: np.ndarray, values: np.ndarray) -> KStats:
        """The statistics of K from ``counts[i]``, how many queries have K = ``values[i]``
        (ascending): the values numpy's ``mean``, ``median`` and linear ``percentile`` give on
        those K (the same float operations on the same order statistics, no sort; checked in
        tests/test_dynamic_k.py), so a breakdown counts K once per grouping."""
        counts = np.asarray(counts, dtype=np.int64)
        n = int(counts.sum())
        if n == 0:
            nan = float("nan")
            return cls(0, nan, nan, nan, nan, nan, 0, nan)
        present = np.flatnonzero(counts)
        ends = np.cumsum(counts)
        total = int(np.dot(counts, values))

        def value(i: int) -> int:
            """The (i + 1)-th smallest K."""
            return int(values[np.searchsorted(ends, i, side="right")])

        half = n // 2
        median = (float(value(half)) if n % 2 else
                  (float(value(half - 1)) + float(value(half))) / 2.0)
        # numpy's linear percentile: virtual index (n − 1) q, then a + (b − a) γ, or
        # b − (b − a)(1 − γ) from γ = 0.5 on
        virtual = (n - 1) * (90 / 100)
        before = math.floor(virtual)
        if virtual >= n - 1:
            p90 = float(value(n - 1))
        else:
            gamma = virtual - before
            a, b = value(before), value(before + 1)
            diff = float(b - a)
            p90 = b - diff * (1 - gamma) if gamma >= 0.5 else a + diff * gamma
        return cls(n=n, mean=total / n, median=median, p90=float(p90),
                   min=float(values[present[0]]), max=float(values[present[-1]]), workload=total,
                   workload_per_1000=total / n * 1000.0)

    def as_dict(self) -> dict:
        return {"n": self.n, "mean_k": self.mean, "median_k": self.median, "p90_k": self.p90,
                "min_k": self.min, "max_k": self.max, "workload": self.workload,
                "workload_per_1000": self.workload_per_1000}


@dataclass(frozen=True)
class KSummary:
    """K statistics over all queries, by gate state and by ``has_evidence`` (contract §7).

    ``by_state`` has keys ``"NEG"``, ``"UNCERTAIN"``, ``"POS"`` (empty when no states were
    given); ``by_has_evidence`` has keys 0 and 1 (empty when no labels were given). Within a
    group, ``workload_per_1000`` is per 1,000 queries *of that group*.
    """

    overall: KStats
    by_state: dict
    by_has_evidence: dict

    # The overall row's statistics, for callers that want one number.
    @property
    def n(self) -> int:
        return self.overall.n

    @property
    def mean(self) -> float:
        return self.overall.mean

    @property
    def median(self) -> float:
        return self.overall.median

    @property
    def p90(self) -> float:
        return self.overall.p90

    @property
    def min(self) -> float:
        return self.overall.min

    @property
    def max(self) -> float:
        return self.overall.max

    @property
    def workload(self) -> int:
        return self.overall.workload

    @property
    def total(self) -> int:
        """Alias of :attr:`workload`: sentences extracted in total."""
        return self.overall.workload

    @property
    def workload_per_1000(self) -> float:
        return self.overall.workload_per_1000

    def table(self) -> pd.DataFrame:
        """One row per group (``overall``, ``state=…``, ``has_evidence=…``)."""
        rows = [{"group": "overall", **self.overall.as_dict()}]
        rows += [{"group": f"state={name}", **s.as_dict()} for name, s in self.by_state.items()]
        rows += [{"group": f"has_evidence={v}", **s.as_dict()}
                 for v, s in self.by_has_evidence.items()]
        return pd.DataFrame(rows)

    def as_dict(self) -> dict:
        return {"overall": self.overall.as_dict(),
                "by_state": {name: s.as_dict() for name, s in self.by_state.items()},
                "by_has_evidence": {str(v): s.as_dict() for v, s in self.by_has_evidence.items()}}


def k_stats_by_group(k, codes, n_groups: int) -> list[KStats]:
    """:class:`KStats` of the K of each group (``codes``: each query's group, 0 ..
    ``n_groups`` − 1), K counted once for every group (no sort, no gather per group); an
    empty group's statistics are NaN.

    >>> [(s.n, s.median, s.p90) for s in k_stats_by_group([0, 2, 3, 5], [0, 1, 1, 0], 2)]
    [(2, 2.5, 4.5), (2, 2.5, 2.9)]
    """
    values, shifted = _k_codes(np.asarray(k, dtype=np.int64))
    key = np.asarray(codes).astype(np.intp) * values.size
    key += shifted
    rows = np.bincount(key, minlength=n_groups * values.size).reshape(n_groups, values.size)
    return [KStats.of_counts(row, values) for row in rows]


def k_summary(k, *, states=None, y=None) -> KSummary:
    """Mean, median, P90, range and workload of K, overall and broken down (contract §7).

    Parameters
    ----------
    k : array-like of int, shape (n_queries,)
        From :func:`select_k`.
    states : array-like of int, optional
        Gate states (0 NEG, 1 UNCERTAIN, 2 POS), for the by-state rows.
    y : array-like of 0/1, optional
        ``has_evidence``, for the by-label rows.

    Examples
    --------
    K = (0, 2, 3, 5): mean 2.5, median 2.5, P90 = 3 + 0.7 × 2 = 4.4, workload 10, 2,500 per 1,000.

    >>> o = k_summary([0, 2, 3, 5]).overall
    >>> o.mean, o.median, round(o.p90, 12), o.workload, o.workload_per_1000
    (2.5, 2.5, 4.4, 10, 2500.0)
    """
    k = np.asarray(k)
    if k.ndim != 1:
        raise ValueError(f"k must be one-dimensional, got shape {k.shape}")
    # each group's K counted in one pass per grouping (no sort, no gather)
    values, shifted = _k_codes(k.astype(np.int64))
    width = values.size

    def counted(codes, n_codes: int) -> np.ndarray:
        key = codes.astype(np.intp) * width
        key += shifted
        return np.bincount(key, minlength=n_codes * width).reshape(n_codes, width)

    by_state = {}
    if states is not None:
        states = _check_states(states, k.shape[0])
        rows = counted(states, len(_STATE_NAMES))
        by_state = {name: KStats.of_counts(rows[code], values)
                    for code, name in enumerate(_STATE_NAMES)}
    by_label = {}
    if y is not None:
        y = np.asarray(y)
        if y.shape != k.shape:
            raise ValueError(f"y must have one entry per query ({k.shape[0]}), got {y.shape}")
        if y.size and not np.isin(y, (0, 1)).all():
            raise ValueError("y must be 0/1 (has_evidence)")
        rows = counted(y, 2)
        by_label = {v: KStats.of_counts(rows[v], values) for v in (0, 1)}
    overall = (rows.sum(axis=0) if y is not None or states is not None
               else np.bincount(shifted, minlength=width))
    return KSummary(overall=KStats.of_counts(overall, values), by_state=by_state,
                    by_has_evidence=by_label)
