"""An evaluation's tables built on a helper thread (the command line's ``metrics_master.json``):
the same document, each table built once, and a failure reaching the reader in its own thread.
"""

from __future__ import annotations

import json
import threading

import pytest

from metrics_core.cli import evaluate
from metrics_core.config import EvalConfig
from metrics_core.data.dataset import Dataset
from metrics_core.evaluation.evaluator import Evaluator
from tests.conftest import random_frames


@pytest.fixture(scope="module")
def dataset():
    q, c = random_frames(n_posts=50, seed=21)
    return Dataset.from_frames(q, c)


def _document(evaluation) -> dict:
    doc = json.loads(evaluation.to_json())
    doc["run"].pop("created")
    return doc


def test_prefetched_tables_give_the_same_document(dataset):
    cfg = EvalConfig(bootstrap=50, seed=3)
    plain = _document(Evaluator(dataset).evaluate(cfg))
    evaluation = Evaluator(dataset).evaluate(cfg)
    thread = evaluation.prefetch(*evaluate._PREFETCHED_TABLES)
    got = _document(evaluation)
    thread.join()
    assert got == plain
    assert not any(callable(evaluation._tables[n]) for n in evaluate._PREFETCHED_TABLES)


def test_a_table_in_the_making_is_waited_for_not_built_twice(dataset):
    evaluation = Evaluator(dataset).evaluate(EvalConfig(bootstrap=0))
    started, release, calls = threading.Event(), threading.Event(), []
    build = evaluation._tables["gamma_sweep"]

    def slow():
        calls.append(threading.current_thread().name)
        started.set()
        release.wait(5)
        return build()

    evaluation._tables["gamma_sweep"] = slow
    thread = evaluation.prefetch("gamma_sweep")
    assert started.wait(5)
    reader = threading.Thread(target=lambda: calls.append(len(evaluation.gamma_sweep)))
    reader.start()
    release.set()
    reader.join(5)
    thread.join(5)
    assert calls[0] == "metrics_core-tables" and len(calls) == 2  # one build, one read
    assert calls[1] == len(build())


def test_a_failure_on_the_helper_reaches_the_reader(dataset):
    evaluation = Evaluator(dataset).evaluate(EvalConfig(bootstrap=0))
    attempts = []

    def broken():
        attempts.append(threading.current_thread().name)
        raise ValueError("table failed")

    evaluation._tables["decision_curve"] = broken
    evaluation.prefetch("decision_curve").join(5)
    with pytest.raises(ValueError, match="table failed"):
        _ = evaluation.decision_curve
    assert attempts == ["metrics_core-tables", threading.current_thread().name]
    with pytest.raises(KeyError, match="no table 'nonsense'"):
        evaluation.prefetch("nonsense")
