"""Compare runs: several systems' predictions on the same queries (seed 003 §8.1, ablations).

- :func:`load_runs` reads each run (its own files, or one long table with a ``run`` column via
  :func:`split_runs`) and checks (:func:`check_runs`) that the runs have distinct names, cover
  the same ``(post_id, criterion)`` pairs and carry the same gold labels, naming the pairs or
  the first query that differ.
- :func:`ablation_table`: one row per run, the headline metrics with their intervals, mean ±
  std over folds where folds exist, the best value per column marked.
- :func:`compare`: each run against a reference: the paired difference with a paired bootstrap
  interval (the same resamples for both runs, by query or post, through the one bootstrap of
  :mod:`metrics_core.metrics.uncertainty`), DeLong's test for AUROC, McNemar's test for the
  decisions at τ and the gate's screen-in decision, a paired sign-flip randomisation test for the
  ranking and evidence means, and Holm's correction across criteria (labelled).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
import pandas as pd

from metrics_core import registry
from metrics_core.config import EvalConfig
from metrics_core.errors import InputError
from metrics_core.metrics import classification, gate
from metrics_core.metrics.uncertainty import bootstrap_cis

__all__ = ["ABLATION_METRICS", "N_FLIPS", "Run", "ablation_table", "check_names", "check_runs",
           "check_same_gold", "check_same_queries", "compare", "comparison_document", "delong",
           "holm", "load_runs", "mcnemar", "sign_flip", "split_runs"]

#: The headline columns of the ablation table (``review_per_1000`` = (UNCERTAIN + POS) / N).
ABLATION_METRICS = ("auroc", "auprc", "ece", "ndcg@10", "evidence_recall",
                    "screening_sensitivity", "alert_precision", "review_per_1000")
#: Mean metrics compared query by query (paired sign-flip test).
_MEANS = ("ndcg@10", "recall@10", "mrr", "evidence_recall")
#: Decisions compared pair by pair (McNemar): metric -> (which decision, which queries).
_DECISIONS = MappingProxyType({"sensitivity": ("threshold", 1), "specificity": ("threshold", 0),
                               "screening_sensitivity": ("screen_in", 1)})
#: Sign flips of the paired randomisation test: the command line and the dashboard use the
#: same number, so the same runs give the same p-values in both.
N_FLIPS = 10_000


@dataclass(frozen=True)
class Run:
    """One system's predictions: a name and its :class:`~metrics_core.data.dataset.Dataset`, with
    the fingerprints of its input files (:func:`metrics_core.run.fingerprint`) when loaded
    from files."""

    name: str
    dataset: object
    inputs: tuple[dict, ...] = ()


def _pairs(ds) -> pd.Index:
    return pd.Index(list(zip(ds.post_id.tolist(), ds.criterion.tolist(), strict=True)))


def check_same_queries(runs) -> None:
    """Every run must hold the same (post_id, criterion) pairs; the error names those that
    differ (the first few of each run, with counts)."""
    reference = runs[0]
    want = _pairs(reference.dataset)
    problems = []
    for run in runs[1:]:
        have = _pairs(run.dataset)
        if have.equals(want):
            continue
        missing, extra = want.difference(have), have.difference(want)
        parts = []
        if len(missing):
            parts.append(f"{len(missing):,} pairs of {reference.name!r} missing from "
                         f"{run.name!r}, e.g. " + ", ".join(map(str, missing[:3])))
        if len(extra):
            parts.append(f"{len(extra):,} pairs of {run.name!r} not in {reference.name!r}, "
                         "e.g. " + ", ".join(map(str, extra[:3])))
        problems.append(InputError("runs must cover the same (post_id, criterion) pairs",
                                   file=run.name, hint="; ".join(parts) or "order differs",
                                   code="invalid_value"))
    if problems:
        raise problems[0] if len(problems) == 1 else InputError(
            "; ".join(p.render() for p in problems), code="invalid_value")


def check_names(names) -> None:
    """At least two runs, each with its own name (the error names the duplicates)."""
    names = [str(n) for n in names]
    if len(names) < 2:
        raise InputError("a comparison needs at least two runs", hint=f"got {names}",
                         code="invalid_value")
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise InputError("every run needs its own name",
                         hint="given more than once: " + ", ".join(map(repr, twice)),
                         code="invalid_value")


def _gold_rows(ds) -> tuple[np.ndarray, np.ndarray]:
    """(query index, sent_uid) of every gold candidate, sorted: the gold sets, whatever the
    order the run's scores put the candidates in."""
    query = np.repeat(np.arange(ds.n_queries), np.diff(ds.offsets))[ds.is_gold]
    uid = np.asarray(ds.sent_uid, dtype=object)[ds.is_gold].astype(str)
    order = np.lexsort((uid, query))
    return query[order], uid[order]


def _first_gold_difference(a, b) -> tuple[int, str] | None:
    """The first query (index) whose gold differs between data sets ``a`` and ``b`` (same
    queries, same order), and how; None when the gold is the same."""
    firsts = []
    differ = np.flatnonzero(a.y != b.y)
    if differ.size:
        firsts.append((int(differ[0]), "has_evidence", int(differ.size)))
    n_gold = np.flatnonzero(a.n_gold != b.n_gold)
    if n_gold.size:
        firsts.append((int(n_gold[0]), "n_gold", int(n_gold.size)))
    qa, ua = _gold_rows(a)
    qb, ub = _gold_rows(b)
    count_a = np.bincount(qa, minlength=a.n_queries)
    count_b = np.bincount(qb, minlength=b.n_queries)
    sets = count_a != count_b
    if not sets.any():  # as many gold in each query: compare the sorted sent_uids
        mismatch = np.flatnonzero(ua != ub)
        sets = np.zeros(a.n_queries, dtype=bool)
        sets[np.unique(qa[mismatch])] = True
    if sets.any():
        firsts.append((int(np.flatnonzero(sets)[0]), "is_gold", int(sets.sum())))
    if not firsts:
        return None
    q, column, count = min(firsts)
    return q, column, count


def check_same_gold(runs) -> None:
    """Every run must carry the same gold labels (``has_evidence``, ``is_gold``, ``n_gold``):
    a paired difference between runs whose labels differ measures the labels, not the runs.
    The error names the runs, the first differing query and how many differ."""
    reference = runs[0]
    for run in runs[1:]:
        found = _first_gold_difference(reference.dataset, run.dataset)
        if found is None:
            continue
        q, column, count = found
        ds_a, ds_b = reference.dataset, run.dataset
        if column == "has_evidence":
            how = f"has_evidence {int(ds_a.y[q])} in {reference.name!r}, {int(ds_b.y[q])} in " \
                  f"{run.name!r}"
        elif column == "n_gold":
            how = f"n_gold {int(ds_a.n_gold[q])} in {reference.name!r}, " \
                  f"{int(ds_b.n_gold[q])} in {run.name!r}"
        else:
            gold = []
            for ds in (ds_a, ds_b):
                rows, uids = _gold_rows(ds)
                gold.append(sorted(uids[rows == q].tolist()))
            how = (f"gold sentences {gold[0]} in {reference.name!r}, {gold[1]} in "
                   f"{run.name!r}")
        raise InputError(
            f"runs {reference.name!r} and {run.name!r} have different gold labels: a "
            "comparison needs the same gold in every run", file=run.name,
            hint=f"first at post_id {str(ds_a.post_id[q])!r}, criterion "
                 f"{str(ds_a.criterion[q])!r}: {how} ({count} queries differ in {column})",
            code="invalid_value")


def check_runs(runs) -> None:
    """Distinct names, the same (post_id, criterion) pairs and the same gold in every run."""
    check_names([r.name for r in runs])
    check_same_queries(runs)
    check_same_gold(runs)


def load_runs(specs, *, limits=None) -> list[Run]:
    """Runs from ``(name, queries, candidates_or_None)`` specs (paths), each opened with
    :func:`metrics_core.run.open_run`."""
    from metrics_core.run import open_run

    check_names([name for name, _, _ in specs])
    runs = []
    for name, q, c in specs:
        run = open_run(q, c, limits=limits)
        runs.append(Run(name, run.dataset, run.inputs))
    check_runs(runs)
    return runs


def split_runs(frame: pd.DataFrame, candidates: pd.DataFrame | None = None, *,
               column: str = "run", source: str | None = None,
               candidates_source: str | None = None) -> list[Run]:
    """Runs from one long table (or queries + candidates tables) with a ``run`` column.

    ``source`` (``candidates_source``) names the file in errors; an error in one run's rows
    names the run and the rows as the file numbers them (not as the run's own rows)."""
    from metrics_core.inputs import loading

    if column not in frame.columns:
        raise InputError("required column is missing: one table holds several runs only with "
                         "a column naming each row's run", file=source, column=column,
                         hint="upload one file per run (at least two), or one table with a "
                              f"{column!r} column", code="missing_column")
    runs = []
    for name in pd.unique(frame[column]):
        rows = (frame[column] == name).to_numpy()
        q = frame[rows].drop(columns=column)
        c_rows = None if candidates is None else (candidates[column] == name).to_numpy()
        c = None if candidates is None else candidates[c_rows].drop(columns=column)
        q_name, c_name = source or "queries", candidates_source or "candidates"
        try:
            loaded = loading.load(q, c, queries_name=q_name, candidates_name=c_name)
        except InputError as exc:
            positions = {q_name: np.flatnonzero(rows)}
            if c_rows is not None:
                positions[c_name] = np.flatnonzero(c_rows)
            raise _in_file(exc, positions, str(name)) from None
        runs.append(Run(str(name), loaded.dataset))
    check_runs(runs)
    return runs


def _in_file(exc: InputError, positions: dict, run: str) -> InputError:
    """``exc`` (one error or several) about one run's rows of a long table, said of the
    whole file: its rows numbered as the file numbers them (``positions[file]``: the 0-based
    rows of the run in that file), the run named."""
    from metrics_core.errors import InputErrors

    def one(e: InputError) -> InputError:
        where = positions.get(e.file)
        rows = e.rows if where is None else [int(where[r - 1]) + 1 for r in e.rows]
        hint = f"run {run!r}" + (f"; {e.hint}" if e.hint else "")
        return InputError(e.rule, file=e.file, column=e.column, rows=rows, n_rows=e.n_rows,
                          hint=hint, code=e.code, values=e.values, line_offset=e.line_offset)

    if isinstance(exc, InputErrors):
        return InputErrors([one(e) for e in exc.errors])
    return one(exc)


# ------------------------------------------------------------------------------ tests
def delong(y, p_reference, p_run) -> tuple[float, float, float]:
    """DeLong's test of two correlated AUROCs (fast algorithm of Sun & Xu, 2014).

    Returns ``(auc_run - auc_reference, its standard error, two-sided p)``; NaN with one class.
    """
    from scipy.stats import norm, rankdata

    y = np.asarray(y)
    pos, neg = y == 1, y == 0
    m, n = int(pos.sum()), int(neg.sum())
    if m < 2 or n < 2:  # no variance estimate with fewer than two of a class
        return math.nan, math.nan, math.nan
    scores = np.vstack([np.asarray(p_reference, float), np.asarray(p_run, float)])
    x, z = scores[:, pos], scores[:, neg]
    tx = rankdata(x, axis=1)
    tz = rankdata(z, axis=1)
    tall = rankdata(np.hstack([x, z]), axis=1)
    auc = (tall[:, :m].sum(axis=1) / m - (m + 1) / 2.0) / n
    v01 = (tall[:, :m] - tx) / n
    v10 = 1.0 - (tall[:, m:] - tz) / m
    cov = np.cov(v01) / m + np.cov(v10) / n
    var = cov[0, 0] + cov[1, 1] - 2 * cov[0, 1]
    diff = float(auc[1] - auc[0])
    if var <= 0:
        return diff, 0.0, (1.0 if diff == 0 else 0.0)
    se = math.sqrt(var)
    return diff, se, float(2 * norm.sf(abs(diff) / se))


def mcnemar(reference, run) -> tuple[int, int, float, str]:
    """McNemar's test of paired 0/1 outcomes: ``(b, c, p, method)`` where ``b`` counts
    reference 1 / run 0 and ``c`` reference 0 / run 1. Exact binomial below 25 discordant
    pairs, else chi-square with continuity correction."""
    from scipy.stats import binomtest, chi2

    reference, run = np.asarray(reference, bool), np.asarray(run, bool)
    b, c = int((reference & ~run).sum()), int((~reference & run).sum())
    if b + c == 0:
        return b, c, 1.0, "exact"
    if b + c < 25:
        return b, c, float(binomtest(min(b, c), b + c, 0.5).pvalue), "exact"
    stat = (abs(b - c) - 1) ** 2 / (b + c)
    return b, c, float(chi2.sf(stat, 1)), "chi-square (continuity corrected)"


def sign_flip(differences, *, n_flips: int = 10_000, seed: int = 0) -> float:
    """Two-sided p of a paired randomisation test: the signs of per-query differences are
    flipped at random; p = (1 + #{|mean| ≥ |observed|}) / (1 + n_flips)."""
    d = np.asarray(differences, dtype=np.float64)
    d = d[np.isfinite(d)]
    if d.size == 0:
        return math.nan
    observed = abs(d.mean())
    rng = np.random.Generator(np.random.PCG64(seed))
    hits, done, step = 0, 0, max(1, (1 << 20) // d.size)
    while done < n_flips:
        b = min(step, n_flips - done)
        signs = rng.integers(0, 2, size=(b, d.size), dtype=np.int8) * 2 - 1
        hits += int((np.abs(signs @ d) / d.size >= observed - 1e-12).sum())
        done += b
    return (1 + hits) / (1 + n_flips)


def holm(p_values) -> np.ndarray:
    """Holm's step-down adjustment (NaN stays NaN)."""
    p = np.asarray(p_values, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    order = ok[np.argsort(p[ok], kind="stable")]
    m = order.size
    adjusted = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    out[order] = adjusted
    return out


# -------------------------------------------------------------------- paired statistics
def _per_query(ev, cfg, name: str) -> tuple[np.ndarray, np.ndarray]:
    """(values, mask) of a mean metric per query, on its protocol's queries."""
    inter = ev.intermediate(cfg)
    if name == "evidence_recall":
        return inter.rec, inter.emask
    return inter.rk[name], inter.rmask


def _decisions(ev, cfg, kind: str) -> np.ndarray:
    inter = ev.intermediate(cfg)
    if kind == "threshold":
        return inter.pred.astype(bool)
    return inter.states != gate.GateState.NEG


def compare(runs, *, reference: str | None = None, config: EvalConfig | None = None,
            n_flips: int = N_FLIPS,
            progress: Callable[[int, int], None] | None = None) -> list[dict]:
    """Every run against the reference run (default: the first), metric by metric.

    ``config.bootstrap`` resamples (unit ``config.bootstrap_unit``, ``config.seed``) give the
    paired intervals of the differences; 0 gives none. ``progress(done, total)`` is called as
    the resamples of all the comparisons are computed (raise to cancel).

    Each row: both runs' values, ``difference`` (run − reference, None when undefined),
    ``ci95`` and ``ci_method`` (how the interval was computed), the test and its p-value,
    ``n`` (the paired queries the difference is computed on) and ``n_positive`` (those with
    evidence), and ``note``: why a value, interval or p-value is missing (None when nothing is).
    """
    from metrics_core.report import Evaluator

    cfg = config or EvalConfig(bootstrap=2000)
    by_name = {r.name: r for r in runs}
    ref = by_name[reference or runs[0].name]
    ev_ref = Evaluator(ref.dataset)
    e_ref = ev_ref.evaluate(cfg.replace(bootstrap=0))
    rows = []
    others = [run for run in runs if run is not ref]
    flips = f"paired sign-flip randomisation ({n_flips:,} flips)"
    for i, run in enumerate(others):
        ev_run = Evaluator(run.dataset)
        e_run = ev_run.evaluate(cfg.replace(bootstrap=0))
        step = None if progress is None else (
            lambda done, total, i=i: progress(i * total + done, len(others) * total))
        cis = _paired_intervals(ev_ref, ev_run, cfg, progress=step)
        ds = ref.dataset
        base = {"reference": ref.name, "run": run.name}
        row = _RowMaker(rows, base, e_ref, e_run, cis, cfg, ds.y)
        everyone = np.ones(ds.n_queries, dtype=bool)

        _, _, p_auroc = delong(ds.y, ds.p, run.dataset.p)
        row("auroc", "all_queries", "DeLong", p_auroc, everyone,
            None if np.isfinite(p_auroc) else _DELONG_NEEDS)
        row("auprc", "all_queries", None, None, everyone)
        row("brier", "all_queries", None, None, everyone)
        for metric, (kind, label) in _DECISIONS.items():
            mask = ds.y == label
            _, _, p, method = mcnemar(_decisions(ev_ref, cfg, kind)[mask],
                                      _decisions(ev_run, cfg, kind)[mask])
            row(metric, e_ref.record(metric).subset, f"McNemar ({method})", p, mask)
        for metric in _MEANS:
            v_ref, mask = _per_query(ev_ref, cfg, metric)
            v_run, _ = _per_query(ev_run, cfg, metric)
            p = sign_flip((v_run - v_ref)[mask], n_flips=n_flips, seed=cfg.seed)
            row(metric, e_ref.record(metric).subset, flips, p, mask)
        rows.extend(_per_criterion_auroc(ref, run, base))
    return rows


def _value(record) -> float | None:
    """A record's value, None when undefined (a record of one class only keeps a placeholder
    value, e.g. AUROC 0.5, that must never be shown or subtracted)."""
    value = record.value
    if not record.defined or value is None or not math.isfinite(value):
        return None
    return value


#: Why DeLong's test gives no p-value or interval.
_DELONG_NEEDS = ("no DeLong interval or p-value: it needs at least two queries with and two "
                 "without evidence")


def _interval_method(ci) -> str:
    """How a paired bootstrap interval was computed (and how many resamples it left out)."""
    units = {"query": "queries", "post": "posts"}.get(ci.unit, ci.unit)
    text = f"paired percentile bootstrap, {ci.n_resamples:,} resamples of {units}"
    if ci.n_excluded:
        text += (f" ({ci.n_excluded:,} without a defined difference left out, "
                 f"{ci.n_valid:,} used)")
    return text


@dataclass(frozen=True)
class _RowMaker:
    """Appends one comparison row: both values, their difference and its paired interval,
    the queries it is computed on and why anything is missing."""

    rows: list
    base: dict
    e_ref: object
    e_run: object
    cis: dict
    cfg: EvalConfig
    y: np.ndarray

    def __call__(self, metric, subset, test, p, mask, note=None) -> None:
        from metrics_core.report.wording import undefined_reason

        ref, run = self.e_ref.record(metric), self.e_run.record(metric)
        a, b = _value(ref), _value(run)
        if not mask.any():  # no pair to test: no p-value (McNemar on no pairs is not 1)
            p = None
        diff = None if a is None or b is None else b - a
        ci = self.cis.get(metric)
        notes = [f"{name}: {undefined_reason(r)}" for name, r in (("reference", ref),
                                                                 ("run", run))
                 if undefined_reason(r)]
        if diff is None and not notes:
            notes.append("undefined: a run's value is undefined")
        if ci is None and diff is not None:
            notes.append("no interval: 0 bootstrap resamples" if self.cfg.bootstrap == 0 else
                         "no interval: the difference is undefined in every resample")
        if note and diff is not None:
            notes.append(note)
        self.rows.append({**self.base, "metric": metric, "value_reference": a,
                          "value_run": b, "difference": diff,
                          "ci95": None if ci is None else [ci.lo, ci.hi],
                          "ci_method": None if ci is None else _interval_method(ci),
                          "test": test, "p_value": p, "p_adjusted": None, "subset": subset,
                          "n": int(mask.sum()), "n_positive": int((self.y[mask] == 1).sum()),
                          "note": "; ".join(notes) or None})


def _per_criterion_auroc(ref, run, base) -> list[dict]:
    """DeLong per criterion, Holm-adjusted across the criteria. The difference is that of the
    two AUROCs whenever both are defined (one query of a class suffices); DeLong's interval
    and p-value need two of each class."""
    ds = ref.dataset
    out = []
    for c in ds.criteria:
        m = ds.criterion == c
        n, n_pos = int(m.sum()), int(ds.y[m].sum())
        diff, se, p = delong(ds.y[m], ds.p[m], run.dataset.p[m])
        a = classification.roc_auc(ds.y[m], ds.p[m])
        b = classification.roc_auc(ds.y[m], run.dataset.p[m])
        defined = a.defined and b.defined
        tested = defined and np.isfinite(p)
        if not defined:
            note = ("undefined: only one class present (needs queries with and without "
                    f"evidence; {n_pos:,} of {n:,} with evidence)")
        elif not tested:
            note = f"{_DELONG_NEEDS} ({n_pos:,} of {n:,} with evidence)"
        else:
            note = None
        out.append({**base, "metric": "auroc", "value_reference": a.value if defined else None,
                    "value_run": b.value if defined else None,
                    "difference": float(b.value - a.value) if defined else None,
                    "ci95": [diff - 1.959964 * se, diff + 1.959964 * se]
                    if tested and np.isfinite(se) else None,
                    "ci_method": "DeLong (normal approximation)"
                    if tested and np.isfinite(se) else None, "test": "DeLong",
                    "p_value": p if tested else None, "p_adjusted": None,
                    "subset": f"criterion {c}", "n": n, "n_positive": n_pos, "note": note})
    adjusted = holm([math.nan if r["p_value"] is None else r["p_value"] for r in out])
    for r, a in zip(out, adjusted, strict=True):
        r["p_adjusted"] = None if not np.isfinite(a) else float(a)
        r["adjustment"] = "Holm across criteria"
    return out


def _mean_difference(d: np.ndarray, m: np.ndarray):
    """Statistic: weighted mean of the per-query differences ``d`` over the rows ``m``."""
    return lambda w: (w @ d) / (w @ m)


def _paired_intervals(ev_ref, ev_run, cfg, *, progress=None) -> dict:
    """Percentile intervals (:class:`~metrics_core.metrics.uncertainty.CI`) of run −
    reference on identical resamples, the defined ones."""
    if cfg.bootstrap == 0:
        return {}
    ds = ev_ref.ds
    prep_ref, prep_run = ev_ref.prepared(), ev_run.prepared()
    sq_ref, sq_run = (ds.p - ds.y) ** 2, (ev_run.ds.p - ds.y) ** 2
    statistics = {
        "auroc": lambda w: (classification.auroc_auprc_weighted(prep_run, weights=w)[0]
                            - classification.auroc_auprc_weighted(prep_ref, weights=w)[0]),
        "auprc": lambda w: (classification.auroc_auprc_weighted(prep_run, weights=w)[1]
                            - classification.auroc_auprc_weighted(prep_ref, weights=w)[1]),
        "brier": lambda w: (w @ (sq_run - sq_ref)) / w.sum(axis=1),
    }
    for metric in _MEANS:
        v_ref, mask = _per_query(ev_ref, cfg, metric)
        v_run, _ = _per_query(ev_run, cfg, metric)
        d = np.where(mask, np.nan_to_num(v_run - v_ref), 0.0)
        statistics[metric] = _mean_difference(d, mask.astype(float))
    for metric, (kind, label) in _DECISIONS.items():
        mask = (ds.y == label).astype(float)
        a = _decisions(ev_ref, cfg, kind) == bool(label)
        b = _decisions(ev_run, cfg, kind) == bool(label)
        d = (b.astype(float) - a.astype(float)) * mask
        statistics[metric] = _mean_difference(d, mask)
    unit_of_row = ds.post_code if cfg.bootstrap_unit == "post" else None
    n_units = int(ds.posts.size) if unit_of_row is not None else ds.n_queries
    with np.errstate(invalid="ignore", divide="ignore"):
        cis = bootstrap_cis(statistics, n_units, unit_of_row=unit_of_row,
                            n_resamples=cfg.bootstrap, seed=cfg.seed, unit=cfg.bootstrap_unit,
                            progress=progress)
    return {k: ci for k, ci in cis.items() if ci.defined}


def ablation_table(runs, config: EvalConfig | None = None) -> pd.DataFrame:
    """One row per run: the headline metrics, their intervals, fold mean ± std, the best
    marked (every run at the best value: runs that tie are all marked)."""
    from metrics_core.report import Evaluator

    cfg = config or EvalConfig(bootstrap=2000)
    rows = []
    for run in runs:
        ev = Evaluator(run.dataset).evaluate(cfg)
        row = {"run": run.name}
        for name in ABLATION_METRICS:
            if name == "review_per_1000":
                u, p = _value(ev.record("uncertain_rate")), _value(ev.record("pos_rate"))
                value = None if u is None or p is None else (u + p) * 1000
                row[name], ci = value, None
            else:
                r = ev.record(name)
                row[name] = _value(r)
                ci = r.ci95 if row[name] is not None else None
            row[f"{name}_ci_lo"], row[f"{name}_ci_hi"] = ci if ci is not None else (None, None)
            folds = ev.per_fold
            if folds is not None and name in folds.columns:
                row[f"{name}_fold_mean"] = folds.loc["mean", name]
                row[f"{name}_fold_std"] = folds.loc["std", name]
        rows.append(row)
    table = pd.DataFrame(rows)
    for name in ABLATION_METRICS:
        values = pd.to_numeric(table[name], errors="coerce")
        higher = False if name == "review_per_1000" else registry.spec(name).higher_is_better
        if values.notna().any():  # every run at the best value (identical runs tie)
            best = values.max() if higher else values.min()
            table[f"{name}_best"] = (values == best).to_numpy()
    return table


def comparison_document(runs, rows, ablation: pd.DataFrame, config: EvalConfig, *,
                        marks=None, guarantees=None) -> dict:
    """comparison.json, as ``metrics-core compare`` writes it and the dashboard's Compare page
    downloads it: the runs' input files, the configuration (thresholds included) and how each
    threshold was chosen (``marks``, ``guarantees``:
    :func:`metrics_core.config.threshold_provenance`; none given: pre-specified), the rows of
    :func:`compare` and the ablation table."""
    from metrics_core.config import threshold_provenance
    from metrics_core.evaluation.result import clean, frame_records

    return {"inputs": [i for run in runs for i in run.inputs],
            "config": config.to_dict(), **threshold_provenance(config, marks, guarantees),
            "runs": [run.name for run in runs], "comparisons": clean(rows),
            "ablation": frame_records(ablation)}
