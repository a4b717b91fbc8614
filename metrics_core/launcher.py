"""The ``metrics-core`` console script and ``python -m metrics_core``: the process's settings,
then the command line (:func:`metrics_core.cli.main`, which sets nothing process-wide), then
the process's end.

These are speed devices of this project's own processes, measured in ``benchmarks/README.md``
("Speed devices"):

- OpenBLAS's idle threads sleep after a short spin (``OPENBLAS_THREAD_TIMEOUT``; they spin
  ~0.1 s after each product by default, and the bootstrap's hundreds of products would keep a
  core busy that its helper threads need). Read when numpy loads OpenBLAS: set first. Results
  are the same (the number of threads is).
- glibc malloc's settings (:func:`metrics_core.allocator.keep_freed_memory`; the dashboard's
  launchers, ``metrics-core app`` and ``./dev app``, give them as ``GLIBC_TUNABLES`` from the
  server process's start).
- An in-memory ``evaluate`` ends with ``os._exit`` once its outputs are written and its
  streams flushed, which skips the interpreter's teardown (every array and module freed one by
  one). Not with ``--engine``, whose cluster must be shut down, nor for another command.
"""

from __future__ import annotations

import contextlib
import os
import sys


def process_settings() -> None:
    """The process-wide settings above (OpenBLAS's spin, glibc malloc's), applied once at the
    start of this project's own processes; before numpy is imported for the first."""
    os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
    from metrics_core.allocator import keep_freed_memory

    keep_freed_memory()


def main() -> int:
    process_settings()
    from metrics_core.cli import main as command_line

    code = command_line()
    argv = sys.argv[1:]
    if argv[:1] == ["evaluate"] and not any(a == "--engine" or a.startswith("--engine=")
                                            for a in argv):
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):  # (a closed pipe, a closed stream)
                stream.flush()
        os._exit(code)
    return code
