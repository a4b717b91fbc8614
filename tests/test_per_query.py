"""The per-query table (``--per-query``, the app's download): a value a query has no part in
is an empty cell, so each column's mean over its cells is the reported value (contract §11)."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from metrics_core.cli import main
from metrics_core.config import EvalConfig
from metrics_core.data.dataset import Dataset
from metrics_core.report import Evaluator
from metrics_core.report.export import csv_bytes
from tests.conftest import random_frames

COLUMNS = ["post_id", "criterion", "has_evidence", "p_has_evidence", "n_candidates", "n_gold",
           "fold", "state", "predicted", "selected_k", "evidence_hits", "evidence_recall",
           "evidence_precision", "recall@10", "ndcg@10", "mrr"]
MEANS = ("recall@10", "ndcg@10", "mrr", "evidence_recall", "evidence_precision")


@pytest.fixture(scope="module")
def evaluator():
    q, c = random_frames(n_posts=50, seed=21)
    return Evaluator(Dataset.from_frames(q, c))


@pytest.mark.parametrize(("ranking", "evidence"), [
    ("positives_only", "positives_only"), ("all_queries", "all_queries"),
    ("positives_only", "all_queries")])
def test_column_means_are_the_reported_values(evaluator, ranking, evidence):
    run = evaluator.evaluate(EvalConfig(bootstrap=0, ranking_protocol=ranking,
                                        evidence_protocol=evidence))
    table = pd.read_csv(io.BytesIO(csv_bytes(run.per_query)))
    assert list(table.columns) == COLUMNS
    negative = table["has_evidence"] == 0
    for name in MEANS:
        protocol = evidence if name.startswith("evidence") else ranking
        if protocol == "positives_only":  # before: 0.0 for every query without evidence
            assert table.loc[negative, name].isna().all(), name
        else:
            assert table[name].notna().all(), name
        record = run.record(name)
        assert table[name].mean() == pytest.approx(record.value, abs=1e-12), name
        assert table[name].notna().sum() == record.n, name


def test_cli_per_query_csv_has_empty_cells_for_negatives(tmp_path):
    q, c = random_frames(n_posts=30, seed=22)
    qp, cp = tmp_path / "q.csv", tmp_path / "c.csv"
    q.to_csv(qp, index=False)
    c.to_csv(cp, index=False)
    out, pq = tmp_path / "m.json", tmp_path / "pq.csv"
    assert main(["evaluate", str(qp), str(cp), "--bootstrap", "0", "--quiet", "--out",
                 str(out), "--per-query", str(pq)]) == 0
    lines = pq.read_text().splitlines()
    header = lines[0].split(",")
    row = next(x.split(",") for x in lines[1:] if x.split(",")[header.index(
        "has_evidence")] == "0")
    for name in ("recall@10", "ndcg@10", "mrr", "evidence_recall", "evidence_precision"):
        assert row[header.index(name)] == "", name
    frame = pd.read_csv(pq)
    assert np.isfinite(frame.loc[frame["has_evidence"] == 1, "recall@10"]).all()
