"""Settings files: a settings.json read and checked against the settings schema.

Before anything is parsed: the size (:data:`~metrics_core.config.MAX_SETTINGS_BYTES`), the
encoding (UTF-8, or UTF-16 / UTF-32 with a byte-order mark) and the nesting of brackets
(:data:`~metrics_core.config.MAX_SETTINGS_DEPTH`); then JSON without ``NaN`` / ``Infinity`` and
no key twice; then every setting through :func:`metrics_core.config.checked_mapping`, the
schema every other way in (flags, links, the constructor) uses.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping

from metrics_core.config import (
    COHORT_COLUMNS_KEY,
    EXPLORATORY,
    GUARANTEED,
    MAX_NAME_CHARS,
    MAX_SETTINGS_BYTES,
    MAX_SETTINGS_DEPTH,
    PRESPECIFIED,
    SETTINGS_SCHEMA_ID,
    THRESHOLD_FIELDS,
    checked_mapping,
)
from metrics_core.errors import SettingsError

__all__ = ["COHORT_BINS_KEY", "COHORT_COLUMNS_KEY", "MAX_COHORT_COLUMNS", "cohort_bin_items",
           "cohort_column_names", "filter_bins_errors", "read_settings",
           "read_settings_cohort_bins",
           "read_settings_cohorts", "read_settings_file", "read_settings_partial"]

#: Most cohort columns (and intersections) a settings file or a link may choose.
MAX_COHORT_COLUMNS = 64


def cohort_column_names(value, *, source: str | None = None) -> tuple[str, ...]:
    """Cohort columns as a settings file or a link gives them: a list of column names, each
    a column or columns joined by ``*`` (an intersection, ``"a*b"``), as text of 1 to
    :data:`MAX_NAME_CHARS` characters; spaces around names and ``*`` dropped, repeats dropped. A
    :class:`SettingsError` naming ``cohort_columns``, the rule and the value otherwise.

    >>> cohort_column_names(["site", " site * sex ", "site"])
    ('site', 'site*sex')
    """
    rule = (f"must be a list of at most {MAX_COHORT_COLUMNS} cohort column names (a column, "
            f"or columns joined by '*' such as site*sex; text of 1 to {MAX_NAME_CHARS} characters)")
    if not isinstance(value, list | tuple) or len(value) > MAX_COHORT_COLUMNS:
        raise SettingsError(COHORT_COLUMNS_KEY, rule, value, source=source)
    out = []
    for item in value:
        parts = ([p.strip() for p in item.split("*")] if isinstance(item, str) else [""])
        if (not all(parts) or len(item) > MAX_NAME_CHARS
                or any(not p.isprintable() for p in parts)):
            raise SettingsError(COHORT_COLUMNS_KEY, rule, item, source=source)
        out.append("*".join(parts))
    return tuple(dict.fromkeys(out))


#: The key of a settings file's bins of its numeric cohort columns (beside cohort_columns).
COHORT_BINS_KEY = "cohort_bins"


def cohort_bin_items(value, *, source: str | None = None) -> tuple[str, ...]:
    """Bins of numeric cohort columns as a link or the app gives them: ``COLUMN=SPEC`` items
    (or a ``{column: SPEC}`` mapping, as a settings file writes them), SPEC checked by the
    command line's own parser (:func:`metrics_core.filters.parse_bins`: ``qN``
    or increasing edges); one item per column (the last kept). A :class:`SettingsError`
    naming ``cohort_bins``, the column, the rule and the value otherwise.

    >>> cohort_bin_items(["age=q3", "bmi = 18.5,25"])
    ('age=q3', 'bmi=18.5,25')
    >>> cohort_bin_items({"age": "40,65"})
    ('age=40,65',)
    """
    from metrics_core.filters import parse_bins

    rule = (f"must map at most {MAX_COHORT_COLUMNS} numeric cohort columns to their bins "
            f"(COLUMN=qN for N quantile bins, or COLUMN=40,65 for edges)")
    if isinstance(value, Mapping):
        value = [f"{k}={v}" for k, v in value.items()]
    if not isinstance(value, list | tuple) or len(value) > MAX_COHORT_COLUMNS:
        raise SettingsError(COHORT_BINS_KEY, rule, value, source=source)
    out = {}
    for item in value:
        column, sep, spec = item.partition("=") if isinstance(item, str) else ("", "", "")
        column, spec = column.strip(), spec.strip()
        if not sep or not column or len(item) > MAX_NAME_CHARS or not item.isprintable():
            raise SettingsError(COHORT_BINS_KEY, rule, item, source=source)
        try:
            parse_bins(spec)
        except ValueError as exc:
            raise SettingsError(COHORT_BINS_KEY, f"{column}: {exc}", spec,
                                source=source) from None
        out[column] = spec
    return tuple(f"{k}={v}" for k, v in out.items())


def filter_bins_errors(filters, bins: tuple[str, ...], *, source: str | None = None
                       ) -> list[SettingsError]:
    """The refusal of a cohort filter's bins (``filters.cohort_bins``, a
    :class:`~metrics_core.config.Filters`) that are not the bins ``bins`` (the file's
    ``cohort_bins``: ``COLUMN=SPEC`` items) give its column: a filter's values are cohorts of
    the bins the run chose (contract §9, cohort filter), so a file saying other bins for the
    filter contradicts itself.

    >>> from metrics_core.config import Filters
    >>> f = Filters(cohorts=("age=[40, 65)",), cohort_bins={"age": "40,65"})
    >>> filter_bins_errors(f, ("age=40, 65",)), len(filter_bins_errors(f, ("age=q3",)))
    ([], 1)
    """
    from metrics_core.filters import bins_text

    chosen = {c: bins_text(s) for c, _, s in (item.partition("=") for item in bins)}
    return [SettingsError("filters", f"cohort_bins: {column} is binned {spec} in the cohort "
                          f"filter, but {COHORT_BINS_KEY} gives it "
                          f"{chosen.get(column, 'no bins (its default bins)')}; a cohort "
                          f"filter's values are cohorts of the bins chosen for the run",
                          spec, source=source)
            for column, spec in filters.cohort_bins if chosen.get(column) != spec]


# ------------------------------------------------------------------------ settings files
class _UnreadNumber:
    """A number of a settings file that no setting can hold as written (``NaN``,
    ``Infinity``, ``1e400``, a 60-digit integer): kept as its text, so the refusal names the
    field it was given for."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text

    __str__ = __repr__


_BOMS = ((b"\xef\xbb\xbf", "utf-8", "UTF-8"), (b"\xff\xfe\x00\x00", "utf-32-le", "UTF-32"),
         (b"\x00\x00\xfe\xff", "utf-32-be", "UTF-32"), (b"\xff\xfe", "utf-16-le", "UTF-16"),
         (b"\xfe\xff", "utf-16-be", "UTF-16"))
_ESCAPE = re.compile(r"\\.", re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


def _decoded(data: bytes, source: str) -> str:
    """The text of a settings file: UTF-8 (with or without a byte-order mark), or UTF-16 /
    UTF-32 with one."""
    for bom, codec, name in _BOMS:
        if data.startswith(bom):
            try:
                return data[len(bom):].decode(codec)
            except UnicodeDecodeError as err:
                raise SettingsError(None, f"is not valid {name} text after its byte-order "
                                    f"mark (byte {err.start + len(bom):,})",
                                    source=source) from None
    if b"\x00" in data:
        raise SettingsError(None, "holds NUL bytes: UTF-16 or UTF-32 text needs a byte-order "
                            "mark (save the file as UTF-8)", source=source)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise SettingsError(None, f"is not UTF-8 text (byte {err.start:,} is 0x"
                            f"{data[err.start]:02x}); save the file as UTF-8",
                            source=source) from None


def _nesting_depth(text: str) -> int:
    """Deepest nesting of ``[`` / ``{`` outside JSON strings, without parsing: escapes are
    dropped, then every other run between quotes is a string (linear time, C loops)."""
    import numpy as np

    outside = "".join(_ESCAPE.sub("", text).split('"')[0::2])
    brackets = _NOT_BRACKET.sub("", outside).encode("ascii")
    if not brackets:
        return 0
    codes = np.frombuffer(brackets, np.uint8)
    steps = np.where((codes == ord("[")) | (codes == ord("{")), 1, -1).astype(np.int32)
    return int(np.cumsum(steps).max())


def _json_float(text: str):
    number = float(text)
    return number if math.isfinite(number) else _UnreadNumber(text)


def _json_int(text: str):
    return int(text) if len(text) <= 50 else _UnreadNumber(text[:40] + "…")


def _one_each(pairs):
    seen = {}
    for key, value in pairs:
        if key in seen:
            raise SettingsError(str(key)[:MAX_NAME_CHARS], "is given twice in one JSON object")
        seen[key] = value
    return seen


def _settings_mapping(data: bytes | str, source: str) -> Mapping:
    """The configuration mapping of a settings file (size, encoding, depth, JSON checked)."""
    return _settings_parts(data, source)[0]


def _settings_top(data: bytes | str, source: str) -> dict:
    """The JSON object of a settings file (size, encoding, depth and JSON checked)."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    data = bytes(data)
    if len(data) > MAX_SETTINGS_BYTES:
        raise SettingsError(None, f"is {len(data):,} bytes; a settings file holds at most "
                            f"{MAX_SETTINGS_BYTES:,} bytes", source=source)
    text = _decoded(data, source)
    depth = _nesting_depth(text)
    if depth > MAX_SETTINGS_DEPTH:
        raise SettingsError(None, f"nests brackets {depth:,} deep; a settings file nests at "
                            f"most {MAX_SETTINGS_DEPTH}", source=source)
    try:
        top = json.loads(text, parse_constant=_UnreadNumber, parse_float=_json_float,
                         parse_int=_json_int, object_pairs_hook=_one_each)
    except json.JSONDecodeError as err:
        raise SettingsError(None, f"is not valid JSON: {err.msg} (line {err.lineno}, column "
                            f"{err.colno})", source=source) from None
    except SettingsError as err:
        raise err.with_source(source) from None
    if not isinstance(top, dict):
        raise SettingsError(None, "must hold a JSON object of settings", top, source=source)
    return top


def _settings_parts(data: bytes | str, source: str) -> tuple[Mapping, tuple[str, ...], dict]:
    """The configuration mapping of a settings file, its exploratory thresholds and its
    thresholds set with a guarantee (with their guarantees)."""
    top = _settings_top(data, source)
    if "config" not in top:
        return top, (), {}
    extra = sorted(k for k in top if k not in ("config", "schema", "provenance", "guarantees",
                                                COHORT_COLUMNS_KEY, COHORT_BINS_KEY))
    if extra:
        raise SettingsError(None, f"has keys a settings file does not have: "
                            f"{', '.join(map(repr, extra))} (it holds schema, config, "
                            f"provenance, guarantees, cohort_columns and cohort_bins)",
                            source=source)
    if top.get("schema", SETTINGS_SCHEMA_ID) != SETTINGS_SCHEMA_ID:
        raise SettingsError("schema", f"must be {SETTINGS_SCHEMA_ID!r}", top["schema"],
                            source=source)
    if not isinstance(top["config"], dict):
        raise SettingsError("config", "must be a JSON object of settings", top["config"],
                            source=source)
    explored = _explored(top.get("provenance", {}), source)
    return top["config"], explored, _guaranteed(top.get("provenance", {}),
                                                top.get("guarantees", {}), source)




def _explored(marks, source: str) -> tuple[str, ...]:
    if not isinstance(marks, dict):
        raise SettingsError("provenance", "must be a JSON object of thresholds", marks,
                            source=source)
    for name, mark in marks.items():
        if name not in THRESHOLD_FIELDS:
            raise SettingsError("provenance", f"names thresholds only "
                                f"({', '.join(THRESHOLD_FIELDS)})", name, source=source)
        if mark not in (PRESPECIFIED, EXPLORATORY, GUARANTEED):
            raise SettingsError(f"provenance.{name}", f"must be {PRESPECIFIED!r}, "
                                f"{EXPLORATORY!r} or {GUARANTEED!r}", mark, source=source)
    return tuple(n for n in THRESHOLD_FIELDS if marks.get(n) == EXPLORATORY)


def _guaranteed(marks: dict, given, source: str) -> dict:
    """The guarantees of the thresholds the file marks guaranteed: field ->
    ThresholdGuarantee. Each such threshold needs one, and only they may have one."""
    from metrics_core.metrics.risk_control import ThresholdGuarantee

    if not isinstance(given, dict):
        raise SettingsError("guarantees", "must be a JSON object of thresholds", given,
                            source=source)
    wanted = [n for n in THRESHOLD_FIELDS if marks.get(n) == GUARANTEED]
    for name in given:
        if name not in wanted:
            raise SettingsError(f"guarantees.{name}", "is given for a threshold the "
                                f"provenance does not mark {GUARANTEED!r}", name,
                                source=source)
    out = {}
    for name in wanted:
        if name not in given:
            raise SettingsError(f"provenance.{name}", f"is {GUARANTEED!r} but guarantees "
                                f"has no {name}", GUARANTEED, source=source)
        try:
            g = ThresholdGuarantee.from_dict(given[name])
        except ValueError as err:
            raise SettingsError(f"guarantees.{name}", str(err), given[name],
                                source=source) from None
        if not g.fits(name):
            raise SettingsError(f"guarantees.{name}", f"{g.target} sets {g.parameter}, not "
                                f"{name}", g.target, source=source)
        out[name] = g
    return out


def read_settings_file(data: bytes, *, source: str
                       ) -> tuple[dict, list[SettingsError], tuple[str, ...], dict]:
    """:func:`read_settings_partial`, the thresholds the file records as exploratory and
    those it records as set with a guarantee: ``(valid, errors, explored, guaranteed)``
    (``guaranteed``: field -> :class:`~metrics_core.metrics.risk_control.ThresholdGuarantee`)."""
    try:
        config, explored, guaranteed = _settings_parts(data, source)
    except SettingsError as err:
        return {}, [err], (), {}
    values, errors = checked_mapping(config, source)
    return values, errors, explored, guaranteed


def read_settings_cohorts(data: bytes, *, source: str) -> tuple[tuple[str, ...],
                                                              list[SettingsError]]:
    """The cohort columns a settings.json chooses (its ``cohort_columns``, checked by
    :func:`cohort_column_names`; none: ``()``) and the refusal of the file or of that key:
    ``(columns, errors)``. Whether the data have those columns is the reader's to check."""
    try:
        top = _settings_top(data, source)
    except SettingsError as err:
        return (), [err]
    if "config" not in top or COHORT_COLUMNS_KEY not in top:  # a bare configuration: none
        return (), []
    try:
        return cohort_column_names(top[COHORT_COLUMNS_KEY], source=source), []
    except SettingsError as err:
        return (), [err]


def read_settings_cohort_bins(data: bytes, *, source: str) -> tuple[tuple[str, ...],
                                                                  list[SettingsError]]:
    """The bins of numeric cohort columns a settings.json chooses (its ``cohort_bins``, a
    ``{column: SPEC}`` object checked by :func:`cohort_bin_items`; none: ``()``) and the
    refusal of that key: ``(COLUMN=SPEC items, errors)``."""
    try:
        top = _settings_top(data, source)
    except SettingsError as err:
        return (), [err]
    if "config" not in top or COHORT_BINS_KEY not in top:
        return (), []
    value = top[COHORT_BINS_KEY]
    if not isinstance(value, Mapping) or not all(isinstance(v, str) for v in value.values()):
        return (), [SettingsError(COHORT_BINS_KEY, "must be an object of column: bins "
                                  "(qN or edges such as \"40,65\")", value, source=source)]
    try:
        return cohort_bin_items(value, source=source), []
    except SettingsError as err:
        return (), [err]


def read_settings_partial(data: bytes, *, source: str) -> tuple[dict, list[SettingsError]]:
    """The valid settings of a settings.json and the refusal of every other one.

    ``data``: the file's bytes; ``source``: its name, for the messages. Accepts the
    dashboard's ``{"schema": ..., "config": {...}}`` and a bare configuration object. Before
    anything is parsed: at most :data:`MAX_SETTINGS_BYTES` bytes, UTF-8 (a byte-order mark
    allowed) or UTF-16 / UTF-32 with a byte-order mark, brackets nested at most
    :data:`MAX_SETTINGS_DEPTH` deep; then JSON without ``NaN`` / ``Infinity``, no key twice;
    then every key a setting and every value valid (:func:`coerce_field` on JSON values;
    τ_neg ≤ τ_pos, both dropped when they break it). Returns ``(valid, errors)``: ``valid``
    maps fields to checked values (``EvalConfig(**valid)`` is valid); a problem of the whole
    file is one error with ``field`` None and nothing valid.
    """
    try:
        config = _settings_mapping(data, source)
    except SettingsError as err:
        return {}, [err]
    return checked_mapping(config, source)


def read_settings(data: bytes, *, source: str) -> dict:
    """The settings of a settings.json, all valid, or one :class:`SettingsError` listing
    every problem (see :func:`read_settings_partial`)."""
    values, errors = read_settings_partial(data, source=source)
    if errors:
        raise SettingsError.combine(errors, source=source)
    return values
