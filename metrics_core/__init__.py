"""metrics_core: exact, vectorised metrics for evidence retrieval and no-evidence detection.

Definitions live in the data and metric contract, ``docs/CONTRACT.md`` in the repository (also
in the source distribution); each function cites its section as "contract §N". The source
specifications it was written from, cited as "seed 000" .. "seed 004", are in ``docs/seeds/``.
The usual entry points::

    from metrics_core import load, Evaluator, EvalConfig
    loaded = load("queries.parquet", "candidates.parquet")
    evaluation = Evaluator(loaded.dataset).evaluate(EvalConfig(tau_neg=0.05))
    evaluation.record("screening_sensitivity")
"""

__version__ = "0.1.0"  # before the imports: report.py reads it

from metrics_core.audit import AuditReport
from metrics_core.config import VARIANTS, EvalConfig
from metrics_core.dataset import Dataset
from metrics_core.errors import InputError, InputErrors
from metrics_core.io import Loaded, load, read_table
from metrics_core.report import Check, Evaluation, Evaluator, MetricRecord, evaluate

__all__ = [
    "VARIANTS",
    "AuditReport",
    "Check",
    "Dataset",
    "EvalConfig",
    "Evaluation",
    "Evaluator",
    "InputError",
    "InputErrors",
    "Loaded",
    "MetricRecord",
    "__version__",
    "evaluate",
    "load",
    "read_table",
]
