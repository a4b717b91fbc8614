"""Parquet ids read as categoricals (metrics_core.inputs.loading): the same data set, exclusions,
warnings and errors as reading them as strings.

The loader reads ``post_id`` and ``criterion`` (and their aliases and mapped sources) of a
Parquet file straight from its dictionary encoding; every check and every value must come out
as the string path gives them. The string path is the same loader with that reading switched
off (``_REPEATED_IDS`` emptied), so each comparison is against the exact previous behaviour.
"""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metrics_core.demo import make_synthetic
from metrics_core.errors import InputError
from metrics_core.inputs import loading as mio
from tests.test_io import assert_same


def _parquet(frame: pd.DataFrame) -> bytes:
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), buf)
    return buf.getvalue()


def _outcome(*args, **kwargs):
    """("ok", loaded) or ("error", message) of one load."""
    try:
        return "ok", mio.load(*args, **kwargs)
    except InputError as err:
        return "error", str(err)


def _as_strings(*args, **kwargs):
    """The load with the ids read as strings (the behaviour before categoricals)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(mio, "_REPEATED_IDS", ())
        return _outcome(*args, **kwargs)


def _assert_same_outcome(args, kwargs) -> None:
    kind, got = _outcome(*args, **kwargs)
    want_kind, want = _as_strings(*args, **kwargs)
    assert kind == want_kind, (got, want)
    if kind == "error":
        assert got == want
        return
    assert_same(got.dataset, want.dataset)
    pd.testing.assert_frame_equal(got.exclusions, want.exclusions)
    assert got.warnings == want.warnings
    assert got.column_map == want.column_map


# ---------------------------------------------------------------------------- reading
def test_read_table_reads_the_named_text_columns_as_categoricals():
    frame = pd.DataFrame({"Post ID": ["p1", "p1", "p2"], "criterion": ["A", "B", "A"],
                          "score": [0.1, 0.2, 0.3]})
    data = _parquet(frame)
    plain = mio.read_table(data, name="c.parquet")
    assert not isinstance(plain["Post ID"].dtype, pd.CategoricalDtype)
    # matched as column names are (case, spaces); a numeric column is left as it is
    read = mio.read_table(data, name="c.parquet", category_columns=["post_id", "score"])
    assert isinstance(read["Post ID"].dtype, pd.CategoricalDtype)
    assert read["Post ID"].tolist() == ["p1", "p1", "p2"]
    assert read["score"].dtype == np.float64
    assert not isinstance(read["criterion"].dtype, pd.CategoricalDtype)


def test_loading_the_demo_from_parquet_gives_the_same_dataset():
    q, c = make_synthetic(300, seed=3, with_text=True)
    args = (_parquet(q), _parquet(c))
    kwargs = {"queries_name": "q.parquet", "candidates_name": "c.parquet"}
    loaded = mio.load(*args, **kwargs)
    want = _as_strings(*args, **kwargs)[1]
    assert_same(loaded.dataset, want.dataset)
    assert loaded.dataset.n_candidates == len(c)
    # and the same as the tables given as DataFrames
    assert_same(loaded.dataset, mio.load(q, c).dataset)


def test_long_parquet_table_with_aliases_gives_the_same_dataset():
    q, c = make_synthetic(40, seed=5, with_text=False)
    long = c.merge(q, on=["post_id", "criterion"]).rename(
        columns={"post_id": "post", "criterion": "crit"})
    _assert_same_outcome((_parquet(long),), {"queries_name": "long.parquet"})
    loaded = mio.load(_parquet(long), queries_name="long.parquet")
    assert loaded.dataset.n_queries == len(q)


def test_an_over_long_id_in_a_dictionary_column_names_its_rows():
    frame = pd.DataFrame({"post_id": ["p1", "p1", "x" * 40, "p2"],
                          "criterion": ["A", "A", "A", "B"],
                          "sent_uid": ["s1", "s2", "s1", "s1"], "score": [0.1, 0.2, 0.3, 0.4],
                          "is_gold": [0, 1, 0, 0], "has_evidence": [1, 1, 0, 0],
                          "p_has_evidence": [0.9, 0.9, 0.1, 0.2]})
    with pytest.raises(InputError) as exc:
        mio.load(_parquet(frame), queries_name="long.parquet",
                 limits=mio.Limits(max_cell_bytes=20))
    assert (exc.value.column, exc.value.rows) == ("post_id", [3])
    assert "at most 20 bytes" in exc.value.rule
    # a limit the longest id is within: loads
    assert mio.load(_parquet(frame), queries_name="long.parquet",
                    limits=mio.Limits(max_cell_bytes=40)).dataset.n_queries == 3


def test_empty_and_missing_ids_are_flagged_on_their_rows():
    q = pd.DataFrame({"post_id": ["p1", "p2", ""], "criterion": ["A", "A", "A"],
                      "has_evidence": [1, 0, 0], "p_has_evidence": [0.8, 0.3, 0.1]})
    c = pd.DataFrame({"post_id": ["p1", None, "p2", "p3"], "criterion": ["A", "A", "", "A"],
                      "sent_uid": ["s1", "s1", "s2", "s1"], "score": [1.0, 2.0, 3.0, 4.0],
                      "is_gold": [1, 0, 0, 0]})
    kind, message = _outcome(_parquet(q), _parquet(c), queries_name="q.parquet",
                             candidates_name="c.parquet")
    assert kind == "error"
    assert "q.parquet: column 'post_id': values must not be empty (row 3)" in message
    assert "c.parquet: column 'post_id': values must not be empty (row 2)" in message
    assert "c.parquet: column 'criterion': values must not be empty (row 3)" in message
    _assert_same_outcome((_parquet(q), _parquet(c)),
                         {"queries_name": "q.parquet", "candidates_name": "c.parquet"})


# ------------------------------------------------------------------- property: same as strings
IDS = st.sampled_from(["p1", "p2", "007", "7", "é", "", None])
CRITERIA = st.sampled_from(["A.1", "A.2", "A.10", "", None])


@st.composite
def tables(draw):
    n_q = draw(st.integers(1, 6))
    q = pd.DataFrame({
        "post_id": draw(st.lists(IDS, min_size=n_q, max_size=n_q)),
        "criterion": draw(st.lists(CRITERIA, min_size=n_q, max_size=n_q)),
        "has_evidence": draw(st.lists(st.integers(0, 1), min_size=n_q, max_size=n_q)),
        "p_has_evidence": draw(st.lists(st.sampled_from([0.1, 0.5, 0.9, np.nan]),
                                        min_size=n_q, max_size=n_q)),
    })
    n_c = draw(st.integers(0, 12))
    c = pd.DataFrame({
        "post_id": draw(st.lists(IDS, min_size=n_c, max_size=n_c)),
        "criterion": draw(st.lists(CRITERIA, min_size=n_c, max_size=n_c)),
        "sent_uid": draw(st.lists(st.sampled_from(["s1", "s2", "s3"]), min_size=n_c,
                                  max_size=n_c)),
        "score": draw(st.lists(st.sampled_from([0.2, 0.7, np.nan]), min_size=n_c,
                               max_size=n_c)),
        "is_gold": draw(st.lists(st.integers(0, 1), min_size=n_c, max_size=n_c)),
    })
    if draw(st.booleans()):  # the rows of each query together, as files usually come
        c = c.sort_values(["post_id", "criterion"], kind="stable", na_position="first")
    # object columns keep their None; an all-None column is written as Parquet nulls
    return q.astype({"post_id": object, "criterion": object}), c.reset_index(drop=True)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables())
def test_two_parquet_tables_load_as_they_do_with_string_ids(pair):
    q, c = pair
    if len(c) == 0:
        c = c.astype({"post_id": object, "criterion": object, "sent_uid": object})
    _assert_same_outcome((_parquet(q), _parquet(c)),
                         {"queries_name": "q.parquet", "candidates_name": "c.parquet"})


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables())
def test_a_long_parquet_table_loads_as_it_does_with_string_ids(pair):
    q, c = pair
    long = pd.concat([c, q.iloc[: len(c)].reset_index(drop=True)[
        ["has_evidence", "p_has_evidence"]]], axis=1) if len(c) else None
    if long is None or long[["has_evidence", "p_has_evidence"]].isna().all().any():
        return
    long["has_evidence"] = long["has_evidence"].astype("Int64")
    _assert_same_outcome((_parquet(long),), {"queries_name": "long.parquet"})


def test_query_keys_from_categories_equal_the_keys_from_the_strings():
    """The Dataset's query keys from categorical ids (their codes, the categories in use
    sorted once) equal those from the strings: categories in another order than the rows,
    categories no row has, criteria in natural order (A.2 before A.10); two criteria of one
    natural key (A.1, A.01) are left to the strings."""
    from metrics_core.data.dataset import _arrow_strings, _QueryKeys

    rng = np.random.default_rng(0)
    posts = np.array(["p10", "p9", "q", "p1", "unused"])
    crits = np.array(["A.10", "A.2", "B.1", "A.1", "never"])
    post = pd.Series(pd.Categorical(posts[rng.integers(0, 4, 300)], categories=posts[::-1]))
    crit = pd.Series(pd.Categorical(crits[rng.integers(0, 4, 300)], categories=crits))
    keep = ~pd.DataFrame({"p": post, "c": crit}).duplicated().to_numpy()
    post, crit = (s[keep].reset_index(drop=True).astype(s.dtype) for s in (post, crit))
    want = _QueryKeys.of(_arrow_strings(post), _arrow_strings(crit))
    got = _QueryKeys.of_categories(post, crit)
    assert got.criteria == want.criteria == ("A.1", "A.2", "A.10", "B.1")
    assert got.posts.tolist() == want.posts.tolist() == ["p1", "p10", "p9", "q"]
    for name in ("post_code", "crit_code", "order", "sorted_key"):
        np.testing.assert_array_equal(getattr(got, name), getattr(want, name))
        assert getattr(got, name).dtype == getattr(want, name).dtype
    tied = pd.Series(pd.Categorical(["A.1", "A.01"]))
    assert _QueryKeys.of_categories(pd.Series(pd.Categorical(["p", "p"])), tied) is None
    assert _QueryKeys.of_categories(post.astype(str), crit) is None  # not categorical


def test_categorical_ids_factorize_and_look_up_as_their_strings():
    """factorize_values / lookup_codes of a categorical of strings read its codes (each
    category looked up once); the result is that of the decoded strings: codes in order of
    first appearance, missing values -1, categories no row has left out, categories in
    another order than the rows."""
    import pyarrow.compute as pc

    from metrics_core.inputs import validate

    def by_strings(values):
        encoded = pc.dictionary_encode(validate.as_arrow(values))
        if encoded.num_chunks == 0:
            return [], []
        return (np.concatenate([c.indices.fill_null(-1).to_numpy() for c in encoded.chunks])
                .tolist(), encoded.chunks[-1].dictionary.to_pylist())

    rng = np.random.default_rng(1)
    look = pa.array(["c", "a", "q", "x"], type=pa.large_string())
    for _ in range(200):
        n, k = int(rng.integers(0, 30)), int(rng.integers(1, 6))
        names = np.array(["a", "b", "c", "", "é", "x"])[:k]
        values = [None if rng.random() < 0.15 else str(names[rng.integers(0, k)])
                  for _ in range(n)]
        categories = [*rng.permutation(names).tolist(), *(["zz"] if rng.random() < 0.5 else [])]
        s = pd.Series(pd.Categorical(values, categories=categories))
        codes, uniques = validate.factorize_values(s)
        assert (codes.tolist(), uniques.to_pylist()) == by_strings(s)
        # Categories numbered as they first appear (as a Parquet dictionary is), unused last.
        seen = list(dict.fromkeys(v for v in values if v is not None))
        ordered = pd.Series(pd.Categorical(values, categories=[
            *seen, *(c for c in categories if c not in seen)]))
        codes, uniques = validate.factorize_values(ordered)
        assert (codes.tolist(), uniques.to_pylist()) == by_strings(ordered)
        for part in (s, s.iloc[::2]):
            want = pc.index_in(validate.as_arrow(part), value_set=look).fill_null(-1)
            got = validate.lookup_codes(part, look)
            assert got.tolist() == [x for c in want.chunks for x in c.to_pylist()]
