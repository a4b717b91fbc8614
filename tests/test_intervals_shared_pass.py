"""The score-ordered pass over the kept count matrix shared between threads: the thread that
started it and a caller that would wait for it take its batches in turn; the replicates are
the one thread's, bit for bit, and a failure on either thread is raised to the other."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from metrics_core.config import EvalConfig
from metrics_core.data.dataset import Dataset
from metrics_core.evaluation import intervals
from metrics_core.evaluation.evaluator import Evaluator
from metrics_core.metrics.curve_replicates import (
    ScoreLayout,
    batch_replicates,
    curve_replicates,
    joined,
)
from metrics_core.metrics.uncertainty import Bootstrap, DrawnCounts
from tests.conftest import random_frames


def _layout(n, seed):
    rng = np.random.default_rng(seed)
    p = np.sort(np.round(rng.random(n), 2))  # ties
    y = (rng.random(n) < p).astype(int)
    return ScoreLayout(p, y), [np.flatnonzero(np.arange(n) % 3 == g) for g in range(3)]


def test_two_threads_taking_batches_give_the_one_thread_replicates():
    n, resamples, step = 300, 230, 16
    layout, groups = _layout(n, 4)
    grid = np.linspace(0.0, 1.0, 11)
    kwargs = {"groups": groups, "roc_grid": grid, "pr_grid": grid, "thresholds": grid[1:-1]}
    counts = DrawnCounts(Bootstrap(n, n_resamples=resamples, seed=9))
    want = curve_replicates(layout, counts.batches(step), **kwargs)
    replicates = batch_replicates(layout, **kwargs)
    owner_started, helper_started = threading.Event(), threading.Event()
    by = {}

    def compute(weights):
        name = threading.current_thread().name
        if name == "helper":
            helper_started.set()
        elif not owner_started.is_set():  # the owner's first batch waits for the helper's
            owner_started.set()
            helper_started.wait(5)
        by.setdefault(name, 0)
        by[name] += 1
        return replicates(weights)

    shared = intervals._SharedPass(counts, step, compute)
    seen = []
    helper = threading.Thread(target=lambda: (owner_started.wait(5), shared.work(
        lambda d, t: seen.append((d, t)))), name="helper")
    helper.start()
    shared.work()
    got = joined(shared.parts())
    helper.join()
    assert by["helper"] >= 1 and by["MainThread"] >= 1
    assert sum(by.values()) == shared.n_batches == -(-resamples // step)
    assert seen and all(t == resamples for _, t in seen) and max(d for d, _ in seen) <= resamples
    assert set(got) == set(want)
    for name, values in want.items():
        np.testing.assert_array_equal(got[name], values, err_msg=name)


def test_a_failed_batch_is_raised_to_the_thread_that_waits_for_the_pass():
    n = 50
    layout, _ = _layout(n, 1)
    replicates = batch_replicates(layout)
    counts = DrawnCounts(Bootstrap(n, n_resamples=40, seed=2))
    calls = []

    def compute(weights):
        calls.append(1)
        if len(calls) == 2:
            raise ValueError("bad batch")
        return replicates(weights)

    shared = intervals._SharedPass(counts, 10, compute)
    with pytest.raises(ValueError, match="bad batch"):
        shared.work()
    shared.work()  # nothing more is taken after a failure
    assert len(calls) == 2
    with pytest.raises(RuntimeError, match="a batch of the pass failed"):
        shared.parts()


def test_a_caller_helping_the_running_pass_gets_the_same_intervals():
    ds = Dataset.from_frames(*random_frames(n_posts=60, seed=5))
    cfg = EvalConfig(bootstrap=300, seed=7)
    want = intervals.curve_intervals(Evaluator(ds), cfg)
    intervals.help_curve_pass(Evaluator(ds), cfg)  # no pass running: nothing to do
    ev = Evaluator(ds)
    started, release = threading.Event(), threading.Event()
    real = intervals._SharedPass.work

    def work(self, progress=None):  # the starting thread waits for the helper's first batch
        if threading.current_thread().name == "owner":
            started.set()
            release.wait(5)
        return real(self, progress)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(intervals._SharedPass, "work", work)
        result = {}
        owner = threading.Thread(target=lambda: result.update(
            got=intervals.curve_intervals(ev, cfg)), name="owner")
        owner.start()
        started.wait(5)
        done = []
        helper = threading.Thread(target=lambda: (
            intervals.help_curve_pass(ev, cfg, lambda d, t: (done.append(d), release.set()))))
        helper.start()
        helper.join(10)
        release.set()
        owner.join(10)
    assert done  # the helper computed batches of the pass
    got = result["got"]
    for name in ("auroc", "auprc"):
        assert (got[name].lo, got[name].hi) == (want[name].lo, want[name].hi)
    for name in ("roc", "pr", "net_benefit"):
        for a, b in zip(got[name], want[name], strict=True):
            np.testing.assert_array_equal(a, b)
    assert [(c.lo, c.hi) for c in got["auroc_by_criterion"]] == [
        (c.lo, c.hi) for c in want["auroc_by_criterion"]]
    assert cfg.bootstrap_config not in ev.passes  # gone once done
