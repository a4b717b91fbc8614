"""Cohort columns from a posts table (``--posts``, contract §9, cohorts): one row per
``post_id``, its columns the cohort of every query of the post. The cohorts read from it equal
those read from the same column in the queries table; a post it does not list is the cohort
``missing``; bad tables are refused naming the file, the column, the rule and the rows."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from metrics_core.cli import main
from metrics_core.demo import make_synthetic
from metrics_core.errors import InputError
from metrics_core.inputs.cohort_columns import posts_table
from metrics_core.inputs.loading import load

RUN = ["--bootstrap", "200", "--quiet"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("posts")
    q, c = make_synthetic(90, n_criteria=3, seed=7, with_text=False)
    rng = np.random.default_rng(2)
    posts = q["post_id"].unique()
    region = dict(zip(posts, rng.choice(["north", "south", "east"], posts.size), strict=True))
    site = dict(zip(posts, rng.choice(["S1", "S2"], posts.size), strict=True))
    q["site"] = q["post_id"].map(site)
    with_region = q.assign(region=q["post_id"].map(region))
    table = pd.DataFrame({"post_id": posts, "region": [region[p] for p in posts]})
    paths = {"q": tmp / "q.csv", "qr": tmp / "q_region.csv", "c": tmp / "c.csv",
             "posts": tmp / "posts.csv"}
    q.to_csv(paths["q"], index=False)
    with_region.to_csv(paths["qr"], index=False)
    c.to_csv(paths["c"], index=False)
    table.to_csv(paths["posts"], index=False)
    return tmp, paths, q, table


def _cohorts(tmp, queries, candidates, *flags, name="m.json"):
    out = tmp / name
    assert main(["evaluate", str(queries), str(candidates), "--out", str(out), *RUN,
                 *flags]) == 0
    return json.loads(out.read_text())


def test_a_posts_tables_cohorts_equal_the_same_column_in_the_queries_table(files):
    tmp, paths, _, _ = files
    from_posts = _cohorts(tmp, paths["q"], paths["c"], "--posts", str(paths["posts"]),
                          "--cohort", "region", "--cohort", "site*region", name="a.json")
    inline = _cohorts(tmp, paths["qr"], paths["c"], "--cohort", "region",
                      "--cohort", "site*region", name="b.json")
    assert from_posts["cohorts"] == inline["cohorts"]
    assert from_posts["weak_segments"] == inline["weak_segments"]
    assert {r["value"] for r in from_posts["cohorts"] if r["column"] == "region"} == {
        "east", "north", "south"}
    assert any(r["column"] == "site*region" and r["value"] == "S1*north"
               for r in from_posts["cohorts"])


def test_a_post_the_table_does_not_list_is_the_cohort_missing(files):
    tmp, paths, q, table = files
    dropped = table["post_id"].iloc[:5]
    part = tmp / "part.csv"
    table.iloc[5:].to_csv(part, index=False)
    doc = _cohorts(tmp, paths["q"], paths["c"], "--posts", str(part), "--cohort", "region",
                   name="part.json")
    missing = [r for r in doc["cohorts"] if r["value"] == "missing" and r["metric"] == "auroc"]
    assert len(missing) == 1
    assert missing[0]["n"] == int(q["post_id"].isin(dropped).sum())
    assert missing[0]["n_positive"] == int(q.loc[q["post_id"].isin(dropped),
                                                 "has_evidence"].sum())


def test_a_cohort_filter_reads_the_posts_table(files):
    tmp, paths, q, table = files
    doc = _cohorts(tmp, paths["q"], paths["c"], "--posts", str(paths["posts"]),
                   "--cohort-filter", "region=north", name="f.json")
    north = set(table.loc[table["region"] == "north", "post_id"])
    assert doc["dataset"]["n_queries"] == int(q["post_id"].isin(north).sum())
    assert doc["config"]["filters"]["cohorts"] == ["region=north"]


@pytest.mark.parametrize(("rows", "rule", "listed"), [
    ([("p00001", "N"), ("p00002", "S"), ("p00001", "E")], "post_id must be unique", "1, 3"),
    ([("p00001", "N"), ("nope", "S"), ("gone", "S")], "posts the data set does not have",
     "2, 3"),
    ([("p00001", "N"), ("", "S")], "post_id must be given on every row", "2"),
])
def test_bad_posts_tables_are_refused_naming_file_column_rule_and_rows(files, capsys, rows,
                                                                       rule, listed):
    tmp, paths, *_ = files
    bad = tmp / "bad_posts.csv"
    pd.DataFrame(rows, columns=["post_id", "region"]).to_csv(bad, index=False)
    code = main(["evaluate", str(paths["q"]), str(paths["c"]), "--out", str(tmp / "x.json"),
                 *RUN, "--posts", str(bad), "--cohort", "region"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert "bad_posts.csv" in err and "'post_id'" in err and rule in err
    assert f"rows, first: {listed}" in err or f"row {listed}" in err or listed in err


def test_posts_table_checks_directly(files):
    _, paths, q, table = files
    loaded = load(paths["q"], paths["c"])
    frame = posts_table(table, loaded, name="posts.csv")
    ds = loaded.dataset
    assert len(frame) == ds.n_queries
    want = q.set_index(["post_id", "criterion"]).index  # the region of each query's post
    region = dict(zip(table["post_id"], table["region"], strict=True))
    assert frame["region"].tolist() == [region[p] for p in ds.post_id]
    assert len(want) == ds.n_queries
    with pytest.raises(InputError, match="needs a post_id column") as err:
        posts_table(table.rename(columns={"post_id": "id"}), loaded, name="posts.csv")
    assert err.value.file == "posts.csv"


def test_a_column_in_neither_table_is_named_with_both_files(files, capsys):
    tmp, paths, *_ = files
    code = main(["evaluate", str(paths["q"]), str(paths["c"]), "--out", str(tmp / "y.json"),
                 *RUN, "--posts", str(paths["posts"]), "--cohort", "ward"])
    err = capsys.readouterr().err
    assert code == 2 and "cohort column not found" in err
    assert "q.csv" in err and "posts.csv" in err and "'ward'" in err
