"""Token usage of a model turn: read from the endpoint's last chunk, estimated when it sends none,
and a server that refuses `stream_options` asked once more without it (and never again); the cap on a
reply's length (max_reply_tokens) as max_tokens, or max_completion_tokens where max_tokens is refused."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agent_core.config.agent_settings import AgentSettings
from agent_core.llm import sdk_clients
from agent_core.llm.client import ModelRequest, ModelTurn, TokenUsage, complete, estimate_tokens
from agent_core.llm.failures import LLMError
from devtools.fake_llm import FakeLLM, Reply, error, text, tool_call

MESSAGES = [{"role": "system", "content": "You are Cellwright."}, {"role": "user", "content": "hi"}]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "run_cell",
            "description": "Run a cell.",
            "parameters": {"type": "object", "properties": {}},
        },
    }
]


def settings_for(fake: FakeLLM, max_reply_tokens: int | None = None) -> AgentSettings:
    return AgentSettings(
        model="fake-model",
        base_url=fake.base_url,
        api_key="k",
        max_retries=0,
        request_timeout=5,
        max_reply_tokens=max_reply_tokens,
    )


def turn_of(fake: FakeLLM, mode: str = "native", max_reply_tokens: int | None = None) -> ModelTurn:
    async def call() -> ModelTurn:
        try:
            request = ModelRequest([dict(m) for m in MESSAGES], TOOLS, mode)
            settings = settings_for(fake, max_reply_tokens)
            return await complete(settings, request, lambda _: None, lambda *_: None)
        finally:
            await sdk_clients.close_clients()

    return asyncio.run(call())


@pytest.fixture
def fake() -> Any:
    with FakeLLM() as server:
        yield server


def test_usage_is_read_from_the_last_chunk(fake: FakeLLM) -> None:
    fake.script(text(["Hello", " there", "!"]))
    turn = turn_of(fake)
    assert turn.content == "Hello there!"
    assert fake.requests[0]["stream_options"] == {"include_usage": True}
    assert (
        fake.requests[0]["messages"] == MESSAGES
        and fake.requests[0]["tools"] == TOOLS
        and fake.requests[0]["stream"] is True
    )
    expected_prompt = FakeLLM._usage(fake.requests[0], Reply())["prompt_tokens"]
    assert turn.usage == TokenUsage(
        prompt_tokens=expected_prompt, completion_tokens=3, cached_tokens=None, estimated=False
    )


def test_cached_tokens_are_read_when_present(fake: FakeLLM) -> None:
    original = FakeLLM._usage

    def with_cache(body: dict, reply: Reply, completion: int | None = None) -> dict:
        return {**original(body, reply, completion), "prompt_tokens_details": {"cached_tokens": 7}}

    fake._usage = with_cache  # type: ignore[method-assign]
    fake.script(tool_call("run_cell", {"code": "1"}))
    turn = turn_of(fake)
    assert turn.tool_calls[0]["function"]["arguments"] == '{"code": "1"}'
    assert turn.usage is not None and turn.usage.cached_tokens == 7 and not turn.usage.estimated
    assert turn.usage.completion_tokens == 3  # the fake splits the arguments into 3 chunks


def test_usage_is_estimated_when_the_server_sends_none(fake: FakeLLM) -> None:
    fake.usage = False
    fake.script(text("abcd" * 10), tool_call("run_cell", {"code": "x"}))
    turn = turn_of(fake)
    assert turn.usage == TokenUsage(estimate_tokens(MESSAGES), 10, None, True)
    turn = turn_of(fake)
    assert turn.usage == TokenUsage(estimate_tokens(MESSAGES), len('{"code": "x"}') // 4, None, True)


def test_prompt_mode_reports_usage_too(fake: FakeLLM) -> None:
    fake.script(text("Final Answer: done"))
    turn = turn_of(fake, "prompt")
    assert turn.final_answer == "done" and turn.usage is not None and not turn.usage.estimated


def test_a_server_that_refuses_stream_options_is_asked_again_without_it(fake: FakeLLM) -> None:
    fake.reject_stream_options = True
    fake.script(text("one"), text("two"))
    first = turn_of(fake)
    assert first.content == "one" and first.usage is not None and first.usage.estimated
    second = turn_of(fake)
    assert second.content == "two"
    # Only the accepted requests reach the script: one per turn, none with stream_options.
    assert [("stream_options" in r) for r in fake.requests] == [False, False]
    assert fake.pending == 0


WORDS = [f"word{n} " for n in range(40)]


@pytest.mark.parametrize("mode", ["native", "prompt"])
def test_a_reply_is_capped_at_max_reply_tokens_and_says_it_was_cut(fake: FakeLLM, mode: str) -> None:
    fake.script(text(WORDS), text(WORDS[:10]))
    cut = turn_of(fake, mode, max_reply_tokens=16)
    assert fake.requests[0]["max_tokens"] == 16 and "max_completion_tokens" not in fake.requests[0]
    assert cut.content == "".join(WORDS[:16]) and cut.cut
    whole = turn_of(fake, mode)  # no cap: the endpoint's own limit, and a reply that ended by itself
    assert "max_tokens" not in fake.requests[1] and whole.content == "".join(WORDS[:10]) and not whole.cut


def test_a_model_that_refuses_max_tokens_gets_max_completion_tokens_from_then_on(fake: FakeLLM) -> None:
    fake.reject_max_tokens = True
    fake.script(text(WORDS), text("short"))
    first = turn_of(fake, max_reply_tokens=20)
    assert first.content == "".join(WORDS[:20]) and first.cut
    second = turn_of(fake, max_reply_tokens=20)
    assert second.content == "short" and not second.cut
    # Only the accepted requests reach the script: one per turn, the cap under its other name.
    assert [(r.get("max_tokens"), r.get("max_completion_tokens")) for r in fake.requests] == [(None, 20), (None, 20)]
    assert fake.pending == 0


def test_other_bad_requests_are_not_retried(fake: FakeLLM) -> None:
    fake.script(error(400, "messages: too long"))
    with pytest.raises(LLMError) as caught:
        turn_of(fake)
    assert caught.value.kind == "llm_error" and "too long" in caught.value.message
    assert len(fake.requests) == 1


def test_an_error_inside_the_stream_is_an_llm_error(fake: FakeLLM) -> None:
    fake.script(lambda body: Reply(content="partial", finish_reason="stop"))
    original = fake._chunks

    def with_error(body: dict, reply: Reply) -> list[dict]:
        return original(body, reply)[:2] + [{"error": {"message": "the model crashed", "type": "server_error"}}]

    fake._chunks = with_error  # type: ignore[method-assign]
    with pytest.raises(LLMError) as caught:
        turn_of(fake)
    assert "the model crashed" in caught.value.message


def test_every_client_shares_one_tls_context_and_still_reaches_the_endpoint(fake: FakeLLM) -> None:
    """A new client (each event loop, endpoint and key has one) takes the process's TLS context
    instead of reading the CA bundle again (~50 ms of CPU before its first request): with the key
    (aiohttp transport), without one, and with credentials in the URL (the SDK's httpx transport)."""

    async def contexts() -> list[object]:
        found = []
        for settings in (
            AgentSettings(model="m", base_url=fake.base_url, api_key="sk-a"),
            AgentSettings(model="m", base_url=fake.base_url, api_key=""),
            AgentSettings(model="m", base_url=fake.base_url.replace("://", "://user:pw@"), api_key="sk-b"),
        ):
            client = sdk_clients.new_client(settings)
            transport = client._client._transport  # the SDK's HTTP client, then its transport
            found.append(getattr(transport, "ssl_context", None) or transport._pool._ssl_context)
            await client.close()
        return found

    shared = asyncio.run(contexts())
    assert all(context is sdk_clients.tls_context() for context in shared), shared
    fake.script(text("still reached"))
    assert turn_of(fake).content == "still reached"
