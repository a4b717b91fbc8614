"""The redesigned report: per-group tables over the registry, undefined values left out of
means, filters in the configuration, the bounded memo, the JSON additions and the checks."""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import replace

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import recall_score, roc_auc_score

from metrics_core import registry
from metrics_core.cli import main
from metrics_core.config import EvalConfig, Filters
from metrics_core.data.dataset import Dataset
from metrics_core.evaluation import evaluator as evaluator_mod
from metrics_core.evaluation.checks import consistency_checks
from metrics_core.report import Evaluator
from tests.conftest import random_frames


@pytest.fixture(scope="module")
def frames():
    q, c = random_frames(n_posts=50, criteria=("C1", "C2", "C3", "C4"), seed=21)
    # C4 has no positive query: its AUROC is undefined (one class).
    c4 = q["criterion"] == "C4"
    q.loc[c4, "has_evidence"] = 0
    q.loc[c4, "n_gold"] = 0
    c.loc[c["criterion"] == "C4", "is_gold"] = 0
    return q, c


@pytest.fixture(scope="module")
def dataset(frames):
    return Dataset.from_frames(*frames)


@pytest.fixture(scope="module")
def evaluation(dataset):
    return Evaluator(dataset).evaluate(EvalConfig(bootstrap=200, seed=3))


def test_undefined_auroc_is_null_and_left_out_of_the_macro_mean(evaluation, dataset):
    table = evaluation.per_criterion
    assert math.isnan(table.loc["C4", "auroc"]) and table.loc["C4", "auroc_defined"] == False  # noqa: E712
    defined = []
    for c in ("C1", "C2", "C3"):
        m = dataset.criterion == c
        defined.append(roc_auc_score(dataset.y[m], dataset.p[m]))
        assert table.loc[c, "auroc"] == pytest.approx(defined[-1], abs=1e-12)
    assert table.loc["macro", "auroc"] == pytest.approx(np.mean(defined), abs=1e-12)
    assert table.attrs["n_groups"]["auroc"] == 3
    assert table.attrs["n_groups"]["neg_rate"] == 4
    data = evaluation.to_dict()
    assert data["per_criterion_macro_over"]["auroc"] == 3
    c4 = next(r for r in data["per_criterion"] if r["criterion"] == "C4")
    assert c4["auroc"] is None and c4["sensitivity"] is None


def test_per_criterion_covers_every_per_group_metric(evaluation):
    table = evaluation.per_criterion
    wanted = [s for s in registry.SPECS if s.per_group and s.group != "multilabel"]
    for s in wanted:
        if s.family:
            assert any(registry.spec(c) is s for c in table.columns
                       if c not in ("n", "n_positive", "positive_rate", "auroc_defined")
                       and "_ci_" not in c), s.name
        else:
            assert s.name in table.columns, s.name
    for s in registry.SPECS:
        if s.group == "multilabel":
            assert s.name in evaluation.per_fold.columns


def test_micro_and_pooled_rows_equal_the_overall_records(evaluation):
    for table, row in ((evaluation.per_criterion, "micro"), (evaluation.per_fold, "pooled")):
        for name in ("auroc", "sensitivity", "specificity", "screening_sensitivity",
                     "alert_precision", "ece", "brier", "recall@10", "evidence_recall",
                     "mean_k", "coverage", "mcc_answered", "tpr@fpr=0.05", "workload"):
            value = evaluation.record(name).value
            assert table.loc[row, name] == pytest.approx(value, abs=1e-12), (row, name)
    assert evaluation.per_fold.loc["pooled", "exact_match"] == pytest.approx(
        evaluation.record("exact_match").value)


def test_per_group_sensitivity_equals_sklearn(evaluation, dataset):
    cfg = evaluation.config
    for c in ("C1", "C2"):
        m = dataset.criterion == c
        want = recall_score(dataset.y[m], dataset.p[m] >= cfg.threshold)
        assert evaluation.per_criterion.loc[c, "sensitivity"] == pytest.approx(want)


def test_fold_summary_line(evaluation):
    summary = evaluation.fold_summary.set_index("metric")
    row = summary.loc["auroc"]
    assert row["n_folds"] == 5
    assert row["mean"] == pytest.approx(evaluation.per_fold.loc["mean", "auroc"])
    lo, hi = evaluation.record("auroc").ci95
    assert row["text"] == (f"{row['mean']:.3f} ± {row['std']:.3f} (pooled "
                           f"{evaluation.record('auroc').value:.3f}, 95% CI {lo:.3f}–{hi:.3f})")


def test_bootstrap_records_say_how_many_resamples_were_valid(evaluation):
    auroc = evaluation.record("auroc")
    assert auroc.ci_valid == 200 and auroc.to_dict()["ci_valid_resamples"] == 200
    assert evaluation.record("sensitivity").ci_valid is None  # Wilson


def test_everything_the_app_shows_is_in_the_json(evaluation, dataset):
    data = json.loads(evaluation.to_json())
    ev = Evaluator(dataset)
    sweep = ev.gamma_sweep(evaluation.config)
    assert [r["gamma"] for r in data["gamma_sweep"]] == sweep["gamma"].tolist()
    grid = pd.DataFrame(data["gate_grid"])
    current = grid[grid["current"]].iloc[0]
    assert current["screening_sensitivity"] == pytest.approx(
        evaluation.record("screening_sensitivity").value)
    ranking = {r["name"]: r for r in data["ranking_distribution"]}
    s = evaluation.ranking_summary["ndcg@10"]
    assert ranking["ndcg@10"]["median"] == pytest.approx(s.median)
    assert ranking["ndcg@10"]["p75"] == pytest.approx(s.p75)
    names = {m["name"] for m in data["metrics"]}
    assert {"precision_pos", "recall_neg", "f1_pos", "balanced_accuracy_answered",
            "mcc_answered", "catch_rate", "pass_rate", "abstain_rate_pos"} <= names
    assert data["run"]["version"] and data["run"]["created"]


def test_filters_are_part_of_the_configuration(dataset):
    ev = Evaluator(dataset, audit={"note": "audit"})
    cfg = EvalConfig(bootstrap=0, filters=Filters(fold="2", criteria=("C1",)))
    filtered = ev.evaluate(cfg)
    keep = (dataset.fold == 2) & (dataset.criterion == "C1")
    assert filtered.summary["n_queries"] == int(keep.sum())
    assert filtered.record("auroc").value == pytest.approx(
        roc_auc_score(dataset.y[keep], dataset.p[keep]))
    assert filtered.audit == {"note": "audit"}  # the audit of the loaded files is kept
    assert filtered.config.to_dict()["filters"] == {"fold": "2", "split": None,
                                                    "criteria": ["C1"]}
    assert EvalConfig.from_dict(filtered.config.to_dict()) == cfg
    assert ev.for_filters(cfg.filters) is ev.for_filters(Filters(fold=2, criteria=["C1"]))


def test_sub_configurations_are_cache_keys():
    a, b = EvalConfig(), EvalConfig(tau_neg=0.2, gamma=0.8)
    assert a.ranking == b.ranking and a.calibration == b.calibration
    assert a.gate != b.gate and a.dynamic_k != b.dynamic_k
    assert hash(a.bootstrap_config) == hash(b.bootstrap_config)


def test_memo_is_bounded(dataset, monkeypatch):
    monkeypatch.setattr(evaluator_mod, "KEPT_ENTRIES", 3)
    ev = Evaluator(dataset)
    for t in (0.5, 1.0, 2.0, 4.0, 8.0):
        ev.mass_profile(EvalConfig(temperature=t))
    assert len(ev._cache) == 3
    assert ("mass", "softmax", 8.0) in ev._cache and ("mass", "softmax", 0.5) not in ev._cache


def test_recall_check_fails_when_the_two_code_paths_disagree(dataset):
    ev = Evaluator(dataset)
    cfg = EvalConfig(bootstrap=0)
    good = ev.evaluate(cfg)
    check = next(c for c in good.checks if c.name.startswith("recall@10 vs"))
    assert check.passed is True
    inter = ev.intermediate(cfg)
    rk = dict(inter.rk)
    rk["recall@10"] = rk["recall@10"] * 0.5
    broken = consistency_checks(dataset, cfg, good.records, replace(inter, rk=rk),
                                dataset.criterion_code.astype(np.int64), good.gate.state_counts)
    check = next(c for c in broken if c.name.startswith("recall@10 vs"))
    assert check.passed is False and "DIFFERS" in check.detail


def test_specificity_identity_is_checked(evaluation):
    check = next(c for c in evaluation.checks if c.name == "specificity = TN / (TN + FP)")
    assert check.passed is True
    from metrics_core.evaluation.checks import confusion_checks

    values = {r.name: r.value for r in evaluation.records}
    values["specificity"] += 0.01
    bad = next(c for c in confusion_checks(values, 200, int(values["tp"] + values["fn"]))
               if c.name.startswith("specificity"))
    assert bad.passed is False


# ---------------------------------------------------------------------------- the CLI
@pytest.fixture
def files(tmp_path, frames):
    q, c = frames
    qp, cp = tmp_path / "queries.csv", tmp_path / "candidates.parquet"
    q.to_csv(qp, index=False)
    c.to_parquet(cp)
    return qp, cp


def test_cli_flags_are_generated_for_every_config_field(capsys):
    from metrics_core.config import options

    with pytest.raises(SystemExit):
        main(["evaluate", "--help"])
    text = capsys.readouterr().out
    for name, opt in options().items():
        if opt.cli:
            assert f"--{name.replace('_', '-')}" in text, name
    assert "--fold" in text and "--per-query" in text


def test_cli_records_filters_fingerprint_and_writes_per_query(files, tmp_path):
    qp, cp = files
    out, pq = tmp_path / "m.json", tmp_path / "pq.csv"
    assert main(["evaluate", str(qp), str(cp), "--out", str(out), "--per-query", str(pq),
                 "--bootstrap", "0", "--fold", "1", "--criterion", "C1", "--criterion", "C2",
                 "--quiet"]) == 0
    data = json.loads(out.read_text())
    assert data["config"]["filters"] == {"fold": "1", "split": None, "criteria": ["C1", "C2"]}
    assert "audit" in data
    inputs = {i["file"]: i["sha256"] for i in data["run"]["inputs"]}
    assert inputs["queries.csv"] == hashlib.sha256(qp.read_bytes()).hexdigest()
    per_query = pd.read_csv(pq)
    assert len(per_query) == data["dataset"]["n_queries"]
    assert set(per_query["criterion"]) == {"C1", "C2"} and set(per_query["fold"]) == {1}


def test_cli_outputs_land_together_or_not_at_all(files, tmp_path, capsys):
    qp, cp = files
    out = tmp_path / "m.json"
    out.write_text("previous good file")
    blocked = tmp_path / "a_directory"
    blocked.mkdir()
    code = main(["evaluate", str(qp), str(cp), "--out", str(out), "--bootstrap", "0",
                 "--exclusions", str(blocked)])
    assert code == 2
    assert out.read_text() == "previous good file"
    err = capsys.readouterr().err
    assert str(blocked) in err and "None" not in err
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_cli_caps_bootstrap_resamples(files, tmp_path, capsys):
    qp, cp = files
    assert main(["evaluate", str(qp), str(cp), "--out", str(tmp_path / "m.json"),
                 "--bootstrap", "1000000000"]) == 2
    assert "bootstrap: must be a whole number within [0, 100,000]" in capsys.readouterr().err


def test_cli_input_limits_are_options(files, tmp_path, capsys):
    qp, cp = files
    code = main(["evaluate", str(qp), str(cp), "--out", str(tmp_path / "m.json"),
                 "--max-rows", "10"])
    assert code == 2
    err = capsys.readouterr().err
    assert "limit" in err and "Traceback" not in err
    assert not (tmp_path / "m.json").exists()


def test_app_upload_limits_come_from_the_streamlit_side_file(tmp_path):
    from dashboard.server_settings import APP_LIMITS, LIMITS_FILE, upload_limits

    assert LIMITS_FILE.exists()
    assert upload_limits().max_decompressed_bytes == APP_LIMITS["max_decompressed_bytes"]
    custom = tmp_path / "limits.toml"
    custom.write_text("[limits]\nmax_rows = 5\n")
    assert upload_limits(custom).max_rows == 5
    custom.write_text("[limits]\nmax_things = 5\n")
    with pytest.raises(ValueError, match="unknown limits max_things"):
        upload_limits(custom)


def test_settings_round_trip_through_the_dashboard_values():
    from dashboard import state

    cfg = EvalConfig(tau_neg=0.05, tau_pos=0.7, gamma=0.8, map_denominator="hits",
                     filters=Filters(fold="2", criteria=("C1",)), bootstrap=500)
    assert state.build_config(state.values_of(cfg)) == cfg


def test_cli_prints_escape_codes_from_the_data_as_text(tmp_path, capsys):
    q, c = random_frames(n_posts=10, seed=6)
    q = q.rename(columns={"fold": "fold\x1b[2J"})  # a column name that would clear the screen
    qp, cp = tmp_path / "q.csv", tmp_path / "c.csv"
    q.to_csv(qp, index=False)
    c.to_csv(cp, index=False)
    assert main(["evaluate", str(qp), str(cp), "--out", str(tmp_path / "m.json"),
                 "--bootstrap", "0"]) == 0
    out = capsys.readouterr()
    assert "\x1b" not in out.out + out.err
    assert "\\x1b[2J" in out.out + out.err


def test_cli_exclusions_csv_cannot_run_as_formulas(tmp_path):
    q, c = random_frames(n_posts=10, seed=8)
    evil = '=HYPERLINK("http://evil.example")'
    q.loc[q["post_id"] == "p000", "post_id"] = evil
    c.loc[c["post_id"] == "p000", "post_id"] = evil
    q.loc[0, "p_has_evidence"] = float("nan")  # excluded, with its post id
    qp, cp = tmp_path / "q.csv", tmp_path / "c.csv"
    q.to_csv(qp, index=False)
    c.to_csv(cp, index=False)
    excl = tmp_path / "excluded.csv"
    assert main(["evaluate", str(qp), str(cp), "--out", str(tmp_path / "m.json"),
                 "--bootstrap", "0", "--quiet", "--exclusions", str(excl)]) == 0
    text = excl.read_text()
    assert "'=HYPERLINK" in text and ",=HYPERLINK" not in text


def test_the_app_listens_on_this_machine_only(tmp_path, monkeypatch):
    import subprocess
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    config = tomllib.loads((root / ".streamlit" / "config.toml").read_text())
    assert config["server"]["address"] == "127.0.0.1"
    dev = (root / "dev").read_text()
    # ./dev app is metrics-core app, whose --share needs sign-in or --no-auth spelled out
    # (dashboard.addresses.share_check; tests/test_app_command.py starts it both ways).
    assert '"$VENV/bin/metrics-core" app' in dev
    assert subprocess.run(["bash", "-n", str(root / "dev")]).returncode == 0
    from dashboard.addresses import share_check

    monkeypatch.setenv("HOME", str(tmp_path))  # (no secrets of this machine's user)
    monkeypatch.chdir(tmp_path)
    allowed, message = share_check(["--share"])
    assert not allowed and "--no-auth" in message
    assert share_check(["--share", "--no-auth"])[0]


def test_group_intervals_equal_the_per_criterion_table_and_filtered_runs():
    from metrics_core.config import EvalConfig, Filters
    from metrics_core.data.dataset import Dataset
    from metrics_core.evaluation.evaluator import Evaluator
    from metrics_core.evaluation.tables import group_intervals
    from tests.conftest import random_frames

    q, c = random_frames(n_posts=50, seed=9)
    ev = Evaluator(Dataset.from_frames(q, c))
    cfg = EvalConfig(bootstrap=100, seed=2)
    table = ev.evaluate(cfg).per_criterion
    for metric in ("f1", "screening_sensitivity", "auroc", "median_k"):
        got = group_intervals(ev, cfg, metric).set_index("group")
        for name in got.index:
            assert got.loc[name, "value"] == pytest.approx(table.loc[name, metric], nan_ok=True)
            run = ev.evaluate(cfg.replace(filters=Filters(criteria=(name,))))
            assert (got.loc[name, "ci_lo"], got.loc[name, "ci_hi"]) == pytest.approx(
                run.record(metric).ci95)
    only = group_intervals(ev, cfg.replace(filters=Filters(criteria=("C1", "C2"))), "f1")
    assert list(only["group"]) == ["C1", "C2"]


# ------------------------------------------------------------------ threads and the memo
def _document(evaluation) -> str:
    doc = json.loads(evaluation.to_json())
    doc["run"].pop("created")  # the one field that differs between runs (to the second)
    return json.dumps(doc, sort_keys=True)


class _TickingClock:
    """``datetime`` whose ``now`` moves on by a second at every call: two runs made one after
    the other carry different creation times, as on a slow machine."""

    calls = 0

    @classmethod
    def now(cls, tz=None):
        from datetime import datetime, timedelta

        cls.calls += 1
        return datetime(2026, 1, 1, tzinfo=tz) + timedelta(seconds=cls.calls)


def test_prefetched_evaluation_is_the_same_document(dataset, monkeypatch):
    """The K-independent parts computed on a helper thread give the same document, byte for
    byte, as computing everything on the caller's thread (the creation time aside: the
    clock ticks between the two runs, as it does on a loaded machine)."""
    from metrics_core.evaluation import assemble

    monkeypatch.setattr(assemble, "datetime", _TickingClock)
    cfg = EvalConfig(bootstrap=0, filters=Filters(criteria=["C1", "C2"]))
    monkeypatch.setattr(evaluator_mod, "PREFETCH_MIN_QUERIES", 10 ** 9)
    plain = Evaluator(dataset)
    assert plain.prefetch(cfg) is None
    expected = _document(plain.evaluate(cfg))
    monkeypatch.setattr(evaluator_mod, "PREFETCH_MIN_QUERIES", 0)
    threaded = Evaluator(dataset)
    helper = threaded.for_filters(cfg.filters).prefetch(cfg)
    assert helper is not None
    got = _document(threaded.evaluate(cfg))
    helper.join(timeout=60)
    assert got == expected
    assert not threaded.for_filters(cfg.filters)._running  # nothing left in flight


def test_memo_computes_a_value_once_for_concurrent_callers(dataset):
    import threading

    ev = Evaluator(dataset)
    started, release, calls = threading.Event(), threading.Event(), []

    def slow():
        calls.append(1)
        started.set()
        release.wait(10)
        return np.arange(3)

    results = []
    first = threading.Thread(target=lambda: results.append(ev.cached(("slow",), slow)))
    first.start()
    started.wait(10)
    second = threading.Thread(target=lambda: results.append(ev.cached(("slow",), slow)))
    second.start()
    release.set()
    first.join(10)
    second.join(10)
    assert len(calls) == 1 and len(results) == 2 and results[0] is results[1]


def test_memo_failure_reaches_every_caller_in_its_own_thread(dataset):
    import threading

    ev = Evaluator(dataset)
    started, release, calls, errors = threading.Event(), threading.Event(), [], []

    def failing():
        calls.append(1)
        started.set()
        release.wait(10)
        raise ValueError("bad data")

    def call():
        try:
            ev.cached(("failing",), failing)
        except ValueError as exc:
            errors.append(str(exc))

    first = threading.Thread(target=call)
    first.start()
    started.wait(10)
    second = threading.Thread(target=call)
    second.start()
    release.set()
    first.join(10)
    second.join(10)
    # The waiting caller computed it again after the failure and got the error itself.
    assert errors == ["bad data", "bad data"] and len(calls) == 2
    assert ("failing",) not in ev._cache and not ev._running


def test_memo_sizes_a_value_another_thread_changes_meanwhile(dataset):
    """A value kept in the memo may be changed by another thread while its size is summed (a
    kept count matrix's drawing thread deletes its own attributes when it ends): the sum
    reads a copy of each dict, so it neither raises 'dictionary changed size during
    iteration' nor depends on when the other thread runs. Deterministic: the sum itself lets
    the other thread change the dict between two of its items, and waits for it."""
    import threading

    changed, change = threading.Event(), threading.Event()

    class Holder:  # an object whose attributes another thread changes (as a Thread's)
        pass

    class Hook:
        """An item whose sizing hands the turn to the other thread and waits for it."""

        @property
        def __dict__(self):
            change.set()
            changed.wait()
            return {}

    value = Holder()
    value.first = Hook()
    value.counts = np.zeros(10, dtype=np.uint8)
    value.last = np.zeros(5, dtype=np.float64)

    def other_thread():
        change.wait()
        try:
            value.added = np.zeros(7, dtype=np.uint8)  # inserted while the sum iterates
        finally:
            changed.set()

    helper = threading.Thread(target=other_thread, daemon=True)
    helper.start()
    ev = Evaluator(dataset)
    try:
        assert ev.cached(("changing",), lambda: {"held": value})["held"] is value
    finally:
        change.set()
        changed.set()
        helper.join()
    # the sizes summed are those of the attributes when the sum began (10 + 40 bytes)
    assert ev._sizes[("changing",)] == 50
