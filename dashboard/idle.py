"""The idle server: once no session is left, what was kept for the sessions is let go of and
the freed memory goes back to the system."""

from __future__ import annotations

import contextlib
import threading
import time

import streamlit as st


def release_shared_memory() -> None:
    """Let go of everything kept for sessions and give the freed memory back to the system:
    the demos' run, evaluator and shared evaluations (``st.cache_resource``), the count
    matrices kept for the process, then a full collection and ``malloc_trim`` (the server
    keeps freed memory for reuse while it serves: metrics_core.allocator.keep_freed_memory)."""
    st.cache_resource.clear()
    from metrics_core.evaluation import intervals

    shared = getattr(intervals, "_SHARED_COUNTS", None)
    if shared is not None:
        with shared.lock:
            shared.kept.clear()
    return_freed_memory()


def return_freed_memory() -> None:
    """A full collection, then glibc's ``malloc_trim``: the freed pages go back to the
    system."""
    import gc

    gc.collect()
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: the allocator keeps what it keeps
        pass


#: How long after a run's script has ended its cyclic garbage is collected
#: (:func:`collect_after_run`).
COLLECT_AFTER_S = 0.1


class _Due:
    """The collection due after a run (one at a time; a timer, no data)."""

    __slots__ = ("timer",)

    def __init__(self):
        self.timer: threading.Timer | None = None


_COLLECTING = _Due()
_COLLECTING_LOCK = threading.Lock()


def collect_after_run(delay: float = COLLECT_AFTER_S) -> threading.Timer | None:
    """A full collection ``delay`` seconds after this run's script ends, on a thread of its
    own, in place of Streamlit's after every run (``runner.postScriptGC``, off in
    ``dashboard/server.py``); None where Streamlit's still runs, or one is already due.

    Streamlit's collection runs on the script's thread after the script and holds the
    interpreter lock throughout, so the message that the run has ended (a Gate move's
    last) waited for it. A moment later the run's end has been sent; the collection then
    frees the run's cyclic garbage before the next move, as before, so that the next run
    reuses its memory instead of faulting in new pages."""
    import gc

    from streamlit import config

    if config.get_option("runner.postScriptGC"):
        return None
    with _COLLECTING_LOCK:
        due = _COLLECTING.timer
        if due is not None and due.is_alive():
            return None
        timer = threading.Timer(delay, gc.collect)
        timer.name, timer.daemon = "dashboard-collect-after-run", True
        _COLLECTING.timer = timer
        timer.start()
    return timer


def session_count(manager) -> int:
    """The sessions Streamlit's session manager holds: the tabs connected and the closed tabs'
    kept for a reconnection (``server.disconnectedSessionTTL``), those past that time dropped
    here.

    Streamlit keeps a closed tab's session in a time-limited cache that only reports an
    expired entry as gone: the entry (the session, its state, its pages' namespaces and the
    views they hold, with the demo's evaluator and every matrix it kept) is removed by the
    cache's next write or length query, which an idle server never makes. Without this, the
    last closed tabs' sessions stayed in memory after every tab had closed, and
    :func:`release_shared_memory` let go of the shared caches while those sessions still held
    what the caches had held (the load benchmark's server: 381 MiB of arrays alive, its RSS
    near its peak two minutes after the tabs closed)."""
    storage = getattr(getattr(manager, "_session_storage", None), "_cache", None)
    expire = getattr(storage, "expire", None)
    if callable(expire):
        # (a tab stored meanwhile: the cache has no lock; the next look expires them)
        with contextlib.suppress(RuntimeError, KeyError):
            expire()
    return len(manager.list_sessions())


def session_manager():
    """The running server's session manager, or None where no server serves the app (a
    plain call, or AppTest, whose runtime is a stand-in without one)."""
    from streamlit import runtime

    if not runtime.exists():
        return None
    return getattr(runtime.get_instance(), "_session_mgr", None)


def release_when_idle(idle_seconds: float = 20.0, every: float = 5.0, *,
                      stop: threading.Event | None = None) -> threading.Thread:
    """A helper thread that calls :func:`release_shared_memory` once the server has had no
    session for ``idle_seconds`` (every tab closed, and the closed tabs' sessions gone after
    ``server.disconnectedSessionTTL``), once per idle spell: the server's memory goes back to
    what it was before the sessions came, instead of staying at its high-water mark. The next
    session loads the demo again (a fraction of a second). ``stop``: ends the thread when set.
    """

    def sessions() -> int | None:
        manager = session_manager()
        return None if manager is None else session_count(manager)

    def loop() -> None:
        idle_since, released, trimmed = None, True, 0.0
        while not (stop or threading.Event()).wait(every):
            try:
                count = sessions()
            except Exception:  # the runtime stopping: nothing to do
                continue
            if count is None:
                continue
            if count:
                idle_since, released = None, False
                continue
            now = time.monotonic()
            idle_since = now if idle_since is None else idle_since
            if not released and now - idle_since >= idle_seconds:
                release_shared_memory()
                released, trimmed = True, now
            elif released and now - trimmed >= 2 * idle_seconds:
                # What the sessions' helper threads still held at the release (a computation
                # they finish alone) is freed when they end: returned too.
                return_freed_memory()
                trimmed = now

    thread = threading.Thread(target=loop, name="dashboard-release-when-idle", daemon=True)
    thread.start()
    return thread
