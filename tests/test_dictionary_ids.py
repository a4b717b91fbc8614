"""``sent_uid`` read from Parquet as Arrow dictionary chunks and kept so (contract §2).

The loader reads a Parquet candidates table's ``sent_uid`` as the file's dictionary pages (one
dictionary per row group) and never decodes it as a whole: uniqueness within a query is
checked on the codes, the few queries whose rows straddle two row groups by their strings,
ties are broken on the decoded tied rows only. These tests hold that path to the plain one:
Parquet files with many small row groups load the same data set, the same exclusions and
warnings and the same errors (to the letter) as the loader's plain path (``sent_uid`` read as
strings), for grouped and ungrouped rows, ties across row groups, repeated ids within and
across row groups, and empty or missing ids.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metrics_core.data import ordering
from metrics_core.data.dataset import take_text
from metrics_core.errors import InputError
from metrics_core.inputs import loading as mio
from metrics_core.inputs.parquet import ARROW_IDS, dictionary_names, read_parquet
from metrics_core.inputs.validate import dictionary_chunks
from tests.conftest import random_frames
from tests.test_io import assert_same


def _write(q: pd.DataFrame, c: pd.DataFrame, tmp_path, row_group_size: int):
    """The tables as Parquet, the candidates in row groups of ``row_group_size`` rows."""
    paths = []
    for kind, frame in (("q", q), ("c", c)):
        path = tmp_path / f"{kind}.parquet"
        pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path,
                       row_group_size=row_group_size if kind == "c" else None)
        paths.append(path)
    return paths


def _outcome(queries, candidates):
    try:
        return mio.load(queries, candidates)
    except InputError as err:
        return err.render()


def _both(paths):
    """(outcome with sent_uid as dictionary chunks, outcome with sent_uid read as strings: the
    loader's plain path, as before the dictionary path existed)."""
    frame = mio._frame_of(paths[1], None, "candidates", None)[0]
    assert dictionary_chunks(frame["sent_uid"]) is not None
    dictionary = _outcome(*paths)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(mio, "ARROW_IDS", ())
        frame = mio._frame_of(paths[1], None, "candidates", None)[0]
        assert dictionary_chunks(frame["sent_uid"]) is None
        plain = _outcome(*paths)
    return dictionary, plain


def _same(a, b) -> None:
    if isinstance(b, str):
        assert a == b
        return
    assert not isinstance(a, str), a
    assert_same(a.dataset, b.dataset)
    assert a.exclusions.equals(b.exclusions)
    assert a.warnings == b.warnings


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), row_group_size=st.sampled_from([1, 3, 7, 50, 10_000]),
       grouped=st.booleans(), tie_share=st.sampled_from([0.0, 0.5, 1.0]))
def test_parquet_dictionary_ids_load_what_the_plain_path_loads(tmp_path_factory, seed,
                                                               row_group_size, grouped,
                                                               tie_share):
    """Ties within a query broken by sent_uid descending, across row-group boundaries too."""
    tmp_path = tmp_path_factory.mktemp("dict")
    q, c = random_frames(20, ("A", "B", "C"), seed=seed, tie_share=tie_share)
    rng = np.random.default_rng(seed)
    if grouped:  # ids in a different order within every query: codes not monotone
        c = c.sample(frac=1.0, random_state=seed).sort_values(["post_id", "criterion"],
                                                              kind="stable")
    else:
        c = c.iloc[rng.permutation(len(c))]
    if tie_share == 1.0:
        c["score"] = np.round(c["score"], 0)
    _same(*_both(_write(q, c.reset_index(drop=True), tmp_path, row_group_size)))


@pytest.mark.parametrize("threads", [False, True])
@pytest.mark.parametrize("where", ["same row group", "across row groups", "ungrouped"])
def test_a_repeated_id_within_a_query_is_the_plain_paths_error(tmp_path, where, threads,
                                                              monkeypatch):
    """``threads``: the codes' check on two threads (from ``PARALLEL_SORT_ROWS`` rows on)."""
    monkeypatch.setattr(ordering, "PARALLEL_SORT_ROWS", 0 if threads else 10 ** 12)
    q, c = random_frames(12, ("A", "B"), seed=3, tie_share=0.0)
    c = c.reset_index(drop=True)
    sizes = c.groupby(["post_id", "criterion"], sort=False).size()
    first = int(np.flatnonzero(sizes.to_numpy() >= 4)[0])  # a query of 4 rows or more
    start = int(sizes.to_numpy()[:first].sum())
    size = 10_000
    if where == "across row groups":
        size = start + 2  # the query's first two rows in one row group, the rest in the next
        c.loc[start + 3, "sent_uid"] = c.loc[start, "sent_uid"]
    else:
        c.loc[start + 1, "sent_uid"] = c.loc[start, "sent_uid"]
    if where == "ungrouped":
        c = c.iloc[::-1].reset_index(drop=True)
    parquet, plain = _both(_write(q, c, tmp_path, size))
    assert isinstance(plain, str) and "(post_id, criterion, sent_uid) must be unique" in plain
    _same(parquet, plain)


@pytest.mark.parametrize("bad", ["", None])
def test_an_empty_or_missing_id_is_the_plain_paths_error(tmp_path, bad):
    q, c = random_frames(12, ("A", "B"), seed=5)
    c = c.reset_index(drop=True).astype({"sent_uid": object})
    c.loc[[3, 40], "sent_uid"] = bad
    parquet, plain = _both(_write(q, c, tmp_path, 16))
    assert isinstance(plain, str) and "sent_uid" in plain and "must not be empty" in plain
    _same(parquet, plain)


def test_excluded_candidates_keep_their_ids(tmp_path):
    q, c = random_frames(12, ("A", "B"), seed=6)
    c = c.reset_index(drop=True)
    c.loc[[2, 30, 31], "score"] = np.nan
    q.loc[[1], "p_has_evidence"] = np.nan
    parquet, plain = _both(_write(q, c, tmp_path, 9))
    assert len(plain.exclusions) > 3 and (plain.exclusions["sent_uid"] != "").sum() >= 3
    _same(parquet, plain)


def test_arrow_tables_read_with_dictionary_ids_load_as_the_files(tmp_path):
    """Tables read already (as a caller with its own Parquet reading hands them over), their
    ids as dictionaries: the same data set as reading the paths."""
    q, c = random_frames(15, seed=7)
    paths = _write(q, c.reset_index(drop=True), tmp_path, 11)
    names = dictionary_names() + dictionary_names(None, ARROW_IDS)
    tq, tc = (read_parquet(p, None, p.name, mio.DEFAULT_LIMITS, names) for p in paths)
    assert pa.types.is_dictionary(tc.schema.field("sent_uid").type)
    loaded = mio.load(tq, tc, queries_name="q.parquet", candidates_name="c.parquet")
    _same(loaded, _both(paths)[1])


def test_take_text_decodes_only_the_rows_asked_for_in_any_order():
    chunks = [pa.array(v, type=pa.string()).dictionary_encode()
              for v in (["b", "a", "b"], [], ["c", "a"])]
    values = pa.chunked_array(chunks)
    rows = np.array([4, 0, 3, 1, 4])
    assert take_text(values, rows) == ["a", "b", "c", "a", "a"]
    assert take_text(pa.chunked_array([pa.array(["x", "y"])]), np.array([1, 0])) == ["y", "x"]


def test_a_long_table_loads_what_the_plain_path_loads(tmp_path):
    """One Parquet table of queries and candidates, queries without candidates (an empty
    sent_uid) and excluded candidates among its rows."""
    q, c = random_frames(30, seed=9)
    table = c.merge(q, on=["post_id", "criterion"], how="right")
    table.loc[table.index[::7], "score"] = np.nan
    path = tmp_path / "long.parquet"
    pq.write_table(pa.Table.from_pandas(table, preserve_index=False), path, row_group_size=13)
    frame = mio._frame_of(path, None, "queries", None)[0]
    assert dictionary_chunks(frame["sent_uid"]) is not None
    dictionary = mio.load(path)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(mio, "ARROW_IDS", ())
        plain = mio.load(path)
    assert (plain.dataset.n_candidates < len(table)
            and len(plain.exclusions) > 0 and plain.dataset.n_queries == len(q))
    _same(dictionary, plain)


def test_only_queries_whose_codes_do_not_increase_need_the_sorting_check():
    """The one pass: a query whose codes strictly increase along its rows within a chunk (a
    file in id order, its dictionary built as the ids first appear) repeats no id; a repeat
    or a step down leaves the query to the sorting check; the pairs across two queries or
    two chunks are not compared (a query straddling two chunks is checked by its strings)."""
    suspects = mio._codes_not_increasing
    starts, none = np.array([0, 3, 5]), np.array([], dtype=np.int64)
    assert suspects(np.array([0, 1, 2, 1, 2, 0, 3]), starts, none).tolist() == []
    assert suspects(np.array([0, 1, 2, 1, 2, 3, 3]), starts, none).tolist() == [2]  # repeat
    assert suspects(np.array([0, 2, 1, 2, 1, 0, 3]), starts, none).tolist() == [0, 1]
    assert suspects(np.array([0, 1, 2, 0, 1]), np.array([0]), np.array([3])).tolist() == []
    assert suspects(np.array([0, 1, 2, 0, 1]), np.array([0]), none).tolist() == [0]
    # The chunks' codes as they are (not concatenated): the same queries.
    assert suspects([np.array([0, 1, 2]), np.array([0, 1])], np.array([0]),
                    np.array([3])).tolist() == []
    assert suspects([np.array([0, 2, 1]), np.array([], dtype=np.int32), np.array([1, 1])],
                    np.array([0, 3]), np.array([3])).tolist() == [0, 1]
