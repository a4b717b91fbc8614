"""Retrieval metrics of every sample on the vectorised ranking kernel (seed 002 §3; contract
§3 and §12).

:func:`ranking_dataset` turns the samples into a :class:`~metrics_core.data.dataset.Dataset`: one
query per sample, its retrieved documents as candidates in ``rank`` order, a candidate gold
when its ``doc_id`` is in the sample's ``relevant_docs`` (found with one :func:`numpy.isin`
over (sample, document) codes), and ``n_gold`` = ``|G|`` so that relevant documents the
retriever missed count. :func:`retrieval_per_sample` hands it to
:func:`metrics_core.metrics.ranking.ranking_per_query` with the seed 002 variants (``precision@k``
over ``min(k, |R|)``, AP over the hits) and marks samples with ``|G| = 0`` as skipped (``nan``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from metrics_core.data.dataset import Dataset
from metrics_core.rag.data_model import EvaluationSample, SystemOutputs

__all__ = ["ranking_dataset", "retrieval_per_sample"]


def ranking_dataset(samples: Sequence[EvaluationSample],
                    outputs: Sequence[SystemOutputs]) -> Dataset:
    """The samples as a ranking :class:`Dataset` (one query per sample, candidates in rank
    order; ``|G|`` from ``relevant_docs``, duplicates counted once)."""
    n = len(samples)
    n_ret = np.array([len(o.retrieved) for o in outputs], dtype=np.int64)
    # The only per-document Python work: reading the fields off the objects.
    flat = [r for o in outputs for r in o.retrieved]
    ret_ids = [r.doc.doc_id for r in flat]
    ranks = np.array([r.rank for r in flat], dtype=np.int64)
    scores = np.array([r.score for r in flat], dtype=np.float64)
    gold_ids = [d.doc_id for s in samples for d in (s.relevant_docs or ())]
    n_gold_listed = np.array([len(s.relevant_docs or ()) for s in samples], dtype=np.int64)

    codes, _ = pd.factorize(pd.Index(ret_ids + gold_ids, dtype=object))
    n_codes = int(codes.max(initial=-1)) + 1
    ret_q = np.repeat(np.arange(n, dtype=np.int64), n_ret)
    gold_q = np.repeat(np.arange(n, dtype=np.int64), n_gold_listed)
    ret_key = ret_q * n_codes + codes[:len(ret_ids)]
    # |G| counts each relevant doc_id once (a repeated one in relevant_docs is one document).
    gold_key = np.unique(gold_q * n_codes + codes[len(ret_ids):])
    n_gold = np.bincount(gold_key // max(n_codes, 1), minlength=n).astype(np.int64)
    is_gold = np.isin(ret_key, gold_key)
    _, first, counts = np.unique(ret_key, return_index=True, return_counts=True)
    if (counts > 1).any():
        i = int(first[np.flatnonzero(counts > 1)[0]])
        raise ValueError(f"sample {samples[int(ret_q[i])].sample_id!r}: doc_id "
                         f"{ret_ids[i]!r} is retrieved more than once (R is a set of doc ids, "
                         f"seed 002 §3.1)")
    ranks_key = ret_q * (int(ranks.max(initial=0)) + 1) + ranks
    if np.unique(ranks_key).size != ranks_key.size:
        raise ValueError("rank must be unique within a sample's retrieved documents")

    order = np.lexsort((ranks, ret_q))  # rank order within each sample
    offsets = np.concatenate(([0], np.cumsum(n_ret)))
    sample_ids = np.array([s.sample_id for s in samples], dtype=object)
    return Dataset(
        post_id=sample_ids, criterion=np.full(n, "rag", dtype=object),
        criterion_code=np.zeros(n, dtype=np.int32), criteria=("rag",),
        post_code=np.arange(n, dtype=np.int64), posts=sample_ids,
        y=(n_gold > 0).astype(np.int8), p=np.full(n, 0.5), fold=None, split=None,
        n_gold_given=n_gold, offsets=offsets, score=scores[order], is_gold=is_gold[order],
        sent_uid=np.asarray(ret_ids, dtype=object)[order] if ret_ids else
        np.empty(0, dtype=object), ranked_by="rank")


def retrieval_per_sample(samples: Sequence[EvaluationSample], outputs: Sequence[SystemOutputs],
                         *, ks: Sequence[int] = (), full_list: bool = False
                         ) -> dict[str, np.ndarray]:
    """Per-sample retrieval values (``nan`` where ``|G| = 0``: skipped, seed 002 §3).

    Keys ``recall@k``, ``precision@k``, ``hit_rate@k``, ``mrr@k``, ``ap@k``, ``ndcg@k`` for each
    ``k`` in ``ks``; with ``full_list`` also ``mrr`` and ``ap`` over the whole ranking.
    """
    from metrics_core.metrics.ranking import ranking_per_query

    ds = ranking_dataset(samples, outputs)
    cutoffs = [int(k) for k in ks]
    whole = max(int(ds.n_cand.max(initial=0)), 1)
    if full_list and whole not in cutoffs:
        cutoffs.append(whole)
    if not cutoffs:
        return {}
    values = ranking_per_query(ds, ks=tuple(cutoffs), precision_denominator="min_k_n",
                               map_denominator="hits")
    skipped = ~ds.positives
    rename = {"recall": "recall", "precision": "precision", "hit": "hit_rate", "mrr": "mrr",
              "map": "ap", "ndcg": "ndcg"}
    out = {}
    for k in ks:
        for src, dst in rename.items():
            out[f"{dst}@{k}"] = np.where(skipped, np.nan, values[f"{src}@{k}"])
    if full_list:
        out["mrr"] = np.where(skipped, np.nan, values["mrr"])
        out["ap"] = np.where(skipped, np.nan, values[f"map@{whole}"])
    return out
