"""One run of the evaluation: the inputs loaded, audited and fingerprinted, and their evaluator.

:func:`open_run` is the sequence every front end starts with (the command line's ``evaluate``,
``report``, ``tune`` and ``compare``, the dashboard's demo and uploads): read, map and
validate the inputs (:func:`metrics_core.inputs.loading.load`), audit the data set
(:func:`metrics_core.inputs.audit.audit`), fingerprint the input files (:func:`fingerprint`: the
``run.inputs`` of ``metrics_master.json``) and make the
:class:`~metrics_core.evaluation.evaluator.Evaluator` of the data set. The Dask engine, which loads
on its workers, gathers a :class:`Loaded` itself and finishes the run with :func:`run_of`.

>>> run = open_run(b"post_id,criterion,has_evidence,p_has_evidence\\n1,A,1,0.9\\n1,B,0,0.2\\n",
...                queries_name="q.csv")
>>> run.inputs[0]["file"], run.inputs[0]["bytes"], run.dataset.n_queries
('q.csv', 66, 2)
"""

from __future__ import annotations

import hashlib
import logging
import traceback
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from metrics_core.cpu_account import charged

if TYPE_CHECKING:
    from metrics_core.evaluation.evaluator import QueryLevelEvaluator
    from metrics_core.inputs.audit import AuditReport
    from metrics_core.inputs.loading import Limits, Loaded

__all__ = ["Run", "check_criterion_gates", "fingerprint", "open_run", "run_of"]

_LOG = logging.getLogger("metrics_core")

#: What :func:`open_run` does when the audit itself fails: ``"raise"`` (the command line: a
#: failure is a bug to report) or ``"log"`` (the app: the audit informs, and a failure in it
#: must not keep valid data from being shown; the run then has no audit).
AUDIT_FAILURE = ("raise", "log")


@dataclass(frozen=True)
class Run:
    """The inputs of one evaluation, ready to evaluate.

    ``loaded`` is the loader's view (data set, exclusions, warnings), ``audit`` the data audit
    (``None`` if it failed and failures were logged), ``evaluator`` the evaluator of the whole
    data set (it caches what the settings do not change), ``inputs`` the fingerprint of each
    input file: ``{"file", "sha256", "bytes"}``.
    """

    loaded: Loaded
    audit: AuditReport | None
    evaluator: QueryLevelEvaluator
    inputs: tuple[dict, ...]

    @property
    def dataset(self):
        return self.loaded.dataset


def fingerprint(source: Path | str | bytes, *, name: str | None = None) -> dict:
    """``{"file", "sha256", "bytes"}`` of a file, or of bytes called ``name``.

    >>> fingerprint(b"abc", name="x.csv")["sha256"][:12]
    'ba7816bf8f01'
    """
    h = hashlib.sha256()
    if isinstance(source, bytes | bytearray | memoryview):
        h.update(source)
        return {"file": name, "sha256": h.hexdigest(), "bytes": len(source)}
    path = Path(source)
    size = 0
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
            size += len(chunk)
    return {"file": name or path.name, "sha256": h.hexdigest(), "bytes": size}


def _fingerprints(sources, names) -> list[dict]:
    """The fingerprints of the files and bytes among ``sources`` (a table already in memory
    has no file to fingerprint)."""
    return [fingerprint(s, name=n) for s, n in zip(sources, names, strict=True)
            if isinstance(s, _FILES)]


_FILES = (str, Path, bytes, bytearray, memoryview)


def open_run(queries, candidates=None, *, queries_name: str | None = None,
             candidates_name: str | None = None, tables=(None, None),
             mapping: Mapping | None = None, limits: Limits | None = None,
             audit_failure: str = "raise") -> Run:
    """Load, audit and fingerprint the inputs and make their evaluator.

    Parameters
    ----------
    queries, candidates : path, bytes or pandas.DataFrame
        The inputs (``candidates`` optional: a long or queries-only table), as
        :func:`metrics_core.inputs.loading.load` reads them. Bytes need their names; a frame has no
        file, so no fingerprint.
    queries_name, candidates_name : str, optional
        The file names (default: the paths' names).
    tables : (table or None, table or None)
        Tables already read from ``queries`` / ``candidates`` (a Parquet prefetch, a frame
        read to detect its kind): loaded in place of the files, which are still fingerprinted.
    mapping, limits
        As :func:`metrics_core.inputs.loading.load` takes them.
    audit_failure : {"raise", "log"}
        See :data:`AUDIT_FAILURE`.

    The files are fingerprinted on a helper thread while they are loaded (hashing releases
    the GIL).
    """
    from metrics_core.inputs import loading

    if audit_failure not in AUDIT_FAILURE:
        raise ValueError(f"audit_failure must be one of {AUDIT_FAILURE}, not {audit_failure!r}")
    sources, names = (queries, candidates), [queries_name, candidates_name]
    loads = []
    for i, (source, table) in enumerate(zip(sources, tables, strict=True)):
        if table is not None and names[i] is None and isinstance(source, str | Path):
            names[i] = Path(source).name
        loads.append(source if table is None else table)
    with ThreadPoolExecutor(max_workers=1) as pool:
        hashing = pool.submit(charged(_fingerprints), sources, names)
        loaded = loading.load(*loads, queries_name=names[0], candidates_name=names[1],
                         mapping=mapping or None, limits=limits)
        inputs = hashing.result()
    return run_of(loaded, inputs=inputs, audit_failure=audit_failure)


def run_of(loaded: Loaded, *, inputs, evaluator: Callable | None = None,
           audit_failure: str = "raise") -> Run:
    """The :class:`Run` of inputs already loaded: audit, then ``evaluator(dataset, audit=,
    inputs=)`` (default :class:`~metrics_core.evaluation.evaluator.Evaluator`)."""
    from metrics_core.inputs.audit import audit as audit_of

    if evaluator is None:
        from metrics_core.evaluation.evaluator import Evaluator as evaluator
    try:
        report = audit_of(loaded.dataset, loaded=loaded)
    except Exception as exc:
        if audit_failure == "raise":
            raise
        _LOG.warning("data audit failed: %s\n%s", type(exc).__name__,
                     "".join(traceback.format_tb(exc.__traceback__)))
        report = None
    inputs = tuple(inputs)
    return Run(loaded=loaded, audit=report,
               evaluator=evaluator(loaded.dataset, audit=report, inputs=inputs),
               inputs=inputs)


def check_criterion_gates(config, dataset, *,
                          given_by: str = "--criterion-gate") -> None:
    """A per-criterion gate must name a criterion of the data (a typo is not ignored).
    ``given_by`` names where the gates came from (a flag, a settings file's field)."""
    unknown = [c for c, _, _ in config.criterion_gates if c not in set(dataset.criteria)]
    if unknown:
        known = ", ".join(map(str, dataset.criteria[:10]))
        raise ValueError(f"{given_by} names criteria the data does not have: "
                         f"{', '.join(map(repr, unknown))} (criteria: {known}"
                         f"{', …' if len(dataset.criteria) > 10 else ''})")
