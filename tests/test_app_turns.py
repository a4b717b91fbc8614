"""Interactive runs first: the work computed ahead on helper threads gives way to the runs that
answer a person (dashboard.computing.Turns), and never to a run that waits for it."""

from __future__ import annotations

import threading
import time

from dashboard import computing
from metrics_core.config import EvalConfig
from metrics_core.evaluation.evaluator import Evaluator
from metrics_core.inputs.loading import load


def _warm_view(kind: str, seed: int):
    """A view of random data as ``kind`` ("demo" or "upload"), at a configuration above the
    live resamples, with its evaluator."""
    from types import SimpleNamespace

    from dashboard import data
    from tests.conftest import random_frames

    q, c = random_frames(n_posts=60, seed=seed)
    loaded = load(q, c)
    ev = Evaluator(loaded.dataset)
    source = SimpleNamespace(kind=kind, adjudicated=None, token=(f"warm-{kind}", id(ev)),
                             evaluator=lambda filters=None: ev, loaded=loaded)
    cfg = EvalConfig(bootstrap=data.LIVE_RESAMPLES + 300, seed=1)
    view = SimpleNamespace(source=source, evaluator=ev, config=cfg, show_bootstrap=True)
    return view, ev, cfg, loaded


def _interactive_elsewhere(turns: computing.Turns, *, on: bool = True):
    """A thread whose run is interactive (``on``) until the returned event is set."""
    inside, leave = threading.Event(), threading.Event()

    def run():
        with turns.interactive(), turns.interactive(on):
            inside.set()
            leave.wait()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    inside.wait()
    return leave, thread


def test_work_ahead_waits_while_another_threads_run_is_interactive():
    turns = computing.Turns()
    assert turns.others() == 0
    assert turns.wait_turn(5.0) < 1.0  # no run in flight: no wait
    leave, thread = _interactive_elsewhere(turns)
    assert turns.others() == 1
    assert 0.2 <= turns.wait_turn(0.2) < 5.0  # at most `most` seconds
    threading.Timer(0.3, leave.set).start()
    assert 0.25 <= turns.wait_turn(60.0) < 30.0  # until the run ended
    thread.join()
    assert turns.others() == 0


def test_a_threads_own_run_and_a_run_marked_not_interactive_are_not_waited_for():
    turns = computing.Turns()
    with turns.interactive():
        assert turns.others() == 0  # its own run
        assert turns.wait_turn(5.0) < 1.0
    leave, thread = _interactive_elsewhere(turns, on=False)  # e.g. a run waiting for a value
    assert turns.others() == 0
    assert turns.wait_turn(5.0) < 1.0
    leave.set()
    thread.join()
    with turns.interactive(), turns.interactive(), turns.interactive(False):
        pass  # nested: each leaves the depth it found
    assert turns.others() == 0


def test_the_criteria_intervals_computed_ahead_give_way_to_an_interactive_run(monkeypatch):
    """The warm-up's batches wait while a run is interactive, and end once it is over."""
    from dashboard import data, refinement
    from metrics_core.evaluation import tables

    monkeypatch.setattr(computing, "AHEAD_WAIT", 60.0)
    # (seconds waited, whether the interactive run had left when the wait ended)
    waits, began, left = [], threading.Event(), threading.Event()
    real = computing.TURNS.wait_turn

    def wait_turn(most):
        began.set()
        waited = real(most)
        waits.append((waited, left.is_set()))
        return waited

    monkeypatch.setattr(computing.TURNS, "wait_turn", wait_turn)
    _, ev, cfg, _ = _warm_view("upload", seed=8)
    live = cfg.replace(bootstrap=data.LIVE_RESAMPLES)
    with computing.interactive():
        thread = refinement._warm_group_intervals(ev, cfg)
        began.wait(60)  # its first batch done, it waits
        time.sleep(0.5)
        assert thread.is_alive() and not tables.group_intervals_ready(ev, live)
        left.set()  # the run leaves: the warm-up's wait may end from here on
    thread.join(120)
    assert not thread.is_alive()
    assert tables.group_intervals_ready(ev, live)
    waited, after_the_run = waits[0]
    assert after_the_run and 0.5 <= waited < 60.0  # until the run ended, not the minute
    assert all(w < 1.0 for w, _ in waits[1:])  # no run since: no wait


def test_a_run_waiting_for_the_finder_computed_ahead_is_not_given_way_to(monkeypatch):
    """The Decision support page opened while its finder result is computed ahead: the page's
    run waits for it without being interactive, so the computation does not wait for the run
    that waits for it (it would, for a minute a batch, here)."""
    from dashboard import data, finder

    monkeypatch.setattr(computing, "AHEAD_WAIT", 60.0)
    waits = []  # the seconds each batch of the computation ahead gave way
    real = computing.TURNS.wait_turn

    def wait_turn(most):
        waits.append(real(most))
        return waits[-1]

    monkeypatch.setattr(computing.TURNS, "wait_turn", wait_turn)
    view, ev, cfg, loaded = _warm_view("upload", seed=9)
    with computing.interactive():
        thread = finder.warm_finder(view)
        got = finder.finder_results(ev, finder.default_finder_target(), None,
                                    data.LIVE_RESAMPLES, cfg.seed)
    # No batch waited out its minute for the run that was waiting for it.
    assert waits and all(w < 60.0 for w in waits), waits
    thread.join(60)
    assert not thread.is_alive()
    from metrics_core.metrics import decision

    want = [r.to_dict() for r in decision.tune(
        loaded.dataset, [str(finder.default_finder_target())], by=None,
        bootstrap=data.LIVE_RESAMPLES, seed=cfg.seed)]
    assert got == want


def test_the_load_of_an_upload_is_an_interactive_run(monkeypatch):
    """The Load button's callback runs before the app's script, outside its interactive part:
    work computed ahead (the warm-ups of the data shown before) waits while the upload is
    loaded, and an upload that fails still leaves the turn."""
    from dashboard import data, upload

    seen = []

    def load_upload(up, mapping=None):
        seen.append(_others_seen_from_a_helper())
        if up.queries_name == "bad.csv":
            raise ValueError("no such column")
        return "the source"

    monkeypatch.setattr(data, "load_upload", load_upload)
    monkeypatch.setattr(data, "set_source", lambda source: seen.append(source))
    monkeypatch.setattr(data, "release_upload", lambda key: None)
    session = {}
    monkeypatch.setattr(upload.st, "session_state", session)
    good = data.Upload("queries.csv", b"q", "candidates.csv", b"c")
    upload._load(good)
    assert seen == [1, "the source"]
    upload._load(data.Upload("bad.csv", b"q", None, None))
    assert seen[2] == 1 and "no such column" in session[upload.state.UPLOAD_ERROR]["message"]
    assert _others_seen_from_a_helper() == 0  # left after the load, failed or not


def _others_seen_from_a_helper() -> int:
    """The interactive runs in flight, as a helper thread computing ahead sees them."""
    found = []
    helper = threading.Thread(target=lambda: found.append(computing.TURNS.others()))
    helper.start()
    helper.join()
    return found[0]
