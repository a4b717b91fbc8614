"""Loading, column mapping and validation (contract §2) and the structured input errors."""

from __future__ import annotations

import gzip
import io
import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metrics_core.data.dataset import Dataset
from metrics_core.errors import InputError, InputErrors
from metrics_core.inputs.loading import (
    ALIASES,
    EXCLUSION_COLUMNS,
    REQUIRED,
    Loaded,
    load,
    read_table,
    resolve_columns,
)


# ------------------------------------------------------------------------------ fixtures
def tiny():
    """Three posts (ids that look like numbers), two criteria, 2-3 candidates per query."""
    q = pd.DataFrame({
        "post_id": ["007", "007", "010", "010", "9"],
        "criterion": ["A.1", "A.2", "A.1", "A.2", "A.1"],
        "has_evidence": [1, 0, 1, 0, 0],
        "p_has_evidence": [0.9, 0.2, 0.6, 0.4, 0.1],
        "fold": [0, 0, 1, 1, 2],
    })
    c = pd.DataFrame({
        "post_id": ["007"] * 5 + ["010"] * 5 + ["9"] * 2,
        "criterion": ["A.1"] * 3 + ["A.2"] * 2 + ["A.1"] * 3 + ["A.2"] * 2 + ["A.1"] * 2,
        "sent_uid": ["0001", "0002", "0003", "0001", "0002", "01", "02", "03", "01", "02",
                     "1", "2"],
        "score": [2.0, 0.5, 1.0, 0.3, 0.3, -1.0, 3.0, 0.0, 1.5, 2.5, 0.1, 0.2],
        "is_gold": [0, 1, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0],
    })
    return q, c


def assert_same(a: Dataset, b: Dataset) -> None:
    """Two datasets hold the same queries and candidates in the same order."""
    for name in ("post_id", "criterion", "y", "p", "offsets", "score", "is_gold", "sent_uid"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    for name in ("fold", "split", "n_gold_given"):
        x, y = getattr(a, name), getattr(b, name)
        assert (x is None) == (y is None), name
        if x is not None:
            np.testing.assert_array_equal(x, y, err_msg=name)


def errors_of(exc: InputError) -> list[InputError]:
    return list(exc.errors) if isinstance(exc, InputErrors) else [exc]


def only_error(excinfo) -> InputError:
    errs = errors_of(excinfo.value)
    assert len(errs) == 1, [e.render() for e in errs]
    return errs[0]


# --------------------------------------------------------------------------- InputError
def test_input_error_renders_the_contract_example():
    err = InputError("values must be within [0, 1]", file="queries.csv",
                     column="p_has_evidence", rows=[4, 17, 90])
    assert str(err) == ("queries.csv: column 'p_has_evidence': values must be within [0, 1] "
                        "(3 rows, first: 4, 17, 90)")
    assert err.render() == str(err)
    assert isinstance(err, ValueError)
    d = err.to_dict()
    assert d == {"code": "invalid_value", "file": "queries.csv", "column": "p_has_evidence",
                 "rule": "values must be within [0, 1]", "rows": [4, 17, 90], "n_rows": 3,
                 "hint": None, "values": [], "lines": None, "message": str(err)}
    json.dumps(d)


def test_messages_show_the_offending_values_and_name_unknown_keys(tmp_path):
    q, c = tiny()
    q["p_has_evidence"] = [0.9, 1.5, 0.6, -2, 0.1]
    q.to_parquet(tmp_path / "q.parquet")  # no lines in Parquet: data rows
    c.loc[3, "criterion"] = "B.9"
    c.to_csv(tmp_path / "c.csv", index=False)
    with pytest.raises(InputErrors) as excinfo:
        load(tmp_path / "q.parquet", tmp_path / "c.csv")
    rendered = [e.render() for e in excinfo.value]
    assert ("q.parquet: column 'p_has_evidence': values must be within [0, 1] "
            "(2 rows, first: 2 = 1.5, 4 = -2)") in rendered
    unknown = next(e for e in excinfo.value if e.rule.startswith("every candidate"))
    assert unknown.render().startswith(
        f"c.csv: every candidate must belong to a query (line 5: value "
        f"({c.loc[3, 'post_id']!r}, 'B.9'))")


def test_unreadable_files_end_without_a_dangling_colon(tmp_path):
    from metrics_core.inputs.read import failure_reason as _reason

    assert _reason("cannot read the file as PARQUET", ValueError("")) == (
        "cannot read the file as PARQUET")
    assert _reason("cannot read the file", ValueError("bad magic: ")) == (
        "cannot read the file: bad magic")
    for name, data in (("x.parquet", b"PAR1" + bytes(range(256)) * 4),
                       ("x.csv.gz", b"\x1f\x8b" + bytes(64)), ("x.bin", bytes(range(256)))):
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(InputError) as excinfo:
            load(path)
        text = excinfo.value.render()
        assert not text.rstrip().endswith(":"), text


def test_input_error_keeps_first_ten_rows_and_total():
    mask = np.zeros(50, dtype=bool)
    mask[[3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25]] = True
    err = InputError.from_mask(mask, "bad", row_numbers=np.arange(1, 51), file="f.csv",
                               column="x", hint="fix it")
    assert err.rows == [4, 6, 8, 10, 12, 14, 16, 18, 20, 22]
    assert err.n_rows == 12
    assert str(err) == ("f.csv: column 'x': bad (12 rows, first: 4, 6, 8, 10, 12, 14, 16, 18, "
                        "20, 22); fix it")
    single = InputError("bad", file="f.csv", rows=[7])
    assert str(single) == "f.csv: bad (row 7)"
    assert str(InputError("file is empty")) == "file is empty"


def test_input_errors_hold_every_problem():
    a = InputError("r1", file="q.csv", column="x", rows=[1])
    b = InputError("r2", file="q.csv", column="y", rows=[2, 3])
    errs = InputErrors([a, b])
    assert isinstance(errs, InputError) and list(errs) == [a, b] and len(errs) == 2
    assert errs.file == "q.csv"
    assert str(errs).splitlines() == ["2 problems in the input:",
                                      "- q.csv: column 'x': r1 (row 1)",
                                      "- q.csv: column 'y': r2 (2 rows, first: 2, 3)"]
    assert [e["rule"] for e in errs.to_dict()["errors"]] == ["r1", "r2"]
    InputErrors.raise_if_any([])
    with pytest.raises(InputError) as one:
        InputErrors.raise_if_any([a])
    assert one.value is a
    with pytest.raises(InputErrors):
        InputErrors.raise_if_any([a, b])
    with pytest.raises(ValueError, match="errors must not be empty"):
        InputErrors([])


# --------------------------------------------------------------------------- formats
def _write(frame: pd.DataFrame, path, fmt: str) -> None:
    if fmt == "csv":
        frame.to_csv(path, index=False)
    elif fmt == "tsv":
        frame.to_csv(path, index=False, sep="\t")
    elif fmt == "csv.gz":
        frame.to_csv(path, index=False, compression="gzip")
    elif fmt in ("parquet", "pq"):
        frame.to_parquet(path, index=False)
    elif fmt == "jsonl":
        frame.to_json(path, orient="records", lines=True)
    elif fmt == "jsonl.gz":
        frame.to_json(path, orient="records", lines=True, compression="gzip")
    else:
        raise AssertionError(fmt)


FORMATS = ["csv", "tsv", "csv.gz", "parquet", "pq", "jsonl", "jsonl.gz"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_round_trips_the_same_dataset(tmp_path, fmt):
    q, c = tiny()
    reference = load(q, c).dataset
    qp, cp = tmp_path / f"queries.{fmt}", tmp_path / f"candidates.{fmt}"
    _write(q, qp, fmt)
    _write(c, cp, fmt)
    from_path = load(qp, cp)
    assert_same(from_path.dataset, reference)
    assert from_path.dataset.meta["queries_file"] == f"queries.{fmt}"
    # Uploads: bytes with a name, and bytes without one (format from the content).
    from_bytes = load(qp.read_bytes(), cp.read_bytes(), queries_name=qp.name,
                      candidates_name=cp.name)
    assert_same(from_bytes.dataset, reference)
    assert_same(load(qp.read_bytes(), io.BytesIO(cp.read_bytes())).dataset, reference)


def test_ids_stay_strings(tmp_path):
    q, c = tiny()
    path = tmp_path / "q.csv"
    q.to_csv(path, index=False)
    frame = read_table(path)
    assert frame["post_id"].tolist() == ["007", "007", "010", "010", "9"]
    c.to_csv(tmp_path / "c.csv", index=False)
    ds = load(path, tmp_path / "c.csv").dataset
    assert list(ds.posts) == ["007", "010", "9"]
    assert set(ds.sent_uid[ds.offsets[0]:ds.offsets[1]]) == {"0001", "0002", "0003"}
    # A criterion written as a bare number, and ids in a column named by an alias.
    q2 = q.rename(columns={"post_id": "Post"}).assign(criterion=["1", "2", "1", "2", "1"])
    c2 = c.assign(criterion=c["criterion"].str[-1])
    q2.to_csv(path, index=False)
    c2.to_csv(tmp_path / "c.csv", index=False)
    ds = load(path, tmp_path / "c.csv").dataset
    assert ds.criteria == ("1", "2") and list(ds.posts) == ["007", "010", "9"]


def test_id_column_mapped_by_hand_stays_string(tmp_path):
    q, c = tiny()
    q.rename(columns={"post_id": "thread_key"}).to_csv(tmp_path / "q.csv", index=False)
    c.rename(columns={"post_id": "thread_key"}).to_csv(tmp_path / "c.csv", index=False)
    loaded = load(tmp_path / "q.csv", tmp_path / "c.csv", mapping={"post_id": "thread_key"})
    assert list(loaded.dataset.posts) == ["007", "010", "9"]
    assert loaded.column_map["queries"]["post_id"] == "thread_key"


def test_read_table_sniffs_format_without_extension(tmp_path):
    q, _ = tiny()
    for fmt in ("csv", "csv.gz", "parquet", "jsonl", "tsv"):
        path = tmp_path / f"blob_{fmt.replace('.', '_')}"
        _write(q, path, fmt)
        frame = read_table(path.read_bytes())
        assert frame["post_id"].astype(str).tolist() == ["007", "007", "010", "010", "9"], fmt
        assert frame["p_has_evidence"].tolist() == [0.9, 0.2, 0.6, 0.4, 0.1], fmt


@pytest.mark.parametrize(("content", "name", "rule"), [
    (b"", "empty.csv", "file is empty"),
    (b"  \n\n", "blank.csv", "file is empty"),
    (b"post_id,criterion\n", "header.csv", "file has no data rows"),
    (b"PAR1 this is not parquet", "bad.parquet", "cannot read the file as PARQUET"),
    (gzip.compress(b"a,b\n1,2\n")[:15], "cut.csv.gz", "cannot read"),
    (b'{"a": 1}\n{"a": \n', "broken.jsonl", "cannot read"),
])
def test_unreadable_files_name_the_file(content, name, rule):
    with pytest.raises(InputError) as excinfo:
        read_table(content, name=name)
    assert excinfo.value.file == name
    assert rule in excinfo.value.rule


def test_missing_file_and_bad_source_type(tmp_path):
    with pytest.raises(InputError, match=r"nope\.csv: file not found"):
        read_table(tmp_path / "nope.csv", name="nope.csv")
    with pytest.raises(TypeError, match="source must be a path, bytes"):
        read_table(12)


def test_semicolon_csv_and_duplicate_header():
    frame = read_table(b"post_id;criterion\n007;A.1\n", name="x.csv")
    assert frame.to_dict("list") == {"post_id": ["007"], "criterion": ["A.1"]}
    with pytest.raises(InputError, match=r"dup\.csv: duplicate column names: a"):
        read_table(b"a,a,b\n1,2,3\n", name="dup.csv")


def test_jsonl_with_mixed_id_types_keeps_values():
    data = b'{"post_id": "007", "v": 1}\n{"post_id": 8, "v": 2}\n'
    frame = read_table(data, name="m.jsonl")
    assert [str(v) for v in frame["post_id"]] == ["007", "8"]


# --------------------------------------------------------------------------- aliases
def test_aliases_are_unambiguous():
    seen: dict[str, str] = {}
    for canon, names in ALIASES.items():
        for name in (canon, *names):
            key = name.lower()
            assert key not in seen, f"{name} is an alias of {seen[key]} and {canon}"
            seen[key] = canon
    for kind, required in REQUIRED.items():
        assert all(c in ALIASES for c in required), kind


def test_aliases_and_case_are_recognised():
    q, c = tiny()
    q2 = q.rename(columns={"post_id": "POST", "criterion": "Criterion_ID",
                           "has_evidence": "has_evidence_gold", "p_has_evidence": "y_prob",
                           "fold": "CV Fold"})
    c2 = c.rename(columns={"post_id": "post", "criterion": "criterion_name",
                           "sent_uid": "sent_id", "score": "Reranker_Score", "is_gold": "gold"})
    loaded = load(q2, c2)
    assert_same(loaded.dataset, load(q, c).dataset)
    assert loaded.column_map == {
        "queries": {"post_id": "POST", "criterion": "Criterion_ID",
                    "has_evidence": "has_evidence_gold", "p_has_evidence": "y_prob",
                    "fold": "CV Fold"},
        "candidates": {"post_id": "post", "criterion": "criterion_name", "sent_uid": "sent_id",
                       "score": "Reranker_Score", "is_gold": "gold"}}
    assert loaded.warnings == []


def test_canonical_name_wins_over_an_alias_and_extra_columns_are_reported():
    q, c = tiny()
    q2 = q.assign(label=1 - q["has_evidence"], notes="x")
    loaded = load(q2, c)
    assert loaded.column_map["queries"]["has_evidence"] == "has_evidence"
    np.testing.assert_array_equal(loaded.dataset.y, load(q, c).dataset.y)
    # a queries table's extra columns may name cohorts (contract §9): not called unused
    assert loaded.warnings == ["queries: column(s) not used by the metrics (cohort columns may "
                               "be chosen among them): label, notes"]
    assert load(q.assign(**{"0": 1}).rename(columns={"0": 0}), c).warnings == [
        "queries: column(s) not used by the metrics (cohort columns may be chosen among them): "
        "0"]
    assert load(q, c.assign(reviewer="x")).warnings == [
        "candidates: column(s) not used: reviewer"]


def test_two_aliases_for_one_column_are_ambiguous():
    q, c = tiny()
    q2 = q.rename(columns={"has_evidence": "label"}).assign(y_true=q["has_evidence"])
    with pytest.raises(InputError) as excinfo:
        load(q2, c)
    err = only_error(excinfo)
    assert err.rule == "several columns match 'has_evidence': label, y_true"
    assert err.file == "queries" and "column mapping" in err.hint


def test_explicit_mapping_wins_and_resolves_ambiguity():
    q, c = tiny()
    q2 = q.rename(columns={"has_evidence": "label", "p_has_evidence": "prob"}).assign(
        y_true=q["has_evidence"], calibrated=q["p_has_evidence"] / 2)
    loaded = load(q2, c, mapping={"has_evidence": "y_true", "p_has_evidence": "calibrated"})
    np.testing.assert_allclose(loaded.dataset.p, load(q, c).dataset.p / 2)
    assert loaded.column_map["queries"]["p_has_evidence"] == "calibrated"
    assert "label" in loaded.warnings[0] and "prob" in loaded.warnings[0]


def test_mapping_per_table_and_mapping_to_nothing():
    q, c = tiny()
    q2 = q.rename(columns={"post_id": "q_post"})
    c2 = c.rename(columns={"post_id": "c_post", "score": "s"})
    mapping = {"queries": {"post_id": "q_post", "fold": None},
               "candidates": {"post_id": "c_post", "score": "s"}}
    loaded = load(q2, c2, mapping=mapping)
    assert loaded.dataset.fold is None
    assert loaded.column_map["candidates"]["score"] == "s"
    assert_same(loaded.dataset, load(q.drop(columns="fold"), c).dataset)
    # A flat mapping applies to each table that has the source column.
    flat = load(q2.rename(columns={"q_post": "pid"}), c2.rename(columns={"c_post": "pid"}),
                mapping={"post_id": "pid", "score": "s"})
    assert_same(flat.dataset, load(q, c).dataset)


def test_mapping_to_a_missing_column_is_an_error():
    q, c = tiny()
    with pytest.raises(InputError) as excinfo:
        load(q, c, mapping={"score": "reranker"})
    err = only_error(excinfo)
    assert (err.file, err.column, err.rule) == ("candidates", "reranker",
                                                "mapped column not found")
    with pytest.raises(ValueError, match="unknown canonical column"):
        load(q, c, mapping={"probability_of_rain": "x"})
    with pytest.raises(InputError, match="required column is mapped to nothing"):
        resolve_columns(q, "queries", mapping={"p_has_evidence": None})
    with pytest.raises(InputError, match="one column cannot be mapped to two"):
        resolve_columns(q, "queries", mapping={"p_has_evidence": "fold", "fold": "fold"})


def test_missing_required_columns_are_listed_with_aliases():
    q, c = tiny()
    with pytest.raises(InputErrors) as excinfo:
        load(q.drop(columns=["p_has_evidence", "has_evidence"]), c.drop(columns="is_gold"))
    errs = list(excinfo.value)
    assert [(e.file, e.column, e.rule) for e in errs] == [
        ("queries", "has_evidence", "required column is missing"),
        ("queries", "p_has_evidence", "required column is missing"),
        ("candidates", "is_gold", "required column is missing")]
    assert "columns found: post_id, criterion, fold" in errs[1].hint
    assert "y_prob" in errs[1].hint and "prob" in errs[1].hint


def test_resolve_columns_renames_and_orders():
    frame = pd.DataFrame({"extra": [1], "PROB": [0.5], "label": [1], "criterion_id": ["A"],
                          "post": ["7"]})
    out = resolve_columns(frame, "queries")
    assert list(out.columns) == ["post_id", "criterion", "has_evidence", "p_has_evidence"]
    assert out.iloc[0].tolist() == ["7", "A", 1, 0.5]
    with pytest.raises(ValueError, match="kind must be one of"):
        resolve_columns(frame, "posts")


# --------------------------------------------------------------------------- validation
@pytest.mark.parametrize(("column", "values", "rule", "rows"), [
    ("has_evidence", [1, 0, 2, 0.5, 1], "values must be 0 or 1", [3, 4]),
    ("has_evidence", ["1", "0", "yes", "true", None], "values must be 0 or 1", [3, 5]),
    ("p_has_evidence", [0.5, 1.2, -0.1, 1.0, 0.0], "values must be within [0, 1]", [2, 3]),
    ("p_has_evidence", [0.5, "abc", 0.1, "0.3", "x"], "values must be numbers", [2, 5]),
    ("p_has_evidence", [0.5, np.inf, 0.1, 0.3, 0.2], "values must be within [0, 1]", [2]),
    ("fold", [0, 1.5, 1, "a", 2], "values must be integers", [2, 4]),
    ("fold", [0, None, 1, 1, 2], "values must be integers", [2]),
    ("n_gold", [1, -1, 2, 0, 0], "values must be non-negative integers", [2]),
    ("post_id", ["007", "", "010", "010", None], "values must not be empty", [2, 5]),
    ("split", ["A", "B", None, "A", "B"], "values must not be empty", [3]),
])
def test_query_value_rules_name_the_rows(column, values, rule, rows):
    q, c = tiny()
    q[column] = pd.Series(values, dtype=object)
    if column == "post_id":  # keep the candidates matching the queries that remain valid
        c = c[c["post_id"] != "9"]
    if column == "n_gold":
        q["n_gold"] = pd.Series(values, dtype=object)
        q.loc[[0, 2], "n_gold"] = [1, 2]  # not below the gold found
    with pytest.raises(InputError) as excinfo:
        load(q, c)
    err = only_error(excinfo)
    assert (err.file, err.column, err.rule, err.rows) == ("queries", column, rule, rows)
    assert err.n_rows == len(rows)


@pytest.mark.parametrize(("column", "values", "rule", "rows"), [
    ("is_gold", [0, 1, 0, 0, 0, 1, 0, 1, 0, 0, 0, 3], "values must be 0 or 1", [12]),
    ("score", [2.0, 0.5, 1.0, "x", 0.3, -1.0, 3.0, 0.0, 1.5, 2.5, 0.1, 0.2],
     "values must be numbers", [4]),
    ("score", [2.0, 0.5, 1.0, np.inf, 0.3, -1.0, 3.0, 0.0, 1.5, 2.5, 0.1, -np.inf],
     "values must be finite", [4, 12]),
    ("rank", [1, 2, 3, 1, 0, 1, 2, 3, 1, 2.5, 1, 2], "values must be positive integers",
     [5, 10]),
    ("rank", [1, 2, 2, 1, 2, 1, 2, 3, 1, 2, 1, 1], "values must be unique within a query",
     [2, 3, 11, 12]),
    ("sent_uid", ["0001", "0002", "0001", "0001", "0002", "01", "02", "03", "01", "02", "1",
                  "2"], "(post_id, criterion, sent_uid) must be unique", [1, 3]),
    ("relevance", [0, 1, 0, 0, 0, 2, 0, 1, 0, 0, -1, 0], "values must be non-negative integers",
     [11]),
])
def test_candidate_value_rules_name_the_rows(column, values, rule, rows):
    q, c = tiny()
    c[column] = pd.Series(values, dtype=object)
    with pytest.raises(InputError) as excinfo:
        load(q, c)
    err = only_error(excinfo)
    expected_column = None if column == "sent_uid" else column
    assert (err.file, err.column, err.rule, err.rows) == ("candidates", expected_column, rule,
                                                          rows)


def test_binary_columns_accept_the_usual_spellings():
    q, c = tiny()
    base = load(q, c).dataset
    for values in ([True, False, True, False, False], ["1", "0", "1", "0", "0"],
                   ["TRUE", "false", " true ", "False", "0"], [1.0, 0.0, 1.0, 0.0, 0.0],
                   ["1.0", "0.0", "1", "0", "0"]):
        ds = load(q.assign(has_evidence=pd.Series(values, dtype=object)), c).dataset
        np.testing.assert_array_equal(ds.y, base.y)
    ds = load(q, c.assign(is_gold=c["is_gold"].astype(bool))).dataset
    np.testing.assert_array_equal(ds.is_gold, base.is_gold)


def test_duplicate_queries_and_orphan_candidates():
    q, c = tiny()
    q2 = pd.concat([q, q.iloc[[1]]], ignore_index=True)
    with pytest.raises(InputError) as excinfo:
        load(q2, c)
    err = only_error(excinfo)
    assert (err.rule, err.rows) == ("(post_id, criterion) must be unique", [2, 6])
    c2 = c.copy()
    c2.loc[[3, 10], "criterion"] = "A.3"
    c2.loc[6, "post_id"] = "7"
    with pytest.raises(InputError) as excinfo:
        load(q, c2)
    err = only_error(excinfo)
    assert (err.file, err.rule, err.rows) == ("candidates",
                                              "every candidate must belong to a query",
                                              [4, 7, 11])


def test_n_gold_below_gold_found():
    q, c = tiny()
    q["n_gold"] = [1, 0, 1, 0, 0]  # query 010/A.1 has two gold candidates
    with pytest.raises(InputError) as excinfo:
        load(q, c)
    err = only_error(excinfo)
    assert (err.column, err.rule, err.rows) == (
        "n_gold", "values must not be smaller than the gold candidates found", [3])
    q["n_gold"] = [1, 0, 4, 0, 0]
    np.testing.assert_array_equal(load(q, c).dataset.n_gold, [1, 0, 4, 0, 0])


def test_every_problem_is_reported_at_once(tmp_path):
    q, c = tiny()
    q["p_has_evidence"] = [0.9, 1.5, 0.6, 0.4, 0.1]
    q["has_evidence"] = [1, 0, 7, 0, 0]
    c["score"] = [2.0, 0.5, 1.0, 0.3, 0.3, -1.0, 3.0, 0.0, 1.5, 2.5, np.inf, 0.2]
    q.rename(columns={"p_has_evidence": "prob"}).to_csv(tmp_path / "queries.csv", index=False)
    c.to_csv(tmp_path / "cands.csv.gz", index=False, compression="gzip")
    with pytest.raises(InputErrors) as excinfo:
        load(tmp_path / "queries.csv", tmp_path / "cands.csv.gz")
    rendered = [e.render() for e in excinfo.value]
    # Line numbers as an editor counts them (the header is line 1), with the bad values.
    assert rendered == [
        "queries.csv: column 'has_evidence': values must be 0 or 1 (line 4: value 7)",
        "queries.csv: column 'prob': values must be within [0, 1] (line 3: value 1.5)",
        "cands.csv.gz: column 'score': values must be finite (line 12: value inf)",
    ]
    assert [e.rows for e in excinfo.value] == [[3], [2], [11]]  # data rows, header excluded
    assert excinfo.value.file is None


# --------------------------------------------------------------------------- exclusions
def test_missing_probability_and_score_are_excluded_with_reasons():
    q, c = tiny()
    q["p_has_evidence"] = [0.9, np.nan, 0.6, 0.4, 0.1]  # 007/A.2 and its 2 candidates
    c["score"] = [2.0, np.nan, 1.0, 0.3, 0.3, -1.0, 3.0, 0.0, 1.5, 2.5, 0.1, 0.2]
    loaded = load(q, c, queries_name="q.csv", candidates_name="c.csv")
    ex = loaded.exclusions
    assert tuple(ex.columns) == EXCLUSION_COLUMNS
    assert ex.to_dict("records") == [
        {"file": "q.csv", "row": 2, "post_id": "007", "criterion": "A.2", "sent_uid": "",
         "column": "p_has_evidence", "reason": "p_has_evidence is missing: query excluded"},
        {"file": "c.csv", "row": 4, "post_id": "007", "criterion": "A.2", "sent_uid": "0001",
         "column": "p_has_evidence",
         "reason": "its query is excluded (p_has_evidence is missing)"},
        {"file": "c.csv", "row": 5, "post_id": "007", "criterion": "A.2", "sent_uid": "0002",
         "column": "p_has_evidence",
         "reason": "its query is excluded (p_has_evidence is missing)"},
        {"file": "c.csv", "row": 2, "post_id": "007", "criterion": "A.1", "sent_uid": "0002",
         "column": "score", "reason": "score is missing: candidate excluded"},
    ]
    assert (loaded.n_excluded_queries, loaded.n_excluded_candidates) == (1, 3)
    ds = loaded.dataset
    assert ds.n_queries == 4 and ds.n_candidates == 12 - 3
    assert "0002" not in set(ds.sent_uid[ds.offsets[0]:ds.offsets[1]])
    assert ds.meta["n_excluded_queries"] == 1 and ds.meta["n_excluded_candidates"] == 3
    assert loaded.warnings == [
        "1 queries excluded from q.csv: p_has_evidence is missing (with their 2 candidates); "
        "see the exclusions",
        "1 candidates excluded from c.csv: score is missing; see the exclusions",
        "1 excluded candidates are gold: without an n_gold column they no longer count in "
        "|Gold|"]


def test_empty_and_nan_text_in_csv_are_missing_values(tmp_path):
    q, c = tiny()
    text = q.to_csv(index=False).replace("007,A.2,0,0.2", "007,A.2,0,").replace(
        "9,A.1,0,0.1", "9,A.1,0,NaN")
    (tmp_path / "q.csv").write_text(text)
    loaded = load(tmp_path / "q.csv", c)
    assert loaded.exclusions["row"].tolist()[:2] == [2, 5]
    assert set(loaded.exclusions["reason"]) == {
        "p_has_evidence is missing: query excluded",
        "its query is excluded (p_has_evidence is missing)"}


def test_all_queries_excluded_is_an_error():
    q, c = tiny()
    with pytest.raises(InputError, match="every query has an empty p_has_evidence"):
        load(q.assign(p_has_evidence=np.nan), c)


def test_clean_input_has_no_exclusions_or_warnings():
    loaded = load(*tiny())
    assert isinstance(loaded, Loaded)
    assert len(loaded.exclusions) == 0 and tuple(loaded.exclusions.columns) == EXCLUSION_COLUMNS
    assert loaded.warnings == []
    assert loaded.dataset.meta == {"queries_file": "queries", "candidates_file": "candidates",
                                   "layout": "two tables", "n_excluded_queries": 0,
                                   "n_excluded_candidates": 0}


def test_empty_optional_column_is_ignored_with_a_warning():
    q, c = tiny()
    loaded = load(q.assign(split=None, fold=np.nan), c)
    assert loaded.dataset.split is None and loaded.dataset.fold is None
    assert loaded.warnings == ["queries: column 'fold' has no values and is ignored",
                               "queries: column 'split' has no values and is ignored"]
    assert "fold" not in loaded.column_map["queries"]


def test_dataset_content_matches_the_input():
    """Hand-checked: 007/A.1 ranks 0001 (2.0), 0003 (1.0), 0002 (0.5); 007/A.2 ties at 0.3
    and is ordered by sent_uid descending (contract §3)."""
    ds = load(*tiny()).dataset
    assert list(ds.post_id) == ["007", "007", "010", "010", "9"]
    np.testing.assert_array_equal(ds.offsets, [0, 3, 5, 8, 10, 12])
    assert list(ds.sent_uid[:5]) == ["0001", "0003", "0002", "0002", "0001"]
    np.testing.assert_array_equal(ds.n_gold, [1, 0, 2, 0, 0])
    np.testing.assert_array_equal(ds.fold, [0, 0, 1, 1, 2])


# --------------------------------------------------------------------------- long tables
def long_table(q: pd.DataFrame, c: pd.DataFrame) -> pd.DataFrame:
    return c.merge(q, on=["post_id", "criterion"], how="right")


def test_long_table_splits_into_the_same_dataset(tmp_path):
    q, c = tiny()
    long = long_table(q, c).sample(frac=1.0, random_state=3)
    loaded = load(long)
    assert_same(loaded.dataset, load(q, c).dataset)
    assert loaded.dataset.meta["layout"] == "long table"
    assert set(loaded.column_map["queries"]) == {"post_id", "criterion", "has_evidence",
                                                 "p_has_evidence", "fold"}
    assert set(loaded.column_map["candidates"]) == {"post_id", "criterion", "sent_uid",
                                                    "score", "is_gold"}
    long.to_csv(tmp_path / "long.csv", index=False)
    assert_same(load(tmp_path / "long.csv").dataset, loaded.dataset)


def test_long_table_with_queries_without_candidates(tmp_path):
    q, c = tiny()
    c = c[c["post_id"] != "9"]  # query 9/A.1 has no candidates: one row, empty sent_uid
    long = long_table(q, c)
    assert long["sent_uid"].isna().sum() == 1
    long.to_csv(tmp_path / "long.csv", index=False)
    for source in (long, tmp_path / "long.csv"):
        ds = load(source).dataset
        np.testing.assert_array_equal(ds.n_cand, [3, 2, 3, 2, 0])
        assert_same(ds, load(q, c).dataset)


def test_long_table_with_nested_mapping_and_sentence_text(tmp_path):
    q, c = tiny()
    long = long_table(q, c).rename(columns={"sent_uid": "line", "p_has_evidence": "gate"})
    long["sentence"] = [f"text, with comma\nand a line break {i}" for i in range(len(long))]
    long.to_csv(tmp_path / "long.csv", index=False)
    loaded = load(tmp_path / "long.csv", mapping={"queries": {"p_has_evidence": "gate"},
                                                  "candidates": {"sent_uid": "line"}})
    assert_same(loaded.dataset, load(q, c).dataset)
    assert loaded.column_map["candidates"]["sent_uid"] == "line"
    assert loaded.dataset.sentence[0].startswith("text, with comma\nand a line break")


def test_long_table_per_query_columns_must_be_constant():
    q, c = tiny()
    long = long_table(q, c)
    long.loc[[1, 7], "p_has_evidence"] = 0.55
    long.loc[4, "has_evidence"] = 1
    with pytest.raises(InputErrors) as excinfo:
        load(long, queries_name="long.csv")
    assert [(e.column, e.rows) for e in excinfo.value] == [("has_evidence", [5]),
                                                           ("p_has_evidence", [2, 8])]
    assert all(e.rule == "values must be the same on every row of a query (long table)"
               for e in excinfo.value)


def test_long_table_excludes_nan_probability_per_query():
    q, c = tiny()
    q["p_has_evidence"] = [0.9, 0.2, np.nan, 0.4, 0.1]
    loaded = load(long_table(q, c), queries_name="long.csv")
    assert loaded.exclusions["row"].tolist() == [6, 6, 7, 8]
    assert loaded.exclusions["sent_uid"].tolist() == ["", "01", "02", "03"]
    assert loaded.dataset.n_queries == 4


def test_single_table_without_candidates_is_queries_only():
    q, _ = tiny()
    loaded = load(q)
    ds = loaded.dataset
    assert ds.n_queries == 5 and ds.n_candidates == 0
    assert ds.meta["layout"] == "queries only"
    assert "no candidates" in loaded.warnings[0]
    with pytest.raises(InputError) as excinfo:
        load(pd.concat([q, q.iloc[[0]]]))
    err = only_error(excinfo)
    assert err.rows == [1, 6] and "sent_uid" in err.hint


# --------------------------------------------------------------------------- properties
@settings(max_examples=30, deadline=None)
@given(st.randoms(use_true_random=False))
def test_row_order_does_not_change_the_dataset(rnd):
    q, c = tiny()
    qi, ci = list(range(len(q))), list(range(len(c)))
    rnd.shuffle(qi)
    rnd.shuffle(ci)
    assert_same(load(q.iloc[qi], c.iloc[ci]).dataset, load(q, c).dataset)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from([np.nan, 1.5, -0.2, "abc"]), min_size=60, max_size=60),
       st.lists(st.booleans(), min_size=60, max_size=60))
def test_planted_bad_probabilities_are_reported_exactly(kinds, planted):
    """Every planted value lands in exactly one of: error rows, exclusions."""
    n = 60
    p = pd.Series(np.linspace(0.0, 1.0, n), dtype=object)
    for i in range(n):
        if planted[i]:
            p[i] = kinds[i]
    q = pd.DataFrame({"post_id": [f"p{i}" for i in range(n)], "criterion": "A.1",
                      "has_evidence": np.arange(n) % 2, "p_has_evidence": p})
    kind_of = {i: kinds[i] for i in range(n) if planted[i]}
    out_of_range = [i + 1 for i, k in kind_of.items() if isinstance(k, float) and k == k]
    not_number = [i + 1 for i, k in kind_of.items() if k == "abc"]
    missing = [i + 1 for i, k in kind_of.items() if isinstance(k, float) and k != k]
    expected = {}
    if not_number:
        expected["values must be numbers"] = not_number
    if out_of_range:
        expected["values must be within [0, 1]"] = out_of_range
    if expected:
        with pytest.raises(InputError) as excinfo:
            load(q)
        got = {e.rule: (e.rows, e.n_rows) for e in errors_of(excinfo.value)}
        assert got == {k: (v[:10], len(v)) for k, v in expected.items()}
    elif len(missing) == n:
        with pytest.raises(InputError, match="every query"):
            load(q)
    else:
        loaded = load(q)
        assert loaded.exclusions["row"].tolist() == missing
        assert loaded.dataset.n_queries == n - len(missing)
