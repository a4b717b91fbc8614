"""The dashboard's RAG page (seed 002; contract §12) with AppTest: an uploaded JSON Lines file,
tables per target category with bootstrap intervals equal to metrics_core's, undefined values
as "—", per-scenario breakdown, robustness pairs, worst samples and a bad upload."""

from __future__ import annotations

import pytest

from dashboard import display, state
from metrics_core.rag import loader, report, suite
from metrics_core.rag.demo import demo_rag_path
from tests.test_app import TIMEOUT, assert_clean, open_app, table, texts


@pytest.fixture(scope="module")
def demo_bytes():
    return demo_rag_path().read_bytes()


@pytest.fixture(scope="module")
def expected():
    data = loader.load_rag(demo_rag_path())
    metrics = suite.default_metrics(semantic=False)
    results = suite.evaluate(data.samples, data.outputs, metrics)
    cis = suite.bootstrap_intervals(results, n_resamples=500)
    return data, metrics, results, cis


def upload_rag(at, name, raw):
    at.number_input(key="rag_bootstrap").set_value(500)
    at.file_uploader(key="rag_file").set_value((name, raw, "application/jsonl"))
    return at.run(timeout=TIMEOUT)


def test_rag_page_without_data_asks_for_a_file():
    at = open_app(page="rag")
    assert_clean(at)
    assert "Upload a RAG evaluation file, or switch on the synthetic demo." in texts(at)


def test_uploaded_file_shows_every_metric_with_intervals(demo_bytes, expected):
    _, _, results, cis = expected
    at = upload_rag(open_app(page="rag"), "my_run.jsonl", demo_bytes)
    assert_clean(at)
    assert "Data: my\\_run.jsonl" in texts(at) or "Data: my_run.jsonl" in texts(at)
    frame = report.results_frame(results, cis)
    for target in dict.fromkeys(frame["target"]):
        shown = table(at, f"rag_table_{target}")
        want = display.dashed(frame[frame["target"] == target].drop(columns="target"),
                              ("value", "ci95_lo", "ci95_hi"))
        assert shown["metric"].tolist() == want["metric"].tolist()
        assert shown["value"].tolist() == want["value"].tolist()
        assert shown["ci95_lo"].tolist() == want["ci95_lo"].tolist()
        assert shown["ci95_hi"].tolist() == want["ci95_hi"].tolist()
    gen = table(at, "rag_table_generation_faithfulness").set_index("metric")
    # No critic: undefined, shown as "—", never as 0.
    assert gen.loc["llm_faithfulness", "value"] == "—"
    assert "no LLM critic" in gen.loc["llm_faithfulness", "note"]
    tf1 = next(r for r in results if r.name == "token_f1")
    shown = table(at, "rag_table_generation_correctness").set_index("metric")
    assert shown.loc["token_f1", "value"] == f"{tf1.value:.4f}"
    lo, hi = cis["token_f1"].lo, cis["token_f1"].hi
    assert lo < tf1.value < hi
    assert shown.loc["token_f1", "ci95_lo"] == f"{lo:.4f}"


def test_scenarios_pairs_and_worst_samples(demo_bytes, expected):
    data, metrics, results, _ = expected
    at = upload_rag(open_app(page="rag"), "run.jsonl", demo_bytes)
    scen = table(at, "rag_scenarios")
    want = report.scenario_frame(data.samples, data.outputs, metrics)
    assert scen.columns.tolist() == want.columns.tolist()
    unans = next(c for c in want.columns if c.startswith("unanswerable"))
    row = want.set_index("metric").loc["recall@1"]
    # Unanswerable questions have no relevant document: recall is undefined there, "—".
    assert scen.set_index("metric").loc["recall@1", unans] == "—"
    assert scen.set_index("metric").loc["recall@1", want.columns[1]] == f"{row.iloc[0]:.4f}"

    pairs = table(at, "rag_pairs")
    assert len(pairs) == len(report.pairs_frame(data.samples, data.outputs))
    at.selectbox(key="rag_pair_scenario").set_value("counterfactual").run(timeout=TIMEOUT)
    pairs = table(at, "rag_pairs")
    assert set(pairs["scenario"]) == {"counterfactual"}
    assert {"base_answer", "variant_answer"} <= set(pairs.columns)

    at.selectbox(key="rag_worst_metric").set_value("recall@1").run(timeout=TIMEOUT)
    at.number_input(key="rag_worst_n").set_value(3).run(timeout=TIMEOUT)
    worst = table(at, "rag_worst")
    recall1 = next(r for r in results if r.name == "recall@1")
    want = report.worst_frame(data.samples, data.outputs, recall1, n=3)
    assert worst["sample_id"].tolist() == want["sample_id"].tolist()
    assert worst["recall@1"].tolist() == ["0.0000"] * 3
    assert_clean(at)


def test_a_bad_upload_shows_file_line_field_and_rule():
    at = upload_rag(open_app(page="rag"), "broken.jsonl",
                    b'{"sample_id": "a", "query": "q", "response": "r", "retrieved": 3}\n')
    assert_clean(at)
    assert [e.value for e in at.error] == [
        "broken.jsonl, line 1, field 'retrieved': must be a list, got int"]


def test_demo_switch(expected):
    at = open_app(page="rag")
    at.toggle(key="rag_demo").set_value(True)
    at.number_input(key="rag_bootstrap").set_value(0)
    at.run(timeout=TIMEOUT)
    assert_clean(at)
    assert any("Synthetic RAG demo data" in t for t in texts(at))
    shown = table(at, "rag_table_retrieval_relevance")
    assert (shown["ci95_lo"] == "—").all()  # intervals off


def test_the_file_and_choices_stay_when_another_page_is_shown(demo_bytes, expected):
    """Another page shown and the RAG page again: the file uploaded is still evaluated, with
    the resamples chosen (the page's uploader emptied by Streamlit); "Forget this file" drops
    it; a removed file is not brought back."""
    _, _, results, cis = expected
    at = upload_rag(open_app(page="rag"), "my_run.jsonl", demo_bytes)
    before = table(at, "rag_table_generation_correctness")
    at.switch_page("app_pages/overview.py").run(timeout=TIMEOUT)
    at.switch_page("app_pages/rag.py").run(timeout=TIMEOUT)
    assert_clean(at)
    infos = " ".join(i.value for i in at.info)
    assert "Showing the file uploaded earlier in this session: my_run.jsonl." in infos
    assert at.number_input(key="rag_bootstrap").value == 500
    after = table(at, "rag_table_generation_correctness")
    assert after.equals(before)
    tf1 = next(r for r in results if r.name == "token_f1")
    assert after.set_index("metric").loc["token_f1", "ci95_lo"] == f"{cis['token_f1'].lo:.4f}"
    at.number_input(key="rag_bootstrap").set_value(0).run(timeout=TIMEOUT)  # still the file
    shown = table(at, "rag_table_generation_correctness").set_index("metric")
    assert shown.loc["token_f1", "value"] == f"{tf1.value:.4f}"
    assert shown.loc["token_f1", "ci95_lo"] == "—"
    at.button(key="rag_forget").click().run(timeout=TIMEOUT)
    assert "Upload a RAG evaluation file, or switch on the synthetic demo." in texts(at)
    assert state.RAG_RESULT not in at.session_state

    at = upload_rag(open_app(page="rag"), "my_run.jsonl", demo_bytes)
    at.file_uploader(key="rag_file").set_value(None).run(timeout=TIMEOUT)  # removed
    assert "Upload a RAG evaluation file, or switch on the synthetic demo." in texts(at)
    at.switch_page("app_pages/overview.py").run(timeout=TIMEOUT)
    at.switch_page("app_pages/rag.py").run(timeout=TIMEOUT)
    assert "Upload a RAG evaluation file, or switch on the synthetic demo." in texts(at)


def _line(**changes) -> bytes:
    import json

    row = {"sample_id": "a", "query": "q", "response": "r",
           "retrieved": [{"doc_id": "d", "rank": 1, "metadata": {"embedding": [1.0, 0.0]}},
                         {"doc_id": "e", "rank": 2, "metadata": {"embedding": [0.0, 1.0]}}],
           "timings": {"end_to_end": 1.0}}
    row.update(changes)
    return json.dumps(row, ensure_ascii=False).encode() + b"\n"


@pytest.mark.parametrize(("raw", "message"), [
    (_line(retrieved=[{"doc_id": "d", "rank": 10**30}]),
     "hostile.jsonl, line 1, field 'retrieved[0].rank': must be an integer in [1, 1,000,000] "
     "(a position in the retrieved list), got 1000000000000000000000000000000"),
    (_line(timings={"end_to_end": 1.7e308}),
     "hostile.jsonl, line 1, field 'timings.end_to_end': must be a number of seconds in "
     "[0, 1,000,000], got 1.7e+308"),
    (_line() + _line(sample_id="b", retrieved=[
        {"doc_id": "d", "rank": 1, "metadata": {"embedding": [1.0, 0.0, 0.0]}},
        {"doc_id": "e", "rank": 2, "metadata": {"embedding": [0.0, 1.0, 0.0]}}]),
     "hostile.jsonl, line 2, field 'retrieved[0].metadata.embedding': every "
     "metadata.embedding of the file must have the same length; this one has 3 numbers, the "
     "first one (line 1, field 'retrieved[0].metadata.embedding') has 2"),
    (b"[" * 10_000 + b"]" * 10_000 + b"\n",
     "hostile.jsonl, line 1: arrays and objects nested more than 32 deep (a sample needs 5); "
     "the line is not read"),
])
def test_hostile_uploads_get_the_clis_message(raw, message):
    # Was: "OverflowError" (rank 10^30), a 309-digit p95 and a download that did nothing
    # (1.7e308 s), "ValueError" (embedding lengths), a message without file or line (depth).
    at = upload_rag(open_app(page="rag"), "hostile.jsonl", raw)
    assert_clean(at)
    shown = [e.value.replace("\\", "") for e in at.error]
    assert len(shown) == 1 and message in shown[0]
    with pytest.raises(KeyError):  # nothing computed: no download
        at.get_by_key("download_rag")


def test_a_line_separator_inside_a_string_loads_and_the_download_is_offered():
    at = upload_rag(open_app(page="rag"), "ok.jsonl", _line(query="one\u2028two"))
    assert_clean(at)
    assert not at.error
    assert at.get_by_key("download_rag") is not None


def test_the_download_is_valid_json_whatever_the_values():
    import json

    from metrics_core.rag.data_model import MetricResult, TargetCategory

    results = [MetricResult("latency_p95", TargetCategory.LATENCY, float("inf"),
                            {"num_samples": 1, "quantile": 0.95}),
               MetricResult("token_f1", TargetCategory.GENERATION_CORRECTNESS, 0.5,
                            {"num_samples": 2})]
    records = json.loads(report.results_json(results))["metrics"]
    assert [(r["value"], r["defined"]) for r in records] == [(None, False), (0.5, True)]
