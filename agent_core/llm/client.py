"""The OpenAI-compatible adapter: one streamed chat completion in native or prompt tool-calling
mode, tokens forwarded as they arrive, tool-call deltas assembled, transient failures retried with
backoff, and SDK errors turned into messages that tell the user what to fix."""

from __future__ import annotations

import asyncio
import functools
import json
import ssl
import sys
import uuid
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

from agent_core import fast_json
from agent_core.config.agent_settings import AgentSettings, endpoint_of
from agent_core.contract.choices import LLMErrorKind
from agent_core.llm.prompt_protocol import (
    Rescue,
    Validate,
    VisibleTokens,
    as_prompt_messages,
    parse_reply,
    rescue_call,
    tools_section,
)
from agent_core.llm.stream import IdleDeadline, OversizedEvent, drain, sse_data

# Local servers ignore the key, but the SDK refuses an empty one.
PLACEHOLDER_KEY = "no-key-needed"
MAX_BACKOFF_SECONDS = 20.0


class LLMError(Exception):
    def __init__(
        self, kind: LLMErrorKind, message: str, retryable: bool = False, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.retryable = retryable
        self.retry_after = retry_after


@dataclass(frozen=True)
class TokenUsage:
    """What one model call cost, as the endpoint reported it, or estimated when it did not."""

    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int | None  # prompt tokens the endpoint served from its cache, when it says
    estimated: bool  # True: counted here at ~4 characters a token, not reported by the endpoint


@dataclass
class ModelTurn:
    content: str = ""  # the raw reply text (prompt mode: with its Action lines)
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # OpenAI format, raw JSON arguments
    final_answer: str | None = None  # prompt mode's "Final Answer:"
    ignored_call: str = ""  # a call-like JSON object in the text that was not run, and why
    usage: TokenUsage | None = None

    @property
    def empty(self) -> bool:
        return not self.content.strip() and not self.tool_calls


@dataclass
class ModelRequest:
    messages: list[dict[str, Any]]  # canonical OpenAI-format history, system prompt first
    tools: list[dict[str, Any]]  # OpenAI tool schemas
    mode: str  # "native" or "prompt"
    validate: Validate | None = None  # checks a tool call found in the text before it is run


# One client per event loop and endpoint: a client reused across event loops fails ("Event loop is
# closed"), and making one costs ~30 ms (an SSL context), which the first token would wait for.
_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[Any, ...], Any]] = weakref.WeakKeyDictionary()


def new_client(settings: AgentSettings) -> Any:
    """An SDK client for the settings' endpoint with the settings' key, the key of that endpoint
    (configuration.Cellwright.key_for). Without one, requests carry no Authorization header at all:
    not the placeholder, nor the OPENAI_API_KEY the SDK would read. The caller closes it (or
    `_client` keeps it)."""
    import openai

    timeout = openai.Timeout(settings.request_timeout, connect=settings.connect_timeout)
    make = openai.AsyncOpenAI if settings.api_key else _keyless_client_class(openai)
    return make(
        api_key=settings.api_key or PLACEHOLDER_KEY,
        base_url=settings.base_url or None,
        timeout=timeout,
        max_retries=0,  # retried here, visibly
        http_client=_aiohttp_client(openai, timeout, settings.base_url or ""),
    )


@functools.cache
def _keyless_client_class(openai: Any) -> Any:
    class KeylessAsyncOpenAI(openai.AsyncOpenAI):
        """Omits the Authorization header of every request (the SDK's explicit "no auth")."""

        async def _prepare_options(self, options: Any) -> Any:
            headers = options.headers if isinstance(options.headers, dict) else {}
            options.headers = {"Authorization": openai.Omit(), **headers}
            return await super()._prepare_options(options)

    return KeylessAsyncOpenAI


def _aiohttp_client(openai: Any, timeout: Any, base_url: str) -> Any:
    """The SDK's own aiohttp transport (the `openai[aiohttp]` extra), or None for its httpx default.
    aiohttp parses a streamed body in C: with a hundred threads streaming at once, reading the
    model's bytes through httpx's Python stack was the server's largest cost (bench/many_threads.py)."""
    if urlsplit(base_url).username is not None:  # aiohttp refuses URL credentials beside the key's header
        return None
    try:
        import aiohttp  # noqa: F401
    except ImportError:
        return None
    make = getattr(openai, "DefaultAioHttpClient", None)
    # Its connection limits are the SDK's (1000 at once), not aiohttp's 100: more threads would queue.
    return None if make is None else make(timeout=timeout)


def _client(settings: AgentSettings) -> Any:
    key = (settings.api_key, settings.base_url, settings.request_timeout, settings.connect_timeout)
    per_loop = _clients.setdefault(asyncio.get_running_loop(), {})
    if key not in per_loop:
        per_loop[key] = new_client(settings)
    return per_loop[key]


async def close_clients() -> None:
    """Close this event loop's clients: for a loop that ends (each `%agent` call has its own)."""
    for client in _clients.pop(asyncio.get_running_loop(), {}).values():
        await client.close()


def not_configured() -> LLMError:
    return LLMError(
        "llm_not_configured",
        "No model is configured. Set CELLWRIGHT_MODEL and OPENAI_BASE_URL (and OPENAI_API_KEY if the endpoint "
        "needs one), or c.Cellwright.model / base_url / api_key, or PUT cellwright/api/config.",
    )


async def complete(
    settings: AgentSettings,
    request: ModelRequest,
    on_token: Callable[[str], None],
    on_retry: Callable[[LLMError, float, int], None],
) -> ModelTurn:
    """One model turn, retried on transient failures (only while nothing has streamed yet)."""
    if not settings.llm_configured:
        raise not_configured()
    streamed = False

    def forward(text: str) -> None:
        nonlocal streamed
        streamed = True
        on_token(text)

    for attempt in range(1, settings.max_retries + 2):
        try:
            return await asyncio.wait_for(_complete_once(settings, request, forward), settings.response_timeout)
        except asyncio.TimeoutError:
            error = LLMError(
                "llm_timeout", f"The model's reply took longer than {settings.response_timeout:g} s.", True
            )
        except LLMError as exc:
            error = exc
        if not error.retryable or streamed or attempt > settings.max_retries:
            raise error
        delay = min(error.retry_after or 2.0 ** (attempt - 1), MAX_BACKOFF_SECONDS)
        on_retry(error, delay, attempt)
        await asyncio.sleep(delay)
    raise AssertionError("unreachable")


async def _complete_once(settings: AgentSettings, request: ModelRequest, on_token: Callable[[str], None]) -> ModelTurn:
    from agent_core.loop.mentions import for_the_model

    request = replace(request, messages=[for_the_model(m) for m in request.messages])
    if request.mode == "prompt":
        return await _complete_prompt(settings, request, on_token)
    return await _complete_native(settings, request, on_token)


async def _complete_native(
    settings: AgentSettings, request: ModelRequest, on_token: Callable[[str], None]
) -> ModelTurn:
    turn = ModelTurn()
    calls: dict[int, dict[str, Any]] = {}

    def on_delta(delta: dict[str, Any]) -> None:
        content = delta.get("content")
        if isinstance(content, str) and content:  # text only: the token event's contract
            turn.content += content
            on_token(content)
        for tool_delta in delta.get("tool_calls") or []:
            _merge_tool_delta(calls, tool_delta)

    messages = _wire_messages(request.messages)
    reported = await _stream(settings, messages, request.tools, on_delta)
    turn.tool_calls = _finish_calls(calls)
    turn.usage = _usage(reported, messages, turn)  # of what the model wrote, before any rescue below
    if not turn.tool_calls:  # a tool call written in the text is still a tool call
        found = rescue_call(turn.content, request.validate) if request.validate else Rescue()
        # The prompt-mode forms (Action:, <tool_call>, JSON at the start) run even with bad
        # arguments: the tool's error tells the model what to fix.
        pairs = (
            [found.call]
            if found.call
            else parse_reply(turn.content, {t["function"]["name"] for t in request.tools}).tool_calls
        )
        turn.tool_calls = _calls_from_pairs(pairs)
        turn.ignored_call = "" if pairs else found.near_miss
    return turn


async def _complete_prompt(
    settings: AgentSettings, request: ModelRequest, on_token: Callable[[str], None]
) -> ModelTurn:
    system, *rest = request.messages
    messages = [
        {"role": "system", "content": f"{system['content']}\n\n{tools_section(request.tools)}"},
        *as_prompt_messages(rest),
    ]
    turn = ModelTurn()
    visible = VisibleTokens(on_token)

    def on_delta(delta: dict[str, Any]) -> None:
        content = delta.get("content")
        if isinstance(content, str) and content:  # text only: the token event's contract
            turn.content += content
            visible.feed(content)

    reported = await _stream(settings, messages, None, on_delta)
    visible.close()
    turn.usage = _usage(reported, messages, turn)
    parsed = parse_reply(turn.content)
    turn.tool_calls = _calls_from_pairs(parsed.tool_calls)
    turn.final_answer = parsed.final_answer
    return turn


# Endpoints (by base URL) that answered 400 to `stream_options`: they are not sent it again.
_refuse_stream_options: set[str] = set()

Delta = dict[str, Any]  # a chunk's `choices[i].delta`, as the endpoint sent it


async def _stream(
    settings: AgentSettings,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    on_delta: Callable[[Delta], None],
) -> dict[str, Any] | None:
    """Stream one completion into `on_delta`; the usage object the endpoint reported, if any."""
    import openai

    body: dict[str, Any] = {"model": settings.model, "messages": messages, "stream": True}
    if tools:  # never send tools/tool_choice when unset: some servers reject null values
        body["tools"] = tools
    endpoint = settings.base_url or ""
    try:
        if endpoint in _refuse_stream_options:
            return await _read_stream(settings, body, on_delta)
        try:
            return await _read_stream(settings, {**body, "stream_options": {"include_usage": True}}, on_delta)
        except openai.APIStatusError as exc:
            if exc.status_code not in (400, 422) or "stream_options" not in _server_message(exc):
                raise
            _refuse_stream_options.add(endpoint)  # an older server: usage is estimated from now on
            return await _read_stream(settings, body, on_delta)
    except openai.OpenAIError as exc:
        raise llm_error(exc, settings, bool(tools)) from None


async def _read_stream(
    settings: AgentSettings, body: dict[str, Any], on_delta: Callable[[Delta], None]
) -> dict[str, Any] | None:
    """The SDK sends the request (auth, status errors) and the SSE lines are parsed here: its
    per-chunk pydantic models cost more than the rest of a token's way to the browser."""
    import openai

    usage = None
    # The body is already plain JSON: as extra_body the SDK sends it as is, instead of walking
    # messages and tool schemas against its TypedDicts on every call (6% of a busy server).
    fields = {"model": body["model"], "messages": [], "stream": True}
    request = None
    idle = IdleDeadline(settings.request_timeout)
    try:
        async with (
            idle.scope(),
            _client(settings).chat.completions.with_streaming_response.create(
                **fields, extra_body=body, **idle.sdk_timeout(settings.connect_timeout)
            ) as response,
        ):
            request = response.http_request
            transport = sys.modules[
                type(response.http_response).__module__.partition(".")[0]
            ]  # httpx or httpx2, by SDK version
            events = sse_data(response.http_response.aiter_bytes(), idle.touch)
            try:
                async for data in events:
                    if data.startswith("[DONE]"):
                        await drain(events)
                        break
                    chunk = _chunk(data, request)
                    for choice in chunk.get("choices") or ():
                        if choice.get("delta"):
                            on_delta(choice["delta"])
                    usage = chunk.get("usage") or usage  # the last chunk's (some servers send a running count)
            except transport.TimeoutException as exc:
                if _timed_out(exc):
                    raise openai.APITimeoutError(request=request) from None
                raise openai.APIConnectionError(request=request) from None
            except (transport.RequestError, ssl.SSLError):
                raise openai.APIConnectionError(request=request) from None
            except OversizedEvent as exc:
                raise openai.APIError(str(exc), request, body=None) from None
    except TimeoutError:
        if not idle.expired:
            raise
        raise openai.APITimeoutError(request=request) from None  # type: ignore[arg-type]
    return usage


def _chunk(data: str, request: Any) -> dict[str, Any]:
    """One chunk, or the error the endpoint reported inside the stream (as the SDK raises it)."""
    import openai

    try:
        chunk = fast_json.loads(data)
    except ValueError:
        raise openai.APIError(
            f"The endpoint sent a chunk that is not JSON: {data[:100]!r}", request, body=None
        ) from None
    if not isinstance(chunk, dict):
        raise openai.APIError(f"The endpoint sent a chunk that is not an object: {data[:100]!r}", request, body=None)
    error = chunk.get("error")
    if error:
        message = error.get("message") if isinstance(error, dict) else None
        raise openai.APIError(
            message if isinstance(message, str) and message else "An error occurred during streaming",
            request,
            body=error,
        )
    return chunk


def _usage(reported: dict[str, Any] | None, messages: list[dict[str, Any]], turn: ModelTurn) -> TokenUsage:
    """The endpoint's counts, or an estimate (~4 characters a token) when it sent none."""
    if isinstance(reported, dict) and isinstance(reported.get("prompt_tokens"), int):
        details = reported.get("prompt_tokens_details")
        cached = details.get("cached_tokens") if isinstance(details, dict) else None
        return TokenUsage(
            reported["prompt_tokens"],
            int(reported.get("completion_tokens") or 0),
            cached if isinstance(cached, int) else None,
            False,
        )
    written = turn.content + "".join(call["function"]["arguments"] for call in turn.tool_calls)
    return TokenUsage(estimate_tokens(messages), len(written) // 4, None, True)


async def plain_completion(settings: AgentSettings, messages: list[dict[str, Any]]) -> str:
    """A non-streamed completion without tools (used to summarise old turns)."""
    import openai

    if not settings.llm_configured:
        raise not_configured()
    try:
        reply = await _client(settings).chat.completions.create(model=settings.model, messages=messages)
    except openai.OpenAIError as exc:
        raise llm_error(exc, settings, False) from None
    return (reply.choices[0].message.content or "").strip() if reply.choices else ""


def _wire_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`content: ""` instead of null beside tool calls (llama.cpp rejects null)."""
    return [{**m, "content": ""} if m.get("role") == "assistant" and m.get("content") is None else m for m in messages]


def _merge_tool_delta(calls: dict[int, dict[str, Any]], delta: dict[str, Any]) -> None:
    index = delta.get("index")
    call = calls.setdefault(
        index if isinstance(index, int) else len(calls),
        {"id": "", "type": "function", "function": {"name": "", "arguments": ""}},
    )
    if delta.get("id"):
        call["id"] = delta["id"]
    fn = delta.get("function")
    if not isinstance(fn, dict):
        return
    name, arguments = fn.get("name"), fn.get("arguments")
    if name and name != call["function"]["name"]:
        # Some servers repeat the full name in every chunk: keep it once.
        call["function"]["name"] += name
    if arguments:
        call["function"]["arguments"] += arguments


def _finish_calls(calls: dict[int, dict[str, Any]]) -> list[dict[str, Any]]:
    finished = []
    for index in sorted(calls):
        call = calls[index]
        call["id"] = call["id"] or f"call_{uuid.uuid4().hex[:16]}"  # some servers send no ids
        finished.append(call)
    return finished


def _calls_from_pairs(pairs: list[tuple[str, str]]) -> list[dict[str, Any]]:
    return [
        {"id": f"call_{uuid.uuid4().hex[:16]}", "type": "function", "function": {"name": name, "arguments": args}}
        for name, args in pairs
    ]


def _retry_after(exc: Any) -> float | None:
    response = getattr(exc, "response", None)
    raw = response.headers.get("retry-after") if response is not None else None
    try:
        return float(raw) if raw is not None else None
    except ValueError:
        return None


def llm_error(exc: Exception, settings: AgentSettings, sent_tools: bool) -> LLMError:
    import openai

    where = settings.base_url or "api.openai.com"
    detail = _server_message(exc)
    if isinstance(exc, openai.APITimeoutError) and _timed_out(exc):
        return LLMError(
            "llm_timeout", f"The LLM endpoint at {where} timed out (no data for {settings.request_timeout:g} s).", True
        )
    if isinstance(exc, openai.APIConnectionError):
        return LLMError(
            "llm_unreachable",
            f"Cannot reach the LLM endpoint at {where}. Check that the server runs and that OPENAI_BASE_URL "
            "(c.Cellwright.base_url) is right.",
            True,
        )
    if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
        if not settings.api_key:  # keys stay with their endpoint: another endpoint's key was not sent
            return LLMError(
                "llm_auth",
                f"No key for this endpoint: {endpoint_of(settings.base_url)} needs an API key ({detail}) and none was "
                "given for it. Type its key in the settings form (a key given for another endpoint is never sent here).",
            )
        return LLMError(
            "llm_auth",
            f"The LLM endpoint at {where} refused the API key ({detail}). Set OPENAI_API_KEY or c.Cellwright.api_key.",
        )
    if isinstance(exc, openai.NotFoundError):
        return LLMError(
            "llm_model_not_found",
            f"The endpoint at {where} does not know the model {settings.model!r} ({detail}). "
            "Set CELLWRIGHT_MODEL (c.Cellwright.model) to a model it serves.",
        )
    if isinstance(exc, openai.RateLimitError):
        return LLMError(
            "llm_rate_limited", f"The LLM endpoint is rate limiting requests ({detail}).", True, _retry_after(exc)
        )
    if isinstance(exc, openai.APIStatusError):
        if exc.status_code in (400, 413, 415, 422) and _has_images(exc):
            return LLMError("images_unsupported", f"The endpoint at {where} refused image input ({detail}).")
        if sent_tools and exc.status_code in (400, 422, 500, 501) and "tool" in detail.lower():
            return LLMError(
                "tools_unsupported",
                f'The endpoint at {where} rejected function calling ({detail}). Set tool_calling to "prompt" (or "auto").',
            )
        retryable = exc.status_code >= 500
        return LLMError(
            "llm_error", f"The LLM endpoint answered {exc.status_code}: {detail}", retryable, _retry_after(exc)
        )
    return LLMError("llm_error", f"The LLM request failed: {detail}")


def _timed_out(exc: BaseException) -> bool:
    """Whether a transport time-out was one: the aiohttp transport also reports a refused or
    dropped connection as a connect time-out, with aiohttp's own error underneath."""
    seen: BaseException | None = exc
    for _ in range(8):  # a cause chain is short; a cyclic one ends here
        if seen is None:
            break
        if type(seen).__module__.partition(".")[0] == "aiohttp":
            return isinstance(seen, TimeoutError)
        seen = seen.__cause__ or seen.__context__
    return True


def _has_images(exc: Any) -> bool:
    """Whether the refused request carried image parts (then the refusal may be of them)."""
    request = getattr(exc, "request", None)
    try:
        return b'"image_url"' in (request.content if request is not None else b"")
    except Exception:
        return False


def _server_message(exc: Exception) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])[:300]
        if isinstance(inner, str):
            return inner[:300]
    return str(exc)[:300]


def estimate_tokens(messages: list[dict[str, Any]]) -> int:
    """A rough count (4 characters a token) that needs no tokenizer for an unknown model."""
    return sum(len(json.dumps(m)) for m in messages) // 4
