"""Per-post multi-label metrics over the criteria vector (contract §8, protocol ``all_queries``).

Each post is one multi-label instance: a vector with one 0/1 label per criterion (10 in the
reference data). :func:`post_matrix` arranges the per-query gold labels and a per-query decision
(:func:`decision_labels`: fixed threshold, screen-in or alert) into posts x criteria matrices, and
:func:`multilabel_metrics` computes exact match, Hamming score / loss and the four F1 averages.

Every F1 is ``2TP / (2TP + FP + FN)`` and 1.0 where that is 0 / 0 (no gold and no predicted
positive), i.e. scikit-learn's ``f1_score(..., zero_division=1.0)``.

**Missing cells.** A post may lack a criterion (its query is absent from the data); ``mask`` is
False there and such cells are left out of every count: exact match asks that all *present*
cells agree, Hamming loss is the error rate over present cells (pooled), per-post F1 uses the
post's present cells, per-criterion F1 the criterion's present cells. Posts (criteria) without
any present cell are left out of the averages over posts (criteria). With a complete matrix every
value equals scikit-learn's.

Sources: "contract §N" is section N of ``docs/CONTRACT.md``; "seed 003" is
``docs/seeds/003-evidence-pipeline-contract.txt``.
"""

from __future__ import annotations

import numpy as np

from metrics_core.dataset import Dataset

__all__ = ["DECISION_RULES", "decision_labels", "multilabel_metrics", "post_matrix"]

#: Decision rules (contract §8): ``p ≥ τ``, screen-in (state ≠ NEG), alert (state = POS).
DECISION_RULES = ("threshold", "screen_in", "alert")

_NEG, _POS = 0, 2  # metrics_core.gate.GateState codes


def decision_labels(ds: Dataset, *, rule: str = "threshold", threshold: float = 0.5,
                    states=None) -> np.ndarray:
    """Per-query predicted 0/1 label under a decision rule (contract §8).

    Parameters
    ----------
    ds : Dataset
    rule : {"threshold", "screen_in", "alert"}
        ``"threshold"``: ``p_has_evidence ≥ threshold``; ``"screen_in"``: state ≠ NEG;
        ``"alert"``: state = POS.
    threshold : float in [0, 1], default 0.5
    states : array-like of int, shape (n_queries,)
        Gate states (0 NEG, 1 UNCERTAIN, 2 POS); required by the state rules.

    Returns
    -------
    ndarray of int8, shape (n_queries,)
    """
    if rule not in DECISION_RULES:
        raise ValueError(f"rule must be one of {DECISION_RULES}, got {rule!r}")
    if rule == "threshold":
        if not 0.0 <= float(threshold) <= 1.0:
            raise ValueError(f"threshold must be in [0, 1], got {threshold!r}")
        return (np.asarray(ds.p) >= float(threshold)).astype(np.int8)
    if states is None:
        raise ValueError(f"states are required by the {rule!r} decision rule")
    states = np.asarray(states)
    if states.shape != (ds.n_queries,):
        raise ValueError(f"states must have one entry per query ({ds.n_queries}), "
                         f"got shape {states.shape}")
    if states.size and (states.min() < 0 or states.max() > 2):
        raise ValueError("states must hold gate states 0 (NEG), 1 (UNCERTAIN), 2 (POS)")
    if rule == "screen_in":
        return (states != _NEG).astype(np.int8)
    return (states == _POS).astype(np.int8)


def post_matrix(ds: Dataset, predicted) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Posts x criteria matrices of gold and predicted labels (contract §8).

    Parameters
    ----------
    ds : Dataset
    predicted : array-like of 0/1, shape (n_queries,)
        Per-query decision, e.g. from :func:`decision_labels`.

    Returns
    -------
    Y, Yhat : ndarray of int8, shape (n_posts, n_criteria)
        Gold ``has_evidence`` and prediction; rows follow ``ds.posts``, columns ``ds.criteria``.
        Missing cells hold 0.
    mask : ndarray of bool, shape (n_posts, n_criteria)
        False where a post has no query for the criterion.
    """
    predicted = np.asarray(predicted)
    if predicted.shape != (ds.n_queries,):
        raise ValueError(f"predicted must have one entry per query ({ds.n_queries}), "
                         f"got shape {predicted.shape}")
    if predicted.size and not np.isin(predicted, (0, 1)).all():
        raise ValueError("predicted must be 0/1")
    shape = (len(ds.posts), len(ds.criteria))
    Y = np.zeros(shape, dtype=np.int8)
    Yhat = np.zeros(shape, dtype=np.int8)
    mask = np.zeros(shape, dtype=bool)
    rows, cols = ds.post_code, ds.criterion_code
    Y[rows, cols] = ds.y
    Yhat[rows, cols] = predicted
    mask[rows, cols] = True
    return Y, Yhat, mask


def _f1(tp, fp, fn) -> np.ndarray:
    """``2TP / (2TP + FP + FN)``, 1.0 where the denominator is 0 (contract §8)."""
    tp, fp, fn = (np.asarray(a, dtype=np.float64) for a in (tp, fp, fn))
    denom = 2 * tp + fp + fn
    return np.where(denom > 0, 2 * tp / np.where(denom > 0, denom, 1.0), 1.0)


def multilabel_metrics(Y, Yhat, mask=None) -> dict[str, float]:
    """Exact match, Hamming and F1 averages over posts x criteria (contract §8).

    Parameters
    ----------
    Y, Yhat : array-like of 0/1, shape (n_posts, n_criteria)
    mask : array-like of bool, optional
        Present cells (default: all); see the module docstring for missing cells.

    Returns
    -------
    dict
        ``exact_match``, ``hamming_score``, ``hamming_loss``, ``micro_f1``, ``samples_f1``
        (mean of per-post F1; seed 003's "Macro F1"), ``macro_f1`` (mean over criteria),
        ``weighted_f1`` (criteria weighted by gold positives; without any gold positive the
        weights are all 0 and, as in scikit-learn, it falls back to ``macro_f1``), and the
        counts ``n_posts``, ``n_criteria``, ``n_cells``. NaN when no cell is present.

    Examples
    --------
    Y = [[1, 0], [0, 0]], Yhat = [[1, 1], [0, 0]]: exact match 1/2, Hamming loss 1/4,
    micro F1 = 2·1 / (2·1 + 1 + 0) = 2/3, samples F1 = (2/3 + 1) / 2 = 5/6,
    macro F1 = (1 + 0) / 2 = 1/2 (criterion 2 has FP = 1 and no gold), weighted F1 = 1·1 / 1 = 1.
    """
    Y = np.asarray(Y)
    Yhat = np.asarray(Yhat)
    if Y.ndim != 2 or Y.shape != Yhat.shape:
        raise ValueError(f"Y and Yhat must be 2-D of the same shape, got {Y.shape} and "
                         f"{Yhat.shape}")
    for name, a in (("Y", Y), ("Yhat", Yhat)):
        if a.size and not np.isin(a, (0, 1)).all():
            raise ValueError(f"{name} must be 0/1")
    mask = np.ones(Y.shape, dtype=bool) if mask is None else np.asarray(mask, dtype=bool)
    if mask.shape != Y.shape:
        raise ValueError(f"mask must have the shape of Y {Y.shape}, got {mask.shape}")
    y, yh = Y.astype(bool) & mask, Yhat.astype(bool) & mask
    tp = y & yh
    fp = yh & ~y
    fn = y & ~yh
    wrong = fp | fn
    n_cells = int(mask.sum())
    nan = float("nan")
    out = {"n_posts": int(mask.any(axis=1).sum()), "n_criteria": int(mask.any(axis=0).sum()),
           "n_cells": n_cells}
    if n_cells == 0:
        out.update(dict.fromkeys(("exact_match", "hamming_score", "hamming_loss", "micro_f1",
                                  "samples_f1", "macro_f1", "weighted_f1"), nan))
        return out
    posts = mask.any(axis=1)
    crits = mask.any(axis=0)
    hamming_loss = wrong.sum() / n_cells
    per_post = _f1(tp.sum(axis=1), fp.sum(axis=1), fn.sum(axis=1))
    per_crit = _f1(tp.sum(axis=0), fp.sum(axis=0), fn.sum(axis=0))
    support = y.sum(axis=0)
    out.update(
        exact_match=float((~wrong.any(axis=1))[posts].mean()),
        hamming_score=float(1.0 - hamming_loss),
        hamming_loss=float(hamming_loss),
        micro_f1=float(_f1(tp.sum(), fp.sum(), fn.sum())),
        samples_f1=float(per_post[posts].mean()),
        macro_f1=float(per_crit[crits].mean()),
    )
    # Weighted by gold positives; with no gold positive at all every weight is 0 and
    # scikit-learn falls back to the unweighted mean (= macro F1).
    if support.sum() > 0:
        out["weighted_f1"] = float(np.sum(per_crit * support) / support.sum())
    else:
        out["weighted_f1"] = out["macro_f1"]
    return out
