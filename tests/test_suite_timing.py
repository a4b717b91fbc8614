"""The suite holds no test that a slow machine can fail: no wall-clock limits, no deadlines.

Speed is measured by the benchmarks (benchmarks/), never asserted in a test: on a loaded
machine a wall-clock bound fails a correct program (a document compared with its creation
time to the second did, in a fresh-clone run).
"""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import HealthCheck, settings

TESTS = Path(__file__).parent
#: Files that may read a clock: the app server's start-up wait (a deadline to give up, not a
#: bound asserted on the program), and this file (which names the calls it looks for).
CLOCK_ALLOWED = {"app_server.py", "test_suite_timing.py"}
CLOCK = re.compile(r"\btime\.(time|perf_counter|monotonic|process_time)(_ns)?\(|"
                   r"\bdatetime\.(now|utcnow|today)\(")


def test_property_tests_have_no_deadline():
    assert settings.default.deadline is None
    assert HealthCheck.too_slow in settings.default.suppress_health_check


def test_no_test_reads_the_clock():
    readers = [f"{path.name}:{n}" for path in sorted(TESTS.glob("*.py"))
               if path.name not in CLOCK_ALLOWED
               for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
               if CLOCK.search(line)]
    assert readers == []
