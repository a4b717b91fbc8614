"""Run configuration: thresholds, dynamic-K parameters, metric variants, bootstrap, filters.

One frozen :class:`EvalConfig` describes a run (contract §3-§9, docs/CONTRACT.md). The CLI builds
it from flags, the dashboard from its sidebar (and the URL query string), and
``metrics_master.json`` records it, so a number can always be traced to the settings that
produced it.

Every field carries its own metadata (:class:`Option`: section, label, help, bounds, whether
the CLI and the dashboard offer it); the CLI flags (:mod:`metrics_core.cli`) and the dashboard
settings (``dashboard/state.py``) are generated from it, so a new setting is one field here.
The fields are grouped into frozen sub-configurations (:attr:`EvalConfig.ranking`,
:attr:`~EvalConfig.gate`, :attr:`~EvalConfig.dynamic_k`, :attr:`~EvalConfig.calibration`,
:attr:`~EvalConfig.bootstrap_config`, :attr:`~EvalConfig.filters`) that are the cache keys of
the computations depending on them: a part is recomputed only when its own settings change.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, make_dataclass, replace
from types import MappingProxyType

from metrics_core import choices
from metrics_core.choices import PROTOCOLS

__all__ = [
    "SECTIONS",
    "VARIANTS",
    "VARIANT_LABELS",
    "EvalConfig",
    "Filters",
    "Option",
    "option",
    "options",
]

#: Every named variant of the contract and its allowed values (the first is the default): the
#: kernels' own option tuples, so a kernel and the configuration cannot disagree.
VARIANTS = MappingProxyType({
    # §3 ranking
    "precision_denominator": choices.PRECISION_DENOMINATORS,
    "map_denominator": choices.MAP_DENOMINATORS,
    "gain": choices.GAINS,
    "ranking_protocol": PROTOCOLS,
    # §5 calibration
    "binning": choices.STRATEGIES,
    "calibration_view": ("positive", "top_label"),
    # §7 dynamic-K
    "mass": choices.MASS_RULES,
    "evidence_protocol": choices.EVIDENCE_PROTOCOLS,
    # §8 multi-label decision rule
    "multilabel_rule": choices.DECISION_RULES,
    # §9 bootstrap unit
    "bootstrap_unit": ("query", "post"),
})

#: Human-readable descriptions of the variant values, for the CLI help and the dashboard.
VARIANT_LABELS = MappingProxyType({
    "precision_denominator": {"k": "|TopK ∩ Gold| / K",
                              "min_k_n": "|TopK ∩ Gold| / min(K, n candidates)"},
    "map_denominator": {"n_gold": "÷ |Gold| (trec_eval map_cut)",
                        "min_gold_k": "÷ min(|Gold|, K)",
                        "hits": "÷ hits within K"},
    "gain": {"binary": "binary gain", "graded": "graded gain 2^rel − 1"},
    "ranking_protocol": {"positives_only": "positives only (has_evidence = 1)",
                         "all_queries": "all queries (empty gold scores 0)"},
    "binning": {"uniform": "equal-width bins", "quantile": "equal-mass bins"},
    "calibration_view": {"positive": "positive class p", "top_label": "top label max(p, 1 − p)"},
    "mass": {"softmax": "softmax(score / T)", "probability": "score / Σ score"},
    "evidence_protocol": {"positives_only": "positives only (has_evidence = 1)",
                          "all_queries": "all queries (empty gold: 1 if nothing selected)"},
    "multilabel_rule": {"threshold": "p ≥ τ", "screen_in": "state ≠ NEG",
                        "alert": "state = POS"},
    "bootstrap_unit": {"query": "resample queries", "post": "resample posts (cluster)"},
})

#: Sections of the settings, in the order the dashboard and the CLI help show them.
SECTIONS = MappingProxyType({
    "gate": "Gate & thresholds",
    "dynamic_k": "Dynamic-K",
    "filters": "Filters",
    "ranking": "Ranking variants",
    "classification": "Classification",
    "calibration": "Calibration",
    "multilabel": "Per-post decision rule",
    "uncertainty": "Uncertainty",
})

#: Most bootstrap resamples a run may ask for (memory and time grow with it).
MAX_BOOTSTRAP = 100_000


@dataclass(frozen=True)
class Option:
    """Metadata of one configuration field: where it is shown and which values it takes.

    ``widget`` is how the dashboard shows it (``slider``, ``number``, ``toggle``, ``select``),
    or ``None`` when the dashboard shows it another way (the gate range) or not at all.
    ``cli`` is False for fields the CLI does not offer as a flag of their own.
    """

    section: str
    label: str
    help: str = ""
    low: float | None = None
    high: float | None = None
    step: float | None = None
    widget: str | None = None
    cli: bool = True


def _field(default, section, label, help="", *, low=None, high=None, step=None, widget=None,
           cli=True):
    opt = Option(section, label, help, low, high, step, widget, cli)
    return field(default=default, metadata={"option": opt})


@dataclass(frozen=True)
class Filters:
    """Which queries a run evaluates: one fold, one split, some criteria (None / () = all)."""

    fold: str | None = None
    split: str | None = None
    criteria: tuple[str, ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "fold", None if self.fold is None else str(self.fold))
        object.__setattr__(self, "split", None if self.split is None else str(self.split))
        object.__setattr__(self, "criteria", tuple(str(c) for c in self.criteria))

    @property
    def active(self) -> bool:
        return self.fold is not None or self.split is not None or bool(self.criteria)

    def describe(self) -> str:
        """Plain words, e.g. ``fold 2; criteria A.1, A.3`` (``all queries`` when inactive)."""
        parts = []
        if self.fold is not None:
            parts.append(f"fold {self.fold}")
        if self.split is not None:
            parts.append(f"split {self.split}")
        if self.criteria:
            parts.append("criteria " + ", ".join(self.criteria))
        return "; ".join(parts) if parts else "all queries"

    def to_dict(self) -> dict:
        return {"fold": self.fold, "split": self.split, "criteria": list(self.criteria)}


@dataclass(frozen=True)
class EvalConfig:
    """Settings of one evaluation run; defaults are the contract's defaults.

    Thresholds: ``tau_neg`` / ``tau_pos`` (three-state gate, §6), ``threshold`` (confusion
    metrics, §4). Dynamic-K (§7): ``gamma``, ``gamma_uncertain``, ``k_min``, ``hard_cap``,
    ``k_max_ratio``, ``gate_aware``, ``mass``, ``temperature``. Ranking (§3): ``ks`` and the
    variants. Calibration (§5): ``n_bins``, ``binning``, ``calibration_view``. Bootstrap (§9):
    ``bootstrap`` resamples (0 turns CIs off), ``bootstrap_unit``, ``seed``. ``filters``
    restricts the run to a fold, a split or some criteria.

    >>> cfg = EvalConfig(tau_neg=0.05, gamma=0.8)
    >>> cfg.gate, cfg.dynamic_k.gamma
    (GateConfig(tau_neg=0.05, tau_pos=0.6, threshold=0.5, criterion_gates=()), 0.8)
    """

    tau_neg: float = _field(0.1, "gate", "τ_neg", "NEG if p < τ_neg (contract §6).",
                            low=0.0, high=1.0, step=0.01)
    tau_pos: float = _field(0.6, "gate", "τ_pos", "POS if p ≥ τ_pos (contract §6).",
                            low=0.0, high=1.0, step=0.01)
    threshold: float = _field(0.5, "gate", "Fixed threshold τ (confusion metrics)",
                              "Predicted positive iff p ≥ τ (contract §4).",
                              low=0.0, high=1.0, step=0.01, widget="slider")
    gamma: float = _field(0.9, "dynamic_k", "γ (cumulative mass, POS)",
                          "K is the smallest K whose cumulative mass reaches γ.",
                          low=0.05, high=1.0, step=0.01, widget="slider")
    gamma_uncertain: float = _field(0.95, "dynamic_k", "γ_uncertain (UNCERTAIN)",
                                    "γ used for UNCERTAIN queries under the gate-aware policy.",
                                    low=0.05, high=1.0, step=0.01, widget="slider")
    k_min: int = _field(2, "dynamic_k", "k_min",
                        "Fewest sentences selected (capped by the candidate count).",
                        low=0, high=100, step=1, widget="number")
    hard_cap: int = _field(10, "dynamic_k", "Hard cap",
                           "k_max = min(hard cap, ⌊n × k_max ratio⌋).",
                           low=1, high=200, step=1, widget="number")
    k_max_ratio: float = _field(0.5, "dynamic_k", "k_max ratio",
                                "Share of the candidates that may be selected at most.",
                                low=0.05, high=1.0, step=0.05, widget="slider")
    gate_aware: bool = _field(True, "dynamic_k", "Gate-aware policy (NEG → K = 0)",
                              "NEG selects nothing, UNCERTAIN uses γ_uncertain, POS uses γ.",
                              widget="toggle")
    mass: str = _field("softmax", "dynamic_k", "Candidate mass", widget="select")
    temperature: float = _field(1.0, "dynamic_k", "Softmax temperature T",
                                "Masses are softmax(score / T).",
                                low=0.01, high=100.0, step=0.1, widget="number")
    evidence_protocol: str = _field("positives_only", "dynamic_k", "Evidence metrics on",
                                    widget="select")
    ks: tuple[int, ...] = _field((1, 3, 5, 10, 20), "ranking", "Cut-offs K",
                                 "Ranking cut-offs, e.g. 1,3,5,10,20.")
    ranking_protocol: str = _field("positives_only", "ranking", "Ranking metrics on",
                                   widget="select")
    precision_denominator: str = _field("k", "ranking", "Precision@K denominator",
                                        widget="select")
    map_denominator: str = _field("n_gold", "ranking", "MAP@K denominator", widget="select")
    gain: str = _field("binary", "ranking", "nDCG gain", widget="select")
    tpr_fprs: tuple[float, ...] = _field((0.01, 0.03, 0.05, 0.10), "classification",
                                         "FPR targets", "TPR is reported at these FPRs.")
    calibration_view: str = _field("positive", "calibration", "Calibration view",
                                   widget="select")
    binning: str = _field("uniform", "calibration", "Binning", widget="select")
    n_bins: int = _field(10, "calibration", "Number of bins", low=2, high=50, step=1,
                         widget="number")
    multilabel_rule: str = _field("threshold", "multilabel", "Per-post decision rule",
                                  widget="select")
    bootstrap: int = _field(10_000, "uncertainty", "Bootstrap resamples (0 = off)",
                            "Percentile 95% CIs for AUROC, AUPRC, ECE, Brier and the means; "
                            "proportions always carry Wilson intervals.",
                            low=0, high=MAX_BOOTSTRAP, step=500, widget="number")
    bootstrap_unit: str = _field("query", "uncertainty", "Bootstrap unit", widget="select")
    seed: int = _field(0, "uncertainty", "Bootstrap seed", low=0, high=2**31 - 1, step=1,
                       widget="number")
    criterion_gates: tuple[tuple[str, float, float], ...] = _field(
        (), "gate", "Per-criterion gate thresholds",
        "(criterion, τ_neg, τ_pos) for criteria whose gate differs from the overall one.",
        cli=False)
    targets: tuple[str, ...] = _field(
        ("auroc>=0.85", "auprc>=0.55", "ece<0.05", "brier<0.1", "evidence_recall>=0.70",
         "screening_sensitivity>=0.995", "screening_fn_per_1000<=5", "alert_precision>=0.90"),
        "targets", "Targets", "metric>=value (or >, <=, <): met only when the whole 95% "
        "interval clears the value. Defaults: the targets of seed 003.", cli=False)
    filters: Filters = _field(Filters(), "filters", "Filters",  # noqa: RUF009 (frozen value)
                              "Evaluate one fold, one split or some criteria only.", cli=False)

    def __post_init__(self) -> None:
        for name, allowed in VARIANTS.items():
            value = getattr(self, name)
            if value not in allowed:
                raise ValueError(f"{name} must be one of {', '.join(allowed)}; got {value!r}")
        for name in ("tau_neg", "tau_pos", "threshold"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be within [0, 1]; got {value}")
        if self.tau_neg > self.tau_pos:
            raise ValueError(f"tau_neg must be <= tau_pos; got tau_neg={self.tau_neg}, "
                             f"tau_pos={self.tau_pos}")
        for name in ("gamma", "gamma_uncertain"):
            value = getattr(self, name)
            if not 0.0 < value <= 1.0:
                raise ValueError(f"{name} must be within (0, 1]; got {value}")
        if self.k_min < 0:
            raise ValueError(f"k_min must be >= 0; got {self.k_min}")
        if self.hard_cap < 1:
            raise ValueError(f"hard_cap must be >= 1; got {self.hard_cap}")
        if not 0.0 < self.k_max_ratio <= 1.0:
            raise ValueError(f"k_max_ratio must be within (0, 1]; got {self.k_max_ratio}")
        if self.temperature <= 0:
            raise ValueError(f"temperature must be > 0; got {self.temperature}")
        if not self.ks or any(int(k) != k or k < 1 for k in self.ks):
            raise ValueError(f"ks must be positive integers; got {self.ks}")
        object.__setattr__(self, "ks", tuple(sorted({int(k) for k in self.ks})))
        if any(not 0.0 <= t <= 1.0 for t in self.tpr_fprs):
            raise ValueError(f"tpr_fprs must be within [0, 1]; got {self.tpr_fprs}")
        object.__setattr__(self, "tpr_fprs", tuple(sorted({float(t) for t in self.tpr_fprs})))
        if self.n_bins < 1:
            raise ValueError(f"n_bins must be >= 1; got {self.n_bins}")
        if self.bootstrap < 0:
            raise ValueError(f"bootstrap must be >= 0 (0 turns CIs off); got {self.bootstrap}")
        if self.bootstrap > MAX_BOOTSTRAP:
            raise ValueError(f"bootstrap must be at most {MAX_BOOTSTRAP:,} resamples; "
                             f"got {self.bootstrap:,}")
        object.__setattr__(self, "criterion_gates", _criterion_gates(self.criterion_gates))
        from metrics_core.targets import parse_target

        for text in self.targets:
            parse_target(str(text))
        object.__setattr__(self, "targets", tuple(str(t).strip() for t in self.targets))
        if isinstance(self.filters, dict):
            object.__setattr__(self, "filters", Filters(**self.filters))
        elif not isinstance(self.filters, Filters):
            raise ValueError(f"filters must be a Filters; got {type(self.filters).__name__}")

    # ---- sub-configurations: the cache keys of the computations that depend on them ----
    @property
    def gate(self) -> GateConfig:
        return _sub(GateConfig, self)

    @property
    def dynamic_k(self) -> DynamicKConfig:
        return _sub(DynamicKConfig, self)

    @property
    def ranking(self) -> RankingConfig:
        return _sub(RankingConfig, self)

    @property
    def calibration(self) -> CalibrationConfig:
        return _sub(CalibrationConfig, self)

    @property
    def bootstrap_config(self) -> BootstrapConfig:
        return _sub(BootstrapConfig, self)

    def gate_of(self, criterion: str) -> tuple[float, float]:
        """``(τ_neg, τ_pos)`` of the gate of one criterion (its own, else the overall one)."""
        for name, tau_neg, tau_pos in self.criterion_gates:
            if name == criterion:
                return tau_neg, tau_pos
        return self.tau_neg, self.tau_pos

    def describe_gate(self) -> str:
        """Plain words, e.g. ``τ_neg=0.1, τ_pos=0.6; A.1: 0.05 / 0.7``."""
        text = f"τ_neg={self.tau_neg:g}, τ_pos={self.tau_pos:g}"
        if self.criterion_gates:
            text += "; " + ", ".join(f"{c}: {a:g} / {b:g}" for c, a, b in self.criterion_gates)
        return text

    def replace(self, **changes) -> EvalConfig:
        """A copy with some settings changed (validated again)."""
        return replace(self, **changes)

    def to_dict(self) -> dict:
        """Plain JSON-ready dict (tuples become lists, filters a dict)."""
        out = {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}
        out["filters"] = self.filters.to_dict()
        return out

    @classmethod
    def from_dict(cls, data: dict) -> EvalConfig:
        """Inverse of :meth:`to_dict`; unknown keys are an error naming them."""
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ValueError(f"unknown configuration keys: {', '.join(unknown)}")
        kwargs = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}
        if "criterion_gates" in kwargs:
            kwargs["criterion_gates"] = tuple(tuple(g) for g in kwargs["criterion_gates"])
        if isinstance(kwargs.get("filters"), dict):
            kwargs["filters"] = Filters(**kwargs["filters"])
        return cls(**kwargs)


def _criterion_gates(gates) -> tuple[tuple[str, float, float], ...]:
    """Validated per-criterion gates, one per criterion, sorted by criterion."""
    out = {}
    for gate in gates:
        try:
            name, tau_neg, tau_pos = gate
            name, tau_neg, tau_pos = str(name), float(tau_neg), float(tau_pos)
        except (TypeError, ValueError):
            raise ValueError(f"criterion_gates: expected (criterion, tau_neg, tau_pos); "
                             f"got {gate!r}") from None
        if not (0.0 <= tau_neg <= tau_pos <= 1.0):
            raise ValueError(f"criterion_gates: criterion {name!r} needs 0 <= tau_neg <= "
                             f"tau_pos <= 1; got tau_neg={tau_neg}, tau_pos={tau_pos}")
        if name in out:
            raise ValueError(f"criterion_gates: criterion {name!r} is given twice")
        out[name] = (name, tau_neg, tau_pos)
    return tuple(out[k] for k in sorted(out))


def parse_criterion_gate(text: str) -> tuple[str, float, float]:
    """``"CRITERION=TAU_NEG:TAU_POS"`` -> ``(criterion, τ_neg, τ_pos)`` (the CLI's form).

    >>> parse_criterion_gate("A.1=0.05:0.7")
    ('A.1', 0.05, 0.7)
    """
    name, sep, taus = text.rpartition("=")
    lo, sep2, hi = taus.partition(":")
    try:
        if not (sep and sep2 and name):
            raise ValueError
        return _criterion_gates([(name, float(lo), float(hi))])[0]
    except ValueError as exc:
        detail = f" ({exc})" if str(exc) else ""
        raise ValueError(f"expected CRITERION=TAU_NEG:TAU_POS, e.g. A.1=0.05:0.7; got "
                         f"{text!r}{detail}") from None


def _group(name: str, names: tuple[str, ...]):
    return make_dataclass(name, [(n, object) for n in names], frozen=True,
                          namespace={"__module__": __name__})


#: Frozen sub-configurations: the fields each computation depends on.
GateConfig = _group("GateConfig", ("tau_neg", "tau_pos", "threshold", "criterion_gates"))
DynamicKConfig = _group("DynamicKConfig", (
    "gamma", "gamma_uncertain", "k_min", "hard_cap", "k_max_ratio", "gate_aware", "mass",
    "temperature", "evidence_protocol"))
RankingConfig = _group("RankingConfig", (
    "ks", "ranking_protocol", "precision_denominator", "map_denominator", "gain"))
CalibrationConfig = _group("CalibrationConfig", ("calibration_view", "binning", "n_bins"))
BootstrapConfig = _group("BootstrapConfig", ("bootstrap", "bootstrap_unit", "seed"))


def _sub(kind, cfg: EvalConfig):
    return kind(**{f.name: getattr(cfg, f.name) for f in fields(kind)})


def options() -> dict[str, Option]:
    """Every configuration field's :class:`Option`, in declaration order."""
    return {f.name: f.metadata["option"] for f in fields(EvalConfig)}


def option(name: str) -> Option:
    """The :class:`Option` of the field ``name``."""
    return options()[name]
