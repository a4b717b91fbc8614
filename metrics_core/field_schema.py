"""What one :class:`~metrics_core.config.EvalConfig` field accepts (:class:`FieldSchema`:
type, bounds, list lengths), from the field's :class:`~metrics_core.config.Option`.

:data:`metrics_core.config.SCHEMA` is one :class:`FieldSchema` per field: the constructor,
settings files, links and command-line flags check a setting with it, so a setting gets the
same verdict whichever way it comes in (a :class:`SettingsError` names the field, the rule and
the value).
"""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from functools import cached_property

from metrics_core.errors import SettingsError
from metrics_core.filters import MAX_NAME_CHARS, Filters, is_name

__all__ = ["MAX_NUMBER_CHARS", "FieldSchema"]

#: Longest text of one number written in a link or a command-line flag.
MAX_NUMBER_CHARS = 64
_NUMBER_TEXT = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?\Z")


def _bound(x) -> str:
    return f"{int(x):,}" if float(x).is_integer() else f"{x:g}"


@dataclass(frozen=True)
class FieldSchema:
    """What one :class:`EvalConfig` field accepts, from its :class:`Option`.

    ``kind`` is ``bool``, ``int``, ``float``, ``choice`` (one of ``choices``), ``ints`` /
    ``floats`` (a list of ``min_items`` to ``max_items`` numbers, each within the bounds),
    ``gates`` (criterion, τ_neg, τ_pos triples), ``targets`` (``metric>=value`` texts) or
    ``filters``. :meth:`check` validates a value given in one of three ways: ``python``
    (the constructor: real bools, ints, finite floats), ``json`` (a settings file: an integral
    float is a whole number) or ``text`` (a link or a flag: ``"1e3"``, ``"true"``, ``"1,3,5"``).
    """

    name: str
    kind: str
    low: float | None = None
    high: float | None = None
    choices: tuple[str, ...] = ()
    min_items: int = 0
    max_items: int | None = None

    @cached_property
    def range_text(self) -> str:
        return f"within [{_bound(self.low)}, {_bound(self.high)}]"

    @cached_property
    def rule(self) -> str:
        """The rule in plain words (what a refusal says)."""
        k = self.kind
        if k == "bool":
            return "must be true or false"
        if k == "int":
            return f"must be a whole number {self.range_text}"
        if k == "float":
            return f"must be a finite number {self.range_text}"
        if k == "choice":
            return f"must be one of {', '.join(self.choices)}"
        if k in ("ints", "floats"):
            what = "whole numbers" if k == "ints" else "finite numbers"
            size = (f"{self.min_items} to {self.max_items}" if self.min_items
                    else f"at most {self.max_items}")
            return f"must be a list of {size} {what}, each {self.range_text}"
        if k == "gates":
            return (f"must be a list of at most {self.max_items:,} [criterion, tau_neg, "
                    f"tau_pos] entries with 0 <= tau_neg <= tau_pos <= 1")
        if k == "targets":
            return (f"must be a list of at most {self.max_items} targets such as "
                    f"'auroc>=0.85' (metric>=value, or >, <=, <)")
        return "must be an object with fold, split, criteria, cohorts and cohort_bins"

    # ------------------------------------------------------------------ checks
    def check(self, value, mode: str = "json"):
        """The value as :class:`EvalConfig` holds it, or a :class:`SettingsError`."""
        return getattr(self, f"_check_{self.kind}")(value, mode)

    def _error(self, value, rule: str | None = None) -> SettingsError:
        return SettingsError(self.name, rule or self.rule, value)

    def _check_bool(self, value, mode):
        if isinstance(value, bool):
            return value
        if mode == "text" and isinstance(value, str):
            lowered = value.strip().lower()
            if lowered in ("1", "true"):
                return True
            if lowered in ("0", "false"):
                return False
            raise self._error(value, "must be 1, 0, true or false")
        if isinstance(value, str):
            raise self._error(value, "must be true or false (a JSON boolean, not text)")
        raise self._error(value)

    def _whole(self, value, mode, rule):
        if mode == "text" and isinstance(value, str):
            text = value.strip()
            if len(text) > MAX_NUMBER_CHARS or not _NUMBER_TEXT.match(text):
                raise self._error(value, rule)
            number = Decimal(text)
            if number != number.to_integral_value():
                raise self._error(value, rule)
            if not self.low <= number <= self.high:
                raise self._error(value, rule)
            return int(number)
        exact = isinstance(value, numbers.Integral) and not isinstance(value, bool)
        written_with_point = (mode != "python" and isinstance(value, float)
                              and math.isfinite(value) and value.is_integer())
        if not (exact or written_with_point):
            raise self._error(value, rule)
        whole = int(value)
        if not self.low <= whole <= self.high:
            raise self._error(value, rule)
        return whole

    def _real(self, value, mode, rule):
        if mode == "text" and isinstance(value, str):
            text = value.strip()
            if len(text) > MAX_NUMBER_CHARS or not _NUMBER_TEXT.match(text):
                raise self._error(value, rule)
            number = float(text)
        elif isinstance(value, numbers.Real) and not isinstance(value, bool):
            try:
                number = float(value)
            except OverflowError:
                raise self._error(value, rule) from None
        else:
            raise self._error(value, rule)
        if not (math.isfinite(number) and self.low <= number <= self.high):
            raise self._error(value, rule)
        return number

    def _check_int(self, value, mode):
        return self._whole(value, mode, self.rule)

    def _check_float(self, value, mode):
        return self._real(value, mode, self.rule)

    def _check_choice(self, value, mode):
        text = value.strip() if mode == "text" and isinstance(value, str) else value
        if isinstance(text, str) and text in self.choices:
            return text
        raise self._error(value)

    def _items(self, value, mode):
        """The items of a list setting (text: comma-separated), its length checked first."""
        if mode == "text" and isinstance(value, str):
            if value.count(",") >= 4 * (self.max_items or 0) + 1:
                raise self._error(value)
            value = [t for t in value.split(",") if t.strip()]
        if not isinstance(value, list | tuple):
            rule = self.rule + (" (not one text)" if isinstance(value, str) else "")
            raise self._error(value, rule)
        if not self.min_items <= len(value) <= (self.max_items or len(value)):
            raise self._error(value)
        return value

    def _check_ints(self, value, mode):
        items = self._items(value, mode)
        rule = f"must be a whole number {self.range_text}"
        out = [self._whole(v, mode, f"item {i} {rule}") for i, v in enumerate(items, 1)]
        return tuple(sorted(set(out)))

    def _check_floats(self, value, mode):
        items = self._items(value, mode)
        rule = f"must be a finite number {self.range_text}"
        out = [self._real(v, mode, f"item {i} {rule}") for i, v in enumerate(items, 1)]
        return tuple(sorted(set(out)))

    def _check_gates(self, value, mode):
        if mode == "text" and isinstance(value, str):
            value = [value]
        items = self._items(value, mode)
        out: dict[str, tuple[str, float, float]] = {}
        for i, item in enumerate(items, 1):
            form = (f"item {i} must be [criterion, tau_neg, tau_pos] (a criterion name of 1 "
                    f"to {MAX_NAME_CHARS} characters and two numbers)")
            given = item
            if mode == "text" and isinstance(item, str):
                if "=" in item:
                    name, _, taus = item.rpartition("=")
                    lo, sep, hi = taus.partition(":")
                else:
                    rest, sep, hi = item.rpartition(":")
                    name, _, lo = rest.rpartition(":")
                if not sep:
                    raise self._error(given, form)
                item = (name, lo, hi)
            if not isinstance(item, list | tuple) or len(item) != 3:
                raise self._error(given, form)
            name, lo, hi = item
            if not isinstance(name, str) or not is_name(name):
                raise self._error(given, form)
            rule = (f"criterion {name!r} needs 0 <= tau_neg <= tau_pos <= 1 (two finite "
                    f"numbers)")
            try:
                lo, hi = self._real(lo, mode, rule), self._real(hi, mode, rule)
            except SettingsError:
                raise self._error(given, rule) from None
            if lo > hi:
                raise self._error(given, rule)
            if name in out:
                raise self._error(given, f"criterion {name!r} is given twice")
            out[name] = (name, lo, hi)
        return tuple(out[k] for k in sorted(out))

    def _check_targets(self, value, mode):
        from metrics_core.targets import TargetNameError, canonical_targets

        items = self._items(value, mode)
        out = []
        for i, item in enumerate(items, 1):
            form = (f"item {i} must be a target such as 'auroc>=0.85' (metric>=value, or >, "
                    f"<=, <; at most {MAX_NAME_CHARS} characters)")
            if not isinstance(item, str) or len(item) > MAX_NAME_CHARS:
                raise self._error(item, form)
            try:  # the metric in the registry's spelling (names in any case)
                out.extend(canonical_targets([item]))
            except TargetNameError as err:
                raise self._error(item, f"item {i}: {err.rule}") from None
            except ValueError as err:
                raise self._error(item, f"item {i}: the target value must be a finite number"
                                  if "finite" in str(err) else form) from None
        return tuple(out)

    def _check_filters(self, value, mode):
        if isinstance(value, Filters):
            return value
        if not isinstance(value, Mapping):
            raise self._error(value)
        unknown = sorted(str(k) for k in value
                         if k not in ("fold", "split", "criteria", "cohorts", "cohort_bins"))
        if unknown:
            raise self._error(value, f"has no key {', '.join(map(repr, unknown))} (it holds "
                                     f"fold, split, criteria, cohorts and cohort_bins)")
        return Filters(**value)
