"""Which queries a run evaluates (:class:`Filters`: a fold, a split, some criteria, a cohort),
the rule of a name (:func:`is_name`) that the filters and the settings schema share, and the
rule of a numeric cohort column's bins (:func:`parse_bins`, the command line's
``--cohort-bins``) that a cohort filter's bins, the settings and the cohort reader share.

:class:`Filters` is :attr:`metrics_core.config.EvalConfig.filters`, importable from
:mod:`metrics_core.config` too.
"""

from __future__ import annotations

import itertools
import math
import numbers
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace

from metrics_core.errors import SettingsError

__all__ = ["MAX_COHORT_FILTERS", "MAX_CRITERIA", "MAX_NAME_CHARS", "MAX_QUANTILE_BINS", "Filters",
           "bins_text", "is_name", "parse_bins"]

#: Most criteria a filter or the per-criterion gates may name.
MAX_CRITERIA = 1_000
#: Most ``column=value`` items of a cohort filter.
MAX_COHORT_FILTERS = 64
#: Longest text of one name: a criterion, a fold, a split, a target.
MAX_NAME_CHARS = 200
#: Most quantile bins of a numeric cohort column (``q20``: the most cohorts a column may have).
MAX_QUANTILE_BINS = 20

def is_name(value) -> bool:
    """Text of 1 to MAX_NAME_CHARS characters, or a whole number (a fold such as 2)."""
    if isinstance(value, str):
        return 0 < len(value) <= MAX_NAME_CHARS
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def parse_bins(text: str) -> int | tuple[float, ...]:
    """``"q5"`` -> 5 quantile bins; ``"40,65"`` -> edges (40.0, 65.0); ValueError otherwise
    (the rule of ``--cohort-bins``, of the settings' ``cohort_bins`` and of a cohort filter's).

    >>> parse_bins("q5"), parse_bins("40, 65")
    (5, (40.0, 65.0))
    """
    text = str(text).strip()
    match = re.fullmatch(r"[qQ](\d+)", text)
    if match:
        q = int(match.group(1))
        if not 2 <= q <= MAX_QUANTILE_BINS:
            raise ValueError(f"quantile bins must be 2 to {MAX_QUANTILE_BINS}, got {text!r}")
        return q
    try:
        edges = tuple(float(part) for part in text.split(","))
    except ValueError:
        raise ValueError(f"bins must be qN (N quantile bins) or increasing edges such as "
                         f"'40,65', got {text!r}") from None
    if (not edges or not all(math.isfinite(e) for e in edges)
            or any(b <= a for a, b in itertools.pairwise(edges))):
        raise ValueError(f"bin edges must be finite and increasing, got {text!r}")
    return edges


def bins_text(spec) -> str:
    """The one text of the bins ``spec`` (text, a number of quantiles or edges), checked by
    :func:`parse_bins`: ``q4``, or the edges as the shortest texts that read back exactly.

    >>> bins_text(" Q3 "), bins_text("40.0, 65"), bins_text((18.5, 25))
    ('q3', '40,65', '18.5,25')
    """
    bins = parse_bins(spec if isinstance(spec, str) else
                      f"q{spec}" if isinstance(spec, numbers.Integral)
                      else ",".join(repr(float(e)) for e in spec))
    if isinstance(bins, int):
        return f"q{bins}"
    return ",".join(r[:-2] if (r := repr(e)).endswith(".0") else r for e in bins)


def _name_or_none(name: str, value) -> str | None:
    if value is None:
        return None
    if not is_name(value):
        raise SettingsError("filters", f"{name} must be a name (text of 1 to {MAX_NAME_CHARS} "
                            f"characters or a whole number) or null for all", value)
    return str(value)


@dataclass(frozen=True)
class Filters:
    """Which queries a run evaluates: one fold, one split, some criteria, one cohort (None /
    () = all).

    ``cohorts``: ``"column=value"`` items naming values of cohort columns (contract §9,
    cohorts; ``missing`` is the cohort of a missing value): values of one column are
    alternatives, columns are combined (``("site=S1", "sex=F")`` is the cohort ``S1*F``).

    ``cohort_bins``: the bins of the filter's numeric columns (``{column: "40,65" | "q3"}``,
    as ``--cohort-bins``; a column of an intersection may have some): a value of a numeric
    column names one of the cohorts those bins make (``age=[40, 65)``); a column without is
    read with its default bins, as a run without ``--cohort-bins`` reads it. Kept as
    ``((column, bins_text), ...)`` in column order; only columns the filter names.

    >>> f = Filters(cohorts=("site=S1", "sex=F", "site=S2"))
    >>> f.cohort_values(), f.describe()
    ({'site': ('S1', 'S2'), 'sex': ('F',)}, 'cohort site = S1 or S2, sex = F')
    >>> g = Filters(cohorts=("age=[40, 65)",), cohort_bins={"age": "40, 65"})
    >>> g.cohort_bins, g.describe(), g.to_dict()["cohort_bins"]
    ((('age', '40,65'),), 'cohort age = [40, 65) (age binned 40,65)', {'age': '40,65'})
    """

    fold: str | None = None
    split: str | None = None
    criteria: tuple[str, ...] = ()
    cohorts: tuple[str, ...] = ()
    cohort_bins: tuple[tuple[str, str], ...] = ()

    def __post_init__(self):
        for name in ("fold", "split"):
            object.__setattr__(self, name, _name_or_none(name, getattr(self, name)))
        criteria = self.criteria
        rule = (f"criteria must be a list of at most {MAX_CRITERIA:,} criterion names "
                f"(not one text)")
        if not isinstance(criteria, list | tuple) or len(criteria) > MAX_CRITERIA:
            raise SettingsError("filters", rule, criteria)
        for i, name in enumerate(criteria, 1):
            if not is_name(name) or isinstance(name, numbers.Integral):
                raise SettingsError("filters", f"criteria: item {i} must be a criterion name "
                                    f"(text of 1 to {MAX_NAME_CHARS} characters)", name)
        object.__setattr__(self, "criteria", tuple(criteria))
        cohorts = self.cohorts
        if not isinstance(cohorts, list | tuple) or len(cohorts) > MAX_COHORT_FILTERS:
            raise SettingsError("filters", f"cohorts must be a list of at most "
                                f"{MAX_COHORT_FILTERS} 'column=value' items (not one text)",
                                cohorts)
        for i, item in enumerate(cohorts, 1):
            column, sep, value = item.partition("=") if isinstance(item, str) else ("", "", "")
            if (not sep or not column.strip() or not value.strip()
                    or len(item) > MAX_NAME_CHARS):
                raise SettingsError("filters", f"cohorts: item {i} must be 'column=value' "
                                    f"(a cohort column, '=', one of its values; at most "
                                    f"{MAX_NAME_CHARS} characters)", item)
        object.__setattr__(self, "cohorts", tuple(dict.fromkeys(
            "=".join(p.strip() for p in c.partition("=")[::2]) for c in cohorts)))
        object.__setattr__(self, "cohort_bins", self._checked_bins(self.cohort_bins))

    def _checked_bins(self, bins) -> tuple[tuple[str, str], ...]:
        """``cohort_bins`` as kept: one canonical text per filtered column, in column order."""
        rule = ("cohort_bins must map columns of the cohort filter to their bins (qN, or "
                "increasing edges such as 40,65)")
        if isinstance(bins, Mapping):
            bins = tuple(bins.items())
        if not isinstance(bins, list | tuple) or len(bins) > MAX_COHORT_FILTERS:
            raise SettingsError("filters", rule, bins)
        parts = self.cohort_columns()
        out: dict[str, str] = {}
        for item in bins:
            if (not isinstance(item, list | tuple) or len(item) != 2
                    or not isinstance(item[0], str)):
                raise SettingsError("filters", rule, item)
            column = item[0].strip()
            if column not in parts:
                raise SettingsError("filters", f"cohort_bins: {column!r} is not a column of the "
                                    f"cohort filter ({', '.join(parts) or 'none'})", item[1])
            try:
                out[column] = bins_text(item[1])
            except (ValueError, TypeError) as exc:
                raise SettingsError("filters", f"cohort_bins: {column}: {exc}",
                                    item[1]) from None
        return tuple((c, out[c]) for c in parts if c in out)

    def cohort_columns(self) -> tuple[str, ...]:
        """The columns the cohort filter reads (an intersection's each), in order."""
        return tuple(dict.fromkeys(p.strip() for item in self.cohorts
                                   for p in item.partition("=")[0].split("*")))

    def bins_of_cohorts(self) -> dict[str, str]:
        """``cohort_bins`` as ``{column: bins}``."""
        return dict(self.cohort_bins)

    def with_cohort_bins(self, bins: Mapping[str, object]) -> Filters:
        """These filters with the bins ``bins`` (``{column: spec}``, the run's chosen bins) of
        the cohort filter's columns, in place of their own: a column ``bins`` lacks has its
        default bins (contract §9, cohort filter)."""
        parts = self.cohort_columns()
        return replace(self, cohort_bins={c: b for c, b in bins.items() if c in parts})

    @property
    def active(self) -> bool:
        return (self.fold is not None or self.split is not None or bool(self.criteria)
                or bool(self.cohorts))

    def cohort_values(self) -> dict[str, tuple[str, ...]]:
        """The cohort filter by column: ``{column: values}`` (in the order given)."""
        out: dict[str, tuple[str, ...]] = {}
        for item in self.cohorts:
            column, _, value = item.partition("=")
            out[column] = (*out.get(column, ()), value)
        return out

    def describe(self) -> str:
        """Plain words, e.g. ``fold 2; criteria A.1, A.3`` (``all queries`` when inactive)."""
        parts = []
        if self.fold is not None:
            parts.append(f"fold {self.fold}")
        if self.split is not None:
            parts.append(f"split {self.split}")
        if self.criteria:
            parts.append("criteria " + ", ".join(self.criteria))
        if self.cohorts:
            binned = "; ".join(f"{c} binned {b}" for c, b in self.cohort_bins)
            parts.append("cohort " + ", ".join(f"{column} = {' or '.join(values)}"
                                               for column, values in
                                               self.cohort_values().items())
                         + (f" ({binned})" if binned else ""))
        return "; ".join(parts) if parts else "all queries"

    def to_dict(self) -> dict:
        """JSON-ready; ``cohorts`` only when a cohort is chosen, ``cohort_bins`` only when a
        column of it has bins chosen."""
        out = {"fold": self.fold, "split": self.split, "criteria": list(self.criteria)}
        if self.cohorts:
            out["cohorts"] = list(self.cohorts)
        if self.cohort_bins:
            out["cohort_bins"] = dict(self.cohort_bins)
        return out
