"""The reduced Dask run's ROC / PR bands and per-query table (issue 30): the bands from the
Poisson bootstrap's weighted counts equal a literal loop over the same weights on the gathered
queries; the per-query table is written by the workers as Parquet parts equal to the gathered
run's rows."""

from __future__ import annotations

import json

import numpy as np
import pytest

from metrics_core.config import EvalConfig, Filters
from metrics_core.engines import dask as dask_engine
from metrics_core.engines.resampling import poisson_weights, unit_keys
from metrics_core.evaluation.evaluator import Evaluator
from metrics_core.evaluation.intervals import BAND_GRID
from metrics_core.inputs import loading
from tests.test_dask_engine import _data, _memory, _write


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    q, c = _data()
    return _write(q, c, tmp_path_factory.mktemp("dask_reduced_data"))


def _gathered(paths, cfg):
    """The whole data set's queries (filtered as the run is), in one process."""
    loaded = loading.load(paths["q"], paths["c"])
    return Evaluator(loaded.dataset).for_filters(cfg.filters).ds


def _literal_bands(ds, cfg):
    """Each resample's ROC and PR curve at the grid by a plain loop over its Poisson weights
    (keyed by post id, or by post id and criterion), then numpy's percentiles at 2.5 % and
    97.5 % of the resamples where the curve is defined."""
    grid = np.asarray(BAND_GRID)
    posts = np.asarray(ds.posts, dtype=object)[ds.post_code]
    if cfg.bootstrap_unit == "post":
        keys = unit_keys(posts)
    else:
        keys = unit_keys(posts, np.asarray(ds.criteria, dtype=object)[ds.criterion_code])
    weights = poisson_weights(cfg.seed, keys, int(cfg.bootstrap))
    order = np.argsort(-ds.p, kind="stable")
    ps, ys = ds.p[order], ds.y[order].astype(np.float64)
    last = np.r_[ps[1:] != ps[:-1], True]  # the last row of each distinct p (descending)
    roc = np.full((weights.shape[0], grid.size), np.nan)
    pr = np.full((weights.shape[0], grid.size), np.nan)
    for r in range(weights.shape[0]):
        w = weights[r, order].astype(np.float64)
        tp, fp = np.cumsum(w * ys)[last], np.cumsum(w * (1 - ys))[last]
        predicted = np.cumsum(w)[last]
        n_pos, n_neg = tp[-1], fp[-1]
        for j, g in enumerate(grid):
            if n_pos > 0 and n_neg > 0:  # the TPR of the last point with FPR <= g
                at = np.flatnonzero(fp / n_neg <= g)
                roc[r, j] = tp[at[-1]] / n_pos if at.size else 0.0
            if n_pos > 0:  # the first point with recall >= g, not before the first drawn
                at = max(int(np.flatnonzero(tp / n_pos >= g)[0]),
                         int(np.argmax(predicted > 0)))
                pr[r, j] = tp[at] / predicted[at]

    def band(matrix):
        out = []
        for column in matrix.T:
            kept = column[~np.isnan(column)]
            out.append(np.percentile(kept, [2.5, 97.5]) if kept.size else [np.nan, np.nan])
        return np.array(out, dtype=np.float64)

    return band(roc), band(pr)


def _column(rows, name):
    return np.array([np.nan if r[name] is None else r[name] for r in rows], dtype=np.float64)


@pytest.mark.parametrize("cfg", [
    EvalConfig(bootstrap=60, seed=7),
    EvalConfig(bootstrap=40, seed=3, bootstrap_unit="post",
               filters=Filters(fold="1", criteria=("C1", "C3"))),
], ids=["query-unit", "post-unit-filtered"])
def test_reduced_bands_equal_a_literal_loop_over_the_same_poisson_weights(paths, cluster, cfg):
    _, client = cluster
    doc = dask_engine.evaluate_reduced(paths["q_dir"], paths["c_dir"], cfg, client=client)
    roc, pr = _literal_bands(_gathered(paths, cfg), cfg)
    assert [r["fpr"] for r in doc["roc_band"]] == list(BAND_GRID)
    assert [r["recall"] for r in doc["pr_band"]] == list(BAND_GRID)
    for got, want in ((_column(doc["roc_band"], "tpr_lo"), roc[:, 0]),
                      (_column(doc["roc_band"], "tpr_hi"), roc[:, 1]),
                      (_column(doc["pr_band"], "precision_lo"), pr[:, 0]),
                      (_column(doc["pr_band"], "precision_hi"), pr[:, 1])):
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    assert not any("roc_band" in n for n in doc["not_computed"])
    # the in-memory (multinomial) band: the same grid and columns, close in width and place
    expected = _memory(paths, cfg)
    for key in ("roc_band", "pr_band"):
        assert [list(r) for r in doc[key]] == [list(r) for r in expected[key]]
        grid, lo, hi = list(expected[key][0])
        assert [r[grid] for r in doc[key]] == [r[grid] for r in expected[key]]
        gap = np.nanmean(np.abs(_column(doc[key], lo) - _column(expected[key], lo))
                         + np.abs(_column(doc[key], hi) - _column(expected[key], hi)))
        assert gap < 0.25, key  # (Monte Carlo: 40 to 60 resamples of few queries)
    assert roc[0, 0] <= roc[0, 1] and roc[-1, 0] == roc[-1, 1] == 1.0


def test_reduced_bands_beyond_the_size_limit_are_not_made_and_said(paths, cluster,
                                                                    monkeypatch):
    """Above WEIGHTED_SORT_LIMIT the weighted counts are not kept: no band, and
    ``not_computed`` says why; without resamples no band either (as in memory)."""
    from metrics_core.engines import reduced, reduced_tables

    _, client = cluster
    monkeypatch.setattr(reduced, "WEIGHTED_SORT_LIMIT", 10)
    doc = dask_engine.evaluate_reduced(paths["q_dir"], paths["c_dir"],
                                       EvalConfig(bootstrap=20), client=client)
    assert doc["roc_band"] is None and doc["pr_band"] is None
    assert reduced_tables.BANDS_NOT_COMPUTED in doc["not_computed"]
    assert next(r for r in doc["metrics"] if r["name"] == "auroc")["ci_method"] == "delong"
    monkeypatch.undo()
    doc = dask_engine.evaluate_reduced(paths["q_dir"], paths["c_dir"],
                                       EvalConfig(bootstrap=0), client=client)
    assert doc["roc_band"] is None and doc["pr_band"] is None
    assert reduced_tables.BANDS_NOT_COMPUTED not in doc["not_computed"]
    json.dumps(doc, allow_nan=False)


# ------------------------------------------------------------- the per-query table's parts
def _canonical(frame):
    """Rows sorted by post id, then criterion in the data set's (natural) order."""
    from metrics_core.engines.gathered import criteria_order

    rank = {c: i for i, c in enumerate(criteria_order(set(frame["criterion"])))}
    return (frame.assign(_rank=frame["criterion"].map(rank))
            .sort_values(["post_id", "_rank"], kind="stable").drop(columns="_rank")
            .reset_index(drop=True))


@pytest.mark.parametrize("cfg", [
    EvalConfig(bootstrap=0),
    EvalConfig(bootstrap=20, bootstrap_unit="post", ks=(1, 2, 5), tau_neg=0.2, tau_pos=0.5,
               ranking_protocol="all_queries", filters=Filters(fold="1", criteria=("C1", "C3"))),
], ids=["default", "variants-filtered"])
def test_reduced_per_query_parts_are_the_gathered_run_s_table(paths, cluster, tmp_path, cfg):
    import pandas as pd

    _, client = cluster
    folder = tmp_path / "out" / "per_query"
    doc = dask_engine.evaluate_reduced(paths["q_dir"], paths["c_dir"], cfg, client=client,
                                       per_query=folder)
    table = doc["per_query"]
    assert table["path"] == str(folder) and table["format"] == "parquet"
    assert table["n_rows"] == doc["dataset"]["n_queries"] == sum(p["rows"]
                                                                 for p in table["parts"])
    assert sorted(p.name for p in folder.iterdir()) == [p["file"] for p in table["parts"]]
    assert [p.name for p in folder.parent.iterdir()] == ["per_query"]  # staging removed
    assert not any(n.startswith("per_query") for n in doc["not_computed"])
    parts = [pd.read_parquet(folder / p["file"]) for p in table["parts"]]
    assert [len(p) for p in parts] == [p["rows"] for p in table["parts"]]
    for part in parts:  # each part in canonical order already
        pd.testing.assert_frame_equal(part, _canonical(part))
    got = _canonical(pd.concat(parts, ignore_index=True))
    gathered = dask_engine.evaluate(paths["q_dir"], paths["c_dir"], cfg, client=client)
    want = gathered.evaluation.per_query.reset_index(drop=True)
    assert list(got.columns) == list(want.columns)
    pd.testing.assert_frame_equal(got, want, check_dtype=False, check_categorical=False)
    assert got["state"].astype(str).tolist() == want["state"].astype(str).tolist()
    assert len(got) > 20 and got["recall@5" if cfg.ks == (1, 2, 5) else "recall@10"].notna().any()
    # the whole folder reads as one table
    assert len(pd.read_parquet(folder)) == table["n_rows"]


def test_cli_reduced_per_query_folder_is_written_or_refused_naming_the_path(paths, cluster,
                                                                           tmp_path, capsys):
    from metrics_core.cli import main

    local, _ = cluster
    base = ["evaluate", str(paths["q_dir"]), str(paths["c_dir"]), "--engine", "dask",
            "--reduced", "--scheduler", local.scheduler_address, "--bootstrap", "0"]
    folder = tmp_path / "pq"
    folder.mkdir()  # an empty folder is fine
    assert main([*base, "--per-query", str(folder), "--out", str(tmp_path / "a.json")]) == 0
    out = capsys.readouterr().out
    doc = json.loads((tmp_path / "a.json").read_text())
    assert f"wrote {folder} (the per-query table: {doc['dataset']['n_queries']:,} rows in" in out
    assert doc["per_query"]["path"] == str(folder) and list(folder.iterdir())

    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "notes.txt").write_text("mine")
    a_file = tmp_path / "file.txt"
    a_file.write_text("mine")
    for target, said in (
            (folder, f"--per-query {folder} holds"),  # the run's own parts: not overwritten
            (kept, f"--per-query {kept} holds 1 entry (notes.txt)"),
            (a_file, f"--per-query {a_file} is a file"),
            (a_file / "pq", f"--per-query {a_file / 'pq'} cannot be written"),
            (paths["q_dir"], f"--per-query {paths['q_dir']} is the input QUERIES")):
        assert main([*base, "--per-query", str(target), "--out",
                     str(tmp_path / "b.json")]) == 2, target
        assert said in capsys.readouterr().err, target
    assert (kept / "notes.txt").read_text() == "mine" and a_file.read_text() == "mine"
    assert not (tmp_path / "b.json").exists()
    assert main([*base, "--per-query", str(tmp_path / "new"), "--out",
                 str(tmp_path / "new" / "c.json")]) == 2
    assert "is inside --per-query" in capsys.readouterr().err
    assert main([*base, "--exclusions", str(tmp_path / "x.csv"), "--out",
                 str(tmp_path / "d.json")]) == 2
    assert "--exclusions needs the per-query values: leave out --reduced" in \
        capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "file.txt", "kept", "pq"]


def test_reduced_per_query_folder_reaches_the_workers_as_an_absolute_path(paths, cluster,
                                                                        tmp_path,
                                                                        monkeypatch):
    """A relative --per-query is given to the workers absolute (a remote worker has a working
    directory of its own); the document keeps the path as the user wrote it."""
    from metrics_core.engines import reduced

    _, client = cluster
    log = tmp_path / "seen.txt"
    original = reduced.unit_summary

    def recording(*args, per_query_dir=None, **kwargs):  # (a copy of it runs on the worker)
        with open(log, "a") as f:
            f.write(f"{per_query_dir}\n")
        return original(*args, per_query_dir=per_query_dir, **kwargs)

    monkeypatch.setattr(reduced, "unit_summary", recording)
    monkeypatch.chdir(tmp_path)
    doc = dask_engine.evaluate_reduced(paths["q_dir"], paths["c_dir"], EvalConfig(bootstrap=0),
                                       client=client, per_query="relative/pq")
    seen = log.read_text().split()
    assert len(seen) == 3 and all(s.startswith(str(tmp_path.resolve())) for s in seen)
    assert doc["per_query"]["path"] == "relative/pq"
    assert sorted(p.name for p in (tmp_path / "relative" / "pq").iterdir()) == \
        [p["file"] for p in doc["per_query"]["parts"]]


def test_reduced_per_query_folder_holds_the_listed_parts_only(paths, cluster, tmp_path,
                                                             monkeypatch):
    """A worker killed while it writes a part leaves its temporary file behind (the unit runs
    again elsewhere): the folder the run hands over holds the listed parts and nothing else."""
    from metrics_core.engines import reduced

    _, client = cluster
    original = reduced.unit_summary

    def leaving(*args, per_query_dir=None, part=0, **kwargs):  # as a killed writer leaves it
        with open(f"{per_query_dir}/.part-{part:05d}.parquet.999.tmp", "w") as f:
            f.write("torn")
        return original(*args, per_query_dir=per_query_dir, part=part, **kwargs)

    monkeypatch.setattr(reduced, "unit_summary", leaving)
    doc = dask_engine.evaluate_reduced(paths["q_dir"], paths["c_dir"], EvalConfig(bootstrap=0),
                                       client=client, per_query=tmp_path / "pq")
    assert sorted(p.name for p in (tmp_path / "pq").iterdir()) == \
        [p["file"] for p in doc["per_query"]["parts"]] == \
        [f"part-{i:05d}.parquet" for i in range(3)]
