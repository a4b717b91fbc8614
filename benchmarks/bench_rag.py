"""RAG retrieval metrics (seed 002 §3): the ranking kernel vs a per-sample Python loop and
pytrec_eval, on synthetic samples; agreement is checked before any time is printed.

    python benchmarks/bench_rag.py [--samples 10000] [--retrieved 20]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from metrics_core.rag.data_model import (
    Document,
    EvaluationSample,
    RetrievedDocument,
    SystemOutputs,
)
from metrics_core.rag.retrieval_kernel import retrieval_per_sample

KS = (1, 3, 5, 10)


def make(n: int, m: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    samples, outputs = [], []
    for q in range(n):
        ranked = [f"d{j}" for j in rng.permutation(2 * m)[:m]]
        gold = [f"d{j}" for j in range(2 * m) if rng.random() < 0.1] or [ranked[0]]
        samples.append(EvaluationSample(f"q{q}", "?", relevant_docs=tuple(Document(d)
                                                                          for d in gold)))
        outputs.append(SystemOutputs(retrieved=tuple(RetrievedDocument(Document(d), 1.0 / r, r)
                                                     for r, d in enumerate(ranked, 1))))
    return samples, outputs


def loop(samples, outputs):
    """The seed's definitions, one sample at a time."""
    out = {f"{m}@{k}": [] for m in ("recall", "precision", "ndcg") for k in KS}
    out["mrr"] = []
    for s, o in zip(samples, outputs, strict=True):
        gold = {d.doc_id for d in s.relevant_docs}
        ranked = [r.doc.doc_id for r in sorted(o.retrieved, key=lambda r: r.rank)]
        for k in KS:
            hits = [d in gold for d in ranked[:k]]
            out[f"recall@{k}"].append(sum(hits) / len(gold))
            out[f"precision@{k}"].append(sum(hits) / min(k, len(ranked)))
            dcg = sum(h / np.log2(i + 2) for i, h in enumerate(hits))
            idcg = sum(1 / np.log2(i + 2) for i in range(min(len(gold), k)))
            out[f"ndcg@{k}"].append(dcg / idcg)
        first = next((i for i, d in enumerate(ranked, 1) if d in gold), None)
        out["mrr"].append(0.0 if first is None else 1.0 / first)
    return {k: np.array(v) for k, v in out.items()}


def trec(samples, outputs):
    import pytrec_eval

    qrels = {s.sample_id: {d.doc_id: 1 for d in s.relevant_docs} for s in samples}
    run = {s.sample_id: {r.doc.doc_id: float(1000 - r.rank) for r in o.retrieved}
           for s, o in zip(samples, outputs, strict=True)}
    ev = pytrec_eval.RelevanceEvaluator(qrels, {"recall.1,3,5,10", "P.1,3,5,10",
                                                "ndcg_cut.1,3,5,10", "recip_rank"})
    return ev.evaluate(run)


def best(fn, *args, repeat=3):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        value = fn(*args)
        times.append(time.perf_counter() - t)
    return min(times), value


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=10_000)
    parser.add_argument("--retrieved", type=int, default=20)
    args = parser.parse_args()
    samples, outputs = make(args.samples, args.retrieved)
    t_kernel, ours = best(lambda: retrieval_per_sample(samples, outputs, ks=KS,
                                                       full_list=True))
    t_loop, ref = best(loop, samples, outputs)
    t_trec, got = best(trec, samples, outputs)
    for key, values in ref.items():
        if not np.allclose(ours[key], values, atol=1e-12, rtol=0):
            print(f"disagreement with the loop on {key}")
            return 1
    trec_ndcg10 = np.array([got[s.sample_id]["ndcg_cut_10"] for s in samples])
    if not np.allclose(ours["ndcg@10"], trec_ndcg10, atol=1e-12, rtol=0):
        print("disagreement with pytrec_eval on ndcg@10")
        return 1
    print(f"{args.samples:,} samples x {args.retrieved} retrieved, {len(ref)} metrics "
          f"(agreement checked):")
    print(f"  ranking kernel (input building included) {t_kernel * 1e3:8.1f} ms")
    print(f"  per-sample Python loop                   {t_loop * 1e3:8.1f} ms "
          f"({t_loop / t_kernel:.1f}x)")
    print(f"  pytrec_eval (input building included)    {t_trec * 1e3:8.1f} ms "
          f"({t_trec / t_kernel:.1f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
