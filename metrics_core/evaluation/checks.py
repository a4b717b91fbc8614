"""Consistency checks of a run (contract §10, seed 003 §9): every check listed with pass / fail.

The checks take the records and plain arrays; each can fail (tests feed them broken inputs).
"""

from __future__ import annotations

import math

import numpy as np

from metrics_core import registry
from metrics_core.evaluation.result import Check
from metrics_core.metrics import dynamic_k, gate, outcomes

__all__ = ["confusion_checks", "consistency_checks", "disjoint_checks", "disjoint_posts",
           "range_check", "recall_agreement", "recall_check"]


def _close(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=0, abs_tol=1e-12)


def range_check(records) -> Check:
    """Every value within its registry bounds (rates and probabilities in [0, 1])."""
    bad = [r.name for r in records if r.value is not None and not registry.in_range(r.name,
                                                                                  r.value)]
    return Check("rates and probabilities in [0, 1]", not bad,
                 "all within range" if not bad else f"out of range: {', '.join(bad)}")


def confusion_checks(values: dict, n: int, n_pos: int) -> list[Check]:
    """Totals and the sensitivity / specificity identities of the confusion at τ (§4)."""
    tp, fp, tn, fn = (int(values[k]) for k in ("tp", "fp", "tn", "fn"))
    total = tp + tn + fp + fn
    out = [Check("TP + TN + FP + FN = N", total == n, f"{total} vs N = {n}"),
           Check("TP + FN = N_pos", tp + fn == n_pos, f"{tp + fn} vs N_pos = {n_pos}"),
           Check("TN + FP = N_neg", tn + fp == n - n_pos, f"{tn + fp} vs N_neg = {n - n_pos}")]
    for name, num, den in (("sensitivity", tp, tp + fn), ("specificity", tn, tn + fp)):
        formula = "TP / (TP + FN)" if name == "sensitivity" else "TN / (TN + FP)"
        value = values.get(name)
        if den == 0:
            out.append(Check(f"{name} = {formula}", None, "no such queries: undefined"))
        else:
            ok = value is not None and math.isclose(value, num / den, abs_tol=1e-12)
            shown = "undefined" if value is None else f"{value:.6f}"
            out.append(Check(f"{name} = {formula}", ok, f"{shown} = {num} / {den}"))
    return out


def consistency_checks(ds, cfg, records, inter, criterion_codes, pooled_states) -> list[Check]:
    """Contract §10 checks of one run (the fold / split checks come from :func:`disjoint_checks`).

    ``criterion_codes`` are the per-criterion group codes; ``pooled_states`` the state counts
    of the gate summary, which the per-state sum must reproduce.
    """
    values = {r.name: r.value for r in records}
    n, n_pos = ds.n_queries, ds.n_positive
    checks = [range_check(records), *confusion_checks(values, n, n_pos)]
    total = int(sum(pooled_states))
    checks.append(Check("NEG + UNCERTAIN + POS = N", total == n, f"{total} vs N = {n}"))
    if cfg.ranking_protocol == "positives_only":
        n_rank = int(inter.rmask.sum())
        checks.append(Check("ranking metrics on has_evidence = 1 only", n_rank == n_pos,
                            f"ranking n = {n_rank}, positives = {n_pos}"))
    # The per-criterion outcome tables must add up to the overall one, cell by cell.
    pred = gate.states_to_prediction(inter.states)
    by_group = outcomes.outcome_counts(ds.y, pred, criterion_codes,
                                       int(criterion_codes.max()) + 1 if n else 1)
    pooled = outcomes.outcome_counts(ds.y, pred)[0]
    summed = by_group.sum(axis=0)
    missed = int(summed[1, 1])
    via_groups = (n_pos - missed) / n_pos if n_pos else math.nan
    overall = values.get("screening_sensitivity")
    overall = math.nan if overall is None else overall
    same = bool((summed == pooled).all()) and _close(via_groups, overall)
    checks.append(Check("screening sensitivity: pooled per-criterion = overall", same,
                        f"{via_groups:.6f} vs {overall:.6f}"))
    checks.append(_recall_check(ds, inter, values))
    return checks


def recall_agreement(ds, inter) -> bool | None:
    """Whether recall@K (ranking) and evidence recall at a fixed K = K agree on every query
    of the ranking protocol (None when recall@K is not computed)."""
    ref = inter.ref
    name = f"recall@{ref}"
    if name not in inter.rk:
        return None
    fixed_k = np.minimum(np.full(ds.n_queries, ref, dtype=np.int64), ds.n_cand)
    hits = dynamic_k.hits_within(ds, fixed_k)
    n_gold = np.asarray(ds.n_gold, dtype=np.float64)
    mask = inter.rmask
    via_evidence = np.where(n_gold > 0, hits / np.where(n_gold > 0, n_gold, 1), 0.0)[mask]
    ranking = inter.rk[name][mask]
    return bool(np.allclose(via_evidence, ranking, rtol=0, atol=1e-12))


def _recall_check(ds, inter, values) -> Check:
    return recall_check(recall_agreement(ds, inter), inter.ref, inter.cfg, values)


def recall_check(agree: bool | None, ref: int, cfg, values: dict) -> Check:
    """recall@K (ranking) and evidence recall at a fixed K = K must agree on the same queries
    (``agree``: :func:`recall_agreement`); the records themselves are labelled with their
    different K and subset."""
    name = f"recall@{ref}"
    if agree is None:
        return Check(f"{name} vs evidence_recall labelled", None, f"{name} not computed")
    rec = values.get(name)
    detail = (f"{name} = {'undefined' if rec is None else f'{rec:.6f}'} at fixed K = {ref} on "
              f"{cfg.ranking_protocol}; evidence recall at the same fixed K "
              f"{'agrees' if agree else 'DIFFERS'} per query; evidence_recall uses the selected "
              f"K on {cfg.evidence_protocol}")
    return Check(f"{name} vs evidence_recall labelled", agree, detail)


def disjoint_posts(ds) -> dict:
    """``{"fold": found, "split": found}``: ``found`` is None without the column, else
    ``(number of posts in more than one fold / split, the first five of them)``."""
    out = {}
    for column in ("fold", "split"):
        factorized = getattr(ds, f"{column}_codes")
        if factorized is None:
            out[column] = None
            continue
        codes = factorized[0]
        # Queries are stored post by post (canonical order): compare each post's min and max.
        starts = np.flatnonzero(np.r_[True, np.diff(ds.post_code) != 0])
        lo = np.minimum.reduceat(codes, starts) if codes.size else codes
        hi = np.maximum.reduceat(codes, starts) if codes.size else codes
        bad = ds.post_code[starts[lo != hi]]
        out[column] = (int(bad.size), [str(ds.posts[i]) for i in bad[:5]])
    return out


def disjoint_checks(ds, found: dict | None = None) -> list[Check]:
    """Folds and splits post-disjoint (§10): no post in more than one fold / split (``found``:
    :func:`disjoint_posts`, of ``ds`` when not given)."""
    found = disjoint_posts(ds) if found is None else found
    out = []
    for column, label in (("fold", "folds"), ("split", "splits")):
        if found[column] is None:
            out.append(Check(f"{label} post-disjoint", None, f"no {column} column"))
            continue
        n_bad, bad = found[column]
        examples = ", ".join(bad[:5])
        out.append(Check(f"{label} post-disjoint", n_bad == 0,
                         f"no post in more than one {column}" if n_bad == 0
                         else f"{n_bad} posts in more than one {column}: {examples}"))
    return out
