"""LLM-judged faithfulness and answer quality (seed 002 §4.4.2, §5, §8; contract §12).

:class:`LLMCritic` is the abstract judge; :class:`OpenAICompatibleCritic` calls any
OpenAI-compatible ``/chat/completions`` endpoint with ``temperature = 0`` and a fixed ``seed``.
Every request is bounded: one deadline for the whole of it (connect, send, headers and the
whole reply; a server that sends a byte now and then is cut off at the deadline, not kept by a
per-read timeout) and a reply size cap (read in chunks, refused past the cap or when the
announced length is above it). Connection errors, a passed deadline, HTTP 429 and 5xx are
retried with exponential backoff.

Two kinds of failure:

- :class:`CriticUnavailable`: no usable reply (unreachable, deadline passed after the retries,
  reply too large, HTTP error, not the chat-completions JSON). The LLM metrics are then
  *skipped* with the reason in ``details["skipped_reason"]`` (``details["critic_error"]``
  holds the reason alone), as without a critic; the critic remembers the failure, so the next
  metric does not wait for it again.
- :class:`CriticError` (the base class): the reply came but holds no score, or one outside the
  scale: an error (a mean over the samples that happened to get a number would be biased).

The first number in the reply is the score. The metrics normalise ``"1-5"`` scores to [0, 1].
Without a critic the LLM metrics are skipped with a note (:data:`NO_CRITIC`).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import math
import re
import socket
import ssl
import threading
import time
import urllib.parse
from abc import ABC, abstractmethod
from types import MappingProxyType
from typing import Any

import numpy as np

from metrics_core.rag.base import Metric, check_lengths, mean_result
from metrics_core.rag.data_model import MetricResult, TargetCategory

__all__ = ["MAX_REPLY_BYTES", "MAX_TIMEOUT", "NO_CRITIC", "CriticError", "CriticUnavailable",
           "LLMAnswerQuality", "LLMCritic", "LLMFaithfulnessScore", "OpenAICompatibleCritic",
           "normalise_score", "parse_score"]

#: The note of an LLM metric skipped because no critic is configured.
NO_CRITIC = ("skipped: no LLM critic configured (pass critic=..., or --critic-url URL on the "
             "command line)")
_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
_SCALES = MappingProxyType({"0-1": (0.0, 1.0), "1-5": (1.0, 5.0)})
#: Largest critic reply read by default (bytes); a chat-completions reply holding a score is a
#: few hundred bytes.
MAX_REPLY_BYTES = 1024 * 1024
#: Largest deadline per request (seconds) and largest reply cap (bytes) accepted.
MAX_TIMEOUT = 3600.0
_MAX_REPLY_CAP = 1024 * 1024 * 1024
_MAX_RETRIES = 10
_CHUNK = 64 * 1024


class CriticError(RuntimeError):
    """The critic gave no usable score: its reply holds no number, or one outside the scale
    (and, as the subclass :class:`CriticUnavailable`, no usable reply at all)."""


class CriticUnavailable(CriticError):
    """No usable reply from the critic: unreachable, the deadline passed (after the retries),
    the reply too large, an HTTP error, or not the chat-completions JSON. The LLM metrics are
    skipped with this reason."""


class _Retry(Exception):
    """A failure of one request worth another attempt (its text is the reason)."""


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
        E.g. ``http://127.0.0.1:8000/v1``; ``/chat/completions`` is appended. Called directly
        (no proxy from the environment).
    model : str
        Model name sent in the request.
    api_key : str, optional
        Sent as ``Authorization: Bearer``.
    timeout : float
        Deadline of one request in seconds, in (0, :data:`MAX_TIMEOUT`]: connect, send and the
        whole reply, however the server paces it.
    max_bytes : int
        Largest reply read (bytes, default :data:`MAX_REPLY_BYTES`); a longer one (or one
        announcing a longer ``Content-Length``) is refused without reading it.
    max_retries : int
        Retries after the first attempt (connection error, deadline passed, HTTP 429 or 5xx).
    backoff : float
        First wait in seconds; doubled after every retry.
    seed : int
        Sent with ``temperature = 0`` so that the judge is as deterministic as the server allows.

    ``score`` returns the reply's raw number (the metric normalises it to its scale). After a
    :class:`CriticUnavailable` every later call raises the same error at once.
    """

    def __init__(self, base_url: str, *, model: str = "judge", api_key: str | None = None,
                 timeout: float = 30.0, max_bytes: int = MAX_REPLY_BYTES, max_retries: int = 3,
                 backoff: float = 0.5, seed: int = 0, sleep=time.sleep) -> None:
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise ValueError(f"critic url must start with http:// or https://, got {base_url!r}")
        parts = urllib.parse.urlsplit(base_url)
        try:
            parts.port  # noqa: B018 (raises on a port that is not a number)
        except ValueError:
            raise ValueError(f"critic url has no valid port: {base_url!r}") from None
        if not parts.hostname:
            raise ValueError(f"critic url has no host: {base_url!r}")
        if not (_real(timeout) and 0 < timeout <= MAX_TIMEOUT):
            raise ValueError(f"critic timeout must be a number of seconds in (0, "
                             f"{MAX_TIMEOUT:g}], got {timeout!r}")
        if not (_whole(max_bytes) and 1 <= max_bytes <= _MAX_REPLY_CAP):
            raise ValueError(f"critic max_bytes must be an integer in [1, {_MAX_REPLY_CAP}], "
                             f"got {max_bytes!r}")
        if not (_whole(max_retries) and 0 <= max_retries <= _MAX_RETRIES):
            raise ValueError(f"critic max_retries must be an integer in [0, {_MAX_RETRIES}], "
                             f"got {max_retries!r}")
        if not (_real(backoff) and 0 <= backoff <= MAX_TIMEOUT):
            raise ValueError(f"critic backoff must be a number of seconds in [0, "
                             f"{MAX_TIMEOUT:g}], got {backoff!r}")
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model, self.api_key, self.timeout = model, api_key, float(timeout)
        self.max_bytes = int(max_bytes)
        self.max_retries, self.backoff, self.seed = int(max_retries), float(backoff), seed
        self._sleep = sleep
        self._unavailable: str | None = None

    def request_body(self, prompt: str) -> dict:
        return {"model": self.model, "temperature": 0, "seed": self.seed,
                "messages": [{"role": "user", "content": prompt}]}

    def complete(self, prompt: str) -> str:
        """The reply text, after up to ``max_retries`` retries with exponential backoff."""
        if self._unavailable is not None:
            raise CriticUnavailable(self._unavailable)
        try:
            return self._complete(prompt)
        except CriticUnavailable as err:
            self._unavailable = str(err)
            raise

    def _complete(self, prompt: str) -> str:
        data = json.dumps(self.request_body(prompt)).encode()
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        last = "no attempt"
        for attempt in range(self.max_retries + 1):
            if attempt:
                self._sleep(self.backoff * 2 ** (attempt - 1))
            try:
                status, body = self._post(data, headers)
            except _Retry as err:
                last = str(err)
                continue
            if status == 429 or status >= 500:
                last = f"HTTP {status}"
                continue
            if status != 200:
                raise CriticUnavailable(f"the critic at {self.url} refused the request: "
                                        f"HTTP {status}")
            try:
                payload = json.loads(body.decode("utf-8"))
            except (UnicodeDecodeError, RecursionError, ValueError):
                raise CriticUnavailable(f"the critic at {self.url} did not reply with JSON: "
                                        f"{body[:80]!r}") from None
            try:
                return str(payload["choices"][0]["message"]["content"])
            except (KeyError, IndexError, TypeError):
                raise CriticUnavailable(f"the critic's reply has no "
                                        f"choices[0].message.content: "
                                        f"{str(payload)[:200]!r}") from None
        attempts = self.max_retries + 1
        raise CriticUnavailable(f"the critic at {self.url} gave no reply after {attempts} "
                                f"attempt{'s' if attempts > 1 else ''} ({last})")

    def _post(self, data: bytes, headers: dict) -> tuple[int, bytes]:
        """One request under one deadline: ``(status, body)``.

        A timer shuts the connection down at the deadline, whatever the request is waiting for
        (the TLS handshake, the headers, the next byte of the body): it holds a duplicate of
        the socket's descriptor, which shuts down the same connection even after
        ``http.client`` or the TLS layer let go of their own handle. Raises :class:`_Retry` on
        a connection error or a passed deadline, :class:`CriticUnavailable` on a reply larger
        than ``max_bytes``.
        """
        parts = urllib.parse.urlsplit(self.url)
        https = parts.scheme == "https"
        port = parts.port or (443 if https else 80)
        path = parts.path + (f"?{parts.query}" if parts.query else "")
        expired = threading.Event()
        guard: list[socket.socket] = []

        def cut() -> None:
            expired.set()
            for sock in guard:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

        timer = threading.Timer(self.timeout, cut)
        timer.daemon = True
        timer.start()
        conn = response = None
        try:
            raw = socket.create_connection((parts.hostname, port), timeout=self.timeout)
            try:
                guard.append(raw.dup())
                if expired.is_set():  # the deadline passed while connecting
                    raise TimeoutError
                kind = http.client.HTTPSConnection if https else http.client.HTTPConnection
                conn = kind(parts.hostname, port, timeout=self.timeout)
                conn.sock = (ssl.create_default_context().wrap_socket(
                    raw, server_hostname=parts.hostname) if https else raw)
            except BaseException:
                raw.close()
                raise
            conn.request("POST", path or "/", body=data, headers=headers)
            response = conn.getresponse()
            if response.status != 200:
                return response.status, b""
            announced = response.getheader("Content-Length", "")
            if announced.strip().isdigit() and int(announced) > self.max_bytes:
                raise CriticUnavailable(f"the critic at {self.url} announced a reply of "
                                        f"{int(announced):,} bytes, more than the limit of "
                                        f"{self.max_bytes:,} bytes (--critic-max-bytes)")
            chunks, size = [], 0
            while True:
                chunk = response.read1(_CHUNK)
                if not chunk:
                    break
                size += len(chunk)
                if size > self.max_bytes:
                    raise CriticUnavailable(f"the critic at {self.url} sent a reply of more "
                                            f"than {self.max_bytes:,} bytes "
                                            f"(--critic-max-bytes)")
                chunks.append(chunk)
            if expired.is_set():
                raise TimeoutError
            return 200, b"".join(chunks)
        except CriticUnavailable:
            raise
        except (OSError, http.client.HTTPException, ValueError) as err:
            if expired.is_set() or isinstance(err, TimeoutError):
                raise _Retry(f"no complete reply within the deadline of {self.timeout:g} s "
                             f"(--critic-timeout)") from None
            reason = getattr(err, "strerror", None) or str(err) or type(err).__name__
            raise _Retry(f"{type(err).__name__}: {reason}") from None
        finally:
            timer.cancel()
            if response is not None:  # its file keeps the socket open until closed
                response.close()
            if conn is not None:
                conn.close()
            for sock in guard:
                sock.close()

    def score(self, *, prompt: str, metadata: dict[str, Any] | None = None) -> float:
        reply = self.complete(prompt)
        match = _NUMBER.search(reply)
        if match is None:
            raise CriticError(f"the critic's reply holds no score (expected a number): "
                              f"{reply[:200]!r}")
        return float(match.group())


def _real(value) -> bool:
    return (isinstance(value, int | float) and not isinstance(value, bool)
            and math.isfinite(value))


def _whole(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class _LLMMetric(Metric):
    def __init__(self, critic: LLMCritic | None = None, *, scale: str = "0-1") -> None:
        if scale not in _SCALES:
            raise ValueError(f"scale must be one of {tuple(_SCALES)}, got {scale!r}")
        self.critic, self.scale = critic, scale

    @abstractmethod
    def _prompt(self, sample, output) -> str | None:
        """The critic's prompt for one sample (None: the sample is not evaluated)."""

    def compute(self, samples, outputs):
        n = check_lengths(samples, outputs)
        # A skipped metric is undefined (value nan: ``null`` in its record), never 0.
        if self.critic is None:
            return MetricResult(self.name, self.target, math.nan,
                                {"num_samples": 0, "num_skipped": n,
                                 "skipped_reason": NO_CRITIC}, per_sample=np.full(n, np.nan))
        values = np.full(n, np.nan)
        try:
            for i, (s, o) in enumerate(zip(samples, outputs, strict=True)):
                prompt = self._prompt(s, o)
                if prompt is not None:
                    raw = self.critic.score(prompt=prompt, metadata={"sample_id": s.sample_id,
                                                                     "metric": self.name})
                    values[i] = normalise_score(float(raw), scale=self.scale)
        except CriticUnavailable as err:
            # The whole metric is skipped (a mean over the samples scored before the critic
            # failed would not be the metric of the file).
            return MetricResult(self.name, self.target, math.nan,
                                {"num_samples": 0, "num_skipped": n,
                                 "skipped_reason": f"skipped: {err}", "critic_error": str(err),
                                 "scale": self.scale}, per_sample=np.full(n, np.nan))
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
