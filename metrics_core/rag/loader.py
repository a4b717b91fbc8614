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
Blank lines are ignored. Every problem is a :class:`RagInputError` naming the file, the line,
the field and the rule; all problems of a file (up to :data:`MAX_ERRORS`) are reported at once.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from metrics_core.errors import InputError, InputErrors
from metrics_core.rag.types import (
    Document,
    EvaluationSample,
    RetrievedDocument,
    SystemOutputs,
)

__all__ = ["FIELDS", "MAX_BYTES", "MAX_ERRORS", "RagData", "RagInputError", "load_rag",
           "parse_rag"]

#: Top-level fields of a line.
FIELDS = ("sample_id", "query", "reference_answer", "relevant_docs", "labels", "retrieved",
          "response", "timings")
#: Problems reported at most (the count says how many lines were bad in all).
MAX_ERRORS = 20
#: Largest file read by default (bytes).
MAX_BYTES = 200 * 1024 * 1024


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
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
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
        if len(errors) >= MAX_ERRORS:
            break
    if not errors:
        errors.extend(_cross_checks(samples, lines, name))
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


def _is_number(value) -> bool:
    return (isinstance(value, int | float) and not isinstance(value, bool)
            and math.isfinite(value))


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
    try:
        obj = json.loads(raw)
    except json.JSONDecodeError as err:
        problems.append((None, f"not valid JSON ({err.msg} at column {err.colno})"))
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

    labels = obj.get("labels")
    if labels is None:
        labels = {}
    elif not isinstance(labels, dict):
        problems.append(("labels", f"must be an object, got {type(labels).__name__}"))
        labels = {}
    else:
        for key in ("scenario", "variant_of"):
            _string(labels, key, problems, where="labels.", required=False, nullable=True)

    retrieved = []
    ids, ranks = set(), set()
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
            problems.append((f"{where}score", f"must be a finite number, got {score!r}"))
            score = float("nan")
        if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
            problems.append((f"{where}rank", f"must be an integer >= 1, got {rank!r}"))
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
        if emb is not None and not (isinstance(emb, list) and emb
                                    and all(_is_number(x) for x in emb)):
            problems.append((f"{where}metadata.embedding",
                             "must be a non-empty list of finite numbers"))
        if doc_id is not None and rank is not None:
            ids.add(doc_id)
            ranks.add(rank)
            retrieved.append(RetrievedDocument(Document(doc_id, text, MappingProxyType(
                metadata)), float(score), rank))

    timings = obj.get("timings")
    if timings is None:
        timings = {}
    elif not isinstance(timings, dict):
        problems.append(("timings", f"must be an object, got {type(timings).__name__}"))
        timings = {}
    else:
        for key, value in timings.items():
            if value is not None and not (_is_number(value) and value >= 0):
                problems.append((f"timings.{key}", f"must be a number of seconds >= 0, got "
                                                   f"{value!r}"))
    if problems:
        return None
    sample = EvaluationSample(sample_id, query, reference_answer=reference,
                              relevant_docs=tuple(relevant),
                              labels=MappingProxyType(dict(labels)))
    output = SystemOutputs(retrieved=tuple(sorted(retrieved, key=lambda r: r.rank)),
                           response=response, timings=MappingProxyType(dict(timings)))
    return sample, output


def _list(obj, key, problems) -> list:
    value = obj.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        problems.append((key, f"must be a list, got {type(value).__name__}"))
        return []
    return value
