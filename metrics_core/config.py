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

The same metadata is the one settings schema (:data:`SCHEMA`): the constructor checks every
field against it (type, bounds, list lengths; a :class:`SettingsError` names the field, the
rule and the value), :func:`coerce_field` reads one setting from a link's or a flag's text or
from JSON, and :func:`metrics_core.settings_file.read_settings` reads a settings.json (size,
encoding and nesting checked before it is parsed), so a setting gets the same verdict whichever
way it comes in.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, make_dataclass, replace
from types import MappingProxyType

from metrics_core import choices
from metrics_core.choices import PROTOCOLS
from metrics_core.errors import SettingsError
from metrics_core.field_schema import FieldSchema
from metrics_core.filters import MAX_CRITERIA, MAX_NAME_CHARS, Filters

__all__ = [
    "COHORT_COLUMNS_KEY",
    "MAX_BOOTSTRAP",
    "MAX_K",
    "MAX_NAME_CHARS",
    "MAX_SETTINGS_BYTES",
    "MAX_SETTINGS_DEPTH",
    "SCHEMA",
    "SECTIONS",
    "SETTINGS_SCHEMA_ID",
    "VARIANTS",
    "VARIANT_LABELS",
    "EvalConfig",
    "FieldSchema",
    "Filters",
    "Option",
    "SettingsError",
    "coerce_field",
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
#: Largest ranking cut-off K.
MAX_K = 10_000
#: Largest settings file read (bytes, checked before anything is parsed).
MAX_SETTINGS_BYTES = 1 << 20
#: Deepest nesting of brackets in a settings file (checked before it is parsed).
MAX_SETTINGS_DEPTH = 32
#: The ``schema`` value of a settings file written by the dashboard.
SETTINGS_SCHEMA_ID = "metrics_core_settings/1"
#: A settings file's key of the cohort columns chosen (beside ``config``): the columns the
#: Cohorts page and the record break the metrics down by (``--cohort``). Not a field of the
#: configuration: every metric is the same whichever columns are chosen.
COHORT_COLUMNS_KEY = "cohort_columns"


@dataclass(frozen=True)
class Option:
    """Metadata of one configuration field: where it is shown and which values it takes.

    ``widget`` is how the dashboard shows it (``slider``, ``number``, ``toggle``, ``select``),
    or ``None`` when the dashboard shows it another way (the gate range) or not at all.
    ``cli`` is False for fields the CLI does not offer as a flag of their own. ``low`` /
    ``high`` are the bounds (inclusive) of the value, or of each item of a list;
    ``min_items`` / ``max_items`` bound a list's length. The bounds are enforced wherever a
    setting comes in (:data:`SCHEMA`).
    """

    section: str
    label: str
    help: str = ""
    low: float | None = None
    high: float | None = None
    step: float | None = None
    widget: str | None = None
    cli: bool = True
    min_items: int = 0
    max_items: int | None = None


def _field(default, section, label, help="", *, low=None, high=None, step=None, widget=None,
           cli=True, min_items=0, max_items=None):
    opt = Option(section, label, help, low, high, step, widget, cli, min_items, max_items)
    return field(default=default, metadata={"option": opt})


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

    tau_neg: float = _field(0.1, "gate", "τ_neg", "NEG if p < τ_neg.",
                            low=0.0, high=1.0, step=0.01)
    tau_pos: float = _field(0.6, "gate", "τ_pos", "POS if p ≥ τ_pos.",
                            low=0.0, high=1.0, step=0.01)
    threshold: float = _field(0.5, "gate", "Fixed threshold τ (confusion metrics)",
                              "Predicted positive iff p ≥ τ.",
                              low=0.0, high=1.0, step=0.01, widget="slider")
    gamma: float = _field(0.9, "dynamic_k", "γ (cumulative mass, POS)",
                          "K is the smallest K whose cumulative mass reaches γ.",
                          low=0.05, high=1.0, step=0.01, widget="slider")
    gamma_uncertain: float = _field(0.95, "dynamic_k", "γ_uncertain (UNCERTAIN)",
                                    "γ used for UNCERTAIN queries under the gate-aware policy.",
                                    low=0.05, high=1.0, step=0.01, widget="slider")
    k_min: int = _field(2, "dynamic_k", "k_min",
                        "Fewest sentences selected (capped by the candidate count).",
                        low=0, high=1000, step=1, widget="number")
    hard_cap: int = _field(10, "dynamic_k", "Hard cap",
                           "k_max = min(hard cap, ⌊n × k_max ratio⌋).",
                           low=1, high=1000, step=1, widget="number")
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
                                 "Ranking cut-offs, e.g. 1,3,5,10,20.", low=1, high=MAX_K,
                                 min_items=1, max_items=50)
    ranking_protocol: str = _field("positives_only", "ranking", "Ranking metrics on",
                                   widget="select")
    precision_denominator: str = _field("k", "ranking", "Precision@K denominator",
                                        widget="select")
    map_denominator: str = _field("n_gold", "ranking", "MAP@K denominator", widget="select")
    gain: str = _field("binary", "ranking", "nDCG gain", widget="select")
    tpr_fprs: tuple[float, ...] = _field((0.01, 0.03, 0.05, 0.10), "classification",
                                         "FPR targets", "TPR is reported at these FPRs.",
                                         low=0.0, high=1.0, max_items=50)
    calibration_view: str = _field("positive", "calibration", "Calibration view",
                                   widget="select")
    binning: str = _field("uniform", "calibration", "Binning", widget="select")
    n_bins: int = _field(10, "calibration", "Number of bins", low=2, high=1000, step=1,
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
        low=0.0, high=1.0, max_items=MAX_CRITERIA, cli=False)
    targets: tuple[str, ...] = _field(
        ("auroc>=0.85", "auprc>=0.55", "ece<0.05", "brier<0.1", "evidence_recall>=0.70",
         "screening_sensitivity>=0.995", "screening_fn_per_1000<=5", "alert_precision>=0.90"),
        "targets", "Targets", "metric>=value (or >, <=, <): met only when the whole 95% "
        "interval clears the value. Defaults: a screening tool's reference targets.",
        max_items=64, cli=False)
    filters: Filters = _field(Filters(), "filters", "Filters",  # noqa: RUF009 (frozen value)
                              "Evaluate one fold, one split or some criteria only.", cli=False)

    def __post_init__(self) -> None:
        """The one gate of every setting: each field checked against :data:`SCHEMA` (type,
        bounds, list lengths; no conversion from text), then τ_neg ≤ τ_pos. Every problem is
        reported at once, as one :class:`SettingsError`."""
        errors = []
        for name, schema in SCHEMA.items():
            try:
                object.__setattr__(self, name, schema.check(getattr(self, name), "python"))
            except SettingsError as err:
                errors.append(err)
        if not errors:
            errors = _cross_errors(self.__dict__) + _target_errors(self.__dict__)
        if errors:
            raise SettingsError.combine(errors)

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
    def from_dict(cls, data: Mapping) -> EvalConfig:
        """Inverse of :meth:`to_dict`, checked as a settings file is (:func:`coerce_field` on
        JSON values): unknown keys and every bad value are one :class:`SettingsError`."""
        values, errors = checked_mapping(data, None)
        if errors:
            raise SettingsError.combine(errors)
        return cls(**values)


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
        return SCHEMA["criterion_gates"].check([(name, lo, hi)], "text")[0]
    except SettingsError as exc:
        raise ValueError(f"expected CRITERION=TAU_NEG:TAU_POS, e.g. A.1=0.05:0.7; got "
                         f"{text!r} ({exc.rule})") from None
    except ValueError:
        raise ValueError(f"expected CRITERION=TAU_NEG:TAU_POS, e.g. A.1=0.05:0.7; got "
                         f"{text!r}") from None


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


# ------------------------------------------------------------------------ the settings schema
def _kind_of(name: str, default) -> str:
    if name in VARIANTS:
        return "choice"
    if name in ("criterion_gates", "targets", "filters"):
        return {"criterion_gates": "gates", "targets": "targets", "filters": "filters"}[name]
    if isinstance(default, bool):
        return "bool"
    if isinstance(default, tuple):
        return "ints" if all(isinstance(v, int) for v in default) else "floats"
    return type(default).__name__


def _schema_of(f) -> FieldSchema:
    opt: Option = f.metadata["option"]
    kind = _kind_of(f.name, f.default)
    if kind in ("int", "float", "ints", "floats") and (opt.low is None or opt.high is None):
        raise TypeError(f"{f.name}: a numeric setting needs low and high")  # (a new field)
    return FieldSchema(f.name, kind, opt.low, opt.high, tuple(VARIANTS.get(f.name, ())),
                       opt.min_items, opt.max_items)


#: What every :class:`EvalConfig` field accepts (field name -> :class:`FieldSchema`),
#: generated from the fields' :class:`Option`: the one schema of the constructor, settings
#: files, links and command-line flags.
SCHEMA: Mapping[str, FieldSchema] = MappingProxyType(
    {f.name: _schema_of(f) for f in fields(EvalConfig)})


def _cross_errors(values: Mapping) -> list[SettingsError]:
    """Rules between fields (``values`` complete and each field valid)."""
    if values["tau_neg"] > values["tau_pos"]:
        return [SettingsError("tau_neg", f"must be at most tau_pos ({values['tau_pos']:g})",
                              values["tau_neg"])]
    return []


def _target_errors(values: Mapping) -> list[SettingsError]:
    """A target of a family (``recall@7``, ``tpr@fpr=0.2``) must be among the run's cut-offs
    / FPR targets (``values``: valid fields; the defaults stand in for those missing)."""
    from metrics_core.targets import canonical_targets

    merged = {**SCHEMA_DEFAULTS, **values}
    try:
        canonical_targets(merged["targets"], ks=merged["ks"], tpr_fprs=merged["tpr_fprs"])
    except ValueError as err:
        return [SettingsError("targets", str(err).partition(": ")[2],
                              list(merged["targets"]))]
    return []


def coerce_field(name: str, value, *, text: bool = False):
    """The value of the setting ``name`` as :class:`EvalConfig` holds it, from loose input.

    ``text=True``: the value came as text (a link, a command-line flag): numbers are read
    from their text exactly (``"1234567"`` stays 1234567; ``"2.5"`` is not a whole number,
    ``"1e400"`` / ``"inf"`` / ``"nan"`` are refused), booleans are ``1`` / ``0`` / ``true`` /
    ``false``, lists are comma-separated (or a list of texts), a criterion gate is
    ``CRITERION=TAU_NEG:TAU_POS`` or ``criterion:τ_neg:τ_pos``. ``text=False``: JSON values (a
    settings file): booleans must be JSON booleans, a whole number may be written ``10.0``,
    lists must be lists (a bare text is refused, never split into characters).
    Raises :class:`SettingsError` naming the field, the rule and the value.

    >>> coerce_field("seed", "1234567", text=True), coerce_field("ks", [10, 1])
    (1234567, (1, 10))
    >>> coerce_field("hard_cap", 1e18)
    Traceback (most recent call last):
    ...
    metrics_core.errors.SettingsError: hard_cap: must be a whole number within [1, 1,000]; got 1e+18
    """
    schema = SCHEMA.get(name)
    if schema is None:
        raise _unknown_setting(name)
    return schema.check(value, "text" if text else "json")


def _unknown_setting(name, source: str | None = None) -> SettingsError:
    import difflib

    close = difflib.get_close_matches(str(name), list(SCHEMA), n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return SettingsError(str(name)[:MAX_NAME_CHARS], f"is not a setting{hint}", source=source)


def checked_mapping(data, source: str | None) -> tuple[dict, list[SettingsError]]:
    """Every key of a configuration mapping checked (JSON values): ``(valid, errors)``."""
    if not isinstance(data, Mapping):
        return {}, [SettingsError(None, "must be a JSON object of settings", data,
                                  source=source)]
    values: dict = {}
    errors: list[SettingsError] = []
    for key, value in data.items():
        if key not in SCHEMA:
            errors.append(_unknown_setting(key, source))
            continue
        try:
            values[key] = SCHEMA[key].check(value, "json")
        except SettingsError as err:
            errors.append(err.with_source(source))
    if "tau_neg" in values or "tau_pos" in values:
        merged = {"tau_neg": SCHEMA_DEFAULTS["tau_neg"], "tau_pos": SCHEMA_DEFAULTS["tau_pos"],
                  **values}
        crossed = _cross_errors(merged)
        if crossed:
            errors.extend(e.with_source(source) for e in crossed)
            values.pop("tau_neg", None)
            values.pop("tau_pos", None)
    if "targets" in values:
        crossed = _target_errors(values)
        if crossed:
            errors.extend(e.with_source(source) for e in crossed)
            values.pop("targets")
    return values, errors


#: Every field's default (the values a settings file leaves out).
SCHEMA_DEFAULTS: Mapping = MappingProxyType({f.name: f.default for f in fields(EvalConfig)})


#: The thresholds whose provenance a settings file records, and the three marks: a threshold
#: is pre-specified (the default, typed in, loaded), exploratory (moved or found on the
#: data shown) or guaranteed (found on the data with a guarantee for new queries, Decision
#: support's guarantee mode: the file's ``guarantees`` say which); a file that records a
#: threshold as exploratory or guaranteed keeps it so wherever it is loaded.
THRESHOLD_FIELDS = ("tau_neg", "tau_pos", "threshold", "gamma", "criterion_gates")
PRESPECIFIED, EXPLORATORY, GUARANTEED = "pre-specified", "exploratory", "guaranteed"


def threshold_provenance(config: EvalConfig, marks: Mapping | None = None,
                         guarantees: Mapping | None = None) -> dict:
    """How each threshold of ``config`` was chosen, as settings.json and metrics_master.json
    write it: ``{"provenance": {field: mark}}`` (``marks``: field -> one of the three marks;
    a field not given is pre-specified, as the command line's own runs are; a guaranteed
    mark without its guarantee in ``guarantees`` is written exploratory; ``criterion_gates``
    only when the run has per-criterion gates), with ``"guarantees": {field: guarantee}``
    (each guarantee's ``to_dict()``) when a field is guaranteed."""
    kept = guarantees or {}
    provenance = {name: (marks or {}).get(name, PRESPECIFIED) for name in THRESHOLD_FIELDS}
    for name, mark in provenance.items():
        if mark == GUARANTEED and name not in kept:
            provenance[name] = EXPLORATORY
    if not config.criterion_gates:
        provenance.pop("criterion_gates")
    out: dict = {"provenance": provenance}
    guaranteed = {name: kept[name].to_dict() for name, mark in provenance.items()
                  if mark == GUARANTEED}
    if guaranteed:
        out["guarantees"] = guaranteed
    return out
