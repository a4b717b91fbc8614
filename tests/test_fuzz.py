"""Fuzzing the loader and the CLI with mutated copies of small valid files (contract §2).

Whatever the bytes, :func:`metrics_core.inputs.loading.load` either loads the data or raises
:class:`~metrics_core.errors.InputError`, and ``metrics-core evaluate`` exits with status 0 or 2
and prints no traceback. Mutations: truncation, byte flips, inserted and deleted bytes,
delimiter changes, line-end and encoding changes (UTF-16, Latin-1, BOM), cell value changes
(text, huge integers, dates, JSON objects, empty), and column type changes in Parquet. The
profile is fixed and derandomised so a CI run takes well under a minute and is reproducible.
"""

from __future__ import annotations

import gzip
import io
import re
import zlib

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from metrics_core import cli
from metrics_core.demo import make_synthetic
from metrics_core.errors import InputError
from metrics_core.inputs import loading as mio

FUZZ = settings(max_examples=500, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow, HealthCheck.data_too_large])


def _frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Three posts x two criteria, a few candidates each, one query without candidates."""
    q, c = make_synthetic(3, n_criteria=2, seed=7)
    c = c.groupby(["post_id", "criterion"], sort=False).head(3).reset_index(drop=True)
    c = c[~((c["post_id"] == q["post_id"].iloc[-1]) & (c["criterion"] == q["criterion"].iloc[-1]))]
    return q, c.reset_index(drop=True)


Q, C = _frames()
LONG = Q.merge(C, on=["post_id", "criterion"], how="left")


def _parquet(frame: pd.DataFrame) -> bytes:
    buf = io.BytesIO()
    frame.to_parquet(buf, index=False)
    return buf.getvalue()


def _jsonl(frame: pd.DataFrame) -> bytes:
    return frame.to_json(orient="records", lines=True).encode()


#: name -> (queries file, candidates file or None); the names pick the format.
BASES: dict[str, tuple[tuple[str, bytes], tuple[str, bytes] | None]] = {
    "two csv": (("q.csv", Q.to_csv(index=False).encode()),
                ("c.csv", C.to_csv(index=False).encode())),
    "long csv": (("long.csv", LONG.to_csv(index=False).encode()), None),
    "long tsv": (("long.tsv", LONG.to_csv(index=False, sep="\t").encode()), None),
    "long csv.gz": (("long.csv.gz", gzip.compress(LONG.to_csv(index=False).encode())), None),
    "long jsonl": (("long.jsonl", _jsonl(LONG)), None),
    "two jsonl": (("q.jsonl", _jsonl(Q)), ("c.jsonl", _jsonl(C))),
    "long parquet": (("long.parquet", _parquet(LONG)), None),
    "two parquet": (("q.parquet", _parquet(Q)), ("c.parquet", _parquet(C))),
}

CELLS = ["", "nan", "inf", "-inf", "-1", "2", "0.5", "1e400", "99999999999999999999",
         "-99999999999999999999", "2020-01-01", "true", "abc", '"', '""', "{}", "[1, 2]",
         '{"a": 5}', "null", "1,5", "\x00", "é", "\u2028", "0x10", " 1 "]


@st.composite
def byte_mutation(draw, data: bytes) -> bytes:
    kind = draw(st.sampled_from(["truncate", "flip", "insert", "delete", "duplicate"]))
    n = len(data)
    if n == 0:
        return data
    at = draw(st.integers(0, n - 1))
    if kind == "truncate":
        return data[:at]
    if kind == "flip":
        out = bytearray(data)
        for _ in range(draw(st.integers(1, 8))):
            out[draw(st.integers(0, n - 1))] = draw(st.integers(0, 255))
        return bytes(out)
    if kind == "insert":
        return data[:at] + draw(st.binary(min_size=1, max_size=16)) + data[at:]
    if kind == "delete":
        return data[:at] + data[at + draw(st.integers(1, 64)):]
    end = min(n, at + draw(st.integers(1, 200)))
    return data[:end] + data[at:end] + data[end:]


@st.composite
def text_mutation(draw, data: bytes) -> bytes:
    """Mutations of delimited text or JSON Lines as text."""
    text = data.decode("utf-8")
    kind = draw(st.sampled_from(["delimiter", "line ends", "encoding", "cell", "cell",
                                 "header", "drop line"]))
    if kind == "delimiter":
        old = draw(st.sampled_from([",", "\t", ":", '"']))
        return text.replace(old, draw(st.sampled_from([";", "\t", "|", " ", ",", ""]))).encode()
    if kind == "line ends":
        return text.replace("\n", draw(st.sampled_from(["\r", "\r\n", "\n\n", "\x85"]))).encode()
    if kind == "encoding":
        encoding = draw(st.sampled_from(["utf-16", "utf-16-le", "utf-32", "latin-1",
                                         "utf-8-sig", "cp1252"]))
        return (text.replace("p0", "pé") if encoding in ("latin-1", "cp1252") else
                text).encode(encoding, errors="replace")
    lines = text.split("\n")
    if kind == "header":
        header = lines[0]
        names = re.findall(r"[A-Za-z_]+", header)
        if names:
            lines[0] = header.replace(draw(st.sampled_from(names)),
                                      draw(st.sampled_from(["", "post_id", "score", "x",
                                                            "criterion", "p"])), 1)
        return "\n".join(lines).encode()
    if len(lines) < 2:
        return data
    i = draw(st.integers(1, len(lines) - 1))
    if kind == "drop line":
        return "\n".join(lines[:i] + lines[i + 1:]).encode()
    # a cell (CSV / TSV field or JSON value) becomes another value
    tokens = list(re.finditer(r'"[^"\n]*"|[^,\t\n:{}]+', lines[i]))
    if tokens:
        token = draw(st.sampled_from(tokens))
        value = draw(st.sampled_from(CELLS))
        lines[i] = lines[i][:token.start()] + value + lines[i][token.end():]
    return "\n".join(lines).encode()


@st.composite
def parquet_mutation(draw, data: bytes) -> bytes:
    """A column of a Parquet table stored with another type."""
    table = pq.read_table(io.BytesIO(data))
    name = draw(st.sampled_from(table.column_names))
    n = table.num_rows
    new = draw(st.sampled_from(["timestamp", "struct", "list", "string", "bool", "uint64",
                                "dictionary", "null", "float", "huge"]))
    column = {
        "timestamp": lambda: pa.array(pd.to_datetime(np.arange(n), unit="D")),
        "struct": lambda: pa.array([{"a": i} for i in range(n)]),
        "list": lambda: pa.array([[i, i] for i in range(n)]),
        "string": lambda: pc_string(table.column(name)),
        "bool": lambda: pa.array([bool(i % 2) for i in range(n)]),
        "uint64": lambda: pa.array([2**64 - 1 - i for i in range(n)], type=pa.uint64()),
        "dictionary": lambda: pc_string(table.column(name)).fill_null("").dictionary_encode(),
        "null": lambda: pa.nulls(n),
        "float": lambda: pa.array(np.linspace(-1e300, 1e300, n)),
        "huge": lambda: pa.array([2**62 + i for i in range(n)], type=pa.int64()),
    }[new]()
    table = table.set_column(table.column_names.index(name), name, column)
    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


def pc_string(column) -> pa.Array:
    return pa.array([None if v is None else str(v) for v in column.to_pylist()], type=pa.string())


@st.composite
def mutated_input(draw):
    base = draw(st.sampled_from(sorted(BASES)))
    files = [f for f in BASES[base] if f is not None]
    which = draw(st.integers(0, len(files) - 1))
    name, data = files[which]
    for _ in range(draw(st.integers(1, 3))):
        if name.endswith(".parquet"):
            kind = draw(st.sampled_from(["bytes", "types", "types"]))
            if kind == "types":
                try:
                    pq.read_table(io.BytesIO(data))
                except (pa.ArrowException, OSError):
                    kind = "bytes"
        elif name.endswith(".gz"):
            kind = draw(st.sampled_from(["bytes", "inner"]))
        else:
            try:
                data.decode("utf-8")
                kind = draw(st.sampled_from(["bytes", "text", "text"]))
            except UnicodeDecodeError:
                kind = "bytes"
        if kind == "types":
            data = draw(parquet_mutation(data))
        elif kind == "text":
            data = draw(text_mutation(data))
        elif kind == "inner":
            try:
                inner = gzip.decompress(data)
                inner.decode("utf-8")
                data = gzip.compress(draw(text_mutation(inner)))
            except (OSError, EOFError, UnicodeDecodeError, ValueError, zlib.error):
                data = draw(byte_mutation(data))
        else:
            data = draw(byte_mutation(data))
    files[which] = (name, data)
    return files


def _write(tmp_path, files) -> list[str]:
    paths = []
    for name, data in files:
        path = tmp_path / name
        path.write_bytes(data)
        paths.append(str(path))
    return paths


@FUZZ
@given(files=mutated_input())
def test_mutated_files_load_or_raise_input_error(files, tmp_path_factory, capsys):
    tmp_path = tmp_path_factory.mktemp("fuzz")
    paths = _write(tmp_path, files)
    try:
        loaded = mio.load(*paths)
    except InputError as err:
        message = str(err)
        assert message and err.to_dict()["message"] == message
        assert any(p.rsplit("/", 1)[-1] in message for p in paths) or err.file is None
    else:
        assert loaded.dataset.n_queries >= 1
    status = cli.main(["evaluate", *paths, "--out", str(tmp_path / "out.json"),
                       "--bootstrap", "0", "--quiet"])
    out, err_text = capsys.readouterr()
    assert status in (0, 2), err_text
    assert "Traceback" not in err_text + out
    if status == 2:
        assert err_text.startswith("metrics-core: ")


@pytest.mark.parametrize("base", sorted(BASES))
def test_unmutated_bases_load(base, tmp_path, capsys):
    paths = _write(tmp_path, [f for f in BASES[base] if f is not None])
    ds = mio.load(*paths).dataset
    assert (ds.n_queries, ds.n_candidates) == (len(Q), len(C))
    assert cli.main(["evaluate", *paths, "--out", str(tmp_path / "o.json"), "--bootstrap", "0",
                     "--quiet"]) == 0
    assert capsys.readouterr().err == ""
