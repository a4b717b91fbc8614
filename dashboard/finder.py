"""The Decision support page's threshold finder: its default target and its results, kept in
the evaluator's memo, and the first result computed ahead on a helper thread."""

from __future__ import annotations

import threading
from collections.abc import Callable

from dashboard.data import View, finder_resamples
from metrics_core.report import Evaluator


def default_finder_target():
    """The finder's target as the Decision support page first shows it."""
    from metrics_core.metrics import decision

    metric, ops = next(iter(decision.FINDERS.items()))
    op = next(iter(ops))
    return decision.Target(metric, op, 0.995 if op == ">=" else 5.0)


def finder_results(evaluator: Evaluator, target, by: str | None, n_boot: int,
                   seed: int, *, progress: Callable[[int, int], None] | None = None
                   ) -> list[dict]:
    """The threshold finder's results (overall first, then per ``by`` group), kept in the
    evaluator's memo (a session's own for an upload, never shared between sessions).
    ``progress``: told the re-selecting resamples as they are computed (a
    :class:`StepProgress`: each subset's in turn)."""
    from dashboard.computing import interactive
    from metrics_core.metrics import decision

    key = ("tune", str(target), by, n_boot, seed)
    running = evaluator.in_the_making(key)
    if running is not None:  # computed ahead: it does not give way to a run waiting for it
        with interactive(False):
            running.wait()
    return evaluator.cached(
        key,
        lambda: [r.to_dict() for r in decision.tune(evaluator.ds, [str(target)], by=by,
                                                    bootstrap=n_boot, seed=seed,
                                                    progress=progress)])


def warm_finder(v: View, *, after: threading.Thread | None = None) -> threading.Thread:
    """The Decision support page's first finder result (its default target, every resample
    re-selecting the threshold: the page's one long computation) on a helper thread, after
    ``after``'s work, so that the page is computed before it is opened."""
    from dashboard.computing import ahead_progress
    from metrics_core.evaluation.inflight import in_background

    evaluator, n_boot, seed = v.evaluator, finder_resamples(v), v.config.seed
    return in_background(
        (lambda: after is not None and after.join(),
         lambda: finder_results(evaluator, default_finder_target(), None, n_boot, seed,
                               progress=ahead_progress)),
        "dashboard-finder")
