"""The fast paths of the evaluate run agree exactly with their plain definitions.

Each kernel below has a faster formulation for large data (value sorts instead of argsorts,
blocked gathers, the first score as a ranked query's maximum); these tests hold each to the
straightforward numpy expression of the same quantity on random data, ties and empty groups
included.
"""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pandas as pd
import pytest

from metrics_core.data.dataset import Dataset
from metrics_core.data.ordering import stable_argsort
from metrics_core.demo import make_synthetic
from metrics_core.inputs.read import length_range
from metrics_core.metrics import calibration, dynamic_k, outcomes


def _plain_cumulative_mass(score, offsets, mass, temperature):
    """Per query: softmax(score / T) (or score / Σ score), cumulated in order."""
    out = np.empty(score.size)
    for a, b in pairwise(offsets):
        s = score[a:b]
        if mass == "softmax":
            e = np.exp(s / temperature - np.max(s / temperature)) if b > a else s
            m = e
        else:
            m = s
        c = np.cumsum(m)
        out[a:b] = c / c[-1] if b > a and c[-1] > 0 else np.nan
    return out


@pytest.mark.parametrize("threads", [False, True])
@pytest.mark.parametrize("seed", range(20))
def test_cumulative_mass_matches_per_query_definition(seed, threads, monkeypatch):
    """One thread, or two from ``PARALLEL_SORT_ROWS`` candidates on (here: always)."""
    from metrics_core.data import ordering

    monkeypatch.setattr(ordering, "PARALLEL_SORT_ROWS", 0 if threads else 10 ** 12)
    rng = np.random.default_rng(seed)
    n = rng.integers(0, 25, rng.integers(1, 200))
    offsets = np.r_[0, np.cumsum(n)].astype(np.int64)
    raw = np.round(rng.normal(size=offsets[-1]) * 3, int(rng.integers(0, 3)))  # ties
    ranked = np.concatenate([np.sort(raw[a:b])[::-1] for a, b in
                             pairwise(offsets)] + [np.empty(0)])
    for mass, t in (("softmax", 1.0), ("softmax", 0.5), ("probability", 1.0)):
        score = np.abs(ranked) / (np.abs(ranked).max(initial=0) + 1) if mass == "probability" \
            else ranked
        want = _plain_cumulative_mass(score, offsets, mass, t)
        for descending in (False, True):
            got = dynamic_k._cumulative_mass(score.copy(), offsets, mass=mass, temperature=t,
                                             descending=descending)
            np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-15)
        # Unsorted scores (a Dataset ranked by rank): the column maxima path.
        shuffled = score.copy()
        rng.shuffle(shuffled)
        np.testing.assert_allclose(
            dynamic_k._cumulative_mass(shuffled.copy(), offsets, mass=mass, temperature=t),
            _plain_cumulative_mass(shuffled, offsets, mass, t), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("seed", range(5))
def test_cumulative_mass_is_the_same_on_two_threads_bitwise(seed, monkeypatch):
    """The two-thread split gives every query's values bit for bit as one thread does."""
    from metrics_core.data import ordering

    rng = np.random.default_rng(seed)
    n = rng.integers(0, 40, 3_000)
    offsets = np.r_[0, np.cumsum(n)].astype(np.int64)
    score = rng.normal(size=offsets[-1]) * 4
    for mass, t in (("softmax", 0.7), ("probability", 1.0)):
        values = np.abs(score) if mass == "probability" else score
        runs = {}
        for threads in (False, True):
            monkeypatch.setattr(ordering, "PARALLEL_SORT_ROWS", 0 if threads else 10 ** 12)
            runs[threads] = dynamic_k._cumulative_mass(values.copy(), offsets, mass=mass,
                                                       temperature=t)
        np.testing.assert_array_equal(runs[True].view(np.int64), runs[False].view(np.int64))


@pytest.mark.parametrize("seed", range(10))
def test_mass_head_is_the_first_positions_of_each_query(seed):
    rng = np.random.default_rng(seed)
    n = rng.integers(0, 15, int(rng.integers(0, 9000)))  # more queries than one block
    offsets = np.r_[0, np.cumsum(n)].astype(np.int64)
    profile = dynamic_k.MassProfile(cum_mass=rng.random(offsets[-1]), offsets=offsets,
                                    mass="softmax", temperature=1.0)
    width = int(rng.integers(1, 20))
    want = np.full((width, n.size), np.inf)
    for q, (a, b) in enumerate(pairwise(offsets)):
        head = profile.cum_mass[a:min(b, a + width)]
        want[:head.size, q] = head
    np.testing.assert_array_equal(profile.head(width), want)


@pytest.mark.parametrize("seed", range(10))
def test_distinct_rows_are_the_unique_p_with_their_counts(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 5000))
    p = np.round(rng.random(n), int(rng.integers(1, 5)))
    p[: n // 10] = 0.0  # clipped to LOGIT_EPS: one row
    y = (rng.random(n) < p).astype(np.float64)
    values, events, trials = calibration._distinct_rows(y, p)
    clipped = np.clip(p, calibration.LOGIT_EPS, 1 - calibration.LOGIT_EPS)
    want = pd.DataFrame({"p": clipped, "y": y}).groupby("p")["y"].agg(["sum", "count"])
    np.testing.assert_array_equal(values, want.index.to_numpy())
    np.testing.assert_array_equal(events, want["sum"].to_numpy())
    np.testing.assert_array_equal(trials, want["count"].to_numpy(dtype=np.float64))


@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.float64, bool])
def test_outcome_counts_of_any_label_dtype(dtype):
    rng = np.random.default_rng(0)
    y = rng.random(500) < 0.3
    pred = rng.integers(-1, 2, 500)
    groups = rng.integers(0, 7, 500)
    table = outcomes.outcome_counts(y.astype(dtype), pred.astype(np.int8), groups, 7)
    for g in range(7):
        for r, pv in enumerate((-1, 0, 1)):
            for label in (0, 1):
                assert table[g, r, label] == np.sum((groups == g) & (pred == pv) & (y == label))
    np.testing.assert_array_equal(outcomes.outcome_counts(y.astype(dtype), pred)[0],
                                  table.sum(axis=0))


def test_stable_argsort_is_numpy_stable_argsort():
    rng = np.random.default_rng(0)
    for values in (rng.integers(0, 60, 10_000), rng.integers(0, 1 << 20, 10_000),
                   rng.integers(-5, 5, 1000), np.zeros(0, dtype=np.int64)):
        np.testing.assert_array_equal(stable_argsort(values), np.argsort(values, kind="stable"))


def test_split_codes_are_pandas_factorize():
    q = pd.DataFrame({"post_id": ["a", "a", "b", "c"], "criterion": ["C1", "C2", "C1", "C1"],
                      "has_evidence": [1, 0, 0, 1], "p_has_evidence": [0.9, 0.2, 0.1, 0.8],
                      "split": ["test", "test", "dev", "test"]})
    c = pd.DataFrame({"post_id": ["a"], "criterion": ["C1"], "sent_uid": ["s"], "score": [1.0],
                      "is_gold": [1]})
    ds = Dataset.from_frames(q, c)
    codes, uniques = ds.split_codes
    assert list(uniques[codes]) == list(ds.split)
    assert sorted(uniques) == ["dev", "test"] == ds.splits
    assert ds.fold_codes is None and ds.folds is None
    plain = Dataset.from_frames(q.drop(columns="split").assign(fold=[3, 3, 1, 2]), c)
    assert plain.split_codes is None and plain.splits is None
    assert plain.folds == [1, 2, 3]


@pytest.mark.parametrize("seed", range(8))
def test_audit_fast_paths_are_their_plain_definitions(seed):
    """The audit's post-disjointness codes are ``pandas.factorize(sort=True)``, and a positive
    query's all-tied test reads its first and last score when the Dataset is ranked by score
    (the maximum and minimum of every query's scores otherwise)."""
    from metrics_core.inputs import audit
    from tests.conftest import random_frames

    rng = np.random.default_rng(seed)
    q, c = random_frames(n_posts=60, seed=seed, tie_share=0.6)
    q["split"] = rng.choice(["TUNE", "TEST", "dev", "b"], len(q))
    positive = q.loc[q["has_evidence"] == 1, ["post_id", "criterion"]].head(6)
    all_tied = c.merge(positive, on=["post_id", "criterion"], how="left", indicator=True)
    c.loc[(all_tied["_merge"] == "both").to_numpy(), "score"] = 0.25  # every candidate tied
    ds = Dataset.from_frames(q, c)
    for values, factorized in ((ds.fold, ds.fold_codes), (ds.split, ds.split_codes)):
        codes, labels = audit._sorted_codes(factorized)
        want_codes, want_labels = pd.factorize(pd.Series(values), sort=True)
        np.testing.assert_array_equal(codes, want_codes)
        assert list(labels) == list(want_labels)
    starts = ds.offsets[:-1]
    tied = np.array([ds.n_cand[i] > 0 and ds.score[a:b].max() == ds.score[a:b].min()
                     for i, (a, b) in enumerate(pairwise(ds.offsets))])
    want = tied & (ds.n_cand >= 2) & ds.positives
    assert ds.ranked_by == "score" and starts.size == ds.n_queries
    np.testing.assert_array_equal(audit._positive_tie_mask(ds), want)
    assert want.any()  # the case is exercised
    with_rank = Dataset.from_frames(q, c.assign(rank=c.groupby(["post_id", "criterion"])
                                                .cumcount() + 1))
    assert with_rank.ranked_by == "rank"
    tied = np.array([with_rank.n_cand[i] > 0 and with_rank.score[a:b].max()
                     == with_rank.score[a:b].min()
                     for i, (a, b) in enumerate(pairwise(with_rank.offsets))])
    np.testing.assert_array_equal(audit._positive_tie_mask(with_rank),
                                  tied & (with_rank.n_cand >= 2) & with_rank.positives)


@pytest.mark.parametrize("seed", range(6))
def test_text_length_range_is_arrows_min_and_max_of_binary_length(seed, monkeypatch):
    """The loader's byte-length range of a text column (the cell-size limit, the empty-id
    check) read from the offsets block by block equals Arrow's ``binary_length`` min / max:
    the four offset layouts, sliced arrays, empty strings, multi-byte text, nulls (those go to
    Arrow's kernel)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from metrics_core.inputs import read

    monkeypatch.setattr(read, "_LENGTH_BLOCK", 7)  # several blocks on small arrays
    rng = np.random.default_rng(seed)
    words = ["", "a", "ab", "ééé", "x" * 40, "p00012_s03", "日本語テキスト"]
    values = [words[i] for i in rng.integers(0, len(words), 200)]
    with_nulls = [None if rng.random() < 0.1 else v for v in values]
    arrays = [pa.array(values, type=t) for t in (pa.string(), pa.large_string())]
    arrays += [pa.array([v.encode() for v in values], type=t)
               for t in (pa.binary(), pa.large_binary())]
    arrays += [pa.array(with_nulls, type=pa.large_string()), pa.array([None, None], pa.string())]
    for arr in arrays:
        for lo, n in ((0, len(arr)), (3, 50), (len(arr) - 1, 1), (17, 0)):
            part = arr.slice(lo, n)
            lengths = pc.binary_length(part)
            assert length_range(part) == (pc.min(lengths).as_py(),
                                               pc.max(lengths).as_py()), (arr.type, lo, n)


@pytest.mark.parametrize("seed", range(12))
def test_ids_ordered_within_runs_is_the_per_query_definition(seed):
    """The loader's no-hash uniqueness test: ``sent_uid`` strictly increasing (or strictly
    decreasing) within every query, queries given by their first rows, whatever the ids do
    across a boundary between two queries."""
    from metrics_core.inputs import loading as mio

    rng = np.random.default_rng(seed)
    mode = ("increasing", "decreasing", "mixed", "repeat")[seed % 4]
    sizes = rng.integers(1, 6, rng.integers(2, 40))
    sizes[0] = 3  # a query with an order to break
    starts = np.r_[0, np.cumsum(sizes)[:-1]]
    ids = []
    for i, size in enumerate(sizes):
        run = sorted(rng.choice(50, size, replace=False).tolist())
        if mode == "decreasing" or (mode == "mixed" and i == 0):
            run = run[::-1]
        if mode == "repeat" and i == 0:
            run[-1] = run[0]
        ids += [f"s{v:02d}" for v in run]
    queries = [ids[s:s + n] for s, n in zip(starts, sizes, strict=True)]
    want = (all(all(a < b for a, b in pairwise(q)) for q in queries)
            or all(all(a > b for a, b in pairwise(q)) for q in queries))
    assert want == (mode in ("increasing", "decreasing"))
    uid = pd.Series(ids, dtype="str")
    assert mio._ordered_within_runs(uid, starts) == want
    # With the increasing steps compared on a thread beforehand (the loader's path), and
    # with a failed one (compared again): the same answer.
    from concurrent.futures import Future

    done, failed = Future(), Future()
    done.set_result(mio._uid_steps(uid))
    failed.set_exception(RuntimeError("lost"))
    assert mio._ordered_within_runs(uid, starts, done) == want
    assert mio._ordered_within_runs(uid, starts, failed) == want


@pytest.mark.parametrize("duplicate", [False, True])
def test_threaded_id_order_loads_what_the_plain_check_loads(duplicate, monkeypatch, tmp_path):
    """The ids' order compared on a thread (from ``_THREADED_UID_ROWS`` candidates on): the
    same data set, and the same error for a sent_uid repeated within a query."""
    from metrics_core.errors import InputError
    from metrics_core.inputs import loading as mio
    from tests.conftest import random_frames
    from tests.test_io import assert_same

    q, c = random_frames(n_posts=30, seed=4)
    c = c.sort_values(["post_id", "criterion", "sent_uid"], kind="stable")
    if duplicate:
        c.iloc[1, c.columns.get_loc("sent_uid")] = c.iloc[0]["sent_uid"]
    qp, cp = tmp_path / "q.parquet", tmp_path / "c.parquet"
    q.to_parquet(qp, index=False)
    c.to_parquet(cp, index=False)

    def outcome():
        try:
            return mio.load(qp, cp)
        except InputError as err:
            return err.render()

    monkeypatch.setattr(mio, "_THREADED_UID_ROWS", 10 ** 12)
    plain = outcome()
    monkeypatch.setattr(mio, "_THREADED_UID_ROWS", 0)
    threaded = outcome()
    if duplicate:
        assert isinstance(plain, str) and "sent_uid" in plain and threaded == plain
    else:
        assert_same(threaded.dataset, plain.dataset)


@pytest.mark.parametrize("threads", [False, True])
@pytest.mark.parametrize("seed", [0, 1])
def test_grouped_order_is_lexsort_by_query_then_key(seed, threads, monkeypatch):
    """The within-query sort (one thread, or two from ``PARALLEL_SORT_ROWS`` rows on) is
    ``np.lexsort((key, query))``: stable ties, descending by negation, rows in any order."""
    from metrics_core.data import ordering

    monkeypatch.setattr(ordering, "PARALLEL_SORT_ROWS", 0 if threads else 10 ** 12)
    rng = np.random.default_rng(seed)
    n_queries = 300
    qidx = rng.integers(0, n_queries, 5_000)
    key = np.round(rng.random(qidx.size), 1)  # many ties
    order, n_cand = ordering.grouped_order(qidx, n_queries, key)
    np.testing.assert_array_equal(order, np.lexsort((key, qidx)))
    np.testing.assert_array_equal(n_cand, np.bincount(qidx, minlength=n_queries))
    grouped = np.sort(qidx)  # rows grouped by query already
    order, _ = ordering.grouped_order(grouped, n_queries, key, descending=True)
    np.testing.assert_array_equal(order, np.lexsort((-key, grouped)))
    # Not stable: the same multiset of keys in each query, in order.
    order, _ = ordering.grouped_order(grouped, n_queries, key, stable=False)
    np.testing.assert_array_equal(key[order], key[np.lexsort((key, grouped))])


@pytest.mark.parametrize("n", [1, 2, 5_000, 40_000])
def test_grouped_order_of_rows_in_order_already_is_theirs(n, monkeypatch):
    """Rows grouped by query and in key order within each (as a ranker's file lists them)
    keep their order: the lexsort's, ties included; one row out of order anywhere (past the
    first rows checked, at a query's end, a NaN) and the rows are sorted."""
    from metrics_core.data import ordering

    monkeypatch.setattr(ordering, "_FIRST_ROWS", 1_000)
    rng = np.random.default_rng(n)
    qidx = np.sort(rng.integers(0, max(n // 7, 1), n))
    key = np.round(rng.random(n), 1)
    for descending in (False, True):
        ordered = np.lexsort((-key if descending else key, qidx))
        k = key[ordered]
        for stable in (True, False):
            order, n_cand = ordering.grouped_order(qidx, max(n // 7, 1), k, stable=stable,
                                                   descending=descending)
            np.testing.assert_array_equal(order, np.arange(n))
            np.testing.assert_array_equal(n_cand, np.bincount(qidx, minlength=max(n // 7, 1)))
        for bad in {1, n // 2, n - 1} - {0}:
            for value in (np.nan, 2.0 if descending else -1.0):  # out of order
                if bad >= n or qidx[bad] != qidx[bad - 1]:
                    continue
                broken = k.copy()
                broken[bad] = value
                order, _ = ordering.grouped_order(qidx, max(n // 7, 1), broken,
                                                  descending=descending)
                np.testing.assert_array_equal(
                    order, np.lexsort((-broken if descending else broken, qidx)))


@pytest.mark.parametrize("bad", [None, "gold", "score_nan", "score_inf", "p_out", "p_nan"])
def test_column_check_fast_paths_load_what_the_general_checks_load(bad):
    """A float64 column without NaN or infinity and an int8 / bool 0-1 column skip the
    column-long masks (``_Checker.number`` / ``binary``, ``scalars`` of a type that holds no
    record): the same data set, exclusions, warnings and errors as the same values in types
    that take the general checks (object scores and p, int64 gold)."""
    from metrics_core.errors import InputError
    from metrics_core.inputs import loading as mio
    from tests.test_io import assert_same

    q, c = make_synthetic(60, seed=4)
    gold = c["is_gold"].to_numpy().astype(np.int8)
    score = c["score"].to_numpy(dtype=np.float64).copy()
    p = q["p_has_evidence"].to_numpy(dtype=np.float64).copy()
    if bad == "gold":
        gold[5] = 2
    elif bad == "score_nan":
        score[[3, 9]] = np.nan
    elif bad == "score_inf":
        score[7] = np.inf
    elif bad == "p_out":
        p[2] = 1.5
    elif bad == "p_nan":
        p[4] = np.nan

    def outcome(fast: bool):
        cf = c.assign(is_gold=gold if fast else gold.astype(np.int64),
                      score=score if fast else pd.Series(score, dtype=object))
        qf = q.assign(p_has_evidence=p if fast else pd.Series(p, dtype=object))
        try:
            return mio.load(qf, cf)
        except InputError as err:
            return str(err)

    fast, general = outcome(True), outcome(False)
    if isinstance(general, str):
        assert fast == general
        return
    assert_same(fast.dataset, general.dataset)
    pd.testing.assert_frame_equal(fast.exclusions, general.exclusions)
    assert fast.warnings == general.warnings
    if bad is None:  # and a bool gold column loads as its 0 / 1 does
        as_bool = mio.load(q.assign(p_has_evidence=p), c.assign(is_gold=gold.astype(bool),
                                                                  score=score))
        assert_same(as_bool.dataset, fast.dataset)


@pytest.mark.parametrize("in_order", [False, True])
@pytest.mark.parametrize("seed", [0, 1])
def test_grouped_order_of_query_runs_is_that_of_their_rows(seed, in_order, monkeypatch):
    """Rows given as runs of one query each (``QueryRuns``, as the loader passes a file that
    lists each query's rows together) order as the row-long query index they stand for: runs
    in query order or not, some queries without rows, rows in key order already or not."""
    from metrics_core.data import ordering

    monkeypatch.setattr(ordering, "_FIRST_ROWS", 50)
    rng = np.random.default_rng(seed)
    n_queries = 400
    query = rng.permutation(n_queries)[:300]  # 100 queries without rows
    lengths = rng.integers(1, 9, query.size)
    starts = np.cumsum(lengths) - lengths
    runs = ordering.QueryRuns(starts, lengths, query)
    qidx = np.repeat(query, lengths)
    np.testing.assert_array_equal(runs.rows(), qidx)
    rows = rng.integers(0, qidx.size, 50)
    np.testing.assert_array_equal(ordering.QueryRuns.rows_of(runs, rows), qidx[rows])
    for sorted_runs in (runs, ordering.QueryRuns(starts, lengths, np.sort(query))):
        q = sorted_runs.rows()
        key = np.round(rng.random(q.size), 1)  # ties
        for descending in (False, True):
            if in_order:  # each query's rows by key already: kept, nothing sorted
                for start, length in zip(starts.tolist(), lengths.tolist(), strict=True):
                    run = np.sort(key[start:start + length])
                    key[start:start + length] = run[::-1] if descending else run
                monkeypatch.setattr(ordering, "_sorted_within", None)
            expected = np.lexsort((-key if descending else key, q))
            for stable in (True, False):
                order, n_cand = ordering.grouped_order(sorted_runs, n_queries, key,
                                                       stable=stable, descending=descending)
                np.testing.assert_array_equal(n_cand, np.bincount(q, minlength=n_queries))
                if stable:
                    np.testing.assert_array_equal(order, expected)
                else:
                    np.testing.assert_array_equal(key[order], key[expected])
                np.testing.assert_array_equal(
                    order, ordering.grouped_order(q, n_queries, key, stable=stable,
                                                  descending=descending)[0])


def test_runs_of_parts_are_the_rows_of_the_joined_parts():
    """The rows of some runs of arrays laid end to end (an empty part among them), copied
    without joining the parts; a repeat found within those rows alone as within all."""
    from metrics_core.data import ordering

    parts = [np.array([5, 1, 4, 4, 2], dtype=np.int32), np.array([], dtype=np.int32),
             np.array([7, 3, 3, 9], dtype=np.int32)]
    joined = np.concatenate(parts)
    starts, lengths = np.array([5, 0, 7]), np.array([2, 2, 2])
    got = ordering.runs_of_parts(parts, starts, lengths)
    assert got.tolist() == [7, 3, 5, 1, 3, 9] and got.dtype == np.int32
    # (a value repeated across two queries is no repeat within one)
    for starts, lengths, repeat in (([0], [2], False), ([2], [3], True), ([5, 0], [2, 2], False),
                                    ([6], [2], True), ([5, 7], [2, 2], False)):
        starts, lengths = np.array(starts), np.array(lengths)
        few = ordering.runs_of_parts(parts, starts, lengths)
        np.testing.assert_array_equal(
            few, np.concatenate([joined[a:a + n] for a, n in zip(starts, lengths, strict=True)]))
        within = np.ones(lengths.size, dtype=bool)
        assert ordering.repeats_within(few, np.cumsum(lengths) - lengths, lengths,
                                       within) is repeat
        assert ordering.repeats_within(joined, starts, lengths, within) is repeat
