"""The metric registry drives records, labels, checks and the CLI summary (one spec per metric)."""

from __future__ import annotations

import sys
from pathlib import Path

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

    code = ("import sys\nfrom metrics_core import cli\nparser = cli._parser()\n"
            "for argv in (['evaluate', 'q.csv', 'c.csv'], ['triage', 't.csv']):\n"
            "    cli._config(parser.parse_args(argv)) if argv[0] == 'evaluate' else "
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
    """Streamlit runs a full garbage collection after every script run. The server entry
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
