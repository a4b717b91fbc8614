"""Hostile and broken input files: limits, memory and clear errors (contract §2, "Bad input").

Every case here failed before the loader had :class:`~metrics_core.inputs.loading.Limits` and the
checks below: a traceback, a garbled message, a silently accepted value or gigabytes of memory.
"""

from __future__ import annotations

import gzip
import json
import tracemalloc

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from metrics_core import cli
from metrics_core.errors import InputError
from metrics_core.inputs import loading as mio
from metrics_core.metrics.multilabel import (
    PostLabels,
    decision_labels,
    multilabel_metrics,
    post_matrix,
)

HEADER = "post_id,criterion,has_evidence,p_has_evidence,sent_uid,score,is_gold,fold"
ROWS = ["p1,A,1,0.7,s1,0.5,1,0", "p1,A,1,0.7,s2,0.1,0,0", "p2,A,0,0.2,s1,0.3,0,1"]


def long_csv(rows=ROWS, *, newline="\n") -> bytes:
    return (newline.join([HEADER, *rows]) + newline).encode()


def long_frame() -> pd.DataFrame:
    return pd.DataFrame({"post_id": ["p1", "p1", "p2"], "criterion": "A",
                         "has_evidence": [1, 1, 0], "p_has_evidence": [0.7, 0.7, 0.2],
                         "sent_uid": ["s1", "s2", "s1"], "score": [0.5, 0.1, 0.3],
                         "is_gold": [1, 0, 0]})


def own_post_rows(n: int) -> bytes:
    """A long table whose n queries each have their own post and their own criterion."""
    lines = [HEADER] + [f"post{i:06d},crit{i:06d},{i % 2},0.{i % 97:02d},s{i % 7},"
                        f"{(i % 13) / 10},{i % 2},{i % 5}" for i in range(n)]
    return ("\n".join(lines) + "\n").encode()


def load_error(source, **kwargs) -> InputError:
    with pytest.raises(InputError) as info:
        mio.load(source, **kwargs)
    return info.value


# ----------------------------------------------------------------------- line ends, bytes
def test_cr_only_line_ends_read_like_lf():
    # The header parse raised _csv.Error ("new-line character seen in unquoted field").
    cr = mio.load(long_csv(newline="\r"), queries_name="mac.csv").dataset
    lf = mio.load(long_csv(), queries_name="unix.csv").dataset
    assert cr.n_queries == lf.n_queries == 2 and cr.n_candidates == 3
    assert cr.score.tolist() == lf.score.tolist() == [0.5, 0.1, 0.3]
    assert mio.load(long_csv(newline="\r\n"), queries_name="dos.csv").dataset.n_candidates == 3


def test_random_bytes_named_csv():
    # Arrow's parse error quoted a line of random bytes as the message.
    data = np.random.default_rng(0).bytes(5000)
    err = load_error(data, queries_name="random.csv")
    assert err.file == "random.csv" and err.rule == "the file is not UTF-8 text"
    assert str(err).isprintable()


def test_utf16_file_says_so():
    err = load_error(long_csv().decode().encode("utf-16"), queries_name="excel.csv")
    assert err.rule == "the file is UTF-16 text; text files must be UTF-8"


def test_directory_is_named_a_directory(tmp_path):
    (tmp_path / "data.csv").mkdir()
    err = load_error(tmp_path / "data.csv")
    assert err.rule == "is a directory, not a file" and err.file.endswith("data.csv")


@pytest.mark.parametrize("cut", [20, 60, -10])
def test_broken_gzip(cut):
    data = gzip.compress(long_csv())
    err = load_error(data[:cut], queries_name="long.csv.gz")
    assert err.file == "long.csv.gz"
    assert "cannot read the file" in err.rule or "gzip" in err.rule


def test_parser_errors_are_input_errors_with_printable_text():
    bad = long_csv([ROWS[0], 'p1,A,1,0.7,"s2\x01,0.1', ROWS[2]])
    err = load_error(bad, queries_name="broken.csv")
    assert err.file == "broken.csv" and str(err).isprintable()


# ------------------------------------------------------------------------------ values
def test_integer_overflow_is_rejected():
    # 99999999999999999999 was read as 1e20 and cast to int64: -9223372036854775808.
    rows = [*ROWS[:2], "p2,A,0,0.2,s1,0.3,0,99999999999999999999"]
    err = load_error(long_csv(rows), queries_name="fold.csv")
    assert (err.file, err.column, err.rows) == ("fold.csv", "fold", [3])
    assert err.rule == "values must be integers of magnitude at most 2^53 = 9007199254740992"
    # 2^53 itself is fine
    rows[2] = f"p2,A,0,0.2,s1,0.3,0,{2**53}"
    assert mio.load(long_csv(rows), queries_name="ok.csv").dataset.fold.max() == 2**53


def test_uint64_parquet_rank_overflow(tmp_path):
    frame = long_frame().assign(rank=np.array([1, 2**63 + 5, 1], dtype=np.uint64))
    frame.to_parquet(tmp_path / "rank.parquet")
    err = load_error(tmp_path / "rank.parquet")
    assert (err.column, err.rows) == ("rank", [2]) and "2^53" in err.rule


@pytest.mark.parametrize("column", ["score", "p_has_evidence", "is_gold", "fold"])
def test_dates_where_numbers_belong(tmp_path, column):
    # A timestamp score was read as nanoseconds since 1970.
    frame = long_frame().assign(fold=[0, 0, 1])
    frame[column] = pd.to_datetime(["2020-01-01", "2020-01-01", "2022-01-01"])
    frame.to_parquet(tmp_path / "ts.parquet")
    err = load_error(tmp_path / "ts.parquet")
    assert (err.file, err.column) == ("ts.parquet", column)
    assert err.rule == "values must be numbers, not dates or times" and err.n_rows == 3
    assert "datetime64" in err.hint


def test_struct_ids_in_parquet(tmp_path):
    table = pa.Table.from_pandas(long_frame().drop(columns="sent_uid"), preserve_index=False)
    table = table.append_column("sent_uid", pa.array([{"a": 5}, {"a": 6}, {"a": 5}]))
    pq.write_table(table, tmp_path / "struct.parquet")
    err = load_error(tmp_path / "struct.parquet")
    assert (err.column, err.n_rows) == ("sent_uid", 3)
    assert err.rule == "values must be single values, not nested objects or lists"


def test_nested_json_ids_are_rejected_once():
    lines = [json.dumps({**row, "post_id": {"a": 5} if i < 2 else ["x"]})
             for i, row in enumerate(long_frame().to_dict("records"))]
    err = load_error("\n".join(lines).encode(), queries_name="nested.jsonl")
    # one error (the long table's query and candidate checks do not repeat it)
    assert (err.file, err.column, err.rows) == ("nested.jsonl", "post_id", [1, 2, 3])
    assert err.rule == "values must be single values, not nested objects or lists"


def test_nested_json_number_is_one_error():
    rows = long_frame().to_dict("records")
    rows[1]["score"] = [0.1, 0.2]
    data = "\n".join(json.dumps(r) for r in rows).encode()
    err = load_error(data, queries_name="list.jsonl")
    assert (err.column, err.rows) == ("score", [2])
    assert err.rule == "values must be single values, not nested objects or lists"


# ------------------------------------------------------------------------------ limits
def test_limits_defaults_and_validation():
    limits = mio.Limits()
    assert (limits.max_decompressed_bytes, limits.max_rows, limits.max_columns,
            limits.max_cell_bytes) == (1 << 30, 50_000_000, 200, 1 << 20)
    with pytest.raises(AttributeError):
        limits.max_rows = 5  # frozen
    for bad in (0, -1, True, 2.5, "10"):
        with pytest.raises(ValueError, match="max_rows must be a positive integer"):
            mio.Limits(max_rows=bad)
    with pytest.raises(TypeError, match="limits must be a Limits"):
        mio.read_table(long_csv(), name="x.csv", limits={"max_rows": 5})


def test_gzip_bomb_stops_at_the_limit_without_expanding():
    rows = b"".join(b"p%d,A,1,0.5,s1,0.1,1,0\n" % (i % 1000) for i in range(400_000))
    bomb = gzip.compress(HEADER.encode() + b"\n" + rows, compresslevel=9)
    assert len(bomb) < len(rows) / 50  # ~9.6 MB of text
    limits = mio.Limits(max_decompressed_bytes=4 << 20)
    tracemalloc.start()
    try:
        err = load_error(bomb, queries_name="bomb.csv.gz", limits=limits)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert err.file == "bomb.csv.gz"
    assert err.rule == "content exceeds the size limit of 4,194,304 bytes (after decompression)"
    assert peak < 4 * len(bomb) + (4 << 20)  # chunks of 1 MiB, never the whole content


def test_row_limit_before_parsing():
    data = long_csv()
    err = load_error(data, queries_name="rows.csv", limits=mio.Limits(max_rows=2))
    assert err.rule == "more than 2 rows: the row limit"
    assert mio.load(data, queries_name="rows.csv", limits=mio.Limits(max_rows=3))


def test_column_limit_from_the_header():
    err = load_error(long_csv(), queries_name="cols.csv", limits=mio.Limits(max_columns=7))
    assert err.rule == "8 columns: more than the limit of 7"


def test_parquet_limits_from_metadata(tmp_path):
    long_frame().to_parquet(tmp_path / "long.parquet")
    path = tmp_path / "long.parquet"
    assert load_error(path, limits=mio.Limits(max_rows=2)).rule == \
        "3 rows: more than the limit of 2"
    assert load_error(path, limits=mio.Limits(max_columns=6)).rule == \
        "7 columns: more than the limit of 6"
    assert "size limit of 100 bytes" in load_error(
        path, limits=mio.Limits(max_decompressed_bytes=100)).rule


@pytest.mark.parametrize("quoted", [True, False])
def test_cell_over_the_limit_names_column_and_row(quoted):
    # Arrow said "straddling object straddles two block boundaries", naming nothing.
    big = "x" * (2 << 20)
    cell = f'"{big}"' if quoted else big
    data = long_csv([ROWS[0], f"p1,A,1,0.7,{cell},0.1,0,0", ROWS[2]])
    err = load_error(data, queries_name="big.csv")
    assert (err.file, err.column, err.rows) == ("big.csv", "sent_uid", [2])
    assert err.rule == "values must be at most 1,048,576 bytes (the cell size limit)"
    # a long but allowed cell (1.5 MB, above Arrow's 1 MiB block) reads fine
    ok = long_csv([ROWS[0], f"p1,A,1,0.7,{'y' * 1_500_000},0.1,0,0", ROWS[2]])
    assert mio.load(ok, queries_name="ok.csv", limits=mio.Limits(max_cell_bytes=2 << 20))


def test_cell_limit_in_jsonl_and_parquet(tmp_path):
    frame = long_frame()
    frame.loc[1, "sent_uid"] = "z" * 50
    limits = mio.Limits(max_cell_bytes=10)
    data = "\n".join(json.dumps(r) for r in frame.to_dict("records")).encode()
    err = load_error(data, queries_name="c.jsonl", limits=limits)
    assert (err.column, err.rows) == ("sent_uid", [2])
    frame.to_parquet(tmp_path / "c.parquet")
    err = load_error(tmp_path / "c.parquet", limits=limits)
    assert (err.column, err.rows) == ("sent_uid", [2]) and "at most 10 bytes" in err.rule


def test_endless_line_is_stopped_while_scanning():
    data = HEADER.encode() + b"\n" + b"0" * (5 << 20)
    err = load_error(data, queries_name="line.csv",
                     limits=mio.Limits(max_cell_bytes=1000, max_columns=10))
    assert err.rule.startswith("a line is longer than 20,030 bytes")


def test_quoted_sentences_with_line_breaks_still_read():
    text = "sentence " * 200_000  # 1.8 MB over several lines: one record, many blocks
    rows = [f'{r},"{text}\n{text}"' for r in ROWS]
    data = (HEADER + ",sentence\n" + "\n".join(rows) + "\n").encode()
    ds = mio.load(data, queries_name="s.csv", limits=mio.Limits(max_cell_bytes=4 << 20)).dataset
    assert ds.n_candidates == 3 and len(ds.sentence[0]) == 2 * len(text) + 1


def test_cli_reports_hostile_input_with_status_2(tmp_path, capsys):
    path = tmp_path / "fold.csv"
    path.write_bytes(long_csv([*ROWS[:2], "p2,A,0,0.2,s1,0.3,0,99999999999999999999"]))
    assert cli.main(["evaluate", str(path), "--out", str(tmp_path / "o.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("metrics-core: fold.csv: column 'fold': values must be integers")
    assert "Traceback" not in err


# ------------------------------------------------------------------------------ memory
def test_memory_follows_the_queries_not_posts_times_criteria():
    # 5,000 queries, each with its own post and criterion: the dense posts x criteria lookup
    # table took 25M cells (400 MB); now every structure is proportional to the input.
    data = own_post_rows(5_000)
    mio.load(own_post_rows(20), queries_name="warm.csv")  # imports and caches outside
    tracemalloc.start()
    try:
        loaded = mio.load(data, queries_name="own.csv")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    ds = loaded.dataset
    assert (ds.n_queries, len(ds.posts), len(ds.criteria)) == (5_000, 5_000, 5_000)
    assert peak <= 20 * len(data), f"peak {peak:,} B for {len(data):,} B of input"
    Y, Yhat, mask = post_matrix(ds, decision_labels(ds))
    assert Y.shape == (5_000, 5_000) and Y.data.size == Yhat.data.size == 5_000
    m = multilabel_metrics(Y, Yhat, mask)
    assert (m["n_posts"], m["n_criteria"], m["n_cells"]) == (5_000, 5_000, 5_000)


def test_dataset_order_and_lookup_match_the_dense_definition():
    # Canonical order is by (post, criterion); candidates find their query by binary search.
    data = long_csv(["p2,B,1,0.9,s1,0.4,1,0", "p1,B,0,0.1,s1,0.2,0,0", "p2,A,0,0.3,s9,0.3,0,0",
                     "p1,A,1,0.7,s2,0.1,0,0", "p1,A,1,0.7,s1,0.5,1,0"])
    ds = mio.load(data, queries_name="order.csv").dataset
    assert list(zip(ds.post_id, ds.criterion, strict=True)) == [
        ("p1", "A"), ("p1", "B"), ("p2", "A"), ("p2", "B")]
    assert ds.offsets.tolist() == [0, 2, 3, 4, 5]
    assert ds.sent_uid.tolist() == ["s1", "s2", "s1", "s9", "s1"]
    assert ds.score.tolist() == [0.5, 0.1, 0.2, 0.3, 0.4]


def test_post_labels_equal_the_dense_matrices():
    rng = np.random.default_rng(3)
    Y = rng.integers(0, 2, (30, 7))
    Yhat = rng.integers(0, 2, (30, 7))
    mask = rng.random((30, 7)) < 0.7
    mask[4] = False  # a post with no cell
    row, col = np.nonzero(mask)
    sparse = [PostLabels(row, col, a[row, col], a.shape) for a in (Y, Yhat, mask)]
    assert multilabel_metrics(*sparse) == multilabel_metrics(Y, Yhat, mask)
    assert np.array_equal(np.asarray(sparse[0]), np.where(mask, Y, 0))
    with pytest.raises(ValueError, match="same cells"):
        multilabel_metrics(sparse[0], PostLabels(row[:-1], col[:-1], Yhat[row, col][:-1],
                                                 Y.shape))
