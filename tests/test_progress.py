"""The progress line of long steps: on stderr only, in place on a terminal, one line per step
otherwise, nothing with --quiet, and never in stdout or an output file."""

from __future__ import annotations

import io
import json

import pytest

from metrics_core import progress
from metrics_core.cli import main
from metrics_core.progress import StderrProgress, stage
from tests.conftest import random_frames


class Terminal(io.StringIO):
    def isatty(self):
        return True


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_terminal_line_in_place_after_a_second_with_time_left():
    out, clock = Terminal(), Clock()
    with StderrProgress(out, clock=clock, tick=None) as line:
        line.stage("bootstrap (operating metrics)")
        clock.now = 0.5
        line(1_000, 10_000)
        assert out.getvalue() == ""  # under a second: nothing yet
        clock.now = 2.0
        line(4_000, 10_000)  # 2 s for 4,000: 3 s for the other 6,000
        assert out.getvalue() == ("\rmetrics-core: bootstrap (operating metrics): "
                                  "4,000/10,000 resamples, ~3.0 s left\x1b[K")
        clock.now = 2.1
        line(4_500, 10_000)  # within REDRAW_EVERY of the last redraw: not drawn
        assert out.getvalue().count("\r") == 1
        clock.now = 5.0
        line(10_000, 10_000)
        line.stage("writing the outputs")  # ends the first step: its final line
        clock.now = 5.3
    text = out.getvalue()
    assert text.endswith("\rmetrics-core: bootstrap (operating metrics): 10,000 resamples "
                         "in 5.0 s\x1b[K\n")
    assert "writing" not in text  # 0.3 s: never shown


def test_not_a_terminal_one_line_per_long_step():
    out, clock = io.StringIO(), Clock()
    line = StderrProgress(out, clock=clock, tick=None)
    line.stage("reading the inputs")
    clock.now = 0.4
    line.stage("computing the metrics")
    clock.now = 1.0
    for done in range(0, 2_001, 500):
        line(done, 2_000)
        clock.now += 0.5
    line.close()
    line.close()  # (twice: nothing more)
    assert out.getvalue() == "metrics-core: computing the metrics: 2,000 resamples in 3.1 s\n"


def test_a_step_without_counts_is_shown_by_the_ticker():
    out, clock = Terminal(), Clock()
    line = StderrProgress(out, clock=clock, tick=None)
    line.stage("reading the inputs")
    clock.now = 1.5
    line._tick_once()
    clock.now = 2.0
    line.close()
    assert out.getvalue() == ("\rmetrics-core: reading the inputs (1.5 s)\x1b[K"
                              "\rmetrics-core: reading the inputs: 2.0 s\x1b[K\n")


def test_disabled_writes_nothing_and_stage_passes_plain_callbacks_through():
    out, clock = Terminal(), Clock()
    line = StderrProgress(out, enabled=False, clock=clock)
    line.stage("x")
    clock.now = 9.0
    line(1, 2)
    line.close()
    assert out.getvalue() == ""
    calls = []

    def plain(done, total):
        calls.append((done, total))

    assert stage(plain, "bootstrap") is plain and stage(None, "x") is None
    plain(3, 4)
    assert calls == [(3, 4)]


def test_a_broken_stderr_stops_the_line_without_an_error():
    class Broken(Terminal):
        def write(self, text):
            raise OSError("closed")

    clock = Clock()
    line = StderrProgress(Broken(), clock=clock, tick=None)
    line.stage("x")
    clock.now = 2.0
    line(1, 2)
    line.close()
    assert not line.enabled


@pytest.fixture
def files(tmp_path):
    q, c = random_frames(n_posts=30, seed=4)
    qp, cp = tmp_path / "queries.csv", tmp_path / "candidates.parquet"
    q.to_csv(qp, index=False)
    c.to_parquet(cp)
    return qp, cp


def test_cli_progress_on_stderr_only_and_quiet(files, tmp_path, capsys, monkeypatch):
    qp, cp = files
    monkeypatch.setattr(progress, "SHOW_AFTER", 0.0)  # every step counts as long here
    out = tmp_path / "m.json"
    assert main(["evaluate", str(qp), str(cp), "--out", str(out), "--bootstrap", "200"]) == 0
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    for step in ("reading the inputs", "computing the metrics",
                 "bootstrap (AUROC, AP, ROC / PR / net-benefit bands)",  # (a helper thread's)
                 "bootstrap (ranking means, Brier, ECE, MCE): 200 resamples",
                 "bootstrap (operating and multi-label metrics)",  # (waited for)
                 "writing the outputs"):
        assert sum(step in line for line in lines) == 1, (step, lines)
    assert all(line.startswith("metrics-core: ") for line in lines)
    assert "metrics-core:" not in captured.out and "resamples" not in captured.out
    assert "resamples in" not in out.read_text()
    json.loads(out.read_text())
    assert main(["evaluate", str(qp), str(cp), "--out", str(out), "--bootstrap", "200",
                 "--quiet"]) == 0
    assert capsys.readouterr() == ("", "")
