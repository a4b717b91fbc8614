"""What a user waits for: the whole ``metrics-core`` process, its start, loading and memory.

Run: ``python benchmarks/bench_cli.py [--posts 20000] [--large-posts 100000] [--repeats 5]
[--skip-large]`` (writes ``benchmarks/results/cli.{json,md}`` and pastes the table into
``benchmarks/README.md``). Every measurement runs in a fresh process; the two sides of each
ratio alternate within one run (A, B, A, B, ...) and the median of each side is reported, so
both see the same machine load:

1. ``import metrics_core`` and the command-line start (``metrics-core --help``): process wall
   time minus a bare ``python -c pass``, and ``python -X importtime``'s own figure;
2. loading: ``metrics_core.inputs.loading.load`` (read + validate + build the Dataset, with the
allocator
   settings of the command line and the app server) against a bare
   ``pyarrow.parquet.read_table`` of the same two files (imports outside the timer on both
   sides, pandas and ``pyarrow.dataset`` included: ``read_table`` imports them on its first
   call, ``metrics_core.inputs.loading`` imports pandas anyway); the read with its imports inside
   the timer, as earlier versions of this script measured it, is reported beside it, and so is
   the least any loader does (:data:`FLOOR`: the same read, the columns as numpy, each
   candidate's query and the within-query sort, nothing checked or built), for scale; these
   three run ``--load-repeats`` times (15: the bare read alone varies from ~120 to ~500 ms
   between runs) and their range is reported beside the medians;
3. the whole ``metrics-core evaluate --bootstrap 0`` process against the peer pipeline:
   pandas reading the same Parquet files, scikit-learn for the classification and calibration
   metrics and pytrec_eval for the ranking metrics (the subset they can compute), both from
   process start to exit, imports included;
4. at 1M queries / 20M candidates: one cold ``Evaluator(ds).evaluate(EvalConfig(bootstrap=0))``
   on a freshly loaded Dataset (then every table of ``to_json``), in a process with the
   allocator settings the command line and the app server use
   (:func:`metrics_core.allocator.keep_freed_memory`), against one cold read of the
   candidate table (``pyarrow.parquet.read_table``, ``pandas.read_parquet``), each in its own
   process, alternating, medians; and the peak resident memory of the whole
   ``metrics-core evaluate`` process (``wait4`` rusage of the child), the largest of as many
   runs as the other 1M measurements (it varies from run to run).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
DATA_DIR = ROOT / "benchmarks" / "data"
README = ROOT / "benchmarks" / "README.md"
MARKERS = ("<!-- cli:start -->", "<!-- cli:end -->")

PEER = r'''
import sys
import numpy as np, pandas as pd, pytrec_eval
from sklearn import metrics
from sklearn.calibration import calibration_curve
q = pd.read_parquet(sys.argv[1]); c = pd.read_parquet(sys.argv[2])
y, p = q["has_evidence"].to_numpy(), q["p_has_evidence"].to_numpy()
out = {"auroc": metrics.roc_auc_score(y, p), "auprc": metrics.average_precision_score(y, p),
       "brier": metrics.brier_score_loss(y, p)}
pred = p >= 0.5
out["f1"] = metrics.f1_score(y, pred); out["mcc"] = metrics.matthews_corrcoef(y, pred)
out["cm"] = metrics.confusion_matrix(y, pred).ravel().tolist()
calibration_curve(y, p, n_bins=10)
pos = set(zip(q.loc[q["has_evidence"] == 1, "post_id"], q.loc[q["has_evidence"] == 1, "criterion"]))
qid = (c["post_id"].astype(str) + "|" + c["criterion"].astype(str)).tolist()
run, qrels = {}, {}
for k, u, s, g in zip(qid, c["sent_uid"].tolist(), c["score"].tolist(), c["is_gold"].tolist()):
    run.setdefault(k, {})[u] = s
    if g:
        qrels.setdefault(k, {})[u] = 1
keep = {k for k in qrels if tuple(k.split("|", 1)) in pos}
qrels = {k: v for k, v in qrels.items() if k in keep}
run = {k: v for k, v in run.items() if k in keep}
cut = "1,3,5,10,20"
res = pytrec_eval.RelevanceEvaluator(qrels, {f"recall.{cut}", f"P.{cut}", f"map_cut.{cut}",
                                              f"ndcg_cut.{cut}", "recip_rank"}).evaluate(run)
print(len(res))
'''

READ = r'''
import json, sys, time
import pandas  # read_table imports it on first use (pandas metadata): untimed, as for load
import pyarrow.dataset  # and this (its reader); metrics_core.inputs.loading reads without it
import pyarrow.parquet as pq
t = time.perf_counter()
tables = [pq.read_table(path) for path in sys.argv[1:3]]
print(json.dumps({"seconds": time.perf_counter() - t}))
'''

#: The read as the earlier version of this script timed it: imports inside the timer.
READ_WITH_IMPORTS = r'''
import json, sys, time
t = time.perf_counter()
import pyarrow.parquet as pq
tables = [pq.read_table(path) for path in sys.argv[1:3]]
print(json.dumps({"seconds": time.perf_counter() - t}))
'''

LOAD = r'''
import json, sys, time
from metrics_core.allocator import keep_freed_memory
keep_freed_memory()  # as the command line and the app server run it
from metrics_core.inputs import loading
t = time.perf_counter()
loaded = loading.load(sys.argv[1], sys.argv[2])
print(json.dumps({"seconds": time.perf_counter() - t, "n_queries": loaded.dataset.n_queries,
                  "n_candidates": loaded.dataset.n_candidates}))
'''

#: The least any loader of these files has to do, for scale: read them as the loader reads
#: them (the ids as dictionaries), take the columns as numpy, find each candidate's
#: query (its run of equal ids) and sort each query's candidates by score. No validation, no
#: tie-break, no Dataset: what is left of the loader's budget after this is what the checks
#: and the build may take.
FLOOR = r'''
import json, sys, time
from metrics_core.allocator import keep_freed_memory
keep_freed_memory()
import numpy as np, pandas, pyarrow.dataset, pyarrow.parquet as pq
from metrics_core.data.ordering import grouped_order

def codes(column):
    return np.concatenate([chunk.indices.to_numpy() for chunk in column.chunks])

t = time.perf_counter()
queries = pq.read_table(sys.argv[1], read_dictionary=["post_id", "criterion"])
candidates = pq.read_table(sys.argv[2], read_dictionary=["post_id", "criterion", "sent_uid"])
score, gold = candidates["score"].to_numpy(), candidates["is_gold"].to_numpy()
p, y = queries["p_has_evidence"].to_numpy(), queries["has_evidence"].to_numpy()
post, crit = codes(candidates["post_id"]), codes(candidates["criterion"])
n = score.size
change = np.ones(n, dtype=bool)
change[1:] = (post[1:] != post[:-1]) | (crit[1:] != crit[:-1])
starts = np.flatnonzero(change)
qidx = np.repeat(np.arange(starts.size), np.diff(np.append(starts, n)))
order, n_cand = grouped_order(qidx, starts.size, score, stable=False, descending=True)
print(json.dumps({"seconds": time.perf_counter() - t}))
'''

EVALUATE = r'''
import gc, json, resource, sys, time
from metrics_core.allocator import keep_freed_memory
keep_freed_memory()  # as the command line and the app server run it
from metrics_core.inputs import loading
from metrics_core.config import EvalConfig
from metrics_core.evaluation.evaluator import Evaluator

ds = loading.load(sys.argv[1], sys.argv[2]).dataset
gc.collect()
t = time.perf_counter()
evaluation = Evaluator(ds).evaluate(EvalConfig(bootstrap=0))
t_eval = time.perf_counter() - t
evaluation.to_json()
t_all = time.perf_counter() - t
print(json.dumps({"evaluate": t_eval, "evaluate_and_tables": t_all, "n_queries": ds.n_queries,
                  "n_candidates": ds.n_candidates,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
'''

#: One cold read of the candidate table, after every import it triggers.
READ_ONE = r'''
import json, sys, time
import pandas, pyarrow.dataset, pyarrow.parquet as pq
read = pq.read_table if sys.argv[2] == "read_table" else pandas.read_parquet
t = time.perf_counter()
read(sys.argv[1])
print(json.dumps({"seconds": time.perf_counter() - t}))
'''


def run(cmd: list[str]) -> dict:
    """Run ``cmd`` to completion: wall seconds, stdout, and the child's own peak RSS (MB)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[:4]} failed ({proc.returncode}): {stderr[-2000:]}")
    rss = usage.ru_maxrss / (1024 * 1024 if sys.platform == "darwin" else 1024)
    return {"wall": wall, "stdout": stdout, "stderr": stderr, "peak_rss_mb": rss}


def alternate(commands: dict[str, list[str]], repeats: int) -> dict[str, list[dict]]:
    """Each command ``repeats`` times, interleaved (A, B, A, B, ...)."""
    runs: dict[str, list[dict]] = {name: [] for name in commands}
    for _ in range(repeats):
        for name, cmd in commands.items():
            runs[name].append(run(cmd))
    return runs


def median(values) -> float:
    return float(statistics.median(values))


def data_files(posts: int) -> tuple[Path, Path]:
    """The demo data of ``posts`` posts as zstd Parquet, written once and reused while
    ``metrics_core/demo.py`` is unchanged."""
    DATA_DIR.mkdir(parents=True, exist_ok=True)
    stamp = hashlib.sha256((ROOT / "metrics_core" / "demo.py").read_bytes()).hexdigest()[:16]
    q, c = (DATA_DIR / f"cli_{posts}_{kind}.parquet" for kind in ("queries", "candidates"))
    mark = DATA_DIR / f"cli_{posts}.stamp"
    if not (q.exists() and c.exists() and mark.exists() and mark.read_text() == stamp):
        from metrics_core.demo import make_synthetic

        queries, candidates = make_synthetic(posts, with_text=False)
        queries.to_parquet(q, compression="zstd")
        candidates.to_parquet(c, compression="zstd")
        mark.write_text(stamp)
    return q, c


def import_times(py: str, repeats: int) -> dict:
    """``import metrics_core`` and ``metrics-core --help``, minus a bare interpreter start."""
    runs = alternate({"bare": [py, "-c", "pass"], "import": [py, "-c", "import metrics_core"],
                      "help": [py, "-m", "metrics_core", "--help"]}, repeats)
    bare = median(r["wall"] for r in runs["bare"])
    own = []
    for _ in range(repeats):
        text = run([py, "-X", "importtime", "-c", "import metrics_core"])["stderr"]
        match = re.search(r"\|\s*(\d+) \| metrics_core\s*$", text, re.MULTILINE)
        own.append(int(match.group(1)) / 1e6 if match else float("nan"))
    cli = run([py, "-X", "importtime", "-m", "metrics_core", "--help"])["stderr"]
    loaded = sorted({m.split(".")[0] for m in re.findall(r"\|\s+([\w.]+)\s*$", cli, re.M)})
    return {"bare_python": bare,
            "import_process": median(r["wall"] for r in runs["import"]) - bare,
            "import_importtime": median(own),
            "help_process": median(r["wall"] for r in runs["help"]) - bare,
            "help_top_level_modules": loaded}


def environment() -> dict:
    import numpy
    import pandas
    import pyarrow

    return {"python": platform.python_version(), "machine": platform.processor() or
            platform.machine(), "cpus": os.cpu_count(), "numpy": numpy.__version__,
            "pandas": pandas.__version__, "pyarrow": pyarrow.__version__,
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "load_average": os.getloadavg()[0] if hasattr(os, "getloadavg") else None}


def fmt_s(seconds: float) -> str:
    if seconds < 0.001:  # a difference of two process times: below their noise
        return "< 1 ms"
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.2f} s"


def verdict(ok: bool) -> str:
    return "met" if ok else "**not met**"


def table(res: dict) -> list[str]:
    small, large, imp = res["small"], res.get("large"), res["imports"]
    n = f"{small['n_queries']:,} queries / {small['n_candidates'] / 1e6:.1f}M candidates"
    rows = [
        ("`import metrics_core` (process, minus bare Python)", fmt_s(imp["import_process"]),
         f"importtime {imp['import_importtime'] * 1000:.1f} ms", "≤ 0.3 s",
         verdict(imp["import_process"] <= 0.3)),
        ("CLI start, `metrics-core --help` (process, minus bare Python)",
         fmt_s(imp["help_process"]), "imports " + (", ".join(
             m for m in ("pandas", "pyarrow", "scipy", "sklearn", "plotly")
             if m in imp["help_top_level_modules"]) or "no pandas, pyarrow, scipy, plotly"),
         "≤ 0.3 s",
         verdict(imp["help_process"] <= 0.3)),
    ]
    load, read = small["load"], small["read_table"]
    earlier = small["read_table_with_imports"]
    spread = small.get("runs", {})

    def span(key: str) -> str:  # the range over the runs, beside the median
        values = spread.get(key)
        return "" if not values else f" ({fmt_s(min(values))}–{fmt_s(max(values))})"

    rows.append((f"loading (read + validate + build), {n}", fmt_s(load) + span("load"),
                 f"`pyarrow.parquet.read_table` {fmt_s(read)}{span('read_table')}: "
                 f"{load / read:.2f}x (the read with its imports timed, as this script used "
                 f"to: {fmt_s(earlier)}, {load / earlier:.2f}x)", "≤ 1.3x",
                 verdict(load / read <= 1.3)))
    if "floor" in small:
        floor = small["floor"]
        rows.append(("the least a loader does: the same read, columns to numpy, each "
                     "candidate's query, the within-query sort by score (no checks, no "
                     "tie-break, no Dataset)", fmt_s(floor) + span("floor"),
                     f"`read_table` {fmt_s(read)}: {floor / read:.2f}x", "–", "for scale"))
    ours, peer = small["cli"], small["peer"]
    rows.append((f"whole `metrics-core evaluate --bootstrap 0`, {n}", fmt_s(ours) + span("cli"),
                 f"scikit-learn + pytrec_eval {fmt_s(peer)}: {ours / peer:.3f}x", "≤ 0.25x",
                 verdict(ours / peer <= 0.25)))
    if large is not None:
        n1 = (f"{large['n_queries']:,} queries / {large['n_candidates'] / 1e6:.1f}M "
              f"candidates")
        read = min(large["read_parquet"], large["read_table"])
        rows.append((f"evaluate (bootstrap 0), {n1}", fmt_s(large["evaluate"]),
                     f"faster Parquet read of the candidates {fmt_s(read)} (`read_table` "
                     f"{fmt_s(large['read_table'])}, `pandas.read_parquet` "
                     f"{fmt_s(large['read_parquet'])}): {large['evaluate'] / read:.2f}x; with "
                     f"every table (`to_json`) {fmt_s(large['evaluate_and_tables'])}",
                     "≤ 1x", verdict(large["evaluate"] <= read)))
        peaks = large.get("cli_peak_rss_mb_runs") or [large["cli_peak_rss_mb"]]
        rows.append((f"peak memory of `metrics-core evaluate`, {n1}",
                     f"{large['cli_peak_rss_mb'] / 1024:.2f} GB",
                     f"the largest of {len(peaks)} runs ("
                     + ", ".join(f"{p / 1024:.2f}" for p in peaks)
                     + f" GB); whole process {fmt_s(large['cli_wall'])}", "≤ 3 GB",
                     verdict(large["cli_peak_rss_mb"] <= 3 * 1024)))
    lines = ["| measurement | metrics_core | baseline, ratio | target | |",
             "|---|---:|---|---|---|"]
    lines += [f"| {a} | {b} | {c} | {d} | {e} |" for a, b, c, d, e in rows]
    env = res["environment"]
    lines += ["", f"Medians of {res['repeats']} alternating fresh processes (loading: of "
              f"{small.get('load_repeats', res['repeats'])}, the whole command line: of "
              f"{small.get('cli_repeats', res['repeats'])}, with the range; 1M queries: of "
              f"{res['large_repeats']}). Python {env['python']}, numpy "
              f"{env['numpy']}, pandas {env['pandas']}, pyarrow {env['pyarrow']}; "
              f"{env['cpus']} cores; load average {env['load_average']:.1f} at the start; "
              f"{env['date']}."]
    return lines


def paste(lines: list[str]) -> None:
    text = README.read_text(encoding="utf-8")
    start, end = MARKERS
    if start in text and end in text:
        head, rest = text.split(start, 1)
        text = head + start + "\n" + "\n".join(lines) + "\n" + end + rest.split(end, 1)[1]
        README.write_text(text, encoding="utf-8")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--posts", type=int, default=20_000, help="posts (x 10 queries)")
    parser.add_argument("--large-posts", type=int, default=100_000,
                        help="posts of the large size (x 10 queries)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--cli-repeats", type=int, default=9,
                        help="repeats of the whole command line and its peer pipeline")
    parser.add_argument("--load-repeats", type=int, default=15,
                        help="repeats of the loading measurements (short runs; the bare read "
                             "varies by up to 3x between runs on the shared machine)")
    parser.add_argument("--large-repeats", type=int, default=3,
                        help="repeats of the 1M-query measurements")
    parser.add_argument("--skip-large", action="store_true", help="no 1M-query measurements")
    parser.add_argument("--no-readme", action="store_true", help="do not edit the README")
    args = parser.parse_args(argv)
    py = sys.executable
    res: dict = {"repeats": args.repeats, "large_repeats": args.large_repeats,
                 "environment": environment()}
    # Bytecode as an installed package has it: with PYTHONDONTWRITEBYTECODE set (as on this
    # project's machines) every process would otherwise recompile the package's sources
    # (~80 ms), while the peers' packages come compiled from their wheels.
    import compileall

    compileall.compile_dir(ROOT / "metrics_core", quiet=1)

    qp, cp = data_files(args.posts)
    res["imports"] = import_times(py, args.repeats)
    runs = alternate({"read": [py, "-c", READ, str(qp), str(cp)],
                      "load": [py, "-c", LOAD, str(qp), str(cp)],
                      "floor": [py, "-c", FLOOR, str(qp), str(cp)],
                      "read_with_imports": [py, "-c", READ_WITH_IMPORTS, str(qp), str(cp)]},
                     args.load_repeats)
    loads = [json.loads(r["stdout"]) for r in runs["load"]]
    seconds = {key: [json.loads(r["stdout"])["seconds"] for r in runs[key]] for key in runs}
    small = {"n_queries": loads[0]["n_queries"], "n_candidates": loads[0]["n_candidates"],
             "read_table": median(seconds["read"]), "load": median(seconds["load"]),
             "floor": median(seconds["floor"]),
             "read_table_with_imports": median(seconds["read_with_imports"]),
             "load_repeats": args.load_repeats,
             "runs": {"read_table": seconds["read"], "load": seconds["load"],
                      "floor": seconds["floor"]}}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "metrics_master.json"
        runs = alternate({"cli": [py, "-m", "metrics_core", "evaluate", str(qp), str(cp),
                                  "--bootstrap", "0", "--quiet", "--out", str(out)],
                          "peer": [py, "-c", PEER, str(qp), str(cp)]}, args.cli_repeats)
    small["cli_repeats"] = args.cli_repeats
    small["runs"].update({side: [r["wall"] for r in runs[side]] for side in ("cli", "peer")})
    for side in ("cli", "peer"):
        small[side] = median(r["wall"] for r in runs[side])
        small[f"{side}_peak_rss_mb"] = max(r["peak_rss_mb"] for r in runs[side])
    res["small"] = small

    if not args.skip_large:
        qp, cp = data_files(args.large_posts)
        runs = alternate({"evaluate": [py, "-c", EVALUATE, str(qp), str(cp)],
                          "read_table": [py, "-c", READ_ONE, str(cp), "read_table"],
                          "read_parquet": [py, "-c", READ_ONE, str(cp), "read_parquet"]},
                         args.large_repeats)
        evals = [json.loads(r["stdout"]) for r in runs["evaluate"]]
        large = {key: evals[0][key] for key in ("n_queries", "n_candidates")}
        for key in ("evaluate", "evaluate_and_tables", "peak_rss_mb"):
            large[key] = median(e[key] for e in evals)
        for key in ("read_table", "read_parquet"):
            large[key] = median(json.loads(r["stdout"])["seconds"] for r in runs[key])
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "metrics_master.json"
            # The peak varies from run to run (the helper threads' allocations interleave
            # differently in the one heap): the largest of the runs is reported.
            clis = [run([py, "-m", "metrics_core", "evaluate", str(qp), str(cp), "--bootstrap",
                         "0", "--quiet", "--out", str(out)])
                    for _ in range(args.large_repeats)]
        large["cli_wall"] = median(c["wall"] for c in clis)
        large["cli_peak_rss_mb"] = max(c["peak_rss_mb"] for c in clis)
        large["cli_peak_rss_mb_runs"] = [c["peak_rss_mb"] for c in clis]
        res["large"] = large

    lines = table(res)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "cli.json").write_text(json.dumps(res, indent=2) + "\n", encoding="utf-8")
    (RESULTS / "cli.md").write_text("# Whole-process benchmark\n\n" + "\n".join(lines) + "\n",
                                    encoding="utf-8")
    if not args.no_readme:
        paste(lines)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
