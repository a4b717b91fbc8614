"""What a Dask worker runs on one work unit: load its files, compute its share.

Each function takes the unit's Parquet paths, loads them with the public loader
(:func:`metrics_core.inputs.loading.load`) and returns plain arrays, frames or summaries (or
``{"error": text, "code": code}`` for bad input, so no exception object has to cross
processes): :func:`evaluate_unit` the per-query values of the gathered run,
:func:`unit_score_counts` and :func:`unit_resample_sums` the summaries of the reductions.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from metrics_core.errors import InputError
from metrics_core.evaluation.evaluator import GAMMA_SWEEP, Evaluator, reference_k

__all__ = ["empty_candidates", "evaluate_unit", "exclusions_in_files", "load_unit",
           "load_unit_with_rows", "merge_resample_sums", "read_parts",
           "unit_resample_sums", "unit_score_counts"]


def read_parts(paths: Sequence[str]) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """The rows of ``paths`` as one frame, with each row's file index and 1-based file row."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    tables = [pq.read_table(p) for p in paths]
    sizes = [t.num_rows for t in tables]
    table = pa.concat_tables(tables, promote_options="permissive") if len(tables) > 1 \
        else tables[0]
    file_of_row = np.repeat(np.arange(len(paths)), sizes)
    row = np.concatenate([np.arange(1, n + 1, dtype=np.int64) for n in sizes]) if sizes \
        else np.empty(0, dtype=np.int64)
    return table.to_pandas(), file_of_row, row


def evaluate_unit(q_paths: Sequence[str], c_paths: Sequence[str], config, *,
                  queries_name: str, candidates_name: str) -> dict:
    """Load one work unit and compute its per-query arrays (runs on a worker).

    Returns a dict of plain arrays and frames (or ``{"error": text, "code": code}`` for bad
    input, so no exception object has to cross processes).
    """
    from metrics_core.inputs.audit import tie_masks
    from metrics_core.metrics import dynamic_k

    unit = load_unit_with_rows(q_paths, c_paths, queries_name, candidates_name)
    if isinstance(unit, dict):
        return unit
    loaded, exclusions = unit
    ds = loaded.dataset
    cfg = config
    ev = Evaluator(ds)
    states = ev.states(cfg)
    k = ev.select_k(cfg, states)
    rec, prec = ev.evidence(cfg, k)
    ref = reference_k(cfg.ks)
    fixed_k = np.minimum(np.full(ds.n_queries, ref, dtype=np.int64), ds.n_cand)
    masks = tie_masks(ds)
    arrays = {"k": k, "hits": dynamic_k.hits_within(ds, k), "rec": rec, "prec": prec,
              "hits_fixed": dynamic_k.hits_within(ds, fixed_k),
              "n_cand": ds.n_cand, "n_gold_found": ds.n_gold_found,
              "positive_ties": masks["positive_ties"], "gold_ties": masks["gold_ties"]}
    ranking = ev.ranking(cfg)
    # ids as the distinct values and a code per query (compact to send)
    queries = {"posts": ds.posts, "post_code": ds.post_code, "criteria": tuple(ds.criteria),
               "criterion_code": ds.criterion_code, "has_evidence": ds.y,
               "p_has_evidence": ds.p}
    for name in ("fold", "split"):
        if getattr(ds, name) is not None:
            queries[name] = getattr(ds, name)
    if ds.n_gold_given is not None:
        queries["n_gold"] = ds.n_gold_given
    return {"queries": queries, "arrays": arrays, "ranking": ranking,
            "sweep": _sweep_sums(ev, cfg), "exclusions": exclusions,
            "warnings": list(loaded.warnings), "ranked_by": ds.ranked_by,
            "n_excluded_queries": int(ds.meta.get("n_excluded_queries", 0)),
            "n_excluded_candidates": int(ds.meta.get("n_excluded_candidates", 0))}


def exclusions_in_files(exclusions: pd.DataFrame, q_paths, c_paths, q_rows, c_rows):
    """The unit's exclusions with each row's input file (its name) and row in that file
    (``q_rows`` / ``c_rows``: each unit row's file index and 1-based file row, as
    :func:`read_parts` gives them), and ``_group`` (0 query rows, 1 candidates of an excluded
    query, 2 candidates without a score), the gathered table's sort key with file and row."""
    if not len(exclusions):
        return exclusions
    exclusions = exclusions.copy()
    is_cand = (exclusions["sent_uid"] != "").to_numpy()
    idx = exclusions["row"].to_numpy() - 1
    file_idx = np.zeros(idx.size, dtype=np.int64)
    rows = np.zeros(idx.size, dtype=np.int64)
    for cand, (f_of_row, row_of_row) in ((False, q_rows), (True, c_rows)):
        sel = is_cand == cand
        file_idx[sel] = f_of_row[idx[sel]]
        rows[sel] = row_of_row[idx[sel]]
    files = [(c_paths if cand else q_paths)[f] for f, cand in zip(file_idx, is_cand,
                                                                  strict=True)]
    exclusions["file"] = [Path(f).name for f in files]
    exclusions["row"] = rows.astype(np.int64)
    exclusions["_group"] = np.select(
        [~is_cand, exclusions["column"].to_numpy() == "p_has_evidence"], [0, 1], 2)
    return exclusions


def load_unit_with_rows(q_paths, c_paths, queries_name, candidates_name):
    """(the unit's :class:`~metrics_core.inputs.loading.Loaded`, its exclusions in the input
    files' rows: :func:`exclusions_in_files`), or an error dict (as :func:`evaluate_unit`)
    whose text names the unit's files, as its rows are counted within them."""
    from metrics_core.inputs import loading

    q_df, q_file, q_row = read_parts(q_paths)
    if c_paths:
        c_df, c_file, c_row = read_parts(c_paths)
    else:  # queries without candidates: an empty candidates table with the usual columns
        c_df = empty_candidates()
        c_file = c_row = np.empty(0, dtype=np.int64)
    try:
        loaded = loading.load(q_df, c_df, queries_name=queries_name,
                              candidates_name=candidates_name)
    except InputError as err:
        where = ", ".join(str(p) for p in (*q_paths, *c_paths))
        return {"error": f"{err.render()} (rows counted within the files {where})",
                "code": err.code}
    del q_df, c_df
    return loaded, exclusions_in_files(loaded.exclusions, q_paths, c_paths, (q_file, q_row),
                                       (c_file, c_row))


def load_unit(q_paths, c_paths, queries_name, candidates_name):
    """The unit's :class:`~metrics_core.inputs.loading.Loaded`, or an error dict (as
    :func:`evaluate_unit`)."""
    from metrics_core.inputs import loading

    q_df = read_parts(q_paths)[0]
    c_df = read_parts(c_paths)[0] if c_paths else empty_candidates()
    try:
        return loading.load(q_df, c_df, queries_name=queries_name,
                            candidates_name=candidates_name)
    except InputError as err:
        return {"error": err.render(), "code": err.code}


def _load_unit(q_paths, c_paths, queries_name, candidates_name):
    """The unit's data set, or an error dict (as :func:`evaluate_unit`)."""
    loaded = load_unit(q_paths, c_paths, queries_name, candidates_name)
    return loaded if isinstance(loaded, dict) else loaded.dataset


def unit_score_counts(q_paths: Sequence[str], c_paths: Sequence[str], *, queries_name: str,
                      candidates_name: str):
    """Load one work unit and count its queries by distinct ``p`` and class (on a worker).

    Returns a :class:`~metrics_core.engines.reductions.ScoreCounts` (or an error dict, as
    :func:`evaluate_unit`).
    """
    from metrics_core.engines.reductions import score_counts

    ds = _load_unit(q_paths, c_paths, queries_name, candidates_name)
    return ds if isinstance(ds, dict) else score_counts(ds.y, ds.p)


def unit_resample_sums(q_paths: Sequence[str], c_paths: Sequence[str], *, queries_name: str,
                       candidates_name: str, seed: int, n_resamples: int, unit: str,
                       threshold: float, weighted_auroc: bool) -> dict:
    """One unit's share of every resample (on a worker): Poisson(1) weights keyed by
    (seed, unit), the weighted confusion counts at ``threshold`` ``(resamples, 4)`` as TP,
    FP, FN, TN, and the weighted score counts when AUROC is bootstrapped."""
    from metrics_core.engines.resampling import poisson_weights, unit_keys, weighted_counts

    ds = _load_unit(q_paths, c_paths, queries_name, candidates_name)
    if isinstance(ds, dict):
        return ds
    post_id = np.asarray(ds.posts)[ds.post_code]
    if unit == "post":
        keys, inverse = np.unique(post_id, return_inverse=True)
        w = poisson_weights(seed, unit_keys(keys), n_resamples)[:, inverse]
    else:
        criterion = np.asarray(ds.criteria, dtype=object)[ds.criterion_code]
        w = poisson_weights(seed, unit_keys(post_id, criterion), n_resamples)
    positive = ds.p >= threshold
    cells = np.stack([(ds.y == 1) & positive, (ds.y == 0) & positive,
                      (ds.y == 1) & ~positive, (ds.y == 0) & ~positive], axis=1)
    return {"confusion": w.astype(np.int64) @ cells.astype(np.int64),
            "auroc": weighted_counts(ds.y, ds.p, w) if weighted_auroc else None}


def merge_resample_sums(*parts: dict) -> dict:
    from metrics_core.engines.resampling import merge_weighted

    auroc = [p["auroc"] for p in parts]
    return {"confusion": sum(p["confusion"] for p in parts),
            "auroc": merge_weighted(*auroc) if auroc[0] is not None else None}


def _sweep_sums(ev: Evaluator, cfg) -> dict:
    """Per γ of the sweep: sums and counts of K, evidence recall / precision (filtered)."""
    gammas = sorted({float(x) for x in GAMMA_SWEEP} | {float(cfg.gamma)})
    try:
        sub = ev.for_filters(cfg.filters)
    except InputError:  # no query of this unit passes the filters
        return {g: np.zeros(5) for g in gammas}
    states = sub.states(cfg)
    mask = sub.evidence_mask(cfg)
    out = {}
    for g in gammas:
        k = sub.select_k(cfg, states, gamma=g)
        rec, prec = sub.evidence(cfg, k)
        out[g] = np.array([float(k.sum()), float(k.size), float(np.sum(rec[mask])),
                           float(np.sum(prec[mask])), float(mask.sum())])
    return out



def empty_candidates() -> pd.DataFrame:
    return pd.DataFrame({"post_id": pd.Series([], dtype=str),
                         "criterion": pd.Series([], dtype=str),
                         "sent_uid": pd.Series([], dtype=str),
                         "score": pd.Series([], dtype=float),
                         "is_gold": pd.Series([], dtype=bool)})

