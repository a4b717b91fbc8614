"""The Dask engine: ``metrics-core evaluate --engine dask`` on partitioned Parquet data sets.

The data are split into *work units* (:mod:`metrics_core.engines.planning`): groups of input
files that together hold every query and candidate of their posts (a post split across two
files of one table is an error that names the post and the files). Each unit runs on a
``distributed`` worker (:mod:`metrics_core.engines.units`), which loads it with the public
loader (:func:`metrics_core.inputs.loading.load`) and runs the same per-query kernels as the
in-memory engine (:class:`metrics_core.evaluation.evaluator.Evaluator`).

:func:`evaluate` gathers the units' per-query arrays (tens of bytes a query) and the client
builds the report with the in-memory code (:mod:`metrics_core.engines.gathered`), so every
record, table, interval and check equals the in-memory engine's. :func:`classification_by_reduction`
and :func:`bootstrap_by_reduction` gather nothing: the units' summaries are merged on the
workers (:mod:`metrics_core.engines.reductions`, :mod:`metrics_core.engines.resampling`).

Import this module only when the Dask engine is used: it imports ``distributed``.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np

from metrics_core.config import threshold_provenance
from metrics_core.engines.gathered import (
    DaskRun,
    GatheredEvaluator,
    QueryLevelDataset,
    combine,
    criteria_order,
)
from metrics_core.engines.planning import plan, plan_units, post_column, resolve_files
from metrics_core.engines.units import (
    evaluate_unit,
    merge_resample_sums,
    unit_resample_sums,
    unit_score_counts,
)
from metrics_core.errors import InputError
from metrics_core.run import fingerprint

__all__ = ["DaskRun", "GatheredEvaluator", "QueryLevelDataset", "bootstrap_by_reduction",
           "classification_by_reduction", "evaluate", "evaluate_reduced", "evaluate_unit",
           "per_query_staging", "plan_units", "resolve_files", "unit_resample_sums",
           "unit_score_counts"]

#: Seconds to wait for a scheduler given by address before giving up.
CONNECT_TIMEOUT = 10.0


# --------------------------------------------------------------------------- cluster
class _Cluster:
    """A client on the scheduler at ``address``, or on a local cluster sized to the machine."""

    def __init__(self, address: str | None, timeout: float, n_workers: int | None = None):
        self.address, self.timeout, self.n_workers = address, timeout, n_workers
        self.cluster = self.client = None

    def __enter__(self):
        import logging

        from distributed import Client, LocalCluster

        if self.address is None:
            n = self.n_workers or max(1, min(os.cpu_count() or 1, 8))
            self.cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                        dashboard_address=":0", silence_logs=logging.ERROR)
            self.client = Client(self.cluster)
            return self.client
        try:
            self.client = Client(self.address, timeout=self.timeout)
        except (OSError, TimeoutError) as err:
            raise RuntimeError(
                f"cannot reach the Dask scheduler at {self.address} within "
                f"{self.timeout:g} s ({type(err).__name__}); check the address and that the "
                f"scheduler is running. No output was written.") from None
        return self.client

    def __exit__(self, *exc):
        if self.client is not None:
            self.client.close()
        if self.cluster is not None:
            self.cluster.close()
        return False


def evaluate(queries, candidates, config, *, scheduler: str | None = None, client=None,
             timeout: float = CONNECT_TIMEOUT, n_workers: int | None = None,
             task: Callable | None = None) -> DaskRun:
    """Evaluate partitioned Parquet data on a Dask cluster (``--engine dask``).

    Parameters
    ----------
    queries, candidates : path or glob
        A Parquet file, a folder of Parquet files or a glob, for each table. Every post must
        have all its rows in one file of each table (partition by post).
    config : EvalConfig
    scheduler : str, optional
        Address of a running scheduler (``tcp://host:8786``); without it (and without
        ``client``) a local cluster sized to the machine is started and stopped.
    client : distributed.Client, optional
        A client to use as is (tests, notebooks).
    timeout : float
        Seconds to wait for ``scheduler``.
    n_workers : int, optional
        Workers of the local cluster (default: one per core, at most 8). The local cluster
        is closed once the per-query values are gathered, before the report is built.
    task : callable, optional
        The function run on each work unit, with the signature of :func:`evaluate_unit`
        (tests wrap it to inject worker failures).

    Returns
    -------
    DaskRun
        ``evaluation`` is the :class:`~metrics_core.evaluation.result.Evaluation` the in-memory
        engine gives on the same data (same records, tables, intervals for the same seed).
    """
    if candidates is None:
        raise InputError("the Dask engine needs a queries and a candidates table",
                         hint="give both QUERIES and CANDIDATES (files, folders or globs)",
                         code="unreadable_file")
    q_files = resolve_files(queries, table="queries")
    c_files = resolve_files(candidates, table="candidates")
    for f in q_files[:1]:
        post_column(f, "queries")
    for f in c_files[:1]:
        post_column(f, "candidates")
    q_name = q_files[0].name if len(q_files) == 1 else Path(queries).name
    c_name = c_files[0].name if len(c_files) == 1 else Path(candidates).name
    if client is None:
        with _Cluster(scheduler, timeout, n_workers) as own:
            results = _run(own, q_files, c_files, config, q_name, c_name, task)
    else:
        results = _run(client, q_files, c_files, config, q_name, c_name, task)
    inputs = [fingerprint(p) for p in (*q_files, *c_files)]
    return combine(results, config, queries_name=q_name, candidates_name=c_name,
                    inputs=inputs)


def per_query_staging(directory) -> tuple[Path, Path]:
    """Check the folder the reduced run's per-query parts go to and make the folder the workers
    write them into first (beside it; renamed to it once every unit is done): ``(target,
    staging)``. The target must be absent or an empty folder (an output never overwrites
    anything); a ``ValueError`` names the path and the rule otherwise."""
    import tempfile

    target = Path(directory)
    what = f"--per-query {target}"
    if target.exists() and not target.is_dir():
        raise ValueError(f"{what} is a file: the reduced run writes the per-query table as a "
                         f"folder of Parquet parts; name a new or empty folder")
    if target.is_dir():
        held = sorted(p.name for p in target.iterdir())
        if held:
            raise ValueError(f"{what} holds {len(held)} entr{'y' if len(held) == 1 else 'ies'} "
                             f"({', '.join(held[:3])}{', ...' if len(held) > 3 else ''}): the "
                             f"reduced run writes its per-query parts into a new or empty "
                             f"folder and never overwrites files; choose another path")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".partial",
                                        dir=target.parent))
    except OSError as err:
        raise ValueError(f"{what} cannot be written: {err.strerror or err} "
                         f"({err.filename or target.parent}); name a folder in a writable "
                         f"place") from None
    return target, staging


def evaluate_reduced(queries, candidates, config, *, scheduler: str | None = None, client=None,
                     timeout: float = CONNECT_TIMEOUT, n_workers: int | None = None,
                     per_query=None) -> dict:
    """``metrics-core evaluate --engine dask --reduced``: the records reduced on the cluster.

    Each work unit sums what the records need where it is loaded
    (:func:`~metrics_core.engines.reduced.unit_summary`), the sums are merged and turned into
    per-resample values on the workers, and the client makes the records from them: what
    reaches it does not grow with the number of queries. Returns the document written as
    ``metrics_master.json`` (``engine``: ``"dask (reduced)"``): the records, the tables and
    the consistency checks (:mod:`metrics_core.engines.reduced_tables`), the input audit
    (:mod:`metrics_core.engines.reduced_audit`); ``not_computed``
    names the in-memory report's parts this run does not make. Arguments as
    :func:`evaluate`.

    ``per_query`` (a folder, absent or empty): each unit writes its per-query rows (the
    in-memory per-query table's columns, canonical order within the part) as
    ``part-NNNNN.parquet`` there, on the worker; the client receives the parts' names and
    rows only, and the document's ``per_query`` says where they are. The workers must see
    the folder (a local cluster, or a file system the cluster shares). The parts are
    written into a folder beside it, renamed to it once every unit is done (removed if the
    run fails).
    """
    from datetime import UTC, datetime

    from metrics_core import __version__
    from metrics_core.engines import reduced, reduced_audit, reduced_tables
    from metrics_core.engines.reductions import tree_reduce
    from metrics_core.evaluation.result import SCHEMA

    if candidates is None:
        raise InputError("the Dask engine needs a queries and a candidates table",
                         hint="give both QUERIES and CANDIDATES (files, folders or globs)",
                         code="unreadable_file")

    def run(on):
        units, q_str, c_str, q_name, c_name = _units(on, queries, candidates)
        # a generator: no list here keeps the units' summaries on the workers once merged
        futures = (on.submit(reduced.unit_summary, [q_str[j] for j in qi],
                             [c_str[j] for j in ci], config, queries_name=q_name,
                             candidates_name=c_name, pure=False, per_query_dir=written,
                             part=i) for i, (qi, ci) in enumerate(units))
        return tree_reduce(on, futures, reduced.merge_summaries,
                           finish=functools.partial(reduced.finish, config=config)), \
            q_name, c_name

    q_files = resolve_files(queries, table="queries")
    c_files = resolve_files(candidates, table="candidates")
    for f, kind in ((q_files[0], "queries"), (c_files[0], "candidates")):
        post_column(f, kind)
    target, staging = (None, None) if per_query is None else per_query_staging(per_query)
    written = None if staging is None else str(staging.resolve())  # (workers: another cwd)
    try:
        with _failures():
            if client is None:
                with _Cluster(scheduler, timeout, n_workers) as own:
                    summary, q_name, c_name = run(own)
            else:
                summary, q_name, c_name = run(client)
        if "error" in summary:
            raise InputError(summary["error"], code=summary["code"])
        if "empty" in summary:
            raise InputError(f"no queries match the filter ({summary['empty']})",
                             hint="choose another fold, split or criteria")
        if staging is not None:
            listed = {name for name, _ in summary.get("per_query_parts", [])}
            for left in staging.iterdir():  # a worker killed while writing left its temporary
                if left.name not in listed:
                    left.unlink()
            os.replace(staging, target)  # (onto an empty folder, or none)
    finally:
        if staging is not None and staging.exists():
            import shutil

            shutil.rmtree(staging, ignore_errors=True)
    parts = summary.get("per_query_parts", [])
    records = reduced.reduced_records(summary, config)
    reduced.ranking_and_k_records(records, summary, config)
    criteria = list(criteria_order(summary["criteria"]))
    n = summary["n_queries"]
    described = summary["described"]
    return {
        "schema": SCHEMA,
        "engine": "dask (reduced)", "generated_by": f"metrics_core {__version__}",
        "run": {"generated_by": f"metrics_core {__version__}", "version": __version__,
                "created": datetime.now(UTC).isoformat(timespec="seconds"),
                "inputs": [dict(fingerprint(p)) for p in (*q_files, *c_files)]},
        "config": config.to_dict(),
        **threshold_provenance(config),  # the command line's thresholds: pre-specified
        "dataset": {"n_queries": n, "n_positive": summary["n_positive"],
                    "positive_rate": summary["n_positive"] / n if n else None,
                    "n_posts": summary["n_posts"], "n_candidates": summary["n_candidates"],
                    "criteria": criteria,
                    "folds": None if described["folds"] is None else sorted(described["folds"]),
                    "splits": None if described["splits"] is None
                    else sorted(described["splits"]),
                    "ranked_by": described["ranked_by"],
                    "n_gold_given": described["n_gold_given"],
                    "queries_file": q_name, "candidates_file": c_name,
                    "layout": described["layout"],
                    "n_excluded_queries": summary["n_excluded_queries"],
                    "n_excluded_candidates": summary["n_excluded_candidates"]},
        "metrics": [r.to_dict() for r in records],
        **reduced_tables.document_tables(summary, records, config),
        "n_resamples": int(config.bootstrap),
        "warnings": summary["warnings"],
        **({} if target is None else {"per_query": {
            "path": str(target), "format": "parquet", "n_rows": sum(r for _, r in parts),
            "parts": [{"file": name, "rows": rows} for name, rows in parts],
            "order": "canonical (post id, then criterion) within each part; sort by post_id "
                     "and criterion for the whole table's"}}),
        "not_computed": reduced_tables.not_computed(summary, config,
                                                    per_query=target is not None),
        "audit": reduced_audit.audit_of_parts(summary["audit"]).to_dict(),
    }


def classification_by_reduction(queries, candidates, config, *, client) -> dict:
    """AUROC, AUPRC and TPR@FPR of partitioned data, reduced on the cluster (contract §9).

    Each work unit counts its queries by distinct ``p`` and class where it is loaded; the
    counts are merged pairwise on the workers (:func:`~metrics_core.engines.reductions.
    tree_reduce`) and only the merged counts reach the client, which runs the in-memory
    kernels on them. Returns ``{"auroc": Score, "auprc": Score, "tpr_at_fpr": [TprAtFpr],
    "counts": ScoreCounts}``: the values equal the in-memory engine's exactly.
    """
    from metrics_core.engines.reductions import counted_scores, merge_counts, tree_reduce
    from metrics_core.metrics import classification

    units, q_str, c_str, q_name, c_name = _units(client, queries, candidates)
    futures = [client.submit(unit_score_counts, [q_str[j] for j in qi], [c_str[j] for j in ci],
                             queries_name=q_name, candidates_name=c_name, pure=False)
               for qi, ci in units]
    errors = client.submit(_first_error, *futures, pure=False).result()
    if errors is not None:
        raise InputError(errors["error"], code=errors["code"])
    counts = tree_reduce(client, futures, merge_counts)
    s = counted_scores(counts)
    return {"auroc": classification.roc_auc(s), "auprc": classification.average_precision(s),
            "tpr_at_fpr": classification.tpr_at_fpr(s, targets=config.tpr_fprs),
            "counts": counts}


def bootstrap_by_reduction(queries, candidates, config, *, client) -> dict:
    """Intervals without a gather (contract §9, Dask engine): Poisson(1) weights keyed by
    (seed, unit), weighted sums merged on the workers.

    Returns ``{"auroc": {"value", "ci95", "method"}, "auprc": {...}, "sensitivity": {...},
    "specificity": {...}, "n_resamples": B}`` for ``config.bootstrap`` resamples, the seed
    ``config.seed``, the unit ``config.bootstrap_unit`` and the threshold ``config.threshold``.
    AUROC's interval is the weighted bootstrap's while ``resamples x distinct p`` is at most
    :data:`~metrics_core.engines.resampling.WEIGHTED_SORT_LIMIT`, DeLong's above
    (``method`` says which); AUPRC's likewise, without an interval above the limit. The
    result does not depend on the partitioning.
    """
    from metrics_core.engines.reductions import tree_reduce
    from metrics_core.engines.resampling import (
        WEIGHTED_SORT_LIMIT,
        auprc_of_weighted,
        auroc_of_weighted,
        delong_interval,
        percentile_interval,
    )
    from metrics_core.metrics.confusion import confusion_rates

    n_resamples = int(config.bootstrap)
    if n_resamples < 1:
        raise ValueError("bootstrap_by_reduction needs at least one resample")
    point = classification_by_reduction(queries, candidates, config, client=client)
    counts = point["counts"]
    weighted = n_resamples * counts.values.size <= WEIGHTED_SORT_LIMIT
    units, q_str, c_str, q_name, c_name = _units(client, queries, candidates)
    futures = (client.submit(unit_resample_sums, [q_str[j] for j in qi],
                             [c_str[j] for j in ci], queries_name=q_name,
                             candidates_name=c_name, seed=int(config.seed),
                             n_resamples=n_resamples, unit=config.bootstrap_unit,
                             threshold=float(config.threshold), weighted_auroc=weighted,
                             pure=False) for qi, ci in units)  # (released once merged)
    sums = tree_reduce(client, futures, merge_resample_sums)
    tp, fp, fn, tn = (sums["confusion"][:, i].astype(np.float64) for i in range(4))
    with np.errstate(invalid="ignore", divide="ignore"):
        sens = tp / (tp + fn)
        spec = tn / (tn + fp)
    auroc, auprc = point["auroc"], point["auprc"]
    if weighted:
        ci = percentile_interval(auroc_of_weighted(sums["auroc"]))
        ap_ci = percentile_interval(auprc_of_weighted(sums["auroc"]))
    else:
        ci = delong_interval(counts)
        ap_ci = None
    conf = confusion_rates(*(np.array([float(c)]) for c in _confusion_at(
        counts, float(config.threshold))))
    return {"auroc": {"value": auroc.value, "defined": auroc.defined,
                      "ci95": list(ci) if ci and auroc.defined else None,
                      "method": "poisson_bootstrap" if weighted else "delong"},
            "auprc": {"value": auprc.value, "defined": auprc.defined,
                      "ci95": _listed(ap_ci) if auprc.defined else None,
                      "method": "poisson_bootstrap" if weighted else None},
            "sensitivity": {"value": float(conf["sensitivity"][0]),
                            "ci95": _listed(percentile_interval(sens)),
                            "method": "poisson_bootstrap"},
            "specificity": {"value": float(conf["specificity"][0]),
                            "ci95": _listed(percentile_interval(spec)),
                            "method": "poisson_bootstrap"},
            "n_resamples": n_resamples}


def _listed(interval):
    return None if interval is None else list(interval)


def _confusion_at(counts, threshold: float) -> tuple[int, int, int, int]:
    """TP, FP, TN, FN at ``threshold`` (positive iff p >= threshold) from score counts."""
    at = counts.values >= threshold
    tp, fp = int(counts.pos[at].sum()), int(counts.neg[at].sum())
    return tp, fp, int(counts.neg[~at].sum()), int(counts.pos[~at].sum())


def _units(client, queries, candidates):
    """Work units of the inputs: (units, query paths, candidate paths, names)."""
    q_files = resolve_files(queries, table="queries")
    c_files = resolve_files(candidates, table="candidates")
    q_str = [str(p) for p in q_files]
    c_str = [str(p) for p in c_files]
    q_name = q_files[0].name if len(q_files) == 1 else Path(queries).name
    c_name = c_files[0].name if len(c_files) == 1 else Path(candidates).name
    return plan(client, q_files, c_files), q_str, c_str, q_name, c_name


def _first_error(*parts):
    """The first error dict among the units' results (None when every unit loaded)."""
    return next((p for p in parts if isinstance(p, dict)), None)


def _owned(value):
    """``value`` with every array copied out of the message buffer it was received in.

    Arrays received together can share one buffer, which lives as long as any of them: with
    their own memory, the client frees each unit's arrays as soon as they are stacked.
    """
    if isinstance(value, np.ndarray):
        return value.copy() if value.base is not None else value
    if isinstance(value, dict):
        return {k: _owned(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return tuple(_owned(v) for v in value)
    return value


@contextlib.contextmanager
def _failures():
    """A cluster's failures as plain messages (``RuntimeError``); bad input stays an
    :class:`InputError`."""
    from distributed.client import FutureCancelledError

    try:
        from distributed import KilledWorker
    except ImportError:  # older distributed
        from distributed.scheduler import KilledWorker
    try:
        yield
    except KilledWorker as err:
        raise RuntimeError(
            f"a Dask worker died each time it ran a part of this evaluation ({err}); the "
            f"task was retried and failed every time (out of memory?). No output was "
            f"written.") from None
    except FutureCancelledError as err:
        raise RuntimeError(f"the Dask computation was cancelled ({err}); no output was "
                           f"written") from None
    except InputError:
        raise
    except Exception as err:  # raised in a task on a worker (unreadable file, ...)
        raise RuntimeError(f"a Dask task failed: {type(err).__name__}: "
                           f"{str(err).splitlines()[0][:300] if str(err) else ''}; no output "
                           f"was written") from None


def _run(client, q_files, c_files, config, q_name, c_name, task) -> list[dict]:
    from distributed import as_completed

    task = task or evaluate_unit
    q_str = [str(p) for p in q_files]
    c_str = [str(p) for p in c_files]
    with _failures():
        units = plan(client, q_files, c_files)
        futures = {}
        for i, (qi, ci) in enumerate(units):
            future = client.submit(task, [q_str[j] for j in qi], [c_str[j] for j in ci], config,
                                   queries_name=q_name, candidates_name=c_name, pure=False,
                                   key=f"metrics-core-unit-{i}-{os.getpid()}-{id(units)}")
            futures[future] = i
        results: list = [None] * len(units)
        for future in as_completed(list(futures)):
            i = futures.pop(future)
            result = _owned(future.result())
            future.release()
            if "error" in result:
                for other in futures:
                    other.cancel()
                raise InputError(result["error"], code=result["code"])
            results[i] = result
        return results
