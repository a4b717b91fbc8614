"""What a user waits for: the whole ``metrics-core evaluate`` process against the peer pipeline.

Run: ``python benchmarks/bench_cli.py [--posts 20000] [--repeats 3]`` (writes
``benchmarks/results/cli.md``). Every measurement runs in a fresh process, one after the other
in the same run, so the ratios compare like with like:

- ``import metrics_core``;
- loading (read + validate + build the Dataset) against a bare ``pyarrow.parquet.read_table``
  of the same two files;
- the whole ``metrics-core evaluate --bootstrap 0`` process;
- the peer pipeline: pandas reading the same Parquet files, scikit-learn for the classification
  and calibration metrics and pytrec_eval for the ranking metrics (the subset they can compute).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"

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

LOAD = r'''
import sys, time
t = time.perf_counter()
import pyarrow.parquet as pq
a = pq.read_table(sys.argv[1]); b = pq.read_table(sys.argv[2])
t_read = time.perf_counter() - t
from metrics_core import io
t = time.perf_counter()
io.load(sys.argv[1], sys.argv[2])
print(t_read, time.perf_counter() - t)
'''


def timed(cmd: list[str]) -> tuple[float, str]:
    t = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=True)
    return time.perf_counter() - t, done.stdout


def median(fn, repeats: int) -> float:
    return statistics.median(fn() for _ in range(repeats))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--posts", type=int, default=20_000, help="posts (x 10 queries)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    from metrics_core.demo import make_synthetic

    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        queries, candidates = make_synthetic(args.posts, with_text=False)
        qp, cp = Path(tmp) / "queries.parquet", Path(tmp) / "candidates.parquet"
        queries.to_parquet(qp)
        candidates.to_parquet(cp)
        n_q, n_c = len(queries), len(candidates)
        del queries, candidates
        t_import = median(lambda: timed([py, "-c", "import metrics_core"])[0], args.repeats)
        t_python = median(lambda: timed([py, "-c", "pass"])[0], args.repeats)
        loads = [timed([py, "-c", LOAD, str(qp), str(cp)])[1].split()
                 for _ in range(args.repeats)]
        t_read = statistics.median(float(r[0]) for r in loads)
        t_load = statistics.median(float(r[1]) for r in loads)
        out = Path(tmp) / "m.json"
        t_ours = median(lambda: timed([py, "-m", "metrics_core", "evaluate", str(qp), str(cp),
                                       "--bootstrap", "0", "--quiet", "--out", str(out)])[0],
                        args.repeats)
        t_peer = median(lambda: timed([py, "-c", PEER, str(qp), str(cp)])[0], args.repeats)
    rows = [
        ("`import metrics_core` (process, minus bare Python)", t_import - t_python, None,
         "≤ 0.3 s"),
        ("loading vs `pyarrow.parquet.read_table`", t_load, t_read, "≤ 1.3x"),
        ("whole `metrics-core evaluate` vs peer pipeline", t_ours, t_peer, "≤ 0.25x"),
    ]
    lines = [f"# Whole-process benchmark ({n_q:,} queries, {n_c:,} candidates, "
             f"median of {args.repeats})", "",
             "| what | metrics_core | baseline | ratio | target |", "|---|---:|---:|---:|---|"]
    for what, ours, base, target in rows:
        ratio = "" if base is None else f"{ours / base:.2f}x"
        base_text = "" if base is None else f"{base:.2f} s"
        lines.append(f"| {what} | {ours:.2f} s | {base_text} | {ratio} | {target} |")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "cli.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
