"""Structured errors for bad input files (contract §2, "Bad input").

An :class:`InputError` names the file, the column, the broken rule and the first offending
data rows, so the CLI (exit code 2) and the dashboard can show one clear message and a JSON
form of it. When a file has several problems the loader reports them all at once as an
:class:`InputErrors`, which is itself an :class:`InputError` (catch the base class to handle
both) and holds the individual errors in ``.errors``.

Row numbers count data rows from 1, the header not included: row 1 is the first record of the
file (line 2 of a CSV file with a header), or position 0 of a DataFrame. An error about a text
file shows *line* numbers instead, as an editor counts them (the header is line 1 of a CSV
file): the loader sets :attr:`InputError.line_offset`. Offending values are shown beside their
row or line numbers.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import numpy as np

__all__ = ["MAX_ROWS_LISTED", "MAX_SETTING_CHARS", "MAX_VALUE_CHARS", "InputError", "InputErrors",
           "SettingsError", "first_listed", "shown_setting", "shown_value"]

#: How many offending row numbers an error keeps (the total count is kept separately).
MAX_ROWS_LISTED = 10
#: Longest offending value shown (longer ones are cut with "…").
MAX_VALUE_CHARS = 40
#: Longest offending setting value shown in a :class:`SettingsError`.
MAX_SETTING_CHARS = 60


def first_listed(values, limit: int, show=None) -> str:
    """The first ``limit`` of ``values``, each through ``show`` (default :func:`shown_value`),
    and how many more: ``"'a', 'b' and 3 more"``."""
    values = list(values)
    show = shown_value if show is None else show
    return ", ".join(show(v) for v in values[:limit]) + (
        f" and {len(values) - limit:,} more" if len(values) > limit else "")


def shown_value(value) -> str:
    """An offending value as a message shows it: ``repr``-like for text, plain for numbers,
    printable and at most :data:`MAX_VALUE_CHARS` characters."""
    if isinstance(value, str):
        text = repr(value)
    elif isinstance(value, float | np.floating) and float(value).is_integer():
        text = f"{float(value):g}"
    else:
        text = str(value)
    text = "".join(ch if ch.isprintable() else "?" for ch in text)
    return text if len(text) <= MAX_VALUE_CHARS else text[:MAX_VALUE_CHARS - 1] + "…"


#: The kinds of input error.
CODES = ("missing_column", "ambiguous_column", "bad_mapping", "duplicate_column",
         "unreadable_file", "too_large", "invalid_value", "no_data", "no_match")
#: Codes that a column mapping chosen by hand can fix.
MAPPING_CODES = frozenset({"missing_column", "ambiguous_column", "bad_mapping"})


class InputError(ValueError):
    """One broken input rule: which file, which column, which rule, which rows.

    Parameters
    ----------
    rule : str
        Short text of the broken rule, e.g. ``"values must be within [0, 1]"``.
    file : str, optional
        Name of the input file (or table) the problem was found in.
    column : str, optional
        Column the rule applies to (as the file names it where that helps the user).
    rows : sequence of int, optional
        1-based data-row numbers of offending rows; only the first
        :data:`MAX_ROWS_LISTED` are kept.
    n_rows : int, optional
        Total number of offending rows (defaults to ``len(rows)``).
    hint : str, optional
        What to do about it, or what was found instead.
    code : str, optional
        Stable machine-readable kind (:data:`CODES`); by default ``invalid_value`` when the
        error names a column or rows, else ``unreadable_file``. Programs decide on the code,
        never on the message text (e.g. the dashboard opens its column mapping on
        :data:`MAPPING_CODES`).

    Examples
    --------
    >>> err = InputError("values must be within [0, 1]", file="queries.csv",
    ...                  column="p_has_evidence", rows=[4, 17, 90])
    >>> str(err)
    "queries.csv: column 'p_has_evidence': values must be within [0, 1] (3 rows, first: 4, 17, 90)"

    With the offending values and the header line counted (a CSV file):

    >>> err.values, err.line_offset = ["1.7", "-0.2", "4"], 1
    >>> str(err).split(": ", 2)[2]
    'values must be within [0, 1] (3 lines, first: 5 = 1.7, 18 = -0.2, 91 = 4)'
    """

    def __init__(self, rule: str, *, file: str | None = None, column: str | None = None,
                 rows: Iterable[int] = (), n_rows: int | None = None,
                 hint: str | None = None, code: str | None = None,
                 values: Iterable[str] = (), line_offset: int | None = None) -> None:
        rows = [int(r) for r in rows]
        if code is None:
            code = "invalid_value" if column is not None or rows else "unreadable_file"
        if code not in CODES:
            raise ValueError(f"unknown error code {code!r}; known: {', '.join(CODES)}")
        self.code = code
        self.rule = str(rule)
        self.file = None if file is None else str(file)
        self.column = None if column is None else str(column)
        self.rows = rows[:MAX_ROWS_LISTED]
        self.n_rows = len(rows) if n_rows is None else int(n_rows)
        self.hint = hint
        #: Offending values of ``rows`` (as shown; may be empty).
        self.values = [str(v) for v in values][:MAX_ROWS_LISTED]
        #: Lines before data row 1 in a text file (1 for a CSV header); None: say "row".
        self.line_offset = line_offset
        super().__init__(self.render())

    @classmethod
    def from_mask(cls, mask: np.ndarray, rule: str, *, row_numbers: np.ndarray,
                  file: str | None = None, column: str | None = None,
                  hint: str | None = None, code: str | None = None,
                  values=None) -> InputError:
        """Build an error from a boolean mask over a table's rows.

        ``row_numbers[i]`` is the 1-based data-row number of row ``i`` of the checked table
        (tables derived from a long table keep the long table's row numbers). ``values``
        (optional) are the checked values, positionally like the mask (a Series or array),
        or a callable taking the offending positions and returning their shown values.
        """
        idx = np.flatnonzero(mask)
        first = idx[:MAX_ROWS_LISTED]
        shown: list[str] = []
        if callable(values):
            shown = [str(v) for v in values(first)]
        elif values is not None:
            taken = values.iloc[first] if hasattr(values, "iloc") else np.asarray(values)[first]
            shown = [shown_value(v) for v in taken.tolist()]
        return cls(rule, file=file, column=column,
                   rows=np.asarray(row_numbers)[first].tolist(),
                   n_rows=len(idx), hint=hint, code=code, values=shown)

    @property
    def unit(self) -> str:
        """``line`` for a text file (numbers as an editor counts them), else ``row``."""
        return "row" if self.line_offset is None else "line"

    def numbers(self) -> list[int]:
        """The listed row numbers, as lines of the file when it is text."""
        return [r + (self.line_offset or 0) for r in self.rows]

    def render(self) -> str:
        """The error as one line of plain text."""
        text = self.rule
        if self.column is not None:
            text = f"column '{self.column}': {text}"
        if self.file is not None:
            text = f"{self.file}: {text}"
        numbers, unit = self.numbers(), self.unit
        with_values = len(self.values) == len(numbers) and numbers
        if self.n_rows == 1 and numbers:
            text += (f" ({unit} {numbers[0]}: value {self.values[0]})" if with_values
                     else f" ({unit} {numbers[0]})")
        elif self.n_rows > 0 and numbers:
            listed = (", ".join(f"{n} = {v}" for n, v in zip(numbers, self.values, strict=True))
                      if with_values else ", ".join(map(str, numbers)))
            text += f" ({self.n_rows} {unit}s, first: {listed})"
        elif self.n_rows > 0:
            text += f" ({self.n_rows} {unit}s)"
        if self.hint:
            text += f"; {self.hint}"
        return text

    def to_dict(self) -> dict:
        """JSON-ready form: the fields plus the rendered ``message``."""
        return {"code": self.code, "file": self.file, "column": self.column, "rule": self.rule,
                "rows": list(self.rows), "n_rows": self.n_rows, "hint": self.hint,
                "values": list(self.values),
                "lines": None if self.line_offset is None else self.numbers(),
                "message": self.render()}

    @property
    def codes(self) -> frozenset[str]:
        """The codes of this error (one; :class:`InputErrors` has those of all it holds)."""
        return frozenset({self.code})

    @property
    def needs_mapping(self) -> bool:
        """True when a column mapping chosen by hand could fix the input."""
        return bool(self.codes & MAPPING_CODES)

    def __str__(self) -> str:
        return self.render()


class InputErrors(InputError):
    """Several input problems found at once (every validation problem of the input).

    ``errors`` holds the individual :class:`InputError` objects in the order found;
    iterating over an ``InputErrors`` yields them. ``file`` is the common file name when all
    errors concern one file, else ``None``. The rendered text is a header line followed by one
    line per error.
    """

    def __init__(self, errors: Sequence[InputError]) -> None:
        errors = list(errors)
        if not errors:
            raise ValueError("errors must not be empty")
        self.errors = errors
        files = {e.file for e in errors}
        mapping = [e.code for e in errors if e.code in MAPPING_CODES]
        super().__init__(f"{len(errors)} problems in the input",
                         file=files.pop() if len(files) == 1 else None,
                         code=mapping[0] if mapping else errors[0].code)

    @property
    def codes(self) -> frozenset[str]:
        """The codes of every error held."""
        return frozenset(e.code for e in self.errors)

    @classmethod
    def raise_if_any(cls, errors: Sequence[InputError]) -> None:
        """Raise nothing, the single error, or an ``InputErrors`` holding all of them."""
        if len(errors) == 1:
            raise errors[0]
        if errors:
            raise cls(errors)

    def render(self) -> str:
        return "\n".join([f"{len(self.errors)} problems in the input:"]
                         + [f"- {e.render()}" for e in self.errors])

    def to_dict(self) -> dict:
        return {"code": self.code, "file": self.file, "message": self.render(),
                "errors": [e.to_dict() for e in self.errors]}

    def __iter__(self) -> Iterator[InputError]:
        return iter(self.errors)

    def __len__(self) -> int:
        return len(self.errors)


def shown_setting(value) -> str:
    """A setting's value as a refusal shows it: JSON words for true / false / null, ``repr``
    for text, numbers as written, a list by its first items and its length; printable and at
    most :data:`MAX_SETTING_CHARS` characters (never the whole of a huge value)."""
    limit = MAX_SETTING_CHARS
    if value is None:
        text = "null"
    elif isinstance(value, bool | np.bool_):
        text = "true" if value else "false"
    elif isinstance(value, str):
        text = repr(value[:limit])
    elif isinstance(value, int | np.integer):
        number = int(value)
        text = (str(number) if abs(number) < 10 ** limit
                else f"a number of about {int(number.bit_length() * 0.30103) + 1:,} digits")
    elif isinstance(value, float | np.floating):
        text = repr(float(value))
    elif isinstance(value, list | tuple):
        shown = [shown_setting(v) for v in value[:4]]
        more = f", … ({len(value):,} items)" if len(value) > 4 else ""
        text = "[" + ", ".join(shown) + more + "]"
    elif isinstance(value, dict):
        keys = [repr(str(k)[:20]) for k in list(value)[:3]]
        text = "{" + ", ".join(f"{k}: …" for k in keys) + (", …" if len(value) > 3 else "") + "}"
    else:
        text = str(value)[:limit]
    text = "".join(ch if ch.isprintable() else "?" for ch in text)
    return text if len(text) <= limit else text[:limit - 1] + "…"


_NO_VALUE = object()


class SettingsError(ValueError):
    """A setting that breaks its rule: which setting, which rule, which value.

    ``field`` is the :class:`~metrics_core.config.EvalConfig` field (``None`` for a problem of
    a whole settings file: its size, encoding, nesting or JSON), ``rule`` the rule in plain
    words (e.g. ``"must be a whole number within [1, 1,000]"``) and ``value`` the offending
    value (:attr:`shown` is how the message shows it). ``source`` names where the setting came
    from (a file name, ``"the link"``); ``errors`` lists every error held (itself only, or all
    of them for :meth:`combine`).

    >>> str(SettingsError("hard_cap", "must be a whole number within [1, 1,000]", 1e18,
    ...                   source="settings.json"))
    'settings.json: hard_cap: must be a whole number within [1, 1,000]; got 1e+18'
    """

    def __init__(self, field: str | None, rule: str, value=_NO_VALUE, *,
                 source: str | None = None, errors=None) -> None:
        self.field = field
        self.rule = str(rule)
        self.has_value = value is not _NO_VALUE
        self.value = value if self.has_value else None
        self.source = source
        self.errors: list[SettingsError] = [self] if errors is None else list(errors)
        super().__init__(self.render())

    def __reduce__(self):  # (copy and pickle, e.g. kept in a session's state)
        errors = None if self.errors == [self] else self.errors
        return _settings_error, (self.field, self.rule, self.has_value, self.value, self.source,
                                 errors)

    @property
    def shown(self) -> str:
        """The value as the message shows it (``""`` when there is none)."""
        return shown_setting(self.value) if self.has_value else ""

    def render(self, name: str | None = None, *, with_source: bool = True) -> str:
        """The message; ``name`` replaces the field's name (e.g. a command-line flag)."""
        source = self.source if with_source else None
        if len(self.errors) > 1 or self.errors[0] is not self:
            head = f"{source}: " if source else ""
            return (f"{head}{len(self.errors)} settings are not valid:\n"
                    + "\n".join(f"- {e.render(with_source=False)}" for e in self.errors))
        parts = [p for p in (source, name or self.field) if p]
        text = ": ".join([*parts, self.rule])
        return f"{text}; got {self.shown}" if self.has_value else text

    def __str__(self) -> str:
        return self.render()

    def with_source(self, source: str | None) -> SettingsError:
        """The same error said of ``source`` (every error held, for a combined one)."""
        if self.errors != [self]:
            return SettingsError(None, self.rule, source=source,
                                 errors=[e.with_source(source) for e in self.errors])
        return SettingsError(self.field, self.rule, self.value if self.has_value else _NO_VALUE,
                             source=source)

    @property
    def fields(self) -> list[str]:
        """The fields named by the errors held (without repeats)."""
        return list(dict.fromkeys(e.field for e in self.errors if e.field is not None))

    def to_dict(self) -> dict:
        """JSON-ready form: the fields plus the rendered ``message``."""
        return {"field": self.field, "rule": self.rule, "value": self.shown or None,
                "source": self.source, "message": self.render(),
                "errors": [] if self.errors == [self] else [e.to_dict() for e in self.errors]}

    @classmethod
    def combine(cls, errors, *, source: str | None = None) -> SettingsError:
        """One error for several: the single error itself, or one listing all of them."""
        errors = list(errors)
        if not errors:
            raise ValueError("errors must not be empty")
        if len(errors) == 1:
            return errors[0]
        return cls(None, f"{len(errors)} settings are not valid", source=source, errors=errors)


def _settings_error(field, rule, has_value, value, source, errors) -> SettingsError:
    return SettingsError(field, rule, value if has_value else _NO_VALUE, source=source,
                         errors=errors)
