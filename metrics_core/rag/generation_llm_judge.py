"""LLM-judged faithfulness and answer quality (seed 002 §4.4.2, §5, §8; contract §12).

:class:`LLMCritic` is the abstract judge; :class:`OpenAICompatibleCritic` calls any
OpenAI-compatible ``/chat/completions`` endpoint with ``temperature = 0`` and a fixed ``seed``,
a timeout per request, and retries with exponential backoff on connection errors, timeouts,
HTTP 429 and 5xx. The first number in the reply is the score; a reply without one, or with one
outside the scale, is a :class:`CriticError`. The metrics normalise ``"1-5"`` scores to [0, 1].
Without a critic the LLM metrics are skipped with a note (``details["skipped_reason"]``).
"""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
from abc import ABC, abstractmethod
from types import MappingProxyType
from typing import Any

import numpy as np

from metrics_core.rag.base import Metric, check_lengths, mean_result
from metrics_core.rag.types import MetricResult, TargetCategory

__all__ = ["NO_CRITIC", "CriticError", "LLMAnswerQuality", "LLMCritic", "LLMFaithfulnessScore",
           "OpenAICompatibleCritic", "normalise_score", "parse_score"]

#: The note of an LLM metric skipped because no critic is configured.
NO_CRITIC = ("skipped: no LLM critic configured (pass critic=..., or --critic-url URL on the "
             "command line)")
_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
_SCALES = MappingProxyType({"0-1": (0.0, 1.0), "1-5": (1.0, 5.0)})


class CriticError(RuntimeError):
    """The critic gave no usable score (no reply after the retries, or no number in it)."""


class LLMCritic(ABC):
    """A judge that returns a numeric score for a prompt (seed 002 §8)."""

    @abstractmethod
    def score(self, *, prompt: str, metadata: dict[str, Any] | None = None) -> float:
        """A score for the prompt, typically in [0, 1] or [1, 5]."""


def parse_score(text: str, *, scale: str = "0-1") -> float:
    """The first number of a reply, checked against the scale and normalised to [0, 1].

    >>> parse_score("Score: 4 (mostly supported)", scale="1-5")
    0.75
    >>> parse_score("0.8")
    0.8
    """
    lo, hi = _SCALES[scale]
    match = _NUMBER.search(text or "")
    if match is None:
        raise CriticError(f"the critic's reply holds no score (expected a number in "
                          f"[{lo:g}, {hi:g}]): {(text or '')[:200]!r}")
    return normalise_score(float(match.group()), scale=scale)


def normalise_score(value: float, *, scale: str = "0-1") -> float:
    """A raw score checked against its scale and mapped to [0, 1].

    >>> normalise_score(5, scale="1-5")
    1.0
    """
    lo, hi = _SCALES[scale]
    if not (np.isfinite(value) and lo <= value <= hi):
        raise CriticError(f"the critic's score {value:g} is outside the scale [{lo:g}, {hi:g}]")
    return (value - lo) / (hi - lo)


class OpenAICompatibleCritic(LLMCritic):
    """A critic behind an OpenAI-compatible chat-completions endpoint.

    Parameters
    ----------
    base_url : str
        E.g. ``http://127.0.0.1:8000/v1``; ``/chat/completions`` is appended.
    model : str
        Model name sent in the request.
    api_key : str, optional
        Sent as ``Authorization: Bearer``.
    timeout : float
        Seconds per request.
    max_retries : int
        Retries after the first attempt (connection error, timeout, HTTP 429 or 5xx).
    backoff : float
        First wait in seconds; doubled after every retry.
    seed : int
        Sent with ``temperature = 0`` so that the judge is as deterministic as the server allows.

    ``score`` returns the reply's raw number (the metric normalises it to its scale).
    """

    def __init__(self, base_url: str, *, model: str = "judge", api_key: str | None = None,
                 timeout: float = 30.0, max_retries: int = 3, backoff: float = 0.5,
                 seed: int = 0, sleep=time.sleep) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"critic url must start with http:// or https://, got {base_url!r}")
        if max_retries < 0 or timeout <= 0 or backoff < 0:
            raise ValueError("timeout must be > 0, max_retries and backoff >= 0")
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model, self.api_key, self.timeout = model, api_key, timeout
        self.max_retries, self.backoff, self.seed = max_retries, backoff, seed
        self._sleep = sleep

    def request_body(self, prompt: str) -> dict:
        return {"model": self.model, "temperature": 0, "seed": self.seed,
                "messages": [{"role": "user", "content": prompt}]}

    def complete(self, prompt: str) -> str:
        """The reply text, after up to ``max_retries`` retries with exponential backoff."""
        data = json.dumps(self.request_body(prompt)).encode()
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        last = "no attempt"
        for attempt in range(self.max_retries + 1):
            if attempt:
                self._sleep(self.backoff * 2 ** (attempt - 1))
            request = urllib.request.Request(self.url, data=data, headers=headers,
                                             method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as response:
                    payload = json.loads(response.read().decode("utf-8"))
            except urllib.error.HTTPError as err:
                last = f"HTTP {err.code}"
                if err.code == 429 or err.code >= 500:
                    continue
                raise CriticError(f"the critic at {self.url} refused the request: "
                                  f"{last}") from None
            except (urllib.error.URLError, TimeoutError, ConnectionError) as err:
                last = f"{type(err).__name__}: {getattr(err, 'reason', err)}"
                continue
            except ValueError:
                raise CriticError(f"the critic at {self.url} did not reply with JSON") from None
            try:
                return str(payload["choices"][0]["message"]["content"])
            except (KeyError, IndexError, TypeError):
                raise CriticError(f"the critic's reply has no choices[0].message.content: "
                                  f"{str(payload)[:200]}") from None
        raise CriticError(f"the critic at {self.url} gave no reply after "
                          f"{self.max_retries + 1} attempts ({last})")

    def score(self, *, prompt: str, metadata: dict[str, Any] | None = None) -> float:
        reply = self.complete(prompt)
        match = _NUMBER.search(reply)
        if match is None:
            raise CriticError(f"the critic's reply holds no score (expected a number): "
                              f"{reply[:200]!r}")
        return float(match.group())


class _LLMMetric(Metric):
    def __init__(self, critic: LLMCritic | None = None, *, scale: str = "0-1") -> None:
        if scale not in _SCALES:
            raise ValueError(f"scale must be one of {tuple(_SCALES)}, got {scale!r}")
        self.critic, self.scale = critic, scale

    def _prompt(self, sample, output) -> str | None:
        raise NotImplementedError

    def compute(self, samples, outputs):
        n = check_lengths(samples, outputs)
        if self.critic is None:
            return MetricResult(self.name, self.target, 0.0,
                                {"num_samples": 0, "num_skipped": n,
                                 "skipped_reason": NO_CRITIC}, per_sample=np.full(n, np.nan))
        values = np.full(n, np.nan)
        for i, (s, o) in enumerate(zip(samples, outputs, strict=True)):
            prompt = self._prompt(s, o)
            if prompt is not None:
                raw = self.critic.score(prompt=prompt, metadata={"sample_id": s.sample_id,
                                                                 "metric": self.name})
                values[i] = normalise_score(float(raw), scale=self.scale)
        return mean_result(self.name, self.target, values, scale=self.scale)


class LLMFaithfulnessScore(_LLMMetric):
    """How far the answer is supported by the evidence, judged by the critic (§4.4.2).

    Evidence: the retrieved documents (default) or the relevant ones; a sample without
    evidence is skipped.
    """

    name = "llm_faithfulness"
    target = TargetCategory.GENERATION_FAITHFULNESS

    def __init__(self, critic: LLMCritic | None = None, *, evidence_source: str = "retrieved",
                 scale: str = "0-1") -> None:
        super().__init__(critic, scale=scale)
        if evidence_source not in ("retrieved", "relevant"):
            raise ValueError(f"evidence_source must be 'retrieved' or 'relevant', "
                             f"got {evidence_source!r}")
        self.evidence_source = evidence_source

    def required_fields(self) -> list[str]:
        return ["query", "response",
                "retrieved" if self.evidence_source == "retrieved" else "relevant_docs"]

    def _prompt(self, sample, output):
        if self.evidence_source == "retrieved":
            texts = [r.doc.text for r in sorted(output.retrieved, key=lambda r: r.rank)]
        else:
            texts = [d.text for d in sample.relevant_docs or ()]
        if not texts:
            return None
        lo, hi = _SCALES[self.scale]
        evidence = "\n".join(f"[{i}] {t}" for i, t in enumerate(texts, 1))
        return (f"Rate how faithful the answer is to the evidence: {lo:g} = not supported at "
                f"all, {hi:g} = fully supported. Reply with the number only.\n\n"
                f"Question: {sample.query}\n\nAnswer: {output.response}\n\n"
                f"Evidence:\n{evidence}")


class LLMAnswerQuality(_LLMMetric):
    """How well the answer addresses the query, judged by the critic (seed 002 §5, single
    score variant)."""

    name = "llm_answer_quality"
    target = TargetCategory.GENERATION_RELEVANCE

    def required_fields(self) -> list[str]:
        return ["query", "response"]

    def _prompt(self, sample, output):
        lo, hi = _SCALES[self.scale]
        return (f"Rate how well the answer addresses the question (relevance, helpfulness, "
                f"clarity): {lo:g} = not at all, {hi:g} = perfectly. Reply with the number "
                f"only.\n\nQuestion: {sample.query}\n\nAnswer: {output.response}")
