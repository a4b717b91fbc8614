"""The adjudication file (contract §14): its rules, each broken one named with the file, the
line, the column and the rule; the corrected gold applied to the data set; the adjudicated
records equal to a fresh run on a copy of the files with the labels edited, the original
records unchanged."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metrics_core.config import EvalConfig
from metrics_core.errors import InputError
from metrics_core.evaluation.adjudicated import (
    adjudicated_dataset,
    evaluate_adjudicated,
    with_adjudication,
)
from metrics_core.inputs.adjudications import (
    COLUMNS,
    adjudications_of,
    read_adjudications,
    to_csv,
)
from metrics_core.run import open_run
from tests.conftest import random_frames

# Five queries, one criterion. At τ = 0.5: TP = p1, p2; FN = p3; TN = p4, p5.
QUERIES = pd.DataFrame({"post_id": ["p1", "p2", "p3", "p4", "p5"], "criterion": "A",
                        "has_evidence": [1, 1, 1, 0, 0],
                        "p_has_evidence": [0.9, 0.8, 0.3, 0.2, 0.1]})
CANDIDATES = pd.DataFrame({
    "post_id": ["p1", "p1", "p2", "p2", "p3", "p3", "p4", "p5"], "criterion": "A",
    "sent_uid": ["s1", "s2", "s1", "s2", "s1", "s2", "s1", "s1"],
    "score": [0.9, 0.1, 0.9, 0.1, 0.9, 0.1, 0.5, 0.5],
    "is_gold": [1, 0, 0, 1, 1, 0, 0, 0]})


@pytest.fixture(scope="module")
def toy():
    return open_run(QUERIES, CANDIDATES)


def adj_csv(*rows: str, header: str = ",".join(COLUMNS)) -> bytes:
    return ("\n".join([header, *rows]) + "\n").encode()


def test_a_label_error_corrected_changes_sensitivity_by_a_known_amount(toy):
    # p3 (p = 0.3, screened out) is a labelling error: without evidence. Sensitivity at τ = 0.5
    # goes from TP / (TP + FN) = 2 / 3 to 2 / 2; specificity from 2 / 2 to 3 / 3.
    adj = read_adjudications(adj_csv("p3,A,,label_error,0,,Dr A,no evidence in the post,"
                                     "2026-05-04T10:30:00Z"), toy.dataset, name="adj.csv")
    cfg = EvalConfig(bootstrap=0, threshold=0.5)
    run = evaluate_adjudicated(toy.evaluator, adj, cfg)
    assert run.original.record("sensitivity").value == pytest.approx(2 / 3)
    assert run.adjudicated.record("sensitivity").value == pytest.approx(1.0)
    assert run.original.record("sensitivity").n == 3 and run.adjudicated.record(
        "sensitivity").n == 2
    assert run.adjudicated.record("specificity").value == pytest.approx(1.0)
    assert run.adjudicated.record("specificity").n == 3
    diff = run.differences().set_index("name")
    assert diff.loc["sensitivity", "difference"] == pytest.approx(1 / 3)
    assert diff.loc["sensitivity", "original"] == pytest.approx(2 / 3)
    # The original evaluation is the one computed without verdicts.
    assert run.original.to_dict()["metrics"] == toy.evaluator.evaluate(cfg).to_dict()["metrics"]
    block = run.to_dict()
    assert block["verdicts"] == {"label_error": 1, "model_error": 0, "ambiguous": 0,
                                 "acceptable": 0}
    assert block["changed_queries"] == [{"post_id": "p3", "criterion": "A", "has_evidence": 1,
                                         "corrected_has_evidence": 0}]
    assert block["by_reviewer"] == [{"reviewer": "Dr A", "label_error": 1, "model_error": 0,
                                     "ambiguous": 0, "acceptable": 0, "total": 1}]


def test_a_sentence_made_gold_changes_recall_at_1(toy):
    # p2's gold is s2 at position 2: recall@1 is 0 for p2; s1 corrected to gold makes it 1/2
    # (gold {s1, s2}, one in the top 1). Mean recall@1 over the three positives:
    # (1 + 0 + 1) / 3 before, (1 + 1/2 + 1) / 3 after.
    adj = read_adjudications(adj_csv("p2,A,s1,label_error,,1,Dr B,,"), toy.dataset,
                             name="adj.csv")
    run = evaluate_adjudicated(toy.evaluator, adj, EvalConfig(bootstrap=0))
    assert run.original.record("recall@1").value == pytest.approx(2 / 3)
    assert run.adjudicated.record("recall@1").value == pytest.approx(2.5 / 3)
    assert run.to_dict()["changed_sentences"] == [
        {"post_id": "p2", "criterion": "A", "sent_uid": "s1", "is_gold": 0,
         "corrected_is_gold": 1}]


def test_ambiguous_queries_are_left_out_only_when_asked(toy):
    adj = read_adjudications(adj_csv("p3,A,,ambiguous,,,,,", "p1,A,s2,ambiguous,,,,,"),
                             toy.dataset, name="adj.csv")
    kept = adjudicated_dataset(toy.dataset, adj)
    assert kept.n_queries == 5 and (kept.y == toy.dataset.y).all()
    left = adjudicated_dataset(toy.dataset, adj, exclude_ambiguous=True)
    assert left.post_id.tolist() == ["p2", "p4", "p5"]
    run = evaluate_adjudicated(toy.evaluator, adj, EvalConfig(bootstrap=0),
                               exclude_ambiguous=True)
    assert run.adjudicated.record("sensitivity").value == pytest.approx(1.0)
    assert run.to_dict()["excluded_queries"] == [{"post_id": "p3", "criterion": "A"},
                                                 {"post_id": "p1", "criterion": "A"}]


@pytest.mark.parametrize(("row", "column", "rule"), [
    ("p9,A,,model_error,,,,,", "post_id", "no such query"),
    ("p1,A,s7,model_error,,,,,", "sent_uid", "no such sentence"),
    ("p1,A,,wrong,,,,,", "verdict", "the verdict must be one of label_error, model_error"),
    ("p1,A,,model_error,0,,,,", "verdict", "a correction contradicts the verdict"),
    ("p1,A,,label_error,,,,,", "corrected_has_evidence", "needs its corrected_has_evidence"),
    ("p1,A,,label_error,1,,,,", "corrected_has_evidence", "the correction is the gold already"),
    ("p1,A,s1,label_error,,,,,", "corrected_is_gold", "needs its corrected_is_gold"),
    ("p1,A,s1,label_error,0,0,,,", "corrected_has_evidence", "corrects is_gold, not"),
    ("p1,A,,label_error,0,1,,,", "corrected_is_gold", "only a sentence's row"),
    ("p1,A,,label_error,2,,,,", "corrected_has_evidence", "values must be 0, 1 or empty"),
    ("p1,A,,acceptable,,,,,yesterday", "time", "ISO 8601"),
    (",A,,acceptable,,,,,", "post_id", "must not be empty"),
])
def test_each_broken_rule_names_the_file_the_line_the_column_and_the_rule(toy, row, column,
                                                                          rule):
    with pytest.raises(InputError) as info:
        read_adjudications(adj_csv("p2,A,,acceptable,,,,,", row), toy.dataset,
                           name="adj.csv")
    err = info.value
    assert err.file == "adj.csv" and err.column == column and rule in err.rule
    assert err.numbers() == [3]  # the header is line 1, the good row line 2
    assert str(err).startswith(f"adj.csv: column '{column}': ")


def test_a_case_adjudicated_twice_is_an_error_naming_both_lines(toy):
    with pytest.raises(InputError) as info:
        read_adjudications(adj_csv("p1,A,,acceptable,,,,,", "p2,A,,acceptable,,,,,",
                                   "p1,A,,model_error,,,,,"), toy.dataset, name="adj.csv")
    assert info.value.numbers() == [2, 4] and "adjudicated once" in info.value.rule


def test_every_problem_is_reported_at_once_and_unknown_columns_are_refused(toy):
    with pytest.raises(InputError) as info:
        read_adjudications(adj_csv("p9,A,,wrong,,,,,,x",
                                   header=",".join(COLUMNS) + ",extra"), toy.dataset,
                           name="adj.csv")
    text = str(info.value)
    assert "unknown column(s) 'extra'" in text and "no such query" in text
    assert "the verdict must be one of" in text
    with pytest.raises(InputError, match="missing required column"):
        read_adjudications(b"post_id,criterion\np1,A\n", toy.dataset, name="adj.csv")


def test_a_header_alone_holds_no_verdict_and_the_file_round_trips(toy):
    empty = read_adjudications(adj_csv(), toy.dataset, name="adj.csv")
    assert len(empty) == 0 and empty.counts()["label_error"] == 0
    data = adj_csv("p3,A,,label_error,0,,Dr A,\"a note, with a comma\",2026-05-04T10:30:00Z",
                   "p2,A,s1,label_error,,1,Dr B,,", "007,A,,acceptable,,,,,")
    q = pd.concat([QUERIES, pd.DataFrame({"post_id": ["007"], "criterion": ["A"],
                                          "has_evidence": [0], "p_has_evidence": [0.4]})])
    ds = open_run(q, CANDIDATES).dataset
    adj = read_adjudications(data, ds, name="adj.csv")
    again = read_adjudications(adj.to_csv(), ds, name="adj.csv")
    pd.testing.assert_frame_equal(adj.frame, again.frame)
    assert adj.frame["post_id"].tolist() == ["p3", "p2", "007"]  # ids stay text
    assert to_csv(adj.frame) == adj.to_csv()
    # A note a spreadsheet would run is written with an apostrophe, and read back without.
    risky = read_adjudications(adj_csv("p1,A,,acceptable,,,Dr A,=HYPERLINK(\"x\"),"), ds,
                               name="adj.csv")
    assert b"'=HYPERLINK" in risky.to_csv()
    assert read_adjudications(risky.to_csv(), ds).frame["note"].tolist() == [
        '=HYPERLINK("x")']


def test_the_block_is_added_to_the_document_as_valid_json(toy):
    import json

    adj = read_adjudications(adj_csv("p3,A,,label_error,0,,,,"), toy.dataset, name="adj.csv")
    run = evaluate_adjudicated(toy.evaluator, adj, EvalConfig(bootstrap=0))
    document = json.loads(with_adjudication(run.original.to_json(), run))
    assert document["metrics"] == json.loads(run.original.to_json())["metrics"]
    assert document["adjudication"]["metrics"] == [r.to_dict() for r in run.adjudicated.records]


# ------------------------------------------------------------------- the property test
def _edited_copy(queries, candidates, fixes_q, fixes_c, drop):
    """The files with the corrections made by hand: has_evidence and is_gold flipped, n_gold
    moved with the query's corrected sentences, the excluded queries' rows removed."""
    q, c = queries.copy(), candidates.copy()
    qkey = list(zip(q["post_id"], q["criterion"], strict=True))
    for key in fixes_q:
        i = qkey.index(key)
        q.iat[i, q.columns.get_loc("has_evidence")] = 1 - q["has_evidence"].iat[i]
    for post, crit, uid in fixes_c:
        j = np.flatnonzero((c["post_id"] == post) & (c["criterion"] == crit)
                           & (c["sent_uid"] == uid))[0]
        new = 1 - int(c["is_gold"].iat[j])
        c.iat[j, c.columns.get_loc("is_gold")] = new
        i = qkey.index((post, crit))
        q.iat[i, q.columns.get_loc("n_gold")] += 1 if new else -1
    if drop:
        q = q[[k not in drop for k in qkey]]
        ckey = list(zip(c["post_id"], c["criterion"], strict=True))
        c = c[[k not in drop for k in ckey]]
    return q, c


@settings(max_examples=12)
@given(seed=st.integers(0, 10_000), data=st.data(), exclude=st.booleans(),
       bootstrap=st.sampled_from([0, 30]))
def test_adjudicated_records_equal_a_fresh_run_on_the_edited_files(seed, data, exclude,
                                                                   bootstrap):
    queries, candidates = random_frames(n_posts=8, seed=seed, max_candidates=5)
    run = open_run(queries, candidates)
    qkeys = list(zip(queries["post_id"], queries["criterion"], strict=True))
    ckeys = list(zip(candidates["post_id"], candidates["criterion"], candidates["sent_uid"],
                     strict=True))
    picked_q = data.draw(st.lists(st.sampled_from(qkeys), unique=True, max_size=6))
    picked_c = data.draw(st.lists(st.sampled_from(ckeys), unique=True, max_size=6))
    rows, fixes_q, fixes_c, drop = [], [], [], set()
    y = dict(zip(qkeys, queries["has_evidence"], strict=True))
    gold = dict(zip(ckeys, candidates["is_gold"], strict=True))
    verdicts = st.sampled_from(["label_error", "model_error", "ambiguous", "acceptable"])
    for key in picked_q:
        v = data.draw(verdicts)
        rows.append({"post_id": key[0], "criterion": key[1], "verdict": v,
                     "corrected_has_evidence": str(1 - y[key]) if v == "label_error" else ""})
        fixes_q += [key] if v == "label_error" else []
        drop |= {key} if v == "ambiguous" else set()
    for key in picked_c:
        v = data.draw(verdicts)
        rows.append({"post_id": key[0], "criterion": key[1], "sent_uid": key[2], "verdict": v,
                     "corrected_is_gold": str(1 - gold[key]) if v == "label_error" else ""})
        fixes_c += [key] if v == "label_error" else []
        drop |= {key[:2]} if v == "ambiguous" else set()
    adj = adjudications_of(pd.DataFrame(rows, columns=list(COLUMNS)), run.dataset)
    if exclude and len(drop) == len(qkeys):
        return
    cfg = EvalConfig(bootstrap=bootstrap, seed=seed % 7)
    result = evaluate_adjudicated(run.evaluator, adj, cfg, exclude_ambiguous=exclude)
    edited = open_run(*_edited_copy(queries, candidates, fixes_q, fixes_c,
                                    drop if exclude else set()))
    fresh = edited.evaluator.evaluate(cfg)
    assert [r.to_dict() for r in result.adjudicated.records] == [
        r.to_dict() for r in fresh.records]
    pd.testing.assert_frame_equal(result.adjudicated.per_criterion, fresh.per_criterion)
    pd.testing.assert_frame_equal(result.adjudicated.per_query, fresh.per_query)
    # The original records are those of the files as given.
    assert [r.to_dict() for r in result.original.records] == [
        r.to_dict() for r in open_run(queries, candidates).evaluator.evaluate(cfg).records]


# ------------------------------------------------------------------- the command line
@pytest.fixture
def cli_files(tmp_path):
    q, c = tmp_path / "q.csv", tmp_path / "c.csv"
    QUERIES.to_csv(q, index=False)
    CANDIDATES.to_csv(c, index=False)
    adj = tmp_path / "adj.csv"
    adj.write_bytes(adj_csv("p3,A,,label_error,0,,Dr A,,2026-05-04T10:30:00Z",
                            "p2,A,s1,label_error,,1,Dr B,,", "p4,A,,ambiguous,,,Dr B,,"))
    return q, c, adj


def test_evaluate_writes_both_labelings_side_by_side(cli_files, tmp_path, capsys):
    import json

    from metrics_core.cli import main

    q, c, adj = cli_files
    out, plain = tmp_path / "m.json", tmp_path / "plain.json"
    assert main(["evaluate", str(q), str(c), "--out", str(plain), "--bootstrap", "50",
                 "--quiet"]) == 0
    assert main(["evaluate", str(q), str(c), "--out", str(out), "--bootstrap", "50",
                 "--adjudications", str(adj)]) == 0
    printed = capsys.readouterr().out
    assert "adjudicated gold: 2 label_error, 0 model_error, 1 ambiguous, 0 acceptable" in printed
    assert "sensitivity" in printed and "0.6667 -> 1.0000 on the adjudicated gold" in printed
    document, original = json.loads(out.read_text()), json.loads(plain.read_text())
    assert document["metrics"] == original["metrics"]  # the original numbers are kept
    block = document["adjudication"]
    assert block["file"]["file"] == "adj.csv" and len(block["file"]["sha256"]) == 64
    assert block["verdicts"]["label_error"] == 2 and block["n_queries_reviewed"] == 3
    assert block["exclude_ambiguous"] is False and block["excluded_queries"] == []
    # The CLI's numbers are the library's for the same file and settings.
    run = open_run(QUERIES, CANDIDATES)
    lib = evaluate_adjudicated(run.evaluator, read_adjudications(adj, run.dataset),
                               EvalConfig(bootstrap=50))
    assert block["metrics"] == json.loads(json.dumps(
        [r.to_dict() for r in lib.adjudicated.records]))
    sens = next(d for d in block["differences"] if d["name"] == "sensitivity")
    assert sens["original"] == pytest.approx(2 / 3) and sens["adjudicated"] == 1.0
    assert sens["difference"] == pytest.approx(1 / 3)
    assert main(["evaluate", str(q), str(c), "--out", str(out), "--bootstrap", "0", "--quiet",
                 "--adjudications", str(adj), "--exclude-ambiguous"]) == 0
    block = json.loads(out.read_text())["adjudication"]
    assert block["excluded_queries"] == [{"post_id": "p4", "criterion": "A"}]
    assert block["dataset"]["n_queries"] == 4


def test_bad_adjudications_exit_2_naming_the_file_line_column_and_rule(cli_files, tmp_path,
                                                                       capsys):
    from metrics_core.cli import main

    q, c, adj = cli_files
    adj.write_bytes(adj_csv("p3,A,,model_error,0,,,,"))
    out = tmp_path / "m.json"
    assert main(["evaluate", str(q), str(c), "--out", str(out), "--adjudications",
                 str(adj)]) == 2
    err = capsys.readouterr().err
    assert ("adj.csv: column 'verdict': a correction contradicts the verdict: only label_error "
            "corrects the gold (line 2: value 'model_error')") in err
    assert "Traceback" not in err and not out.exists()
    assert main(["evaluate", str(q), str(c), "--out", str(out), "--exclude-ambiguous"]) == 2
    assert "--exclude-ambiguous needs --adjudications" in capsys.readouterr().err
    assert main(["evaluate", str(q), str(c), "--out", str(adj), "--adjudications",
                 str(adj)]) == 2
    assert "never overwrites an input" in capsys.readouterr().err


# ------------------------------------------------------------------- the decision record
def test_the_record_says_what_was_reviewed_and_both_labelings(cli_files, tmp_path):
    import io
    import json
    import zipfile

    from metrics_core.cli import main
    from metrics_core.report.decision_record import render_html
    from metrics_core.report.export import csv_bytes

    q, c, adj = cli_files
    run = open_run(QUERIES, CANDIDATES)
    result = evaluate_adjudicated(run.evaluator, read_adjudications(adj, run.dataset),
                                  EvalConfig(bootstrap=0))
    page = render_html(result.original, adjudication=result)
    section = page[page.index("<h2 id='adjudication'>"):]
    assert "3 verdicts on 3 queries, from the file adj.csv; reviewers: Dr A, Dr B." in section
    assert "label_error: 2; model_error: 0; ambiguous: 1; acceptable: 0" in section
    # corrected labels: p3's has_evidence 1 -> 0, p2 / s1's is_gold 0 -> 1
    assert "<td>p3</td><td>A</td><td class=\"num\">1</td><td class=\"num\">0</td>" in section
    assert "<td>s1</td><td class=\"num\">0</td><td class=\"num\">1</td>" in section
    # sensitivity 2/3 on the original gold, 1 on the adjudicated, n 3 and 2
    assert ("<td>Sensitivity</td><td class=\"num\">0.6667</td><td class=\"num\">1.0000</td>"
            "<td class=\"num\">0.3333</td><td class=\"num\">3</td><td class=\"num\">2</td>"
            ) in section
    assert "<h2 id='adjudication'>" not in render_html(result.original)
    out = tmp_path / "record.zip"
    assert main(["report", str(q), str(c), "--adjudications", str(adj), "--format", "zip",
                 "--out", str(out), "--quiet"]) == 0
    with zipfile.ZipFile(io.BytesIO(out.read_bytes())) as z:
        assert "3 verdicts on 3 queries" in z.read("decision_record.html").decode()
        assert json.loads(z.read("metrics_master.json"))["adjudication"]["verdicts"][
            "label_error"] == 2
        assert z.read("adjudications.csv") == result.adjudications.to_csv()
    # The app's record on the adjudicated gold (its Gold labels switch): the record's numbers
    # and tables are the adjudicated run's and it says so under the title; its
    # metrics_master.json keeps the original numbers, with the adjudicated ones beside them.
    from metrics_core.report.decision_record import render_zip

    page = render_html(result.adjudicated, adjudication=result,
                       gold="adjudicated (3 verdicts, 2 labels corrected)")
    assert "<p><strong>Gold labels: adjudicated (3 verdicts, 2 labels corrected).</strong></p>" \
        in page[:page.index("<h2>")]
    assert "Gold labels" not in render_html(result.original)
    bundle = render_zip(result.adjudicated, html_text=page, adjudication=result)
    with zipfile.ZipFile(io.BytesIO(bundle)) as z:
        master = json.loads(z.read("metrics_master.json"))
        per_query = z.read("per_query.csv")
    assert master["metrics"] == json.loads(result.original.to_json())["metrics"]
    assert master["adjudication"]["metrics"] == json.loads(json.dumps(
        [r.to_dict() for r in result.adjudicated.records]))
    assert per_query == csv_bytes(result.adjudicated.per_query) != csv_bytes(
        result.original.per_query)


# ------------------------------------------------------------------- review suggestions
def test_suggestions_put_confident_misses_false_alerts_and_gold_ranked_last_first(toy):
    from metrics_core.evaluation.adjudicated import review_suggestions

    cfg = EvalConfig(bootstrap=0, threshold=0.5)
    q = pd.concat([QUERIES, pd.DataFrame({"post_id": ["p6", "p7"], "criterion": "A",
                                          "has_evidence": [0, 1],
                                          "p_has_evidence": [0.95, 0.05]})])
    c = pd.concat([CANDIDATES, pd.DataFrame({
        "post_id": ["p7", "p7", "p7"], "criterion": "A", "sent_uid": ["s1", "s2", "s3"],
        "score": [0.9, 0.5, 0.1], "is_gold": [0, 0, 1]})])
    run = open_run(q, c)
    found = review_suggestions(run.evaluator, run.evaluator.evaluate(cfg))
    # misses (y = 1, p < 0.5): p7 (0.05), p3 (0.3); false alerts (y = 0, p >= 0.5): p6;
    # gold ranked last: p2 (gold at 2 of 2), p7 (3 of 3; a tie keeps the queries' order).
    # Interleaved: p7, p6, p2, then p3 (p7 is listed once).
    assert list(zip(found["post_id"], found["why"], strict=True)) == [
        ("p7", "confident_miss"), ("p6", "confident_false_alert"), ("p2", "gold_ranked_last"),
        ("p3", "confident_miss")]
    assert found["suggestion_rank"].tolist() == [1, 2, 3, 4]
    assert len(review_suggestions(run.evaluator, run.evaluator.evaluate(cfg), n=2)) == 2
