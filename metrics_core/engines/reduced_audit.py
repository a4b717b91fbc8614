"""The input audit of the reduced Dask run, from per-unit counts and examples merged on the
workers.

Each work unit runs the audit's checks (:mod:`metrics_core.inputs.audit`) on the rows it
loaded, all of them, whatever the filters (:func:`unit_audit`): for each check the count of
what it found, the numbers its message quotes and its first
:data:`~metrics_core.inputs.audit.MAX_EXAMPLES` examples keyed by post id; the criteria each
of its posts has (as distinct sets of criteria, each with its number of posts and its first
posts), each criterion's queries and positives, and its excluded rows counted by reason with
the first ones (in the input files' rows). :func:`merge_audit` adds two units' parts and keeps
the first examples (a post lives in one unit, and the units' rows are in canonical order, so
the first examples of the union are the first of the two lists merged by post id);
:func:`audit_of_parts` makes the report with the audit's own messages
(:func:`metrics_core.inputs.audit.report_of`). It equals the audit of the gathered run's data
set (the Dask engine without ``--reduced``), finding for finding, message and examples
included. What crosses the network is bounded by the checks, the criteria and their distinct
sets per post, never by the queries.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["audit_of_parts", "merge_audit", "unit_audit"]

#: The query-level checks, in the audit's order.
_QUERY_CHECKS = ("positives_have_gold", "negatives_without_gold", "gold_within_candidates",
                 "queries_have_candidates", "positive_scores_distinct", "gold_ties_resolved")


def _first(examples: list, n: int | None = None) -> list:
    """The first ``n`` (:data:`MAX_EXAMPLES`) ``(post id, example)`` pairs by post id (stable:
    one post's examples, all from one unit, keep their order)."""
    from metrics_core.inputs.audit import MAX_EXAMPLES

    return sorted(examples, key=lambda e: e[0])[:MAX_EXAMPLES if n is None else n]


# ---------------------------------------------------------------------------- on a worker
def unit_audit(loaded, exclusions: pd.DataFrame) -> dict:
    """One unit's parts of the audit: ``loaded`` the unit's loader result (all its rows),
    ``exclusions`` its excluded rows in the input files' rows
    (:func:`metrics_core.engines.units.exclusions_in_files`)."""
    from metrics_core.inputs import audit

    ds = loaded.dataset

    def keyed(mask, texts=None):
        rows = np.flatnonzero(mask)[:audit.MAX_EXAMPLES]
        texts = audit.query_examples(ds, mask) if texts is None else texts
        return [(ds.post_id[q], t) for q, t in zip(rows, texts, strict=True)]

    disjoint = {}
    for column, factorized, noun in (("fold", ds.fold_codes, "folds"),
                                     ("split", ds.split_codes, "splits")):
        disjoint[column] = None if factorized is None else \
            audit.post_disjoint_parts(ds, factorized, noun)
    gold = audit.gold_masks(ds)
    queries = {"positives_have_gold": (gold["positives_have_gold"], 0),
               "negatives_without_gold": (
                   gold["negatives_without_gold"],
                   int(ds.n_gold_found[gold["negatives_without_gold"]].sum()))}
    if ds.n_gold_given is not None:
        missed = ds.n_gold_given - ds.n_gold_found
        mask = ds.positives & (missed > 0)
        queries["gold_within_candidates"] = (mask, int(missed[mask].sum()))
    empty = ds.n_cand == 0
    queries["queries_have_candidates"] = (empty, int((empty & ds.positives).sum()))
    if ds.ranked_by == "score":
        masks = audit.tie_masks(ds)
        queries["positive_scores_distinct"] = (masks["positive_ties"], 0)
        queries["gold_ties_resolved"] = (masks["gold_ties"], 0)
    found = {}
    for name, (mask, extra) in queries.items():
        texts = audit.gold_missed_examples(ds, mask) if name == "gold_within_candidates" \
            else None
        found[name] = [int(mask.sum()), extra, keyed(mask, texts)]
    n_crit = len(ds.criteria)
    n = np.bincount(ds.criterion_code, minlength=n_crit)
    pos = np.bincount(ds.criterion_code, weights=ds.y, minlength=n_crit)
    sorted_exclusions = exclusions.sort_values(["_group", "file", "row"], kind="stable") \
        if len(exclusions) else exclusions
    return {"n_queries": ds.n_queries, "n_positive": ds.n_positive,
            "n_candidates": ds.n_candidates, "n_posts": int(ds.posts.size),
            "ranked_by": ds.ranked_by, "disjoint": disjoint, "queries": found,
            "criteria_sets": _criteria_sets(ds),
            "by_criterion": {c: [int(n[i]), int(pos[i])] for i, c in enumerate(ds.criteria)},
            "exclusions": _kept_exclusions(len(exclusions),
                                           exclusions["reason"].value_counts(sort=False)
                                           .to_dict() if len(exclusions) else {},
                                           sorted_exclusions)}


def _criteria_sets(ds) -> dict:
    """``{criteria a post has (names): [posts, first post ids]}`` over the unit's posts."""
    from metrics_core.inputs.audit import MAX_EXAMPLES

    n_crit = len(ds.criteria)
    per_post = np.bincount(ds.post_code, minlength=ds.posts.size)
    out = {}
    complete = np.flatnonzero(per_post == n_crit)
    if complete.size:
        out[tuple(ds.criteria)] = [int(complete.size),
                                   [ds.posts[i] for i in complete[:MAX_EXAMPLES]]]
    partial = np.flatnonzero(per_post < n_crit)
    if partial.size:  # the posts lacking some of the unit's criteria, set by set
        rows = np.flatnonzero(np.isin(ds.post_code, partial))
        present = np.zeros((partial.size, n_crit), dtype=bool)
        present[np.searchsorted(partial, ds.post_code[rows]), ds.criterion_code[rows]] = True
        sets, inverse = np.unique(present, axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        for j, row in enumerate(sets):
            posts = partial[inverse == j]
            out[tuple(ds.criteria[i] for i in np.flatnonzero(row))] = [
                int(posts.size), [ds.posts[i] for i in posts[:MAX_EXAMPLES]]]
    return out


def _kept_exclusions(n: int, by_reason: dict, rows: pd.DataFrame) -> dict:
    """The excluded rows' count, count by reason, and the rows an audit can quote: the first
    :data:`MAX_EXAMPLES` and each reason's first (``rows`` sorted as the gathered table)."""
    from metrics_core.inputs.audit import MAX_EXAMPLES

    if len(rows):
        first = ~rows["reason"].duplicated().to_numpy()
        first[:MAX_EXAMPLES] = True
        rows = rows[first]
    return {"n": n, "by_reason": by_reason, "rows": rows}


# ------------------------------------------------------------------------------ merging
def merge_audit(a: dict, b: dict) -> dict:
    """Two units' audit parts of their union (new objects)."""
    disjoint = {}
    for column in ("fold", "split"):
        da, db = a["disjoint"][column], b["disjoint"][column]
        disjoint[column] = da if db is None else db if da is None else \
            (da[0] + db[0], da[1] + db[1], _first(da[2] + db[2]))
    queries = {}
    for name in {**a["queries"], **b["queries"]}:
        qa, qb = a["queries"].get(name), b["queries"].get(name)
        queries[name] = qa if qb is None else qb if qa is None else \
            [qa[0] + qb[0], qa[1] + qb[1], _first(qa[2] + qb[2])]
    if "positive_scores_distinct" not in a["queries"] or \
            "positive_scores_distinct" not in b["queries"]:  # a unit ranked by rank
        queries.pop("positive_scores_distinct", None)
        queries.pop("gold_ties_resolved", None)
    sets = {key: list(value) for key, value in a["criteria_sets"].items()}
    for key, (count, posts) in b["criteria_sets"].items():
        if key in sets:
            sets[key] = [sets[key][0] + count,
                         [p for p, _ in _first([(p, None) for p in sets[key][1] + posts])]]
        else:
            sets[key] = [count, list(posts)]
    by_criterion = {c: list(v) for c, v in a["by_criterion"].items()}
    for c, (n, pos) in b["by_criterion"].items():
        old = by_criterion.get(c, [0, 0])
        by_criterion[c] = [old[0] + n, old[1] + pos]
    ea, eb = a["exclusions"], b["exclusions"]
    reasons = dict(ea["by_reason"])
    for reason, n in eb["by_reason"].items():
        reasons[reason] = reasons.get(reason, 0) + n
    parts = [r for r in (ea["rows"], eb["rows"]) if len(r)]
    rows = pd.concat(parts, ignore_index=True).sort_values(["_group", "file", "row"],
                                                           kind="stable") \
        if len(parts) > 1 else (parts[0] if parts else ea["rows"])
    return {"n_queries": a["n_queries"] + b["n_queries"],
            "n_positive": a["n_positive"] + b["n_positive"],
            "n_candidates": a["n_candidates"] + b["n_candidates"],
            "n_posts": a["n_posts"] + b["n_posts"],
            "ranked_by": "rank" if "rank" in (a["ranked_by"], b["ranked_by"]) else "score",
            "disjoint": disjoint, "queries": queries, "criteria_sets": sets,
            "by_criterion": by_criterion,
            "exclusions": _kept_exclusions(ea["n"] + eb["n"], reasons, rows)}


# ---------------------------------------------------------------------------- on the client
def audit_of_parts(parts: dict):
    """The :class:`~metrics_core.inputs.audit.AuditReport` of the merged parts: the checks
    that ran and the findings, with the audit's messages and the global counts."""
    from metrics_core.engines.gathered import criteria_order
    from metrics_core.inputs import audit
    from metrics_core.inputs.loading import EXCLUSION_COLUMNS

    findings, checks = [], []
    for column, name, noun in (("fold", "folds_post_disjoint", "folds"),
                               ("split", "splits_post_disjoint", "splits")):
        found = parts["disjoint"][column]
        if found is not None:
            checks.append(name)
            if found[0]:
                findings.append(audit.post_disjoint_finding(name, noun, found[0], found[1],
                                                            [e for _, e in found[2]]))
    q = parts["queries"]
    n_pos = parts["n_positive"]

    def examples(name):
        return [e for _, e in q[name][2]]

    checks += ["positives_have_gold", "negatives_without_gold"]
    if q["positives_have_gold"][0]:
        findings.append(audit.positives_without_gold_finding(
            q["positives_have_gold"][0], n_pos, examples("positives_have_gold")))
    if q["negatives_without_gold"][0]:
        findings.append(audit.negatives_with_gold_finding(
            q["negatives_without_gold"][0], q["negatives_without_gold"][1],
            examples("negatives_without_gold")))
    if "gold_within_candidates" in q:
        checks.append("gold_within_candidates")
        count, missed, _ = q["gold_within_candidates"]
        if count:
            findings.append(audit.gold_missed_finding(count, n_pos, missed,
                                                      examples("gold_within_candidates")))
    checks += ["queries_have_candidates", "criteria_complete"]
    count, with_evidence, _ = q["queries_have_candidates"]
    if count:
        findings.append(audit.without_candidates_finding(
            count, with_evidence, parts["n_candidates"] == 0,
            examples("queries_have_candidates")))
    criteria = criteria_order(c for key in parts["criteria_sets"] for c in key)
    bad = [(key, value) for key, value in parts["criteria_sets"].items()
           if len(key) < len(criteria)]
    if bad:
        first = _first([(post, key) for key, (_, posts) in bad for post in posts])
        findings.append(audit.criteria_complete_finding(
            sum(count for _, (count, _) in bad), parts["n_posts"], len(criteria),
            [f"post {post} lacks {', '.join(c for c in criteria if c not in set(key))}"
             for post, key in first]))
    if parts["ranked_by"] == "score":
        checks += ["positive_scores_distinct", "gold_ties_resolved"]
        if q["positive_scores_distinct"][0]:
            findings.append(audit.positive_ties_finding(
                q["positive_scores_distinct"][0], examples("positive_scores_distinct")))
        if q["gold_ties_resolved"][0] and parts["n_candidates"] >= 2:
            findings.append(audit.gold_ties_finding(q["gold_ties_resolved"][0],
                                                    examples("gold_ties_resolved")))
    n = parts["n_queries"]
    checks.append("both_classes")
    if n and not 0 < n_pos < n:
        findings.append(audit.one_class_finding(n, int(n_pos > 0)))
    checks.append("both_classes_per_criterion")
    if n and 0 < n_pos < n:
        by = parts["by_criterion"]
        findings += audit.one_class_criteria_findings(
            criteria, [by[c][0] for c in criteria], [by[c][1] for c in criteria])
    checks.append("no_exclusions")
    excluded = parts["exclusions"]
    if excluded["n"]:
        rows = excluded["rows"]
        order = rows["reason"].drop_duplicates().tolist()  # as value_counts(sort=False)
        findings.append(audit.exclusions_finding(
            excluded["n"], [(r, excluded["by_reason"][r]) for r in order],
            rows[list(EXCLUSION_COLUMNS)].head(audit.MAX_EXAMPLES)))
    return audit.report_of(findings, checks)
