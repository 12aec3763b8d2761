"""The fake LLM's /v1/completions (devtools/fake_llm_completions.py) against the real openai SDK:
fill-in-the-middle answers from the script, a chat-only fake's 404, and the hang-ups it notes."""

from __future__ import annotations

import time

import openai
import pytest

from devtools.fake_llm import FakeLLM, text


@pytest.fixture
def llm():
    with FakeLLM() as fake:
        yield fake


def client(llm: FakeLLM) -> openai.OpenAI:
    return openai.OpenAI(base_url=llm.base_url, api_key="sk-fake", max_retries=0, timeout=5)


def test_legacy_completions_fill_in_the_middle(llm):
    """POST /v1/completions answers from the same script, streamed or whole, with usage when asked."""
    llm.script(text(["a", " + b"]), text("whole"))
    c = client(llm)
    stream = c.completions.create(
        model="m", prompt="def f(a, b):\n    return ", suffix="\n", stream=True, stream_options={"include_usage": True}
    )
    chunks = list(stream)
    assert "".join(ch.choices[0].text for ch in chunks if ch.choices) == "a + b"
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens >= 1
    assert c.completions.create(model="m", prompt="x").choices[0].text == "whole"
    assert llm.paths == ["/v1/completions"] * 2 and llm.requests[0]["suffix"] == "\n"


def test_a_chat_only_fake_refuses_legacy_completions():
    with FakeLLM(completions=False) as chat_only:
        with pytest.raises(openai.NotFoundError):
            client(chat_only).completions.create(model="m", prompt="x")
        assert chat_only.refused_completions == 1 and chat_only.requests == []


def test_the_fake_notes_when_a_client_hangs_up_mid_stream(llm):
    llm.script(text(["first", " second"], hang=True))
    stream = client(llm).completions.create(model="m", prompt="x", stream=True)
    assert next(iter(stream)).choices[0].text == "first"
    closed_at = time.monotonic()
    stream.close()
    seen = llm.wait_for_close(1, timeout=5)
    assert seen[0] - closed_at < 0.1
