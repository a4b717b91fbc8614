"""The Dask engine: ``metrics-core evaluate --engine dask`` on partitioned Parquet data sets.

The data are split into *work units*: groups of input files that together hold every query
and candidate of their posts (a post split across two files of one table is an error that
names the post and the files). Each unit runs on a ``distributed`` worker, which loads it with
the public loader (:func:`metrics_core.inputs.loading.load`) and runs the same per-query kernels as
the in-memory engine (:class:`metrics_core.evaluation.evaluator.Evaluator`): ranking per query, gate
states, selected K, evidence hits / recall / precision, the audit's tie masks, and the sums of the
γ sweep. Only these per-query arrays (tens of bytes a query, small next to the candidates)
come back to the client.

The client puts the queries in the canonical order of the in-memory engine (post, then
criterion, over all posts) and builds a query-level data set (:class:`QueryLevelDataset`)
whose candidate-derived arrays are the gathered ones. The same code as in memory
(:func:`metrics_core.evaluation.assemble.build_evaluation` through :class:`GatheredEvaluator`) then
makes every record, table, interval and check, so the point estimates agree with the in-memory
engine to rounding (the γ sweep's means are sums over units, within 1e-12), and the bootstrap, drawn
over the units in canonical order, gives the same intervals for the same seed whatever the
partitioning and the cluster.

Import this module only when the Dask engine is used: it imports ``distributed``.
"""

from __future__ import annotations

import functools
import glob
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path

import numpy as np
import pandas as pd

from metrics_core.data.dataset import Dataset
from metrics_core.errors import InputError
from metrics_core.evaluation.evaluator import GAMMA_SWEEP, Evaluator, reference_k
from metrics_core.run import fingerprint, run_of

__all__ = ["DaskRun", "GatheredEvaluator", "QueryLevelDataset", "bootstrap_by_reduction",
           "classification_by_reduction",
           "evaluate", "evaluate_unit", "plan_units", "resolve_files", "unit_score_counts"]

#: Seconds to wait for a scheduler given by address before giving up.
CONNECT_TIMEOUT = 10.0
#: Examples named in an error about posts split across files.
MAX_NAMED = 5


# ------------------------------------------------------------------------------ inputs
def resolve_files(source, *, table: str) -> list[Path]:
    """The Parquet files of an input: a file, a folder (every ``*.parquet`` below it) or a glob.

    Raises :class:`InputError` naming the input when nothing matches.
    """
    path = Path(source)
    if path.is_dir():
        files = sorted(p for p in path.rglob("*.parquet") if p.is_file())
    elif path.is_file():
        files = [path]
    else:
        files = sorted(Path(p) for p in glob.glob(str(source), recursive=True)
                       if Path(p).is_file())
    if not files:
        raise InputError(f"no Parquet files found for the {table} table", file=str(source),
                         hint="give a Parquet file, a folder of Parquet files or a glob "
                              "such as 'data/queries/*.parquet'", code="unreadable_file")
    return files


def _post_column(path: Path, kind: str) -> str:
    """The source column that is ``post_id`` in this file (names and aliases of contract §2)."""
    import pyarrow.parquet as pq

    from metrics_core.inputs import loading

    try:
        names = pq.read_schema(path).names
    except (OSError, ValueError) as err:  # pyarrow's ArrowInvalid is a ValueError
        raise InputError(f"not a readable Parquet file ({str(err).splitlines()[0][:200]})",
                         file=str(path), hint="the Dask engine reads Parquet files only",
                         code="unreadable_file") from None
    probe = pd.DataFrame([names], columns=names)  # each cell holds its column's name
    return str(loading.resolve_columns(probe, kind, file=path.name)["post_id"].iloc[0])


def _posts_of(path: str, kind: str) -> np.ndarray:
    """Distinct post ids of one file (read on a worker: one column only)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    column = _post_column(Path(path), kind)
    try:
        values = pq.read_table(path, columns=[column]).column(column)
    except (OSError, ValueError) as err:
        raise ValueError(f"{path}: {str(err).splitlines()[0][:200]}") from None
    return np.asarray(pc.unique(pc.cast(values, "string")).to_pylist(), dtype=object)


def _union_find(n: int, edges) -> np.ndarray:
    parent = list(range(n))

    def root(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for a, b in edges:
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    return np.array([root(i) for i in range(n)])


def _split_posts(posts: list[np.ndarray], files: Sequence[Path], table: str) -> None:
    """Raise when a post has rows in two files of one table (the input is not by post)."""
    if len(posts) < 2:
        return
    frame = pd.DataFrame({"post": np.concatenate(posts),
                          "file": np.repeat(np.arange(len(posts)), [len(p) for p in posts])})
    dup = frame[frame["post"].duplicated(keep=False)]
    if dup.empty:
        return
    named = []
    for post, group in list(dup.groupby("post", sort=True))[:MAX_NAMED]:
        names = ", ".join(str(files[i]) for i in group["file"])
        named.append(f"post {post!r} in {names}")
    n = dup["post"].nunique()
    raise InputError(
        f"{n} post{'s are' if n > 1 else ' is'} split across input partitions: "
        + "; ".join(named), file=f"{table} table", code="invalid_value",
        hint="write all rows of a post into one file of each table (partition by post, "
             "e.g. by a hash of post_id)")


def plan_units(q_posts: list[np.ndarray], c_posts: list[np.ndarray], q_files: Sequence[Path],
               c_files: Sequence[Path]) -> list[tuple[list[int], list[int]]]:
    """Group the files into work units holding every row of their posts.

    ``q_posts[i]`` / ``c_posts[j]`` are the distinct posts of queries file ``i`` / candidates
    file ``j``. A unit is a connected group of files sharing posts: ``(query files, candidate
    files)`` as indices. A post in two files of one table is an :class:`InputError` that names
    it and the files.
    """
    _split_posts(q_posts, q_files, "queries")
    _split_posts(c_posts, c_files, "candidates")
    nq = len(q_posts)
    owner = {}
    for i, posts in enumerate(q_posts):
        owner.update(dict.fromkeys(posts.tolist(), i))
    edges = []
    orphan = []
    for j, posts in enumerate(c_posts):
        linked = {owner.get(p, -1) for p in posts.tolist()}
        if -1 in linked:
            orphan.append(j)
            linked.discard(-1)
        edges += [(i, nq + j) for i in linked]
    if orphan:
        j = orphan[0]
        missing = [p for p in c_posts[j].tolist() if p not in owner][:MAX_NAMED]
        raise InputError(
            "candidates of posts that have no query: "
            + ", ".join(repr(p) for p in missing), file=str(c_files[j]),
            column="post_id", code="invalid_value",
            hint="every candidate must belong to a query of the queries table")
    roots = _union_find(nq + len(c_posts), edges)
    units = []
    for r in np.unique(roots[:nq]):
        q_idx = [i for i in range(nq) if roots[i] == r]
        c_idx = [j for j in range(len(c_posts)) if roots[nq + j] == r]
        units.append((q_idx, c_idx))
    return units


# ------------------------------------------------------------------------- per unit
def _read(paths: Sequence[str]) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
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
    from metrics_core.inputs import loading
    from metrics_core.inputs.audit import tie_masks
    from metrics_core.metrics import dynamic_k

    q_df, q_file, q_row = _read(q_paths)
    if c_paths:
        c_df, c_file, c_row = _read(c_paths)
    else:  # queries without candidates: an empty candidates table with the usual columns
        c_df = _empty_candidates()
        c_file = c_row = np.empty(0, dtype=np.int64)
    try:
        loaded = loading.load(q_df, c_df, queries_name=queries_name,
                              candidates_name=candidates_name)
    except InputError as err:
        where = ", ".join(str(p) for p in (*q_paths, *c_paths))
        return {"error": f"{err.render()} (rows counted within the files {where})",
                "code": err.code}
    del q_df, c_df
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
    exclusions = loaded.exclusions
    if len(exclusions):  # rows of the unit -> rows of the input files
        exclusions = exclusions.copy()
        is_cand = (exclusions["sent_uid"] != "").to_numpy()
        idx = exclusions["row"].to_numpy() - 1
        file_idx = np.zeros(idx.size, dtype=np.int64)
        rows = np.zeros(idx.size, dtype=np.int64)
        for cand, f_of_row, row_of_row in ((False, q_file, q_row), (True, c_file, c_row)):
            sel = is_cand == cand
            file_idx[sel] = f_of_row[idx[sel]]
            rows[sel] = row_of_row[idx[sel]]
        files = [(c_paths if cand else q_paths)[f] for f, cand in zip(file_idx, is_cand,
                                                                      strict=True)]
        exclusions["file"] = [Path(f).name for f in files]
        exclusions["row"] = rows.astype(np.int64)
        exclusions["_group"] = np.select(
            [~is_cand, exclusions["column"].to_numpy() == "p_has_evidence"], [0, 1], 2)
    return {"queries": queries, "arrays": arrays, "ranking": ranking,
            "sweep": _sweep_sums(ev, cfg), "exclusions": exclusions,
            "warnings": list(loaded.warnings), "ranked_by": ds.ranked_by,
            "n_excluded_queries": int(ds.meta.get("n_excluded_queries", 0)),
            "n_excluded_candidates": int(ds.meta.get("n_excluded_candidates", 0))}


def _load_unit(q_paths, c_paths, queries_name, candidates_name):
    """The unit's data set, or an error dict (as :func:`evaluate_unit`)."""
    from metrics_core.inputs import loading

    q_df = _read(q_paths)[0]
    c_df = _read(c_paths)[0] if c_paths else _empty_candidates()
    try:
        return loading.load(q_df, c_df, queries_name=queries_name,
                            candidates_name=candidates_name).dataset
    except InputError as err:
        return {"error": err.render(), "code": err.code}


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


def _merge_resample_sums(*parts: dict) -> dict:
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


# ------------------------------------------------------------------ client data set
@dataclass(frozen=True, eq=False)
class QueryLevelDataset(Dataset):
    """A :class:`Dataset` of the queries only, its candidate-derived arrays gathered.

    The candidates stay on the workers: ``offsets`` are zeros and the candidate arrays empty;
    ``n_cand``, ``n_gold_found``, the audit's tie masks and the gold hits within the K arrays
    computed on the workers (``extra["hits_known"]``: ``(k, hits)`` pairs) are the gathered
    per-query values. Reading a per-candidate array raises.
    """

    extra: dict = field(default_factory=dict)

    @property
    def n_candidates(self) -> int:
        return int(self.extra["n_cand"].sum())

    @property
    def n_cand(self) -> np.ndarray:
        return self.extra["n_cand"]

    @property
    def n_gold_found(self) -> np.ndarray:
        return self.extra["n_gold_found"]

    @property
    def gathered_tie_masks(self) -> dict:
        return {"positive_ties": self.extra["positive_ties"],
                "gold_ties": self.extra["gold_ties"]}

    def _no_candidates(self, name):
        raise RuntimeError(f"{name}: the candidates of a Dask run stay on the workers")

    @property
    def query_of_candidate(self):
        self._no_candidates("query_of_candidate")

    @property
    def position(self):
        self._no_candidates("position")

    @property
    def cum_gold(self):
        self._no_candidates("cum_gold")

    def gathered_hits(self, k: np.ndarray) -> np.ndarray:
        """Gold within the first ``k`` of each query, for a K array computed on the workers."""
        for known, hits in self.extra["hits_known"]:
            if known.shape == np.shape(k) and np.array_equal(known, k):
                return hits
        raise RuntimeError("gold hits were gathered for the selected K and the reference K "
                           "only; this K needs the candidates, which stay on the workers")

    def subset(self, mask: np.ndarray) -> QueryLevelDataset:
        mask = np.asarray(mask, dtype=bool)
        plain = Dataset(**{f.name: getattr(self, f.name) for f in fields(Dataset)})
        sub = plain.subset(mask)
        extra = {name: value[mask] for name, value in self.extra.items()
                 if name != "hits_known"}
        extra["hits_known"] = tuple((k[mask], h[mask]) for k, h in self.extra["hits_known"])
        return QueryLevelDataset(**{f.name: getattr(sub, f.name) for f in fields(Dataset)},
                                 extra=extra)


class GatheredEvaluator(Evaluator):
    """An :class:`Evaluator` whose candidate-based parts were computed on the workers.

    It serves one configuration (the one the workers ran): ranking arrays, selected K,
    evidence and the γ sweep come from the gathered values; everything query-level
    (classification, calibration, gate, bootstrap, tables, checks) is the in-memory code.
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

    def mass_profile(self, cfg):
        raise RuntimeError("the mass profiles of a Dask run stay on the workers")

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

    def sentences(self, config, post_id, criterion, k=None):
        raise RuntimeError("the candidates of a Dask run stay on the workers")


# ----------------------------------------------------------------------- combining
def _criteria_order(names) -> tuple[str, ...]:
    """The criteria in the data set's order (natural sort), by the public constructor."""
    names = sorted(set(names))
    probe = pd.DataFrame({"post_id": ["p"] * len(names), "criterion": names,
                          "has_evidence": [0] * len(names), "p_has_evidence": [0.0] * len(names)})
    return Dataset.from_frames(probe, _empty_candidates()).criteria


def _empty_candidates() -> pd.DataFrame:
    return pd.DataFrame({"post_id": pd.Series([], dtype=str),
                         "criterion": pd.Series([], dtype=str),
                         "sent_uid": pd.Series([], dtype=str),
                         "score": pd.Series([], dtype=float),
                         "is_gold": pd.Series([], dtype=bool)})


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
    criteria = _criteria_order(c for r in results for c in r["queries"]["criteria"])
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


def _combine(results: list[dict], config, *, queries_name: str, candidates_name: str,
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
    extra = {"n_cand": arrays["n_cand"], "n_gold_found": arrays["n_gold_found"],
             "positive_ties": arrays["positive_ties"], "gold_ties": arrays["gold_ties"],
             "hits_known": ((arrays["k"], arrays["hits"]),
                            (fixed_k, arrays["hits_fixed"]))}
    ds = QueryLevelDataset(
        **query_fields, offsets=np.zeros(order.size + 1, dtype=np.int64),
        score=np.empty(0), is_gold=np.empty(0, dtype=bool),
        sent_uid=np.empty(0, dtype=object), sentence=None, relevance=None,
        ranked_by=ranked_by, meta=meta, extra=extra)
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


# --------------------------------------------------------------------------- cluster
class _Cluster:
    """A client on the scheduler at ``address``, or on a local cluster sized to the machine."""

    def __init__(self, address: str | None, timeout: float, n_workers: int | None = None):
        self.address, self.timeout, self.n_workers = address, timeout, n_workers
        self.cluster = self.client = None

    def __enter__(self):
        import logging

        from distributed import Client, LocalCluster

        if self.address is None:
            n = self.n_workers or max(1, min(os.cpu_count() or 1, 8))
            self.cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                        dashboard_address=":0", silence_logs=logging.ERROR)
            self.client = Client(self.cluster)
            return self.client
        try:
            self.client = Client(self.address, timeout=self.timeout)
        except (OSError, TimeoutError) as err:
            raise RuntimeError(
                f"cannot reach the Dask scheduler at {self.address} within "
                f"{self.timeout:g} s ({type(err).__name__}); check the address and that the "
                f"scheduler is running. No output was written.") from None
        return self.client

    def __exit__(self, *exc):
        if self.client is not None:
            self.client.close()
        if self.cluster is not None:
            self.cluster.close()
        return False


def evaluate(queries, candidates, config, *, scheduler: str | None = None, client=None,
             timeout: float = CONNECT_TIMEOUT, n_workers: int | None = None,
             task: Callable | None = None) -> DaskRun:
    """Evaluate partitioned Parquet data on a Dask cluster (``--engine dask``).

    Parameters
    ----------
    queries, candidates : path or glob
        A Parquet file, a folder of Parquet files or a glob, for each table. Every post must
        have all its rows in one file of each table (partition by post).
    config : EvalConfig
    scheduler : str, optional
        Address of a running scheduler (``tcp://host:8786``); without it (and without
        ``client``) a local cluster sized to the machine is started and stopped.
    client : distributed.Client, optional
        A client to use as is (tests, notebooks).
    timeout : float
        Seconds to wait for ``scheduler``.
    n_workers : int, optional
        Workers of the local cluster (default: one per core, at most 8). The local cluster
        is closed once the per-query values are gathered, before the report is built.
    task : callable, optional
        The function run on each work unit, with the signature of :func:`evaluate_unit`
        (tests wrap it to inject worker failures).

    Returns
    -------
    DaskRun
        ``evaluation`` is the :class:`~metrics_core.evaluation.result.Evaluation` the in-memory
        engine gives on the same data (same records, tables, intervals for the same seed).
    """
    if candidates is None:
        raise InputError("the Dask engine needs a queries and a candidates table",
                         hint="give both QUERIES and CANDIDATES (files, folders or globs)",
                         code="unreadable_file")
    q_files = resolve_files(queries, table="queries")
    c_files = resolve_files(candidates, table="candidates")
    for f in q_files[:1]:
        _post_column(f, "queries")
    for f in c_files[:1]:
        _post_column(f, "candidates")
    q_name = q_files[0].name if len(q_files) == 1 else Path(queries).name
    c_name = c_files[0].name if len(c_files) == 1 else Path(candidates).name
    if client is None:
        with _Cluster(scheduler, timeout, n_workers) as own:
            results = _run(own, q_files, c_files, config, q_name, c_name, task)
    else:
        results = _run(client, q_files, c_files, config, q_name, c_name, task)
    inputs = [fingerprint(p) for p in (*q_files, *c_files)]
    return _combine(results, config, queries_name=q_name, candidates_name=c_name,
                    inputs=inputs)


def classification_by_reduction(queries, candidates, config, *, client) -> dict:
    """AUROC, AUPRC and TPR@FPR of partitioned data, reduced on the cluster (contract §9).

    Each work unit counts its queries by distinct ``p`` and class where it is loaded; the
    counts are merged pairwise on the workers (:func:`~metrics_core.engines.reductions.
    tree_reduce`) and only the merged counts reach the client, which runs the in-memory
    kernels on them. Returns ``{"auroc": Score, "auprc": Score, "tpr_at_fpr": [TprAtFpr],
    "counts": ScoreCounts}``: the values equal the in-memory engine's exactly.
    """
    from metrics_core.engines.reductions import counted_scores, merge_counts, tree_reduce
    from metrics_core.metrics import classification

    units, q_str, c_str, q_name, c_name = _units(client, queries, candidates)
    futures = [client.submit(unit_score_counts, [q_str[j] for j in qi], [c_str[j] for j in ci],
                             queries_name=q_name, candidates_name=c_name, pure=False)
               for qi, ci in units]
    errors = client.submit(_first_error, *futures, pure=False).result()
    if errors is not None:
        raise InputError(errors["error"], code=errors["code"])
    counts = tree_reduce(client, futures, merge_counts)
    s = counted_scores(counts)
    return {"auroc": classification.roc_auc(s), "auprc": classification.average_precision(s),
            "tpr_at_fpr": classification.tpr_at_fpr(s, targets=config.tpr_fprs),
            "counts": counts}


def bootstrap_by_reduction(queries, candidates, config, *, client) -> dict:
    """Intervals without a gather (contract §9, Dask engine): Poisson(1) weights keyed by
    (seed, unit), weighted sums merged on the workers.

    Returns ``{"auroc": {"value", "ci95", "method"}, "auprc": {...}, "sensitivity": {...},
    "specificity": {...}, "n_resamples": B}`` for ``config.bootstrap`` resamples, the seed
    ``config.seed``, the unit ``config.bootstrap_unit`` and the threshold ``config.threshold``.
    AUROC's interval is the weighted bootstrap's while ``resamples x distinct p`` is at most
    :data:`~metrics_core.engines.resampling.WEIGHTED_SORT_LIMIT`, DeLong's above
    (``method`` says which); AUPRC's likewise, without an interval above the limit. The
    result does not depend on the partitioning.
    """
    from metrics_core.engines.reductions import tree_reduce
    from metrics_core.engines.resampling import (
        WEIGHTED_SORT_LIMIT,
        auprc_of_weighted,
        auroc_of_weighted,
        delong_interval,
        percentile_interval,
    )
    from metrics_core.metrics import classification

    n_resamples = int(config.bootstrap)
    if n_resamples < 1:
        raise ValueError("bootstrap_by_reduction needs at least one resample")
    point = classification_by_reduction(queries, candidates, config, client=client)
    counts = point["counts"]
    weighted = n_resamples * counts.values.size <= WEIGHTED_SORT_LIMIT
    units, q_str, c_str, q_name, c_name = _units(client, queries, candidates)
    futures = [client.submit(unit_resample_sums, [q_str[j] for j in qi],
                             [c_str[j] for j in ci], queries_name=q_name,
                             candidates_name=c_name, seed=int(config.seed),
                             n_resamples=n_resamples, unit=config.bootstrap_unit,
                             threshold=float(config.threshold), weighted_auroc=weighted,
                             pure=False) for qi, ci in units]
    sums = tree_reduce(client, futures, _merge_resample_sums)
    tp, fp, fn, tn = (sums["confusion"][:, i].astype(np.float64) for i in range(4))
    with np.errstate(invalid="ignore", divide="ignore"):
        sens = tp / (tp + fn)
        spec = tn / (tn + fp)
    auroc, auprc = point["auroc"], point["auprc"]
    if weighted:
        ci = percentile_interval(auroc_of_weighted(sums["auroc"]))
        ap_ci = percentile_interval(auprc_of_weighted(sums["auroc"]))
    else:
        ci = delong_interval(counts)
        ap_ci = None
    conf = classification.confusion_rates(*(np.array([float(c)]) for c in _confusion_at(
        counts, float(config.threshold))))
    return {"auroc": {"value": auroc.value, "defined": auroc.defined,
                      "ci95": list(ci) if ci and auroc.defined else None,
                      "method": "poisson_bootstrap" if weighted else "delong"},
            "auprc": {"value": auprc.value, "defined": auprc.defined,
                      "ci95": _listed(ap_ci) if auprc.defined else None,
                      "method": "poisson_bootstrap" if weighted else None},
            "sensitivity": {"value": float(conf["sensitivity"][0]),
                            "ci95": _listed(percentile_interval(sens)),
                            "method": "poisson_bootstrap"},
            "specificity": {"value": float(conf["specificity"][0]),
                            "ci95": _listed(percentile_interval(spec)),
                            "method": "poisson_bootstrap"},
            "n_resamples": n_resamples}


def _listed(interval):
    return None if interval is None else list(interval)


def _confusion_at(counts, threshold: float) -> tuple[int, int, int, int]:
    """TP, FP, TN, FN at ``threshold`` (positive iff p >= threshold) from score counts."""
    at = counts.values >= threshold
    tp, fp = int(counts.pos[at].sum()), int(counts.neg[at].sum())
    return tp, fp, int(counts.neg[~at].sum()), int(counts.pos[~at].sum())


def _units(client, queries, candidates):
    """Work units of the inputs: (units, query paths, candidate paths, names)."""
    q_files = resolve_files(queries, table="queries")
    c_files = resolve_files(candidates, table="candidates")
    q_str = [str(p) for p in q_files]
    c_str = [str(p) for p in c_files]
    q_name = q_files[0].name if len(q_files) == 1 else Path(queries).name
    c_name = c_files[0].name if len(c_files) == 1 else Path(candidates).name
    posts = client.gather(
        [client.submit(_posts_of, p, "queries", pure=False) for p in q_str]
        + [client.submit(_posts_of, p, "candidates", pure=False) for p in c_str])
    units = plan_units(posts[:len(q_str)], posts[len(q_str):], q_files, c_files)
    return units, q_str, c_str, q_name, c_name


def _first_error(*parts):
    """The first error dict among the units' results (None when every unit loaded)."""
    return next((p for p in parts if isinstance(p, dict)), None)


def _owned(value):
    """``value`` with every array copied out of the message buffer it was received in.

    Arrays received together can share one buffer, which lives as long as any of them: with
    their own memory, the client frees each unit's arrays as soon as they are stacked.
    """
    if isinstance(value, np.ndarray):
        return value.copy() if value.base is not None else value
    if isinstance(value, dict):
        return {k: _owned(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return tuple(_owned(v) for v in value)
    return value


def _run(client, q_files, c_files, config, q_name, c_name, task) -> list[dict]:
    from distributed import as_completed
    from distributed.client import FutureCancelledError

    try:
        from distributed import KilledWorker
    except ImportError:  # older distributed
        from distributed.scheduler import KilledWorker

    task = task or evaluate_unit
    q_str = [str(p) for p in q_files]
    c_str = [str(p) for p in c_files]
    try:
        posts = client.gather(
            [client.submit(_posts_of, p, "queries", pure=False) for p in q_str]
            + [client.submit(_posts_of, p, "candidates", pure=False) for p in c_str])
        units = plan_units(posts[:len(q_str)], posts[len(q_str):], q_files, c_files)
        del posts
        futures = {}
        for i, (qi, ci) in enumerate(units):
            future = client.submit(task, [q_str[j] for j in qi], [c_str[j] for j in ci], config,
                                   queries_name=q_name, candidates_name=c_name, pure=False,
                                   key=f"metrics-core-unit-{i}-{os.getpid()}-{id(units)}")
            futures[future] = i
        results: list = [None] * len(units)
        for future in as_completed(list(futures)):
            i = futures.pop(future)
            result = _owned(future.result())
            future.release()
            if "error" in result:
                for other in futures:
                    other.cancel()
                raise InputError(result["error"], code=result["code"])
            results[i] = result
        return results
    except KilledWorker as err:
        raise RuntimeError(
            f"a Dask worker died each time it ran a part of this evaluation ({err}); the "
            f"task was retried and failed every time (out of memory?). No output was "
            f"written.") from None
    except FutureCancelledError as err:
        raise RuntimeError(f"the Dask computation was cancelled ({err}); no output was "
                           f"written") from None
    except InputError:
        raise
    except Exception as err:  # raised in a task on a worker (unreadable file, ...)
        raise RuntimeError(f"a Dask task failed: {type(err).__name__}: "
                           f"{str(err).splitlines()[0][:300] if str(err) else ''}; no output "
                           f"was written") from None
