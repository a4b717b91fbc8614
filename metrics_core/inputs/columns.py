"""Column mapping: which source column becomes which canonical column (contract §2).

Names are matched to the canonical columns through :data:`~metrics_core.inputs.parquet.ALIASES`
(case, spaces and punctuation ignored) or an explicit mapping; :data:`REQUIRED` lists the
columns each table kind must have.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from metrics_core.data.dataset import (
    CANDIDATE_COLUMNS,
    QUERY_COLUMNS,
)
from metrics_core.errors import InputError, InputErrors
from metrics_core.inputs.parquet import (
    ALIASES,
)
from metrics_core.inputs.parquet import norm as _norm
from metrics_core.inputs.read import name_list

#: Required canonical columns per table kind (contract §2).
REQUIRED: dict[str, tuple[str, ...]] = {
    "queries": QUERY_COLUMNS[:4],
    "candidates": CANDIDATE_COLUMNS[:5],
    "long": tuple(dict.fromkeys(QUERY_COLUMNS[:4] + CANDIDATE_COLUMNS[:5])),
}
KIND_COLUMNS: dict[str, tuple[str, ...]] = {
    "queries": QUERY_COLUMNS,
    "candidates": CANDIDATE_COLUMNS,
    "long": tuple(dict.fromkeys(QUERY_COLUMNS + CANDIDATE_COLUMNS)),
}

# ----------------------------------------------------------------------- column mapping
def match_columns(columns, kind: str, mapping: Mapping | None, file: str | None,
                   *, require: bool = True):
    """Decide which source column becomes which canonical column.

    Returns ``(column_map, errors)``; ``column_map`` is {canonical: source}. An explicit
    ``mapping`` entry wins (``None`` means "no column for this canonical name"); then the
    canonical name itself (other aliases present are then left unused); then the aliases. Two
    columns matching one canonical name otherwise is ambiguous and an error.
    """
    columns = [str(c) for c in columns]
    wanted = KIND_COLUMNS[kind]
    by_norm: dict[str, list[str]] = {}
    for c in columns:
        by_norm.setdefault(_norm(c), []).append(c)
    result: dict[str, str | None] = {}
    errors: list[InputError] = []
    for canon, src in (mapping or {}).items():
        if canon not in wanted:
            continue
        if src is None:
            result[canon] = None
            continue
        found = [src] * columns.count(src) if src in columns else by_norm.get(_norm(src), [])
        if len(found) == 1:
            result[canon] = found[0]
        else:
            result[canon] = None
            errors.append(InputError(
                "mapped column not found" if not found else "mapped column name is ambiguous",
                file=file, column=str(src), hint=f"columns found: {name_list(columns)}",
                code="bad_mapping"))
    mapped = [v for v in result.values() if v is not None]
    for src in sorted({s for s in mapped if mapped.count(s) > 1}):
        errors.append(InputError(
            "one column cannot be mapped to two canonical columns", file=file, column=src,
            hint="mapped to " + ", ".join(k for k, v in result.items() if v == src),
            code="bad_mapping"))
    used = set(mapped)
    for canon in wanted:
        if canon in result:
            continue
        exact = [c for c in by_norm.get(canon, []) if c not in used]
        others = [c for a in ALIASES[canon] for c in by_norm.get(_norm(a), []) if c not in used]
        if len(exact) > 1 or (not exact and len(others) > 1):
            result[canon] = None
            errors.append(InputError(
                f"several columns match '{canon}': {name_list(exact or others)}", file=file,
                hint="choose one with a column mapping", code="ambiguous_column"))
        elif exact or others:
            result[canon] = (exact or others)[0]
    column_map = {k: v for k, v in result.items() if v is not None}
    if require:
        for canon in REQUIRED[kind]:
            if canon not in result:
                errors.append(InputError(
                    "required column is missing", file=file, column=canon,
                    hint=f"columns found: {name_list(columns)}; accepted names: "
                         f"{name_list((canon, *ALIASES[canon]))}; or map a column by hand",
                         code="missing_column"))
            elif result[canon] is None and canon in (mapping or {}) and mapping[canon] is None:
                errors.append(InputError("required column is mapped to nothing", file=file,
                                         column=canon, code="bad_mapping"))
    return column_map, errors


def resolve_columns(df: pd.DataFrame, kind: str, *, mapping: Mapping | None = None,
                    file: str | None = None) -> pd.DataFrame:
    """Rename a table's columns to the canonical names of contract §2.

    Parameters
    ----------
    df : pandas.DataFrame
        The table as read.
    kind : {"queries", "candidates", "long"}
        Which table it is (``"long"``: one table carrying both).
    mapping : mapping of str to str or None, optional
        Explicit ``{canonical: source_column}`` choices; they win over :data:`ALIASES`.
        ``None`` as a source means "do not use any column for this canonical name".
    file : str, optional
        File name for error messages.

    Returns
    -------
    pandas.DataFrame
        Only the recognised columns, renamed to canonical names, in canonical order.

    Raises
    ------
    InputError
        A required column is missing, a mapped column does not exist, or two columns match
        one canonical name (all problems at once, as :class:`InputErrors` if several).
    """
    if kind not in KIND_COLUMNS:
        raise ValueError(f"kind must be one of {sorted(KIND_COLUMNS)}, got {kind!r}")
    check_mapping(mapping)
    column_map, errors = match_columns(df.columns, kind, mapping, file)
    InputErrors.raise_if_any(errors)
    return pd.DataFrame({c: s.array for c, s in renamed_columns(df, column_map).items()})


def renamed_columns(df: pd.DataFrame, column_map: dict) -> dict[str, pd.Series]:
    """The mapped columns by canonical name, in canonical order, index reset (no copy)."""
    return {c: df[column_map[c]].reset_index(drop=True) for c in KIND_COLUMNS["long"]
            if c in column_map}


def check_mapping(mapping) -> None:
    if mapping is None:
        return
    if not isinstance(mapping, Mapping):
        raise ValueError(f"mapping must be a mapping of canonical name to column, "
                         f"got {type(mapping).__name__}")
    unknown = [k for k in mapping if k not in KIND_COLUMNS["long"]]
    if unknown:
        raise ValueError(f"mapping has unknown canonical column(s) {unknown}; "
                         f"known: {list(KIND_COLUMNS['long'])}")
