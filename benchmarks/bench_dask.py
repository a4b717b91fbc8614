"""Benchmark of the Dask engine: wall time and peak memory of every process together.

Writes N queries and 20 N candidates as Parquet parts partitioned by post (part ``i`` of each
table holds the same posts), chunk by chunk, under a scratch folder (default
``/tmp/metrics_core_bench_dask``; never committed), then runs the Dask engine
(``metrics_core.engines.dask.evaluate``, what ``metrics-core evaluate --engine dask`` runs) on
a local cluster and writes metrics_master.json. A thread samples the resident memory (RSS) of
this process and all its children (the scheduler runs here; the workers and their nannies are
children) every 0.2 s; the peak of the sum is reported.

    python benchmarks/bench_dask.py --queries 1000000
    python benchmarks/bench_dask.py --queries 10000000 --queries-per-part 100000

The data are written once per size and reused (``--regenerate`` writes them again;
``--write-only`` writes them and stops, so the large sizes can be written ahead of the runs).

``--reduced`` runs ``metrics-core evaluate --engine dask --reduced``
(``dask.evaluate_reduced``: no per-query value is gathered; the records are made from
summaries merged on the workers) on a local cluster started as the CLI starts it, and reports
the client's peak (this process, which also hosts the scheduler) apart from the whole
cluster's, the wall time, the size of the document and the cost of one part (seconds and peak
RSS of ``reduced.unit_summary`` on part 0 in a child process) for a paper estimate at larger
sizes. The machine is shared: run it under ``nice``; 10M and 30M queries take long to write
and to run (the lead runs them on a quiet machine):

    python benchmarks/bench_dask.py --queries 3000000 --reduced --bootstrap 200
    python benchmarks/bench_dask.py --queries 30000000 --reduced --bootstrap 200 \
        --results benchmarks/results/dask_reduced.jsonl

``--per-query`` (with ``--reduced``) has the workers also write the per-query table as
Parquet parts (``--per-query DIR``), and reports its rows, parts and bytes.

``--scheduler-process`` starts the scheduler and the workers in processes of their own (as a
run with ``--scheduler ADDRESS`` has them), so the client's peak is the client's alone; without
it the LocalCluster's scheduler runs in the client's process and its task state (growing with
the number of parts) counts as the client's.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CRITERIA = tuple(f"C{i}" for i in range(1, 11))
CANDIDATES_PER_QUERY = 20


def write_parts(folder: Path, n_queries: int, per_part: int, seed: int = 0) -> int:
    """Queries and candidates, ``per_part`` queries (whole posts) per part; returns parts."""
    n_crit = len(CRITERIA)
    n_posts = -(-n_queries // n_crit)
    posts_per_part = max(1, per_part // n_crit)
    (folder / "queries").mkdir(parents=True, exist_ok=True)
    (folder / "candidates").mkdir(parents=True, exist_ok=True)
    uids = np.array([f"s{j:02d}" for j in range(CANDIDATES_PER_QUERY)], dtype=object)
    crit = np.array(CRITERIA, dtype=object)
    part = 0
    for first in range(0, n_posts, posts_per_part):
        rng = np.random.default_rng([seed, part])
        ids = np.array([f"post{i:09d}" for i in range(first, min(first + posts_per_part,
                                                                  n_posts))], dtype=object)
        nq = ids.size * n_crit
        post = np.repeat(ids, n_crit)
        criterion = np.tile(crit, ids.size)
        y = (rng.random(nq) < 0.3).astype(np.int8)
        p = np.clip(rng.normal(0.35 + 0.3 * y, 0.2), 0.0, 1.0).round(3)
        fold = (np.arange(first, first + ids.size) % 5).repeat(n_crit)
        pq.write_table(pa.table({"post_id": pa.array(post, pa.string()),
                                 "criterion": pa.array(criterion, pa.string()),
                                 "has_evidence": y, "p_has_evidence": p, "fold": fold}),
                       folder / "queries" / f"part-{part:05d}.parquet")
        nc = nq * CANDIDATES_PER_QUERY
        gold = np.zeros(nc, dtype=np.int8)
        pos = np.flatnonzero(y)
        n_gold = rng.integers(1, 4, size=pos.size)
        for g in range(3):  # up to three gold candidates at random positions of each query
            sel = pos[n_gold > g]
            gold[sel * CANDIDATES_PER_QUERY + rng.integers(0, CANDIDATES_PER_QUERY, sel.size)] = 1
        score = rng.normal(gold * 1.5, 1.0).round(2)  # rounded: ties in score
        pq.write_table(pa.table({
            "post_id": pa.array(np.repeat(post, CANDIDATES_PER_QUERY), pa.string()),
            "criterion": pa.array(np.repeat(criterion, CANDIDATES_PER_QUERY), pa.string()),
            "sent_uid": pa.array(np.tile(uids, nq), pa.string()),
            "score": score, "is_gold": gold}),
            folder / "candidates" / f"part-{part:05d}.parquet")
        part += 1
    return part


class PeakMemory:
    """Peak of the summed RSS of this process and all its descendants, sampled every 0.2 s."""

    def __init__(self, interval: float = 0.2, *, include_self: bool = True):
        import psutil

        self.include_self = include_self
        self.root = psutil.Process()
        self.interval = interval
        self.peak = self.peak_client = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> None:
        import psutil

        client = self.root.memory_info().rss
        total = client if self.include_self else 0
        for child in self.root.children(recursive=True):
            with contextlib.suppress(psutil.Error):  # a child that has just exited
                total += child.memory_info().rss
        self.peak = max(self.peak, total)
        self.peak_client = max(self.peak_client, client)

    def _run(self) -> None:
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(self.interval)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self._sample()


def compare_memory(folder: Path, dask_doc: dict, bootstrap: int) -> dict:
    """Run the in-memory engine on the same data (joined files); its time, memory, agreement."""
    import subprocess

    joined = {}
    for table in ("queries", "candidates"):
        joined[table] = folder / f"{table}.parquet"
        if not joined[table].exists():
            pq.write_table(pq.read_table(folder / table), joined[table])
    out = folder / "metrics_master_memory.json"
    with PeakMemory(include_self=False) as mem:  # the child process alone
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "metrics_core", "evaluate",
                        str(joined["queries"]), str(joined["candidates"]), "--out", str(out),
                        "--bootstrap", str(bootstrap), "--quiet"], check=True, cwd=ROOT)
        wall = time.perf_counter() - t
    doc = json.loads(out.read_text())
    worst = 0.0
    for a, b in zip(doc["metrics"], dask_doc["metrics"], strict=True):
        assert a["name"] == b["name"], (a, b)
        pairs = [(a["value"], b["value"])]
        if a["ci95"] is not None or b["ci95"] is not None:  # Wilson, Wald or bootstrap
            pairs += list(zip(a["ci95"], b["ci95"], strict=True))
        for u, v in pairs:
            if u is None or v is None:
                assert u == v, (a, b)
            else:
                worst = max(worst, abs(u - v))
    assert worst <= 1e-12, worst
    return {"memory_engine_wall_s": round(wall, 2),
            "memory_engine_peak_rss_gb": round(mem.peak / 2**30, 2),
            "max_abs_difference_of_values_and_cis": worst}


def part_cost(folder: Path, bootstrap: int) -> dict:
    """Seconds and peak RSS of one part's summary (``reduced.unit_summary`` on part 0, with
    ``bootstrap`` resamples), in a child process so the figure is the part's alone."""
    import subprocess

    code = f"""
import resource, sys, time
sys.path.insert(0, {str(ROOT)!r})
from metrics_core.config import EvalConfig
from metrics_core.engines import reduced
q = [{str(folder / "queries" / "part-00000.parquet")!r}]
c = [{str(folder / "candidates" / "part-00000.parquet")!r}]
t = time.perf_counter()
reduced.unit_summary(q, c, EvalConfig(bootstrap={bootstrap}), queries_name="q",
                     candidates_name="c")
print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True, cwd=ROOT).stdout.split()
    return {"part_s": round(float(out[0]), 2), "part_peak_rss_gb": round(int(out[1]) / 2**20, 3)}


def _commit() -> str | None:
    """The code's commit (the figures name the code they measured), None outside git."""
    import subprocess

    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, check=True,
                              capture_output=True, text=True).stdout.strip() or None
    except (OSError, subprocess.CalledProcessError):
        return None


@contextlib.contextmanager
def scheduler_processes(folder: Path, workers: int):
    """A scheduler and ``workers`` single-threaded workers, each in a process of its own
    (children of this one, so counted in the whole cluster's peak), as with ``metrics-core
    evaluate --engine dask --scheduler ADDRESS``: the client's peak is then the client's own,
    without the scheduler's task state. Yields the scheduler's address."""
    import subprocess

    bin_dir = Path(sys.executable).parent
    info = folder / "scheduler.json"
    info.unlink(missing_ok=True)
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    procs = [subprocess.Popen([str(bin_dir / "dask"), "scheduler", "--scheduler-file",
                               str(info), "--no-dashboard"], **quiet)]
    try:
        deadline = time.monotonic() + 60
        while not info.exists():
            if time.monotonic() > deadline:
                raise RuntimeError("the Dask scheduler did not start within 60 s")
            time.sleep(0.2)
        time.sleep(0.5)  # the file is written whole, then read
        address = json.loads(info.read_text())["address"]
        procs.append(subprocess.Popen([str(bin_dir / "dask"), "worker", "--scheduler-file",
                                       str(info), "--nworkers", str(workers), "--nthreads",
                                       "1", "--no-dashboard"], **quiet))
        from distributed import Client

        with Client(address, timeout=60) as client:
            client.wait_for_workers(workers, timeout=120)
        yield address
    finally:
        for proc in reversed(procs):
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()


def run_reduced(folder: Path, args, parts: int, size: int) -> dict:
    """``evaluate --engine dask --reduced`` on a local cluster of ``args.workers``, as the CLI
    runs it: wall time, client and cluster peaks, the document's size, one part's cost."""
    from metrics_core.config import EvalConfig
    from metrics_core.engines import dask as dask_engine

    cfg = EvalConfig(bootstrap=args.bootstrap)
    out = folder / "metrics_master_reduced.json"
    per_query = folder / "per_query_reduced" if args.per_query else None
    if per_query is not None and per_query.exists():
        shutil.rmtree(per_query)  # (the benchmark's own output of an earlier run)
    with PeakMemory() as mem, contextlib.ExitStack() as stack:
        t0 = time.perf_counter()
        scheduler = (stack.enter_context(scheduler_processes(folder, args.workers))
                     if args.scheduler_process else None)
        doc = dask_engine.evaluate_reduced(folder / "queries", folder / "candidates", cfg,
                                           n_workers=args.workers, scheduler=scheduler,
                                           per_query=per_query)
        text = json.dumps(doc, indent=2, allow_nan=False)
        out.write_text(text)
        wall = time.perf_counter() - t0
    auroc = next(r for r in doc["metrics"] if r["name"] == "auroc")
    figures = {
        "mode": "reduced", "commit": _commit(), "queries": doc["dataset"]["n_queries"],
        "candidates": doc["dataset"]["n_candidates"], "parts": parts,
        "parquet_bytes": size, "workers": args.workers, "bootstrap": args.bootstrap,
        "wall_s": round(wall, 2),
        "scheduler": "own process" if args.scheduler_process else "in the client",
        "peak_rss_client_gb": round(mem.peak_client / 2**30, 3),
        "peak_rss_all_processes_gb": round(mem.peak / 2**30, 2),
        "document_bytes": len(text.encode()), "records": len(doc["metrics"]),
        "auroc": auroc["value"], "auroc_ci95": auroc["ci95"],
        "auroc_ci_method": auroc["ci_method"],
        "roc_band_points": None if doc.get("roc_band") is None else len(doc["roc_band"]),
    }
    if per_query is not None:
        figures["per_query_rows"] = doc["per_query"]["n_rows"]
        figures["per_query_parts"] = len(doc["per_query"]["parts"])
        figures["per_query_bytes"] = sum(f.stat().st_size for f in per_query.iterdir())
    if not args.no_part_cost:
        figures.update(part_cost(folder, args.bootstrap))
    return figures


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=1_000_000)
    parser.add_argument("--queries-per-part", type=int, default=100_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--bootstrap", type=int, default=0)
    parser.add_argument("--scratch", type=Path, default=Path("/tmp/metrics_core_bench_dask"))
    parser.add_argument("--regenerate", action="store_true")
    parser.add_argument("--compare-memory", action="store_true",
                        help="also run the in-memory engine (metrics-core evaluate in a child "
                             "process, on the parts joined into one file per table), time it, "
                             "measure its peak memory, and check every metric value agrees")
    parser.add_argument("--reduced", action="store_true",
                        help="run evaluate --engine dask --reduced (no gather): the records "
                             "from summaries merged on the workers, the Poisson bootstrap when "
                             "--bootstrap > 0")
    parser.add_argument("--scheduler-process", action="store_true",
                        help="with --reduced: the scheduler and the workers in processes of "
                             "their own (dask scheduler / dask worker), the run given their "
                             "address as --scheduler gives it; the client's peak is then its "
                             "own, without the scheduler's task state")
    parser.add_argument("--per-query", action="store_true",
                        help="with --reduced: the workers also write the per-query table as "
                             "Parquet parts (under the data's folder, replaced on each run); "
                             "its rows, parts and bytes are reported")
    parser.add_argument("--no-part-cost", action="store_true",
                        help="with --reduced: skip the one-part cost (a child process)")
    parser.add_argument("--results", type=Path, default=None,
                        help="append the figures as one JSON line to this file")
    parser.add_argument("--write-only", action="store_true",
                        help="write the data for this size (if not written yet) and stop: "
                             "the large sizes can be written ahead of the runs")
    args = parser.parse_args(argv)

    from metrics_core.config import EvalConfig
    from metrics_core.engines import dask as dask_engine

    folder = args.scratch / f"n{args.queries}"
    if args.regenerate and folder.exists():
        shutil.rmtree(folder)
    if not (folder / "done").exists():
        t = time.perf_counter()
        parts = write_parts(folder, args.queries, args.queries_per_part)
        (folder / "done").write_text(str(parts))
        print(f"wrote {parts} parts in {time.perf_counter() - t:.1f} s", flush=True)
    parts = int((folder / "done").read_text())
    if args.write_only:
        return 0
    size = sum(f.stat().st_size for t in ("queries", "candidates")
               for f in (folder / t).glob("*.parquet"))
    if args.reduced:
        figures = run_reduced(folder, args, parts, size)
        print(json.dumps(figures, indent=2))
        if args.results is not None:
            with open(args.results, "a", encoding="utf-8") as f:
                f.write(json.dumps(figures) + "\n")
        return 0
    out = folder / "metrics_master.json"
    with PeakMemory() as mem:
        t0 = time.perf_counter()
        # as the CLI does: the engine starts a local cluster, gathers the per-query values,
        # closes the cluster, then builds the report
        run = dask_engine.evaluate(folder / "queries", folder / "candidates",
                                   EvalConfig(bootstrap=args.bootstrap),
                                   n_workers=args.workers)
        t1 = time.perf_counter()
        text = run.evaluation.to_json()
        out.write_text(text)
        t2 = time.perf_counter()
    doc = json.loads(text)
    figures = {
        "queries": doc["dataset"]["n_queries"], "candidates": doc["dataset"]["n_candidates"],
        "parts": parts, "parquet_bytes": size, "workers": args.workers,
        "bootstrap": args.bootstrap,
        "evaluate_s": round(t1 - t0, 2), "json_s": round(t2 - t1, 2),
        "wall_s": round(t2 - t0, 2),
        "peak_rss_all_processes_gb": round(mem.peak / 2**30, 2),
        "peak_rss_client_gb": round(mem.peak_client / 2**30, 2),
        "auroc": next(r["value"] for r in doc["metrics"] if r["name"] == "auroc"),
    }
    if args.compare_memory:
        figures.update(compare_memory(folder, doc, args.bootstrap))
    print(json.dumps(figures, indent=2))
    if args.results is not None:
        with open(args.results, "a", encoding="utf-8") as f:
            f.write(json.dumps(figures) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
