"""Start the dashboard (or any Streamlit script) on a free localhost port, for the browser
test and the latency benchmark."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from metrics_core.allocator import glibc_tunables

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_serving(url: str, proc: subprocess.Popen, log: Path | None = None, *,
                       give_up_after: float = 120.0):
    """The first successful reply of ``url`` (its status, headers and body) from the
    server process ``proc`` as it starts: a deadline to give up on a server that never
    starts (raised with its log), not a bound asserted on the program."""
    deadline = time.monotonic() + give_up_after
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as reply:
                if reply.status == 200:
                    return reply.status, reply.headers, reply.read()
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            shown = log.read_text(errors="replace") if log is not None and log.exists() else ""
            raise RuntimeError(f"{url} did not start serving (exit code {proc.poll()}); "
                               f"its log:\n{shown}")
        time.sleep(0.2)


@contextlib.contextmanager
def running_app(script: str, log: Path, *, options: tuple[str, ...] = (),
                env: dict[str, str] | None = None, process: list | None = None,
                cwd: Path = ROOT, give_up_after: float = 60.0):
    """``streamlit run script [options]`` from ``cwd`` on a free port, with ``env`` added to
    the environment; yields its base URL; always stops it. ``process``: a list the server's
    ``Popen`` is appended to (its memory, for the load benchmark); ``give_up_after``: the
    seconds to wait for it to serve (see :func:`wait_until_serving`)."""
    port = free_port()
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as out:
        # The server's malloc settings from its start, as ./dev app gives them.
        env = {**os.environ, **(env or {}),
               "GLIBC_TUNABLES": glibc_tunables(os.environ.get("GLIBC_TUNABLES"))}
        proc = subprocess.Popen(
            [sys.executable, "-m", "streamlit", "run", script, "--server.port", str(port),
             "--server.headless", "true", *options], cwd=cwd, stdout=out,
            stderr=subprocess.STDOUT, env=env)
        if process is not None:
            process.append(proc)
        try:
            try:
                wait_until_serving(f"http://127.0.0.1:{port}/_stcore/health", proc, log,
                                   give_up_after=give_up_after)
            except RuntimeError as err:
                raise RuntimeError(f"streamlit did not start; see {log}") from err
            yield f"http://127.0.0.1:{port}"
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
