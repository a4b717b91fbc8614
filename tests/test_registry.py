"""The metric registry drives records, labels, checks and the CLI summary (one spec per metric)."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

from metrics_core import registry
from metrics_core.config import EvalConfig
from metrics_core.data.dataset import Dataset
from metrics_core.report import Evaluator
from tests.conftest import random_frames


@pytest.fixture(scope="module")
def evaluation():
    q, c = random_frames(n_posts=40, seed=12)
    return Evaluator(Dataset.from_frames(q, c)).evaluate(EvalConfig(bootstrap=0))


def test_every_record_has_a_spec_and_takes_group_and_wording_from_it(evaluation):
    for r in evaluation.records:
        s = registry.spec(r.name)
        assert r.group == s.group, r.name
        assert r.interpretation == registry.describe(r.name) != "", r.name
    assert registry.describe("tpr@fpr=0.05") == (
        "share of evidence queries caught when at most 5% of no-evidence queries alarm")
    assert registry.label("map@5") == "MAP@5"


def test_spec_names_are_unique_and_families_resolve():
    names = [s.name for s in registry.SPECS]
    assert len(names) == len(set(names))
    assert registry.spec("recall@10").name == "recall@"
    assert registry.spec("mrr").name == "mrr" and registry.spec("mrr@5").name == "mrr@"
    assert registry.spec("threshold@fpr=0.1").name == "threshold@fpr="
    with pytest.raises(KeyError, match="no metric spec"):
        registry.spec("accuracy@")


def test_bounds_come_from_the_registry():
    assert registry.in_range("mcc", -1.0) and not registry.in_range("mcc", -1.01)
    assert registry.in_range("screening_fn_per_1000", 999.0)
    assert not registry.in_range("alert_precision", 1.0000001)
    assert registry.in_range("tp", 10**9)


def test_headline_order_follows_the_registry(evaluation):
    names = registry.headline(r.name for r in evaluation.records)
    assert names[:2] == ["auroc", "auprc"]
    assert "recall@10" in names and "recall@5" not in names
    assert "tp" not in names and "workload" not in names


def test_the_range_check_fails_on_a_value_outside_its_bounds(evaluation):
    from dataclasses import replace

    from metrics_core.evaluation.checks import range_check

    assert range_check(evaluation.records).passed is True
    broken = [replace(r, value=1.5) if r.name == "alert_precision" else r
              for r in evaluation.records]
    check = range_check(broken)
    assert check.passed is False and "alert_precision" in check.detail


def test_importing_the_package_loads_no_heavy_module():
    """``import metrics_core`` defers numpy, pandas, pyarrow and scipy until a name is used."""
    import subprocess
    import sys

    code = ("import sys, metrics_core; heavy = [m for m in ('numpy', 'pandas', 'pyarrow', "
            "'scipy', 'streamlit') if m in sys.modules]; print(','.join(heavy)); "
            "metrics_core.Evaluator; print('pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split("\n")
    assert out[0] == ""
    assert out[1] == "True"  # the names still work


def test_the_command_line_start_loads_no_heavy_module():
    """``metrics-core --help`` and parsing every command's options (default configuration
    included) import neither pandas nor pyarrow nor scipy: the start stays fast."""
    import subprocess
    import sys

    code = ("import sys\nfrom metrics_core.cli import flags, parser\n"
            "parser = parser.build_parser()\n"
            "for argv in (['evaluate', 'q.csv', 'c.csv'], ['triage', 't.csv']):\n"
            "    flags.config_from_flags(parser.parse_args(argv)) if argv[0] == 'evaluate' else "
            "parser.parse_args(argv)\n"
            "print(','.join(m for m in ('pandas', 'pyarrow', 'scipy', 'sklearn') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "", out.stdout


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the setting is Linux only")
@pytest.mark.parametrize(("environment", "imported_first", "pool"), [
    ({}, False, "system"),  # the command line: set before pyarrow is imported
    ({}, True, "system"),  # the app server: Streamlit has imported pyarrow already
    ({"ARROW_DEFAULT_MEMORY_POOL": "jemalloc"}, False, "jemalloc"),  # the user's choice wins
])
def test_the_project_processes_give_arrow_the_system_pool(environment, imported_first, pool):
    """``keep_freed_memory`` (command line, app server) makes the system allocator (glibc's
    heap, which it configures) Arrow's default pool whether or not pyarrow is imported yet,
    unless the environment names a pool."""
    import os
    import subprocess

    code = ("import pyarrow\n" if imported_first else "") + (
        "from metrics_core.allocator import keep_freed_memory\nkeep_freed_memory()\n"
        "import pyarrow as pa\nprint(pa.default_memory_pool().backend_name)")
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**env, **environment})
    assert out.stdout.strip() == pool


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the setting is Linux only")
@pytest.mark.parametrize(("environment", "advised"), [
    ({"NUMPY_MADVISE_HUGEPAGE": None}, "False"),  # the project's processes: no advice
    ({"NUMPY_MADVISE_HUGEPAGE": "1"}, "True"),  # the user's choice wins
])
def test_the_project_processes_stop_numpy_advising_huge_pages(environment, advised):
    """``keep_freed_memory`` switches off numpy's huge-page advice for large arrays (a
    synchronous compaction per first touch where the kernel's defrag obeys the advice),
    unless ``NUMPY_MADVISE_HUGEPAGE`` is set."""
    import os
    import subprocess

    code = ("from metrics_core.allocator import keep_freed_memory\nkeep_freed_memory()\n"
            "import numpy as np\nprint(np._core.multiarray._set_madvise_hugepage(False))")
    env = {k: v for k, v in os.environ.items() if k not in environment}
    env.update({k: v for k, v in environment.items() if v is not None})
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env=env)
    assert out.stdout.strip() == advised


_ARENA_PROBE = """
import ctypes, re, sys, tempfile, threading
if sys.argv[1] == "project":
    from metrics_core.allocator import keep_freed_memory
    keep_freed_memory()
import numpy as np

def work():
    kept = [np.ones(1000) for _ in range(100)]

threads = [threading.Thread(target=work) for _ in range(3)]
for t in threads:
    t.start()
for t in threads:
    t.join()
libc = ctypes.CDLL("libc.so.6")
libc.fopen.restype = ctypes.c_void_p
libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
libc.fclose.argtypes = [ctypes.c_void_p]
with tempfile.NamedTemporaryFile(suffix=".xml") as out:
    fp = libc.fopen(out.name.encode(), b"w")
    libc.malloc_info(0, fp)
    libc.fclose(fp)
    print(len(re.findall(r'<heap nr="[0-9]+"', open(out.name).read())))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc only")
def test_the_project_processes_allocate_every_thread_from_one_arena():
    """``keep_freed_memory``: threads (the app server's script runs) share the main malloc
    arena, so what one run freed serves the next; glibc otherwise gives threads their own."""
    import subprocess

    counts = {how: int(subprocess.run([sys.executable, "-c", _ARENA_PROBE, how],
                                      capture_output=True, text=True, check=True).stdout)
              for how in ("plain", "project")}
    assert counts["project"] == 1
    assert counts["plain"] > 1  # the probe's threads do get arenas of their own by default


def test_the_app_server_keeps_its_import_time_objects_out_of_full_collections():
    """Python runs full garbage collections now and then (Streamlit, by default, after every
    script run: off in this app's server, see below). The server entry
    (``dashboard/server.py``) freezes the objects its imports made, before any session
    exists, so such a collection walks only what was made since: far fewer objects than the
    ~100,000 that Streamlit, pandas and plotly leave alive."""
    import subprocess

    code = ("import gc, sys\nsys.argv = ['streamlit']\nimport dashboard.server\n"
            "print(gc.get_freeze_count(), len(gc.get_objects()))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parents[1])
    frozen, tracked = map(int, out.stdout.split()[-2:])
    assert frozen > 50_000
    assert tracked < frozen / 10


def test_the_app_server_collects_after_each_run_not_in_it():
    """No full collection on the script's thread after each run (Streamlit's
    ``runner.postScriptGC``: it held the interpreter lock, and so the message that the run had
    ended, on every Gate move); the app asks for one a moment later on a thread of its own
    (``dashboard.idle.collect_after_run``), one at a time, and it frees the cycles."""
    import ast
    import subprocess

    code = "\n".join((
        "import gc, sys, threading", "sys.argv = ['streamlit']", "import dashboard.server",
        "from streamlit import config", "from dashboard import idle",
        "seen = []", "gc.callbacks.append(lambda phase, info: phase == 'stop' and "
        "info['generation'] == 2 and seen.append((threading.current_thread().name, "
        "info['collected'])))",
        "class Cycle:", "    pass", "c = Cycle(); c.me = c; del c",
        "first, second = idle.collect_after_run(0.2), idle.collect_after_run(0.2)",
        "first.join()",
        "print(config.get_option('runner.postScriptGC'), second is None, seen)"))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parents[1])
    flag, one_at_a_time, seen = out.stdout.strip().splitlines()[-1].split(" ", 2)
    assert (flag, one_at_a_time) == ("False", "True")
    (thread, collected), = ast.literal_eval(seen)
    assert thread == "dashboard-collect-after-run"
    assert collected >= 2  # the cycle and its __dict__


# ---------------------------------------------------------------------------------------------
# The common test over every registered metric (scikit-learn's ``ALL_METRICS``): generated from
# the registry, so a metric added there is covered without editing this file.

#: Every metric of the registry, a family by its record names on the common data.
ALL_METRICS = tuple(s.name for s in registry.SPECS)


@pytest.fixture(scope="module")
def common():
    """One evaluation with intervals on random data, and one of its queries permuted."""
    q, c = random_frames(n_posts=60, seed=21, positive_rate=0.4)
    cfg = EvalConfig(bootstrap=200, tau_neg=0.2, tau_pos=0.55)
    rng = np.random.default_rng(3)
    q2 = q.iloc[rng.permutation(len(q))].reset_index(drop=True)
    c2 = c.iloc[rng.permutation(len(c))].reset_index(drop=True)
    return (Evaluator(Dataset.from_frames(q, c)).evaluate(cfg),
            Evaluator(Dataset.from_frames(q2, c2)).evaluate(cfg))


def _records_of(evaluation, name):
    records = [r for r in evaluation.records if registry.spec(r.name).name == name]
    assert records, f"{name}: no record"
    return records


@pytest.mark.parametrize("name", ALL_METRICS)
def test_every_metric_is_in_range_with_its_interval_kind_around_its_value(common, name):
    evaluation, _ = common
    s = registry.spec(name)
    for r in _records_of(evaluation, name):
        if not r.defined:
            assert r.value is None or name in registry.ONE_CLASS_CONVENTIONS, r.name
            assert r.reason, r.name
            continue
        assert registry.in_range(r.name, r.value), (r.name, r.value, s.bounds)
        if s.interval is None:
            assert r.ci95 is None and r.ci_method is None, r.name
            continue
        assert r.ci95 is not None, r.name
        assert r.ci_method.startswith(s.interval), (r.name, r.ci_method, s.interval)
        lo, hi = r.ci95
        assert lo <= hi, r.name
        assert lo - 1e-12 <= r.value <= hi + 1e-12, (r.name, r.value, r.ci95)


@pytest.mark.parametrize("name", ALL_METRICS)
def test_every_metric_is_invariant_to_the_order_of_the_queries(common, name):
    a, b = common
    for ra, rb in zip(_records_of(a, name), _records_of(b, name), strict=True):
        assert (ra.name, ra.defined, ra.n, ra.reason) == (rb.name, rb.defined, rb.n, rb.reason)
        if ra.value is None:
            assert rb.value is None, ra.name
        else:
            assert math.isclose(ra.value, rb.value, rel_tol=1e-12, abs_tol=1e-12), ra.name
        assert (ra.ci95 is None) == (rb.ci95 is None), ra.name
        if ra.ci95 is not None:
            assert np.allclose(ra.ci95, rb.ci95, rtol=1e-12, atol=1e-12), ra.name


@pytest.mark.parametrize("name", ALL_METRICS)
def test_every_metric_of_the_registry_is_in_the_tables_it_applies_to(common, name):
    evaluation, _ = common
    s = registry.spec(name)
    for label, table in (("criterion", evaluation.per_criterion),
                         ("fold", evaluation.per_fold)):
        columns = [c for c in table.columns if "_ci_" not in c and _resolves(c, s)]
        assert bool(columns) == (label in s.applies), (name, label)
        bounds = [f"{name}_ci_lo", f"{name}_ci_hi"]
        if s.group_ci:  # each group's Wilson interval: columns that hold its value
            assert set(bounds) <= set(table.columns), (name, label)
            rows = table.dropna(subset=[name, *bounds])
            assert len(rows) and ((rows[bounds[0]] <= rows[name] + 1e-12)
                                  & (rows[name] <= rows[bounds[1]] + 1e-12)).all(), name


#: Every metric of the per-criterion / per-fold tables.
PER_GROUP = tuple(s.name for s in registry.SPECS if s.per_group)
_SUMMARY_ROWS = ("micro", "macro", "mean", "std", "pooled")


@pytest.mark.parametrize("name", PER_GROUP)
def test_every_per_group_metric_is_in_range_per_group_and_pooled_equals_its_record(common, name):
    """Each group's value lies in the metric's range, and the pooled row (``micro`` per
    criterion, ``pooled`` per fold: the table's computation on one group of every query) is
    the run's record, whatever computes it (counting cells, a grouped mean, a whole-sample
    kernel)."""
    evaluation, _ = common
    s = registry.spec(name)
    records = {r.name: r for r in _records_of(evaluation, name)}
    for label, table, pooled in (("criterion", evaluation.per_criterion, "micro"),
                                 ("fold", evaluation.per_fold, "pooled")):
        if label not in s.applies:
            continue
        groups = table.drop(index=[r for r in _SUMMARY_ROWS if r in table.index])
        for column in (c for c in table.columns if "_ci_" not in c and _resolves(c, s)):
            values = groups[column].to_numpy(dtype=float)
            assert np.isfinite(values).any(), (column, label)
            assert all(registry.in_range(column, v) for v in values[np.isfinite(values)]), (
                column, label)
            record, cell = records[column], float(table.loc[pooled, column])
            if record.defined:
                assert math.isclose(cell, record.value, rel_tol=1e-9, abs_tol=1e-12), (
                    column, label, cell, record.value)
            else:
                assert math.isnan(cell), (column, label)


@pytest.mark.parametrize("name", PER_GROUP)
def test_every_per_group_metric_is_invariant_to_the_order_of_the_queries(common, name):
    a, b = common
    s = registry.spec(name)
    for table in ("per_criterion", "per_fold"):
        ta, tb = getattr(a, table), getattr(b, table)
        columns = [c for c in ta.columns if _resolves(c, s)]
        np.testing.assert_allclose(ta[columns].to_numpy(dtype=float),
                                   tb.loc[ta.index, columns].to_numpy(dtype=float),
                                   rtol=1e-10, atol=1e-12, err_msg=f"{name} {table}")


#: Every metric whose spec has a kernel (ranking, calibration, dynamic-K, multi-label).
KERNEL_METRICS = tuple(s.name for s in registry.kernels(where=None))


@pytest.mark.parametrize("name", KERNEL_METRICS)
def test_a_kernel_metric_s_record_follows_its_spec(common, name):
    """Subset, n and variant come from the kernel: the queries (posts) it reduces over, the
    wording of its variant; a bootstrap interval's method is the resampling of its kernel's
    sums (posts for the per-post metrics)."""
    evaluation, _ = common
    s = registry.spec(name)
    cfg, pq = evaluation.config, evaluation.per_query
    over = {"all": len(pq), "ranking": int((pq["has_evidence"] == 1).sum()),
            "evidence": int((pq["has_evidence"] == 1).sum()),
            "posts": evaluation.summary["n_posts"],
            "positives": evaluation.summary["n_positive"]}[s.kernel.over]
    for r in _records_of(evaluation, name):
        assert r.n == over, r.name
        assert r.subset == {"all": "all_queries", "ranking": cfg.ranking_protocol,
                            "evidence": cfg.evidence_protocol, "positives": "all_queries",
                            "posts": "all_queries (per post)"}[s.kernel.over], r.name
        assert bool(r.variant) == (s.kernel.variant is not None), r.name
        if s.interval == "bootstrap":
            unit = "post" if s.kernel.over == "posts" else cfg.bootstrap_unit
            assert r.ci_method.startswith(f"bootstrap ({unit}, "), (r.name, r.ci_method)


@pytest.mark.parametrize("name", [n for n in KERNEL_METRICS
                                  if registry.spec(n).kernel.per_query])
def test_a_per_query_kernel_metric_equals_its_reduction_of_the_per_query_table(common, name):
    """A hand reduction of the per-query values (the per-query table's column, or the ranking
    kernel's) over the queries of its protocol gives the record."""
    evaluation, _ = common
    s, pq = registry.spec(name), evaluation.per_query
    for r in _records_of(evaluation, name):
        kept = pq if s.kernel.over == "all" else pq[pq["has_evidence"] == 1]
        if s.kernel.source == "ranking":
            if r.name not in pq.columns:
                continue  # (the per-query table holds the reference K's and MRR)
            values = kept[r.name].to_numpy(dtype=float)
        elif s.kernel.source == "k":
            values = kept["selected_k"].to_numpy(dtype=float)
        elif s.kernel.source == "squared_error":
            values = ((kept["p_has_evidence"] - kept["has_evidence"]) ** 2).to_numpy()
        else:
            values = kept[s.kernel.source].to_numpy(dtype=float)
        want = {"mean": np.mean, "median": np.median, "sum": np.sum,
                "p90": lambda v: np.percentile(v, 90),
                "per_1000": lambda v: v.sum() / v.size * 1000}[s.kernel.reduce](values)
        assert math.isclose(r.value, want, rel_tol=1e-12, abs_tol=1e-12), (r.name, want)


def test_a_metric_added_to_the_registry_is_computed_everywhere_from_its_spec(monkeypatch):
    """One spec over existing per-query values (the mean K of the queries with evidence, no
    interval) and no other edit: its record, its per-criterion and per-fold columns and the
    fold summary, equal to a hand computation from the per-query table."""
    from types import MappingProxyType

    new = registry.MetricSpec(
        "mean_k_evidence", "Mean K (evidence)", "sentences selected per evidence query on "
        "average", 7, "dynamic_k", bounds=None, higher_is_better=None, unit="sentences",
        interval=None, kernel=registry.Kernel("k", over="evidence", variant="dynamic_k"))
    specs = (*registry.SPECS, new)
    monkeypatch.setattr(registry, "SPECS", specs)
    monkeypatch.setattr(registry, "_BY_NAME", MappingProxyType({s.name: s for s in specs}))
    q, c = random_frames(n_posts=40, seed=4)
    evaluation = Evaluator(Dataset.from_frames(q, c)).evaluate(EvalConfig(bootstrap=0))
    pq = evaluation.per_query
    evidence = pq[pq["has_evidence"] == 1]
    record = evaluation.record("mean_k_evidence")
    assert record.value == pytest.approx(evidence["selected_k"].mean(), abs=1e-12)
    assert (record.n, record.subset, record.group) == (len(evidence), "positives_only",
                                                       "dynamic_k")
    assert record.interpretation == new.description and record.variant.startswith("γ=")
    assert record.ci95 is None and record.defined
    for label in ("criterion", "fold"):
        table = getattr(evaluation, f"per_{label}")
        want = evidence.groupby(evidence[label].astype(str))["selected_k"].mean()
        np.testing.assert_allclose(table.loc[want.index, "mean_k_evidence"], want, atol=1e-12)
    row = evaluation.fold_summary.set_index("metric").loc["mean_k_evidence"]
    assert row["pooled"] == pytest.approx(record.value, abs=1e-12)


def _resolves(column: str, s) -> bool:
    try:
        return registry.spec(column) is s
    except KeyError:
        return False


COUNTING = tuple(s.name for s in registry.counting())


@pytest.mark.parametrize("name", COUNTING)
def test_a_counting_metric_with_an_empty_denominator_is_undefined_with_its_reason(name):
    """Every counting metric on an outcome table whose denominator cells are all 0 (the other
    cells 1): undefined with a reason (the spec's own when it has one and both classes are
    present), never a number; with every cell 1 it is defined."""
    from metrics_core.evaluation.intervals import Intervals
    from metrics_core.evaluation.sections import RecordList, counting_records

    s = registry.spec(name)
    full = np.ones((1, 3, 2), dtype=np.int64)
    if s.counting.table == "tau":
        full[0, 0] = 0  # the prediction at τ never abstains
    out = RecordList(n_positive=int(full[0, :, 1].sum()), n_negative=int(full[0, :, 0].sum()))
    counting_records(out, full, s.counting.table, "all", Intervals(None))
    assert next(r for r in out if r.name == name).defined, name
    if not s.counting.denominator and s.counting.formula is None:
        return  # a count: defined on any table
    empty = full.copy()
    cells = (s.counting.cells("denominator") if s.counting.formula is None
             else ("tp", "fp", "tn", "fn"))  # a formula of the answered cells: none answered
    for cell in cells:
        empty[(0, *_CELL[cell])] = 0
    n_pos, n_neg = int(empty[0, :, 1].sum()), int(empty[0, :, 0].sum())
    out = RecordList(n_positive=n_pos, n_negative=n_neg)
    counting_records(out, empty, s.counting.table, "all", Intervals(None))
    r = next(r for r in out if r.name == name)
    assert r.defined is False and r.value is None and r.ci95 is None, name
    assert r.reason, name
    if s.undefined is not None and s.absent_class(n_pos, n_neg) is None:
        assert r.reason == s.undefined, name


_CELL = {"tp": (2, 1), "fp": (2, 0), "tn": (1, 0), "fn": (1, 1), "abstain_pos": (0, 1),
         "abstain_neg": (0, 0)}


def test_the_registry_validates_its_specs():
    with pytest.raises(ValueError, match="interval must be one of"):
        registry.MetricSpec("x", "X", "x", 4, "confusion", interval="exact")
    with pytest.raises(ValueError, match="applies must be among"):
        registry.MetricSpec("x", "X", "x", 4, "confusion", applies=frozenset({"site"}))
    with pytest.raises(ValueError, match="unknown outcome cell 'tpp'"):
        registry.Counting("gate", ("tpp",))
    with pytest.raises(ValueError, match="group_ci needs a counting proportion"):
        registry.MetricSpec("x", "X", "x", 4, "confusion", group_ci=True)
    with pytest.raises(ValueError, match="formula must be one of"):
        registry.Counting("gate", formula="kappa")
    with pytest.raises(ValueError, match=r"Kernel\.source must be one of"):
        registry.Kernel("hits")
    with pytest.raises(ValueError, match=r"Kernel\.reduce must be one of"):
        registry.Kernel("k", reduce="max")
    with pytest.raises(ValueError, match=r"Kernel\.over must be one of"):
        registry.Kernel("k", over="criterion")
    with pytest.raises(ValueError, match="a counting or a kernel"):
        registry.MetricSpec("x", "X", "x", 4, "confusion", counting=registry.Counting(
            "tau", ("tp",)), kernel=registry.Kernel("k"))


def test_every_metric_is_computed_from_its_spec():
    """Each spec has a counting or a kernel (one of them): no metric is wired by hand."""
    assert all((s.counting is None) != (s.kernel is None) for s in registry.SPECS)
    with pytest.raises(ValueError, match="a counting or a kernel"):
        registry.MetricSpec("x", "X", "x", 4, "confusion")


def test_the_fpr_target_families_are_recorded_target_by_target(common):
    """TPR at each FPR target and its threshold, target by target (the report's order), as
    many as the configuration's targets; TPR a Wilson proportion of the queries with
    evidence, the threshold read off every query's p."""
    evaluation, _ = common
    names = [r.name for r in evaluation.records if r.name.startswith(("tpr@", "threshold@"))]
    targets = [registry.fmt_t(t) for t in evaluation.config.tpr_fprs]
    assert names == [f"{kind}@fpr={t}" for t in targets for kind in ("tpr", "threshold")]
    n_pos = evaluation.summary["n_positive"]
    for t in targets:
        tpr, threshold = (evaluation.record(f"{k}@fpr={t}") for k in ("tpr", "threshold"))
        assert (tpr.n, threshold.n) == (n_pos, evaluation.summary["n_queries"])
        assert tpr.ci_method == "wilson" and threshold.ci95 is None


def test_the_counting_specs_agree_with_the_gate_and_abstention_kernels():
    """The gate summary and the triage files compute the gate and abstention metrics with
    :func:`~metrics_core.metrics.outcomes.gate_fractions` / ``abstention_fractions`` /
    ``abstention_ratios``; the registry's counting specs give the same values on random
    outcome tables (empty cells included)."""
    from metrics_core.metrics import outcomes
    from metrics_core.metrics.confusion import confusion_rates

    rng = np.random.default_rng(8)
    tables = rng.integers(0, 4, size=(400, 3, 2))
    expected = {name: outcomes.ratio(k, n, scale) for name, (k, n, scale) in (
        *outcomes.gate_fractions(tables).items(), *outcomes.abstention_fractions(tables).items())}
    ratios = outcomes.abstention_ratios(tables)
    expected.update(f1_pos=ratios["f1_pos"], f1_neg=ratios["f1_neg"],
                    mcc_answered=ratios["mcc"],
                    balanced_accuracy_answered=ratios["balanced_accuracy"])
    tau = tables.copy()
    tau[:, 0] = 0  # the prediction at τ never abstains
    tp, fp, tn, fn = outcomes.confusion_cells(tau)
    at_tau = {"tp": tp, "fp": fp, "tn": tn, "fn": fn, **confusion_rates(tp, fp, tn, fn)}
    checked = 0
    for s in registry.counting(where=None):
        value, _ = outcomes.counted(tau if s.counting.table == "tau" else tables, s.counting)
        want = at_tau.get(s.name) if s.counting.table == "tau" else expected.get(s.name)
        if want is None:  # a metric no older kernel has (the workup per detection)
            continue
        np.testing.assert_array_equal(value, np.asarray(want, dtype=np.float64), err_msg=s.name)
        checked += 1
    assert checked == len(registry.counting(where=None)) - 1
