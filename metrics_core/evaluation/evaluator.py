"""The evaluator: one data set, its data-only parts cached, one evaluation per configuration.

:class:`Evaluator` wraps a :class:`~metrics_core.data.dataset.Dataset` and keeps, in one bounded
memo, what depends only on the data and a sub-configuration (ROC / PR, ranking per-query
arrays, dynamic-K mass profiles, bootstrap intervals of data-only metrics, per-group
discrimination). :meth:`Evaluator.evaluate` builds one frozen :class:`Intermediate` per
configuration (gate states, selected K, per-query evidence and ranking arrays, masks) and hands
it to the section functions (:mod:`metrics_core.evaluation.sections`), the per-group tables
(:mod:`metrics_core.evaluation.tables`) and the checks (:mod:`metrics_core.evaluation.checks`).
"""

from __future__ import annotations

import abc
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from metrics_core.config import EvalConfig, Filters
from metrics_core.data.dataset import Queries
from metrics_core.errors import InputError
from metrics_core.evaluation.inflight import ComputeOnce, in_background
from metrics_core.metrics import calibration, classification, dynamic_k, gate, outcomes
from metrics_core.metrics import ranking as ranking_mod

__all__ = ["GAMMA_SWEEP", "GRID_STEPS", "Evaluator", "Intermediate", "QueryLevelEvaluator",
           "gate_grid_frame", "reference_k"]

POS = "positives_only"
#: γ values of the sweep (seed 003 §8.2); the current γ is added.
GAMMA_SWEEP = (0.7, 0.8, 0.9, 0.95)
#: τ values of the (τ_neg, τ_pos) grid.
GRID_STEPS = tuple(np.round(np.arange(0.0, 1.0001, 0.05), 2).tolist())
#: Bounds of the memo of one evaluator (entries, and bytes of the arrays it holds).
KEPT_ENTRIES = 64
KEPT_BYTES = 512 << 20
#: From this many queries on, :meth:`Evaluator.evaluate` computes the parts that do not
#: depend on the selected K (ranking metrics, ROC / PR, calibration in the large) on a helper
#: thread while the caller computes K (numpy releases the interpreter for the large arrays,
#: so the two share the cores). Smaller data sets gain nothing from the thread.
PREFETCH_MIN_QUERIES = 100_000


def reference_k(ks: tuple[int, ...]) -> int:
    """The K of the overview and the per-query table: 10 when computed, else the largest K
    below it (else the smallest K)."""
    below = [k for k in ks if k <= 10]
    return 10 if 10 in ks else (max(below) if below else min(ks))


@dataclass(frozen=True, eq=False)
class Intermediate:
    """Everything setting-dependent of one run, computed once (per-query arrays)."""

    cfg: EvalConfig
    states: np.ndarray     # gate state per query (0 NEG, 1 UNCERTAIN, 2 POS)
    pred: np.ndarray       # 1 where p >= τ, else 0
    k: np.ndarray          # selected K per query
    hits: np.ndarray       # gold within the selected K
    rec: np.ndarray        # evidence recall per query
    prec: np.ndarray       # evidence precision per query
    emask: np.ndarray      # queries of the evidence protocol
    rk: dict               # ranking metric -> per-query values
    rmask: np.ndarray      # queries of the ranking protocol
    ref: int               # reference K


def _nbytes(value, depth: int = 0) -> int:
    """Approximate memory held by a memo value (arrays found up to two levels deep).

    A value's dicts and lists are read from a copy taken at once (``list(...)``: one step under
    the interpreter's lock): another thread may change them while they are summed, e.g. the
    helper thread of a kept count matrix, which deletes its own attributes when it ends
    (``threading.Thread.run``), or a shared value other callers fill."""
    if isinstance(value, np.ndarray):
        return value.nbytes
    if depth > 2:
        return 0
    if isinstance(value, dict):
        return sum(_nbytes(v, depth + 1) for v in list(value.values()))
    if isinstance(value, list | tuple):
        return sum(_nbytes(v, depth + 1) for v in list(value))
    if hasattr(value, "__dict__"):
        return sum(_nbytes(v, depth + 1) for v in list(vars(value).values()))
    return sys.getsizeof(value) if depth == 0 else 0


class QueryLevelEvaluator(abc.ABC):
    """The computation of a run over its queries, and its memo.

    It keeps the data-only parts of one data set's computation in one bounded memo
    (:meth:`cached`), makes the evaluators of its filters and computes every query-level part
    (classification, calibration, the gate, the γ-independent tables). What reads the
    candidates (the ranking values, the selected K, evidence recall / precision, the γ
    sweep) is the subclass's: :class:`Evaluator` computes it from the candidates it holds;
    the Dask engine's evaluator (:class:`metrics_core.engines.gathered.GatheredEvaluator`)
    reads what its workers computed.

    Parameters
    ----------
    dataset : Queries
        A :class:`Dataset`, or another :class:`~metrics_core.data.dataset.Queries` whose
        subclass gives the candidates' counts.
    audit : AuditReport, optional
        Attached to every :class:`Evaluation` (fold / split disjointness feeds the checks).
    inputs : sequence of dict, optional
        ``{"file", "sha256", "bytes"}`` of each input file, for the run fingerprint.
    cohorts : CohortSource, optional
        The cohort columns of the data (:class:`metrics_core.inputs.cohort_columns.CohortSource`),
        which a cohort filter (``Filters.cohorts``) reads; kept by the evaluators of subsets.
    """

    def __init__(self, dataset: Queries, *, audit=None, inputs=(), cohorts=None):
        self.ds = dataset
        self.audit = audit
        self.inputs = tuple(inputs)
        self.cohorts = cohorts
        self._cache: OrderedDict = OrderedDict()
        self._sizes: dict = {}
        # The memo is shared by threads (the prefetch below; app sessions sharing the demo's
        # evaluator): one lock guards it, and a value being computed is computed once, the
        # other callers waiting for it.
        self._once = ComputeOnce()
        #: The score-ordered passes of the curves' intervals in progress on this evaluator,
        #: by bootstrap settings (:func:`metrics_core.evaluation.intervals.help_curve_pass`
        #: finds one to help with); an entry lives while its pass runs. Guarded by
        #: :attr:`passes_lock`.
        self.passes: dict = {}
        self.passes_lock = threading.Lock()

    def computed(self, key) -> bool:
        """Whether the memo holds ``key``'s value now (computed, not in the making)."""
        with self._once.lock:
            return key in self._cache

    def in_the_making(self, key) -> threading.Event | None:
        """The event set when another thread's computation of ``key`` ends (None: the memo
        holds ``key`` or nothing computes it): a caller can wait for it in steps, doing
        something else between them, instead of blocking in :meth:`cached`."""
        with self._once.lock:
            return None if key in self._cache else self._once.running.get(key)

    def cached(self, key, compute: Callable):
        """``compute()``, kept under ``key`` in the evaluator's cache: the one memo of the
        evaluation's parts (this class's and those of ``assemble``, ``intervals`` and
        ``tables``, keyed by the sub-configurations they read). A bounded LRU: at most
        :data:`KEPT_ENTRIES` values and about :data:`KEPT_BYTES`.

        Thread-safe: a caller that asks for a value another thread is computing waits for it
        (and computes it itself if that failed, so it gets the error in its own thread).
        """
        cache = self._cache

        def stored(key):
            if key in cache:
                cache.move_to_end(key)
                return True, cache[key]
            return False, None

        def store(key, value):
            cache[key] = value
            self._sizes[key] = _nbytes(value)
            while len(cache) > 1 and (len(cache) > KEPT_ENTRIES
                                      or sum(self._sizes.values()) > KEPT_BYTES):
                old, _ = cache.popitem(last=False)
                self._sizes.pop(old, None)

        return self._once.get(key, stored, compute, store)

    @property
    def _running(self) -> dict:
        """The memo's keys being computed now (empty when nothing is in flight)."""
        return self._once.running

    def prefetch(self, cfg: EvalConfig) -> threading.Thread | None:
        """Start computing, on a helper thread, the parts of ``cfg``'s evaluation that do not
        depend on the selected K; :meth:`evaluate` calls it for data sets of at least
        :data:`PREFETCH_MIN_QUERIES` queries. The values are the memo's, so a caller that
        needs one before it is done waits for it. A failure is left to the caller that needs
        the value (it computes it again and gets the error)."""
        if self.ds.n_queries < PREFETCH_MIN_QUERIES:
            return None

        return in_background((lambda: self.ranking_summary(cfg), self.classification,
                              self.logistic_calibration), "metrics_core-prefetch")

    # ---- filters ----
    def for_filters(self, filters: Filters) -> QueryLevelEvaluator:
        """The evaluator of the queries ``filters`` keeps (itself when nothing is filtered)."""
        if not filters.active:
            return self

        def compute():
            ds = self.ds
            keep = np.ones(ds.n_queries, dtype=bool)
            if filters.fold is not None and ds.fold is not None:
                keep &= ds.fold.astype(str) == filters.fold
            if filters.split is not None and ds.split is not None:
                keep &= ds.split.astype(str) == filters.split
            if filters.criteria:
                keep &= np.isin(ds.criterion, np.array(filters.criteria, dtype=object))
            if filters.cohorts:
                if self.cohorts is None:
                    raise InputError("a cohort filter needs the data's cohort columns",
                                     hint=f"the filter names {', '.join(filters.cohorts)}; "
                                          f"the queries table (or a posts table) must carry "
                                          f"those columns")
                keep &= self.cohorts.keep(ds, filters.cohort_values(),
                                          bins=filters.bins_of_cohorts())
            if not keep.any():
                raise InputError(f"no queries match the filter ({filters.describe()})",
                                 hint="choose another fold, split, criteria or cohort")
            return self.subset(keep)

        return self.cached(("filtered", filters), compute)

    # ---- what reads the candidates (the subclass's) ----
    @abc.abstractmethod
    def subset(self, keep: np.ndarray) -> QueryLevelEvaluator:
        """The evaluator of the queries in ``keep`` (filters)."""

    @abc.abstractmethod
    def ranking(self, cfg: EvalConfig) -> dict[str, np.ndarray]:
        """The ranking metrics' per-query values (contract §3): name -> one value a query."""

    @abc.abstractmethod
    def select_k(self, cfg: EvalConfig, states: np.ndarray, *, gamma: float | None = None
                 ) -> np.ndarray:
        """The selected K of every query (contract §7), at ``gamma`` if given."""

    @abc.abstractmethod
    def evidence(self, cfg: EvalConfig, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Evidence recall / precision per query at the selected ``k`` (§7)."""

    @abc.abstractmethod
    def gamma_sweep(self, config: EvalConfig, gammas: Iterable[float] = GAMMA_SWEEP
                    ) -> pd.DataFrame:
        """Mean K, evidence recall / precision and workload for each γ (seed 003 §8.2)."""

    # ---- data-only parts (cached) ----
    def ranking_mask(self, cfg: EvalConfig) -> np.ndarray:
        return self.ds.positives if cfg.ranking_protocol == POS else np.ones(
            self.ds.n_queries, dtype=bool)

    def ranking_summary(self, cfg: EvalConfig) -> dict:
        rk, rmask = self.ranking(cfg), self.ranking_mask(cfg)

        def compute():
            rows = np.flatnonzero(rmask)  # once: a gather per metric instead of a mask pass
            return {name: ranking_mod.summarize(values.take(rows)) for name, values in rk.items()}

        return self.cached(("ranking_summary", cfg.ranking), compute)

    def prepared(self):
        """(y, p) validated and sorted once, for every classification kernel (cached)."""
        return self.cached(("prepared",), lambda: classification.prepare(
            self.ds.y, self.ds.p, order=self.p_order()))

    def p_order(self) -> np.ndarray:
        """The queries ordered by p ascending, ties in query order (cached, read-only): the
        one sort of p that the classification, calibration and decision-curve kernels and
        the per-group tables all gather along."""
        def compute():
            order = np.argsort(self.ds.p, kind="stable")
            order.setflags(write=False)
            return order

        return self.cached(("p_order",), compute)

    def classification(self) -> dict:
        def compute():
            s = self.prepared()
            return {"auroc": classification.roc_auc(s),
                    "auprc": classification.average_precision(s),
                    "roc": classification.roc_points(s), "pr": classification.pr_points(s)}
        return self.cached(("classification",), compute)

    def tpr_at_fpr(self, cfg: EvalConfig):
        return self.cached(("tpr_at_fpr", cfg.tpr_fprs), lambda: tuple(
            classification.tpr_at_fpr(self.prepared(), targets=cfg.tpr_fprs)))

    def calibration_inputs(self, cfg: EvalConfig) -> tuple[np.ndarray, np.ndarray]:
        """(confidence, outcome) of the calibration view: positive-class p or top label."""
        if cfg.calibration_view == "top_label":
            return self.cached(("top_label",), lambda: calibration.top_label(self.ds.y, self.ds.p))
        return self.ds.p, self.ds.y

    def reliability(self, cfg: EvalConfig):
        def compute():
            conf, outcome = self.calibration_inputs(cfg)
            return calibration.reliability_bins(outcome, conf, n_bins=cfg.n_bins,
                                                strategy=cfg.binning)
        return self.cached(("reliability", cfg.n_bins, cfg.binning, cfg.calibration_view), compute)

    def logistic_calibration(self):
        """Calibration in the large, intercept and slope of p (data-only, cached)."""
        return self.cached(("logistic_calibration",), lambda: calibration.logistic_calibration(
            self.ds.y, self.ds.p, order=self.p_order()))

    def smoothed_calibration(self) -> pd.DataFrame:
        """Spline calibration curve of p with its pointwise band (data-only, cached)."""
        return self.cached(("smoothed_calibration",), lambda: calibration.smoothed_calibration(
            self.ds.y, self.ds.p, order=self.p_order()))

    def decision_curve(self, cfg: EvalConfig) -> pd.DataFrame:
        """Net benefit over threshold probability, with bootstrap bands when the run has
        resamples (data-only per bootstrap settings, cached)."""
        from metrics_core.metrics import decision

        def compute():
            ds = self.ds
            frame = decision.decision_curve(ds.y, ds.p, order=self.p_order())
            if cfg.bootstrap and ds.n_queries:
                lo, hi = self._curve_intervals(cfg)["net_benefit"]
                frame["net_benefit_ci_lo"], frame["net_benefit_ci_hi"] = lo, hi
            return frame

        return self.cached(("decision_curve", cfg.bootstrap_config), compute)

    def _curve_intervals(self, cfg: EvalConfig) -> dict:
        """The bootstrap's score-ordered intervals and bands (one pass, cached)."""
        from metrics_core.evaluation.intervals import curve_intervals

        return curve_intervals(self, cfg)

    def roc_band(self, cfg: EvalConfig) -> pd.DataFrame | None:
        """Pointwise 95 % bootstrap band of the ROC curve (None without resamples; cached)."""
        if not cfg.bootstrap or self.ds.n_queries == 0:
            return None
        from metrics_core.evaluation.intervals import BAND_GRID

        def band():
            lo, hi = self._curve_intervals(cfg)["roc"]
            return pd.DataFrame({"fpr": np.asarray(BAND_GRID), "tpr_lo": lo, "tpr_hi": hi})

        # One frame for every setting with these resamples (a chart keeps what it made of it).
        return self.cached(("roc_band", cfg.bootstrap_config), band)

    def pr_band(self, cfg: EvalConfig) -> pd.DataFrame | None:
        """Pointwise 95 % bootstrap band of the PR curve over recall (None without resamples;
        cached)."""
        if not cfg.bootstrap or self.ds.n_queries == 0:
            return None
        from metrics_core.evaluation.intervals import BAND_GRID

        def band():
            lo, hi = self._curve_intervals(cfg)["pr"]
            return pd.DataFrame({"recall": np.asarray(BAND_GRID), "precision_lo": lo,
                                 "precision_hi": hi})

        return self.cached(("pr_band", cfg.bootstrap_config), band)

    def brier(self) -> float:
        return self.cached(("brier",), lambda: calibration.brier(self.ds.y, self.ds.p))

    def sorted_p(self) -> tuple[np.ndarray, np.ndarray]:
        """(sorted p of all queries, sorted p of positives), for threshold sweeps."""
        def compute():
            order = self.p_order()
            ordered = self.ds.p.take(order)
            return ordered, ordered[self.ds.positives.take(order)]

        return self.cached(("sorted_p",), compute)

    # ---- setting-dependent parts ----
    def states(self, cfg: EvalConfig) -> np.ndarray:
        states = gate.assign_states(self.ds.p, tau_neg=cfg.tau_neg, tau_pos=cfg.tau_pos)
        # Per-criterion gates (a criterion this data set, or filter, lacks has no query).
        index = {c: i for i, c in enumerate(self.ds.criteria)}
        for name, tau_neg, tau_pos in cfg.criterion_gates:
            if name in index:
                rows = self.ds.criterion_code == index[name]
                states[rows] = gate.assign_states(self.ds.p[rows], tau_neg=tau_neg,
                                                  tau_pos=tau_pos)
        return states

    def evidence_mask(self, cfg: EvalConfig) -> np.ndarray:
        return self.ds.positives if cfg.evidence_protocol == POS else np.ones(
            self.ds.n_queries, dtype=bool)

    def intermediate(self, cfg: EvalConfig) -> Intermediate:
        """The per-query arrays of one configuration (gate, K, evidence, ranking, masks)."""
        ds = self.ds
        states = self.states(cfg)
        k = self.select_k(cfg, states)
        rec, prec = self.evidence(cfg, k)
        return Intermediate(
            cfg=cfg, states=states, pred=(ds.p >= cfg.threshold).astype(np.int8), k=k,
            hits=dynamic_k.hits_within(ds, k), rec=rec, prec=prec,
            emask=self.evidence_mask(cfg), rk=self.ranking(cfg), rmask=self.ranking_mask(cfg),
            ref=reference_k(cfg.ks))

    def evaluate(self, config: EvalConfig | None = None, *, bootstrap: int | None = None,
                 progress: Callable[[int, int], None] | None = None, bands: bool = True,
                 posts: bool = True):
        """All metrics for ``config``; ``bootstrap`` overrides ``config.bootstrap`` (0 = off).

        ``config.filters`` restricts the run to a fold, a split or some criteria; ``progress``
        is called as ``progress(done, total)`` during the bootstrap (raise to cancel).
        ``bands`` false: the curves' bootstrap bands (ROC, PR, net benefit) are not computed
        with the records (the same records; the bands computed when a table asks for them):
        the per-group tables' runs, which read the records only. ``posts`` false: the
        multi-label metrics (over posts, across criteria) have their values without an
        interval (the per-criterion runs: those metrics do not apply to one criterion).
        """
        from metrics_core.evaluation.assemble import build_evaluation

        cfg = config or EvalConfig()
        if bootstrap is not None:
            cfg = cfg.replace(bootstrap=bootstrap)
        target = self.for_filters(cfg.filters)
        target.prefetch(cfg)
        return build_evaluation(target, cfg, progress=progress, bands=bands, posts=posts)

    # ---- sweeps and drill-downs ----
    def gate_grid(self, config: EvalConfig, tau_negs: Iterable[float] | None = None,
                  tau_poss: Iterable[float] | None = None) -> pd.DataFrame:
        """Gate metrics over a (τ_neg, τ_pos) grid (§6), by the gate's own counting formulas.

        By default the grid is :data:`GRID_STEPS` on both axes plus the current thresholds.
        Cells with τ_neg > τ_pos are not valid gates and are left out. Each cell's outcome
        table comes from binary searches in the sorted probabilities.
        """
        p_all, p_pos = self.sorted_p()

        def below(t):  # the queries, and the positives, with p < t
            return (np.searchsorted(p_all, t, side="left"),
                    np.searchsorted(p_pos, t, side="left"))

        return gate_grid_frame(below, p_all.size, p_pos.size, config, tau_negs, tau_poss)

    def case_review(self, config: EvalConfig, evaluation=None) -> dict[str, pd.DataFrame]:
        """Queries behind the numbers: missed positives, false alerts, missed evidence."""
        ev = evaluation if evaluation is not None else self.evaluate(config, bootstrap=0)
        pq = ev.per_query
        positive = pq["has_evidence"] == 1
        return {
            "missed_positives": pq[positive & (pq["state"] == "NEG")].sort_values(
                "p_has_evidence", ascending=False),
            "false_alerts": pq[~positive & (pq["state"] == "POS")].sort_values(
                "p_has_evidence", ascending=False),
            "missed_evidence": pq[positive & (pq["state"] != "NEG")
                                  & (pq["evidence_hits"] < pq["n_gold"])].sort_values(
                "evidence_recall"),
        }


class Evaluator(QueryLevelEvaluator):
    """The evaluator of a :class:`Dataset` (its candidates in memory): the ranking values,
    dynamic-K's mass profiles and selected K, evidence and the candidates of a query, from
    the candidates; the rest is :class:`QueryLevelEvaluator`'s.

    >>> import pandas as pd
    >>> from metrics_core.data.dataset import Dataset
    >>> q = pd.DataFrame({"post_id": ["p", "p"], "criterion": ["A", "B"],
    ...                   "has_evidence": [1, 0], "p_has_evidence": [0.9, 0.2]})
    >>> c = pd.DataFrame({"post_id": "p", "criterion": ["A", "A", "B"],
    ...                   "sent_uid": ["s1", "s2", "s1"], "score": [0.9, 0.8, 0.5],
    ...                   "is_gold": [0, 1, 0]})
    >>> ev = Evaluator(Dataset.from_frames(q, c))
    >>> ev.ranking(EvalConfig())["mrr"].tolist()
    [0.5, 0.0]
    """

    def subset(self, keep: np.ndarray) -> Evaluator:
        """The evaluator of the queries in ``keep`` (filters)."""
        return Evaluator(self.ds.subset(keep), audit=self.audit, inputs=self.inputs,
                         cohorts=self.cohorts)

    def ranking(self, cfg: EvalConfig) -> dict[str, np.ndarray]:
        key = ("ranking", cfg.ks, cfg.precision_denominator, cfg.map_denominator, cfg.gain)
        return self.cached(key, lambda: ranking_mod.ranking_per_query(
            self.ds, ks=cfg.ks, precision_denominator=cfg.precision_denominator,
            map_denominator=cfg.map_denominator, gain=cfg.gain))

    def mass_profile(self, cfg: EvalConfig):
        return self.cached(("mass", cfg.mass, cfg.temperature), lambda: dynamic_k.MassProfile
                          .from_dataset(self.ds, mass=cfg.mass, temperature=cfg.temperature))

    def select_k(self, cfg: EvalConfig, states: np.ndarray, *, gamma: float | None = None):
        return dynamic_k.select_k(
            self.mass_profile(cfg), states, gamma=cfg.gamma if gamma is None else gamma,
            gamma_uncertain=cfg.gamma_uncertain, k_min=cfg.k_min, hard_cap=cfg.hard_cap,
            k_max_ratio=cfg.k_max_ratio, gate_aware=cfg.gate_aware)

    def evidence(self, cfg: EvalConfig, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Evidence recall / precision per query (§7).

        A ``has_evidence = 1`` query without any gold has recall 0/0; it scores 0.0 here, the
        seed 003 convention that the ranking metrics (§3) use too, so ``recall@K`` and
        ``evidence_recall`` stay on the same subset. The data audit lists those queries.
        """
        rec, prec = dynamic_k.evidence_per_query(self.ds, k, protocol=cfg.evidence_protocol)
        if cfg.evidence_protocol == POS:
            rec = np.where(self.ds.positives & np.isnan(rec), 0.0, rec)
        return rec, prec

    def gamma_sweep(self, config: EvalConfig, gammas: Iterable[float] = GAMMA_SWEEP
                    ) -> pd.DataFrame:
        """Mean K, evidence recall / precision and workload for each γ (seed 003 §8.2)."""
        cfg = config
        states = self.states(cfg)
        mask = self.evidence_mask(cfg)
        rows = []
        for g in sorted({float(x) for x in gammas} | {float(cfg.gamma)}):
            k = self.select_k(cfg, states, gamma=g)
            rec, prec = self.evidence(cfg, k)
            rows.append({"gamma": g, "mean_k": float(k.mean()) if k.size else np.nan,
                         "evidence_recall": float(np.mean(rec[mask])) if mask.any() else np.nan,
                         "evidence_precision": float(np.mean(prec[mask])) if mask.any()
                         else np.nan,
                         "workload": int(k.sum()),
                         "workload_per_1000": float(k.sum() / max(k.size, 1) * 1000),
                         "current": bool(np.isclose(g, cfg.gamma))})
        return pd.DataFrame(rows)

    def sentences(self, config: EvalConfig, post_id: str, criterion: str,
                  k: int | None = None) -> pd.DataFrame:
        """The candidates of one query in ranking order with score, gold and selected marks."""
        ds = self.ds
        hit = np.flatnonzero((ds.post_id == str(post_id)) & (ds.criterion == str(criterion)))
        if hit.size == 0:
            raise KeyError(f"no query ({post_id!r}, {criterion!r})")
        q = int(hit[0])
        sl = ds.candidate_slice(q)
        if k is None:
            states = self.states(config)
            k = int(self.select_k(config, states)[q])
        rank = np.arange(1, sl.stop - sl.start + 1)
        frame = pd.DataFrame({"rank": rank, "sent_uid": ds.sent_uid[sl],
                              "score": ds.score[sl], "is_gold": ds.is_gold[sl],
                              "selected": rank <= k})
        if ds.sentence is not None:
            frame.insert(2, "sentence", ds.sentence[sl])
        return frame


def gate_grid_frame(below, n: int, n_pos: int, config: EvalConfig,
                    tau_negs: Iterable[float] | None = None,
                    tau_poss: Iterable[float] | None = None) -> pd.DataFrame:
    """The gate grid (:meth:`Evaluator.gate_grid`) from ``below(thresholds)``: the number of
    queries, and of positives, with ``p`` below each threshold (``n`` queries, ``n_pos``
    positives): sorted rows in memory, counts by distinct ``p`` in the reduced Dask run."""
    steps = {*GRID_STEPS, config.tau_neg, config.tau_pos}
    tau_negs = steps if tau_negs is None else tau_negs
    tau_poss = steps if tau_poss is None else tau_poss
    tn = np.asarray(sorted({float(x) for x in tau_negs}))
    tp = np.asarray(sorted({float(x) for x in tau_poss}))
    neg_all, neg_pos = below(tn)  # p < τ_neg
    below_all, below_pos = below(tp)  # p < τ_pos
    a, b = np.meshgrid(np.arange(tn.size), np.arange(tp.size), indexing="ij")
    a, b = a.ravel(), b.ravel()
    valid = tn[a] <= tp[b]
    a, b = a[valid], b[valid]
    # outcome table per cell: rows UNCERTAIN / NEG / POS, columns y = 0 / 1
    table = np.zeros((a.size, 3, 2), dtype=np.int64)
    table[:, 1, 1] = neg_pos[a]
    table[:, 1, 0] = neg_all[a] - neg_pos[a]
    table[:, 2, 1] = n_pos - below_pos[b]
    table[:, 2, 0] = (n - below_all[b]) - table[:, 2, 1]
    table[:, 0, 1] = below_pos[b] - neg_pos[a]
    table[:, 0, 0] = (below_all[b] - neg_all[a]) - table[:, 0, 1]
    frame = pd.DataFrame({"tau_neg": tn[a], "tau_pos": tp[b]})
    for name, fraction in outcomes.gate_fractions(table).items():
        if name != "alert_rate_per_1000":
            frame[name] = outcomes.ratio(*fraction)
    frame["current"] = np.isclose(frame["tau_neg"], config.tau_neg) & np.isclose(
        frame["tau_pos"], config.tau_pos)
    return frame
