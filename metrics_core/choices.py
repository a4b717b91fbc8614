"""The allowed values of every contract variant, kept free of numpy, pandas and pyarrow.

The kernels (:mod:`~metrics_core.metrics.ranking`, :mod:`~metrics_core.metrics.calibration`,
:mod:`~metrics_core.metrics.dynamic_k`, :mod:`~metrics_core.metrics.multilabel`) re-export their own
tuples from here, and :mod:`metrics_core.config` builds :data:`~metrics_core.config.VARIANTS` from
the same objects, so a kernel and the configuration cannot disagree, and reading the configuration
(the command line's flags and ``--help``) does not import the data stack.
"""

from __future__ import annotations

__all__ = ["CONFIDENCE_ALIASES", "DECISION_RULES", "EVIDENCE_PROTOCOLS", "GAINS",
           "LABEL_ALIASES", "MAP_DENOMINATORS", "MASS_RULES", "PRECISION_DENOMINATORS",
           "PREDICTION_ALIASES", "PROTOCOLS", "STRATEGIES", "TRIAL_ALIASES"]

#: The two protocols of the contract (§1): ranking / extraction on positives, the rest on all.
PROTOCOLS = ("positives_only", "all_queries")
#: ``precision@K`` denominators: ``K`` (default) or ``min(K, n_candidates)`` (seed 002).
PRECISION_DENOMINATORS = ("k", "min_k_n")
#: ``map@K`` denominators: ``|Gold|`` (default, trec_eval ``map_cut``), ``min(|Gold|, K)``
#: (seed 000) or the number of gold hits within K (seed 002).
MAP_DENOMINATORS = ("n_gold", "min_gold_k", "hits")
#: nDCG gains: binary (default) or graded ``2^rel - 1`` from ``Dataset.relevance``.
GAINS = ("binary", "graded")
#: Calibration binning strategies (contract §5).
STRATEGIES = ("uniform", "quantile")
#: Candidate mass rules (contract §7): ``softmax(score / T)`` (default) or ``score / Σ score``.
MASS_RULES = ("softmax", "probability")
#: Evidence protocols (contract §7): seed 003 (default) or seed 000's all-queries conventions.
EVIDENCE_PROTOCOLS = ("positives_only", "all_queries")
#: Decision rules (contract §8): ``p ≥ τ``, screen-in (state ≠ NEG), alert (state = POS).
DECISION_RULES = ("threshold", "screen_in", "alert")

# Triage files (seed 004): column names tried, in order, when the config does not name the
# column (re-exported by :mod:`metrics_core.triage`; the command line's help lists them).
LABEL_ALIASES = ("label", "ground_truth", "gold", "gold_label", "true_label", "y_true", "truth")
PREDICTION_ALIASES = ("prediction", "verdict", "predicted", "predicted_label", "pred", "y_pred",
                      "decision")
CONFIDENCE_ALIASES = ("confidence", "conf")
TRIAL_ALIASES = ("trial", "trial_id", "run", "repeat")
