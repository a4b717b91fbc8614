"""Run configuration: thresholds, dynamic-K parameters, metric variants, bootstrap (contract §3-§9).

One frozen :class:`EvalConfig` describes a run. The CLI builds it from flags, the dashboard from
its sidebar (and the URL query string), and ``metrics_master.json`` records it, so a number can
always be traced to the settings that produced it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, replace

__all__ = ["VARIANTS", "EvalConfig"]

#: Every named variant of the contract and its allowed values (the first is the default).
VARIANTS: dict[str, tuple[str, ...]] = {
    # §3 ranking
    "precision_denominator": ("k", "min_k_n"),
    "map_denominator": ("n_gold", "min_gold_k", "hits"),
    "gain": ("binary", "graded"),
    "ranking_protocol": ("positives_only", "all_queries"),
    # §5 calibration
    "binning": ("uniform", "quantile"),
    "calibration_view": ("positive", "top_label"),
    # §7 dynamic-K
    "mass": ("softmax", "probability"),
    "evidence_protocol": ("positives_only", "all_queries"),
    # §8 multi-label decision rule
    "multilabel_rule": ("threshold", "screen_in", "alert"),
    # §9 bootstrap unit
    "bootstrap_unit": ("query", "post"),
}

#: Human-readable descriptions of the variant values, for the CLI help and the dashboard.
VARIANT_LABELS: dict[str, dict[str, str]] = {
    "precision_denominator": {"k": "|TopK ∩ Gold| / K",
                              "min_k_n": "|TopK ∩ Gold| / min(K, n candidates) (seed 002)"},
    "map_denominator": {"n_gold": "÷ |Gold| (trec_eval map_cut)",
                        "min_gold_k": "÷ min(|Gold|, K) (seed 000)",
                        "hits": "÷ hits within K (seed 002)"},
    "gain": {"binary": "binary gain", "graded": "graded gain 2^rel − 1"},
    "ranking_protocol": {"positives_only": "positives only (has_evidence = 1)",
                         "all_queries": "all queries (empty gold scores 0)"},
    "binning": {"uniform": "equal-width bins", "quantile": "equal-mass bins"},
    "calibration_view": {"positive": "positive class p", "top_label": "top label max(p, 1 − p)"},
    "mass": {"softmax": "softmax(score / T)", "probability": "score / Σ score"},
    "evidence_protocol": {"positives_only": "positives only (seed 003)",
                          "all_queries": "all queries (seed 000 conventions)"},
    "multilabel_rule": {"threshold": "p ≥ τ", "screen_in": "state ≠ NEG",
                        "alert": "state = POS"},
    "bootstrap_unit": {"query": "resample queries", "post": "resample posts (cluster)"},
}


@dataclass(frozen=True)
class EvalConfig:
    """Settings of one evaluation run; defaults are the contract's defaults.

    Thresholds: ``tau_neg`` / ``tau_pos`` (three-state gate, §6), ``threshold`` (confusion
    metrics, §4). Dynamic-K (§7): ``gamma``, ``gamma_uncertain``, ``k_min``, ``hard_cap``,
    ``k_max_ratio``, ``gate_aware``, ``mass``, ``temperature``. Ranking (§3): ``ks`` and the
    variants. Calibration (§5): ``n_bins``, ``binning``, ``calibration_view``. Bootstrap (§9):
    ``bootstrap`` resamples (0 turns CIs off), ``bootstrap_unit``, ``seed``.
    """

    tau_neg: float = 0.1
    tau_pos: float = 0.6
    threshold: float = 0.5
    gamma: float = 0.9
    gamma_uncertain: float = 0.95
    k_min: int = 2
    hard_cap: int = 10
    k_max_ratio: float = 0.5
    gate_aware: bool = True
    mass: str = "softmax"
    temperature: float = 1.0
    ks: tuple[int, ...] = (1, 3, 5, 10, 20)
    tpr_fprs: tuple[float, ...] = (0.01, 0.03, 0.05, 0.10)
    precision_denominator: str = "k"
    map_denominator: str = "n_gold"
    gain: str = "binary"
    ranking_protocol: str = "positives_only"
    evidence_protocol: str = "positives_only"
    n_bins: int = 10
    binning: str = "uniform"
    calibration_view: str = "positive"
    multilabel_rule: str = "threshold"
    bootstrap: int = 10_000
    bootstrap_unit: str = "query"
    seed: int = 0

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

    def replace(self, **changes) -> EvalConfig:
        """A copy with some settings changed (validated again)."""
        return replace(self, **changes)

    def to_dict(self) -> dict:
        """Plain JSON-ready dict (tuples become lists)."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, data: dict) -> EvalConfig:
        """Inverse of :meth:`to_dict`; unknown keys are an error naming them."""
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise ValueError(f"unknown configuration keys: {', '.join(unknown)}")
        kwargs = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}
        return cls(**kwargs)
