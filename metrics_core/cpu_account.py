"""Who pays for the computing time of the engine's helper threads.

A caller that meters its computing (the dashboard's per-session budget) measures its own
thread's CPU time; the engine also works on helper threads on its behalf (the resamples'
counts and their index generator, the setting's intervals beside the data's, the curves'
pass, the tables and the memo's values built ahead, the sorts' second half). Work inside
:func:`charged_to` names an account (a callable taking CPU seconds); a helper thread's
function wrapped by :func:`charged` where the thread is started pays that account its own
thread's CPU time (``time.thread_time``, measured inside the thread) when it ends, and the
threads it starts in turn pay the same account. Without an account nothing is measured.

>>> spent = []
>>> with charged_to(spent.append):
...     work = charged(lambda: sum(range(1000)))
>>> work(), len(spent), spent[0] >= 0
(499500, 1, True)
>>> charged(len) is len  # no account: the function itself
True
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar

__all__ = ["charged", "charged_to", "current_account"]

#: The account of the work running in this context (None: not metered).
_ACCOUNT: ContextVar[Callable[[float], None] | None] = ContextVar("metrics_core_cpu_account",
                                                                  default=None)


def current_account() -> Callable[[float], None] | None:
    """The account the work in this context pays (None: not metered)."""
    return _ACCOUNT.get()


@contextlib.contextmanager
def charged_to(account: Callable[[float], None] | None) -> Iterator[None]:
    """Helper threads started inside pay ``account`` (``account(cpu_seconds)``) their CPU
    time; ``None`` stops the charging inside."""
    token = _ACCOUNT.set(account)
    try:
        yield
    finally:
        _ACCOUNT.reset(token)


def charged(fn: Callable) -> Callable:
    """``fn``, to be called on a helper thread: while it runs there, the threads it starts
    pay the account active now, and when it returns (or raises) that thread's CPU time spent
    in it is paid to that account. ``fn`` itself when no account is active."""
    account = _ACCOUNT.get()
    if account is None:
        return fn

    @functools.wraps(fn)
    def paid(*args, **kwargs):
        token = _ACCOUNT.set(account)
        start = time.thread_time()
        try:
            return fn(*args, **kwargs)
        finally:
            spent = time.thread_time() - start
            _ACCOUNT.reset(token)
            account(spent)

    return paid
