"""The gathered run: the units' per-query values put in canonical order on the client.

:func:`combine` orders every query as the in-memory engine does (post, then criterion, over
all posts) and builds a query-level data set (:class:`QueryLevelDataset`) whose
candidate-derived counts are the gathered ones (a :class:`~metrics_core.data.dataset.Queries`:
the candidates stay on the workers); :class:`GatheredEvaluator`, a
:class:`~metrics_core.evaluation.evaluator.QueryLevelEvaluator`, answers the candidate-based
parts from the gathered values, and the in-memory code
(:func:`metrics_core.evaluation.assemble.build_evaluation`) makes every record, table, interval
and check, so the report equals the in-memory engine's.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from metrics_core.data.dataset import Dataset, GatheredCandidates, Queries
from metrics_core.engines.units import empty_candidates
from metrics_core.errors import InputError
from metrics_core.evaluation.evaluator import GAMMA_SWEEP, QueryLevelEvaluator, reference_k
from metrics_core.run import run_of

__all__ = ["DaskRun", "GatheredEvaluator", "QueryLevelDataset", "combine", "criteria_order"]


#: What a :class:`~metrics_core.data.dataset.Dataset` has beyond its queries: the candidates
#: and what reads them, which a Dask run leaves on the workers.
CANDIDATE_ONLY = frozenset({"offsets", "score", "is_gold", "sent_uid", "sentence", "relevance",
                            "query_of_candidate", "position", "locate", "cum_gold",
                            "candidate_slice"})

#: What an in-memory :class:`~metrics_core.evaluation.evaluator.Evaluator` has beyond the
#: query-level evaluator: the parts that read the candidates themselves.
CANDIDATE_PARTS = frozenset({"mass_profile", "sentences"})


@dataclass(frozen=True, eq=False)
class QueryLevelDataset(Queries, GatheredCandidates):
    """The queries of a Dask run, with what was computed on the workers from their candidates.

    The candidates stay on the workers: ``n_cand`` and ``n_gold_found`` are the gathered
    per-query counts, ``gathered_tie_masks`` the audit's tie masks and ``hits_known`` the gold
    hits within the K arrays computed there (``(k, hits)`` pairs, read by
    :meth:`gathered_hits`). It has no candidate array: reading one (:data:`CANDIDATE_ONLY`)
    is an AttributeError that says so.
    """

    n_cand: np.ndarray
    n_gold_found: np.ndarray
    gathered_tie_masks: dict
    hits_known: tuple
    ranked_by: str = "score"  # "rank" or "score"
    meta: dict = field(default_factory=dict)  # source file names etc.

    @property
    def n_candidates(self) -> int:
        return int(self.n_cand.sum())

    def __getattr__(self, name):  # only for names the data set does not have
        if name in CANDIDATE_ONLY:
            raise AttributeError(f"{name}: the candidates of a Dask run stay on the workers")
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def gathered_hits(self, k: np.ndarray) -> np.ndarray:
        """Gold within the first ``k`` of each query, for a K array computed on the workers."""
        for known, hits in self.hits_known:
            if known.shape == np.shape(k) and np.array_equal(known, k):
                return hits
        raise RuntimeError("gold hits were gathered for the selected K and the reference K "
                           "only; this K needs the candidates, which stay on the workers")

    def subset(self, mask: np.ndarray) -> QueryLevelDataset:
        mask = np.asarray(mask, dtype=bool)
        return QueryLevelDataset(
            **self.query_fields(mask), n_cand=self.n_cand[mask],
            n_gold_found=self.n_gold_found[mask],
            gathered_tie_masks={n: v[mask] for n, v in self.gathered_tie_masks.items()},
            hits_known=tuple((k[mask], h[mask]) for k, h in self.hits_known),
            ranked_by=self.ranked_by, meta=dict(self.meta))


class GatheredEvaluator(QueryLevelEvaluator):
    """The evaluator of a :class:`QueryLevelDataset`: what reads the candidates was computed
    on the workers.

    It serves one configuration (the one the workers ran): ranking arrays, selected K,
    evidence and the γ sweep come from the gathered values; everything query-level
    (classification, calibration, gate, bootstrap, tables, checks) is the in-memory code.
    What only the candidates can answer (:data:`CANDIDATE_PARTS`: dynamic-K's mass profiles,
    a query's candidates) it does not have: asking for it is an AttributeError that says so.
    """

    def __init__(self, dataset: QueryLevelDataset, *, config, per_query: dict, ranking: dict,
                 sweep: dict, audit=None, inputs=()):
        super().__init__(dataset, audit=audit, inputs=inputs)
        self.config = config
        self._per_query = per_query
        self._ranking = ranking
        self._sweep = sweep

    def _same(self, cfg, part: str) -> None:
        if getattr(cfg, part) != getattr(self.config, part):
            raise ValueError(f"this Dask run computed {part} settings "
                             f"{getattr(self.config, part)!r} only")

    def subset(self, keep: np.ndarray) -> GatheredEvaluator:
        return GatheredEvaluator(
            self.ds.subset(keep), config=self.config,
            per_query={n: v[keep] for n, v in self._per_query.items()},
            ranking={n: v[keep] for n, v in self._ranking.items()}, sweep=self._sweep,
            audit=self.audit, inputs=self.inputs)

    def ranking(self, cfg):
        self._same(cfg, "ranking")
        return self._ranking

    def select_k(self, cfg, states, *, gamma=None):
        if cfg.dynamic_k != self.config.dynamic_k or cfg.gate != self.config.gate or (
                gamma is not None and gamma != self.config.gamma):
            raise ValueError("this Dask run selected K for its own settings only")
        return self._per_query["k"]

    def evidence(self, cfg, k):
        if k is not self._per_query["k"]:
            raise ValueError("this Dask run computed evidence for its selected K only")
        return self._per_query["rec"], self._per_query["prec"]

    def gamma_sweep(self, config, gammas=GAMMA_SWEEP) -> pd.DataFrame:
        rows = []
        for g in sorted({float(x) for x in gammas} | {float(config.gamma)}):
            if g not in self._sweep:
                raise ValueError(f"γ = {g} was not computed by this Dask run")
            sum_k, n, sum_rec, sum_prec, n_mask = self._sweep[g]
            rows.append({"gamma": g, "mean_k": sum_k / n if n else np.nan,
                         "evidence_recall": sum_rec / n_mask if n_mask else np.nan,
                         "evidence_precision": sum_prec / n_mask if n_mask else np.nan,
                         "workload": int(sum_k),
                         "workload_per_1000": float(sum_k / max(n, 1) * 1000),
                         "current": bool(np.isclose(g, config.gamma))})
        return pd.DataFrame(rows)

    def __getattr__(self, name):  # only for names the evaluator does not have
        if name in CANDIDATE_PARTS:
            raise AttributeError(f"{name}: the candidates of a Dask run stay on the workers")
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


# ----------------------------------------------------------------------- combining
def criteria_order(names) -> tuple[str, ...]:
    """The criteria in the data set's order (natural sort), by the public constructor."""
    names = sorted(set(names))
    probe = pd.DataFrame({"post_id": ["p"] * len(names), "criterion": names,
                          "has_evidence": [0] * len(names), "p_has_evidence": [0.0] * len(names)})
    return Dataset.from_frames(probe, empty_candidates()).criteria



def _canonical(results: list[dict]) -> tuple[dict, np.ndarray]:
    """The query fields of the whole data set in canonical order, and the order itself.

    Units hold disjoint posts, each in canonical order: the global post and criterion codes
    come from the sorted union of the posts and the natural order of the criteria (the same
    rules as :meth:`Dataset.from_frames`), and one stable sort of the (post, criterion) keys
    gives every gathered array its place.
    """
    posts = np.sort(np.concatenate([r["queries"]["posts"] for r in results]))
    if posts.size > 1 and np.any(posts[1:] == posts[:-1]):
        raise RuntimeError("a post was evaluated in two work units")
    criteria = criteria_order(c for r in results for c in r["queries"]["criteria"])
    index = {c: i for i, c in enumerate(criteria)}
    n_crit = max(len(criteria), 1)
    keys = []
    for r in results:
        q = r["queries"]
        post = np.searchsorted(posts, q["posts"])[q["post_code"]]
        crit = np.array([index[c] for c in q["criteria"]], dtype=np.int64)[q["criterion_code"]]
        keys.append(post * n_crit + crit)
    key = np.concatenate(keys)
    del keys
    order = np.argsort(key, kind="stable")
    key = key[order]
    post_code = key // n_crit
    criterion_code = (key - post_code * n_crit).astype(np.int32)
    del key

    def stacked(name, dtype):
        return np.concatenate([r["queries"].pop(name) for r in results])[order].astype(
            dtype, copy=False)

    with_gold = any("n_gold" in r["queries"] for r in results)
    for r in results:
        if with_gold and "n_gold" not in r["queries"]:  # n_gold blank in the whole unit
            r["queries"]["n_gold"] = r["arrays"]["n_gold_found"]
    fields_ = {"post_id": posts[post_code],
               "criterion": np.array(criteria, dtype=object)[criterion_code],
               "criterion_code": criterion_code, "criteria": criteria,
               "post_code": post_code, "posts": posts,
               "y": stacked("has_evidence", np.int8), "p": stacked("p_has_evidence", np.float64),
               "n_gold_given": stacked("n_gold", np.int64) if with_gold else None}
    for name, dtype in (("fold", np.int64), ("split", object)):
        present = [name in r["queries"] for r in results]
        if all(present):
            fields_[name] = stacked(name, dtype)
        elif any(present):
            raise InputError(f"the {name} column has values in some parts only",
                             column=name, hint=f"give every query a {name}, or none")
        else:
            fields_[name] = None
    return fields_, order


def combine(results: list[dict], config, *, queries_name: str, candidates_name: str,
             inputs) -> DaskRun:
    from metrics_core.inputs.loading import EXCLUSION_COLUMNS, Loaded

    query_fields, order = _canonical(results)
    n_excl_q = sum(r["n_excluded_queries"] for r in results)
    n_excl_c = sum(r["n_excluded_candidates"] for r in results)
    meta = {"queries_file": queries_name, "candidates_file": candidates_name,
            "layout": "two tables", "n_excluded_queries": n_excl_q,
            "n_excluded_candidates": n_excl_c}

    def stacked(name, source="arrays"):  # each unit's part is let go once stacked
        return np.concatenate([r[source].pop(name) for r in results])[order]

    arrays = {name: stacked(name) for name in list(results[0]["arrays"])}
    ranking = {name: stacked(name, "ranking") for name in list(results[0]["ranking"])}
    ref = reference_k(config.ks)
    fixed_k = np.minimum(np.full(order.size, ref, dtype=np.int64), arrays["n_cand"])
    ranked_by = "rank" if any(r["ranked_by"] == "rank" for r in results) else "score"
    ds = QueryLevelDataset(
        **query_fields, n_cand=arrays["n_cand"], n_gold_found=arrays["n_gold_found"],
        gathered_tie_masks={"positive_ties": arrays["positive_ties"],
                            "gold_ties": arrays["gold_ties"]},
        hits_known=((arrays["k"], arrays["hits"]), (fixed_k, arrays["hits_fixed"])),
        ranked_by=ranked_by, meta=meta)
    sweep = {g: sum(r["sweep"][g] for r in results) for g in results[0]["sweep"]}
    parts = [r["exclusions"] for r in results if len(r["exclusions"])]
    if parts:
        exclusions = pd.concat(parts, ignore_index=True).sort_values(
            ["_group", "file", "row"], kind="stable")
        exclusions = exclusions[list(EXCLUSION_COLUMNS)].reset_index(drop=True)
    else:
        exclusions = results[0]["exclusions"][list(EXCLUSION_COLUMNS)]
    warnings = list(dict.fromkeys(w for r in results for w in r["warnings"]))
    loaded = Loaded(dataset=ds, exclusions=exclusions, warnings=warnings)
    run = run_of(loaded, inputs=inputs, evaluator=functools.partial(
        GatheredEvaluator, config=config, per_query={n: arrays[n] for n in ("k", "rec", "prec")},
        ranking=ranking, sweep=sweep))
    return DaskRun(evaluation=run.evaluator.evaluate(config), loaded=loaded, audit=run.audit,
                   evaluator=run.evaluator)


@dataclass
class DaskRun:
    """What a Dask run returns: the evaluation, the loader's view (exclusions, warnings) and
    the audit, as the in-memory CLI has them."""

    evaluation: object
    loaded: object
    audit: object
    evaluator: GatheredEvaluator


