"""The ``Metric`` base class and the shared rules of seed 002 §9.1 (contract §12).

1. ``compute`` checks that ``samples`` and ``outputs`` have the same length.
2. A sample without the ground truth a metric needs is skipped; ``details["num_samples"]``
   counts the evaluated samples and ``details["num_skipped"]`` the others.
3. Empty support: with no evaluated sample the value is ``0.0`` and ``num_samples`` is 0; the
   result says ``defined = False`` so that no display shows it as a measured 0.
4. Metrics are deterministic; an LLM critic is made deterministic from outside.
5. Names are stable and machine-readable (``"recall@5"``, ``"token_f1"``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np

from metrics_core.rag.data_model import (
    EvaluationSample,
    MetricResult,
    SystemOutputs,
    TargetCategory,
)

__all__ = ["Metric", "check_lengths", "mean_result"]


class Metric(ABC):
    """A metric over aligned lists of samples and system outputs (seed 002 §9)."""

    name: str
    target: TargetCategory

    @abstractmethod
    def required_fields(self) -> list[str]:
        """Fields of ``EvaluationSample`` / ``SystemOutputs`` the metric reads."""

    @abstractmethod
    def compute(self, samples: Sequence[EvaluationSample],
                outputs: Sequence[SystemOutputs]) -> MetricResult:
        """The metric's value over the samples (skipping rules of seed 002 §9.1)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"


def check_lengths(samples: Sequence, outputs: Sequence) -> int:
    """Seed 002 §9.1 rule 1: one output per sample; returns the number of samples."""
    if len(samples) != len(outputs):
        raise ValueError(f"samples and outputs must have the same length, got {len(samples)} "
                         f"samples and {len(outputs)} outputs")
    return len(samples)


def mean_result(name: str, target: TargetCategory, per_sample: np.ndarray,
                **details) -> MetricResult:
    """Mean over the finite entries of ``per_sample`` (``nan`` = skipped sample), with the
    counts of seed 002 §9.1; ``0.0`` and ``num_samples = 0`` on empty support."""
    per_sample = np.asarray(per_sample, dtype=np.float64)
    evaluated = np.isfinite(per_sample)
    n = int(evaluated.sum())
    value = float(per_sample[evaluated].mean()) if n else 0.0
    return MetricResult(name=name, target=target, value=value,
                        details={"num_samples": n, "num_skipped": int(per_sample.size - n),
                                 **details},
                        per_sample=per_sample)
