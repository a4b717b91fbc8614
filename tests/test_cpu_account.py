"""The computing time of the engine's helper threads is paid by the account of the work that
started them (metrics_core.cpu_account): every thread an evaluation starts, directly or from
another helper thread, pays it, so the dashboard's per-session budget ([interaction]
cpu_seconds_per_minute) is reached by a session whose work is mostly on helper threads."""

from __future__ import annotations

import threading
import time

import pytest

from dashboard import computing
from metrics_core.config import EvalConfig
from metrics_core.cpu_account import charged, charged_to, current_account
from metrics_core.data.dataset import Dataset
from metrics_core.evaluation import evaluator as evaluator_module
from metrics_core.evaluation.evaluator import Evaluator
from metrics_core.evaluation.inflight import in_background
from metrics_core.metrics.uncertainty import Bootstrap, DrawnCounts
from tests.conftest import random_frames


def _burn(seconds: float) -> None:
    """Spend about ``seconds`` of this thread's CPU time."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        sum(range(1_000))


@pytest.fixture
def started(monkeypatch):
    """The threads started from this test's thread, or from a thread it started (not the
    helper threads other tests left running)."""
    here, threads = threading.current_thread(), []
    start = threading.Thread.start

    def recording(self):
        if threading.current_thread() is here or threading.current_thread() in threads:
            threads.append(self)
        start(self)

    monkeypatch.setattr(threading.Thread, "start", recording)
    return threads


def test_a_helper_thread_pays_its_cpu_time_to_the_account_that_started_it():
    paid = []
    with charged_to(lambda s: paid.append((threading.current_thread().name, s))):
        in_background([lambda: _burn(0.3)], "test-helper").join(10)
    assert [name for name, _ in paid] == ["test-helper"]
    assert 0.28 <= paid[0][1] < 1.0
    # no account: nothing measured, the function itself
    assert current_account() is None and charged(_burn) is _burn


def test_threads_started_by_a_helper_thread_pay_the_same_account():
    paid = []

    def outer():
        inner = threading.Thread(target=charged(lambda: _burn(0.2)), name="inner")
        inner.start()
        inner.join(10)

    with charged_to(lambda s: paid.append((threading.current_thread().name, s))):
        in_background([outer], "outer").join(10)
    assert sorted(name for name, _ in paid) == ["inner", "outer"]
    assert dict(paid)["inner"] >= 0.18 and dict(paid)["outer"] < 0.15  # each its own time


def test_every_thread_an_evaluation_starts_pays_the_account(started, monkeypatch):
    """The resamples' draw and its index generator, the setting's intervals beside the data's,
    the curves' pass, the evaluator's values built ahead (forced on for this small set) and
    the tables' helper thread: each thread started pays the account, and their sum is the
    helpers' CPU time."""
    monkeypatch.setattr(evaluator_module, "PREFETCH_MIN_QUERIES", 0)
    q, c = random_frames(n_posts=300, seed=5)
    ds = Dataset.from_frames(q, c)
    paid = []
    with charged_to(lambda s: paid.append((threading.current_thread().name, s))):
        evaluation = Evaluator(ds).evaluate(EvalConfig(bootstrap=600, seed=918_273))
        evaluation.prefetch("gamma_sweep").join(30)
    for thread in started:
        thread.join(30)
    names = {t.name for t in started}
    assert {"metrics_core-draw", "metrics_core-draw-indices", "metrics_core-prefetch",
            "metrics_core-tables"} <= names
    assert any(n.startswith("metrics_core-intervals") for n in names)
    assert names <= {name for name, _ in paid}
    assert all(s >= 0 for _, s in paid)


def test_a_drawn_count_matrix_is_paid_by_the_account_that_asked_for_it(started):
    paid = []
    with charged_to(paid.append):
        counts = DrawnCounts(Bootstrap(20_000, n_resamples=400, seed=42))
        first = counts[0:1]
    for thread in started:
        thread.join(30)
    assert int(first.sum()) == 20_000  # a resample draws n units
    assert len(paid) == 2 and sum(paid) > 0  # the draw and its index generator


def test_a_budgeted_session_whose_work_is_on_helper_threads_reaches_its_budget():
    """The script thread waits while a helper thread computes: the session's budget counts
    the helper's CPU time (the script thread's own is a few milliseconds)."""
    meter = computing.CpuBudget()
    own = time.thread_time()
    with computing.metered(meter):
        in_background([lambda: _burn(0.4)], "dashboard-test-helper").join(10)
    own = time.thread_time() - own
    assert own < 0.1
    assert meter.used() >= 0.38
    assert meter.used() >= 0.3 + own  # not the script thread's time alone
    assert meter.wait(0.3) > 0  # a budget of 0.3 s a minute is reached


def test_threads_started_in_the_sessions_context_pay_its_budget(monkeypatch):
    """The app's run and a view's refinement (whose warm-ups, the per-criterion intervals and
    the finder, are computed ahead on helper threads) run in charged_to_session: what they
    start pays the session's budget."""
    meter = computing.CpuBudget()
    monkeypatch.setattr(computing, "cpu_budget", lambda: meter)
    with computing.charged_to_session():
        thread = in_background([lambda: _burn(0.25)], "dashboard-group-intervals")
    thread.join(10)
    assert meter.used() >= 0.23
