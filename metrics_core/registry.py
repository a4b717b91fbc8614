"""What the project knows about each metric, in one place (contract §3-§8, docs/CONTRACT.md).

One :class:`MetricSpec` per metric: its name, label, plain-language description, contract
section and record group, range, direction, unit, interval kind, where it applies (overall,
per criterion, per fold) and whether it is a headline number. The records' interpretation, the
consistency check on ranges, the common tests over every metric, the dashboard labels and the
CLI summary all read it. Families parameterised by a cut-off or a target (``recall@10``,
``tpr@fpr=0.05``) have one spec whose ``name`` ends in ``@`` or ``=``.

The counting metrics (confusion at τ, the gate and its abstention view: contract §4, §6) are
computed from the spec alone: its :class:`Counting` says which outcome table (prediction at τ,
or the gate's three-way prediction) and which cells (or which named ratio of the cells) make
the value; the records, the per-criterion / per-fold tables and the bootstrap of the operating
sums read it (:func:`counting`). Adding such a metric is one spec here.
The other metrics (ranking, calibration, dynamic-K, multi-label: contract §3, §5, §7, §8) are
computed from the spec too: its :class:`Kernel` names the per-query values it reduces (and
how, over which queries) or the whole-sample kernel it reads, and the wording of its variant;
the records, the per-group tables and the bootstrap read it (:func:`kernels`). Adding such a
metric over existing per-query values is one spec here; over new values, one spec and the
kernel that computes them (docs/ARCHITECTURE.md).
Sources: "contract §N" is section N of docs/CONTRACT.md; "seed 00N" is a file of docs/seeds/.

>>> label("ndcg@10"), spec("ndcg@10").section, describe("recall@5")
('nDCG@10', 3, "share of a query's gold sentences in the top 5, averaged")
>>> in_range("mcc", -0.4), in_range("sensitivity", 1.2), in_range("workload", 1e6)
(True, False, True)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import MappingProxyType

__all__ = [
    "APPLIES",
    "CELLS",
    "GATE_STATES",
    "INTERVALS",
    "SPECS",
    "Counting",
    "Kernel",
    "MetricSpec",
    "counting",
    "describe",
    "fmt_t",
    "headline",
    "in_range",
    "kernels",
    "label",
    "record_names",
    "spec",
]

#: Gate state names in code order (0, 1, 2), contract §6.
GATE_STATES = ("NEG", "UNCERTAIN", "POS")

PROPORTION = (0.0, 1.0)
CORRELATION = (-1.0, 1.0)
#: A ratio of counts that is at least 1 (e.g. alerts per true alert).
AT_LEAST_ONE = (1.0, math.inf)

#: Interval kinds of a record (contract §9): a Wilson interval (proportions), the percentile
#: bootstrap, the Poisson interval of O/E, the Wald interval of a logistic fit's coefficient,
#: or none (counts of the data, thresholds chosen on the data).
INTERVALS = ("wilson", "bootstrap", "poisson", "wald", None)
#: Where a metric is computed: the run's records, the per-criterion and per-fold tables and the
#: per-cohort table (:mod:`metrics_core.evaluation.cohorts`).
APPLIES = ("overall", "criterion", "fold", "cohort")
_EVERYWHERE = frozenset(APPLIES)
#: Cells of an outcome table (:mod:`metrics_core.metrics.outcomes`): TP / FP / TN / FN count
#: answered queries (predicted positive / negative), ``abstain_pos`` / ``abstain_neg`` the
#: abstained ones with / without evidence; ``n``, ``n_pos``, ``n_neg`` are their sums.
CELLS = ("tp", "fp", "tn", "fn", "abstain_pos", "abstain_neg")
_CELL_SUMS = MappingProxyType({"n": CELLS, "n_pos": ("tp", "fn", "abstain_pos"),
                               "n_neg": ("tn", "fp", "abstain_neg"),
                               "answered": ("tp", "fp", "tn", "fn"),
                               "abstain": ("abstain_pos", "abstain_neg")})
#: Named ratios of the answered cells that are no ratio of sums
#: (:data:`metrics_core.metrics.outcomes.FORMULAS`).
FORMULAS = ("f1", "mcc", "balanced_accuracy", "f1_neg")


@dataclass(frozen=True)
class Counting:
    """How a counting metric comes from an outcome table (contract §4, §6).

    ``table``: ``"tau"`` (prediction at τ: p ≥ τ positive) or ``"gate"`` (POS positive, NEG
    negative, UNCERTAIN abstains). The value is ``sum(numerator) / sum(denominator) × scale``
    (no denominator: the count itself), or ``formula``, a named ratio of the answered cells
    (:data:`FORMULAS`). Cell names are :data:`CELLS` or the sums ``n``, ``n_pos``, ``n_neg``,
    ``answered``, ``abstain``.
    """

    table: str
    numerator: tuple[str, ...] = ()
    denominator: tuple[str, ...] = ()
    scale: float = 1.0
    formula: str | None = None

    def __post_init__(self):
        if self.table not in ("tau", "gate"):
            raise ValueError(f"Counting.table must be 'tau' or 'gate', got {self.table!r}")
        if (self.formula is None) == (not self.numerator):
            raise ValueError("a Counting has either cells (numerator) or a formula")
        if self.formula is not None and self.formula not in FORMULAS:
            raise ValueError(f"Counting.formula must be one of {FORMULAS}, got "
                             f"{self.formula!r}")
        for cell in (*self.numerator, *self.denominator):
            if cell not in CELLS and cell not in _CELL_SUMS:
                raise ValueError(f"unknown outcome cell {cell!r}; have: "
                                 f"{', '.join((*CELLS, *_CELL_SUMS))}")

    def cells(self, which: str) -> tuple[str, ...]:
        """The :data:`CELLS` summed in the ``numerator`` or the ``denominator``."""
        return tuple(c for name in getattr(self, which) for c in _CELL_SUMS.get(name, (name,)))


def _cells(numerator: str, denominator: str = "", *, table: str, scale: float = 1.0) -> Counting:
    """``_cells("tp + fp", "tp", table="gate")``: a ratio of sums of cells."""
    def split(text):
        return tuple(c.strip() for c in text.split("+") if c.strip())
    return Counting(table, split(numerator), split(denominator), scale)


#: Per-query values a :class:`Kernel` reduces (one float per query): the ranking kernel's
#: values of the family member (contract §3), evidence recall / precision of the selected K and
#: the selected K itself (§7), the squared error (p − y)² (§5).
SOURCES = ("ranking", "evidence_recall", "evidence_precision", "k", "squared_error")
#: Of :data:`SOURCES`, those that depend on the data only (not on τ, the gate or γ): their
#: bootstrap is the data's, the others' the operating sums' (contract §9).
DATA_SOURCES = ("ranking", "squared_error")
#: Whole-sample kernels (metrics that are no reduction of per-query values): the reliability
#: bins (ECE, MCE), the logistic recalibration fit (O/E, intercept, slope), the per-post
#: multi-label metrics under the decision rule (§8), the score-ordered discrimination of p
#: (AUROC, AUPRC, TPR and its threshold at each FPR target: §4).
WHOLE = ("reliability", "logistic", "multilabel", "discrimination")
#: The queries a kernel reduces over: every query, the ranking protocol's, the evidence
#: protocol's; ``posts``: the posts of the run (multi-label metrics); ``positives``: every
#: query, the value a proportion of those with evidence (TPR at FPR: its ``n``).
OVER = ("all", "ranking", "evidence", "posts", "positives")
#: How per-query values become the metric: their mean, median, 90th percentile (numpy's linear
#: percentile), sum, or sum per 1,000 queries reduced over.
REDUCTIONS = ("mean", "median", "p90", "sum", "per_1000")
#: The variant wordings of a record (what setting the value depends on; contract §11).
VARIANTS = ("ranking", "reliability", "positive_p", "logistic_intercept", "logistic_slope",
            "dynamic_k", "multilabel_rule")


@dataclass(frozen=True)
class Kernel:
    """How a metric that is not a count of outcomes comes from the run (contract §3-§8).

    ``source``: a per-query source (:data:`SOURCES`; the value is ``reduce`` of its values over
    the queries ``over``) or a whole-sample kernel (:data:`WHOLE`; the value is its result's
    ``field``, the metric's name by default, and a Wald or Poisson interval its
    ``<field>_ci``). ``variant`` names the wording of the setting the value depends on
    (:data:`VARIANTS`).
    """

    source: str
    over: str = "all"
    reduce: str = "mean"
    field: str | None = None
    variant: str | None = None

    def __post_init__(self):
        if self.source not in SOURCES and self.source not in WHOLE:
            raise ValueError(f"Kernel.source must be one of {SOURCES + WHOLE}, got "
                             f"{self.source!r}")
        for name, value, allowed in (("over", self.over, OVER),
                                     ("reduce", self.reduce, REDUCTIONS),
                                     ("variant", self.variant, (*VARIANTS, None))):
            if value not in allowed:
                raise ValueError(f"Kernel.{name} must be one of {allowed}, got {value!r}")

    @property
    def per_query(self) -> bool:
        """True for a reduction of per-query values (else a whole-sample kernel)."""
        return self.source in SOURCES

    @property
    def data_only(self) -> bool:
        """True when the value depends on the data only (not on τ, the gate or γ)."""
        return self.source in DATA_SOURCES or self.source in ("reliability", "logistic",
                                                              "discrimination")


@dataclass(frozen=True)
class MetricSpec:
    """One metric of the contract.

    ``needs`` says which class the metric cannot do without: ``"both"`` (queries with and
    without evidence: AUROC, TPR at FPR, MCC, ...), ``"positive"`` (e.g. sensitivity) or
    ``"negative"`` (e.g. specificity); on data without it the record is undefined with the
    reason (:meth:`absent_class`), never a number.
    ``bounds`` is the closed range of a valid value (``None``: unbounded, e.g. a count);
    ``higher_is_better`` is ``None`` where neither direction is better (a rate of a state);
    ``applies`` says where it is computed (:data:`APPLIES`: the records, the per-criterion,
    per-fold and per-cohort tables); ``headline`` whether the overview and the CLI summary show it,
    ``record`` whether the decision record's headline table does. ``unit`` is one of
    ``proportion``, ``count``, ``per_1000``, ``sentences``, ``probability``, ``correlation``,
    ``ratio``, ``log-odds``. ``interval`` is the record's interval kind (:data:`INTERVALS`).
    ``counting``: how a counting metric is computed from the outcome counts (:class:`Counting`;
    ``None`` for a metric with a kernel of its own). ``undefined``: why the value is undefined
    when its denominator is empty (the record's ``reason``; ``None``: the generic one).
    ``group_ci``: the per-group tables carry its Wilson bounds (``<name>_ci_lo`` / ``_hi``).
    ``kernel``: how any other metric is computed (:class:`Kernel`); a spec has a ``counting``
    or a ``kernel``.
    """

    name: str
    label: str
    description: str
    section: int
    group: str
    bounds: tuple[float, float] | None = PROPORTION
    higher_is_better: bool | None = True
    unit: str = "proportion"
    headline: bool = False
    needs: str | None = None
    interval: str | None = "bootstrap"
    applies: frozenset = _EVERYWHERE
    counting: Counting | None = None
    undefined: str | None = None
    record: bool = False
    group_ci: bool = False
    kernel: Kernel | None = None

    def __post_init__(self):
        if self.group_ci and (self.interval != "wilson" or self.counting is None
                              or not self.counting.denominator):
            raise ValueError(f"{self.name}: group_ci needs a counting proportion with a Wilson "
                             "interval")
        if self.interval not in INTERVALS:
            raise ValueError(f"{self.name}: interval must be one of {INTERVALS}, got "
                             f"{self.interval!r}")
        if not set(self.applies) <= set(APPLIES):
            raise ValueError(f"{self.name}: applies must be among {APPLIES}, got "
                             f"{sorted(self.applies)}")
        if (self.counting is None) == (self.kernel is None):
            raise ValueError(f"{self.name}: a spec has a counting or a kernel (one of them)")

    @property
    def per_group(self) -> bool:
        """True when a per-criterion, per-fold or per-cohort table carries the metric."""
        return bool({"criterion", "fold", "cohort"} & self.applies)

    def absent_class(self, n_positive: int, n_negative: int) -> str | None:
        """Why the metric is undefined on data lacking a class it needs, else ``None``."""
        missing = [cls for cls, count in (("positive", n_positive), ("negative", n_negative))
                   if count == 0 and self.needs in (cls, "both")]
        return ONE_CLASS_REASONS[self.needs if len(missing) < 2 else "none"] if missing else None

    @property
    def family(self) -> bool:
        """True for a parameterised family (``recall@`` covers ``recall@10``)."""
        return self.name.endswith(("@", "="))


def _s(name, label, description, section, group, **kw) -> MetricSpec:
    return MetricSpec(name, label, description, section, group, **kw)


_CLS, _CONF, _CAL = "classification", "confusion", "calibration"
_GATE, _ABST, _RANK, _DK, _ML = ("gate", "gate (abstention view)", "ranking", "dynamic_k",
                                 "multilabel")
_COUNT = MappingProxyType({"bounds": None, "higher_is_better": None, "unit": "count"})
_BOTH = MappingProxyType({"needs": "both"})
_POS = MappingProxyType({"needs": "positive"})
_NEG = MappingProxyType({"needs": "negative"})
_RANKED = Kernel("ranking", over="ranking", variant="ranking")
_SCORED = Kernel("discrimination")
_PER_POST = Kernel("multilabel", over="posts", variant="multilabel_rule")
_NOT_PER_CRITERION = frozenset({"overall", "fold", "cohort"})


def _K(reduce: str) -> Kernel:
    """The selected K of every query, reduced by ``reduce``."""
    return Kernel("k", reduce=reduce, variant="dynamic_k")


#: The reason a record is undefined when its data lack a class the metric needs.
ONE_CLASS_REASONS = MappingProxyType({
    "both": "only one class present (needs queries with and without evidence)",
    "positive": "no query with evidence (needs queries with evidence)",
    "negative": "no query without evidence (needs queries without evidence)",
    "none": "no queries",
})
#: Metrics whose one-class value is a convention of seed 000 (AUROC 0.5, AUPRC = the positive
#: rate): the value is kept and flagged ``defined: false`` (contract §4).
ONE_CLASS_CONVENTIONS = frozenset({"auroc", "auprc"})

#: Every metric, in report order.
SPECS: tuple[MetricSpec, ...] = (
    # §4 classification
    _s("auroc", "AUROC", "chance that a random query with evidence scores above one without "
       "(0.5 = chance)", 4, _CLS, headline=True,
       kernel=_SCORED, record=True, **_BOTH),
    _s("auprc", "AUPRC", "average precision over all recall levels; compare with the positive "
       "rate, not 0.5", 4, _CLS, headline=True,
       kernel=_SCORED, record=True, **_BOTH),
    _s("tpr@fpr=", "TPR at FPR ≤ {t:.0%}", "share of evidence queries caught when at most "
       "{t:.0%} of no-evidence queries alarm", 4, _CLS,
       interval="wilson", kernel=Kernel("discrimination", over="positives", field="tpr"),
       **_BOTH),
    _s("threshold@fpr=", "threshold at FPR ≤ {t:.0%}", "probability threshold that operates "
       "at FPR ≤ {t:.0%}", 4, _CLS, higher_is_better=None, unit="probability",
       interval=None, kernel=Kernel("discrimination", field="threshold"), **_BOTH),
    # §4 confusion at τ
    _s("tp", "TP", "evidence queries predicted positive at τ", 4, _CONF,
       interval=None, counting=_cells("tp", table="tau"), **_COUNT),
    _s("fp", "FP", "no-evidence queries predicted positive at τ", 4, _CONF,
       interval=None, counting=_cells("fp", table="tau"), **_COUNT),
    _s("tn", "TN", "no-evidence queries predicted negative at τ", 4, _CONF,
       interval=None, counting=_cells("tn", table="tau"), **_COUNT),
    _s("fn", "FN", "evidence queries predicted negative at τ (missed)", 4, _CONF,
       interval=None, counting=_cells("fn", table="tau"), **_COUNT),
    _s("sensitivity", "Sensitivity", "share of evidence queries predicted positive at τ", 4,
       _CONF, headline=True,
       interval="wilson", counting=_cells("tp", "tp + fn", table="tau"), group_ci=True,
       record=True, **_POS),
    _s("specificity", "Specificity", "share of no-evidence queries predicted negative at τ", 4,
       _CONF, headline=True,
       interval="wilson", counting=_cells("tn", "tn + fp", table="tau"), record=True, **_NEG),
    _s("fpr", "FPR", "share of no-evidence queries wrongly predicted positive at τ", 4, _CONF,
       higher_is_better=False,
       interval="wilson", counting=_cells("fp", "tn + fp", table="tau"), **_NEG),
    _s("precision", "Precision (PPV)", "share of positive predictions at τ that have evidence",
       4, _CONF, headline=True,
       interval="wilson", counting=_cells("tp", "tp + fp", table="tau"), group_ci=True,
       record=True),
    _s("npv", "NPV", "share of negative predictions at τ that truly have no evidence", 4,
       _CONF,
       interval="wilson", counting=_cells("tn", "tn + fn", table="tau")),
    _s("f1", "F1", "harmonic mean of precision and sensitivity at τ", 4, _CONF, headline=True,
       counting=Counting("tau", formula="f1")),
    _s("mcc", "MCC", "correlation of predictions at τ with the truth (−1 … 1, 0 = chance)", 4,
       _CONF, bounds=CORRELATION, unit="correlation", headline=True,
       counting=Counting("tau", formula="mcc"), **_BOTH),
    _s("balanced_accuracy", "Balanced accuracy", "mean of sensitivity and specificity at τ", 4,
       _CONF,
       counting=Counting("tau", formula="balanced_accuracy"), **_BOTH),
    # §5 calibration
    _s("ece", "ECE", "average gap between predicted probability and observed frequency "
       "(0 = calibrated)", 5, _CAL, higher_is_better=False, headline=True,
       kernel=Kernel("reliability", variant="reliability"), record=True),
    _s("mce", "MCE", "largest gap between predicted probability and observed frequency in any "
       "bin", 5, _CAL, higher_is_better=False,
       kernel=Kernel("reliability", variant="reliability")),
    _s("brier", "Brier score", "mean squared error of the probabilities (0 = perfect; lower is "
       "better)", 5, _CAL, higher_is_better=False, headline=True,
       kernel=Kernel("squared_error", variant="positive_p"), record=True),
    _s("calibration_in_the_large", "Calibration in the large (O/E)", "observed over expected "
       "events, Σy / Σp (1 = right on average)", 5, _CAL, bounds=None, higher_is_better=None,
       unit="ratio",
       interval="poisson",
       kernel=Kernel("logistic", field="in_the_large", variant="positive_p")),
    _s("calibration_intercept", "Calibration intercept", "a of logit P(y=1) = a + logit(p) "
       "(0 = right on average; > 0 = under-predicts)", 5, _CAL, bounds=None,
       higher_is_better=None, unit="log-odds",
       interval="wald", kernel=Kernel("logistic", field="intercept",
                                      variant="logistic_intercept"), **_BOTH),
    _s("calibration_slope", "Calibration slope", "b of logit P(y=1) = a + b·logit(p) (1 = well "
       "spread; < 1 = too extreme)", 5, _CAL, bounds=None, higher_is_better=None, unit="ratio",
       interval="wald", record=True,
       kernel=Kernel("logistic", field="slope", variant="logistic_slope"), **_BOTH),
    # §6 gate
    _s("neg_rate", "NEG rate (auto-cleared)", "share of queries the gate screens out (NEG, "
       "skipped)", 6, _GATE, higher_is_better=None,
       interval="wilson", counting=_cells("tn + fn", "n", table="gate")),
    _s("uncertain_rate", "UNCERTAIN rate (review)", "share of queries sent to conservative "
       "review (UNCERTAIN)", 6, _GATE, higher_is_better=None,
       interval="wilson", counting=_cells("abstain", "n", table="gate")),
    _s("pos_rate", "POS rate (alert)", "share of queries flagged as high-confidence alerts "
       "(POS)", 6, _GATE, higher_is_better=None,
       interval="wilson", counting=_cells("tp + fp", "n", table="gate")),
    _s("review_rate", "Workload (share sent to review: UNCERTAIN + POS)", "share of queries a "
       "person reads (UNCERTAIN or POS)", 6, _GATE, higher_is_better=None,
       interval="wilson", counting=_cells("abstain + tp + fp", "n", table="gate")),
    _s("alert_rate_per_1000", "Alerts per 1,000", "high-confidence alerts per 1,000 queries", 6,
       _GATE, bounds=(0.0, 1000.0), higher_is_better=None, unit="per_1000", headline=True,
       interval="wilson", counting=_cells("tp + fp", "n", table="gate", scale=1000.0), record=True),
    _s("screening_sensitivity", "Screening sensitivity", "share of evidence queries the gate "
       "does not screen out (target ≥ 0.995)", 6, _GATE, headline=True,
       interval="wilson", counting=_cells("tp + abstain_pos", "n_pos", table="gate"), group_ci=True,
       record=True, **_POS),
    _s("screening_fn_per_1000", "Missed positives (FN) per 1,000", "evidence queries screened "
       "out (missed) per 1,000 queries (target ≤ 5)", 6, _GATE, bounds=(0.0, 1000.0),
       higher_is_better=False, unit="per_1000", headline=True,
       interval="wilson", counting=_cells("fn", "n", table="gate", scale=1000.0), record=True),
    _s("alert_precision", "Alert precision", "share of POS alerts that truly have evidence "
       "(target ≥ 0.90)", 6, _GATE, headline=True,
       interval="wilson", counting=_cells("tp", "tp + fp", table="gate"), group_ci=True,
       record=True),
    _s("workup_to_detection", "Workup per detection (alerts per true alert)", "POS alerts "
       "per alert that truly has evidence, (TP + FP) / TP = 1 / alert precision (1 = every "
       "alert true)", 6, _GATE, bounds=AT_LEAST_ONE, higher_is_better=False, unit="ratio",
       record=True, counting=_cells("tp + fp", "tp", table="gate"),
       undefined="no true alert at τ_pos (no POS alert has evidence)", **_POS),
    # §6 abstention view (seed 004): POS answers positive, NEG negative, UNCERTAIN abstains
    _s("coverage", "Coverage", "share of queries the gate answers (NEG or POS), abstention "
       "view", 6, _ABST, higher_is_better=None,
       interval="wilson", counting=_cells("answered", "n", table="gate")),
    _s("abstain_rate", "Abstain rate", "share of queries the gate abstains on (UNCERTAIN)", 6,
       _ABST, higher_is_better=None,
       interval="wilson", counting=_cells("abstain", "n", table="gate")),
    _s("abstain_rate_pos", "Abstain rate (evidence)", "share of evidence queries the gate "
       "abstains on", 6, _ABST, higher_is_better=None,
       interval="wilson", counting=_cells("abstain_pos", "n_pos", table="gate"), **_POS),
    _s("abstain_rate_neg", "Abstain rate (no evidence)", "share of no-evidence queries the "
       "gate abstains on", 6, _ABST, higher_is_better=None,
       interval="wilson", counting=_cells("abstain_neg", "n_neg", table="gate"), **_NEG),
    _s("accuracy", "Accuracy (abstain = wrong)", "share answered correctly, abstentions "
       "counted as wrong", 6, _ABST,
       interval="wilson", counting=_cells("tp + tn", "n", table="gate")),
    _s("accuracy_answered", "Accuracy (answered)", "share correct among answered queries", 6,
       _ABST,
       interval="wilson", counting=_cells("tp + tn", "answered", table="gate")),
    _s("precision_pos", "Precision (POS answers)", "share of POS answers that have evidence",
       6, _ABST,
       interval="wilson", counting=_cells("tp", "tp + fp", table="gate")),
    _s("recall_pos", "Recall (evidence, answered)", "share of answered evidence queries "
       "answered POS", 6, _ABST,
       interval="wilson", counting=_cells("tp", "tp + fn", table="gate"), **_POS),
    _s("f1_pos", "F1 (evidence)", "F1 of the POS answers over answered queries", 6, _ABST,
       counting=Counting("gate", formula="f1")),
    _s("precision_neg", "Precision (NEG answers)", "share of NEG answers that truly have no "
       "evidence", 6, _ABST,
       interval="wilson", counting=_cells("tn", "tn + fn", table="gate")),
    _s("recall_neg", "Recall (no evidence, answered)", "share of answered no-evidence queries "
       "answered NEG", 6, _ABST,
       interval="wilson", counting=_cells("tn", "tn + fp", table="gate"), **_NEG),
    _s("f1_neg", "F1 (no evidence)", "F1 of the NEG answers over answered queries", 6, _ABST,
       counting=Counting("gate", formula="f1_neg")),
    _s("balanced_accuracy_answered", "Balanced accuracy (answered)", "mean of the two "
       "recalls over answered queries", 6, _ABST,
       counting=Counting("gate", formula="balanced_accuracy"), **_BOTH),
    _s("mcc_answered", "MCC (answered)", "correlation of the answers with the truth over "
       "answered queries (−1 … 1)", 6, _ABST, bounds=CORRELATION, unit="correlation",
       counting=Counting("gate", formula="mcc"), **_BOTH),
    _s("slip_rate", "Slip rate", "share of evidence queries answered NEG (slipped through)", 6,
       _ABST, higher_is_better=False,
       interval="wilson", counting=_cells("fn", "n_pos", table="gate"), **_POS),
    _s("false_flag_rate", "False-flag rate", "share of no-evidence queries answered POS (false "
       "flags)", 6, _ABST, higher_is_better=False,
       interval="wilson", counting=_cells("fp", "n_neg", table="gate"), **_NEG),
    _s("catch_rate", "Catch rate", "share of evidence queries answered POS", 6, _ABST,
       interval="wilson", counting=_cells("tp", "n_pos", table="gate"), **_POS),
    _s("pass_rate", "Pass rate", "share of no-evidence queries answered NEG", 6, _ABST,
       interval="wilson", counting=_cells("tn", "n_neg", table="gate"), **_NEG),
    # §3 ranking: the mean of the ranking kernel's per-query values over the protocol's queries
    _s("recall@", "Recall@{k}", "share of a query's gold sentences in the top {k}, averaged",
       3, _RANK, kernel=_RANKED,
       record=True),
    _s("precision@", "Precision@{k}", "share of the top {k} sentences that are gold, averaged",
       3, _RANK, kernel=_RANKED),
    _s("hit@", "Hit@{k}", "share of queries with at least one gold sentence in the top {k}", 3,
       _RANK, kernel=_RANKED,
       interval="wilson"),
    _s("map@", "MAP@{k}", "average precision at the gold hits within the top {k}, averaged", 3,
       _RANK, kernel=_RANKED),
    _s("ndcg@", "nDCG@{k}", "rank-discounted gain of gold in the top {k} relative to the ideal "
       "(1 = perfect)", 3, _RANK, kernel=_RANKED,
       record=True),
    _s("mrr@", "MRR@{k}", "1 / rank of the first gold sentence if within the top {k}, "
       "averaged", 3, _RANK, kernel=_RANKED),
    _s("mrr", "MRR", "1 / rank of the first gold sentence, averaged (1/MRR ≈ typical first gold "
       "rank)", 3, _RANK, headline=True, kernel=_RANKED,
       record=True),
    # §7 dynamic-K: reductions of each query's evidence recall / precision and selected K
    _s("evidence_recall", "Evidence recall", "share of gold sentences inside the dynamically "
       "selected K, averaged", 7, _DK, headline=True,
       kernel=Kernel("evidence_recall", over="evidence", variant="dynamic_k"), record=True),
    _s("evidence_precision", "Evidence precision", "share of selected sentences that are gold, "
       "averaged", 7, _DK, headline=True,
       kernel=Kernel("evidence_precision", over="evidence", variant="dynamic_k")),
    _s("mean_k", "Mean K", "sentences selected per query on average", 7, _DK, bounds=None,
       higher_is_better=None, unit="sentences", headline=True,
       kernel=_K("mean"), record=True),
    _s("median_k", "Median K", "median sentences selected per query", 7, _DK, bounds=None,
       higher_is_better=None, unit="sentences", kernel=_K("median")),
    _s("p90_k", "P90 K", "90th percentile of sentences selected per query (workload planning)",
       7, _DK, bounds=None, higher_is_better=None, unit="sentences", kernel=_K("p90")),
    _s("workload", "Workload", "sentences extracted in total", 7, _DK,
       interval=None, kernel=_K("sum"), **_COUNT),
    _s("workload_per_1000", "Sentences per 1,000 queries", "sentences to read per 1,000 "
       "queries", 7, _DK, bounds=None, higher_is_better=False, unit="per_1000",
       headline=True, kernel=_K("per_1000"),
       record=True),
    # §8 per-post multi-label: the whole-sample kernel of the posts (not per criterion: a post
    # holds every criterion)
    _s("exact_match", "Exact match", "share of posts whose every criterion prediction is "
       "right", 8, _ML, headline=True,
       interval="wilson", kernel=_PER_POST, applies=_NOT_PER_CRITERION),
    _s("hamming_score", "Hamming score", "share of (post, criterion) predictions that are "
       "right", 8, _ML,
       kernel=_PER_POST, applies=_NOT_PER_CRITERION),
    _s("hamming_loss", "Hamming loss", "share of (post, criterion) predictions that are wrong",
       8, _ML, higher_is_better=False,
       kernel=_PER_POST, applies=_NOT_PER_CRITERION),
    _s("micro_f1", "Micro F1", "F1 pooled over all (post, criterion) pairs", 8, _ML,
       headline=True,
       kernel=_PER_POST, applies=_NOT_PER_CRITERION),
    _s("samples_f1", "Samples F1", "mean of per-post F1 (called “Macro F1” in some reports)", 8,
       _ML, headline=True,
       kernel=_PER_POST, applies=_NOT_PER_CRITERION),
    _s("macro_f1", "Macro F1", "mean of per-criterion F1", 8, _ML,
       kernel=_PER_POST, applies=_NOT_PER_CRITERION),
    _s("weighted_f1", "Weighted F1", "per-criterion F1 weighted by gold positives", 8, _ML,
       kernel=_PER_POST, applies=_NOT_PER_CRITERION),
)

_BY_NAME = MappingProxyType({s.name: s for s in SPECS})
#: Headline cut-offs and targets of the families (the overview and the CLI summary).
_HEADLINE_FAMILY = ("tpr@fpr=0.01", "tpr@fpr=0.05", "recall@10", "ndcg@10", "map@10")


def _split(name: str) -> tuple[str, str | None]:
    """``recall@10`` -> (``recall@``, ``10``); ``tpr@fpr=0.05`` -> (``tpr@fpr=``, ``0.05``)."""
    if name in _BY_NAME:
        return name, None
    for sep in ("=", "@"):
        head, mark, tail = name.rpartition(sep)
        if mark and head + sep in _BY_NAME:
            return head + sep, tail
    raise KeyError(f"no metric spec for {name!r}")


def fmt_t(t: float) -> str:
    """An FPR target as record names write it: ``0.05``, ``0.10``, ``0.125``."""
    return f"{t:.2f}" if round(t, 2) == t else f"{t:g}"


def spec(name: str) -> MetricSpec:
    """The spec of ``name`` (a family member resolves to its family; KeyError if unknown)."""
    return _BY_NAME[_split(name)[0]]


def _format(template: str, name: str) -> str:
    family, param = _split(name)
    if param is None:
        return template
    if family.endswith("="):
        return template.format(t=float(param))
    return template.format(k=param)


def label(name: str) -> str:
    """Display label, e.g. ``Recall@10``; the name itself when no spec knows it."""
    try:
        return _format(spec(name).label, name)
    except (KeyError, ValueError):
        return name


def describe(name: str) -> str:
    """Plain-language meaning of a metric name (seed 003 §10.2); '' when unknown."""
    try:
        return _format(spec(name).description, name)
    except (KeyError, ValueError):
        return ""


def in_range(name: str, value: float) -> bool:
    """True when ``value`` lies within the metric's bounds (always true when unbounded)."""
    try:
        bounds = spec(name).bounds
    except KeyError:
        return True
    return bounds is None or bounds[0] <= value <= bounds[1]


def headline(names) -> list[str]:
    """The headline metrics among ``names`` (report order), e.g. for the CLI summary."""
    names = list(names)
    present = set(names)
    out = []
    for s in SPECS:
        if s.family:
            out.extend(n for n in _HEADLINE_FAMILY if n in present and spec(n) is s)
        elif s.headline and s.name in present:
            out.append(s.name)
    return out


def group_columns(ks: tuple[int, ...], reference_k: int) -> list[str]:
    """Metric columns of the per-group tables: every ``per_group`` spec, families at K.

    The ranking families appear at ``reference_k`` (10 by default), as in the overview.
    """
    out = []
    for s in SPECS:
        if not s.per_group:
            continue
        if s.family:
            if s.group == _RANK and reference_k in ks:
                out.append(f"{s.name}{reference_k}")
        else:
            out.append(s.name)
    return out


def counting(table: str | None = None, *,
             where: str | None = "overall") -> tuple[MetricSpec, ...]:
    """The counting metrics (a :class:`Counting` spec) of ``table`` (``"tau"``, ``"gate"``;
    None: both) that apply ``where`` (:data:`APPLIES`; None: anywhere), in report order."""
    return tuple(s for s in SPECS if s.counting is not None
                 and (where is None or where in s.applies)
                 and (table is None or s.counting.table == table))


def kernels(group: str | None = None, *, where: str | None = "overall",
            source: str | None = None) -> tuple[MetricSpec, ...]:
    """The metrics with a :class:`Kernel` of record ``group`` (None: any) that apply ``where``
    (:data:`APPLIES`; None: anywhere) and read ``source`` (None: any), in report order."""
    return tuple(s for s in SPECS if s.kernel is not None
                 and (group is None or s.group == group)
                 and (where is None or where in s.applies)
                 and (source is None or s.kernel.source == source))


def record_names(reference_k: int = 10) -> tuple[str, ...]:
    """The metrics of the decision record's headline table (``record``), in report order;
    the ranking families at ``reference_k``."""
    return tuple(f"{s.name}{reference_k}" if s.family else s.name
                 for s in SPECS if s.record)
