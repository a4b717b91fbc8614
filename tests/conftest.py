"""Shared fixtures: small random data sets with ties, built the way users bring them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, settings

# No property test may fail because a machine is slow: no per-example deadline (Hypothesis'
# default, 200 ms, fails an example that a loaded machine runs late) and no "too slow" check
# on generating data. A test's own @settings still sets its number of examples.
settings.register_profile("no_timing", deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("no_timing")


def random_frames(n_posts: int = 40, criteria=("C1", "C2", "C3"), *, seed: int = 0,
                  positive_rate: float = 0.3, max_candidates: int = 8, tie_share: float = 0.2,
                  with_fold: bool = True):
    """Queries and candidates frames with ties in p and score, missed gold and empty queries."""
    rng = np.random.default_rng(seed)
    posts = [f"p{i:03d}" for i in range(n_posts)]
    rows = []
    for i, post in enumerate(posts):
        for c in criteria:
            y = int(rng.random() < positive_rate)
            p = float(np.clip(rng.normal(0.35 + 0.3 * y, 0.2), 0, 1))
            if rng.random() < tie_share:
                p = round(p, 1)
            rows.append((post, c, y, p, i % 5))
    queries = pd.DataFrame(rows, columns=["post_id", "criterion", "has_evidence",
                                          "p_has_evidence", "fold"])
    cands = []
    n_gold = []
    for post, c, y in queries[["post_id", "criterion", "has_evidence"]].itertuples(index=False):
        n = int(rng.integers(1, max_candidates + 1))
        gold = np.zeros(n, dtype=int)
        missed = 0
        if y:
            g = int(rng.integers(1, min(3, n) + 1))
            gold[rng.choice(n, g, replace=False)] = 1
            missed = int(rng.random() < 0.15)
        n_gold.append(int(gold.sum()) + missed)
        scores = rng.normal(gold * 1.5, 1.0)
        scores = np.where(rng.random(n) < tie_share, np.round(scores), scores)
        for j in range(n):
            cands.append((post, c, f"s{j:02d}", float(scores[j]), int(gold[j])))
    queries["n_gold"] = n_gold
    if not with_fold:
        queries = queries.drop(columns="fold")
    candidates = pd.DataFrame(cands, columns=["post_id", "criterion", "sent_uid", "score",
                                              "is_gold"])
    return queries, candidates


@pytest.fixture(scope="module")
def cluster():
    """A local Dask cluster of two single-threaded workers in this process, and its client
    (the Dask engine's tests)."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=":0") as local, Client(local) as client:
        yield local, client


@pytest.fixture
def frames():
    return random_frames()
