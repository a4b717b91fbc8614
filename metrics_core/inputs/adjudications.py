"""The adjudication file: reviewers' verdicts on queries and sentences (contract §14).

A review meeting marks the cases behind a number: a query (``sent_uid`` empty) or one of its
candidate sentences gets a verdict (:data:`VERDICTS`), and a ``label_error`` gets the corrected
gold (``corrected_has_evidence`` for a query, ``corrected_is_gold`` for a sentence). The file
is a CSV with the columns :data:`COLUMNS` (any format
:func:`~metrics_core.inputs.loading.read_table` reads is accepted); the app downloads and uploads
it, the command line reads it (``metrics-core evaluate … --adjudications adj.csv``).

:func:`read_adjudications` reads and checks a file against the data set it adjudicates, and
:func:`adjudications_of` checks a table already in memory (the app's verdicts). Every broken
rule is an :class:`~metrics_core.errors.InputError` naming the file, the column, the rule and
the rows (all of them at once, as :class:`~metrics_core.errors.InputErrors`); nothing is
dropped. The result, :class:`Adjudications`, holds the verdicts and where each one lands in the
data set: :func:`metrics_core.evaluation.adjudicated.adjudicated_dataset` applies them.

>>> import pandas as pd
>>> from metrics_core.data.dataset import Dataset
>>> q = pd.DataFrame({"post_id": ["p1", "p2"], "criterion": "A", "has_evidence": [1, 0],
...                   "p_has_evidence": [0.2, 0.7]})
>>> c = pd.DataFrame({"post_id": ["p1", "p2"], "criterion": "A", "sent_uid": ["s1", "s1"],
...                   "score": [0.5, 0.4], "is_gold": [1, 0]})
>>> ds = Dataset.from_frames(q, c)
>>> adj = adjudications_of(pd.DataFrame({"post_id": ["p1"], "criterion": ["A"],
...                                      "verdict": ["label_error"],
...                                      "corrected_has_evidence": [0]}), ds)
>>> adj.query_rows.tolist(), adj.query_labels.tolist(), adj.counts()["label_error"]
([0], [0], 1)
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np
import pandas as pd

from metrics_core.errors import InputError, InputErrors, shown_value
from metrics_core.inputs.loading import read_table

__all__ = ["COLUMNS", "CORRECTING", "REQUIRED", "VERDICTS", "Adjudications",
           "adjudications_of", "empty_frame", "read_adjudications", "to_csv"]

#: The verdicts a reviewer gives a case, in the order the app offers them.
VERDICTS = ("label_error", "model_error", "ambiguous", "acceptable")
#: The verdict that corrects the gold (and the only one that may).
CORRECTING = "label_error"
#: The columns of the adjudication file, in the order it is written.
COLUMNS = ("post_id", "criterion", "sent_uid", "verdict", "corrected_has_evidence",
           "corrected_is_gold", "reviewer", "note", "time")
#: Columns a file must have (the others may be left out: empty everywhere).
REQUIRED = ("post_id", "criterion", "verdict")
_TEXT = COLUMNS
_MISSING = frozenset({"", "nan", "none", "null", "<na>", "na", "n/a"})


def empty_frame() -> pd.DataFrame:
    """An adjudication table with no verdict (the columns of :data:`COLUMNS`, all text)."""
    return pd.DataFrame({c: pd.Series(dtype=object) for c in COLUMNS})


@dataclass(frozen=True, eq=False)
class Adjudications:
    """Checked verdicts and where they land in one data set.

    ``frame`` holds the verdicts in the file's order with the columns :data:`COLUMNS` (text;
    the corrections as ``"0"`` / ``"1"`` or ``""``); ``rows`` their 1-based data-row numbers
    in the file. ``query`` is the data set's query index of every row; ``candidate`` the
    candidate index of a sentence's row (-1 for a query's). ``query_rows`` /
    ``query_labels`` are the corrected ``has_evidence`` (queries in data-set order),
    ``candidate_rows`` / ``candidate_labels`` the corrected ``is_gold``, and ``ambiguous``
    the queries with an ``ambiguous`` verdict on the query or one of its sentences.
    """

    frame: pd.DataFrame
    file: str
    query: np.ndarray
    candidate: np.ndarray
    query_rows: np.ndarray
    query_labels: np.ndarray
    candidate_rows: np.ndarray
    candidate_labels: np.ndarray
    ambiguous: np.ndarray

    def __len__(self) -> int:
        return len(self.frame)

    def counts(self) -> dict[str, int]:
        """Rows per verdict (every verdict named, 0 when none)."""
        found = self.frame["verdict"].value_counts()
        return {v: int(found.get(v, 0)) for v in VERDICTS}

    def by_reviewer(self) -> pd.DataFrame:
        """Rows per reviewer and verdict (a blank reviewer shown as ``""``), with the total."""
        frame = self.frame.assign(reviewer=self.frame["reviewer"].fillna(""))
        table = pd.crosstab(frame["reviewer"], frame["verdict"]).reindex(
            columns=list(VERDICTS), fill_value=0)
        table["total"] = table.sum(axis=1)
        return table.reset_index().rename_axis(columns=None)

    def to_csv(self) -> bytes:
        """The file as the app downloads it (:func:`to_csv` of :attr:`frame`)."""
        return to_csv(self.frame)


#: A text cell starting with one of these is a formula to a spreadsheet: written with a
#: leading apostrophe, which reading removes again (the file round-trips).
_FORMULA = ("=", "+", "-", "@")


def to_csv(frame: pd.DataFrame) -> bytes:
    """An adjudication table as CSV bytes: the columns of :data:`COLUMNS` in that order, UTF-8;
    a cell a spreadsheet would run as a formula gets a leading apostrophe (read back without
    it)."""
    out = frame.reindex(columns=list(COLUMNS)).fillna("").astype(str)
    out = out.apply(lambda col: col.where(~col.str.startswith(_FORMULA), "'" + col))
    buffer = io.StringIO()
    out.to_csv(buffer, index=False, lineterminator="\n")
    return buffer.getvalue().encode("utf-8")


def read_adjudications(source, dataset, *, name: str | None = None) -> Adjudications:
    """Read the adjudication file ``source`` (a path or bytes) and check it against
    ``dataset`` (:func:`adjudications_of`). A file with a header and no row holds no verdict."""
    if isinstance(source, bytes | bytearray) and name is None:
        name = "adjudications.csv"
    try:
        frame = read_table(source, name=name, string_columns=COLUMNS)
    except InputError as err:
        if err.code != "no_data":
            raise
        frame = empty_frame()
        frame.attrs["line_offset"] = 1
    file = name or getattr(source, "name", None) or str(source)
    return adjudications_of(frame, dataset, file=file)


def _text(frame: pd.DataFrame, column: str) -> pd.Series:
    """A column as stripped text, missing values as ``""``."""
    if column not in frame.columns:
        return pd.Series([""] * len(frame), index=frame.index, dtype=object)
    values = frame[column]
    text = values.astype(object).where(values.notna(), "").astype(str).str.strip()
    quoted = text.str.startswith("'") & text.str[1:].str.startswith(_FORMULA)
    text = text.where(~quoted, text.str[1:])
    return text.where(~text.str.lower().isin(_MISSING), "")


def adjudications_of(frame: pd.DataFrame, dataset, *, file: str = "adjudications.csv",
                     ) -> Adjudications:
    """Check an adjudication table against ``dataset`` and locate every verdict in it.

    The rules (contract §14), each broken one an :class:`InputError` naming ``file``, the
    column, the rule and the rows (every broken rule at once):

    - the columns are those of :data:`COLUMNS` (``post_id``, ``criterion`` and ``verdict``
      required), none unknown;
    - ``post_id`` / ``criterion`` name a query of the data set, and ``sent_uid``, when given,
      one of its candidate sentences;
    - ``verdict`` is one of :data:`VERDICTS`;
    - a correction is 0 or 1, given only with ``label_error`` (any other verdict says the
      label stands), always with it, on the right kind of row (``corrected_has_evidence``
      for a query, ``corrected_is_gold`` for a sentence), and differs from the gold;
    - no case (``post_id``, ``criterion``, ``sent_uid``) is adjudicated twice;
    - ``time``, when given, is an ISO 8601 date and time.
    """
    frame = frame.reset_index(drop=True)
    offset = frame.attrs.get("line_offset", 1)
    rows = np.arange(1, len(frame) + 1)
    errors: list[InputError] = []

    def flag(mask, rule, column=None, values=None, hint=None):
        mask = np.asarray(mask, dtype=bool)
        if mask.any():
            err = InputError.from_mask(mask, rule, row_numbers=rows, file=file, column=column,
                                       values=values, hint=hint)
            err.line_offset = offset  # (lines as an editor counts them: the header is 1)
            errors.append(err)

    unknown = [c for c in frame.columns if str(c) not in COLUMNS]
    if unknown:
        errors.append(InputError(
            f"unknown column(s) {', '.join(map(repr, unknown))}", file=file,
            hint=f"the adjudication file's columns are {', '.join(COLUMNS)}",
            code="bad_mapping"))
    missing = [c for c in REQUIRED if c not in frame.columns]
    if missing:
        errors.append(InputError(f"missing required column(s) {', '.join(missing)}",
                                 file=file, code="missing_column",
                                 hint=f"columns found: {', '.join(map(str, frame.columns))}"))
        InputErrors.raise_if_any(errors)
    text = {c: _text(frame, c) for c in _TEXT}
    post, crit, uid = text["post_id"], text["criterion"], text["sent_uid"]
    verdict = text["verdict"].str.lower()
    flag(post.eq(""), "values must not be empty", "post_id")
    flag(crit.eq(""), "values must not be empty", "criterion")
    flag(~verdict.isin(VERDICTS), f"the verdict must be one of {', '.join(VERDICTS)}",
         "verdict", values=text["verdict"])

    def binary(column):
        values = text[column]
        numbers = pd.to_numeric(values, errors="coerce")
        bad = values.ne("") & ~numbers.isin([0, 1])
        flag(bad, "values must be 0, 1 or empty", column, values=values)
        return np.where(values.eq("") | bad, -1, numbers.fillna(-1)).astype(np.int64), \
            values.eq("").to_numpy()

    (corrected_y, no_y), (corrected_gold, no_gold) = (binary("corrected_has_evidence"),
                                                      binary("corrected_is_gold"))
    sentence = uid.ne("").to_numpy()
    correcting = (verdict == CORRECTING).to_numpy()
    flag((corrected_y >= 0) & sentence, "a sentence's row corrects is_gold, not has_evidence",
         "corrected_has_evidence", values=text["sent_uid"],
         hint="put the query's correction on its own row (sent_uid empty)")
    flag((corrected_gold >= 0) & ~sentence, "only a sentence's row (sent_uid given) corrects "
         "is_gold", "corrected_is_gold")
    given = (corrected_y >= 0) | (corrected_gold >= 0)
    flag(given & ~correcting & verdict.isin(VERDICTS).to_numpy(),
         f"a correction contradicts the verdict: only {CORRECTING} corrects the gold",
         "verdict", values=verdict)
    flag(correcting & ~sentence & no_y,
         f"a query's {CORRECTING} needs its corrected_has_evidence (0 or 1)",
         "corrected_has_evidence")
    flag(correcting & sentence & no_gold,
         f"a sentence's {CORRECTING} needs its corrected_is_gold (0 or 1)", "corrected_is_gold")
    key = pd.DataFrame({"p": post, "c": crit, "s": uid})
    dup = key.duplicated(keep=False).to_numpy() & post.ne("").to_numpy() & crit.ne("").to_numpy()
    flag(dup, "a case is adjudicated once: these rows repeat a (post_id, criterion, sent_uid)",
         "sent_uid", values=(post + " · " + crit + " · " + uid).map(shown_value))
    times = text["time"]
    parsed = pd.to_datetime(times.where(times.ne(""), None), errors="coerce", utc=True,
                            format="ISO8601")
    flag(times.ne("").to_numpy() & parsed.isna().to_numpy(),
         "time must be an ISO 8601 date and time (e.g. 2026-05-04T10:30:00Z)", "time",
         values=times)

    # Where every row lands in the data set.
    index = pd.MultiIndex.from_arrays([pd.Index(dataset.post_id, dtype=object).astype(str),
                                       pd.Index(dataset.criterion, dtype=object).astype(str)])
    query = index.get_indexer(pd.MultiIndex.from_arrays([post, crit])) if len(frame) else \
        np.zeros(0, dtype=np.int64)
    query = np.asarray(query, dtype=np.int64)
    named = post.ne("").to_numpy() & crit.ne("").to_numpy()
    flag(named & (query < 0), "no such query (post_id, criterion) in the data", "post_id",
         values=(post + " · " + crit).map(shown_value))
    candidate = np.full(len(frame), -1, dtype=np.int64)
    uids = dataset.sent_uid if sentence.any() else None
    unknown_sentence = np.zeros(len(frame), dtype=bool)
    for i in np.flatnonzero(sentence & (query >= 0)):
        lo, hi = int(dataset.offsets[query[i]]), int(dataset.offsets[query[i] + 1])
        found = np.flatnonzero(uids[lo:hi].astype(str) == uid.iat[i])
        if found.size:
            candidate[i] = lo + int(found[0])
        else:
            unknown_sentence[i] = True
    flag(unknown_sentence, "no such sentence among the query's candidates", "sent_uid",
         values=uid)
    located = query >= 0
    query_fix = correcting & ~sentence & located & (corrected_y >= 0)
    gold_y = np.where(located, dataset.y[np.maximum(query, 0)] if dataset.n_queries else 0, -1)
    flag(query_fix & (corrected_y == gold_y), "the correction is the gold already "
         f"(a {CORRECTING} changes has_evidence)", "corrected_has_evidence",
         values=text["corrected_has_evidence"])
    sentence_fix = correcting & (candidate >= 0) & (corrected_gold >= 0)
    gold_s = np.where(candidate >= 0, dataset.is_gold[np.maximum(candidate, 0)].astype(np.int64)
                      if dataset.n_candidates else 0, -1)
    flag(sentence_fix & (corrected_gold == gold_s), "the correction is the gold already "
         f"(a {CORRECTING} changes is_gold)", "corrected_is_gold",
         values=text["corrected_is_gold"])
    InputErrors.raise_if_any(errors)

    ambiguous = np.unique(query[(verdict == "ambiguous").to_numpy()])
    out = pd.DataFrame({"post_id": post, "criterion": crit, "sent_uid": uid,
                        "verdict": verdict,
                        "corrected_has_evidence": np.where(corrected_y >= 0,
                                                           corrected_y.astype(str), ""),
                        "corrected_is_gold": np.where(corrected_gold >= 0,
                                                      corrected_gold.astype(str), ""),
                        "reviewer": text["reviewer"], "note": text["note"],
                        "time": text["time"]}, columns=list(COLUMNS)).astype(object)
    return Adjudications(
        frame=out, file=file, query=query, candidate=candidate,
        query_rows=query[query_fix], query_labels=corrected_y[query_fix].astype(np.int8),
        candidate_rows=candidate[sentence_fix],
        candidate_labels=corrected_gold[sentence_fix].astype(bool),
        ambiguous=ambiguous.astype(np.int64))
