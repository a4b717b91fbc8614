"""Parquet inputs read into Arrow tables, without pandas (contract §2, formats).

:func:`read_parquet` is the Parquet reading of :func:`metrics_core.inputs.loading.read_table`: the
size limits checked on the file's metadata before anything is decoded, and the ids that repeat on
every candidate row (:data:`REPEATED_IDS`, their aliases and mapped sources) read as Arrow
dictionaries. The column names and their aliases live here too, since both need them;
:mod:`metrics_core.inputs.loading` re-exports :data:`ALIASES`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from metrics_core.errors import InputError
from metrics_core.inputs.limits import Limits

__all__ = ["ALIASES", "ARROW_IDS", "REPEATED_IDS", "dictionary_names", "read_parquet"]

#: Canonical column -> other names accepted for it (matched case-insensitively; spaces and
#: hyphens count as underscores). No name is an alias of two canonical columns.
ALIASES: dict[str, tuple[str, ...]] = {
    "post_id": ("post", "postid", "post_uid", "doc", "thread_id"),
    "criterion": ("criterion_id", "criterion_name", "criteria", "crit", "crit_id"),
    "has_evidence": ("has_evidence_gold", "label", "y_true", "gold_label", "y", "target",
                     "evidence_label"),
    "p_has_evidence": ("prob", "y_prob", "probability", "p", "ne_prob", "p_evidence",
                       "prob_has_evidence", "has_evidence_prob", "pred_prob"),
    "fold": ("fold_id", "cv_fold", "kfold"),
    "split": ("subset", "partition"),
    "n_gold": ("num_gold", "n_gold_total", "gold_count", "n_gold_sentences", "n_evidence"),
    "sent_uid": ("sent_id", "sentence_id", "doc_id", "sentence_uid", "sid", "docno"),
    "score": ("reranker_score", "rerank_score", "logit", "logits", "sentence_score",
              "candidate_score", "relevance_score"),
    "is_gold": ("gold", "relevant", "is_evidence", "is_relevant", "evidence", "gold_sentence"),
    "rank": ("ranking", "position", "rank_position"),
    "sentence": ("text", "sentence_text", "sent_text"),
    "relevance": ("grade", "graded_relevance", "relevance_grade", "rel_grade"),
}

#: Ids repeated on every candidate row of a query: read from Parquet as dictionaries.
REPEATED_IDS = ("post_id", "criterion")
#: Ids read from Parquet as dictionaries and kept as Arrow dictionary chunks by the loader
#: (never one Python or pandas string per row): a candidate's ``sent_uid`` repeats across the
#: criteria of its post, so the file's dictionary pages decode to one small code per row.
ARROW_IDS = ("sent_uid",)

#: The first bytes of every Parquet file.
PARQUET_MAGIC = b"PAR1"


def norm(name) -> str:
    """A column name as names are matched: lower case, spaces and hyphens as underscores."""
    return re.sub(r"[\s\-]+", "_", str(name).strip().lower())


def dictionary_names(mapping: Mapping | None = None, ids=REPEATED_IDS) -> list[str]:
    """The column names read as dictionaries: the repeated ``ids``, their aliases and the
    source columns ``mapping`` (canonical name -> source column) gives them."""
    names = [n for canon in ids for n in (canon, *ALIASES[canon])]
    names += [v for k, v in (mapping or {}).items() if k in ids and v is not None]
    return names


def check_shape(n_rows: int, n_columns: int, name, limits: Limits) -> None:
    if n_columns > limits.max_columns:
        raise InputError(f"{n_columns:,} columns: more than the limit of "
                         f"{limits.max_columns}", file=name,
                         hint="raise Limits.max_columns if the file is genuine", code="too_large")
    if n_rows > limits.max_rows:
        raise InputError(f"{n_rows:,} rows: more than the limit of {limits.max_rows:,}",
                         file=name, hint="raise Limits.max_rows if the file is genuine",
                         code="too_large")


def check_parquet_size(meta, name, limits: Limits) -> None:
    """Rows, columns and uncompressed size of a Parquet file, from its metadata alone."""
    size = sum(meta.row_group(i).total_byte_size for i in range(meta.num_row_groups))
    if size > limits.max_decompressed_bytes:
        raise InputError(f"content exceeds the size limit of "
                         f"{limits.max_decompressed_bytes:,} bytes (after decompression)",
                         file=name, hint=f"the file's metadata records {size:,} bytes",
                         code="too_large")
    check_shape(meta.num_rows, meta.num_columns, name, limits)


def read_parquet(path, data: bytes | None, name, limits: Limits,
                 category_columns: Iterable[str] = ()):
    """The Arrow table of a Parquet file (``path``, or its content ``data``), the limits
    checked on its metadata first; text columns named in ``category_columns`` (matched as
    column names are) come as dictionaries.

    Raises :class:`InputError` for a limit, and Arrow's own errors for a broken file (the
    caller words those).
    """
    import pyarrow as pa
    import pyarrow.parquet as pa_parquet

    def source():
        return path if data is None else pa.BufferReader(data)

    parquet = pa_parquet.ParquetFile(source())
    check_parquet_size(parquet.metadata, name, limits)
    wanted = {norm(c) for c in category_columns}
    as_dictionary = [f.name for f in parquet.schema_arrow if norm(f.name) in wanted
                     and (pa.types.is_string(f.type) or pa.types.is_large_string(f.type))]
    if as_dictionary:
        parquet = pa_parquet.ParquetFile(source(), read_dictionary=as_dictionary)
    return parquet.read()
