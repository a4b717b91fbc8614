"""The Dask engine gives the in-memory engine's metrics_master.json (records, tables,
intervals), and fails clearly: unreachable scheduler, dying workers, posts split across files."""

from __future__ import annotations

import functools
import json
import math
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from distributed import Client, LocalCluster

from metrics_core.cli import main
from metrics_core.config import EvalConfig, Filters
from metrics_core.data.dataset import Dataset, Queries
from metrics_core.engines import dask as dask_engine
from metrics_core.engines.gathered import QueryLevelDataset
from metrics_core.errors import InputError
from metrics_core.evaluation.evaluator import Evaluator, QueryLevelEvaluator
from metrics_core.inputs import loading
from metrics_core.inputs.audit import audit
from tests.conftest import random_frames

N_PARTS = 3


def _data(seed: int = 3):
    """Random queries / candidates with ties, missed gold, excluded rows and empty queries."""
    q, c = random_frames(n_posts=60, seed=seed)
    q.loc[5, "p_has_evidence"] = np.nan                    # query excluded
    c.loc[7, "score"] = np.nan                             # candidate excluded
    empty = (c["post_id"] == "p010") & (c["criterion"] == "C2")
    q.loc[(q["post_id"] == "p010") & (q["criterion"] == "C2"), "n_gold"] = 0
    c = c[~empty].reset_index(drop=True)                   # a query without candidates
    return q, c


def _write(q, c, root: Path, n_parts: int = N_PARTS) -> dict:
    """The two tables as single files and as folders partitioned by a hash of post_id."""
    q.to_parquet(root / "queries.parquet")
    c.to_parquet(root / "candidates.parquet")
    for name, frame in (("queries", q), ("candidates", c)):
        folder = root / name
        folder.mkdir()
        bucket = pd.util.hash_pandas_object(frame["post_id"], index=False).to_numpy() % n_parts
        for i in range(n_parts):
            frame[bucket == i].to_parquet(folder / f"part-{i}.parquet")
    return {"q": root / "queries.parquet", "c": root / "candidates.parquet",
            "q_dir": root / "queries", "c_dir": root / "candidates"}


def _memory(paths, cfg) -> dict:
    loaded = loading.load(paths["q"], paths["c"])
    report = audit(loaded.dataset, loaded=loaded)
    return json.loads(Evaluator(loaded.dataset, audit=report).evaluate(cfg).to_json())


def _differences(a, b, path="", out=None) -> list[str]:
    """Every place where two documents differ (floats: beyond 1e-12)."""
    out = [] if out is None else out
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            out.append(f"{path}: keys {sorted(set(a) ^ set(b))}")
        for key in set(a) & set(b):
            _differences(a[key], b[key], f"{path}/{key}", out)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            out.append(f"{path}: {len(a)} vs {len(b)} items")
        for i, (u, v) in enumerate(zip(a, b, strict=False)):
            _differences(u, v, f"{path}[{i}]", out)
    elif isinstance(a, float) and isinstance(b, float):
        if not math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12):
            out.append(f"{path}: {a!r} vs {b!r}")
    elif a != b or type(a) is not type(b):
        out.append(f"{path}: {a!r} vs {b!r}")
    return out


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    q, c = _data()
    return _write(q, c, tmp_path_factory.mktemp("dask_data"))


# ------------------------------------------------------------------- agreement
@pytest.mark.parametrize("cfg", [
    EvalConfig(bootstrap=200, seed=7),
    EvalConfig(bootstrap=200, seed=1, bootstrap_unit="post", tau_neg=0.2, tau_pos=0.5,
               ks=(1, 2, 5), map_denominator="min_gold_k", evidence_protocol="all_queries",
               ranking_protocol="all_queries", binning="quantile", multilabel_rule="screen_in"),
    EvalConfig(bootstrap=100, seed=2, bootstrap_unit="post",
               filters=Filters(fold="1", criteria=("C1", "C3"))),
], ids=["query-unit", "post-unit-variants", "filtered"])
def test_partitioned_dask_run_equals_the_in_memory_run(paths, cluster, cfg):
    _, client = cluster
    expected = _memory(paths, cfg)
    run = dask_engine.evaluate(paths["q_dir"], paths["c_dir"], cfg, client=client)
    got = json.loads(run.evaluation.to_json())
    # the inputs differ in name only (a folder of parts against one file): compare the rest
    for doc in (expected, got):
        doc.pop("run")
        doc["dataset"].pop("queries_file")
        doc["dataset"].pop("candidates_file")
        for finding in doc["audit"]["findings"]:
            if finding["check"] == "no_exclusions":
                finding["examples"] = [e.split(" ", 1)[1] for e in finding["examples"]]
    assert _differences(expected, got) == []
    # the intervals are identical, not merely close: the same resamples of the same units
    assert [r["ci95"] for r in got["metrics"]] == [r["ci95"] for r in expected["metrics"]]
    assert sum(r["ci95"] is not None for r in got["metrics"]) > 20
    assert len(got["per_criterion"]) >= 2 and got["gamma_sweep"]
    assert got["dataset"]["n_excluded_queries"] == 1
    assert got["dataset"]["n_candidates"] == expected["dataset"]["n_candidates"]


def test_dask_run_on_the_same_files_equals_the_in_memory_run_exactly(paths, cluster):
    _, client = cluster
    cfg = EvalConfig(bootstrap=100, seed=3)
    expected = _memory(paths, cfg)
    got = json.loads(dask_engine.evaluate(paths["q"], paths["c"], cfg,
                                          client=client).evaluation.to_json())
    for doc in (expected, got):
        doc["run"].pop("created")
        doc["run"].pop("inputs")
    assert _differences(expected, got) == []
    # the exclusion examples name the input file and row, as in memory
    examples = next(f for f in got["audit"]["findings"] if f["check"] == "no_exclusions")
    assert examples["examples"][0] == "queries.parquet row 6: post p001, criterion C3 " \
                                      "(p_has_evidence missing)"


def test_cli_dask_engine_on_a_scheduler_writes_the_same_files(paths, cluster, tmp_path):
    local, _ = cluster
    mem, dsk = tmp_path / "memory.json", tmp_path / "dask.json"
    common = ["--bootstrap", "50", "--seed", "4", "--quiet"]
    assert main(["evaluate", str(paths["q"]), str(paths["c"]), "--out", str(mem),
                 "--per-query", str(tmp_path / "pq_mem.csv"), *common]) == 0
    assert main(["evaluate", str(paths["q_dir"]), str(paths["c_dir"] / "*.parquet"),
                 "--engine", "dask", "--scheduler", local.scheduler_address,
                 "--out", str(dsk), "--per-query", str(tmp_path / "pq_dask.csv"),
                 *common]) == 0
    a, b = json.loads(mem.read_text()), json.loads(dsk.read_text())
    assert [r["value"] for r in a["metrics"]] == [r["value"] for r in b["metrics"]]
    assert [r["ci95"] for r in a["metrics"]] == [r["ci95"] for r in b["metrics"]]
    assert len(b["run"]["inputs"]) == 2 * N_PARTS  # every part file is fingerprinted
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "pq_mem.csv"),
                                  pd.read_csv(tmp_path / "pq_dask.csv"))


def test_units_group_files_that_share_posts():
    q_posts = [np.array(["a", "b"], dtype=object), np.array(["c"], dtype=object)]
    c_posts = [np.array(["a"], dtype=object), np.array(["c"], dtype=object),
               np.array(["b"], dtype=object)]
    q_files = [Path("q0"), Path("q1")]
    c_files = [Path("c0"), Path("c1"), Path("c2")]
    assert dask_engine.plan_units(q_posts, c_posts, q_files, c_files) == [
        ([0], [0, 2]), ([1], [1])]
    with pytest.raises(InputError, match=r"candidates of posts that have no query: 'z'"):
        dask_engine.plan_units(q_posts, [np.array(["z"], dtype=object)], q_files, [Path("c")])


def _posts_file(path, posts, table):
    """A queries (``table`` "q") or candidates file with one row per post."""
    frame = pd.DataFrame({"post_id": posts, "criterion": "C1"})
    if table == "c":
        frame = frame.assign(sent_uid="s1", score=0.5, is_gold=False)
    else:
        frame = frame.assign(has_evidence=0, p_has_evidence=0.5)
    frame.to_parquet(path)


def test_the_cluster_plans_the_units_as_one_process_does_without_gathering_posts(tmp_path,
                                                                                  cluster):
    """The plan from posts shuffled on the workers equals the in-process plan, and so do its
    errors; what reaches the client is a few rows per file, not the posts."""
    from metrics_core.engines import planning

    _, client = cluster
    frames = {"q": [["a", "b", "e"], ["c", "d"], ["f"]], "c": [["a"], ["c", "f"], ["b", "d"]]}
    files = {}
    for table, posts in frames.items():
        files[table] = []
        for i, names in enumerate(posts):
            path = tmp_path / f"{table}{i}.parquet"
            _posts_file(path, names, table)
            files[table].append(path)
    lists = {t: [np.array(p, dtype=object) for p in ps] for t, ps in frames.items()}
    expected = [([0, 1, 2], [0, 1, 2])]  # q0-c0, q0-c2, q1-c2, q1-c1, q2-c1: one unit
    assert dask_engine.plan_units(lists["q"], lists["c"], files["q"], files["c"]) == expected
    assert planning.plan(client, files["q"], files["c"]) == expected
    # separate groups stay separate units
    two = [[["a"], ["b"]], [["b"], ["a"]]]
    for table, posts in zip("qc", two, strict=True):
        for i, names in enumerate(posts):
            _posts_file(tmp_path / f"two_{table}{i}.parquet", names, table)
    q2 = [tmp_path / f"two_q{i}.parquet" for i in range(2)]
    c2 = [tmp_path / f"two_c{i}.parquet" for i in range(2)]
    assert planning.plan(client, q2, c2) == [([0], [1]), ([1], [0])]
    links = planning.post_links(pd.DataFrame({"post": ["a", "b", "a", "b"], "table": [0, 0, 1, 1],
                                              "file": [0, 1, 1, 0]}))
    assert sorted(links["kind"]) == ["edge", "edge"] and len(links) == 2
    # errors: posts split across files of one table, candidates without a query
    split = tmp_path / "split.parquet"
    _posts_file(split, ["a", "c", "zz"], "q")
    orphans = tmp_path / "orphans.parquet"
    _posts_file(orphans, ["zz", "f", "c", "a"], "c")
    for plan in (lambda q, c: planning.plan(client, q, c),
                 lambda q, c: dask_engine.plan_units(
                     [np.array(pd.read_parquet(f)["post_id"].unique(), dtype=object) for f in q],
                     [np.array(pd.read_parquet(f)["post_id"].unique(), dtype=object) for f in c],
                     q, c)):
        with pytest.raises(InputError) as info:
            plan([*files["q"], split], files["c"])
        assert info.value.render().startswith(
            f"queries table: 2 posts are split across input partitions: post 'a' in "
            f"{files['q'][0]}, {split}; post 'c' in {files['q'][1]}, {split}")
        with pytest.raises(InputError, match=r"candidates of posts that have no query: 'a', "
                                             r"'c', 'zz'") as info:
            plan(files["q"][2:], [orphans])
        assert str(orphans) in info.value.render()


# ---------------------------------------------------------------------- errors
def test_post_split_across_input_partitions_exits_2_naming_it(tmp_path, cluster, capsys):
    local, _ = cluster
    q, c = _data()
    root = tmp_path / "split"
    root.mkdir()
    paths = _write(q, c, root, n_parts=2)
    holder = next(f for f in sorted(paths["q_dir"].iterdir())
                  if "p001" not in set(pd.read_parquet(f)["post_id"]))
    moved = q[q["post_id"] == "p001"].iloc[:1]
    pd.concat([pd.read_parquet(holder), moved]).to_parquet(holder)
    out = tmp_path / "m.json"
    code = main(["evaluate", str(paths["q_dir"]), str(paths["c_dir"]), "--engine", "dask",
                 "--scheduler", local.scheduler_address, "--out", str(out), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2
    assert "queries table: 1 post is split across input partitions: post 'p001' in " in err
    assert "part-0.parquet" in err and "part-1.parquet" in err
    assert not out.exists()


def test_post_split_is_reported_with_post_and_files(tmp_path, cluster):
    _, client = cluster
    q, c = _data()
    root = tmp_path / "split"
    root.mkdir()
    paths = _write(q, c, root, n_parts=2)
    files = sorted(paths["c_dir"].iterdir())
    moved = c[c["post_id"] == "p001"].iloc[:1]
    holder = next(f for f in files if "p001" not in set(pd.read_parquet(f)["post_id"]))
    pd.concat([pd.read_parquet(holder), moved]).to_parquet(holder)
    with pytest.raises(InputError) as info:
        dask_engine.evaluate(paths["q_dir"], paths["c_dir"], EvalConfig(bootstrap=0),
                             client=client)
    text = info.value.render()
    assert "1 post is split across input partitions" in text
    assert "post 'p001'" in text
    assert all(str(f) in text for f in files)


@pytest.mark.parametrize("reduced", [False, True])
def test_bad_input_in_a_part_is_reported_naming_the_unit_s_files(tmp_path, cluster, reduced):
    """A value that breaks a rule in one part: both runs (gathered and reduced) refuse it,
    the message naming the files its rows are counted in."""
    _, client = cluster
    q, c = _data()
    root = tmp_path / "bad"
    root.mkdir()
    paths = _write(q, c, root, n_parts=2)
    part = sorted(paths["q_dir"].iterdir())[0]
    broken = pd.read_parquet(part)
    broken.loc[broken.index[0], "p_has_evidence"] = 1.5
    broken.to_parquet(part)
    run = dask_engine.evaluate_reduced if reduced else dask_engine.evaluate
    with pytest.raises(InputError) as info:
        run(paths["q_dir"], paths["c_dir"], EvalConfig(bootstrap=0), client=client)
    text = info.value.render()
    assert "p_has_evidence" in text
    assert "rows counted within the files" in text and str(part) in text, text


def test_unreachable_scheduler_names_the_address(paths, tmp_path, capsys):
    out = tmp_path / "m.json"
    code = main(["evaluate", str(paths["q_dir"]), str(paths["c_dir"]), "--engine", "dask",
                 "--scheduler", "tcp://127.0.0.1:9", "--connect-timeout", "1",
                 "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2
    assert "cannot reach the Dask scheduler at tcp://127.0.0.1:9 within 1 s" in err
    assert "Traceback" not in err and not out.exists()


def test_scheduler_needs_the_dask_engine(paths, tmp_path, capsys):
    code = main(["evaluate", str(paths["q"]), str(paths["c"]), "--scheduler", "tcp://x:1",
                 "--out", str(tmp_path / "m.json")])
    assert code == 2 and "--scheduler needs --engine dask" in capsys.readouterr().err


def _die_once(q_paths, c_paths, config, *, marker, **kwargs):
    """Kill the worker process the first time any unit runs; then work normally."""
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL)
    except FileExistsError:
        return dask_engine.evaluate_unit(q_paths, c_paths, config, **kwargs)
    os.close(fd)
    os._exit(1)


def _die_always(q_paths, c_paths, config, **kwargs):
    os._exit(1)


def test_a_dying_worker_is_retried_or_fails_with_a_message(paths, tmp_path):
    import dask

    cfg = EvalConfig(bootstrap=50, seed=5)
    expected = _memory(paths, cfg)
    with dask.config.set({"distributed.scheduler.allowed-failures": 1}), \
            LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                         dashboard_address=":0") as local, Client(local) as client:
        marker = tmp_path / "died"
        run = dask_engine.evaluate(paths["q_dir"], paths["c_dir"], cfg, client=client,
                                   task=functools.partial(_die_once, marker=str(marker)))
        assert marker.exists()  # a worker did die, and the unit ran again elsewhere
        got = json.loads(run.evaluation.to_json())
        assert [r["value"] for r in got["metrics"]] == [r["value"] for r in expected["metrics"]]
        assert [r["ci95"] for r in got["metrics"]] == [r["ci95"] for r in expected["metrics"]]
        with pytest.raises(RuntimeError, match="a Dask worker died each time"):
            dask_engine.evaluate(paths["q_dir"], paths["c_dir"], cfg, client=client,
                                 task=_die_always)


def test_the_query_level_data_set_refuses_candidate_reads(paths, cluster):
    _, client = cluster
    run = dask_engine.evaluate(paths["q_dir"], paths["c_dir"], EvalConfig(bootstrap=0),
                               client=client)
    ds = run.evaluator.ds
    loaded = loading.load(paths["q"], paths["c"])
    assert ds.n_candidates == loaded.dataset.n_candidates
    np.testing.assert_array_equal(ds.n_cand, loaded.dataset.n_cand)
    np.testing.assert_array_equal(ds.n_gold, loaded.dataset.n_gold)
    # The query-level data set and its evaluator offer the queries' interface only: what
    # reads the candidates is no part of it, and asking for it says where they are.
    assert not isinstance(ds, Dataset) and isinstance(ds, Queries)
    assert not isinstance(run.evaluator, Evaluator)
    assert isinstance(run.evaluator, QueryLevelEvaluator)
    with pytest.raises(AttributeError, match="cum_gold: the candidates of a Dask run stay on "
                                             "the workers"):
        _ = ds.cum_gold
    assert not hasattr(ds, "offsets")
    with pytest.raises(AttributeError, match="sentences: the candidates of a Dask run stay on "
                                             "the workers"):
        run.evaluator.sentences(EvalConfig(), "p001", "C1")
    with pytest.raises(AttributeError, match="no attribute 'anything_else'"):
        _ = ds.anything_else
    sub = run.evaluator.for_filters(Filters(criteria=("C1",)))
    assert isinstance(sub.ds, QueryLevelDataset)
    np.testing.assert_array_equal(sub.ds.n_cand, loaded.dataset.n_cand[loaded.dataset.criterion
                                                                          == "C1"])


def test_a_file_that_is_not_parquet_exits_2_naming_it(paths, tmp_path, capsys):
    bad = tmp_path / "queries.csv"
    pd.read_parquet(paths["q"]).to_csv(bad, index=False)
    out = tmp_path / "m.json"
    code = main(["evaluate", str(bad), str(paths["c_dir"]), "--engine", "dask",
                 "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and "queries.csv" in err and "not a readable Parquet file" in err
    assert "Traceback" not in err and not out.exists()
    missing = tmp_path / "nowhere" / "*.parquet"
    assert main(["evaluate", str(missing), str(paths["c_dir"]), "--engine", "dask",
                 "--out", str(out)]) == 2
    assert "no Parquet files found for the queries table" in capsys.readouterr().err


# ------------------------------------------------------------- reductions (issue 30)
def test_classification_reduced_on_the_cluster_equals_the_in_memory_values(paths, cluster):
    _, client = cluster
    cfg = EvalConfig(bootstrap=0)
    loaded = loading.load(paths["q"], paths["c"])
    ev = Evaluator(loaded.dataset)
    expected = ev.classification()
    got = dask_engine.classification_by_reduction(paths["q_dir"], paths["c_dir"], cfg,
                                                  client=client)
    for name in ("auroc", "auprc"):
        assert got[name].defined
        assert math.isclose(got[name].value, expected[name].value, rel_tol=1e-12, abs_tol=1e-12)
    want = ev.tpr_at_fpr(cfg)
    assert [(t.target, t.tpr, t.fpr, t.threshold, t.defined) for t in got["tpr_at_fpr"]] == \
        [(t.target, t.tpr, t.fpr, t.threshold, t.defined) for t in want]
    # what reached the client: one count pair per distinct p, not a value per query
    assert got["counts"].n == loaded.dataset.n_queries
    assert got["counts"].values.size == np.unique(loaded.dataset.p).size


def test_score_counts_merge_in_any_tree_to_the_whole_data_set_s_counts():
    from metrics_core.engines.reductions import counted_scores, merge_counts, score_counts
    from metrics_core.metrics import classification

    rng = np.random.default_rng(5)
    p = np.round(rng.random(500), 2)                  # few distinct values: many ties
    y = (rng.random(500) < p).astype(int)
    parts = np.array_split(np.arange(500), 7)
    counts = [score_counts(y[i], p[i]) for i in parts]
    whole = score_counts(y, p)
    for merged in (merge_counts(*counts), merge_counts(merge_counts(*counts[:3]),
                                                        merge_counts(*counts[3:]))):
        assert np.array_equal(merged.values, whole.values)
        assert np.array_equal(merged.pos, whole.pos) and np.array_equal(merged.neg, whole.neg)
    s = counted_scores(merge_counts(*counts[::-1]))
    assert classification.roc_auc(s) == classification.roc_auc(y, p)
    assert classification.average_precision(s) == classification.average_precision(y, p)
    assert classification.tpr_at_fpr(s) == classification.tpr_at_fpr(y, p)
    # hand-worked: scores 0.9 (pos), 0.5 (pos, neg), 0.1 (neg): AUROC = (1 + 0.5 + 1 + 1) / 4
    small = merge_counts(score_counts([1, 0], [0.5, 0.1]), score_counts([1, 0], [0.9, 0.5]))
    assert classification.roc_auc(counted_scores(small)).value == 0.875
    assert classification.average_precision(counted_scores(small)).value == (1 + 2 / 3) / 2


def test_poisson_bootstrap_is_identical_whatever_the_partitioning(paths, cluster, tmp_path):
    _, client = cluster
    cfg = EvalConfig(bootstrap=300, seed=11, bootstrap_unit="post")
    q, c = _data()
    other = _write(q, c, tmp_path, n_parts=5)
    runs = [dask_engine.bootstrap_by_reduction(qs, cs, cfg, client=client)
            for qs, cs in ((paths["q"], paths["c"]), (paths["q_dir"], paths["c_dir"]),
                           (other["q_dir"], other["c_dir"]))]
    assert runs[0] == runs[1] == runs[2]
    got = runs[0]
    assert got["auroc"]["method"] == "poisson_bootstrap"
    ev = Evaluator(loading.load(paths["q"], paths["c"]).dataset)
    assert math.isclose(got["auroc"]["value"], ev.classification()["auroc"].value,
                        rel_tol=1e-12)
    for name in ("auroc", "auprc", "sensitivity", "specificity"):
        lo, hi = got[name]["ci95"]
        assert lo <= got[name]["value"] <= hi and hi - lo > 0.01
    # another seed gives other intervals; the query unit keys on (post, criterion)
    assert dask_engine.bootstrap_by_reduction(
        paths["q_dir"], paths["c_dir"], EvalConfig(bootstrap=300, seed=12),
        client=client)["auroc"]["ci95"] != got["auroc"]["ci95"]


def test_poisson_weights_depend_on_seed_and_unit_only():
    from metrics_core.engines.resampling import poisson_weights, unit_keys

    keys = unit_keys(np.array([f"p{i:04d}" for i in range(4000)], dtype=object))
    w = poisson_weights(3, keys, 50)
    assert w.shape == (50, 4000) and w.dtype == np.int32
    # the weight of a unit does not depend on which other units are there, nor their order
    assert np.array_equal(poisson_weights(3, keys[::-1], 50)[:, ::-1], w)
    assert np.array_equal(poisson_weights(3, keys[100:200], 50), w[:, 100:200])
    assert np.array_equal(poisson_weights(3, keys, 20, start=30), w[30:])
    assert not np.array_equal(poisson_weights(4, keys, 50), w)
    # Poisson(1): mean 1, variance 1, P(0) = 1/e
    assert abs(w.mean() - 1) < 0.01 and abs(w.var() - 1) < 0.02
    assert abs((w == 0).mean() - math.exp(-1)) < 0.005
    assert np.array_equal(unit_keys(["a", "b"], ["C1", "C1"]),
                          unit_keys(np.array(["a", "b"], dtype=object), ["C1", "C1"]))


def test_poisson_and_delong_intervals_cover_the_true_auroc():
    """Coverage sanity on binormal data (true AUROC = Φ(1/√2) ≈ 0.760): both intervals cover
    it in about 95% of 150 data sets."""
    from scipy.stats import norm

    from metrics_core.engines.reductions import score_counts
    from metrics_core.engines.resampling import (
        auroc_of_weighted,
        delong_interval,
        percentile_interval,
        poisson_weights,
        weighted_counts,
    )

    truth = float(norm.cdf(1 / math.sqrt(2)))
    rng = np.random.default_rng(0)
    keys = np.arange(200, dtype=np.uint64)
    hits = {"poisson": 0, "delong": 0}
    reps = 150
    for r in range(reps):
        y = (rng.random(200) < 0.4).astype(int)
        p = np.round(rng.normal(y, 1.0), 2)           # rounded: ties, as real scores have
        w = poisson_weights(r, keys, 400)
        lo, hi = percentile_interval(auroc_of_weighted(weighted_counts(y, p, w)))
        hits["poisson"] += lo <= truth <= hi
        lo, hi = delong_interval(score_counts(y, p))
        hits["delong"] += lo <= truth <= hi
    for name, n in hits.items():
        assert 0.88 <= n / reps <= 0.99, (name, n / reps)


def test_delong_interval_by_hand():
    from metrics_core.engines.reductions import score_counts
    from metrics_core.engines.resampling import delong_interval

    # positives 0.9, 0.5; negatives 0.5, 0.1: AUC 0.875; V10 = (1, 0.75), V01 = (0.75, 1)
    # S10 = S01 = 0.03125; var = 0.03125 / 2 * 2 = 0.03125
    lo, hi = delong_interval(score_counts([1, 1, 0, 0], [0.9, 0.5, 0.5, 0.1]))
    half = 1.959963984540054 * math.sqrt(0.03125)
    assert math.isclose(lo, 0.875 - half, rel_tol=1e-12) and hi == 1.0
    assert delong_interval(score_counts([1, 1], [0.2, 0.3])) is None


def test_weighted_auroc_and_auprc_equal_the_weighted_in_memory_kernels():
    from metrics_core.engines.resampling import (
        auprc_of_weighted,
        auroc_of_weighted,
        merge_weighted,
        poisson_weights,
        weighted_counts,
    )
    from metrics_core.metrics import classification

    rng = np.random.default_rng(9)
    p = np.round(rng.random(300), 1)                  # heavy ties
    y = (rng.random(300) < p).astype(int)
    w = poisson_weights(1, np.arange(300, dtype=np.uint64), 5)
    halves = [weighted_counts(y[s], p[s], w[:, s]) for s in (slice(0, 120), slice(120, None))]
    merged = merge_weighted(*halves)
    auroc, auprc = auroc_of_weighted(merged), auprc_of_weighted(merged)
    for b in range(5):
        assert math.isclose(auroc[b], classification.roc_auc(y, p, sample_weight=w[b]).value,
                            rel_tol=1e-12)
        assert math.isclose(auprc[b], classification.average_precision(
            y, p, sample_weight=w[b]).value, rel_tol=1e-12)


# ------------------------------------------------------ the reduced run (issue 30)
def _by_name(records) -> dict:
    return {r["name"]: r for r in records}


@pytest.mark.parametrize("cfg", [
    EvalConfig(bootstrap=120, seed=7),
    EvalConfig(bootstrap=60, seed=1, bootstrap_unit="post", tau_neg=0.2, tau_pos=0.5,
               ks=(1, 2, 5), map_denominator="min_gold_k", evidence_protocol="all_queries",
               ranking_protocol="all_queries", binning="quantile", multilabel_rule="screen_in"),
    EvalConfig(bootstrap=0, filters=Filters(fold="1", criteria=("C1", "C3")),
               calibration_view="top_label", n_bins=7),
    EvalConfig(bootstrap=30, calibration_view="top_label", binning="quantile", n_bins=15),
], ids=["query-unit", "post-unit-variants", "filtered-no-bootstrap", "top-label-quantile"])
def test_reduced_run_equals_the_in_memory_values_record_by_record(paths, cluster, cfg):
    """Every record the reduced run makes has the in-memory value (1e-12), n, subset and
    definedness; Wilson intervals are the same; the bootstrap's are Poisson's."""
    _, client = cluster
    expected = _memory(paths, cfg)
    doc = dask_engine.evaluate_reduced(paths["q_dir"], paths["c_dir"], cfg, client=client)
    got, want = _by_name(doc["metrics"]), _by_name(expected["metrics"])
    missing = set(want) - set(got)
    assert missing == set()  # every record of the in-memory run
    assert not set(got) - set(want) and len(got) > 60
    for name, r in got.items():
        e = want[name]
        for key in ("value", "n", "subset", "defined", "variant"):
            assert _differences(e[key], r[key]) == [], (name, key, e[key], r[key])
        if e["ci_method"] in ("wilson", "poisson", "wald"):  # analytic: the same intervals
            assert _differences(e["ci95"], r["ci95"]) == [], name
            assert r["ci_method"] == e["ci_method"], name
        elif r["ci95"] is not None:
            assert r["ci_method"] == "poisson_bootstrap", name
            assert r["ci95"][0] <= r["ci95"][1], name
            if name not in ("ece", "mce"):  # (resampled ECE / MCE are biased upwards)
                assert r["ci95"][0] <= r["value"] <= r["ci95"][1] or not e["defined"], name
    assert (sum(r["ci_method"] == "poisson_bootstrap" for r in got.values()) > 30) == \
        bool(cfg.bootstrap)
    # the in-memory document's keys but the parts not computed, and its dataset section (the
    # inputs' names aside: a folder of parts against one file)
    assert set(expected) - set(doc) == NOT_REDUCED
    assert set(doc) - set(expected) == {"engine", "n_resamples", "not_computed", "warnings"}
    assert doc["schema"] == expected["schema"] == "metrics_master/1"
    assert set(doc["dataset"]) == set(expected["dataset"])
    for key, value in expected["dataset"].items():
        if key not in ("queries_file", "candidates_file"):
            assert doc["dataset"][key] == value, key
    assert doc["not_computed"] and doc["engine"] == "dask (reduced)"
    _assert_tables_agree(expected, doc, bootstrap=bool(cfg.bootstrap))


#: The in-memory document's parts the reduced run does not make (reduced_tables.NOT_COMPUTED).
NOT_REDUCED: set = set()
#: Table keys made from the bootstrap's intervals: in memory the multinomial bootstrap's, in the
#: reduced run the Poisson bootstrap's (or not made); every other field must agree.
INTERVAL_FIELDS = {"fold_summary": ("ci_lo", "ci_hi", "text"),
                   "targets": ("ci_lo", "ci_hi", "status"),
                   "per_criterion": ("auroc_ci_lo", "auroc_ci_hi"),
                   "decision_curve": ("net_benefit_ci_lo", "net_benefit_ci_hi"),
                   "roc_band": ("tpr_lo", "tpr_hi"), "pr_band": ("precision_lo", "precision_hi")}
#: The interval columns the reduced run does not make (the per-criterion AUROC intervals).
NOT_REDUCED_COLUMNS: dict = {}


def _assert_tables_agree(expected: dict, doc: dict, *, bootstrap: bool) -> None:
    """Every table and check of the reduced document equals the in-memory one (1e-12), but
    for the bootstrap intervals' fields; the tables it lacks are the documented ones."""
    tables = set(expected) - {"run", "dataset", "config", "generated_by", "metrics"}
    assert tables - set(doc) == NOT_REDUCED
    assert [e.split(" ")[0] for e in doc["not_computed"]] == ["per_query"]
    for key in sorted(tables - NOT_REDUCED):
        want, got = expected[key], doc[key]
        if key == "audit":  # the excluded rows are quoted in their files (one, or parts)
            want, got = (_without_files(d) for d in (want, got))
        if bootstrap and key == "gate_risk_coverage":  # the areas' intervals: Poisson's
            want, got = ({k: v for k, v in d.items() if k != "ci95"} for d in (want, got))
            for name, (lo, hi) in doc[key]["ci95"].items():
                assert lo <= doc[key][name] <= hi, name
            assert set(doc[key]["ci95"]) == set(expected[key]["ci95"])
        if bootstrap and key in INTERVAL_FIELDS:
            drop = INTERVAL_FIELDS[key]
            want = [{k: v for k, v in row.items() if k not in drop} for row in want]
            got = [{k: v for k, v in row.items() if k not in drop} for row in got]
        assert _differences(want, got, key) == [], key
    assert [c["passed"] for c in doc["consistency_checks"]].count(False) == 0
    for key in INTERVAL_FIELDS:  # every interval column is there but these
        if expected[key] is None:  # (the bands without resamples)
            assert doc[key] is None, key
            continue
        missing = set(expected[key][0]) - set(doc[key][0])
        assert missing == set(NOT_REDUCED_COLUMNS.get(key, ()) if bootstrap else ()), key
    if bootstrap:  # the decision curve's Poisson band holds its point at most thresholds
        rows = [r for r in doc["decision_curve"] if r["net_benefit_ci_lo"] is not None]
        assert len(rows) > 80 and all(r["net_benefit_ci_lo"] <= r["net_benefit_ci_hi"]
                                      for r in rows)
        inside = [r["net_benefit_ci_lo"] - 1e-12 <= r["net_benefit"]
                  <= r["net_benefit_ci_hi"] + 1e-12 for r in rows]
        assert sum(inside) >= 0.9 * len(rows)
        for row in doc["per_criterion"][:-2]:  # each criterion's AUROC in its interval
            assert row["auroc_ci_lo"] <= row["auroc"] <= row["auroc_ci_hi"], row["criterion"]
    assert len(doc["per_criterion"]) == len(expected["dataset"]["criteria"]) + 2
    assert doc["per_fold"] is not None and doc["gate_grid"] and doc["decision_curve"]


def _without_files(audit_section: dict) -> dict:
    """An audit section whose excluded rows' examples do not name the input file and row."""
    out = json.loads(json.dumps(audit_section))
    for finding in out["findings"]:
        if finding["check"] == "no_exclusions":
            finding["examples"] = [e.split(": ", 1)[1] for e in finding["examples"]]
    return out


def _audited_data():
    """_data with a finding for every check the audit has: a post in two folds, a positive
    without gold, a negative with gold, a criterion of one class, an excluded query, ..."""
    q, c = _data(seed=5)
    q.loc[(q["post_id"] == "p007") & (q["criterion"] == "C1"), "fold"] = 0
    q.loc[(q["post_id"] == "p033") & (q["criterion"] == "C2"), "fold"] = 4
    no_gold = (q["has_evidence"] == 1).to_numpy().nonzero()[0][2]
    post, crit = q.loc[no_gold, ["post_id", "criterion"]]
    q.loc[no_gold, "n_gold"] = 0
    c.loc[(c["post_id"] == post) & (c["criterion"] == crit), "is_gold"] = 0
    q.loc[(q["has_evidence"] == 0).to_numpy().nonzero()[0][:7], "n_gold"] = 2
    q["criterion"] = q["criterion"].replace({"C3": "C10"})  # natural order: C1, C2, C10
    c["criterion"] = c["criterion"].replace({"C3": "C10"})
    extra = q[q["criterion"] == "C1"].head(12).assign(criterion="C4", has_evidence=0)
    extra_c = c.merge(extra[["post_id"]], on="post_id")
    extra_c = extra_c[extra_c["criterion"] == "C1"].assign(criterion="C4", is_gold=0)
    q = pd.concat([q, extra], ignore_index=True)  # C4: negatives only, in 12 posts
    c = pd.concat([c, extra_c], ignore_index=True)
    q.loc[q.index[-1], "n_gold"] = 0
    c.loc[c.index[40], "score"] = np.nan  # a second excluded candidate
    return q, c


@pytest.mark.parametrize("n_parts", [1, 3, 5])
def test_reduced_audit_equals_the_gathered_run_s_whatever_the_partitioning(cluster, tmp_path,
                                                                           n_parts):
    """The audit of the reduced run equals the gathered run's (all rows, whatever the
    filters), finding for finding: counts, messages (the global counts they quote) and
    examples (the first by post, the excluded rows in their files); on one file it is the
    in-memory engine's."""
    _, client = cluster
    q, c = _audited_data()
    paths = _write(q, c, tmp_path, n_parts=n_parts)
    cfg = EvalConfig(bootstrap=0, filters=Filters(fold="1"))
    gathered = json.loads(dask_engine.evaluate(paths["q_dir"], paths["c_dir"], cfg,
                                               client=client).evaluation.to_json())["audit"]
    doc = dask_engine.evaluate_reduced(paths["q_dir"], paths["c_dir"], cfg, client=client)
    assert doc["audit"] == gathered
    found = {f["check"]: f for f in gathered["findings"]}
    assert set(found) == {"folds_post_disjoint", "positives_have_gold",
                          "negatives_without_gold", "gold_within_candidates",
                          "queries_have_candidates", "criteria_complete",
                          "gold_ties_resolved",
                          "both_classes_per_criterion", "no_exclusions"}
    assert found["folds_post_disjoint"]["examples"] == ["post p007 in folds 0, 2",
                                                        "post p033 in folds 3, 4"]
    assert found["criteria_complete"]["count"] == 60 - 12 + 1  # lack C4, one lacks C10 too
    assert found["no_exclusions"]["count"] == 10  # a query with its 7 candidates, 2 scores
    if n_parts == 1:
        single = dask_engine.evaluate_reduced(paths["q"], paths["c"], cfg, client=client)
        assert single["audit"] == _memory(paths, cfg)["audit"]


def test_reduced_run_is_the_same_whatever_the_partitioning_and_survives_a_killed_worker(
        paths, tmp_path):
    """One file, 3 parts and 5 parts give the same document (intervals bit for bit); a worker
    killed while it holds a unit's summary changes nothing (the unit runs again)."""
    import dask

    cfg = EvalConfig(bootstrap=80, seed=11, bootstrap_unit="post")
    q, c = _data()
    other = _write(q, c, tmp_path, n_parts=5)
    with dask.config.set({"distributed.scheduler.allowed-failures": 2}), \
            LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                         dashboard_address=":0") as local, Client(local) as client:
        docs = [_reduced_parts(dask_engine.evaluate_reduced(qs, cs, cfg, client=client))
                for qs, cs in ((paths["q"], paths["c"]), (paths["q_dir"], paths["c_dir"]),
                               (other["q_dir"], other["c_dir"]))]
        # counts, rates and the rank metrics (integer sums) are identical bit for bit;
        # the means (float sums in another order) to rounding
        assert _differences(docs[0], docs[1]) == [] and _differences(docs[0], docs[2]) == []
        exact = [r for r in docs[0]["metrics"] if r["name"].split("@")[0] in
                 ("auroc", "auprc", "sensitivity", "f1", "mcc", "tp", "tpr", "median_k")]
        assert exact and all(r in docs[1]["metrics"] and r in docs[2]["metrics"]
                             for r in exact)
        # the tables too: the per-criterion and per-fold counts and rank metrics bit for bit
        for column in ("n", "tp", "auroc", "sensitivity", "median_k"):
            for table in ("per_criterion", "per_fold"):
                assert [r[column] for r in docs[0][table]] == \
                    [r[column] for r in docs[2][table]], (table, column)
        assert docs[0]["gate_grid"] == docs[2]["gate_grid"]
        assert docs[0]["consistency_checks"] == docs[2]["consistency_checks"]
        marker = tmp_path / "died"
        from metrics_core.engines import reduced

        original = reduced.unit_summary
        try:
            reduced.unit_summary = functools.partial(_summary_die_once, marker=str(marker),
                                                     original=original)
            again = _reduced_parts(dask_engine.evaluate_reduced(
                paths["q_dir"], paths["c_dir"], cfg, client=client,
                per_query=tmp_path / "per_query"))
        finally:
            reduced.unit_summary = original
        # the unit run again wrote its per-query part whole: every query once
        table = again.pop("per_query")
        rows = pd.read_parquet(tmp_path / "per_query")
        assert len(rows) == table["n_rows"] == loading.load(paths["q"], paths["c"]).dataset \
            .n_queries and not rows.duplicated(["post_id", "criterion"]).any()
        assert [p.name for p in sorted((tmp_path / "per_query").iterdir())] == \
            [p["file"] for p in table["parts"]]
        docs[1]["not_computed"] = again["not_computed"]  # (without the per-query entry)
        assert marker.exists() and _differences(docs[1], again) == []


def _reduced_parts(doc: dict) -> dict:
    """A reduced document without what names the inputs or the time (the records, tables and
    checks)."""
    return {k: _without_files(v) if k == "audit" else v for k, v in doc.items()
            if k not in ("run", "dataset", "warnings")}


def _summary_die_once(q_paths, c_paths, config, *, marker, original, **kwargs):
    """Kill the worker process the first time a unit's summary is asked for."""
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL)
    except FileExistsError:
        return original(q_paths, c_paths, config, **kwargs)
    os.close(fd)
    os._exit(1)


def test_cli_reduced_run_writes_the_records_and_refuses_exclusions(paths, cluster, tmp_path,
                                                                  capsys):
    local, _ = cluster
    out = tmp_path / "reduced.json"
    assert main(["evaluate", str(paths["q_dir"]), str(paths["c_dir"]), "--engine", "dask",
                 "--reduced", "--scheduler", local.scheduler_address, "--bootstrap", "50",
                 "--out", str(out), "--quiet"]) == 0
    doc = json.loads(out.read_text())
    want = _by_name(_memory(paths, EvalConfig(bootstrap=50))["metrics"])
    assert all(_differences(want[r["name"]]["value"], r["value"]) == []
               for r in doc["metrics"])
    assert [r["criterion"] for r in doc["per_criterion"]] == ["C1", "C2", "C3", "micro",
                                                               "macro"]
    assert doc["consistency_checks"] and doc["gate_grid"] and doc["per_fold"]
    assert any(n.startswith("per_query") for n in doc["not_computed"])
    assert main(["evaluate", str(paths["q_dir"]), str(paths["c_dir"]), "--engine", "dask",
                 "--reduced", "--scheduler", local.scheduler_address,
                 "--out", str(tmp_path / "again.json")]) == 0
    said = capsys.readouterr().out  # the audit's warnings, as the in-memory run prints them
    assert "audit warning: 3 input rows were excluded" in said
    assert "audit warning: 1 query has no candidates" in said
    assert main(["evaluate", str(paths["q_dir"]), str(paths["c_dir"]), "--engine", "dask",
                 "--reduced", "--scheduler", local.scheduler_address, "--exclusions",
                 str(tmp_path / "ex.csv"), "--out", str(tmp_path / "x.json")]) == 2
    assert "--exclusions needs the per-query values: leave out --reduced" in \
        capsys.readouterr().err
    assert main(["evaluate", str(paths["q"]), str(paths["c"]), "--reduced",
                 "--out", str(tmp_path / "x.json")]) == 2
    assert "--reduced needs --engine dask" in capsys.readouterr().err


def test_reduced_checks_fail_as_the_in_memory_ones_do(cluster, tmp_path):
    """A post in two folds fails the disjointness check in both engines, with the same
    detail; the per-fold table then counts the post's queries in each of its folds."""
    _, client = cluster
    q, c = _data()
    q.loc[(q["post_id"] == "p007") & (q["criterion"] == "C1"), "fold"] = 0
    paths = _write(q, c, tmp_path)
    cfg = EvalConfig(bootstrap=0)
    expected = _memory(paths, cfg)
    doc = dask_engine.evaluate_reduced(paths["q_dir"], paths["c_dir"], cfg, client=client)
    want = {c["name"]: c for c in expected["consistency_checks"]}
    got = {c["name"]: c for c in doc["consistency_checks"]}
    assert got == want
    assert got["folds post-disjoint"] == {"name": "folds post-disjoint", "passed": False,
                                          "detail": "1 posts in more than one fold: p007"}
    assert _differences(expected["per_fold"], doc["per_fold"]) == []


def test_counted_quantiles_and_reliability_are_numpy_s_and_the_in_memory_ones():
    from metrics_core.engines.reduced import counted_quantile, hist_quantile, reliability_values
    from metrics_core.engines.reductions import score_counts
    from metrics_core.metrics import calibration

    rng = np.random.default_rng(4)
    for size in (1, 2, 9, 500):
        p = np.round(rng.random(size), 2)
        y = (rng.random(size) < p).astype(int)
        values, counts = np.unique(p, return_counts=True)
        for f in np.arange(11) / 10:
            assert counted_quantile(values, counts, f) == np.quantile(p, f)
        for strategy in ("uniform", "quantile"):
            for view in ("positive", "top_label"):
                cfg = EvalConfig(binning=strategy, calibration_view=view, n_bins=6)
                want = calibration.reliability_bins(y, p, n_bins=6, strategy=strategy,
                                                    top_label=view == "top_label")
                got = reliability_values(score_counts(y, p), cfg)
                assert got == pytest.approx((want.ece, want.mce), rel=1e-12, abs=1e-15)

    rng = np.random.default_rng(2)
    for size in (1, 2, 7, 100):
        k = rng.integers(0, 9, size)
        for q in (50, 90, 25, 0, 100):
            assert hist_quantile(np.bincount(k), q) == np.percentile(k, q)
    assert hist_quantile(np.bincount([0, 2, 3, 5]), 90) == pytest.approx(4.4, abs=1e-12)
    assert math.isnan(hist_quantile(np.zeros(3, dtype=int), 50))


@pytest.mark.parametrize("seed", range(8))
def test_smoothed_calibration_from_the_counts_by_distinct_p_is_the_per_query_fit(seed):
    """The reduced run's smoothed calibration (contract §5): the fit on one row per distinct
    clipped p, the knots and the grid's ends from numpy's linear quantiles of the counted
    values, equal the in-memory curve bit for bit: ties, p of 0 and 1 (clipped for the
    logit, not for the grid), p below the clip, few distinct values, one class, n < 20."""
    from metrics_core.engines.counted import smoothed_calibration_of_counts
    from metrics_core.engines.reductions import score_counts
    from metrics_core.metrics import calibration

    rng = np.random.default_rng(seed)
    n = (400, 3000, 25, 19, 200, 60, 1000, 500)[seed]
    p = rng.beta(0.6, 0.9, n)
    if seed % 2:
        p = np.round(p, 2)  # ties
    if seed in (1, 6):
        p[:40] = 0.0
        p[40:60] = 1.0
        p[60:70] = 1e-17  # below the logit's clip
    if seed == 5:
        p = np.round(p * 5) / 5  # 6 distinct values: fewer than the spline's coefficients
    y = (rng.random(n) < p).astype(int)
    if seed == 7:
        y[:] = 1
    want = calibration.smoothed_calibration(y, p)
    got = smoothed_calibration_of_counts(score_counts(y, p))
    pd.testing.assert_frame_equal(got, want, check_exact=True)
    assert (len(want) > 0) == (seed in (0, 1, 2, 4, 6)), len(want)  # curves compared too


@pytest.mark.parametrize("cfg", [
    EvalConfig(bootstrap=40, seed=7),
    EvalConfig(bootstrap=30, seed=3, bootstrap_unit="post", tau_neg=0.2, tau_pos=0.5,
               threshold=0.4, filters=Filters(fold="1", criteria=("C1", "C3"))),
], ids=["query-unit", "post-unit-filtered"])
def test_reduced_gate_areas_intervals_equal_a_literal_loop_over_the_same_poisson_weights(
        paths, cluster, cfg, monkeypatch):
    """The gate's risk-coverage in the reduced run: the curve and areas are the in-memory
    ones; the areas' intervals are the percentiles of each Poisson resample's areas, which a
    plain loop gets by repeating every query by its weight; above WEIGHTED_SORT_LIMIT no
    interval (n_resamples 0), the curve unchanged."""
    from metrics_core.engines import reduced
    from metrics_core.engines.resampling import percentile_interval, poisson_weights, unit_keys
    from metrics_core.metrics import risk_coverage

    _, client = cluster
    doc = dask_engine.evaluate_reduced(paths["q_dir"], paths["c_dir"], cfg, client=client)
    expected = _memory(paths, cfg)["gate_risk_coverage"]
    got = doc["gate_risk_coverage"]
    assert {k: v for k, v in got.items() if k != "ci95"} == \
        {k: v for k, v in expected.items() if k != "ci95"}
    ds = Evaluator(loading.load(paths["q"], paths["c"]).dataset).for_filters(cfg.filters).ds
    posts = np.asarray(ds.posts, dtype=object)[ds.post_code]
    keys = unit_keys(posts) if cfg.bootstrap_unit == "post" else \
        unit_keys(posts, np.asarray(ds.criteria, dtype=object)[ds.criterion_code])
    areas = []
    for w in poisson_weights(cfg.seed, keys, int(cfg.bootstrap)):
        idx = np.repeat(np.arange(ds.n_queries), w)
        r = risk_coverage.gate_risk_coverage(ds.y[idx], ds.p[idx], threshold=cfg.threshold)
        areas.append((r.aurc, r.optimal_aurc, r.excess_aurc))
    areas = np.array(areas)
    for j, name in enumerate(("aurc", "optimal_aurc", "excess_aurc")):
        assert got["ci95"][name] == pytest.approx(percentile_interval(areas[:, j]),
                                                  abs=1e-12), name
    assert got["n_resamples"] == expected["n_resamples"] == cfg.bootstrap
    monkeypatch.setattr(reduced, "WEIGHTED_SORT_LIMIT", 10)
    above = dask_engine.evaluate_reduced(paths["q_dir"], paths["c_dir"], cfg,
                                         client=client)["gate_risk_coverage"]
    assert above["ci95"] is None and above["n_resamples"] == 0
    assert above["curve"] == expected["curve"] and above["aurc"] == expected["aurc"]


_HELD_AT_MERGE: list[int] = []


def _counting_merge(*parts):
    """``reduced.merge_summaries`` noting how many units' summaries the workers hold (the
    in-process cluster's workers; the function runs there by reference to this module)."""
    from distributed.worker import Worker

    from metrics_core.engines.reduced import _merge_summaries_unpatched

    _HELD_AT_MERGE.append(sum(1 for w in list(Worker._instances) for key in list(w.data)
                              if str(key).startswith("unit_summary-")))
    return _merge_summaries_unpatched(*parts)


def test_reduced_run_releases_each_unit_s_summary_once_merged(paths, cluster, tmp_path,
                                                             monkeypatch):
    """A unit's summary (tens of MB with resamples) leaves the workers' memory once merged,
    not at the end of the run: the whole cluster's peak would grow with the number of units
    (at 10M queries, 100 units of ~35 MB each at 200 resamples)."""
    from metrics_core.engines import reduced

    _, client = cluster
    q, c = _data()
    other = _write(q, c, tmp_path, n_parts=12)
    held = _HELD_AT_MERGE
    held.clear()
    monkeypatch.setattr(reduced, "_merge_summaries_unpatched", reduced.merge_summaries,
                        raising=False)
    monkeypatch.setattr(reduced, "merge_summaries", _counting_merge)
    doc = dask_engine.evaluate_reduced(other["q_dir"], other["c_dir"],
                                       EvalConfig(bootstrap=20, seed=3), client=client)
    assert doc["dataset"]["n_queries"] > 0
    assert len(held) == 4  # 3 merges of 4 units, then one of the 3 merged
    # the last merge (of the merged groups) finds no unit's summary left; before, every unit's
    # summary stayed held to the end: [8, 14, 16, 16]
    assert held[-1] == 0 and held[-2] < held[0], held
