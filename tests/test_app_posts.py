"""A posts table uploaded on the Data page (AppTest): its columns become cohort columns, and
the Cohorts page shows the numbers ``metrics-core evaluate --posts … --cohort …`` writes for
the same files; a table that breaks a rule is refused naming the file, the column, the rule
and the rows; the table counts in the server's upload budget (contract §9, posts table)."""

from __future__ import annotations

import gc
import io
import json

import numpy as np
import pandas as pd
import pytest

from dashboard import data, server_settings, state
from metrics_core.cli import main
from metrics_core.demo import make_synthetic
from tests.test_app import TIMEOUT, assert_clean, open_app, table, texts, upload

#: Few resamples (the link sets them): the Cohorts page's intervals in seconds.
QUICK = {"bootstrap": "400"}
COHORTS_TIMEOUT = 3 * TIMEOUT


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Queries (CSV) without cohort columns, candidates (CSV) and a posts table (Parquet)
    with ``region`` (a worse model in the west), ``ward`` (too many values) and one post it
    does not list (the cohort ``missing``)."""
    tmp = tmp_path_factory.mktemp("posts")
    queries, candidates = make_synthetic(120, n_criteria=4, seed=7, with_text=False)
    rng = np.random.default_rng(2)
    ids = queries["post_id"].unique()
    region = dict(zip(ids, rng.choice(["north", "south", "west"], ids.size), strict=True))
    west = queries["post_id"].map(region) == "west"
    queries.loc[west, "p_has_evidence"] = (0.3 * queries.loc[west, "p_has_evidence"]
                                           + 0.7 * rng.random(int(west.sum()))).round(6)
    posts = pd.DataFrame({"post_id": ids[1:], "region": [region[p] for p in ids[1:]],
                          "ward": [f"w{i}" for i in range(ids.size - 1)]})
    paths = {"queries.csv": tmp / "queries.csv", "candidates.csv": tmp / "candidates.csv",
             "posts.parquet": tmp / "posts.parquet"}
    queries.to_csv(paths["queries.csv"], index=False)
    candidates.to_csv(paths["candidates.csv"], index=False)
    posts.to_parquet(paths["posts.parquet"], index=False)
    return tmp, paths, posts


def _uploaded(paths) -> tuple:
    return tuple((name, paths[name].read_bytes(), "text/csv")
                 for name in ("queries.csv", "candidates.csv"))


def _add_posts(at, name: str, payload: bytes):
    at.switch_page("app_pages/data_source.py").run(timeout=TIMEOUT)
    at.file_uploader(key=state.UPLOAD_POSTS).set_value(
        (name, payload, "application/octet-stream")).run(timeout=TIMEOUT)
    at.button(key=state.LOAD_POSTS).click().run(timeout=TIMEOUT)
    assert_clean(at)
    return at


def _parquet(frame: pd.DataFrame) -> bytes:
    buf = io.BytesIO()
    frame.to_parquet(buf, index=False)
    return buf.getvalue()


def _ci(ci) -> str:
    return "" if ci is None else f"{ci[0]:.3f} – {ci[1]:.3f}"


def test_a_posts_table_gives_the_cohorts_the_command_line_gives(files):
    tmp, paths, _ = files
    at = upload(open_app(QUICK), *_uploaded(paths))
    assert at.session_state[state.SOURCE].kind == "upload"
    _add_posts(at, "posts.parquet", paths["posts.parquet"].read_bytes())
    widget = at.multiselect(key=state.COHORT_COLUMNS)
    assert "region" in widget.options and "ward" not in widget.options
    assert any("Not offered (more than 20 distinct values): ward" in t for t in texts(at))
    widget.set_value(["region"]).run(timeout=TIMEOUT)
    at.switch_page("app_pages/cohorts.py").run(timeout=COHORTS_TIMEOUT)
    assert_clean(at)
    shown = table(at, "cohort_table")
    assert set(shown["value"]) == {"missing", "north", "south", "west"}
    assert any("region = west" in t for t in texts(at))  # the planted disparity, flagged
    # the command line on the same files
    out = tmp / "m.json"
    assert main(["evaluate", str(paths["queries.csv"]), str(paths["candidates.csv"]),
                 "--posts", str(paths["posts.parquet"]), "--cohort", "region",
                 "--bootstrap", "400", "--out", str(out), "--quiet"]) == 0
    rows = {(r["value"], r["metric"]): r for r in json.loads(out.read_text())["cohorts"]}
    assert len(shown) > 20
    for row in shown.to_dict("records"):
        want = rows[(row["value"], row["metric"])]
        for key in ("n", "n_positive", "flagged", "small"):
            assert row[key] == want[key], (row, key)
        for key in ("estimate", "rest_estimate", "difference", "p_value", "p_adjusted"):
            assert np.isclose(row[key], want[key], rtol=0, atol=1e-12, equal_nan=True), (
                row, key)
        for key in ("ci95", "difference_ci95"):
            assert row[key] == _ci(want[key]), (row, key)
    # the cohort filter reads the posts table too
    at.switch_page("app_pages/overview.py").run(timeout=TIMEOUT)
    assert "region = west" in at.multiselect(key="cohort").options
    at.multiselect(key="cohort").set_value(["region=west"]).run(timeout=TIMEOUT)
    assert_clean(at)
    n_west = next(r["n"] for (v, m), r in rows.items() if v == "west" and m == "auroc")
    assert at.session_state[state.VIEW].evaluation.summary["n_queries"] == n_west


def test_removing_the_posts_table_drops_its_columns_and_cohorts(files):
    _, paths, _ = files
    at = upload(open_app(QUICK), *_uploaded(paths))
    _add_posts(at, "posts.parquet", paths["posts.parquet"].read_bytes())
    at.multiselect(key=state.COHORT_COLUMNS).set_value(["region"]).run(timeout=TIMEOUT)
    assert at.session_state[state.VIEW].cohort_columns == ("region",)
    assert dict(at.query_params)["cohort_columns"] == "region"
    at.button(key=state.REMOVE_POSTS).click().run(timeout=TIMEOUT)
    assert_clean(at)
    assert at.session_state[state.VIEW].cohort_columns == ()
    assert "cohort_columns" not in dict(at.query_params)
    assert not any("in the link" in str(w.value) for w in at.warning)  # not the link's doing
    assert any("no extra column to form cohorts from: add a posts table" in t
               for t in texts(at))


def test_a_posts_table_that_breaks_the_rules_is_refused_naming_file_column_rule_rows(files):
    _, paths, posts = files
    at = upload(open_app(QUICK), *_uploaded(paths))
    bad = pd.concat([posts, posts.iloc[[3]]], ignore_index=True)  # a post on two rows
    bad.loc[0, "post_id"] = "no-such-post"
    _add_posts(at, "bad_posts.parquet", _parquet(bad))
    error = " ".join(str(e.value) for e in at.error).replace("\\", "")
    assert "The posts table was not used" in error
    assert "bad_posts.parquet" in error and "post_id" in error
    assert "post_id must be unique: one row per post" in error
    assert f"(2 rows, first: 4, {len(bad)})" in error, error
    assert "post_id names posts the data set does not have" in error and "'no-such-post'" in error
    assert "Traceback" not in error
    assert posts_of(at) is None  # nothing changed
    _add_posts(at, "no_ids.csv", b"region\nnorth\n")
    error = " ".join(str(e.value) for e in at.error).replace("\\", "")
    assert "no_ids.csv" in error and "a posts table needs a post_id column" in error


def test_the_demo_offers_no_posts_table():
    at = open_app(page="data_source")
    assert not [u for u in at.file_uploader if u.key == state.UPLOAD_POSTS]
    assert any("A posts table adds cohort columns to uploaded queries" in t for t in texts(at))


def posts_of(at):
    from dashboard.posts import posts_name

    return posts_name(at.session_state[state.SOURCE])


def test_a_posts_table_counts_in_the_upload_budget(files, tmp_path, monkeypatch):
    """The table and what was read from it count in the server-wide budget, in place of the
    session's previous posts table; one that does not fit is refused naming the file and the
    budget (the session keeps its table); removing it releases its share."""
    _, paths, _ = files
    settings = tmp_path / "metrics_core.toml"
    monkeypatch.setenv(server_settings.SETTINGS_ENV, str(settings))
    gc.collect()  # sessions of earlier tests in this process are gone
    at = upload(open_app(QUICK), *_uploaded(paths))
    before = data.UPLOADS.held()
    payload = paths["posts.parquet"].read_bytes()
    _add_posts(at, "posts.parquet", payload)
    held = data.UPLOADS.held()
    assert held - before > len(payload)  # the file and the table read from it
    settings.write_text(f"[memory]\nupload_budget_bytes = {held}\n")
    _add_posts(at, "posts.parquet", payload)  # in place of its own: it fits again
    assert data.UPLOADS.held() == held and posts_of(at) == "posts.parquet"
    bigger = pd.read_parquet(paths["posts.parquet"]).assign(note="x" * 2_000)
    _add_posts(at, "bigger.parquet", _parquet(bigger))
    error = " ".join(str(e.value) for e in at.error).replace("\\", "")
    assert "bigger.parquet" in error and "upload_budget_bytes" in error, error
    assert data.UPLOADS.held() == held and posts_of(at) == "posts.parquet"  # kept
    at.button(key=state.REMOVE_POSTS).click().run(timeout=TIMEOUT)
    assert_clean(at)
    assert data.UPLOADS.held() == before and posts_of(at) is None
