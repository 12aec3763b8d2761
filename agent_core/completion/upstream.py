"""One completion request to the endpoint, streamed: fill-in-the-middle through /v1/completions
(`prompt` + `suffix`) where the endpoint has it, else a chat prompt asking for the middle. Which one
an endpoint and model take is found out once (completion_fim = auto) and remembered. Leaving the
iteration early (a boundary reached, a cancelled request) closes the endpoint's response at once."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Any

from agent_core import fast_json
from agent_core.completion.prompt import CompletionContext
from agent_core.config.agent_settings import AgentSettings
from agent_core.config.completion_settings import CompletionEndpoint
from agent_core.json_types import JsonObject
from agent_core.llm.failures import LLMError, llm_error, server_message
from agent_core.llm.sdk_clients import cached_client
from agent_core.llm.stream import sse_data

FIM_MAX_TOKENS = 128
CHAT_MAX_TOKENS = 256
REFUSED = (400, 404, 405, 422, 501)  # statuses by which an endpoint says it has no FIM for this model

# (base_url, model) -> whether /v1/completions with `suffix` works there (completion_fim = auto).
_fim_works: dict[tuple[str, str], bool] = {}
# base URLs that refused stream_options: sent no more (usage is estimated there).
_no_stream_options: set[str] = set()


@dataclass
class Outcome:
    """What the request came to, filled in as it streams."""

    fim: bool = False
    usage: JsonObject | None = None
    requested: bool = False  # a request was sent to the endpoint


def fim_known(endpoint: CompletionEndpoint) -> bool | None:
    return _fim_works.get((endpoint.base_url, endpoint.model))


def _settings(endpoint: CompletionEndpoint) -> AgentSettings:
    return AgentSettings(
        model=endpoint.model,
        base_url=endpoint.base_url,
        api_key=endpoint.api_key,
        request_timeout=endpoint.request_timeout,
        connect_timeout=endpoint.connect_timeout,
    )


async def pieces(
    endpoint: CompletionEndpoint, context: CompletionContext, outcome: Outcome
) -> AsyncGenerator[str, None]:
    """The suggestion's text as the endpoint streams it. Raises LLMError saying what to fix."""
    # openai loads on first use: the server starts without it (bench/server_start.py)
    import openai

    settings = _settings(endpoint)
    context = context.leaving(endpoint.data_policy, endpoint.redaction_patterns)  # the one way out of the server
    choice = endpoint.fim
    use_fim = choice == "on" or (choice == "auto" and fim_known(endpoint) is not False)
    try:
        if use_fim:
            try:
                async for piece in _stream(settings, context, True, outcome):
                    yield piece
                return
            except openai.APIStatusError as exc:
                if choice == "on" or exc.status_code not in REFUSED or fim_known(endpoint):
                    raise
                _fim_works[(endpoint.base_url, endpoint.model)] = False  # no FIM here: chat from now on
        async for piece in _stream(settings, context, False, outcome):
            yield piece
    except openai.OpenAIError as exc:
        raise llm_error(exc, settings, False) from None


async def _stream(
    settings: AgentSettings, context: CompletionContext, fim: bool, outcome: Outcome
) -> AsyncGenerator[str, None]:
    import openai

    body: JsonObject = {"model": settings.model, "stream": True, "temperature": 0}
    if fim:
        body["prompt"], suffix = context.fim()
        if suffix.strip():  # at the end of the text, a plain continuation: models without FIM tokens do it well too
            body["suffix"] = suffix
        body["max_tokens"] = FIM_MAX_TOKENS
    else:
        body["messages"] = context.chat()
        body["max_tokens"] = CHAT_MAX_TOKENS
    if settings.base_url not in _no_stream_options:
        body["stream_options"] = {"include_usage": True}
    outcome.fim = fim
    resource = cached_client(settings).completions if fim else cached_client(settings).chat.completions
    fields: dict[str, Any] = {"model": settings.model, "stream": True}  # the SDK's overloaded create() takes them
    if fim:
        fields["prompt"] = ""
    else:
        fields["messages"] = []
    try:
        request = resource.with_streaming_response.create(**fields, extra_body=body)
        outcome.requested = True  # counted when sent: a keystroke often aborts it before the first byte
        async with request as response:
            if fim:
                _fim_works[(settings.base_url, settings.model)] = True
            async for data in sse_data(response.http_response.aiter_bytes()):
                if data.startswith("[DONE]"):
                    break
                chunk = fast_json.loads(data)
                if not isinstance(chunk, dict):
                    continue
                if chunk.get("error"):
                    raise LLMError("llm_error", f"The endpoint reported an error: {str(chunk['error'])[:300]}")
                outcome.usage = chunk.get("usage") or outcome.usage
                for item in chunk.get("choices") or ():
                    text = item.get("text") if fim else (item.get("delta") or {}).get("content")
                    if isinstance(text, str) and text:
                        yield text
    except openai.APIStatusError as exc:
        if exc.status_code in (400, 422) and "stream_options" in server_message(exc) and "stream_options" in body:
            _no_stream_options.add(settings.base_url)
            async for piece in _stream(settings, context, fim, outcome):
                yield piece
            return
        raise
