"""The LLM critic's bounds (contract §12): one deadline for the whole request, a reply size
cap, and a critic that misbehaves (slow drip, a 3 GB claim, an endless reply, not the
chat-completions JSON) makes the LLM metrics skipped with the reason, as an unreachable one
does; against raw servers on 127.0.0.1 that end by themselves (so an unbounded client ends
too, late or with too much, and the test fails instead of hanging)."""

from __future__ import annotations

import math

import pytest

from metrics_core.rag.generation_llm_judge import (
    MAX_REPLY_BYTES,
    CriticError,
    CriticUnavailable,
    LLMAnswerQuality,
    LLMFaithfulnessScore,
    OpenAICompatibleCritic,
)
from tests.fake_llm_server import fake_llm, misbehaving_llm
from tests.rag_helpers import sample, split

SAMPLES, OUTPUTS = split([
    sample("1", retrieved=("a",), response="answer one", query="q1?"),
    sample("2", retrieved=("b",), response="answer two", query="q2?"),
])


def critic(url, **options):
    return OpenAICompatibleCritic(url, max_retries=0, sleep=lambda s: None, **options)


@pytest.mark.parametrize("behaviour", ["drip_status", "drip_body"])
def test_a_server_sending_a_byte_every_half_second_is_cut_at_the_deadline(behaviour):
    # 20 bytes at 0.5 s: the reply would be complete (and valid) after ~10 s, and each read
    # gets a byte well within a per-read timeout; the deadline of 1 s covers the whole reply.
    with misbehaving_llm(behaviour, interval=0.5, drips=20) as (url, stats), pytest.raises(
            CriticUnavailable, match="no complete reply within the deadline of 1 s"):
        critic(url, timeout=1.0).score(prompt="p")
    assert stats["requests"] == 1
    assert stats["dripped"] < 17  # cut off long before the ~10 s drip ended


def test_a_reply_announcing_3_gb_is_refused_without_reading_it():
    with misbehaving_llm("claims_3gb") as (url, stats), pytest.raises(
            CriticUnavailable, match=r"announced a reply of 3,000,000,000 bytes, more than "
                                     r"the limit of 1,048,576 bytes"):
        critic(url).score(prompt="p")
    assert stats["sent"] < 64 * 1024 * 1024  # the client went away early


@pytest.mark.parametrize("behaviour", ["endless", "endless_chunked"])
def test_an_endless_reply_is_read_up_to_the_cap_only(behaviour):
    assert MAX_REPLY_BYTES == 1024 * 1024
    with misbehaving_llm(behaviour) as (url, stats), pytest.raises(
            CriticUnavailable, match="sent a reply of more than 1,048,576 bytes"):
        critic(url).score(prompt="p")
    assert stats["sent"] < 64 * 1024 * 1024
    with misbehaving_llm(behaviour) as (url, _), pytest.raises(
            CriticUnavailable, match="more than 1,000 bytes"):
        critic(url, max_bytes=1000).score(prompt="p")


def test_a_valid_reply_over_a_small_cap_is_refused():
    with fake_llm(["0.5"]) as (url, _):
        assert critic(url, max_bytes=200).score(prompt="p") == 0.5
        with pytest.raises(CriticUnavailable, match="more than the limit of 20 bytes"):
            critic(url, max_bytes=20).score(prompt="p")


@pytest.mark.parametrize(("behaviour", "message"), [
    ("not_json", "did not reply with JSON: b'<html>Welcome to nginx!"),
    ("no_choices", "has no choices\\[0\\].message.content: .*model not found"),
    ("deep_json", "did not reply with JSON"),
])
def test_a_reply_that_is_not_the_chat_completions_json(behaviour, message):
    with misbehaving_llm(behaviour) as (url, _), pytest.raises(CriticUnavailable,
                                                               match=message):
        critic(url).score(prompt="p")


@pytest.mark.parametrize("behaviour", ["drip_body", "claims_3gb", "endless", "not_json"])
def test_the_llm_metrics_are_skipped_with_the_reason_and_the_critic_asked_once(behaviour):
    with misbehaving_llm(behaviour, interval=0.5, drips=20) as (url, stats):
        c = critic(url, timeout=1.0)
        results = [LLMFaithfulnessScore(c).compute(SAMPLES, OUTPUTS),
                   LLMAnswerQuality(c).compute(SAMPLES, OUTPUTS)]
    assert stats["requests"] == 1  # the second sample and metric do not wait again
    for r in results:
        assert not r.defined and math.isnan(r.value)  # undefined, never a silent 0
        assert r.details["num_samples"] == 0 and r.details["num_skipped"] == 2
        assert r.details["skipped_reason"] == f"skipped: {r.details['critic_error']}"
        assert r.details["critic_error"].startswith(("the critic at", "the critic's reply"))


def test_an_unreachable_critic_skips_the_metrics():
    from tests.app_server import free_port

    c = critic(f"http://127.0.0.1:{free_port()}/v1", timeout=1.0)
    r = LLMAnswerQuality(c).compute(SAMPLES, OUTPUTS)
    assert not r.defined
    assert "gave no reply after 1 attempt (ConnectionRefusedError" in r.details["critic_error"]


def test_a_reply_without_a_score_is_still_an_error_not_a_skip():
    # A reply came: a score missing from it is the judge's fault, and skipping only the samples
    # without one would bias the mean (contract §12).
    with fake_llm(["no idea"]) as (url, _), pytest.raises(CriticError) as info:
        LLMAnswerQuality(critic(url)).compute(SAMPLES, OUTPUTS)
    assert not isinstance(info.value, CriticUnavailable)


@pytest.mark.parametrize(("options", "message"), [
    ({"timeout": float("inf")}, "timeout must be a number of seconds in \\(0, 3600\\]"),
    ({"timeout": 0}, "timeout must be"),
    ({"timeout": float("nan")}, "timeout must be"),
    ({"max_bytes": 0}, "max_bytes must be an integer in \\[1, 1073741824\\]"),
    ({"max_bytes": 1.5}, "max_bytes must be"),
    ({"max_retries": -1}, "max_retries must be an integer in \\[0, 10\\]"),
    ({"backoff": -1.0}, "backoff must be"),
])
def test_bounds_are_checked(options, message):
    with pytest.raises(ValueError, match=message):
        OpenAICompatibleCritic("http://127.0.0.1:1/v1", **options)
    with pytest.raises(ValueError, match="no valid port"):
        OpenAICompatibleCritic("http://127.0.0.1:port/v1")


def test_an_https_critic_is_bounded_too():
    # The server reads and never answers: the TLS handshake waits for it, and the deadline
    # shuts the connection down there as well. A server that does not speak TLS is a clear
    # reason, not a traceback.
    with misbehaving_llm("not_json") as (url, stats), pytest.raises(
            CriticUnavailable, match="no complete reply within the deadline of 1 s"):
        critic(url.replace("http://", "https://"), timeout=1.0).score(prompt="p")
    assert stats["requests"] == 0
    with fake_llm(["0.5"]) as (url, _), pytest.raises(CriticUnavailable, match="SSLError"):
        critic(url.replace("http://", "https://"), timeout=1.0).score(prompt="p")
