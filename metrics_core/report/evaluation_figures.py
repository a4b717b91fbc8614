"""The figures of one :class:`~metrics_core.evaluation.result.Evaluation`, for a notebook and the
decision record: each function takes the evaluation and returns a ``plotly`` figure, drawn by
:mod:`metrics_core.report.figures` from what the evaluation computed.

A figure renders in Jupyter as the last value of a cell (or ``figure.show()``), and is saved
with ``figure.write_html("roc.html")``. The decision record shows the same figures
(:func:`record_figures`).
"""

from __future__ import annotations

from metrics_core.demo import criterion_names
from metrics_core.report.figures import breakdowns, calibration, curves, gate

__all__ = [
    "decision_curve_figure",
    "gate_flow_figure",
    "k_histogram",
    "per_criterion_figure",
    "pr_figure",
    "record_figures",
    "reliability_figure",
    "roc_figure",
]


def _area(evaluation, name: str) -> float | None:
    record = evaluation.record(name)
    return record.value if record.defined else None


def roc_figure(evaluation):
    """The ROC curve of all queries with its AUROC and its 95% bootstrap band (when the run
    resampled)."""
    return curves.roc_figure(evaluation.roc, auroc=_area(evaluation, "auroc"),
                             band=evaluation.roc_band)


def pr_figure(evaluation):
    """The precision-recall curve with the positive-rate baseline, its AUPRC and band."""
    return curves.pr_figure(evaluation.pr, evaluation.summary["positive_rate"] or 0.0,
                            auprc=_area(evaluation, "auprc"), band=evaluation.pr_band)


def reliability_figure(evaluation):
    """The reliability diagram: observed frequency against mean probability per bin, with
    Wilson bands and the bins' counts."""
    return calibration.reliability_figure(evaluation.reliability)


def gate_flow_figure(evaluation):
    """The queries through the gate (NEG / UNCERTAIN / POS) to the gold outcome."""
    return gate.gate_flow_figure(evaluation.gate)


def per_criterion_figure(evaluation, metric: str = "screening_sensitivity", *,
                         label: str | None = None):
    """``metric`` in each criterion (the per-criterion table's column), with its interval."""
    names = criterion_names((evaluation.run or {}).get("inputs"))
    return breakdowns.per_criterion_figure(evaluation.per_criterion, metric, label=label,
                                           names=names)


def k_histogram(evaluation):
    """The selected K (dynamic-K) of each query, by gate state."""
    return gate.k_histogram(evaluation.k, evaluation.states)


def decision_curve_figure(evaluation):
    """Net benefit of the model, treat-all and treat-none, with τ_pos marked."""
    return curves.decision_curve_figure(evaluation.decision_curve,
                                        tau_pos=evaluation.config.tau_pos)


def record_figures(evaluation) -> list:
    """The decision record's figures, in its order."""
    return [
        roc_figure(evaluation),
        gate_flow_figure(evaluation),
        pr_figure(evaluation),
        reliability_figure(evaluation),
        per_criterion_figure(evaluation, "screening_sensitivity",
                             label="Screening sensitivity"),
        per_criterion_figure(evaluation, "auroc", label="AUROC"),
        k_histogram(evaluation),
        decision_curve_figure(evaluation),
    ]
