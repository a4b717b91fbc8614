"""Parquet inputs read on a thread while the command line imports (metrics_core.inputs.parquet).

The prefetch is a speed-up only: a loaded data set, its exclusions, warnings and every error
message must be what reading the paths gives, and whatever the prefetch cannot read (a broken
file, a limit, a file changed since) is read again by the loader and reported as before.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pytest

from metrics_core import cli
from metrics_core.errors import InputError
from metrics_core.inputs import loading as mio
from metrics_core.inputs.limits import DEFAULT_LIMITS, Limits
from metrics_core.inputs.parquet import Prefetch
from tests.conftest import random_frames
from tests.test_io import assert_same


@pytest.fixture
def parquet_files(tmp_path):
    q, c = random_frames(n_posts=40, seed=11)
    q.loc[q.index[:3], "p_has_evidence"] = np.nan  # excluded queries: named by file and row
    c.loc[c.index[5:7], "score"] = np.nan  # excluded candidates
    qp, cp = tmp_path / "q.parquet", tmp_path / "c.parquet"
    q.to_parquet(qp, index=False)
    c.to_parquet(cp, index=False)
    return qp, cp


def _outcome(*args, **kwargs):
    try:
        return "ok", mio.load(*args, **kwargs)
    except InputError as err:
        return "error", err.render()


def test_a_prefetched_table_loads_as_its_file(parquet_files):
    qp, cp = parquet_files
    prefetch = Prefetch([qp, cp], DEFAULT_LIMITS)
    tq, tc = prefetch.table(qp), prefetch.table(cp)
    assert tq is not None and tc is not None
    got = mio.load(tq, tc, queries_name=qp.name, candidates_name=cp.name)
    want = mio.load(qp, cp)
    assert_same(got.dataset, want.dataset)
    pd.testing.assert_frame_equal(got.exclusions, want.exclusions)
    assert {qp.name, cp.name} == set(want.exclusions["file"])  # both files' rows excluded
    assert got.warnings == want.warnings and got.column_map == want.column_map
    assert got.dataset.meta == want.dataset.meta
    # The repeated ids come as dictionaries, as read_table reads them from the path.
    assert str(tc.schema.field("post_id").type).startswith("dictionary")
    assert prefetch.table(qp) is None  # handed over once


def test_the_command_line_writes_the_same_document_with_and_without_it(parquet_files,
                                                                        tmp_path, monkeypatch):
    qp, cp = parquet_files
    outs = []
    for prefetched in (True, False):
        if not prefetched:
            monkeypatch.setattr(cli, "_prefetch", lambda args: None)
        out = tmp_path / f"m{prefetched}.json"
        assert cli.main(["evaluate", str(qp), str(cp), "--bootstrap", "0", "--quiet",
                         "--out", str(out)]) == 0
        doc = json.loads(out.read_text())
        doc["run"].pop("created", None)
        outs.append(doc)
    assert outs[0] == outs[1]
    assert outs[0]["run"]["inputs"][0]["file"] == qp.name


@pytest.mark.parametrize("case", ["broken", "limit", "csv"])
def test_what_it_cannot_read_is_read_again_and_reported_as_before(parquet_files, tmp_path,
                                                                     monkeypatch, capsys,
                                                                     case):
    qp, cp = parquet_files
    flags: list[str] = []
    if case == "broken":
        cp.write_bytes(b"PAR1" + os.urandom(300) + b"PAR1")
    elif case == "limit":
        flags = ["--max-rows", "50"]
    else:
        csv = tmp_path / "q.csv"
        pd.read_parquet(qp).to_csv(csv, index=False)
        qp = csv
    limits = Limits(max_rows=50) if case == "limit" else DEFAULT_LIMITS
    prefetch = Prefetch([qp, cp], limits)
    unread = {"broken": [cp], "limit": [qp, cp], "csv": [qp]}[case]
    for path in (qp, cp):
        assert (prefetch.table(path) is None) == (path in unread)
    messages = []
    for prefetched in (True, False):
        if not prefetched:
            monkeypatch.setattr(cli, "_prefetch", lambda args: None)
        code = cli.main(["evaluate", str(qp), str(cp), "--bootstrap", "0", "--quiet",
                         "--out", str(tmp_path / "m.json"), *flags])
        messages.append((code, capsys.readouterr().err))
    assert messages[0] == messages[1]
    if case != "csv":
        assert messages[0][0] == cli.EXIT_INPUT
        assert ("c.parquet" if case == "broken" else "q.parquet") in messages[0][1]


def test_a_file_changed_after_the_read_is_read_again(parquet_files):
    qp, cp = parquet_files
    prefetch = Prefetch([qp, cp], DEFAULT_LIMITS)
    prefetch._thread.join()
    frame = pd.read_parquet(cp)
    frame.iloc[:-1].to_parquet(cp, index=False)  # another content, another size
    assert prefetch.table(cp) is None
    assert prefetch.table(qp) is not None


def test_read_table_takes_an_arrow_table_as_a_parquet_file_read_already(parquet_files):
    import pyarrow.parquet as pq

    qp, _ = parquet_files
    table = pq.read_table(qp)
    pd.testing.assert_frame_equal(mio.read_table(table, name=qp.name), mio.read_table(qp))
    longest = max(len(str(v)) for v in pd.read_parquet(qp)["post_id"])
    with pytest.raises(InputError, match=f"at most {longest - 1} bytes") as err:
        mio.read_table(table, name=qp.name, limits=Limits(max_cell_bytes=longest - 1))
    assert err.value.file == qp.name
