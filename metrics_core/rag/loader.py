"""JSON Lines input of RAG evaluation (seed 002; contract §12).

One sample per line::

    {"sample_id": "q1", "query": "...", "reference_answer": "..." | null,
     "relevant_docs": [{"doc_id": "d1", "text": "..."}],
     "labels": {"scenario": "paraphrase" | null, "variant_of": "q0" | null},
     "retrieved": [{"doc_id": "d1", "text": "...", "score": 0.9, "rank": 1,
                    "metadata": {"embedding": [0.1, ...]}}],
     "response": "...", "timings": {"end_to_end": 1.25}}

``sample_id``, ``query`` and ``response`` are required; the other fields may be left out
(``reference_answer`` null, no relevant documents, no labels, nothing retrieved, no timings).
``labels.variant_of`` must name the ``sample_id`` of another line of the file.

Lines end at ``\n`` only (a ``\r`` before it is JSON whitespace): a U+2028 or U+2029 inside a
JSON string is text, not a line break. Blank lines are ignored. Before a line is parsed its
nesting is checked (at most :data:`MAX_DEPTH` arrays and objects deep). Numbers are checked
for range: ``rank`` an integer in [1, :data:`MAX_RANK`], ``score`` finite, every timing a
number of seconds in [0, :data:`MAX_SECONDS`], every ``metadata.embedding`` finite numbers of
one length for the whole file (at most :data:`MAX_EMBEDDING_LENGTH`). Every problem is a
:class:`RagInputError` naming the file, the line, the field and the rule; all problems of a file
(up to :data:`MAX_ERRORS`) are reported at once.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

import numpy as np

from metrics_core.errors import InputError, InputErrors, shown_value
from metrics_core.rag.data_model import (
    Document,
    EvaluationSample,
    RetrievedDocument,
    SystemOutputs,
)

__all__ = ["FIELDS", "MAX_BYTES", "MAX_DEPTH", "MAX_EMBEDDING_LENGTH", "MAX_ERRORS", "MAX_RANK",
           "MAX_SECONDS", "RagData", "RagInputError", "load_rag", "parse_rag"]

#: Top-level fields of a line.
FIELDS = ("sample_id", "query", "reference_answer", "relevant_docs", "labels", "retrieved",
          "response", "timings")
#: Problems reported at most (the count says how many lines were bad in all).
MAX_ERRORS = 20
#: Largest file read by default (bytes).
MAX_BYTES = 200 * 1024 * 1024
#: Deepest nesting of arrays and objects in a line (a sample needs 5: line, retrieved, a
#: document, its metadata, the embedding); checked before the line is parsed.
MAX_DEPTH = 32
#: Largest ``rank`` (a position in a retrieved list).
MAX_RANK = 1_000_000
#: Largest timing in seconds (10^9 ms, 11.6 days): a latency above it is a unit or data error.
MAX_SECONDS = 1e6
#: Longest ``metadata.embedding``.
MAX_EMBEDDING_LENGTH = 65_536


class RagInputError(InputError):
    """One broken rule of a RAG JSON Lines file: file, line, field and rule."""

    def __init__(self, rule: str, *, file: str, line: int | None = None,
                 field: str | None = None, hint: str | None = None) -> None:
        self.line = line
        self.field = field
        super().__init__(rule, file=file, column=field,
                         rows=() if line is None else (line,), hint=hint,
                         code="invalid_value" if line is not None else "unreadable_file")

    def render(self) -> str:
        where = [self.file] if self.file else []
        if self.line is not None:
            where.append(f"line {self.line}")
        if self.field is not None:
            where.append(f"field '{self.field}'")
        text = f"{', '.join(where)}: {self.rule}" if where else self.rule
        return f"{text}; {self.hint}" if self.hint else text


@dataclass(frozen=True, eq=False)
class RagData:
    """The samples and system outputs of one file, aligned, in file order."""

    samples: tuple[EvaluationSample, ...]
    outputs: tuple[SystemOutputs, ...]
    name: str = "rag.jsonl"

    def __len__(self) -> int:
        return len(self.samples)


def load_rag(path, *, max_bytes: int = MAX_BYTES) -> RagData:
    """Read and validate a JSON Lines file (path)."""
    path = Path(path)
    size = path.stat().st_size
    if size > max_bytes:
        raise RagInputError(f"the file has {size:,} bytes, more than the limit of "
                            f"{max_bytes:,}", file=path.name)
    return parse_rag(path.read_bytes(), name=path.name)


def parse_rag(data: bytes | str, *, name: str = "rag.jsonl",
              max_bytes: int = MAX_BYTES) -> RagData:
    """Validate JSON Lines bytes (e.g. an upload, never written to disk) into a
    :class:`RagData`; raises :class:`RagInputError` (or ``InputErrors`` holding several)."""
    if isinstance(data, bytes):
        if len(data) > max_bytes:
            raise RagInputError(f"the file has {len(data):,} bytes, more than the limit of "
                                f"{max_bytes:,}", file=name)
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as err:
            raise RagInputError(f"the file is not UTF-8 text (byte {err.start})",
                                file=name) from None
    else:
        text = data
    errors: list[InputError] = []
    samples, outputs, lines = [], [], []
    embeddings: list[tuple[int, str, int]] = []  # (line, field, length) of each embedding
    # JSON Lines end at "\n" only: str.splitlines would also break at U+2028 / U+2029 (and
    # \x1c-\x1e, \x85), which are valid inside a JSON string.
    for number, raw in enumerate(text.split("\n"), start=1):
        if not raw.strip(" \t\r"):
            continue
        problems: list[tuple[str | None, str]] = []
        parsed = _parse_line(raw, problems)
        if problems:
            errors.extend(RagInputError(rule, file=name, line=number, field=field)
                          for field, rule in problems)
        elif parsed is not None:
            samples.append(parsed[0])
            outputs.append(parsed[1])
            lines.append(number)
            embeddings.extend((number, field, length) for field, length in parsed[2])
        if len(errors) >= MAX_ERRORS:
            break
    if not errors:
        errors.extend(_cross_checks(samples, lines, name))
        errors.extend(_embedding_lengths(embeddings, name))
    if errors:
        InputErrors.raise_if_any(errors[:MAX_ERRORS])
    if not samples:
        raise RagInputError("the file holds no sample (one JSON object per line)", file=name)
    return RagData(tuple(samples), tuple(outputs), name=name)


def _cross_checks(samples, lines, name) -> list[InputError]:
    errors: list[InputError] = []
    seen: dict[str, int] = {}
    for s, line in zip(samples, lines, strict=True):
        if s.sample_id in seen:
            errors.append(RagInputError(f"sample_id must be unique; {s.sample_id!r} is also on "
                                        f"line {seen[s.sample_id]}", file=name, line=line,
                                        field="sample_id"))
        else:
            seen[s.sample_id] = line
    for s, line in zip(samples, lines, strict=True):
        parent = s.variant_of
        if parent is not None and parent not in seen:
            errors.append(RagInputError(f"variant_of must name a sample_id of the file; "
                                        f"{parent!r} is not one", file=name, line=line,
                                        field="labels.variant_of"))
        elif parent is not None and parent == s.sample_id:
            errors.append(RagInputError("variant_of must name another sample, not the sample "
                                        "itself", file=name, line=line,
                                        field="labels.variant_of"))
    return errors


def _embedding_lengths(embeddings, name) -> list[InputError]:
    """Every embedding of the file has the length of the first one (they come from one
    model; intra-list diversity compares them)."""
    if not embeddings:
        return []
    line0, field0, length0 = embeddings[0]
    return [RagInputError(f"every metadata.embedding of the file must have the same length; "
                          f"this one has {length} numbers, the first one (line {line0}, "
                          f"field '{field0}') has {length0}", file=name, line=line,
                          field=field)
            for line, field, length in embeddings if length != length0][:MAX_ERRORS]


#: +1 for an opening bracket byte, -1 for a closing one, 0 for the others.
_BRACKET_STEP = np.zeros(256, dtype=np.int32)
_BRACKET_STEP[[0x5B, 0x7B]] = 1
_BRACKET_STEP[[0x5D, 0x7D]] = -1
_BRACKET_STEP.flags.writeable = False


def _too_deep(raw: str) -> bool:
    """True when arrays and objects nest deeper than :data:`MAX_DEPTH` in the line; brackets
    inside strings do not count (a quote after an odd run of backslashes is inside one).
    Vectorised over the line's bytes, and only when it holds more than ``MAX_DEPTH``
    brackets."""
    if raw.count("[") + raw.count("{") <= MAX_DEPTH:
        return False
    encoded = raw.encode("utf-8", "replace")
    c = np.frombuffer(encoded, dtype=np.uint8)
    quote = c == 0x22
    if b"\\" in encoded:
        at = np.arange(c.size)
        run = at - np.maximum.accumulate(np.where(c == 0x5C, -1, at))  # backslashes ending here
        quote[1:] &= run[:-1] % 2 == 0
    step = _BRACKET_STEP[c]
    step *= 1 - (np.cumsum(quote, dtype=np.int32) & 1)  # 0 inside a string
    return int(np.cumsum(step).max(initial=0)) > MAX_DEPTH


def _shown(value) -> str:
    """A number as an error shows it: whole floats without exponent up to 10^16 (``1000001``,
    not ``1e+06``), others as Python writes them (``1.7e+308``, ``inf``)."""
    if isinstance(value, float):
        if math.isfinite(value) and value.is_integer() and abs(value) < 1e16:
            return str(int(value))
        return repr(value)
    return shown_value(value)


def _is_number(value) -> bool:
    return (isinstance(value, int | float) and not isinstance(value, bool)
            and math.isfinite(value))


def _object(obj, key, problems) -> dict:
    """The optional object field ``key`` (``{}`` when absent or null; a problem, and ``{}``,
    when it is no object)."""
    value = obj.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        problems.append((key, f"must be an object, got {type(value).__name__}"))
        return {}
    return value


def _string(obj, key, problems, *, where: str = "", required: bool = True,
            nullable: bool = False, non_empty: bool = False):
    field = f"{where}{key}"
    if key not in obj or (obj[key] is None and not required):
        if required and not nullable:
            problems.append((field, "required field is missing"))
        return None
    value = obj[key]
    if value is None and nullable:
        return None
    if not isinstance(value, str):
        problems.append((field, f"must be a string{' or null' if nullable else ''}, "
                                f"got {type(value).__name__}"))
        return None
    if non_empty and not value.strip():
        problems.append((field, "must not be empty"))
        return None
    return value


def _parse_line(raw: str, problems):
    if _too_deep(raw):
        problems.append((None, f"arrays and objects nested more than {MAX_DEPTH} deep (a "
                               f"sample needs 5); the line is not read"))
        return None
    try:
        obj = json.loads(raw)
    except json.JSONDecodeError as err:
        problems.append((None, f"not valid JSON ({err.msg} at column {err.colno})"))
        return None
    except (ValueError, RecursionError) as err:  # e.g. an integer of more than 4,300 digits
        problems.append((None, f"not valid JSON ({shown_value(str(err))})"))
        return None
    if not isinstance(obj, dict):
        problems.append((None, f"must be a JSON object, got {type(obj).__name__}"))
        return None
    unknown = sorted(set(obj) - set(FIELDS))
    if unknown:
        problems.append((unknown[0], f"unknown field (known: {', '.join(FIELDS)})"))
    sample_id = _string(obj, "sample_id", problems, non_empty=True)
    query = _string(obj, "query", problems)
    response = _string(obj, "response", problems)
    reference = _string(obj, "reference_answer", problems, required=False, nullable=True)

    relevant = []
    for i, d in enumerate(_list(obj, "relevant_docs", problems)):
        where = f"relevant_docs[{i}]."
        if not isinstance(d, dict):
            problems.append((f"relevant_docs[{i}]", "must be an object {doc_id, text}"))
            continue
        doc_id = _string(d, "doc_id", problems, where=where, non_empty=True)
        text = _string(d, "text", problems, where=where, required=False) or ""
        if doc_id is not None:
            relevant.append(Document(doc_id, text))

    labels = _object(obj, "labels", problems)
    for key in ("scenario", "variant_of"):
        _string(labels, key, problems, where="labels.", required=False, nullable=True)

    retrieved = []
    ids, ranks = set(), set()
    embedding_lengths: list[tuple[str, int]] = []
    for i, r in enumerate(_list(obj, "retrieved", problems)):
        where = f"retrieved[{i}]."
        if not isinstance(r, dict):
            problems.append((f"retrieved[{i}]", "must be an object {doc_id, text, score, "
                                                "rank, metadata}"))
            continue
        doc_id = _string(r, "doc_id", problems, where=where, non_empty=True)
        text = _string(r, "text", problems, where=where, required=False) or ""
        score, rank = r.get("score"), r.get("rank")
        if score is None:
            score = float("nan")
        elif not _is_number(score):
            problems.append((f"{where}score", f"must be a finite number, got "
                                              f"{_shown(score)}"))
            score = float("nan")
        if isinstance(rank, bool) or not isinstance(rank, int) or not 1 <= rank <= MAX_RANK:
            problems.append((f"{where}rank", f"must be an integer in [1, {MAX_RANK:,}] (a "
                                             f"position in the retrieved list), got "
                                             f"{_shown(rank)}"))
            rank = None
        elif rank in ranks:
            problems.append((f"{where}rank", f"must be unique within retrieved; rank {rank} "
                                             f"appears twice"))
        if doc_id is not None and doc_id in ids:
            problems.append((f"{where}doc_id", f"must be unique within retrieved; {doc_id!r} "
                                               f"appears twice"))
        metadata = r.get("metadata") or {}
        if not isinstance(metadata, dict):
            problems.append((f"{where}metadata", "must be an object"))
            metadata = {}
        emb = metadata.get("embedding")
        if emb is not None:
            if not (isinstance(emb, list) and 0 < len(emb) <= MAX_EMBEDDING_LENGTH
                    and all(_is_number(x) for x in emb)):
                problems.append((f"{where}metadata.embedding",
                                 f"must be a non-empty list of at most "
                                 f"{MAX_EMBEDDING_LENGTH:,} finite numbers"))
            else:
                embedding_lengths.append((f"{where}metadata.embedding", len(emb)))
        if doc_id is not None and rank is not None:
            ids.add(doc_id)
            ranks.add(rank)
            retrieved.append(RetrievedDocument(Document(doc_id, text, MappingProxyType(
                metadata)), float(score), rank))

    timings = _object(obj, "timings", problems)
    for key, value in timings.items():
        if value is not None and not (_is_number(value) and 0 <= value <= MAX_SECONDS):
            problems.append((f"timings.{key}", f"must be a number of seconds in [0, "
                                               f"{MAX_SECONDS:,.0f}], got {_shown(value)}"))
    if problems:
        return None
    sample = EvaluationSample(sample_id, query, reference_answer=reference,
                              relevant_docs=tuple(relevant),
                              labels=MappingProxyType(dict(labels)))
    output = SystemOutputs(retrieved=tuple(sorted(retrieved, key=lambda r: r.rank)),
                           response=response, timings=MappingProxyType(dict(timings)))
    return sample, output, embedding_lengths


def _list(obj, key, problems) -> list:
    value = obj.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        problems.append((key, f"must be a list, got {type(value).__name__}"))
        return []
    return value
