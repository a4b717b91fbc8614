"""The data audit: problems in valid input that make numbers misleading (contract §2, §10).

The loader rejects input that breaks a rule; the audit reports what is allowed but suspicious:
posts in more than one fold or split (leakage: folds must be post-disjoint, §10), positive
queries without any gold sentence, gold sentences on negative queries, gold the candidate list
missed, queries without candidates, posts missing some criteria, positive queries whose
candidates all tie in score, a single class, and the rows the loader excluded.

Every check is vectorised over queries (``np.unique`` / ``np.bincount`` on integer codes);
only the handful of examples quoted per finding are built one by one.

Sources: "contract §N" is section N of ``docs/CONTRACT.md``.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from metrics_core.data.dataset import Dataset, GatheredCandidates

if TYPE_CHECKING:
    from metrics_core.inputs.loading import Loaded

__all__ = ["CHECKS", "LEVELS", "AuditReport", "Finding", "audit", "tie_masks"]

#: Severity levels, most severe first. An ``error`` finding makes the audit fail.
LEVELS = ("error", "warning", "info")

#: Every audit check: name -> what passing it means (read-only).
CHECKS: MappingProxyType[str, str] = MappingProxyType({
    "folds_post_disjoint": "every post's queries are in one fold (§10)",
    "splits_post_disjoint": "every post's queries are in one split (§10)",
    "positives_have_gold": "every has_evidence = 1 query has gold (among candidates or n_gold)",
    "negatives_without_gold": "no has_evidence = 0 query has gold sentences",
    "gold_within_candidates": "the candidate lists contain all gold sentences (n_gold)",
    "queries_have_candidates": "every query has candidates",
    "criteria_complete": "every post has a query for every criterion",
    "positive_scores_distinct": "no positive query has all its candidates tied in score",
    "gold_ties_resolved": "no gold candidate of a positive query ties in score with a "
                          "non-gold one",
    "both_classes": "both has_evidence classes are present",
    "both_classes_per_criterion": "every criterion has queries of both has_evidence classes",
    "no_exclusions": "the loader excluded no rows",
})

#: Examples quoted per finding.
MAX_EXAMPLES = 5


@dataclass(frozen=True)
class Finding:
    """One audit finding.

    Attributes
    ----------
    check : str
        Name of the check (a key of :data:`CHECKS`).
    level : {"error", "warning", "info"}
        Severity; ``error`` fails the audit.
    message : str
        Plain-language statement of what was found and why it matters.
    count : int
        Number of affected units (posts, queries or rows; the message says which).
    examples : tuple of str
        A few short examples, e.g. ``"post p0042 in folds 1, 3"``.
    """

    check: str
    level: str
    message: str
    count: int
    examples: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return {"check": self.check, "level": self.level, "message": self.message,
                "count": self.count, "examples": list(self.examples)}


@dataclass(frozen=True)
class AuditReport:
    """The findings of :func:`audit` and the checks that ran.

    ``checks`` lists every check that could run on this data (e.g. the fold check needs a
    ``fold`` column); a check without a finding passed.
    """

    findings: tuple[Finding, ...]
    checks: tuple[str, ...]

    @property
    def passed(self) -> bool:
        """True when no finding is at level ``error``."""
        return not any(f.level == "error" for f in self.findings)

    def status(self, check: str) -> str:
        """``"pass"``, the most severe level found by ``check``, or ``"not run"``."""
        if check not in self.checks:
            return "not run"
        levels = {f.level for f in self.findings if f.check == check}
        return next((lv for lv in LEVELS if lv in levels), "pass")

    def to_dict(self) -> dict:
        return {"passed": self.passed,
                "checks": [{"check": c, "description": CHECKS[c], "status": self.status(c)}
                           for c in self.checks],
                "findings": [f.to_dict() for f in self.findings]}


def audit(dataset: Dataset, *, loaded: Loaded | None = None) -> AuditReport:
    """Audit a loaded data set (contract §2 "Bad input", §10 "folds post-disjoint").

    Parameters
    ----------
    dataset : Dataset
        The data to audit (all queries, both protocols).
    loaded : Loaded, optional
        The loader's result; its exclusions are summarised when given.

    Returns
    -------
    AuditReport
        Findings, most severe first; nothing on clean data.

    Examples
    --------
    >>> import pandas as pd
    >>> q = pd.DataFrame({"post_id": ["p1", "p1"], "criterion": ["A.1", "A.2"],
    ...                   "has_evidence": [1, 0], "p_has_evidence": [0.9, 0.1],
    ...                   "fold": [0, 1]})
    >>> c = pd.DataFrame({"post_id": ["p1", "p1"], "criterion": ["A.1", "A.2"],
    ...                   "sent_uid": ["s1", "s1"], "score": [2.0, 1.0], "is_gold": [1, 0]})
    >>> report = audit(Dataset.from_frames(q, c))
    >>> report.passed, report.findings[0].examples
    (False, ('post p1 in folds 0, 1',))
    """
    findings: list[Finding] = []
    checks: list[str] = []
    ds = dataset
    for name, factorized, noun in (("folds_post_disjoint", ds.fold_codes, "folds"),
                                   ("splits_post_disjoint", ds.split_codes, "splits")):
        if factorized is not None:
            checks.append(name)
            findings += _post_disjoint(ds, factorized, name, noun)
    checks += ["positives_have_gold", "negatives_without_gold"]
    findings += _gold_consistency(ds)
    if ds.n_gold_given is not None:
        checks.append("gold_within_candidates")
        findings += _gold_missed(ds)
    checks += ["queries_have_candidates", "criteria_complete"]
    findings += _without_candidates(ds)
    findings += _criteria_complete(ds)
    if ds.ranked_by == "score":
        checks += ["positive_scores_distinct", "gold_ties_resolved"]
        findings += _tie_findings(ds, tie_masks(ds))  # both from one pass over the candidates
    checks.append("both_classes")
    findings += _one_class(ds)
    checks.append("both_classes_per_criterion")
    findings += _one_class_criteria(ds)
    if loaded is not None:
        checks.append("no_exclusions")
        findings += _exclusions(loaded.exclusions)
    return report_of(findings, checks)


def report_of(findings: list[Finding], checks: list[str]) -> AuditReport:
    """The report of findings made in check order: most severe first (stable: check order
    within a level)."""
    findings = sorted(findings, key=lambda f: LEVELS.index(f.level))
    return AuditReport(findings=tuple(findings), checks=tuple(checks))


def _query_label(ds: Dataset, q: int) -> str:
    return f"post {ds.post_id[q]}, criterion {ds.criterion[q]}"


def query_examples(ds: Dataset, mask: np.ndarray) -> tuple[str, ...]:
    return tuple(_query_label(ds, q) for q in np.flatnonzero(mask)[:MAX_EXAMPLES])


def _post_disjoint(ds: Dataset, factorized, check: str, noun: str) -> list[Finding]:
    """Posts whose queries fall into more than one fold (or split); ``factorized``: the
    Dataset's ``fold_codes`` (or ``split_codes``)."""
    n_bad, n_queries, examples = post_disjoint_parts(ds, factorized, noun)
    if n_bad == 0:
        return []
    return [post_disjoint_finding(check, noun, n_bad, n_queries, [e for _, e in examples])]


def post_disjoint_parts(ds: Dataset, factorized, noun: str):
    """(posts in more than one label, their queries, ``(post id, example)`` of the first
    :data:`MAX_EXAMPLES` of them)."""
    codes, labels = _sorted_codes(factorized)
    post = ds.post_code
    # Queries in post order (canonical) whose posts each keep one label: one pass, no sort.
    if (post.size > 1 and np.all(post[1:] >= post[:-1])
            and not np.any((post[1:] == post[:-1]) & (codes[1:] != codes[:-1]))):
        return 0, 0, []
    n_labels = max(len(labels), 1)
    pairs = np.unique(ds.post_code * n_labels + codes)  # distinct (post, label), sorted
    post_of_pair = pairs // n_labels
    n_per_post = np.bincount(post_of_pair, minlength=len(ds.posts))
    bad = np.flatnonzero(n_per_post > 1)
    if len(bad) == 0:
        return 0, 0, []
    examples = []
    for post in bad[:MAX_EXAMPLES]:
        lo, hi = np.searchsorted(post_of_pair, [post, post + 1])
        names = ", ".join(str(labels[i]) for i in pairs[lo:hi] % n_labels)
        examples.append((ds.posts[post], f"post {ds.posts[post]} in {noun} {names}"))
    return len(bad), int(np.isin(ds.post_code, bad).sum()), examples


def post_disjoint_finding(check: str, noun: str, n_posts: int, n_queries: int,
                          examples) -> Finding:
    """The finding of ``n_posts`` posts (``n_queries`` queries) in more than one fold / split
    (``noun``: "folds" or "splits")."""
    return Finding(check, "error",
                   f"{_count(n_posts, 'post', 'posts')} "
                   f"({_count(n_queries, 'query', 'queries')}) "
                   f"{'appears' if n_posts == 1 else 'appear'} in more than one "
                   f"{noun[:-1]}: {noun} are not post-disjoint, so the same post is seen on "
                   f"both sides of an evaluation (leakage)",
                   n_posts, tuple(examples))


def _sorted_codes(factorized) -> tuple[np.ndarray, np.ndarray]:
    """``pandas.factorize(values, sort=True)`` from the Dataset's cached first-seen factorization
    (``Dataset.fold_codes`` / ``split_codes``): the labels sorted, the codes renumbered."""
    codes, uniques = factorized
    uniques = np.asarray(uniques)
    order = np.argsort(uniques, kind="stable")
    rank = np.empty(order.size, dtype=np.int64)
    rank[order] = np.arange(order.size)
    return rank[codes], uniques[order]


def _gold_consistency(ds: Dataset) -> list[Finding]:
    """Positives without any gold, negatives with gold."""
    out = []
    masks = gold_masks(ds)
    no_gold = masks["positives_have_gold"]
    if no_gold.any():
        out.append(positives_without_gold_finding(int(no_gold.sum()), ds.n_positive,
                                                  query_examples(ds, no_gold)))
    gold_on_neg = masks["negatives_without_gold"]
    if gold_on_neg.any():
        out.append(negatives_with_gold_finding(int(gold_on_neg.sum()),
                                               int(ds.n_gold_found[gold_on_neg].sum()),
                                               query_examples(ds, gold_on_neg)))
    return out


def gold_masks(ds: Dataset) -> dict[str, np.ndarray]:
    """Per-query masks of the two gold findings: positives without any gold, negatives with
    gold (among their candidates or ``n_gold``)."""
    gold = ds.n_gold_found > 0
    if ds.n_gold_given is not None:
        gold |= ds.n_gold_given > 0
    return {"positives_have_gold": ds.positives & (ds.n_gold == 0),
            "negatives_without_gold": ~ds.positives & gold}


def positives_without_gold_finding(n: int, n_positive: int, examples) -> Finding:
    return Finding(
        "positives_have_gold", "warning",
        f"{n} of {n_positive} queries with has_evidence = 1 have no gold sentence "
        f"among their candidates and no n_gold: ranking and extraction metrics have no "
        f"gold to find for them",
        n, tuple(examples))


def negatives_with_gold_finding(n: int, n_found: int, examples) -> Finding:
    """``n`` negative queries with gold, ``n_found`` gold sentences among their candidates."""
    return Finding(
        "negatives_without_gold", "warning",
        f"{_count(n, 'query', 'queries')} with has_evidence = 0 have gold sentences "
        f"({n_found} among their candidates): the query "
        f"label and the sentence labels disagree",
        n, tuple(examples))


def _gold_missed(ds: Dataset) -> list[Finding]:
    """Gold sentences the candidate lists do not contain (n_gold > gold found)."""
    missed = ds.n_gold_given - ds.n_gold_found
    mask = ds.positives & (missed > 0)
    if not mask.any():
        return []
    return [gold_missed_finding(int(mask.sum()), ds.n_positive, int(missed[mask].sum()),
                                gold_missed_examples(ds, mask))]


def gold_missed_examples(ds: Dataset, mask: np.ndarray) -> tuple[str, ...]:
    return tuple(f"{_query_label(ds, q)}: {ds.n_gold_found[q]} of {ds.n_gold_given[q]} "
                 f"gold among candidates" for q in np.flatnonzero(mask)[:MAX_EXAMPLES])


def gold_missed_finding(n: int, n_positive: int, missed: int, examples) -> Finding:
    """``n`` positive queries missing ``missed`` gold sentences in their candidates."""
    return Finding(
        "gold_within_candidates", "info",
        f"{n} of {n_positive} positive queries ({n / n_positive:.1%}) miss gold "
        f"sentences in their candidate list ({missed} gold sentences in "
        f"all); recall counts them as not retrieved",
        n, tuple(examples))


def _without_candidates(ds: Dataset) -> list[Finding]:
    empty = ds.n_cand == 0
    if not empty.any():
        return []
    return [without_candidates_finding(int(empty.sum()), int((empty & ds.positives).sum()),
                                       ds.n_candidates == 0, query_examples(ds, empty))]


def without_candidates_finding(n: int, n_pos: int, none_at_all: bool, examples) -> Finding:
    """``n`` queries (``n_pos`` positive) without candidates; ``none_at_all``: the data has
    no candidate."""
    if none_at_all:
        message = (f"there are no candidates at all: ranking and extraction metrics cannot "
                   f"be computed ({n} queries)")
    else:
        message = (f"{_count(n, 'query has', 'queries have')} no candidates ({n_pos} with "
                   f"has_evidence = 1): "
                   f"nothing is ranked or extracted for them")
    return Finding("queries_have_candidates", "warning", message, n, tuple(examples))


def _criteria_complete(ds: Dataset) -> list[Finding]:
    """Posts missing some criteria (the criterion set differs by post)."""
    n_crit = len(ds.criteria)
    per_post = np.bincount(ds.post_code, minlength=len(ds.posts))
    bad = np.flatnonzero(per_post < n_crit)
    if len(bad) == 0:
        return []
    examples = []
    for post in bad[:MAX_EXAMPLES]:
        present = np.zeros(n_crit, dtype=bool)
        present[ds.criterion_code[ds.post_code == post]] = True
        lacking = ", ".join(ds.criteria[i] for i in np.flatnonzero(~present))
        examples.append(f"post {ds.posts[post]} lacks {lacking}")
    return [criteria_complete_finding(len(bad), len(ds.posts), n_crit, examples)]


def criteria_complete_finding(n_bad: int, n_posts: int, n_crit: int, examples) -> Finding:
    """``n_bad`` of ``n_posts`` posts lack queries for some of the ``n_crit`` criteria."""
    return Finding(
        "criteria_complete", "warning",
        f"{n_bad} of {n_posts} posts lack queries for some of the {n_crit} criteria: "
        f"the criterion set differs by post, so per-post multi-label metrics compare "
        f"vectors with gaps",
        n_bad, tuple(examples))


def tie_masks(ds: Dataset) -> dict[str, np.ndarray]:
    """Per-query masks of the two tie findings (they read the candidates).

    ``positive_ties``: positive queries (>= 2 candidates) whose candidates all have the same
    score; ``gold_ties``: positive queries where a gold and a non-gold candidate share a score.
    A data set whose candidates live elsewhere (a
    :class:`~metrics_core.data.dataset.GatheredCandidates`, the Dask engine's) carries them,
    computed where the candidates are.
    """
    if isinstance(ds, GatheredCandidates):
        return ds.gathered_tie_masks
    return {"positive_ties": _positive_tie_mask(ds), "gold_ties": _gold_tie_mask(ds)}


def _positive_tie_mask(ds: Dataset) -> np.ndarray:
    multi = ds.n_cand >= 2
    if not multi.any():
        return np.zeros(ds.n_queries, dtype=bool)
    nonempty = np.flatnonzero(ds.n_cand > 0)
    starts = ds.offsets[:-1][nonempty]
    tied = np.zeros(ds.n_queries, dtype=bool)
    if ds.ranked_by == "score":  # scores descend within a query: its first and its last
        tied[nonempty] = ds.score[starts] == ds.score[ds.offsets[1:][nonempty] - 1]
    else:
        tied[nonempty] = (np.maximum.reduceat(ds.score, starts)
                          == np.minimum.reduceat(ds.score, starts))
    return tied & multi & ds.positives


def _tie_findings(ds: Dataset, masks: dict) -> list[Finding]:
    """The two findings of ties in score (each query a mask of :func:`tie_masks` marks is
    counted, the first ones are its examples; no mask marks a query of fewer than two
    candidates)."""
    findings = []
    for key, finding in (("positive_ties", positive_ties_finding),
                         ("gold_ties", gold_ties_finding)):
        mask = masks[key]
        if mask.any():
            findings.append(finding(int(mask.sum()), query_examples(ds, mask)))
    return findings


def positive_ties_finding(n: int, examples) -> Finding:
    return Finding(
        "positive_scores_distinct", "info",
        f"{_count(n, 'positive query has', 'positive queries have')} all candidates tied in "
        f"score: their ranking comes from the sent_uid tie-break alone",
        n, tuple(examples))


def gold_ties_finding(n: int, examples) -> Finding:
    return Finding(
        "gold_ties_resolved", "info",
        f"{_count(n, 'positive query', 'positive queries')} have a gold sentence tied in score "
        f"with a non-gold one: their ranking metrics depend on the sent_uid tie rule",
        n, tuple(examples))


def _gold_tie_mask(ds: Dataset) -> np.ndarray:
    """Candidates are stored in ranking order, so equal scores of one query are adjacent: a
    tie run is a maximal block of equal (query, score); a run mixing gold and non-gold makes
    the ranking metrics depend on the ``sent_uid`` tie rule."""
    mask = np.zeros(ds.n_queries, dtype=bool)
    if ds.n_candidates < 2:
        return mask
    # Only the rows tied with a neighbour of the same query can be in a mixed run.
    same = ds.score[1:] == ds.score[:-1]  # same[i]: rows i and i + 1 tie
    inner = ds.offsets[1:-1]
    same[inner[(inner > 0) & (inner <= same.size)] - 1] = False  # not across two queries
    pairs = np.flatnonzero(same)
    if pairs.size == 0:
        return mask
    tied = np.union1d(pairs, pairs + 1)
    new_run = np.ones(tied.size, dtype=bool)
    new_run[1:] = ~same[tied[1:] - 1]
    run = np.cumsum(new_run) - 1
    size = np.bincount(run)
    gold = np.bincount(run, weights=ds.is_gold[tied])
    mixed_run = (gold > 0) & (gold < size)
    mask[ds.locate(tied[new_run][mixed_run])[0]] = True
    return mask & ds.positives


def _count(n: int, singular: str, plural: str) -> str:
    return f"{n} {singular if n == 1 else plural}"


def _one_class(ds: Dataset) -> list[Finding]:
    if ds.n_queries == 0 or 0 < ds.n_positive < ds.n_queries:
        return []
    return [one_class_finding(ds.n_queries, int(ds.y[0]))]


def one_class_finding(n_queries: int, label: int) -> Finding:
    return Finding(
        "both_classes", "warning",
        f"all {n_queries} queries have has_evidence = {label}: AUROC and AUPRC are "
        f"undefined (one class)",
        n_queries)


def _one_class_criteria(ds: Dataset) -> list[Finding]:
    """Criteria whose queries are all positive or all negative (when the data has both)."""
    if ds.n_queries == 0 or not 0 < ds.n_positive < ds.n_queries:
        return []  # the whole data set is one class: _one_class says so
    n = np.bincount(ds.criterion_code, minlength=len(ds.criteria))
    pos = np.bincount(ds.criterion_code, weights=ds.y, minlength=len(ds.criteria))
    return one_class_criteria_findings(ds.criteria, n, pos)


def one_class_criteria_findings(criteria, n, pos) -> list[Finding]:
    """The finding of the ``criteria`` (in the data set's order) whose ``n`` queries are all
    positive or all negative (``pos`` positives), if any."""
    n, pos = np.asarray(n), np.asarray(pos)
    one = np.flatnonzero((n > 0) & ((pos == 0) | (pos == n)))
    if one.size == 0:
        return []
    examples = tuple(
        f"criterion {criteria[c]}: all {int(n[c])} queries have has_evidence = "
        f"{int(pos[c] > 0)}" for c in one[:MAX_EXAMPLES])
    return [Finding(
        "both_classes_per_criterion", "warning",
        f"{_count(int(one.size), 'criterion has', 'criteria have')} queries of one "
        f"has_evidence class only: their AUROC, AUPRC and the class-conditional rates are "
        f"undefined, and they are left out of the macro means",
        int(one.size), examples)]


def _exclusions(exclusions: pd.DataFrame) -> list[Finding]:
    if len(exclusions) == 0:
        return []
    counts = exclusions["reason"].value_counts(sort=False)
    return [exclusions_finding(len(exclusions), list(counts.items()),
                               exclusions.head(MAX_EXAMPLES))]


def exclusions_finding(n: int, by_reason, head: pd.DataFrame) -> Finding:
    """``n`` excluded rows, ``by_reason`` (reason, rows) in the exclusions table's order of
    first appearance, ``head`` the table's first rows."""
    parts = "; ".join(f"{k} rows: {reason}" for reason, k in by_reason)
    examples = tuple(
        f"{r.file} row {r.row}: post {r.post_id}, criterion {r.criterion}"
        + (f", sentence {r.sent_uid}" if r.sent_uid else "") + f" ({r.column} missing)"
        for r in head.itertuples(index=False))
    return Finding("no_exclusions", "warning",
                   f"{n} input rows were excluded ({parts}); the exclusions "
                   f"table lists each one", n, examples)
