"""Overlap metrics of the response: exact match, token F1, ROUGE-1/2/L, BLEU and evidence
overlap faithfulness (seed 002 §4.1, §4.2, §4.4.1; contract §12).

Reference-based metrics skip samples whose ``reference_answer`` is ``None`` or blank; an empty
response is evaluated (it scores 0). ROUGE uses ``rouge-score`` (F-measure, Porter stemmer on)
and BLEU ``sacrebleu`` (corpus level, reported on a 0-1 scale: sacrebleu's score / 100); both
are the optional extra ``metrics-core[rag]``.

>>> from metrics_core.rag.data_model import EvaluationSample, SystemOutputs
>>> s = [EvaluationSample("1", "?", reference_answer="The Eiffel Tower"),
...      EvaluationSample("2", "?", reference_answer=None)]
>>> o = [SystemOutputs(response="eiffel tower."), SystemOutputs(response="x")]
>>> r = ExactMatch().compute(s, o)
>>> r.value, r.details["num_samples"], r.details["num_skipped"]
(1.0, 1, 1)
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence

import numpy as np

from metrics_core.rag.base import Metric, check_lengths, mean_result
from metrics_core.rag.data_model import MetricResult, TargetCategory
from metrics_core.rag.text import ngrams, normalize, tokens

__all__ = [
    "BleuScore",
    "EvidenceOverlapFaithfulness",
    "ExactMatch",
    "Rouge1",
    "Rouge2",
    "RougeL",
    "RougeScores",
    "TokenF1",
    "token_f1",
]

_RAG_EXTRA = ("./dev test installs it, or in the project's environment: "
              'python -m pip install -e ".[rag]"')


def _require(module: str, package: str):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise ImportError(f"{package} is needed for this metric and is not installed; "
                          f"it is in the optional extra rag: {_RAG_EXTRA}") from None


def _has_reference(sample) -> bool:
    return sample.reference_answer is not None and sample.reference_answer.strip() != ""


def _compare_text(sample, compare_to: str) -> str | None:
    if compare_to == "query":
        return sample.query
    return sample.reference_answer if _has_reference(sample) else None


def _check_compare_to(value: str) -> str:
    if value not in ("reference", "query"):
        raise ValueError(f"compare_to must be 'reference' or 'query', got {value!r}")
    return value


def token_f1(prediction: str, reference: str, **options) -> float:
    """Token-level F1 of two texts after normalisation (seed 002 §4.1.2).

    >>> token_f1("the cat sat on the mat", "a cat sat")
    0.6666666666666666
    """
    pred, ref = tokens(prediction, **options), tokens(reference, **options)
    common = sum((ngrams(pred, 1) & ngrams(ref, 1)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


class _Normalised(Metric):
    target = TargetCategory.GENERATION_CORRECTNESS

    def __init__(self, *, ignore_case: bool = True, ignore_punctuation: bool = True,
                 ignore_articles: bool = True) -> None:
        self.options = {"ignore_case": ignore_case, "ignore_punctuation": ignore_punctuation,
                        "ignore_articles": ignore_articles}

    def required_fields(self) -> list[str]:
        return ["reference_answer", "response"]

    @abstractmethod
    def _score(self, prediction: str, reference: str) -> float:
        """The score of one response against its reference."""

    def compute(self, samples, outputs):
        check_lengths(samples, outputs)
        values = np.array([self._score(o.response, s.reference_answer) if _has_reference(s)
                           else np.nan for s, o in zip(samples, outputs, strict=True)])
        return mean_result(self.name, self.target, values)

    def similarities(self, predictions: Sequence[str], references: Sequence[str]) -> np.ndarray:
        """The per-pair score of two aligned lists of texts."""
        return np.array([self._score(p, r) for p, r in zip(predictions, references,
                                                            strict=True)])


class ExactMatch(_Normalised):
    """1 if the normalised response equals the normalised reference (seed 002 §4.1.1)."""

    name = "exact_match"

    def _score(self, prediction, reference):
        return float(normalize(prediction, **self.options) == normalize(reference,
                                                                           **self.options))


class TokenF1(_Normalised):
    """Token-level F1 after normalisation, mean over samples with a reference (§4.1.2)."""

    name = "token_f1"

    def _score(self, prediction, reference):
        return token_f1(prediction, reference, **self.options)


class RougeScores(Metric):
    """ROUGE F-measure of one variant with ``rouge-score`` (seed 002 §4.2.1), mean over samples
    with a reference (``compare_to="reference"``) or over all samples (``"query"``, then the
    target is GENERATION_RELEVANCE)."""

    def __init__(self, variant: str = "rougeL", *, use_stemmer: bool = True,
                 compare_to: str = "reference") -> None:
        if variant not in ("rouge1", "rouge2", "rougeL"):
            raise ValueError(f"variant must be rouge1, rouge2 or rougeL, got {variant!r}")
        self.variant = variant
        self.use_stemmer = use_stemmer
        self.compare_to = _check_compare_to(compare_to)
        self.name = f"{variant}_{'answer' if compare_to == 'reference' else 'query'}"
        self.target = (TargetCategory.GENERATION_CORRECTNESS if compare_to == "reference"
                       else TargetCategory.GENERATION_RELEVANCE)

    def required_fields(self) -> list[str]:
        return ["reference_answer" if self.compare_to == "reference" else "query", "response"]

    def compute(self, samples, outputs):
        check_lengths(samples, outputs)
        rouge = _require("rouge_score.rouge_scorer", "rouge-score")
        scorer = rouge.RougeScorer([self.variant], use_stemmer=self.use_stemmer)
        values = np.full(len(samples), np.nan)
        for i, (s, o) in enumerate(zip(samples, outputs, strict=True)):
            target = _compare_text(s, self.compare_to)
            if target is not None:
                values[i] = scorer.score(target, o.response)[self.variant].fmeasure
        return mean_result(self.name, self.target, values, use_stemmer=self.use_stemmer)


class Rouge1(RougeScores):
    """``rouge1_answer`` (seed 002 §4.2.1)."""

    def __init__(self, **options) -> None:
        super().__init__("rouge1", **options)


class Rouge2(RougeScores):
    """``rouge2_answer`` (seed 002 §4.2.1)."""

    def __init__(self, **options) -> None:
        super().__init__("rouge2", **options)


class RougeL(RougeScores):
    """``rougeL_answer`` (seed 002 §4.2.1)."""

    def __init__(self, **options) -> None:
        super().__init__("rougeL", **options)


class BleuScore(Metric):
    """Corpus BLEU of the responses against their references with ``sacrebleu`` (seed 002
    §4.2.2), on a 0-1 scale; samples without a reference are skipped.

    ``details`` holds sacrebleu's n-gram precisions, brevity penalty and lengths.
    """

    name = "bleu"
    target = TargetCategory.GENERATION_CORRECTNESS

    def __init__(self, *, max_order: int = 4, smooth_method: str = "exp") -> None:
        self.max_order = max_order
        self.smooth_method = smooth_method

    def required_fields(self) -> list[str]:
        return ["reference_answer", "response"]

    def compute(self, samples, outputs):
        n = check_lengths(samples, outputs)
        keep = [i for i, s in enumerate(samples) if _has_reference(s)]
        if not keep:
            return MetricResult(self.name, self.target, 0.0,
                                {"num_samples": 0, "num_skipped": n})
        sacrebleu = _require("sacrebleu", "sacrebleu")
        bleu = sacrebleu.metrics.BLEU(max_ngram_order=self.max_order,
                                      smooth_method=self.smooth_method)
        hyps = [outputs[i].response for i in keep]
        refs = [samples[i].reference_answer for i in keep]
        score = bleu.corpus_score(hyps, [refs])
        resampled = None
        if self.smooth_method in ("exp", "none"):
            # Per-sample n-gram statistics for the bootstrap. They do not depend on
            # effective_order (which only changes a sentence's own score, unused here);
            # sacrebleu recommends it for sentence_score and warns on every call without it.
            # The corpus score above keeps sacrebleu's standard (effective_order off).
            counter = sacrebleu.metrics.BLEU(max_ngram_order=self.max_order,
                                             smooth_method=self.smooth_method,
                                             effective_order=True)
            stats = np.zeros((n, 2 * self.max_order + 3))
            for i, h, r in zip(keep, hyps, refs, strict=True):
                s = counter.sentence_score(h, [r])
                stats[i] = [*s.counts, *s.totals, s.sys_len, s.ref_len, 1.0]
            resampled = _bleu_of_weights(stats, self.max_order, self.smooth_method)
        return MetricResult(self.name, self.target, score.score / 100.0, {
            "num_samples": len(keep), "num_skipped": n - len(keep),
            "precisions": [p / 100.0 for p in score.precisions], "bp": score.bp,
            "sys_len": score.sys_len, "ref_len": score.ref_len,
            "smooth_method": self.smooth_method, "max_order": self.max_order},
            resampled=resampled)


def _bleu_of_weights(stats: np.ndarray, order: int, smooth_method: str):
    """Corpus BLEU (0-1) of weighted samples from their n-gram statistics (columns: matches
    per order, totals per order, hypothesis length, reference length, evaluated flag): the
    formula of ``sacrebleu.metrics.BLEU.compute_bleu`` for ``exp`` / ``none`` smoothing,
    vectorised over the rows of a weight matrix; ``nan`` where no evaluated sample is drawn."""

    def statistic(weights: np.ndarray) -> np.ndarray:
        summed = weights @ stats
        correct, total = summed[:, :order], summed[:, order:2 * order]
        sys_len, ref_len, used = summed[:, -3], summed[:, -2], summed[:, -1]
        with np.errstate(divide="ignore", invalid="ignore"):
            bp = np.where(sys_len < ref_len,
                          np.where(sys_len > 0, np.exp(1 - ref_len / sys_len), 0.0), 1.0)
            active = np.cumprod(total > 0, axis=1).astype(bool)  # orders before a zero total
            zero = (correct == 0) & active
            if smooth_method == "exp":
                smoothed = 1.0 / (np.exp2(np.cumsum(zero, axis=1)) * total)
            else:
                smoothed = np.zeros_like(total)
            precision = np.where(active, np.where(correct > 0, correct / total, smoothed), 0.0)
            log_mean = np.where(precision > 0, np.log(np.where(precision > 0, precision, 1.0)),
                                -np.inf).mean(axis=1)
            score = bp * np.exp(log_mean)
        score = np.where(correct.sum(axis=1) > 0, score, 0.0)
        return np.where(used > 0, score, np.nan)

    return statistic


class EvidenceOverlapFaithfulness(Metric):
    """Share of the response's n-grams found in the evidence (seed 002 §4.4.1).

    Evidence: the text of the top ``top_k`` retrieved documents (all with ``None``), or of the
    relevant documents (``evidence_source="relevant"``, samples without any are skipped).
    Tokens are normalised as for exact match. A response with no n-gram scores 0 (nothing in
    it is supported), as for token F1.
    """

    name = "evidence_overlap_faithfulness"
    target = TargetCategory.GENERATION_FAITHFULNESS

    def __init__(self, *, evidence_source: str = "retrieved", n: int = 1,
                 top_k: int | None = None) -> None:
        if evidence_source not in ("retrieved", "relevant"):
            raise ValueError(f"evidence_source must be 'retrieved' or 'relevant', "
                             f"got {evidence_source!r}")
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ValueError(f"n must be an integer >= 1, got {n!r}")
        self.evidence_source, self.n, self.top_k = evidence_source, n, top_k

    def required_fields(self) -> list[str]:
        return ["retrieved" if self.evidence_source == "retrieved" else "relevant_docs",
                "response"]

    def compute(self, samples, outputs):
        check_lengths(samples, outputs)
        values = np.full(len(samples), np.nan)
        for i, (s, o) in enumerate(zip(samples, outputs, strict=True)):
            if self.evidence_source == "relevant":
                if not s.relevant_docs:
                    continue
                texts = [d.text for d in s.relevant_docs]
            else:
                ranked = sorted(o.retrieved, key=lambda r: r.rank)[:self.top_k]
                texts = [r.doc.text for r in ranked]
            pred = ngrams(tokens(o.response), self.n)
            evidence = set()
            for text in texts:
                evidence.update(ngrams(tokens(text), self.n))
            total = sum(pred.values())
            values[i] = (sum(c for g, c in pred.items() if g in evidence) / total
                         if total else 0.0)
        return mean_result(self.name, self.target, values, evidence_source=self.evidence_source,
                           n=self.n)
