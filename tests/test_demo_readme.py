"""assets/README.md says what the project's own code computes on each demo: the plain demo's
headline numbers (the dashboard opens on it), the demo with data problems' numbers apart and
labelled, the per-criterion AUROC of each, and what the audit reports on each."""

from __future__ import annotations

import re

import pytest

from metrics_core.config import EvalConfig
from metrics_core.demo import CRITERIA, demo_paths
from metrics_core.inputs import loading as mio
from metrics_core.inputs.audit import audit
from metrics_core.report import Evaluator

README = demo_paths().readme
#: README row label -> (metric, decimals written).
ROWS = {
    "AUROC (all_queries)": ("auroc", 4),
    "AUPRC (all_queries)": ("auprc", 4),
    "ECE, 10 equal-width bins (all_queries)": ("ece", 4),
    "Brier (all_queries)": ("brier", 4),
    "recall@10, `\\|Gold\\| = n_gold` (positives_only, 1,379)": ("recall@10", 3),
    "MRR (positives_only)": ("mrr", 3),
    "nDCG@10 (positives_only)": ("ndcg@10", 3),
    "evidence recall (positives_only)": ("evidence_recall", 3),
    "screening sensitivity (τ_neg 0.1, 1,379 with evidence)": ("screening_sensitivity", 3),
    "missed positives per 1,000 (τ_neg 0.1)": ("screening_fn_per_1000", 1),
}


def _demo(problems: bool):
    paths = demo_paths()
    loaded = (mio.load(paths.problems_queries, paths.problems_candidates) if problems
              else mio.load(paths.queries, paths.candidates))
    report = audit(loaded.dataset, loaded=loaded)
    return Evaluator(loaded.dataset, audit=report).evaluate(EvalConfig(bootstrap=0)), report


def _table(header: str) -> dict[str, str]:
    text = README.read_text(encoding="utf-8")
    start = text.index(header)
    rows = {}
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip("|"))]
        rows[cells[0]] = cells[-1]
    return rows


@pytest.mark.parametrize(("header", "problems"), [
    ("| metric (plain demo) | value |", False),
    ("| metric (demo with data problems) | value |", True)])
def test_readme_headline_numbers_are_each_demos_own(header, problems):
    evaluation, _ = _demo(problems)
    rows = _table(header)
    for label, (name, digits) in ROWS.items():
        assert rows[label] == f"{evaluation.record(name).value:.{digits}f}", (label, problems)
    g = evaluation.gate
    alerts = next(k for k in rows if k.startswith("alert precision"))
    assert alerts == f"alert precision (τ_pos 0.6, {g.count_pos:,} alerts)"
    assert rows[alerts] == f"{g.alert_precision:.3f}"


def test_readme_per_criterion_auroc_of_each_demo():
    plain, _ = _demo(False)
    problems, _ = _demo(True)
    text = README.read_text(encoding="utf-8")
    for code, name in CRITERIA.items():
        row = next(line for line in text.splitlines() if line.startswith(f"| {code} | {name} |"))
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert cells[2] == f"{int(plain.per_criterion.loc[code, 'n_positive'])}"
        assert cells[4] == f"{plain.per_criterion.loc[code, 'auroc']:.3f}"
        assert cells[5] == f"{problems.per_criterion.loc[code, 'auroc']:.3f}"


def test_readme_says_what_the_audit_reports_on_each_demo():
    text = README.read_text(encoding="utf-8")
    plain, report = _demo(False)
    assert report.passed and all(c.passed is not False for c in plain.checks)
    levels = [f.level for f in report.findings]
    assert levels == ["info"]  # one note: README must not say "the audit finds nothing"
    assert "the audit finds nothing" not in text
    n_missing = int(report.findings[0].message.split(" of ")[0])
    assert f"{n_missing} of the 1,379 positive queries" in text
    assert "the audit passes with one\ninformational note, no warning and no error" in text
    _, problems = _demo(True)
    assert not problems.passed
    counts = {level: [f.level for f in problems.findings].count(level)
              for level in ("error", "warning", "info")}
    assert counts == {"error": 2, "warning": 2, "info": 2}
    assert ("Its audit fails (two errors: posts in two folds and in two splits), with two "
            "warnings and two\ninformational notes") in text
