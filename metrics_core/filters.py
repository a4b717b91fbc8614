"""Which queries a run evaluates (:class:`Filters`: a fold, a split, some criteria, a cohort),
and the rule of a name (:func:`is_name`) that the filters and the settings schema share.

:class:`Filters` is :attr:`metrics_core.config.EvalConfig.filters`, importable from
:mod:`metrics_core.config` too.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass

from metrics_core.errors import SettingsError

__all__ = ["MAX_COHORT_FILTERS", "MAX_CRITERIA", "MAX_NAME_CHARS", "Filters", "is_name"]

#: Most criteria a filter or the per-criterion gates may name.
MAX_CRITERIA = 1_000
#: Most ``column=value`` items of a cohort filter.
MAX_COHORT_FILTERS = 64
#: Longest text of one name: a criterion, a fold, a split, a target.
MAX_NAME_CHARS = 200

def is_name(value) -> bool:
    """Text of 1 to MAX_NAME_CHARS characters, or a whole number (a fold such as 2)."""
    if isinstance(value, str):
        return 0 < len(value) <= MAX_NAME_CHARS
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


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

    >>> f = Filters(cohorts=("site=S1", "sex=F", "site=S2"))
    >>> f.cohort_values(), f.describe()
    ({'site': ('S1', 'S2'), 'sex': ('F',)}, 'cohort site = S1 or S2, sex = F')
    """

    fold: str | None = None
    split: str | None = None
    criteria: tuple[str, ...] = ()
    cohorts: tuple[str, ...] = ()

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
            parts.append("cohort " + ", ".join(f"{column} = {' or '.join(values)}"
                                               for column, values in
                                               self.cohort_values().items()))
        return "; ".join(parts) if parts else "all queries"

    def to_dict(self) -> dict:
        """JSON-ready; ``cohorts`` only when a cohort is chosen."""
        out = {"fold": self.fold, "split": self.split, "criteria": list(self.criteria)}
        if self.cohorts:
            out["cohorts"] = list(self.cohorts)
        return out
