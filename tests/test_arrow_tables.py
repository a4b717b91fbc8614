"""An Arrow table read already counts as its Parquet file (metrics_core.inputs.loading)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from metrics_core.errors import InputError
from metrics_core.inputs import loading as mio
from metrics_core.inputs.limits import Limits
from tests.conftest import random_frames


@pytest.fixture
def parquet_files(tmp_path):
    q, c = random_frames(n_posts=40, seed=11)
    q.loc[q.index[:3], "p_has_evidence"] = np.nan  # excluded queries: named by file and row
    c.loc[c.index[5:7], "score"] = np.nan  # excluded candidates
    qp, cp = tmp_path / "q.parquet", tmp_path / "c.parquet"
    q.to_parquet(qp, index=False)
    c.to_parquet(cp, index=False)
    return qp, cp


def test_read_table_takes_an_arrow_table_as_a_parquet_file_read_already(parquet_files):
    import pyarrow.parquet as pq

    qp, _ = parquet_files
    table = pq.read_table(qp)
    pd.testing.assert_frame_equal(mio.read_table(table, name=qp.name), mio.read_table(qp))
    longest = max(len(str(v)) for v in pd.read_parquet(qp)["post_id"])
    with pytest.raises(InputError, match=f"at most {longest - 1} bytes") as err:
        mio.read_table(table, name=qp.name, limits=Limits(max_cell_bytes=longest - 1))
    assert err.value.file == qp.name
