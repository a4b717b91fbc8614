"""Each cohort's average precision and TPR at the FPR targets per resample of posts, and the
rest of the data's (contract §9): cumulated weights of positives and negatives at the tie runs
of p, the cohorts' from one sparse product with the posts' weights per batch of resamples. The
rest's cumulations are the whole data's minus the cohort's, at every tie run holding a
positive: each block's queries' weights gathered and cumulated, read at the runs.
:mod:`metrics_core.evaluation.cohort_resamples` reads them in its pass over the resamples.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from metrics_core.metrics.curve_replicates import ScoreLayout

__all__ = ["PrecisionRuns"]


class PrecisionRuns:
    """Each cohort's average precision and TPR at the FPR targets per resample, for several
    columns at once.

    Per column, one row per (cohort, tie run of p holding a positive of the cohort), the
    rows of a cohort in the order of p descending: the weight of the cohort's positives in
    the run, and of its negatives from the run up to the next such run above it. One sparse
    product with the posts' weights gives both for every cohort of every column; cumulated
    down each cohort's rows they are the cohort's positive and negative weight at or above
    the run (``P_ge``, ``N_ge``), and ``AP = Σ a · P_ge / (P_ge + N_ge) / P`` (``a`` the
    run's positive weight; scikit-learn's step-wise average precision). The ROC point of a row
    is ``(N_ge / N, P_ge / P)``: the TPR at an FPR target T is ``P_ge / P`` at the cohort's
    last row with ``N_ge / N <= T`` (0 without one: the ROC points above it hold negatives
    only), the TPR at the largest ROC index with FPR ≤ T (contract §4). Whole numbers until
    the division: exact cumulations, in any order."""

    #: Resamples per step of :meth:`values` (its arrays stay in the cache).
    CHUNK = 50
    #: The same for the rest's cumulations (a value per cohort and run: more values).
    REST_CHUNK = 25

    def __init__(self, layout: ScoreLayout, codes_in_order: Sequence[np.ndarray],
                 sizes: Sequence[int], targets: Sequence[float] = ()):
        from scipy import sparse

        self.targets = np.asarray(targets, dtype=np.float64)

        ys = layout.ys
        n_posts = int(layout.columns.max()) + 1 if layout.n else 0
        run = np.searchsorted(layout.starts, np.arange(layout.n), side="right") - 1
        lo = layout.edges[run] if layout.n else np.zeros(0, np.int64)
        pos_rows, neg_rows = np.flatnonzero(ys), np.flatnonzero(~ys)
        n1 = layout.n + 1
        self.sizes = list(sizes)
        rows_p, cols_p, rows_n, cols_n = [], [], [], []
        self.blocks = []  # per column and cohort: (first row, end row), empty without a run
        total = 0
        for c, g in zip(codes_in_order, self.sizes, strict=True):
            key_p = c[pos_rows] * n1 + lo[pos_rows]
            runs = np.unique(key_p)  # (cohort, run) ascending: by cohort, then p ascending
            run_codes = runs // n1
            first = np.searchsorted(run_codes, np.arange(g))
            last = np.searchsorted(run_codes, np.arange(g), side="right")
            # the row of an ascending index: the cohort's rows in the order of p descending
            flip = total + first[run_codes] + last[run_codes] - 1 - np.arange(runs.size)
            rows_p.append(flip[np.searchsorted(runs, key_p)])
            cols_p.append(layout.columns[pos_rows])
            # a negative goes to its cohort's highest run at or below its score (none: below
            # every positive of the cohort, never read)
            neg_codes = c[neg_rows]
            at = np.searchsorted(runs, neg_codes * n1 + lo[neg_rows], side="right") - 1
            keep = at >= 0
            keep[keep] = run_codes[at[keep]] == neg_codes[keep]
            rows_n.append(flip[at[keep]])
            cols_n.append(layout.columns[neg_rows[keep]])
            self.blocks.append(np.column_stack([total + first, total + last]))
            total += runs.size
        self.n_rows = total
        rows = np.concatenate([*rows_p, *(r + total for r in rows_n)]
                              or [np.zeros(0, np.int64)])
        cols = np.concatenate([*cols_p, *cols_n] or [np.zeros(0, np.int64)])
        self.segments = sparse.csr_matrix(
            (np.ones(rows.size, dtype=np.int32), (rows, cols)), shape=(2 * total, n_posts))
        self.segments.sum_duplicates()
        starts = np.concatenate([b[:, 0][b[:, 1] > b[:, 0]] for b in self.blocks]
                                or [np.zeros(0, np.int64)])
        self.starts = starts  # the first and end rows of each cohort with a run
        self.ends = np.concatenate([b[:, 1][b[:, 1] > b[:, 0]] for b in self.blocks]
                                   or [np.zeros(0, np.int64)])
        offsets = np.r_[0, np.cumsum(self.sizes)[:-1]].astype(np.int64)
        self.present = np.concatenate(  # the cohorts with a run, in the order of the rows
            [np.flatnonzero(blk[:, 1] > blk[:, 0]) + off
             for blk, off in zip(self.blocks, offsets, strict=True)]
            or [np.zeros(0, np.int64)])
        self._rest_layout(layout, codes_in_order, lo)

    def _rest_layout(self, layout: ScoreLayout, codes_in_order, lo: np.ndarray) -> None:
        """The rest's cumulations, for the columns with three cohorts or more (with two, a
        cohort's rest is the other one; with one, it has none): per cohort of those columns,
        then for the whole data, its positive queries at or above the lowest tie run of p
        holding a positive of the whole data, score descending, then (a second set of blocks)
        its negatives there. A resample's weights of a block's queries, cumulated, read at
        each such run (score descending) are the block's weight at or above the run; the
        rest's are the whole data's minus the cohort's."""
        ys = layout.ys
        runs = layout.positive_lo[::-1]  # the runs holding a positive, p ascending
        r = int(runs.size)
        # each query's run: a positive's own; a negative's the highest at or below its score
        # (none: below every positive, never read)
        at = np.searchsorted(runs, lo, side="right") - 1
        keep = at >= 0
        row = (r - 1 - at)[keep]  # score descending
        y_kept, columns = ys[keep], layout.columns[keep]
        self.rest_columns = [k for k, g in enumerate(self.sizes) if g > 2]
        offsets = np.r_[0, np.cumsum(self.sizes)].astype(np.int64)
        # the cohorts' places among all columns' cohorts (p_j, n_j), in the rows' order
        self.rest_cohorts = np.concatenate(
            [np.arange(offsets[k], offsets[k + 1]) for k in self.rest_columns]
            or [np.zeros(0, np.int64)])
        self.rest_runs = r
        members = [np.asarray(codes_in_order[k], dtype=np.int64)[keep] == c
                   for k in self.rest_columns for c in range(self.sizes[k])]
        if self.rest_columns:  # the whole data
            members.append(np.ones(row.size, dtype=bool))
        # per block: its queries' posts (score descending), and where each run reads the
        # block's cumulation in one buffer (each block after a zero: none at or above)
        self.rest_posts, reads, place = [], [], 0
        for label in (True, False):
            for mine in members:
                chosen = mine & (y_kept == label)
                order = np.argsort(row[chosen], kind="stable")
                self.rest_posts.append(columns[chosen][order])
                reads.append(place + np.searchsorted(row[chosen][order], np.arange(r),
                                                     side="right"))
                place += int(chosen.sum()) + 1
        self.rest_reads = np.concatenate(reads or [np.zeros(0, np.int64)])
        self.rest_width = place

    def _rest_values(self, by_post: np.ndarray, p_j: np.ndarray, n_j: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray]:
        """``(ap, tpr)`` of the rest of each cohort of :attr:`rest_cohorts`: ``(b, G)`` and
        ``(b, G, targets)``, NaN where the rest has one class. ``p_j`` / ``n_j`` as in
        :meth:`values`."""
        b = by_post.shape[1]
        g_n = int(self.rest_cohorts.size)
        n_t = self.targets.size
        ap = np.full((b, g_n), np.nan)
        tpr = np.full((b, g_n, n_t), np.nan)
        r = self.rest_runs
        if not g_n or not r:
            return ap, tpr
        # the rest's totals: the column's cohorts' sums minus the cohort's
        p_all = p_j[:, :self.sizes[0]].sum(axis=1) if self.sizes else np.zeros(b)
        n_all = n_j[:, :self.sizes[0]].sum(axis=1) if self.sizes else np.zeros(b)
        p_rest = p_all[:, None] - p_j[:, self.rest_cohorts]
        n_rest = n_all[:, None] - n_j[:, self.rest_cohorts]
        within = _fpr_counts(n_rest, self.targets) if n_t else None
        weights = np.ascontiguousarray(by_post.T)  # (b, posts): a resample's row contiguous
        cum = np.zeros((min(b, self.REST_CHUNK), self.rest_width), dtype=by_post.dtype)
        for c0 in range(0, b, self.REST_CHUNK):
            w = weights[c0:c0 + self.REST_CHUNK]
            k = w.shape[0]
            at = 0  # each block's cumulation after its zero (whole numbers: exact)
            for posts in self.rest_posts:
                np.cumsum(np.take(w, posts, axis=1), axis=1,
                          out=cum[:k, at + 1:at + 1 + posts.size])
                at += posts.size + 1
            read = np.take(cum[:k], self.rest_reads, axis=1).reshape(k, 2, g_n + 1, r)
            # the rest's weights at or above each run: the whole data's minus the cohort's
            # (whole numbers, in the weights' integer type until the division)
            ge = np.subtract(read[:, :, -1:], read[:, :, :-1])
            p_ge, n_ge = ge[:, 0], ge[:, 1]
            if n_t:
                first = ((np.arange(k, dtype=np.int64)[:, None] * 2 * g_n + np.arange(g_n))
                         * r)[..., None]  # each (resample, cohort)'s positives in ge
                tpr[c0:c0 + k] = _last_within(ge.reshape(-1), first, first + g_n * r, r,
                                              within[c0:c0 + k])
            total = np.add(n_ge, p_ge)  # 0 only where the rest's run weight is 0
            np.maximum(total, 1, out=total)
            a = np.empty_like(p_ge)  # the rest's positive weight in the run
            a[..., 0] = p_ge[..., 0]
            np.subtract(p_ge[..., 1:], p_ge[..., :-1], out=a[..., 1:])
            terms = np.multiply(a, p_ge, dtype=np.float64)
            terms /= total
            ap[c0:c0 + k] = terms.sum(axis=2)
        with np.errstate(invalid="ignore", divide="ignore"):
            ap /= p_rest
            tpr /= p_rest[:, :, None]
        two = (p_rest > 0) & (n_rest > 0)
        return np.where(two, ap, np.nan), np.where(two[:, :, None], tpr, np.nan)

    def values(self, by_post: np.ndarray, p_j: np.ndarray, n_j: np.ndarray) -> list:
        """Per column: ``(ap, tpr, rest_ap, rest_tpr)``, ``ap`` ``(b, g)`` average precision
        and ``tpr`` ``(b, g, targets)`` the TPR at each FPR target (NaN with one class), and
        the same of each cohort's rest of the data; ``by_post`` the
        posts' weights ``(n_posts, b)`` (integers), ``p_j`` / ``n_j`` ``(b, Σ g)`` each
        cohort's positive / negative weight."""
        b = by_post.shape[1]
        sums = np.zeros((self.starts.size, b))
        n_t = self.targets.size
        caught = np.zeros((self.starts.size, b, n_t))
        n_present = n_j[:, self.present]  # (b, cohorts with a run)
        if self.n_rows:
            segments = self.segments if by_post.dtype == self.segments.dtype \
                else self.segments.astype(by_post.dtype)
            n = self.n_rows
            for c0 in range(0, b, self.CHUNK):  # a few resamples at a time: in the cache
                # per resample (row): the runs' positive weights, then their negative ones;
                # cumulated along the rows (contiguous: several times faster than down)
                both = np.ascontiguousarray((segments @ by_post[:, c0:c0 + self.CHUNK]).T)
                cum = np.empty_like(both)
                for s, e in zip(self.starts, self.ends, strict=True):
                    np.cumsum(both[:, s:e], axis=1, out=cum[:, s:e])
                    np.cumsum(both[:, n + s:n + e], axis=1, out=cum[:, n + s:n + e])
                p_ge = cum[:, :n].astype(np.float64)
                if n_t:
                    k = p_ge.shape[0]
                    first = (np.arange(k, dtype=np.int64)[:, None] * (2 * n)
                             + self.starts)[..., None]  # (k, cohorts, 1) in cum's values
                    caught[:, c0:c0 + k] = _last_within(
                        cum.reshape(-1), first, first + n, (self.ends - self.starts)[:, None],
                        _fpr_counts(n_present[c0:c0 + k], self.targets)).transpose(1, 0, 2)
                total = np.add(cum[:, n:], p_ge)  # P_ge + N_ge: 0 only where a is 0
                np.maximum(total, 1.0, out=total)
                terms = np.multiply(both[:, :n], p_ge)
                terms /= total
                k = terms.shape[0]
                with np.errstate(invalid="ignore", divide="ignore"):  # P = 0: NaN
                    for i, (s, e) in enumerate(zip(self.starts, self.ends, strict=True)):
                        sums[i, c0:c0 + k] = terms[:, s:e].sum(axis=1) / p_ge[:, e - 1]
        ap = np.full((sum(self.sizes), b), np.nan)
        ap[self.present] = sums
        tpr = np.full((sum(self.sizes), b, n_t), np.nan)
        with np.errstate(invalid="ignore", divide="ignore"):
            tpr[self.present] = caught / p_j.T[self.present][:, :, None]
            two = (p_j.T > 0) & (n_j.T > 0)
        ap = np.where(two, ap, np.nan)
        tpr = np.where(two[:, :, None], tpr, np.nan)
        ap, tpr = ap.T, np.moveaxis(tpr, 0, 1)  # (b, Σ g), (b, Σ g, targets)
        rest_ap, rest_tpr = self._rest_values(by_post, p_j, n_j)
        out, start, at = [], 0, 0
        for g in self.sizes:
            mine = slice(start, start + g)
            if g > 2:  # the rest's own cumulations
                theirs = (rest_ap[:, at:at + g], rest_tpr[:, at:at + g])
                at += g
            elif g == 2:  # the rest of one cohort is the other
                theirs = (ap[:, mine][:, ::-1], tpr[:, mine][:, ::-1])
            else:
                theirs = (np.full_like(ap[:, mine], np.nan), np.full_like(tpr[:, mine], np.nan))
            out.append((ap[:, mine], tpr[:, mine], *theirs))
            start += g
        return out


def _fpr_counts(n_total: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """``(..., T)``: the largest whole ``m`` with ``m / n_total <= T`` for each target (the
    same floating-point division as the ROC curve's FPR), -1 where ``n_total`` is 0."""
    total = n_total[..., None]
    with np.errstate(invalid="ignore", divide="ignore"):
        m = np.floor(targets * total)
        for _ in range(2):  # the division's rounding: m / N <= T, (m + 1) / N > T
            m = np.where((m + 1) / total <= targets, m + 1, m)
            m = np.where(m / total > targets, m - 1, m)
    return np.where(total > 0, m, -1.0)


def _last_within(flat: np.ndarray, positives: np.ndarray, negatives: np.ndarray, size,
                 within: np.ndarray) -> np.ndarray:
    """``(b, s, T)``: the positives' weight at or above the last run whose negatives' weight
    (whole, non-decreasing along a set's runs) is at most ``within`` (``(b, s, T)``, from
    :func:`_fpr_counts`), 0 without one. A set's runs' weights are ``size`` consecutive
    values of ``flat`` from ``positives`` (``(b, s, 1)``), its negatives' from
    ``negatives``. One bisection of every (resample, set, target) at once: ``log2 size``
    steps over ``b s T`` values rather than passes over the runs."""
    size = np.asarray(size, dtype=np.int64)
    lo = np.zeros(within.shape, dtype=np.int64)  # the runs within: lo at the end
    hi = np.broadcast_to(size, within.shape).astype(np.int64)
    for _ in range(int(size.max(initial=0)).bit_length()):
        mid = (lo + hi) >> 1
        inside = (lo < hi) & (flat[negatives + np.minimum(mid, np.maximum(hi - 1, 0))]
                              <= within)
        lo = np.where(inside, mid + 1, lo)
        hi = np.where(inside, hi, np.minimum(hi, mid))
    got = flat[positives + np.maximum(lo - 1, 0)]
    return np.where(lo > 0, got, 0).astype(np.float64)
