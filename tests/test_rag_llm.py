"""The LLM critic (seed 002 §4.4.2, §5, §8) against a fake OpenAI-compatible server on
127.0.0.1: temperature 0 and a seed, timeouts, retries with backoff, a clear error when the
reply holds no score, scale normalisation, and the skip note without a critic."""

from __future__ import annotations

import math

import pytest

from metrics_core.rag.data_model import TargetCategory
from metrics_core.rag.generation_llm_judge import (
    NO_CRITIC,
    CriticError,
    CriticUnavailable,
    LLMAnswerQuality,
    LLMCritic,
    LLMFaithfulnessScore,
    OpenAICompatibleCritic,
    parse_score,
)
from tests.fake_llm_server import fake_llm
from tests.rag_helpers import sample, split

SAMPLES, OUTPUTS = split([
    sample("1", relevant=("a",), retrieved=("a", "b"), response="answer one", query="q1?"),
    sample("2", relevant=("c",), retrieved=("c",), response="answer two", query="q2?"),
    sample("3", relevant=(), retrieved=(), response="answer three", query="q3?"),
])


def test_requests_are_deterministic_and_scores_are_averaged():
    with fake_llm(["0.9", "Score: 0.5", "1"]) as (url, requests):
        critic = OpenAICompatibleCritic(url, model="judge-1", seed=7)
        r = LLMFaithfulnessScore(critic).compute(SAMPLES, OUTPUTS)
    # Sample 3 retrieved nothing: no evidence, skipped; the server saw two requests.
    assert r.value == pytest.approx((0.9 + 0.5) / 2)
    assert r.details["num_samples"] == 2 and r.details["num_skipped"] == 1
    assert r.target is TargetCategory.GENERATION_FAITHFULNESS
    assert len(requests) == 2
    for req in requests:
        assert req["path"] == "/v1/chat/completions"
        assert req["body"]["temperature"] == 0
        assert req["body"]["seed"] == 7
        assert req["body"]["model"] == "judge-1"
    prompt = requests[0]["body"]["messages"][0]["content"]
    assert "q1?" in prompt and "answer one" in prompt and "text of a" in prompt


def test_answer_quality_on_a_one_to_five_scale_is_normalised():
    with fake_llm(["5", "3", "1"]) as (url, _):
        r = LLMAnswerQuality(OpenAICompatibleCritic(url), scale="1-5").compute(SAMPLES,
                                                                               OUTPUTS)
    assert list(r.per_sample) == pytest.approx([1.0, 0.5, 0.0])
    assert r.name == "llm_answer_quality" and r.target is TargetCategory.GENERATION_RELEVANCE


def test_retries_with_exponential_backoff_then_succeeds():
    waits = []
    with fake_llm([503, 429, "0.25"]) as (url, requests):
        critic = OpenAICompatibleCritic(url, max_retries=3, backoff=0.5, sleep=waits.append)
        assert critic.score(prompt="p") == 0.25
    assert waits == [0.5, 1.0]
    assert len(requests) == 3


def test_gives_up_after_the_retries_with_a_clear_error():
    waits = []
    with fake_llm([500]) as (url, requests):
        critic = OpenAICompatibleCritic(url, max_retries=2, backoff=0.1, sleep=waits.append)
        with pytest.raises(CriticError, match=r"no reply after 3 attempts \(HTTP 500\)"):
            critic.score(prompt="p")
    assert waits == [0.1, 0.2] and len(requests) == 3


def test_a_client_error_is_not_retried():
    with fake_llm([401]) as (url, requests), pytest.raises(
            CriticError, match="refused the request: HTTP 401"):
        OpenAICompatibleCritic(url, sleep=lambda s: None).score(prompt="p")
    assert len(requests) == 1


def test_a_slow_server_times_out_and_is_retried():
    # The late reply comes long after the timeout, and the timeout leaves a loaded machine a
    # second to answer the retry.
    with fake_llm([("sleep", 6.0, "0.1"), "0.7"]) as (url, requests):
        critic = OpenAICompatibleCritic(url, timeout=1.0, max_retries=1,
                                        sleep=lambda s: None)
        assert critic.score(prompt="p") == 0.7
    assert len(requests) == 2


def test_a_reply_without_a_score_is_a_clear_error():
    with fake_llm(["I cannot rate this."]) as (url, _):
        critic = OpenAICompatibleCritic(url)
        with pytest.raises(CriticError, match=r"holds no score.*I cannot rate this"):
            LLMAnswerQuality(critic).compute(SAMPLES, OUTPUTS)


def test_a_score_outside_the_scale_is_an_error():
    with fake_llm(["7"]) as (url, _), pytest.raises(CriticError,
                                                     match=r"outside the scale \[0, 1\]"):
        LLMAnswerQuality(OpenAICompatibleCritic(url)).compute(SAMPLES, OUTPUTS)
    with pytest.raises(CriticError, match="holds no score"):
        parse_score("none")


def test_no_server_is_a_clear_error_after_retries():
    from tests.app_server import free_port

    critic = OpenAICompatibleCritic(f"http://127.0.0.1:{free_port()}/v1", max_retries=1,
                                    timeout=1, sleep=lambda s: None)
    with pytest.raises(CriticError, match="no reply after 2 attempts"):
        critic.score(prompt="p")


def test_without_a_critic_the_metrics_are_skipped_with_a_note():
    for metric in (LLMFaithfulnessScore(), LLMAnswerQuality()):
        r = metric.compute(SAMPLES, OUTPUTS)
        assert math.isnan(r.value) and not r.defined  # undefined, never a silent 0
        assert r.to_dict()["value"] is None and r.to_dict()["defined"] is False
        assert r.details["skipped_reason"] == NO_CRITIC
        assert r.details["num_samples"] == 0 and r.details["num_skipped"] == 3


def test_an_unavailable_critic_leaves_the_metrics_undefined_not_zero():
    class Gone(LLMCritic):
        def score(self, *, prompt, metadata=None):
            if metadata["sample_id"] == "1":
                return 1.0  # judged before the critic failed: not used
            raise CriticUnavailable("the critic at http://x gave no reply")

    for metric in (LLMFaithfulnessScore(Gone()), LLMAnswerQuality(Gone())):
        r = metric.compute(SAMPLES, OUTPUTS)
        assert math.isnan(r.value) and not r.defined
        assert r.to_dict()["value"] is None and r.to_dict()["defined"] is False
        assert r.details["skipped_reason"] == "skipped: the critic at http://x gave no reply"
        assert r.details["num_samples"] == 0 and r.details["num_skipped"] == 3


def test_any_llm_critic_subclass_works():
    class Fixed(LLMCritic):
        def score(self, *, prompt, metadata=None):
            return 0.5 if metadata["sample_id"] == "1" else 1.0

    r = LLMAnswerQuality(Fixed()).compute(SAMPLES, OUTPUTS)
    assert r.value == pytest.approx((0.5 + 1 + 1) / 3)


def test_bad_critic_url_is_refused():
    with pytest.raises(ValueError, match="http"):
        OpenAICompatibleCritic("ftp://x")
