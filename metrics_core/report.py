"""The one computation: every metric of a run, as records, tables and checks (contract §11).

:class:`Evaluator` wraps a :class:`~metrics_core.dataset.Dataset` and caches what depends only on
the data (ROC / PR, ranking per-query arrays, dynamic-K mass profiles, bootstrap intervals of
data-only metrics). :meth:`Evaluator.evaluate` adds what depends on the settings (gate,
dynamic-K, confusion at τ, multi-label) and returns an :class:`Evaluation`; the CLI, the
dashboard and the exports all draw from it. ``Evaluation.to_dict()`` is ``metrics_master.json``.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from metrics_core import __version__, calibration, classification, dynamic_k, gate, multilabel
from metrics_core import ranking as ranking_mod
from metrics_core.config import VARIANT_LABELS, EvalConfig
from metrics_core.dataset import Dataset
from metrics_core.uncertainty import Bootstrap, wilson_interval

__all__ = ["Check", "EvalConfig", "Evaluation", "Evaluator", "MetricRecord", "evaluate"]

ALL = "all_queries"
POS = "positives_only"


@dataclass(frozen=True)
class MetricRecord:
    """One reported number (contract §11): what it is, on which subset, how sure we are.

    ``value`` is ``None`` when the metric is undefined and no convention applies; where a seed
    fixes a convention (one-class AUROC = 0.5) the value is that convention and ``defined`` is
    false. ``ci95`` is ``(lo, hi)`` or ``None``; ``ci_method`` says how it was computed.
    """

    name: str
    value: float | None
    subset: str
    n: int
    ci95: tuple[float, float] | None = None
    defined: bool = True
    interpretation: str = ""
    group: str = ""
    ci_method: str | None = None
    variant: str | None = None

    def to_dict(self) -> dict:
        return {"name": self.name, "value": _clean(self.value), "subset": self.subset,
                "n": int(self.n),
                "ci95": None if self.ci95 is None else [_clean(self.ci95[0]),
                                                         _clean(self.ci95[1])],
                "defined": bool(self.defined), "interpretation": self.interpretation,
                "group": self.group, "ci_method": self.ci_method, "variant": self.variant}


@dataclass(frozen=True)
class Check:
    """One consistency check (contract §10): ``passed`` is ``None`` when it does not apply."""

    name: str
    passed: bool | None
    detail: str

    def to_dict(self) -> dict:
        return {"name": self.name, "passed": self.passed, "detail": self.detail}


@dataclass(frozen=True, eq=False)
class Evaluation:
    """Everything one run reports; build it with :meth:`Evaluator.evaluate`."""

    config: EvalConfig
    summary: dict
    records: tuple[MetricRecord, ...]
    checks: tuple[Check, ...]
    gate: gate.GateOutcome
    abstention: gate.AbstentionMetrics
    confusion: classification.Confusion
    tpr_at_fpr: tuple
    roc: classification.RocCurve
    pr: classification.PrCurve
    reliability: calibration.ReliabilityTable
    k: np.ndarray
    states: np.ndarray
    k_summary: dynamic_k.KSummary
    multilabel: dict
    ranking_summary: dict
    audit: object | None = None
    _index: dict = field(default_factory=dict, repr=False)
    _tables: dict = field(default_factory=dict, repr=False)

    # The tables are built on first use: a slider move that shows one page pays for one table.
    def _table(self, name: str):
        value = self._tables[name]
        if callable(value):
            value = self._tables[name] = value()
        return value

    @property
    def per_query(self) -> pd.DataFrame:
        """One row per query: labels, p, gate state, selected K, evidence hits, ranking values."""
        return self._table("per_query")

    @property
    def per_criterion(self) -> pd.DataFrame:
        """Headline metrics per criterion found in the data, then ``micro`` and ``macro`` rows."""
        return self._table("per_criterion")

    @property
    def per_fold(self) -> pd.DataFrame | None:
        """Headline metrics per fold, then ``mean`` and ``std`` (ddof = 0); None without folds."""
        return self._table("per_fold")

    def record(self, name: str) -> MetricRecord:
        """The record called ``name`` (KeyError listing the names if there is none)."""
        if not self._index:
            self._index.update({r.name: r for r in self.records})
        try:
            return self._index[name]
        except KeyError:
            raise KeyError(f"no metric record {name!r}; have: "
                           f"{', '.join(r.name for r in self.records)}") from None

    def records_frame(self) -> pd.DataFrame:
        """The records as a table: name, value, ci_lo, ci_hi, subset, n, defined, ..."""
        rows = []
        for r in self.records:
            lo, hi = r.ci95 if r.ci95 is not None else (np.nan, np.nan)
            rows.append({"group": r.group, "name": r.name,
                         "value": np.nan if r.value is None else r.value,
                         "ci_lo": lo, "ci_hi": hi, "ci_method": r.ci_method,
                         "subset": r.subset, "n": r.n, "defined": r.defined,
                         "variant": r.variant, "interpretation": r.interpretation})
        return pd.DataFrame(rows)

    def to_dict(self) -> dict:
        """``metrics_master.json``: configuration, data summary, records, tables, checks."""
        out = {
            "schema": "metrics_master/1",
            "generated_by": f"metrics_core {__version__}",
            "config": self.config.to_dict(),
            "dataset": self.summary,
            "metrics": [r.to_dict() for r in self.records],
            "tpr_at_fpr": [{"target_fpr": t.target, "tpr": t.tpr, "fpr": t.fpr,
                            "threshold": t.threshold} for t in self.tpr_at_fpr],
            "reliability": _frame_records(self.reliability_frame()),
            "k_by_state": _frame_records(self.k_summary_frame()),
            "per_criterion": _frame_records(self.per_criterion.reset_index()),
            "per_fold": None if self.per_fold is None
            else _frame_records(self.per_fold.reset_index()),
            "consistency_checks": [c.to_dict() for c in self.checks],
        }
        if self.audit is not None and hasattr(self.audit, "to_dict"):
            out["audit"] = self.audit.to_dict()
        return _clean(out)

    def to_json(self, **kwargs) -> str:
        kwargs.setdefault("indent", 2)
        return json.dumps(self.to_dict(), allow_nan=False, **kwargs)

    def reliability_frame(self) -> pd.DataFrame:
        t = self.reliability
        return pd.DataFrame({"lo": t.lo, "hi": t.hi, "count": t.count,
                             "mean_confidence": t.mean_confidence,
                             "observed_frequency": t.observed_frequency,
                             "wilson_lo": t.wilson_lo, "wilson_hi": t.wilson_hi, "gap": t.gap})

    def k_summary_frame(self) -> pd.DataFrame:
        """Selected-K statistics overall, by gate state and by has_evidence (§7)."""
        return self.k_summary.table()


# ----------------------------------------------------------------------------------- wording
_INTERPRETATION: dict[str, str] = {
    "auroc": "chance that a random query with evidence scores above one without (0.5 = chance)",
    "auprc": "average precision over all recall levels; compare with the positive rate, not 0.5",
    "tpr@fpr": "share of evidence queries caught when at most {t:.0%} of no-evidence queries alarm",
    "threshold@fpr": "probability threshold that operates at FPR ≤ {t:.0%}",
    "sensitivity": "share of evidence queries predicted positive at τ",
    "specificity": "share of no-evidence queries predicted negative at τ",
    "fpr": "share of no-evidence queries wrongly predicted positive at τ",
    "precision": "share of positive predictions at τ that have evidence",
    "npv": "share of negative predictions at τ that truly have no evidence",
    "f1": "harmonic mean of precision and sensitivity at τ",
    "mcc": "correlation of predictions at τ with the truth (−1 … 1, 0 = chance)",
    "balanced_accuracy": "mean of sensitivity and specificity at τ",
    "tp": "evidence queries predicted positive at τ",
    "fp": "no-evidence queries predicted positive at τ",
    "tn": "no-evidence queries predicted negative at τ",
    "fn": "evidence queries predicted negative at τ (missed)",
    "ece": "average gap between predicted probability and observed frequency (0 = calibrated)",
    "mce": "largest gap between predicted probability and observed frequency in any bin",
    "brier": "mean squared error of the probabilities (0 = perfect; lower is better)",
    "neg_rate": "share of queries the gate screens out (NEG, skipped)",
    "uncertain_rate": "share of queries sent to conservative review (UNCERTAIN)",
    "pos_rate": "share of queries flagged as high-confidence alerts (POS)",
    "alert_rate_per_1000": "high-confidence alerts per 1,000 queries",
    "screening_sensitivity": "share of evidence queries the gate does not screen out "
                             "(target ≥ 0.995)",
    "screening_fn_per_1000": "evidence queries screened out (missed) per 1,000 queries "
                             "(target ≤ 5)",
    "alert_precision": "share of POS alerts that truly have evidence (target ≥ 0.90)",
    "coverage": "share of queries the gate answers (NEG or POS), abstention view",
    "abstain_rate": "share of queries the gate abstains on (UNCERTAIN)",
    "accuracy": "share answered correctly, abstentions counted as wrong",
    "accuracy_answered": "share correct among answered queries",
    "slip_rate": "share of evidence queries answered NEG (slipped through)",
    "false_flag_rate": "share of no-evidence queries answered POS (false flags)",
    "recall@": "share of a query's gold sentences in the top {k}, averaged",
    "precision@": "share of the top {k} sentences that are gold, averaged",
    "hit@": "share of queries with at least one gold sentence in the top {k}",
    "map@": "average precision at the gold hits within the top {k}, averaged",
    "ndcg@": "rank-discounted gain of gold in the top {k} relative to the ideal (1 = perfect)",
    "mrr@": "1 / rank of the first gold sentence if within the top {k}, averaged",
    "mrr": "1 / rank of the first gold sentence, averaged (1/MRR ≈ typical first gold rank)",
    "evidence_recall": "share of gold sentences inside the dynamically selected K, averaged",
    "evidence_precision": "share of selected sentences that are gold, averaged",
    "mean_k": "sentences selected per query on average",
    "median_k": "median sentences selected per query",
    "p90_k": "90th percentile of sentences selected per query (workload planning)",
    "workload": "sentences extracted in total",
    "workload_per_1000": "sentences to read per 1,000 queries",
    "exact_match": "share of posts whose every criterion prediction is right",
    "hamming_score": "share of (post, criterion) predictions that are right",
    "hamming_loss": "share of (post, criterion) predictions that are wrong",
    "micro_f1": "F1 pooled over all (post, criterion) pairs",
    "samples_f1": "mean of per-post F1 (seed 003 calls it “Macro F1”)",
    "macro_f1": "mean of per-criterion F1",
    "weighted_f1": "per-criterion F1 weighted by gold positives",
}


def interpretation(name: str) -> str:
    """Plain-language meaning of a metric name, for tables and reports (seed 003 §10.2)."""
    if name in _INTERPRETATION:
        return _INTERPRETATION[name]
    for prefix in ("tpr@fpr", "threshold@fpr"):
        if name.startswith(prefix + "="):
            return _INTERPRETATION[prefix].format(t=float(name.split("=")[1]))
    if "@" in name:
        head, k = name.split("@", 1)
        template = _INTERPRETATION.get(head + "@")
        if template and k.isdigit():
            return template.format(k=k)
    return ""


# ----------------------------------------------------------------------------------- helpers
def _clean(obj):
    """JSON-safe: NaN / inf -> None, numpy scalars -> Python, tuples -> lists."""
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_clean(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [_clean(v) for v in obj.tolist()]
    if isinstance(obj, np.bool_ | bool):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, float | np.floating):
        value = float(obj)
        return value if math.isfinite(value) else None
    return obj


def _frame_records(frame: pd.DataFrame) -> list[dict]:
    return [_clean(row) for row in frame.to_dict(orient="records")]


def _finite(value) -> float | None:
    value = float(value)
    return value if math.isfinite(value) else None


def _wilson(k, n) -> tuple[float, float] | None:
    if n <= 0:
        return None
    lo, hi = wilson_interval(k, n)
    return float(lo), float(hi)


def _reference_k(ks: tuple[int, ...]) -> int:
    """The K of the per-criterion table: 10 when computed, else the largest K below it."""
    below = [k for k in ks if k <= 10]
    return 10 if 10 in ks else (max(below) if below else min(ks))


# --------------------------------------------------------------------------------- evaluator
class Evaluator:
    """Caches the data-only parts of the computation for one :class:`Dataset`.

    Parameters
    ----------
    dataset : Dataset
    audit : AuditReport, optional
        Attached to every :class:`Evaluation` (fold / split disjointness feeds the checks).
    """

    def __init__(self, dataset: Dataset, *, audit=None):
        self.ds = dataset
        self.audit = audit
        self._cache: dict = {}

    def _memo(self, key, compute: Callable):
        if key not in self._cache:
            self._cache[key] = compute()
        return self._cache[key]

    # ---- data-only parts (cached) ----
    def ranking(self, cfg: EvalConfig) -> dict[str, np.ndarray]:
        key = ("ranking", cfg.ks, cfg.precision_denominator, cfg.map_denominator, cfg.gain)
        return self._memo(key, lambda: ranking_mod.ranking_per_query(
            self.ds, ks=cfg.ks, precision_denominator=cfg.precision_denominator,
            map_denominator=cfg.map_denominator, gain=cfg.gain))

    def ranking_mask(self, cfg: EvalConfig) -> np.ndarray:
        return self.ds.positives if cfg.ranking_protocol == POS else np.ones(
            self.ds.n_queries, dtype=bool)

    def classification(self) -> dict:
        def compute():
            y, p = self.ds.y, self.ds.p
            return {"auroc": classification.roc_auc(y, p),
                    "auprc": classification.average_precision(y, p),
                    "roc": classification.roc_points(y, p),
                    "pr": classification.pr_points(y, p)}
        return self._memo(("classification",), compute)

    def tpr_at_fpr(self, cfg: EvalConfig):
        return self._memo(("tpr_at_fpr", cfg.tpr_fprs), lambda: tuple(
            classification.tpr_at_fpr(self.ds.y, self.ds.p, cfg.tpr_fprs)))

    def calibration_inputs(self, cfg: EvalConfig) -> tuple[np.ndarray, np.ndarray]:
        """(confidence, outcome) of the calibration view: positive-class p or top label."""
        if cfg.calibration_view == "top_label":
            return self._memo(("top_label",), lambda: calibration.top_label(self.ds.y, self.ds.p))
        return self.ds.p, self.ds.y

    def reliability(self, cfg: EvalConfig):
        def compute():
            conf, outcome = self.calibration_inputs(cfg)
            return calibration.reliability_bins(outcome, conf, n_bins=cfg.n_bins,
                                                strategy=cfg.binning)
        return self._memo(("reliability", cfg.n_bins, cfg.binning, cfg.calibration_view), compute)

    def brier(self) -> float:
        return self._memo(("brier",), lambda: calibration.brier(self.ds.y, self.ds.p))

    def mass_profile(self, cfg: EvalConfig):
        return self._memo(("mass", cfg.mass, cfg.temperature), lambda: dynamic_k.MassProfile
                          .from_dataset(self.ds, mass=cfg.mass, temperature=cfg.temperature))

    def sorted_p(self) -> tuple[np.ndarray, np.ndarray]:
        """(sorted p of all queries, sorted p of positives), for threshold sweeps."""
        return self._memo(("sorted_p",), lambda: (np.sort(self.ds.p),
                                                  np.sort(self.ds.p[self.ds.positives])))

    # ---- setting-dependent parts ----
    def states(self, cfg: EvalConfig) -> np.ndarray:
        return gate.assign_states(self.ds.p, tau_neg=cfg.tau_neg, tau_pos=cfg.tau_pos)

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

    def evaluate(self, config: EvalConfig | None = None, *,
                 bootstrap: int | None = None) -> Evaluation:
        """All metrics for ``config``; ``bootstrap`` overrides ``config.bootstrap`` (0 = off)."""
        cfg = config or EvalConfig()
        if bootstrap is not None:
            cfg = cfg.replace(bootstrap=bootstrap)
        return _build_evaluation(self, cfg)

    # ---- sweeps and drill-downs for the dashboard ----
    def gamma_sweep(self, config: EvalConfig, gammas: Iterable[float]) -> pd.DataFrame:
        """Mean K, evidence recall / precision and workload for each γ (seed 003 §8.2)."""
        cfg = config
        states = self.states(cfg)
        rows = []
        for g in sorted({float(x) for x in gammas}):
            k = self.select_k(cfg, states, gamma=g)
            rec, prec = self.evidence(cfg, k)
            mask = self.ds.positives if cfg.evidence_protocol == POS else slice(None)
            rows.append({"gamma": g, "mean_k": float(k.mean()) if k.size else np.nan,
                         "evidence_recall": float(np.mean(rec[mask])) if k.size else np.nan,
                         "evidence_precision": float(np.mean(prec[mask])) if k.size else np.nan,
                         "workload": int(k.sum()),
                         "workload_per_1000": float(k.sum() / max(k.size, 1) * 1000),
                         "current": bool(np.isclose(g, cfg.gamma))})
        return pd.DataFrame(rows)

    def gate_grid(self, config: EvalConfig, tau_negs: Iterable[float],
                  tau_poss: Iterable[float]) -> pd.DataFrame:
        """Screening sensitivity, alert precision and workload over a (τ_neg, τ_pos) grid (§6).

        Cells with τ_neg > τ_pos are not valid gates and are left out.
        """
        p_all, p_pos = self.sorted_p()
        n, n_pos = p_all.size, p_pos.size
        tn = np.asarray(sorted({float(x) for x in tau_negs}))
        tp = np.asarray(sorted({float(x) for x in tau_poss}))
        neg_all = np.searchsorted(p_all, tn, side="left")  # p < τ_neg
        neg_pos = np.searchsorted(p_pos, tn, side="left")
        below_all = np.searchsorted(p_all, tp, side="left")  # p < τ_pos
        below_pos = np.searchsorted(p_pos, tp, side="left")
        a, b = np.meshgrid(np.arange(tn.size), np.arange(tp.size), indexing="ij")
        a, b = a.ravel(), b.ravel()
        valid = tn[a] <= tp[b]
        a, b = a[valid], b[valid]
        n_alert = n - below_all[b]
        tp_alert = n_pos - below_pos[b]
        with np.errstate(divide="ignore", invalid="ignore"):
            frame = pd.DataFrame({
                "tau_neg": tn[a], "tau_pos": tp[b],
                "screening_sensitivity": (n_pos - neg_pos[a]) / n_pos if n_pos else np.nan,
                "screening_fn_per_1000": neg_pos[a] / n * 1000 if n else np.nan,
                "alert_precision": np.where(n_alert > 0, tp_alert / np.maximum(n_alert, 1),
                                            np.nan),
                "neg_rate": neg_all[a] / n if n else np.nan,
                "uncertain_rate": (below_all[b] - neg_all[a]) / n if n else np.nan,
                "pos_rate": n_alert / n if n else np.nan,
            })
        frame["review_rate"] = frame["uncertain_rate"] + frame["pos_rate"]
        frame["current"] = np.isclose(frame["tau_neg"], config.tau_neg) & np.isclose(
            frame["tau_pos"], config.tau_pos)
        return frame

    def case_review(self, config: EvalConfig, evaluation: Evaluation | None = None
                    ) -> dict[str, pd.DataFrame]:
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


def evaluate(dataset: Dataset, config: EvalConfig | None = None, *, audit=None) -> Evaluation:
    """One-shot :meth:`Evaluator.evaluate` (the CLI's entry point)."""
    return Evaluator(dataset, audit=audit).evaluate(config)


# ------------------------------------------------------------------------ the whole report
def _build_evaluation(ev: Evaluator, cfg: EvalConfig) -> Evaluation:
    ds = ev.ds
    y, p = ds.y, ds.p
    n, n_pos = ds.n_queries, ds.n_positive
    records: list[MetricRecord] = []

    def add(name, value, subset, n_, *, group, ci=None, ci_method=None, defined=None,
            variant=None):
        value = None if value is None else float(value)
        if defined is None:
            defined = value is not None and math.isfinite(value)
        if value is not None and not math.isfinite(value):
            value = None
        records.append(MetricRecord(name=name, value=value, subset=subset, n=int(n_),
                                    ci95=ci, defined=bool(defined),
                                    interpretation=interpretation(name), group=group,
                                    ci_method=ci_method if ci is not None else None,
                                    variant=variant))

    boot = _bootstrap_intervals(ev, cfg)

    # §4 classification
    cls = ev.classification()
    for name in ("auroc", "auprc"):
        score = cls[name]
        add(name, score.value, ALL, n, group="classification", defined=score.defined,
            ci=boot.get(name), ci_method=boot.method)
    tprs = ev.tpr_at_fpr(cfg)
    for t in tprs:
        add(f"tpr@fpr={_fmt_t(t.target)}", t.tpr, ALL, n, group="classification",
            ci=_wilson(round(t.tpr * n_pos), n_pos) if math.isfinite(t.tpr) else None,
            ci_method="wilson")
        add(f"threshold@fpr={_fmt_t(t.target)}", t.threshold, ALL, n, group="classification",
            defined=math.isfinite(t.threshold))
    conf = classification.confusion_at(y, p, threshold=cfg.threshold)
    tau = f"{ALL} @ τ={cfg.threshold:g}"
    for name in ("tp", "fp", "tn", "fn"):
        add(name, getattr(conf, name), tau, n, group="confusion")
    proportions = {"sensitivity": (conf.tp, conf.tp + conf.fn),
                   "specificity": (conf.tn, conf.tn + conf.fp),
                   "fpr": (conf.fp, conf.tn + conf.fp),
                   "precision": (conf.tp, conf.tp + conf.fp),
                   "npv": (conf.tn, conf.tn + conf.fn)}
    cm = conf.metrics()
    for name in ("sensitivity", "specificity", "fpr", "precision", "npv", "f1", "mcc",
                 "balanced_accuracy"):
        score = cm[name]
        k_, n_ = proportions.get(name, (None, None))
        add(name, score.value, tau, n, group="confusion", defined=score.defined,
            ci=_wilson(k_, n_) if k_ is not None else None, ci_method="wilson")

    # §5 calibration
    rel = ev.reliability(cfg)
    view = VARIANT_LABELS["calibration_view"][cfg.calibration_view]
    binning = f"{cfg.n_bins} {VARIANT_LABELS['binning'][cfg.binning]}"
    add("ece", rel.ece, ALL, n, group="calibration", ci=boot.get("ece"), ci_method=boot.method,
        variant=f"{view}; {binning}")
    add("mce", rel.mce, ALL, n, group="calibration", variant=f"{view}; {binning}")
    add("brier", ev.brier(), ALL, n, group="calibration", ci=boot.get("brier"),
        ci_method=boot.method, variant="positive class p")

    # §6 gate and its abstention view
    states = ev.states(cfg)
    g = gate.gate_summary(y, states)
    gate_subset = f"{ALL} @ τ_neg={cfg.tau_neg:g}, τ_pos={cfg.tau_pos:g}"
    for name in ("neg_rate", "uncertain_rate", "pos_rate", "alert_rate_per_1000",
                 "screening_sensitivity", "screening_fn_per_1000", "alert_precision"):
        add(name, getattr(g, name), gate_subset, n, group="gate", ci=g.ci(name),
            ci_method="wilson")
    ab = gate.abstention_metrics(y, gate.states_to_prediction(states))
    ab_values = ab.as_dict("pos", "neg")
    for name, key in (("coverage", "coverage"), ("abstain_rate", "abstain_rate"),
                      ("accuracy", "accuracy"), ("accuracy_answered", "accuracy_answered"),
                      ("slip_rate", "pos_slip_rate"), ("false_flag_rate", "neg_false_flag_rate")):
        value = ab_values.get(key, ab_values.get(name))
        ci = ab_values.get(f"{key}_ci") or ab_values.get(f"{name}_ci")
        add(name, value, gate_subset, n, group="gate (abstention view)",
            ci=tuple(ci) if ci is not None and all(v is not None for v in ci) else None,
            ci_method="wilson")

    # §3 ranking
    rk = ev.ranking(cfg)
    rmask = ev.ranking_mask(cfg)
    rsubset = cfg.ranking_protocol
    rvariant = (f"precision {VARIANT_LABELS['precision_denominator'][cfg.precision_denominator]}"
                f"; map {VARIANT_LABELS['map_denominator'][cfg.map_denominator]}"
                f"; {VARIANT_LABELS['gain'][cfg.gain]}")
    rsummary = ev._memo(("ranking_summary", cfg.ks, cfg.precision_denominator,
                         cfg.map_denominator, cfg.gain, cfg.ranking_protocol),
                        lambda: {name: ranking_mod.summarize(values, rmask)
                                 for name, values in rk.items()})
    for name in rk:
        s = rsummary[name]
        if name.startswith("hit@"):
            ci = _wilson(round(s.mean * s.n), s.n) if s.n and math.isfinite(s.mean) else None
            method = "wilson"
        else:
            ci, method = boot.get(name), boot.method
        add(name, s.mean, rsubset, s.n, group="ranking", ci=ci, ci_method=method,
            variant=rvariant)

    # §7 dynamic-K
    k = ev.select_k(cfg, states)
    rec, prec = ev.evidence(cfg, k)
    emask = ds.positives if cfg.evidence_protocol == POS else np.ones(n, dtype=bool)
    n_e = int(emask.sum())
    kvariant = (f"γ={cfg.gamma:g}, γ_uncertain={cfg.gamma_uncertain:g}, k_min={cfg.k_min}, "
                f"hard_cap={cfg.hard_cap}, k_max_ratio={cfg.k_max_ratio:g}, "
                f"{'gate-aware' if cfg.gate_aware else 'gate-blind'}, "
                f"{VARIANT_LABELS['mass'][cfg.mass]}")
    ks = dynamic_k.k_summary(k, states=states, y=y)
    op_boot = _operating_bootstrap(ev, cfg, {"evidence_recall": (rec, emask),
                                             "evidence_precision": (prec, emask),
                                             "mean_k": (k.astype(np.float64), None)})
    add("evidence_recall", np.mean(rec[emask]) if n_e else None, cfg.evidence_protocol, n_e,
        group="dynamic_k", ci=op_boot.get("evidence_recall"), ci_method=boot.method,
        variant=kvariant)
    add("evidence_precision", np.mean(prec[emask]) if n_e else None, cfg.evidence_protocol, n_e,
        group="dynamic_k", ci=op_boot.get("evidence_precision"), ci_method=boot.method,
        variant=kvariant)
    add("mean_k", ks.mean, ALL, n, group="dynamic_k", ci=op_boot.get("mean_k"),
        ci_method=boot.method, variant=kvariant)
    for name in ("median_k", "p90_k"):
        add(name, getattr(ks, name.replace("_k", "")), ALL, n, group="dynamic_k",
            variant=kvariant)
    add("workload", ks.total, ALL, n, group="dynamic_k", variant=kvariant)
    add("workload_per_1000", ks.workload_per_1000, ALL, n, group="dynamic_k", variant=kvariant)

    # §8 per-post multi-label
    labels = multilabel.decision_labels(ds, rule=cfg.multilabel_rule, threshold=cfg.threshold,
                                        states=states)
    Y, Yhat, mask = multilabel.post_matrix(ds, labels)
    ml = multilabel.multilabel_metrics(Y, Yhat, mask)
    ml_variant = VARIANT_LABELS["multilabel_rule"][cfg.multilabel_rule]
    n_posts = int(Y.shape[0])
    for name in ("exact_match", "hamming_score", "hamming_loss", "micro_f1", "samples_f1",
                 "macro_f1", "weighted_f1"):
        ci = None
        if name == "exact_match" and math.isfinite(ml[name]):
            ci = _wilson(round(ml[name] * n_posts), n_posts)
        add(name, ml[name], f"{ALL} (per post)", n_posts, group="multilabel", ci=ci,
            ci_method="wilson", variant=ml_variant)

    # per-query frame, tables (built on first use), checks
    hits = _hits_at(ds, k)
    tables = {
        "per_query": lambda: _per_query_frame(ds, states, k, hits, rec, prec, rk, cfg),
        "per_criterion": lambda: _group_table(ev, cfg, states, k, rec, emask, rk, rmask, boot,
                                              label="criterion"),
        "per_fold": (lambda: None) if ds.fold is None else (
            lambda: _group_table(ev, cfg, states, k, rec, emask, rk, rmask, None, label="fold")),
    }
    checks = _consistency_checks(ev, cfg, records, conf, g, states, rmask)

    return Evaluation(
        config=cfg, summary=ev._memo(("summary",), lambda: _summary(ds, cfg)),
        records=tuple(records), checks=tuple(checks), gate=g,
        abstention=ab, confusion=conf, tpr_at_fpr=tprs, roc=cls["roc"], pr=cls["pr"],
        reliability=rel, k=k, states=states, k_summary=ks, multilabel=ml,
        ranking_summary=rsummary, audit=ev.audit, _tables=tables)


def _fmt_t(t: float) -> str:
    return f"{t:.2f}" if round(t, 2) == t else f"{t:g}"


def _hits_at(ds: Dataset, k: np.ndarray) -> np.ndarray:
    """Gold candidates within the first ``k[q]`` of each query (exact, integer)."""
    idx = ds.offsets[:-1] + np.minimum(k, ds.n_cand) - 1
    return np.where(k > 0, ds.cum_gold[np.clip(idx, 0, max(ds.n_candidates - 1, 0))]
                    if ds.n_candidates else 0, 0)


def _summary(ds: Dataset, cfg: EvalConfig) -> dict:
    meta = dict(ds.meta)
    return {
        "n_queries": ds.n_queries, "n_positive": ds.n_positive,
        "positive_rate": ds.n_positive / ds.n_queries if ds.n_queries else None,
        "n_posts": int(ds.posts.size), "n_candidates": ds.n_candidates,
        "criteria": list(ds.criteria),
        "folds": None if ds.fold is None else sorted(int(f) for f in pd.unique(ds.fold)),
        "splits": None if ds.split is None else sorted(str(s) for s in pd.unique(ds.split)),
        "ranked_by": ds.ranked_by,
        "n_gold_given": ds.n_gold_given is not None,
        **{k: v for k, v in meta.items() if isinstance(v, str | int | float | bool | list)},
    }


def _per_query_frame(ds, states, k, hits, rec, prec, rk, cfg) -> pd.DataFrame:
    frame = ds.query_frame()
    frame["state"] = pd.Categorical.from_codes(states.astype(np.int8),
                                               categories=["NEG", "UNCERTAIN", "POS"])
    frame["predicted"] = (ds.p >= cfg.threshold).astype(np.int8)
    frame["selected_k"] = k
    frame["evidence_hits"] = hits
    frame["evidence_recall"] = rec
    frame["evidence_precision"] = prec
    ref = _reference_k(cfg.ks)
    for name in (f"recall@{ref}", f"ndcg@{ref}", "mrr"):
        frame[name] = rk[name]
    return frame


# ----------------------------------------------------------------------- per-group tables
def _group_codes(ev: Evaluator, label: str):
    """(codes, names) of the queries' groups: criterion, or fold (data-only, cached)."""
    ds = ev.ds

    def compute():
        if label == "criterion":
            return ds.criterion_code.astype(np.int64), list(ds.criteria)
        folds, codes = np.unique(ds.fold, return_inverse=True)
        return codes.astype(np.int64), [str(f) for f in folds]

    return ev._memo(("group_codes", label), compute)


def _group_discrimination(ev: Evaluator, label: str) -> dict[str, np.ndarray]:
    """AUROC / AUPRC per group (data-only, cached): a loop over groups, not queries."""
    ds = ev.ds

    def compute():
        codes, names = _group_codes(ev, label)
        auroc = np.full(len(names), np.nan)
        auprc = np.full(len(names), np.nan)
        defined = np.zeros(len(names), dtype=bool)
        for i in range(len(names)):
            m = codes == i
            score = classification.roc_auc(ds.y[m], ds.p[m])
            auroc[i], defined[i] = score.value, score.defined
            auprc[i] = classification.average_precision(ds.y[m], ds.p[m]).value
        return {"auroc": auroc, "auprc": auprc, "auroc_defined": defined}

    return ev._memo(("group_discrimination", label), compute)


def _group_table(ev, cfg, states, k, rec, emask, rk, rmask, boot, *, label):
    """Headline metrics per group (criterion or fold), with micro / macro or mean / std rows."""
    ds = ev.ds
    y, p = ds.y, ds.p
    codes, names = _group_codes(ev, label)
    g = len(names)

    def count(mask):
        return np.bincount(codes[mask], minlength=g).astype(np.float64)

    n = np.bincount(codes, minlength=g).astype(np.float64)
    n_pos = count(y == 1)
    pred = p >= cfg.threshold
    tp, fp = count(pred & (y == 1)), count(pred & (y == 0))
    neg, unc, pos = (count(states == s) for s in (0, 1, 2))
    pos_neg = count((states == 0) & (y == 1))
    pos_alert = count((states == 2) & (y == 1))
    ref = _reference_k(cfg.ks)

    def mean_over(values, mask=None):
        if mask is None:
            num = np.bincount(codes, weights=values, minlength=g)
            den = n
        else:
            num = np.bincount(codes[mask], weights=values[mask], minlength=g)
            den = np.bincount(codes[mask], minlength=g)
        with np.errstate(invalid="ignore", divide="ignore"):
            return num / den

    disc = _group_discrimination(ev, label)
    with np.errstate(invalid="ignore", divide="ignore"):
        columns = {
            "n": n.astype(np.int64), "n_positive": n_pos.astype(np.int64),
            "positive_rate": n_pos / n,
            "auroc": disc["auroc"], "auprc": disc["auprc"], "auroc_defined": disc["auroc_defined"],
            "sensitivity": tp / n_pos, "precision": tp / (tp + fp),
            f"recall@{ref}": mean_over(rk[f"recall@{ref}"], rmask),
            f"ndcg@{ref}": mean_over(rk[f"ndcg@{ref}"], rmask),
            "mrr": mean_over(rk["mrr"], rmask),
            "neg_rate": neg / n, "uncertain_rate": unc / n, "pos_rate": pos / n,
            "screening_sensitivity": (n_pos - pos_neg) / n_pos,
            "screening_fn_per_1000": pos_neg / n * 1000,
            "alert_precision": pos_alert / pos,
            "evidence_recall": mean_over(rec, emask),
            "mean_k": mean_over(k.astype(np.float64)),
        }
    for col, (num, den) in {"sensitivity": (tp, n_pos), "precision": (tp, tp + fp),
                            "screening_sensitivity": (n_pos - pos_neg, n_pos),
                            "alert_precision": (pos_alert, pos)}.items():
        columns[f"{col}_ci_lo"], columns[f"{col}_ci_hi"] = wilson_interval(num, den)
    if boot is not None and "auroc_by_criterion" in boot:
        columns["auroc_ci_lo"], columns["auroc_ci_hi"] = boot["auroc_by_criterion"]
    table = pd.DataFrame(columns, index=pd.Index(names, name=label))

    metric_cols = [c for c in table.columns if c not in ("n", "n_positive", "auroc_defined")
                   and "_ci_" not in c]
    body = table[metric_cols].to_numpy(dtype=np.float64)
    # All-nan columns (e.g. AUROC of one-class folds) give nan means without a warning.
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", category=RuntimeWarning)
        if label == "criterion":
            micro = _micro_row(ev, cfg, states, k, rec, emask, rk, rmask, ref)
            macro = dict(zip(metric_cols, np.nanmean(body, axis=0), strict=True))
            macro.update(n=int(n.sum()), n_positive=int(n_pos.sum()))
            extra = pd.DataFrame([micro, macro], index=["micro", "macro"])
        else:
            extra = pd.DataFrame([dict(zip(metric_cols, np.nanmean(body, axis=0), strict=True)),
                                  dict(zip(metric_cols, np.nanstd(body, axis=0), strict=True))],
                                 index=["mean", "std"])
            extra["n"] = [float(n.mean()), float(n.std())]  # fold size, mean and std
    extra.index.name = label
    return pd.concat([table, extra.astype({c: table[c].dtype for c in ("auroc_defined",)
                                           if c in extra})], axis=0)


def _micro_row(ev, cfg, states, k, rec, emask, rk, rmask, ref) -> dict:
    """Pooled values over all queries (the per-criterion table's micro row)."""
    ds = ev.ds
    y, p = ds.y, ds.p
    cls = ev.classification()
    pred = p >= cfg.threshold
    n, n_pos = y.size, int(y.sum())
    tp, fp = int((pred & (y == 1)).sum()), int((pred & (y == 0)).sum())
    pos_neg = int(((states == 0) & (y == 1)).sum())
    n_alert = int((states == 2).sum())
    with np.errstate(invalid="ignore", divide="ignore"):
        return {
            "n": n, "n_positive": n_pos, "positive_rate": n_pos / n if n else np.nan,
            "auroc": cls["auroc"].value, "auprc": cls["auprc"].value,
            "auroc_defined": cls["auroc"].defined,
            "sensitivity": tp / n_pos if n_pos else np.nan,
            "precision": tp / (tp + fp) if tp + fp else np.nan,
            f"recall@{ref}": rk[f"recall@{ref}"][rmask].mean() if rmask.any() else np.nan,
            f"ndcg@{ref}": rk[f"ndcg@{ref}"][rmask].mean() if rmask.any() else np.nan,
            "mrr": rk["mrr"][rmask].mean() if rmask.any() else np.nan,
            "neg_rate": float((states == 0).mean()), "uncertain_rate": float((states == 1).mean()),
            "pos_rate": float((states == 2).mean()),
            "screening_sensitivity": (n_pos - pos_neg) / n_pos if n_pos else np.nan,
            "screening_fn_per_1000": pos_neg / n * 1000 if n else np.nan,
            "alert_precision": int(((states == 2) & (y == 1)).sum()) / n_alert
            if n_alert else np.nan,
            "evidence_recall": rec[emask].mean() if emask.any() else np.nan,
            "mean_k": float(k.mean()) if k.size else np.nan,
        }


# ---------------------------------------------------------------------------- bootstrap
class _Intervals(dict):
    """Interval per metric name, plus the method that produced them."""

    def __init__(self, method=None):
        super().__init__()
        self.method = method


def _unit_of_row(ds: Dataset, cfg: EvalConfig):
    if cfg.bootstrap_unit == "post":
        return int(ds.posts.size), ds.post_code
    return ds.n_queries, None


def _mean_statistics(bs: Bootstrap, unit_of_row, columns: dict[str, tuple[np.ndarray, object]],
                     extra: Callable | None = None) -> tuple[dict, dict]:
    """Percentile CIs of weighted means (one GEMM per batch) plus optional extra statistics."""
    names = list(columns)
    n_rows = len(next(iter(columns.values()))[0]) if columns else 0
    num = np.zeros((n_rows, len(names)))
    den = np.zeros((n_rows, len(names)))
    for j, name in enumerate(names):
        values, mask = columns[name]
        m = np.ones(n_rows, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
        num[:, j] = np.where(m, np.nan_to_num(values), 0.0)
        den[:, j] = m
    draws: dict[str, list] = {name: [] for name in names}
    extra_draws: dict[str, list] = {}
    for counts in bs.count_batches():
        w = counts if unit_of_row is None else counts[:, unit_of_row]
        w = w.astype(np.float64, copy=False)
        if names:
            with np.errstate(invalid="ignore", divide="ignore"):
                ratio = (w @ num) / (w @ den)
            for j, name in enumerate(names):
                draws[name].append(ratio[:, j])
        if extra is not None:
            for name, values in extra(w).items():
                extra_draws.setdefault(name, []).append(values)
    return draws, extra_draws


def _percentile(draws: list, level=0.95) -> tuple[float, float] | None:
    values = np.concatenate(draws) if draws else np.array([])
    values = values[np.isfinite(values)] if values.ndim == 1 else values
    if values.size == 0:
        return None
    alpha = (1 - level) / 2 * 100
    lo, hi = np.percentile(values, [alpha, 100 - alpha], axis=0)
    return lo, hi


def _bootstrap_intervals(ev: Evaluator, cfg: EvalConfig) -> _Intervals:
    """Percentile CIs of the data-only metrics (cached per bootstrap settings and variants)."""
    if cfg.bootstrap == 0 or ev.ds.n_queries == 0:
        return _Intervals(None)
    key = ("bootstrap", cfg.bootstrap, cfg.bootstrap_unit, cfg.seed, cfg.ks,
           cfg.precision_denominator, cfg.map_denominator, cfg.gain, cfg.ranking_protocol,
           cfg.n_bins, cfg.binning, cfg.calibration_view)

    def compute():
        ds = ev.ds
        n_units, unit_of_row = _unit_of_row(ds, cfg)
        bs = Bootstrap(n_units, n_resamples=cfg.bootstrap, seed=cfg.seed)
        rk = ev.ranking(cfg)
        rmask = ev.ranking_mask(cfg)
        columns = {name: (values, rmask) for name, values in rk.items()
                   if not name.startswith("hit@")}
        columns["brier"] = ((ds.p - ds.y) ** 2, None)
        y, p = ds.y, ds.p
        conf, outcome = ev.calibration_inputs(cfg)
        crit = ds.criterion_code

        def extra(w):
            auroc, auprc = classification.auroc_auprc_weighted(y, p, w)
            out = {"auroc": auroc, "auprc": auprc,
                   "ece": calibration.ece_weighted(outcome, conf, w, n_bins=cfg.n_bins,
                                                   strategy=cfg.binning)}
            out["auroc_by_criterion"] = np.stack(
                [classification.roc_auc_weighted(y[crit == c], p[crit == c], w[:, crit == c])
                 for c in range(len(ds.criteria))], axis=1)
            return out

        draws, extra_draws = _mean_statistics(bs, unit_of_row, columns, extra)
        out = _Intervals(f"bootstrap ({cfg.bootstrap_unit}, {cfg.bootstrap} resamples, "
                         f"seed {cfg.seed})")
        for name, d in {**draws, **extra_draws}.items():
            if name == "auroc_by_criterion":
                values = np.concatenate(d)
                lo = np.full(values.shape[1], np.nan)
                hi = np.full(values.shape[1], np.nan)
                for c in range(values.shape[1]):
                    ci = _percentile([values[:, c]])
                    if ci is not None:
                        lo[c], hi[c] = ci
                out[name] = (lo, hi)
                continue
            ci = _percentile(d)
            if ci is not None:
                out[name] = (float(ci[0]), float(ci[1]))
        return out

    return ev._memo(key, compute)


def _operating_bootstrap(ev: Evaluator, cfg: EvalConfig, columns: dict) -> dict:
    """Percentile CIs of the setting-dependent means (evidence recall / precision, mean K)."""
    if cfg.bootstrap == 0 or ev.ds.n_queries == 0:
        return {}
    n_units, unit_of_row = _unit_of_row(ev.ds, cfg)
    bs = Bootstrap(n_units, n_resamples=cfg.bootstrap, seed=cfg.seed)
    draws, _ = _mean_statistics(bs, unit_of_row, columns)
    out = {}
    for name, d in draws.items():
        ci = _percentile(d)
        if ci is not None:
            out[name] = (float(ci[0]), float(ci[1]))
    return out


# ------------------------------------------------------------------------------- checks
def _consistency_checks(ev, cfg, records, conf, g, states, rmask) -> list[Check]:
    """Contract §10 / seed 003 §9: every check listed with pass / fail."""
    ds = ev.ds
    n, n_pos = ds.n_queries, ds.n_positive
    checks: list[Check] = []
    unbounded = {"tp", "fp", "tn", "fn", "alert_rate_per_1000", "screening_fn_per_1000",
                 "mean_k", "median_k", "p90_k", "workload", "workload_per_1000", "mcc"}
    out_of_range = [r.name for r in records
                    if r.value is not None and r.name not in unbounded
                    and not r.name.startswith("threshold@") and not 0.0 <= r.value <= 1.0]
    mcc = next((r for r in records if r.name == "mcc"), None)
    if mcc is not None and mcc.value is not None and not -1.0 <= mcc.value <= 1.0:
        out_of_range.append("mcc")
    checks.append(Check("rates and probabilities in [0, 1]", not out_of_range,
                        "all within range" if not out_of_range
                        else f"out of range: {', '.join(out_of_range)}"))
    total = conf.tp + conf.tn + conf.fp + conf.fn
    checks.append(Check("TP + TN + FP + FN = N", total == n, f"{total} vs N = {n}"))
    checks.append(Check("TP + FN = N_pos", conf.tp + conf.fn == n_pos,
                        f"{conf.tp + conf.fn} vs N_pos = {n_pos}"))
    checks.append(Check("TN + FP = N_neg", conf.tn + conf.fp == n - n_pos,
                        f"{conf.tn + conf.fp} vs N_neg = {n - n_pos}"))
    if conf.tp + conf.fn:
        sens = conf.metrics()["sensitivity"].value
        ok = math.isclose(sens, conf.tp / (conf.tp + conf.fn), rel_tol=0, abs_tol=1e-12)
        checks.append(Check("sensitivity = TP / (TP + FN)", ok,
                            f"{sens:.6f} = {conf.tp} / {conf.tp + conf.fn}"))
    else:
        checks.append(Check("sensitivity = TP / (TP + FN)", None, "no positives: undefined"))
    states_total = int(sum(g.state_counts))
    checks.append(Check("NEG + UNCERTAIN + POS = N", states_total == n,
                        f"{states_total} vs N = {n}"))
    if cfg.ranking_protocol == POS:
        n_rank = int(rmask.sum())
        checks.append(Check("ranking metrics on has_evidence = 1 only", n_rank == n_pos,
                            f"ranking n = {n_rank}, positives = {n_pos}"))
    checks.extend(ev._memo(("disjoint_checks",), lambda: _disjoint_checks(ds)))
    # Pooled from per-criterion counts vs the gate summary: two code paths must agree.
    codes, _ = _group_codes(ev, "criterion")
    missed = np.bincount(codes, weights=(states == 0) & (ds.y == 1), minlength=len(ds.criteria))
    pooled = (n_pos - missed.sum()) / n_pos if n_pos else float("nan")
    overall = g.screening_sensitivity
    same = (math.isnan(pooled) and math.isnan(overall)) or math.isclose(pooled, overall,
                                                                        abs_tol=1e-12)
    checks.append(Check("screening sensitivity: pooled per-criterion = overall", same,
                        f"{pooled:.6f} vs {overall:.6f}"))
    ref = _reference_k(cfg.ks)
    checks.append(Check(f"recall@{ref} vs evidence_recall labelled", True,
                        f"recall@{ref}: fixed K = {ref} on {cfg.ranking_protocol}; "
                        f"evidence_recall: selected K on {cfg.evidence_protocol}"))
    return checks


def _disjoint_checks(ds: Dataset) -> list[Check]:
    """Folds and splits post-disjoint (§10): no post in more than one fold / split."""
    out = []
    for column, label in (("fold", "folds"), ("split", "splits")):
        values = getattr(ds, column)
        if values is None:
            out.append(Check(f"{label} post-disjoint", None, f"no {column} column"))
            continue
        codes = pd.factorize(values)[0]
        # Queries are stored post by post (canonical order): compare each post's min and max.
        starts = np.flatnonzero(np.r_[True, np.diff(ds.post_code) != 0])
        lo = np.minimum.reduceat(codes, starts) if codes.size else codes
        hi = np.maximum.reduceat(codes, starts) if codes.size else codes
        bad = ds.post_code[starts[lo != hi]]
        examples = ", ".join(str(ds.posts[i]) for i in bad[:5])
        out.append(Check(f"{label} post-disjoint", bad.size == 0,
                         f"no post in more than one {column}" if bad.size == 0
                         else f"{bad.size} posts in more than one {column}: {examples}"))
    return out
