"""metrics_core: exact, vectorised metrics for evidence retrieval and no-evidence detection.

Definitions live in the data and metric contract, which ships with the package
(``metrics-core contract`` prints it, ``metrics_core.shipped.CONTRACT`` is its path); each
function cites its section as "contract §N". The source specifications it was written from,
cited as "seed 000" .. "seed 004", are in the repository's ``docs/seeds/``.
The usual entry points::

    from metrics_core import load, Evaluator, EvalConfig
    loaded = load("queries.parquet", "candidates.parquet")
    evaluation = Evaluator(loaded.dataset).evaluate(EvalConfig(tau_neg=0.05))
    evaluation.record("screening_sensitivity")
"""

__version__ = "0.2.0"

import importlib
from types import MappingProxyType

#: Public name -> module that defines it. Imported on first use (PEP 562), so that
#: ``import metrics_core`` stays fast and a tool that needs one module pays for that one.
_EXPORTS = MappingProxyType({
    "AuditReport": "inputs.audit", "VARIANTS": "config", "EvalConfig": "config",
    "Dataset": "data.dataset", "InputError": "errors", "InputErrors": "errors",
    "Loaded": "inputs.loading", "load": "inputs.loading", "read_table": "inputs.loading",
    "Check": "report", "Evaluation": "report", "Evaluator": "report", "MetricRecord": "report",
    "evaluate": "notebook", "SettingsError": "errors", "coerce_field": "config",
    "read_settings": "settings_file",
})


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'metrics_core' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"metrics_core.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_EXPORTS])


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
    "SettingsError",
    "__version__",
    "coerce_field",
    "evaluate",
    "load",
    "read_settings",
    "read_table",
]
