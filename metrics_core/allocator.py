"""The memory allocator settings of this project's own processes (command line, app server).

Not applied by ``import metrics_core``: a library does not change its host process's malloc.
"""

from __future__ import annotations

import sys

__all__ = ["keep_freed_memory"]


def keep_freed_memory() -> None:
    """Let glibc's malloc serve large arrays from the heap and keep freed memory for reuse.

    By default every array over 32 MB is a fresh ``mmap`` that is returned to the system when
    freed, so the next one page-faults its memory in again; a run over millions of candidates
    allocates many such temporaries, and on virtual machines those faults can cost more than
    the arithmetic (at 20M candidates: half the page faults, seconds of system time).

    For this project's own processes only: the command line (``main()`` without ``argv``) and
    the dashboard's server. The process then keeps its high-water mark of memory (nothing is
    returned to the system until it exits); its peak is unchanged. A no-op where the C library
    is not glibc.
    """
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        m_trim_threshold, m_top_pad, m_mmap_max = -1, -2, -4
        libc.mallopt(m_mmap_max, 0)
        libc.mallopt(m_trim_threshold, 2**31 - 1)
        libc.mallopt(m_top_pad, 64 << 20)
    except (OSError, AttributeError):  # not glibc: keep the allocator's defaults
        return
