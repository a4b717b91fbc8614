"""The memory allocator settings of this project's own processes (command line, app server).

Not applied by ``import metrics_core``: a library does not change its host process's malloc.
"""

from __future__ import annotations

import os
import sys
from types import MappingProxyType

__all__ = ["MALLOC_SETTINGS", "glibc_tunables", "keep_freed_memory"]

#: Arrow's allocator for this project's processes (``ARROW_DEFAULT_MEMORY_POOL`` wins).
ARROW_POOL = "system"

#: glibc malloc's settings in this project's processes (see :func:`keep_freed_memory`): no
#: ``mmap`` per large array, freed memory never trimmed, 64 MB grown at a time, one arena.
MALLOC_SETTINGS = MappingProxyType({"mmap_max": 0, "trim_threshold": 2**31 - 1,
                                    "top_pad": 64 << 20, "arena_max": 1})
#: ``mallopt`` parameter numbers of :data:`MALLOC_SETTINGS` (glibc's malloc.h).
_MALLOPT = MappingProxyType({"mmap_max": -4, "trim_threshold": -1, "top_pad": -2,
                             "arena_max": -8})


def keep_freed_memory() -> None:
    """Let glibc's malloc serve large arrays from the heap and keep freed memory for reuse.

    By default every array over 32 MB is a fresh ``mmap`` that is returned to the system when
    freed, so the next one page-faults its memory in again; a run over millions of candidates
    allocates many such temporaries, and on virtual machines those faults can cost more than
    the arithmetic (at 20M candidates: half the page faults, seconds of system time).

    Every thread allocates from the one main arena: the app server runs each script run on a
    thread of its own, and a thread's own arena cannot keep what the main one freed (an
    evaluate at 1,000,000 queries on a second thread faulted 163,000 pages and took 0.99-1.04 s
    against 75,000 and 0.86-0.88 s on the main thread; with one arena, 75,000 and 0.89-0.94 s).

    For this project's own processes only: the command line (``main()`` without ``argv``) and
    the dashboard's server. The process then keeps its high-water mark of memory (nothing is
    returned to the system until it exits); its peak is unchanged. A no-op where the C library
    is not glibc.

    Arrow's own allocations (the Parquet reader's columns) come from the same glibc heap (its
    system pool) instead of its default mimalloc pool, unless ``ARROW_DEFAULT_MEMORY_POOL``
    names a pool: what the reader frees after the conversion to numpy is then reused by the
    numpy arrays that follow, instead of being kept by a second allocator while numpy faults
    in fresh pages. Loading 1,000,000 queries from bytes: 2.18 s and 418,000 page faults
    against 2.56-2.64 s and 524,000 with jemalloc, and the evaluate that follows 0.61 s
    (13,000 faults) against 0.69-1.00 s (94,000-100,000); mimalloc spent more time in the
    kernel than reading (4.4 s, 3.5 s of it system time; ``benchmarks/README.md``).

    numpy's advice to back arrays of 4 MB and more with transparent huge pages is switched off
    (unless ``NUMPY_MADVISE_HUGEPAGE`` says otherwise): where the kernel serves such pages only
    on that advice, each first touch of a huge page may compact memory synchronously, and
    loading 1,000,000 queries took 2.9-3.6 s with the advice against 2.5 s without it (system
    time 1.4-2.0 s against 0.9 s; evaluate 0.98 s against 0.86 s; ``benchmarks/README.md``).
    """
    if not sys.platform.startswith("linux"):
        return
    _use_arrow_pool()
    _no_numpy_huge_pages()
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        for name, value in MALLOC_SETTINGS.items():
            libc.mallopt(_MALLOPT[name], value)
    except (OSError, AttributeError):  # not glibc: keep the allocator's defaults
        return


def glibc_tunables(existing: str | None = None) -> str:
    """:data:`MALLOC_SETTINGS` as a ``GLIBC_TUNABLES`` value (after ``existing`` ones, which
    win), for a process to have them from its start.

    ``mallopt`` applies to the threads made after it: a thread that already has its own arena
    keeps it, and a thread made later may be handed one of those. The app server starts
    threads before it imports :mod:`dashboard.server`, and its script runs are threads of
    their own: set from the server's start (``./dev app``), the one arena holds for every
    run, and the Load of the 1M-query upload faulted 331,000 pages instead of 640,000.

    >>> glibc_tunables("glibc.malloc.arena_max=4")
    'glibc.malloc.arena_max=4:glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=2147483647:glibc.malloc.top_pad=67108864'
    """
    given = [t for t in (existing or "").split(":") if t]
    names = {t.split("=", 1)[0] for t in given}
    ours = [f"glibc.malloc.{k}={v}" for k, v in MALLOC_SETTINGS.items()
            if f"glibc.malloc.{k}" not in names]
    return ":".join(given + ours)


def _no_numpy_huge_pages() -> None:
    """Stop numpy advising huge pages for its large arrays, unless the environment decides."""
    if "NUMPY_MADVISE_HUGEPAGE" in os.environ:  # read by numpy at import: the user's choice
        return
    import numpy as np

    core = getattr(np, "_core", None) or getattr(np, "core", None)
    setter = getattr(getattr(core, "multiarray", None), "_set_madvise_hugepage", None)
    if setter is not None:
        setter(False)


def _use_arrow_pool() -> None:
    """Make :data:`ARROW_POOL` Arrow's default pool, unless the environment names one."""
    if "ARROW_DEFAULT_MEMORY_POOL" in os.environ:
        return
    if "pyarrow" not in sys.modules:  # read when Arrow first allocates: nothing to import now
        os.environ["ARROW_DEFAULT_MEMORY_POOL"] = ARROW_POOL
        return
    import pyarrow as pa

    pa.set_memory_pool(getattr(pa, f"{ARROW_POOL}_memory_pool")())
