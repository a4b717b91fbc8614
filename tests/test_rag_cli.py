"""``metrics-core rag`` (seed 002 §9.1; contract §12): output names, values equal to the API's,
the critic over HTTP, clear errors and atomic writing."""

from __future__ import annotations

import json

import pytest

from metrics_core.cli import main
from metrics_core.rag import loader, suite
from metrics_core.rag.demo import demo_rag_path
from tests.fake_llm_server import fake_llm, misbehaving_llm

#: Output names of seed 002 §9.1 with --ks 1,3,5,10 and the default quantile.
NAMES = (
    [f"recall@{k}" for k in (1, 3, 5, 10)] + [f"precision@{k}" for k in (1, 3, 5, 10)]
    + [f"hit_rate@{k}" for k in (1, 3, 5, 10)] + [f"mrr@{k}" for k in (1, 3, 5, 10)]
    + ["map"] + [f"ndcg@{k}" for k in (1, 3, 5, 10)]
    + ["exact_match", "token_f1", "rouge1_answer", "rouge2_answer", "rougeL_answer", "bleu",
       "evidence_overlap_faithfulness", "bertscore_f1", "embedding_similarity",
       "llm_faithfulness", "llm_answer_quality", "noise_robustness", "negative_rejection_rate",
       "counterfactual_consistency", "mean_latency", "latency_p95", "distinct_2",
       "intra_list_diversity"])


def run(tmp_path, *extra):
    out = tmp_path / "rag.json"
    code = main(["rag", str(demo_rag_path()), "--out", str(out), "--quiet", *extra])
    return code, out


def test_output_names_and_values(tmp_path):
    pytest.importorskip("rouge_score")
    from metrics_core.rag.generation_semantic import semantic_available

    code, out = run(tmp_path)
    assert code == 0
    payload = json.loads(out.read_text())
    records = payload["metrics"]
    assert [r["name"] for r in records] == NAMES
    assert set(records[0]) == {"name", "target", "value", "defined", "details"}
    assert payload["input"]["n_samples"] == len(loader.load_rag(demo_rag_path()))
    data = loader.load_rag(demo_rag_path())
    expected = suite.evaluate(data.samples, data.outputs, suite.default_metrics(semantic=False))
    by_name = {r["name"]: r for r in records}
    semantic = semantic_available()
    cf = by_name["counterfactual_consistency"]
    assert cf["details"]["similarity"] == ("embedding_similarity" if semantic else "token_f1")
    for r in expected:
        if r.name == "counterfactual_consistency" and semantic:
            continue  # by embeddings here, by token F1 in `expected` (test_rag_semantic)
        want = r.to_dict()["value"]  # null for an undefined metric
        assert (by_name[r.name]["value"] is None if want is None
                else by_name[r.name]["value"] == pytest.approx(want, abs=1e-12)), r.name
        assert by_name[r.name]["target"] == r.target.value
    llm = by_name["llm_faithfulness"]
    assert llm["defined"] is False and "no LLM critic" in llm["details"]["skipped_reason"]
    assert llm["value"] is None  # undefined, never a silent 0
    if semantic_available():
        assert by_name["embedding_similarity"]["defined"] is True


def test_other_cut_offs_and_quantiles_and_no_semantic(tmp_path):
    code, out = run(tmp_path, "--ks", "2", "--quantiles", "0.5,0.99", "--no-semantic")
    assert code == 0
    names = [r["name"] for r in json.loads(out.read_text())["metrics"]]
    assert "recall@2" in names and "ndcg@2" in names and "recall@5" not in names
    assert "latency_p50" in names and "latency_p99" in names and "latency_p95" not in names
    assert "bertscore_f1" not in names


def test_critic_url_scores_the_llm_metrics(tmp_path):
    with fake_llm(["0.5"]) as (url, requests):
        code, out = run(tmp_path, "--no-semantic", "--critic-url", url)
    assert code == 0
    by_name = {r["name"]: r for r in json.loads(out.read_text())["metrics"]}
    assert by_name["llm_answer_quality"]["value"] == 0.5
    assert by_name["llm_answer_quality"]["defined"] is True
    assert all(r["body"]["temperature"] == 0 for r in requests)


def test_a_critic_without_scores_exits_2_with_the_reason(tmp_path, capsys):
    (tmp_path / "rag.json").write_text("previous")
    with fake_llm(["no idea"]) as (url, _):
        code, out = run(tmp_path, "--no-semantic", "--critic-url", url)
    assert code == 2
    assert "holds no score" in capsys.readouterr().err
    assert out.read_text() == "previous"  # nothing half-written


def test_bad_file_exits_2_naming_file_line_field(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"sample_id": "a", "query": "q", "response": 5}\n')
    out = tmp_path / "rag.json"
    assert main(["rag", str(bad), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "bad.jsonl, line 1, field 'response': must be a string, got int" in err
    assert "Traceback" not in err and not out.exists()


def test_bad_options_exit_2(tmp_path, capsys):
    assert run(tmp_path, "--quantiles", "1.5")[0] == 2
    assert "--quantiles must be in (0, 1]" in capsys.readouterr().err


def test_a_demo_run_prints_no_third_party_warning(tmp_path, capfd):
    # sacrebleu warned once per sample ("It is recommended to enable `effective_order`"), and
    # transformers drew a "Loading weights" bar per model load, on every demo run.
    pytest.importorskip("sacrebleu")
    code, out = run(tmp_path)
    assert code == 0 and out.exists()
    captured = capfd.readouterr()
    assert captured.err == ""
    assert captured.out == ""  # --quiet


def _llm_and_rest(out):
    records = {r["name"]: r for r in json.loads(out.read_text())["metrics"]}
    llm = [records.pop("llm_faithfulness"), records.pop("llm_answer_quality")]
    return llm, records


def test_an_unreachable_critic_skips_the_llm_metrics_and_writes_the_rest(tmp_path, capsys):
    from tests.app_server import free_port

    url = f"http://127.0.0.1:{free_port()}/v1"
    code, out = run(tmp_path, "--no-semantic", "--critic-url", url, "--critic-retries", "1")
    assert code == 0
    llm, rest = _llm_and_rest(out)
    for r in llm:
        assert r["defined"] is False and r["details"]["num_samples"] == 0
        assert r["details"]["skipped_reason"].startswith(
            f"skipped: the critic at {url}/chat/completions gave no reply after 2 attempts "
            f"(ConnectionRefusedError")
    assert rest["token_f1"]["defined"] is True and rest["recall@1"]["defined"] is True
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("metrics-core: warning: llm_faithfulness, llm_answer_quality "
                          f"skipped: the critic at {url}/chat/completions gave no reply")


@pytest.mark.parametrize(("behaviour", "flags", "reason"), [
    ("drip_body", ("--critic-timeout", "1"), "no complete reply within the deadline of 1 s"),
    ("claims_3gb", (), "announced a reply of 3,000,000,000 bytes, more than the limit of "
                      "1,048,576 bytes"),
    ("endless", ("--critic-max-bytes", "5000"), "sent a reply of more than 5,000 bytes"),
    ("not_json", (), "did not reply with JSON"),
])
def test_a_misbehaving_critic_skips_the_llm_metrics_with_the_reason(tmp_path, capsys,
                                                                     behaviour, flags, reason):
    with misbehaving_llm(behaviour, interval=0.5, drips=20) as (url, stats):
        code, out = run(tmp_path, "--no-semantic", "--critic-url", url, "--critic-retries",
                        "0", *flags)
    assert code == 0
    assert stats["requests"] == 1  # one failure ends the critic's part of the run
    llm, rest = _llm_and_rest(out)
    assert all(r["defined"] is False and reason in r["details"]["skipped_reason"] for r in llm)
    assert rest["bleu"]["defined"] is True
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and reason in err


def test_critic_bounds_in_help_and_checked(tmp_path, capsys):
    from metrics_core.cli.parser import build_parser

    text = " ".join(build_parser()._subparsers._group_actions[0].choices["rag"]
                    .format_help().split())
    assert "--critic-timeout CRITIC_TIMEOUT deadline of one critic request in seconds: " \
           "connect and the whole reply, however slowly it comes (default: 30.0)" in text
    assert "(default: 1048576)" in text and "model name sent to the critic (default: judge)" \
        in text
    for flag, value, message in (
            ("--critic-timeout", "inf", "--critic-timeout must be a number of seconds in "
                                        "(0, 3600], got inf"),
            ("--critic-max-bytes", "0", "--critic-max-bytes must be an integer in "
                                        "[1, 1073741824], got 0"),
            ("--critic-retries", "99", "--critic-retries must be an integer in [0, 10]")):
        code, _ = run(tmp_path, "--no-semantic", "--critic-url", "http://127.0.0.1:9/v1",
                      flag, value)
        assert code == 2
        assert message in capsys.readouterr().err


def readme_rag_example() -> str:
    """The ```jsonl block of README.md's RAG section."""
    import re
    from pathlib import Path

    text = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## RAG evaluation"):]
    section = section[:section.index("\n## ", 1)]
    blocks = re.findall(r"```jsonl\n(.*?)```", section, flags=re.S)
    assert len(blocks) == 1
    return blocks[0]


def test_the_readme_example_is_valid_json_lines_and_runs(tmp_path):
    example = readme_rag_example()
    lines = example.splitlines()
    assert all(isinstance(json.loads(line), dict) for line in lines)  # one object a line
    path = tmp_path / "example.jsonl"
    path.write_text(example, encoding="utf-8")
    data = loader.load_rag(path)
    assert [s.sample_id for s in data.samples] == ["q1", "q1-typo", "q2"]
    assert data.samples[1].variant_of == "q1"  # names a sample_id of the file
    out = tmp_path / "rag.json"
    assert main(["rag", str(path), "--out", str(out), "--quiet", "--no-semantic"]) == 0
    by_name = {r["name"]: r for r in json.loads(out.read_text())["metrics"]}
    assert by_name["recall@1"]["value"] == 1.0
    assert by_name["negative_rejection_rate"]["value"] == 1.0


def test_the_readme_documents_the_variant_of_rule():
    from pathlib import Path

    text = " ".join((Path(__file__).parents[1] / "README.md").read_text(
        encoding="utf-8").split())
    assert "must name the `sample_id` of another line of the same file" in text


@pytest.mark.parametrize(("row", "message"), [
    ({"sample_id": "a", "query": "q", "response": "r",
      "retrieved": [{"doc_id": "d", "rank": 10**30}]},
     "h.jsonl, line 1, field 'retrieved[0].rank': must be an integer in [1, 1,000,000]"),
    ({"sample_id": "a", "query": "q", "response": "r", "timings": {"end_to_end": 1.7e308}},
     "h.jsonl, line 1, field 'timings.end_to_end': must be a number of seconds in "
     "[0, 1,000,000], got 1.7e+308"),
])
def test_out_of_range_numbers_exit_2_naming_the_line(tmp_path, capsys, row, message):
    # Was: an OverflowError traceback (rank), "Out of range float values are not JSON
    # compliant: inf" (end_to_end).
    path = tmp_path / "h.jsonl"
    path.write_text(json.dumps(row) + "\n")
    out = tmp_path / "rag.json"
    assert main(["rag", str(path), "--out", str(out), "--no-semantic"]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and not out.exists()


def test_bidi_controls_in_ids_are_shown_escaped_never_applied(tmp_path, capsys):
    # A right-to-left override (U+202E) or isolate (U+2067) in a sample id or a file name
    # would reverse the rest of the terminal line; the CLI prints them escaped ([U+202E] in a
    # name, \u202e inside the quoted value of a message).
    path = tmp_path / "ids\u202e.jsonl"
    rows = [{"sample_id": "\u202eabc", "query": "q", "response": "r"},
            {"sample_id": "\u202eabc", "query": "q", "response": "r"},
            {"sample_id": "x", "query": "q", "response": "r",
             "labels": {"variant_of": "\u2067zz"}}]
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                    encoding="utf-8")
    assert main(["rag", str(path), "--out", str(tmp_path / "rag.json")]) == 2
    err = capsys.readouterr().err
    assert "ids[U+202E].jsonl, line 2, field 'sample_id': sample_id must be unique; " \
           "'\\u202eabc' is also on line 1" in err
    assert "'\\u2067zz' is not one" in err
    assert not any(c in err for c in "\u202e\u2067")
    # A file that loads: the data keep the characters, the printed lines do not.
    path.write_text(json.dumps(rows[0], ensure_ascii=False) + "\n", encoding="utf-8")
    out = tmp_path / "out\u202e.json"
    assert main(["rag", str(path), "--out", str(out), "--no-semantic"]) == 0
    printed = capsys.readouterr().out
    assert "wrote " in printed and "out[U+202E].json" in printed
    assert "\u202e" not in printed
    assert loader.load_rag(path).samples[0].sample_id == "\u202eabc"
    assert json.loads(out.read_text())["input"]["n_samples"] == 1
