"""The RAG JSON Lines loader (contract §12): valid input, every rule's error naming file, line,
field and rule, and the synthetic demo file (regenerated identically by project code)."""

from __future__ import annotations

import json

import pytest

from metrics_core.errors import InputError, InputErrors
from metrics_core.rag.demo import demo_rag_path, make_rag_demo
from metrics_core.rag.loader import RagInputError, load_rag, parse_rag

GOOD = {"sample_id": "q1", "query": "Where?", "reference_answer": "Here",
        "relevant_docs": [{"doc_id": "d1", "text": "It is here."}],
        "labels": {"scenario": None, "variant_of": None},
        "retrieved": [{"doc_id": "d2", "text": "x", "score": 0.4, "rank": 2},
                      {"doc_id": "d1", "text": "It is here.", "score": 0.9, "rank": 1,
                       "metadata": {"embedding": [0.1, 0.2]}}],
        "response": "Here.", "timings": {"end_to_end": 1.5}}


def jsonl(*rows) -> bytes:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows).encode()


def with_(**changes):
    row = json.loads(json.dumps(GOOD))
    for key, value in changes.items():
        row[key] = value
    return row


def test_a_valid_file_loads_in_rank_order():
    data = parse_rag(jsonl(GOOD, "", with_(sample_id="q2", reference_answer=None,
                                           labels={"scenario": "typo", "variant_of": "q1"})))
    assert len(data) == 2
    s, o = data.samples[0], data.outputs[0]
    assert [r.doc.doc_id for r in o.retrieved] == ["d1", "d2"]
    assert o.retrieved[0].doc.metadata["embedding"] == [0.1, 0.2]
    assert s.relevant_docs[0].doc_id == "d1" and o.timings["end_to_end"] == 1.5
    assert data.samples[1].reference_answer is None
    assert data.samples[1].variant_of == "q1" and data.samples[1].scenario == "typo"


def test_optional_fields_may_be_left_out():
    data = parse_rag(jsonl({"sample_id": "a", "query": "q", "response": ""}))
    assert data.samples[0].relevant_docs == () and data.outputs[0].retrieved == ()
    assert data.samples[0].reference_answer is None and data.outputs[0].timings == {}


@pytest.mark.parametrize(("row", "field", "rule"), [
    (with_(sample_id=""), "sample_id", "must not be empty"),
    ({"query": "q", "response": "r"}, "sample_id", "required field is missing"),
    (with_(query=3), "query", "must be a string, got int"),
    (with_(reference_answer=["x"]), "reference_answer", "must be a string or null"),
    (with_(relevant_docs={"doc_id": "d"}), "relevant_docs", "must be a list"),
    (with_(relevant_docs=[{"text": "t"}]), "relevant_docs[0].doc_id",
     "required field is missing"),
    (with_(retrieved=[{"doc_id": "d", "rank": 0}]), "retrieved[0].rank",
     "must be an integer in [1, 1,000,000] (a position in the retrieved list), got 0"),
    (with_(retrieved=[{"doc_id": "d", "rank": 1}, {"doc_id": "e", "rank": 1}]),
     "retrieved[1].rank", "must be unique within retrieved"),
    (with_(retrieved=[{"doc_id": "d", "rank": 1}, {"doc_id": "d", "rank": 2}]),
     "retrieved[1].doc_id", "must be unique within retrieved"),
    (with_(retrieved=[{"doc_id": "d", "rank": 1, "score": "high"}]), "retrieved[0].score",
     "must be a finite number"),
    (with_(retrieved=[{"doc_id": "d", "rank": 1, "metadata": {"embedding": ["a"]}}]),
     "retrieved[0].metadata.embedding",
     "must be a non-empty list of at most 65,536 finite numbers"),
    (with_(timings={"end_to_end": -1}), "timings.end_to_end", "must be a number of seconds"),
    (with_(labels="typo"), "labels", "must be an object"),
    (with_(extra=1), "extra", "unknown field"),
])
def test_each_rule_names_file_line_field_and_rule(row, field, rule):
    with pytest.raises(RagInputError) as info:
        parse_rag(jsonl({"sample_id": "first", "query": "q", "response": "r"}, row),
                  name="run.jsonl")
    err = info.value
    assert (err.file, err.line, err.field) == ("run.jsonl", 2, field)
    assert rule in err.rule
    assert str(err).startswith(f"run.jsonl, line 2, field '{field}': ")


def test_not_json_and_not_an_object():
    with pytest.raises(InputErrors) as info:
        parse_rag(b'{"sample_id": \n[1, 2]\n', name="bad.jsonl")
    lines = str(info.value).splitlines()
    assert lines[0] == "2 problems in the input:"
    assert lines[1].startswith("- bad.jsonl, line 1: not valid JSON")
    assert lines[2] == "- bad.jsonl, line 2: must be a JSON object, got list"


def test_cross_line_rules():
    with pytest.raises(InputErrors) as info:
        parse_rag(jsonl(GOOD, GOOD, with_(sample_id="v", labels={"variant_of": "nobody"})),
                  name="x.jsonl")
    text = str(info.value)
    assert "x.jsonl, line 2, field 'sample_id': sample_id must be unique; 'q1' is also on " \
           "line 1" in text
    assert "x.jsonl, line 3, field 'labels.variant_of': variant_of must name a sample_id " \
           "of the file; 'nobody' is not one" in text


def test_empty_file_binary_file_and_size_limit(tmp_path):
    with pytest.raises(RagInputError, match="holds no sample"):
        parse_rag(b"\n\n", name="e.jsonl")
    with pytest.raises(RagInputError, match="not UTF-8"):
        parse_rag(b"\xff\xfe\x00", name="b.jsonl")
    path = tmp_path / "big.jsonl"
    path.write_bytes(jsonl(GOOD))
    with pytest.raises(RagInputError, match="more than the limit of 10"):
        load_rag(path, max_bytes=10)
    assert isinstance(RagInputError("r", file="f"), InputError)


def test_the_demo_file_is_the_generator_output_and_loads():
    expected = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in make_rag_demo())
    assert demo_rag_path().read_text(encoding="utf-8") == expected
    data = load_rag(demo_rag_path())
    scenarios = {s.scenario for s in data.samples}
    assert scenarios == {None, "paraphrase", "typo", "counterfactual", "unanswerable"}
    assert any(s.reference_answer is None for s in data.samples)
    assert any(o.response == "" for o in data.outputs)
    assert any(not s.relevant_docs for s in data.samples)
    assert len(data) < 60


# ------------------------------------------------------------------ hostile input (issue 33)
def first_error(raw: bytes, name="h.jsonl") -> str:
    with pytest.raises(InputError) as info:
        parse_rag(raw, name=name)
    err = info.value
    return (err.errors[0] if isinstance(err, InputErrors) else err).render()


def test_a_line_separator_inside_a_json_string_is_text_not_a_line_break():
    # U+2028 / U+2029 are valid unescaped in a JSON string; str.splitlines broke the line
    # there ("not valid JSON" on line 1 and 2). \r\n line ends still work.
    row = with_(query="first\u2028second\u2029third", response="a\x1cb\x85c")
    raw = json.dumps(row, ensure_ascii=False).encode() + b"\r\n" + jsonl(with_(sample_id="q2"))
    data = parse_rag(raw)
    assert len(data) == 2
    assert data.samples[0].query == "first\u2028second\u2029third"
    assert data.outputs[0].response == "a\x1cb\x85c"


@pytest.mark.parametrize(("rank", "shown"), [
    (10**30, "1000000000000000000000000000000"), (1_000_001, "1000001"), (-3, "-3"),
    (2.0, "2"), (True, "True")])
def test_a_rank_out_of_range_names_the_line_and_field(rank, shown):
    row = with_(retrieved=[{"doc_id": "d", "rank": rank}])
    assert first_error(jsonl(GOOD, row)) == (
        f"h.jsonl, line 2, field 'retrieved[0].rank': must be an integer in [1, 1,000,000] "
        f"(a position in the retrieved list), got {shown}")


def test_an_integer_too_long_to_read_is_not_valid_json():
    raw = b'{"sample_id": "a", "query": "q", "response": "r", "retrieved": [{"doc_id": ' \
          b'"d", "rank": ' + b"9" * 5000 + b"}]}\n"
    text = first_error(raw)
    assert text.startswith("h.jsonl, line 1: not valid JSON (")


@pytest.mark.parametrize(("value", "shown"), [(1.7e308, "1.7e+308"), (1e6 + 1, "1000001"),
                                              (-0.5, "-0.5"), ("1.2", "'1.2'")])
def test_a_latency_out_of_range_names_the_line_and_field(value, shown):
    assert first_error(jsonl(with_(timings={"end_to_end": value}))) == (
        f"h.jsonl, line 1, field 'timings.end_to_end': must be a number of seconds in "
        f"[0, 1,000,000], got {shown}")


@pytest.mark.parametrize("literal", [b"NaN", b"Infinity", b"-Infinity", b"1e400"])
def test_scores_must_be_finite(literal):
    raw = (b'{"sample_id": "a", "query": "q", "response": "r", "retrieved": '
           b'[{"doc_id": "d", "rank": 1, "score": ' + literal + b"}]}\n")
    assert "line 1, field 'retrieved[0].score': must be a finite number, got" in \
        first_error(raw)


def test_deep_nesting_is_refused_before_parsing_with_the_line_named():
    deep = b"[" * 10_000 + b"]" * 10_000
    raw = jsonl(GOOD) + deep + b"\n"
    assert first_error(raw) == ("h.jsonl, line 2: arrays and objects nested more than 32 "
                                "deep (a sample needs 5); the line is not read")
    inside = with_(sample_id="q2")
    inside["retrieved"][0]["metadata"] = {"x": json.loads("[" * 40 + "]" * 40)}
    assert "line 2: arrays and objects nested more than 32 deep" in first_error(
        jsonl(GOOD, inside))
    # Brackets inside strings are text: 100 of them load.
    data = parse_rag(jsonl(with_(query="[" * 100 + "{" * 100)))
    assert data.samples[0].query.startswith("[[[")


def test_mixed_embedding_lengths_name_both_lines():
    other = with_(sample_id="q2")
    other["retrieved"][1]["metadata"] = {"embedding": [0.1, 0.2, 0.3]}
    assert first_error(jsonl(GOOD, other)) == (
        "h.jsonl, line 2, field 'retrieved[1].metadata.embedding': every metadata.embedding "
        "of the file must have the same length; this one has 3 numbers, the first one "
        "(line 1, field 'retrieved[1].metadata.embedding') has 2")
    within = with_(sample_id="q3")
    within["retrieved"][0]["metadata"] = {"embedding": [1.0]}
    assert first_error(jsonl(within)).startswith(
        "h.jsonl, line 1, field 'retrieved[1].metadata.embedding': every metadata.embedding "
        "of the file must have the same length; this one has 2 numbers, the first one "
        "(line 1, field 'retrieved[0].metadata.embedding') has 1")


def test_the_records_are_valid_json_whatever_the_values():
    from metrics_core.rag.data_model import MetricResult, TargetCategory

    r = MetricResult("x", TargetCategory.LATENCY, float("inf"), {"num_samples": 3,
                                                                 "spread": float("nan")})
    record = r.to_dict()
    assert record["value"] is None and record["defined"] is False
    assert json.loads(json.dumps(record, allow_nan=False))["details"]["spread"] is None


def test_the_depth_check_agrees_with_the_parsed_depth():
    # Random nesting around the limit with strings full of brackets, quotes, backslashes and
    # U+2028 (escaped or not): the check before parsing says what the parsed value's depth is.
    import random

    from metrics_core.rag.loader import MAX_DEPTH, _too_deep

    rng = random.Random(7)

    def text():
        return "".join(rng.choice('ab[]{}"\\ \u2028') for _ in range(rng.randint(0, 8)))

    def nested(d):
        if d == 0:
            return text()
        kids = [nested(d - 1), *(text() if rng.random() < 0.7 else [text()]
                                 for _ in range(rng.randint(0, 2)))]
        rng.shuffle(kids)
        return kids if rng.random() < 0.5 else {text() + str(i): k for i, k in enumerate(kids)}

    def depth(value):
        if isinstance(value, dict):
            value = list(value.values())
        return 1 + max(map(depth, value), default=0) if isinstance(value, list) else 0

    for _ in range(400):
        value = nested(rng.randint(MAX_DEPTH - 8, MAX_DEPTH + 8))
        line = json.dumps(value, ensure_ascii=rng.random() < 0.5)
        assert _too_deep(line) == (depth(value) > MAX_DEPTH), line
