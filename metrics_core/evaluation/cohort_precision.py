"""Each cohort's average precision and TPR at the FPR targets per resample of posts, and the
rest of the data's (contract §9): cumulated weights of positives and negatives at the tie runs
of p, from one sparse product with the posts' weights per batch of resamples. The rest's
cumulations are the whole data's minus the cohort's, at every tie run holding a positive.
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
    #: The same for the rest's cumulations (a row per cohort and run: more rows).
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
        self._rest_layout(layout, codes_in_order, lo, n_posts)

    def _rest_layout(self, layout: ScoreLayout, codes_in_order, lo: np.ndarray,
                     n_posts: int) -> None:
        """The rows of the rest's cumulations, for the columns with three cohorts or more
        (with two, a cohort's rest is the other one; with one, it has none): per cohort of
        those columns, then for the whole data, one row per tie run of p holding a positive
        of the whole data (score descending), the weight of the positives in the run, then
        (a second block) of the negatives from the run up to the next such run above it. The
        rest's weights at or above a run are the whole data's minus the cohort's."""
        from scipy import sparse

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
        blocks = int(self.rest_cohorts.size) + 1  # and the whole data's last
        self.rest_runs = r
        rows, cols = [], []
        start = 0
        for k in self.rest_columns:
            codes = np.asarray(codes_in_order[k], dtype=np.int64)[keep]
            rows.append((start + codes) * r + row + np.where(y_kept, 0, blocks * r))
            cols.append(columns)
            start += self.sizes[k]
        if self.rest_columns:  # the whole data
            rows.append((blocks - 1) * r + row + np.where(y_kept, 0, blocks * r))
            cols.append(columns)
        rows = np.concatenate(rows or [np.zeros(0, np.int64)])
        self.rest_segments = sparse.csr_matrix(
            (np.ones(rows.size, dtype=np.int32),
             (rows, np.concatenate(cols or [np.zeros(0, np.int64)]))),
            shape=(2 * blocks * r if self.rest_columns else 0, n_posts))
        self.rest_segments.sum_duplicates()

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
        segments = self.rest_segments if by_post.dtype == self.rest_segments.dtype \
            else self.rest_segments.astype(by_post.dtype)
        for c0 in range(0, b, self.REST_CHUNK):
            raw = np.ascontiguousarray((segments @ by_post[:, c0:c0 + self.REST_CHUNK]).T)
            k = raw.shape[0]
            raw = raw.reshape(k, 2, g_n + 1, r)
            cum = np.cumsum(raw, axis=3, dtype=raw.dtype)  # (in its type: much faster)
            # the rest's weights at or above each run: the whole data's minus the cohort's
            # (whole numbers, in the weights' integer type until the division)
            ge = np.subtract(cum[:, :, -1:], cum[:, :, :-1])
            p_ge, n_ge = ge[:, 0], ge[:, 1]
            if n_t:  # only the runs up to the largest target's FPR are read
                reach = np.floor(self.targets.max() * n_rest[c0:c0 + k]) + 1.0
                upto = min(r, int((n_ge <= reach[..., None]).sum(axis=2).max()) + 1)
                tpr[c0:c0 + k] = _tpr_at(
                    np.ascontiguousarray(p_ge[..., :upto], dtype=np.float64).reshape(k, -1),
                    np.ascontiguousarray(n_ge[..., :upto]).reshape(k, -1),
                    n_rest[c0:c0 + k], np.arange(g_n, dtype=np.int64) * upto,
                    self.targets)
            total = np.add(n_ge, p_ge)  # 0 only where the rest's run weight is 0
            np.maximum(total, 1, out=total)
            a = raw[:, 0, :-1]
            np.subtract(raw[:, 0, -1:], a, out=a)  # the rest's positive weight in the run
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
                    caught[:, c0:c0 + p_ge.shape[0]] = _tpr_at(
                        p_ge, cum[:, n:], n_present[c0:c0 + p_ge.shape[0]], self.starts,
                        self.targets).transpose(1, 0, 2)
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


def _tpr_at(p_ge: np.ndarray, n_ge: np.ndarray, n_total: np.ndarray, starts: np.ndarray,
            targets: np.ndarray) -> np.ndarray:
    """``(b, s, T)``: ``p_ge`` (``(b, rows)``) at each set's last row (its rows from
    ``starts``, consecutive) whose FPR ``n_ge / n_total`` is at most each target (0 without
    one). ``n_ge`` is whole and non-decreasing along a set's rows: the rows within a target
    are those with ``n_ge`` at most the largest whole m with ``m / n_total <= T`` (the same
    floating-point division), found by one sorted search over every (resample, set) at once,
    each offset past the previous one's values (whole numbers: exact)."""
    b, n = n_ge.shape
    s = starts.size
    total = n_total[..., None]  # (b, s, 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        m = np.floor(targets * total)
        for _ in range(2):  # the division's rounding: m / N <= T, (m + 1) / N > T
            m = np.where((m + 1) / total <= targets, m + 1, m)
            m = np.where(m / total > targets, m - 1, m)
    m = np.where(total > 0, m, -1.0)
    step = float(max(n_ge.max(initial=0.0), m.max(initial=0.0))) + 2.0
    size = np.diff(np.r_[starts, n])
    block = np.arange(b * s, dtype=np.float64).reshape(b, s) * step
    flat = (n_ge + np.repeat(block, size, axis=1)).ravel()
    found = np.searchsorted(flat, (m + block[..., None]).ravel(), side="right")
    within = found.reshape(b, s, -1) - (np.arange(b)[:, None, None] * n + starts[None, :, None])
    got = np.take_along_axis(p_ge, (starts[None, :, None] + np.maximum(within - 1, 0)
                                    ).reshape(b, -1), axis=1).reshape(b, s, -1)
    return np.where(within > 0, got, 0.0)
