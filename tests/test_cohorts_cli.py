"""metrics-core evaluate --cohort: the cohorts and weak_segments tables of metrics_master.json
(contract §9 and §11), and the refusals (exit 2, a plain message)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from metrics_core.cli import main
from metrics_core.demo import make_synthetic


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cohorts")
    q, c = make_synthetic(60, n_criteria=4, seed=5, with_text=False)
    rng = np.random.default_rng(0)
    posts = q["post_id"].unique()
    q["site"] = q["post_id"].map(dict(zip(posts, rng.choice(["S1", "S2", "S3"], posts.size),
                                          strict=True)))
    q["sex"] = q["post_id"].map(dict(zip(posts, rng.choice(["F", "M"], posts.size),
                                         strict=True)))
    q["age"] = q["post_id"].map(dict(zip(posts, rng.integers(20, 90, posts.size),
                                         strict=True)))
    q.loc[q.index[:4], "sex"] = None  # a missing value: its own cohort
    q["ward"] = [f"w{i}" for i in range(len(q))]
    qp, cp = tmp / "queries.csv", tmp / "candidates.csv"
    q.to_csv(qp, index=False)
    c.to_csv(cp, index=False)
    return tmp, qp, cp


COHORT_KEYS = ["column", "value", "metric", "estimate", "ci95", "n", "n_positive",
               "rest_estimate", "difference", "difference_ci95", "ratio", "ratio_ci95",
               "p_value", "p_adjusted", "flagged", "small", "defined"]


def test_evaluate_writes_the_cohorts_and_weak_segments_tables(files, capsys):
    tmp, qp, cp = files
    out = tmp / "m.json"
    code = main(["evaluate", str(qp), str(cp), "--out", str(out), "--bootstrap", "200",
                 "--cohort", "site", "--cohort", "sex", "--cohort", "site*sex",
                 "--cohort", "age", "--cohort-bins", "age=q3"])
    assert code == 0
    doc = json.loads(out.read_text())
    rows = doc["cohorts"]
    assert list(rows[0]) == COHORT_KEYS
    assert {r["column"] for r in rows} == {"site", "sex", "site*sex", "age"}
    sexes = {r["value"] for r in rows if r["column"] == "sex"}
    assert sexes == {"missing", "F", "M"}
    assert len({r["value"] for r in rows if r["column"] == "age"}) == 3
    auroc = [r for r in rows if r["metric"] == "auroc" and r["column"] == "site"]
    assert all(r["ci95"] is not None and r["p_value"] is not None for r in auroc)
    slopes = [r for r in rows if r["metric"] == "calibration_slope" and r["defined"]
              and r["column"] != "site*sex"]
    assert slopes and all(r["ci95"][0] <= r["estimate"] <= r["ci95"][1] for r in slopes)
    assert doc["weak_segments"] and {"segment", "segments_tried"} <= set(doc["weak_segments"][0])
    assert doc["cohort_equalised_odds"][0]["column"] == "site"
    printed = capsys.readouterr().out
    assert "cohorts: " in printed and "4 column(s)" in printed


def test_without_cohorts_the_document_has_no_cohort_tables(files):
    tmp, qp, cp = files
    out = tmp / "plain.json"
    assert main(["evaluate", str(qp), str(cp), "--out", str(out), "--bootstrap", "0",
                 "--quiet"]) == 0
    doc = json.loads(out.read_text())
    assert "cohorts" not in doc and "weak_segments" not in doc


@pytest.mark.parametrize(("flags", "message"), [
    (["--cohort", "ward"], "queries.csv"),
    (["--cohort", "region"], "cohort column not found"),
    (["--cohort", "site", "--cohort-bins", "site=q3"], "numeric"),
    (["--cohort", "site", "--cohort-bins", "age=q3"], "--cohort-bins age: not a --cohort"),
    (["--cohort", "site", "--cohort-max-values", "one"], "--cohort-max-values"),
    (["--cohort", "age", "--cohort-bins", "age=q1"], "quantile bins must be 2 to 20"),
    (["--cohort", "site*sex*site"], "an intersection names a column twice"),
])
def test_bad_cohort_options_exit_2_with_a_plain_message(files, capsys, flags, message):
    tmp, qp, cp = files
    code = main(["evaluate", str(qp), str(cp), "--out", str(tmp / "x.json"), "--bootstrap",
                 "0", "--quiet", *flags])
    err = capsys.readouterr().err
    assert code == 2 and message in err and "Traceback" not in err
    if flags[1] == "ward":
        assert "ward" in err and "limit of 20" in err and "240" in err


def test_an_intersection_of_three_columns_is_a_cohort_column(files):
    """``--cohort "site*sex*age"``: every combination that occurs is a cohort (its value the
    three values joined by ``*``), with its metrics and intervals as a pair's."""
    import pandas as pd

    tmp, qp, cp = files
    out = tmp / "three.json"
    assert main(["evaluate", str(qp), str(cp), "--out", str(out), "--bootstrap", "50",
                 "--quiet", "--cohort", "site*sex*age", "--cohort-bins", "age=40,65"]) == 0
    rows = json.loads(out.read_text())["cohorts"]
    assert {r["column"] for r in rows} == {"site*sex*age"}
    q = pd.read_csv(qp)
    band = np.where(q["age"] < 40, "< 40", np.where(q["age"] < 65, "[40, 65)", "≥ 65"))
    want = q["site"] + "*" + q["sex"].fillna("missing") + "*" + band
    counts = want.value_counts()
    got = {r["value"]: r["n"] for r in rows if r["metric"] == "auroc"}
    assert got == counts.to_dict()
    assert all(r["ci95"] is not None for r in rows
               if r["metric"] == "sensitivity" and r["n_positive"] >= 5)


def test_report_with_cohorts_has_the_cohort_section_and_tables(files, capsys):
    """``report --cohort``: the record's cohort section is the one of the same cohort tables
    (computed here with the library), and the zip's metrics_master.json carries the tables
    ``evaluate --cohort`` writes for the same settings."""
    import zipfile

    from metrics_core.config import EvalConfig
    from metrics_core.evaluation.cohorts import evaluate_cohorts
    from metrics_core.inputs.cohort_columns import cohort_attributes
    from metrics_core.report.decision_record import cohorts_section
    from metrics_core.run import open_run

    tmp, qp, cp = files
    settings = tmp / "settings.json"
    settings.write_text(json.dumps({"schema": "metrics_core_settings/1",
                                    "config": {"bootstrap": 200}}))
    flags = ["--cohort", "site", "--cohort", "sex"]
    html = tmp / "record.html"
    assert main(["report", str(qp), str(cp), "--settings", str(settings), "--out", str(html),
                 "--quiet", *flags]) == 0
    page = html.read_text()
    run = open_run(qp, cp)
    attrs = cohort_attributes(qp, run.loaded, ["site", "sex"], name=qp.name)
    want = evaluate_cohorts(run.evaluator, EvalConfig(bootstrap=200), list(attrs.values()))
    assert "<h2 id='cohorts'>Cohorts</h2>" in page
    assert cohorts_section(want) in page
    archive = tmp / "record.zip"
    assert main(["report", str(qp), str(cp), "--settings", str(settings), "--out",
                 str(archive), "--format", "zip", "--quiet", *flags]) == 0
    with zipfile.ZipFile(archive) as z:
        doc = json.loads(z.read("metrics_master.json"))
    out = tmp / "same.json"
    assert main(["evaluate", str(qp), str(cp), "--out", str(out), "--bootstrap", "200",
                 "--quiet", *flags]) == 0
    assert doc["cohorts"] == json.loads(out.read_text())["cohorts"]
    assert doc["weak_segments"] == json.loads(out.read_text())["weak_segments"]


def test_report_refuses_a_bad_cohort_flag(files, capsys):
    tmp, qp, cp = files
    code = main(["report", str(qp), str(cp), "--out", str(tmp / "r.html"), "--quiet",
                 "--cohort", "region"])
    err = capsys.readouterr().err
    assert code == 2 and "cohort column not found" in err and "Traceback" not in err


def test_report_takes_the_cohort_columns_of_the_settings_file(files, capsys):
    """A settings.json that chooses cohort columns (the app's Data page) gives ``report
    --settings`` the same cohorts as ``--cohort`` would; ``--cohort`` given wins; its settings
    file and settings table say them; a malformed choice is refused naming the key."""
    tmp, qp, cp = files
    settings = tmp / "chosen.json"
    settings.write_text(json.dumps({"schema": "metrics_core_settings/1",
                                    "config": {"bootstrap": 200},
                                    "cohort_columns": ["site", "site*sex"]}))
    by_file, by_flags = tmp / "by_file.html", tmp / "by_flags.html"
    assert main(["report", str(qp), str(cp), "--settings", str(settings), "--out",
                 str(by_file), "--quiet"]) == 0
    assert main(["report", str(qp), str(cp), "--settings", str(settings), "--out",
                 str(by_flags), "--quiet", "--cohort", "site", "--cohort", "site*sex"]) == 0
    page = by_file.read_text()
    assert "<h2 id='cohorts'>Cohorts</h2>" in page

    def section(text):
        return text[text.index("<h2 id='cohorts'>"):text.index("<h2>Flow of queries")]

    assert section(page) == section(by_flags.read_text())
    assert '&quot;cohort_columns&quot;: [\n    &quot;site&quot;,' in page  # its settings file
    assert "<td>cohort_<wbr>columns</td>" in page  # and its settings table
    only_sex = tmp / "sex.html"
    assert main(["report", str(qp), str(cp), "--settings", str(settings), "--out",
                 str(only_sex), "--quiet", "--cohort", "sex"]) == 0
    assert "site*sex" not in section(only_sex.read_text())
    settings.write_text(json.dumps({"schema": "metrics_core_settings/1", "config": {},
                                    "cohort_columns": "site"}))
    capsys.readouterr()
    assert main(["report", str(qp), str(cp), "--settings", str(settings), "--out",
                 str(tmp / "bad.html"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "chosen.json: cohort_columns: must be a list of at most 64 cohort column names" in err
    assert "Traceback" not in err


def test_the_printed_flags_say_which_cohorts_are_small_cells(tmp_path, capsys):
    """Three posts of the demo in a cohort of their own (30 queries, 1 with evidence: a small
    cell) get flagged disparities; each printed line of theirs says the cell is small."""
    from metrics_core.demo import demo_paths

    paths = demo_paths()
    q = pd.read_parquet(paths.queries)
    posts = q["post_id"].unique()
    q["ward"] = np.where(q["post_id"].isin(posts[7:10]), "tiny", "main")
    tiny = q[q["ward"] == "tiny"]
    assert (len(tiny), int(tiny["has_evidence"].sum())) == (30, 1)
    qp = tmp_path / "queries.parquet"
    q.to_parquet(qp, index=False)
    out = tmp_path / "m.json"
    assert main(["evaluate", str(qp), str(paths.candidates), "--out", str(out),
                 "--bootstrap", "200", "--cohort", "ward"]) == 0
    rows = [r for r in json.loads(out.read_text())["cohorts"] if r["flagged"]]
    printed = [line for line in capsys.readouterr().out.splitlines()
               if line.startswith("  ward=")]
    assert len(printed) == len(rows) and any(r["value"] == "tiny" for r in rows)
    for line, row in zip(printed, rows, strict=True):
        assert line.startswith(f"  ward={row['value']} {row['metric']}: ")
        assert line.endswith(" (small cell: n=30, 1 with evidence)") == (row["value"] == "tiny")
