"""The run's kernel values (evaluation/kernels.RunKernels): reductions the run has already made
(the ranking summary, the K summary) are read, not made again, and give the same numbers."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from metrics_core import registry
from metrics_core.config import EvalConfig
from metrics_core.data.dataset import Dataset
from metrics_core.evaluation import kernels, sections
from metrics_core.metrics.dynamic_k import KStats
from metrics_core.metrics.ranking import RankingSummary
from metrics_core.report import Evaluator
from tests.conftest import random_frames


def _same(a, b) -> bool:
    """Equal to the last bit (NaN equal to NaN), and of the same type (a sum stays whole)."""
    if a is None or b is None:
        return a is b
    if type(a) is not type(b):
        return False
    return (math.isnan(a) and math.isnan(b)) or a == b


def _per_query_names(inter):
    return [name for spec, name in kernels.record_order(registry.kernels(), inter)
            if spec.kernel.per_query]


@pytest.mark.parametrize("protocol", ["positives_only", "all_queries"])
def test_the_run_s_reductions_equal_those_of_the_per_query_values(protocol):
    q, c = random_frames(n_posts=50, seed=5, positive_rate=0.35)
    ev = Evaluator(Dataset.from_frames(q, c))
    cfg = EvalConfig(bootstrap=0, ranking_protocol=protocol, evidence_protocol=protocol,
                     tau_neg=0.2, tau_pos=0.6)
    inter = ev.intermediate(cfg)
    bare = kernels.RunKernels(ev, inter)
    shared = kernels.RunKernels(ev, inter, ranking_summary=ev.ranking_summary(cfg),
                                k_summary=sections.k_summary(inter, ev.ds.y))
    names = _per_query_names(inter)
    assert {"recall@10", "mrr", "mean_k", "median_k", "p90_k", "workload",
            "workload_per_1000", "evidence_recall"} <= set(names)
    for name in names:
        got, want = shared.value(name), bare.value(name)
        assert got[1] == want[1] and got[2:] == want[2:], name
        assert _same(got[0], want[0]), (name, got[0], want[0])


def test_the_summaries_given_are_what_the_records_read():
    """A ranking mean and the K statistics come from the summaries handed over (planted
    values here), the other per-query kernels from their values."""
    q, c = random_frames(n_posts=20, seed=8)
    ev = Evaluator(Dataset.from_frames(q, c))
    cfg = EvalConfig(bootstrap=0)
    inter = ev.intermediate(cfg)
    summary = {name: RankingSummary(mean=0.123, std=0.0, median=0.0, p25=0.0, p75=0.0, n=7)
               for name in inter.rk}
    stats = KStats(n=3, mean=1.5, median=2.5, p90=3.5, min=0.0, max=9.0, workload=11,
                   workload_per_1000=4.5)
    k_summary = replace(sections.k_summary(inter, ev.ds.y), overall=stats)
    run = kernels.RunKernels(ev, inter, ranking_summary=summary, k_summary=k_summary)
    assert run.value("ndcg@5")[:2] == (0.123, 7)
    assert [run.value(n)[:2] for n in ("mean_k", "median_k", "p90_k", "workload",
                                       "workload_per_1000")] == [
        (1.5, 3), (2.5, 3), (3.5, 3), (11, 3), (4.5, 3)]
    rows = np.flatnonzero(inter.emask)
    assert run.value("evidence_recall")[:2] == (float(np.mean(inter.rec[rows])), rows.size)



def test_each_group_s_k_median_and_p90_from_counts_equal_numpy_s_to_the_last_bit():
    """The per-group tables' median and P90 of K are counted, not sorted per group: numpy's
    values on each group's K (as floats, as the tables held them), NaN for an empty group."""
    from metrics_core.evaluation import tables
    from metrics_core.metrics import dynamic_k

    rng = np.random.default_rng(9)
    for n, g in ((1, 1), (5, 3), (300, 10), (5000, 7)):
        k = np.where(rng.random(n) < 0.8, 0, rng.integers(1, 40, n)).astype(np.int64)
        codes = rng.integers(0, g, n)
        stats = dynamic_k.k_stats_by_group(k, codes, g)
        assert [s.n for s in stats] == np.bincount(codes, minlength=g).tolist()
        for i, s in enumerate(stats):
            group = k[codes == i].astype(np.float64)
            if not group.size:
                assert math.isnan(s.median) and math.isnan(s.p90)
                continue
            assert _same(s.median, float(np.median(group))), (n, g, i)
            assert _same(s.p90, float(np.percentile(group, 90))), (n, g, i)
    q, c = random_frames(n_posts=60, seed=3, positive_rate=0.3)
    ev = Evaluator(Dataset.from_frames(q, c))
    inter = ev.intermediate(EvalConfig(bootstrap=0, tau_neg=0.1, tau_pos=0.7))
    codes, names = tables.group_codes(ev, "criterion")
    got = kernels.group_values(ev, inter, "criterion", codes, len(names), "criterion")
    for i in range(len(names)):
        group = inter.k[codes == i].astype(np.float64)
        assert _same(float(got["median_k"][i]), float(np.median(group)))
        assert _same(float(got["p90_k"][i]), float(np.percentile(group, 90)))
