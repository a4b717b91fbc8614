"""The flags' values read through the settings schema (:mod:`metrics_core.config`): a bad value
is a :class:`FlagError` that names the flag."""

from __future__ import annotations

from dataclasses import fields

from metrics_core.config import SCHEMA, EvalConfig, FieldSchema, Filters, coerce_field, options
from metrics_core.errors import SettingsError


def _flag(name: str) -> str:
    return f"--{name.replace('_', '-')}"


class FlagError(ValueError):
    """A command-line value that breaks its rule (the message names the flag)."""


def setting(name: str, text, flag: str | None = None):
    """The value of the setting ``name`` from a flag's text, through the settings schema."""
    try:
        return coerce_field(name, text, text=True)
    except SettingsError as err:
        raise FlagError(err.render(flag or _flag(name))) from None


def flag_value(schema: FieldSchema, text: str, flag: str):
    """A flag's value checked by a schema of its own (a flag that is no EvalConfig field)."""
    try:
        return schema.check(text, "text")
    except SettingsError as err:
        raise FlagError(err.render(flag)) from None


#: Largest notes file of ``report --notes`` (bytes).
MAX_NOTES_BYTES = 64 * 1024


#: Input limits and their flags (metrics_core.inputs.limits.Limits, also
#: metrics_core.inputs.loading.Limits).
LIMIT_FLAGS = (("max_decompressed_bytes", "--max-bytes", "bytes of content after decompression"),
               ("max_rows", "--max-rows", "data rows of one file"),
               ("max_columns", "--max-columns", "columns of one file"),
               ("max_cell_bytes", "--max-cell-bytes", "bytes of one value"))


def input_limits(args):
    """The input limits given by the flags of :data:`LIMIT_FLAGS`."""
    from metrics_core.inputs.limits import Limits

    return Limits(**{name: getattr(args, name) for name, _, _ in LIMIT_FLAGS})


def config_from_flags(args) -> EvalConfig:
    """The run's configuration from its flags, each read through the settings schema; every
    bad flag is named at once (one :class:`FlagError`)."""
    values, problems = {}, []
    given = {f.name: getattr(args, f.name) for f in fields(EvalConfig)
             if options()[f.name].cli and getattr(args, f.name) is not None}
    if args.criterion_gate:
        given["criterion_gates"] = list(args.criterion_gate)
    if args.targets is not None:
        given["targets"] = args.targets
    for name, text in given.items():
        flag = {"criterion_gates": "--criterion-gate"}.get(name, _flag(name))
        try:
            values[name] = setting(name, text, flag)
        except FlagError as err:
            problems.append(str(err))
    for flag, key, attr in (("--fold", "fold", "fold"), ("--split", "split", "split"),
                            ("--criterion", "criteria", "criterion"),
                            ("--cohort-filter", "cohorts", "cohort_filter")):
        value = getattr(args, attr)
        try:
            Filters(**{key: tuple(value) if key in ("criteria", "cohorts") else value})
        except SettingsError as err:
            problems.append(f"{flag}: {err.rule.split(' ', 1)[1]}; got {err.shown}")
    if not problems:
        try:
            values["filters"] = Filters(fold=args.fold, split=args.split,
                                        criteria=tuple(args.criterion),
                                        cohorts=tuple(args.cohort_filter))
            return EvalConfig(**values)
        except SettingsError as err:
            problems.extend(e.render(_flag(e.field) if e.field in SCHEMA else None)
                            .replace("at most tau_pos", "at most --tau-pos") for e in err.errors)
    raise FlagError("; ".join(problems) if len(problems) == 1
                    else f"{len(problems)} options are not valid:\n"
                    + "\n".join(f"- {p}" for p in problems))
