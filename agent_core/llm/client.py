"""The OpenAI-compatible adapter: one streamed chat completion in native or prompt tool-calling
mode, tokens forwarded as they arrive, tool-call deltas assembled (agent_core.llm.chunks), transient
failures retried with backoff, and SDK errors turned into messages that tell the user what to fix."""

from __future__ import annotations

import asyncio
import json
import logging
import ssl
import sys
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Protocol, TypedDict, cast

from agent_core.config.agent_settings import AgentSettings
from agent_core.deadlines import within
from agent_core.llm.chunks import (
    Delta,
    Usage,
    cut_at_length,
    deltas,
    finished_calls,
    merge_tool_delta,
    parse_chunk,
)
from agent_core.llm.failures import LLMError, llm_error, not_configured, server_message, timed_out
from agent_core.llm.prompt_protocol import (
    Rescue,
    Validate,
    VisibleTokens,
    as_prompt_messages,
    parse_reply,
    prompt_mode_system,
    rescue_call,
)
from agent_core.llm.sdk_clients import cached_client
from agent_core.llm.stream import IdleDeadline, OversizedEvent, drain, sse_data
from agent_core.messages import Message, ToolCall, ToolSchema, for_the_model
from agent_core.privacy.outgoing import Outgoing, Source, prepare

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletionMessageParam

MAX_BACKOFF_SECONDS = 20.0
log = logging.getLogger(__name__)


class RequestAudit(Protocol):
    """Where a thread's model requests are recorded as they went out (agent_core.storage.request_log)."""

    async def sent(self, kind: str, body: bytes, redactions: int, sources: list[Source]) -> None: ...


class SentRequest(Protocol):
    """The SDK's http request (httpx's or httpx2's, by SDK version): its body is what is recorded."""

    @property
    def content(self) -> bytes: ...


Sent = Callable[[SentRequest], Awaitable[None]]  # called with the SDK's http request once it has gone out


def _recorder(audit: RequestAudit | None, kind: str, outgoing: Outgoing) -> Sent | None:
    if audit is None:
        return None

    async def sent(http_request: SentRequest) -> None:
        try:
            await audit.sent(kind, bytes(http_request.content), outgoing.redactions, outgoing.sources)
        except Exception:  # the request went out: a failed record is logged, the run goes on
            log.exception("a model request could not be recorded")

    return sent


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
    tool_calls: list[ToolCall] = field(default_factory=list)  # raw JSON arguments
    final_answer: str | None = None  # prompt mode's "Final Answer:"
    ignored_call: str = ""  # a call-like JSON object in the text that was not run, and why
    usage: TokenUsage | None = None
    cut: bool = False  # the endpoint stopped the reply at a length limit (finish_reason "length")

    @property
    def empty(self) -> bool:
        return not self.content.strip() and not self.tool_calls


@dataclass
class ModelRequest:
    messages: list[Message]  # canonical OpenAI-format history, system prompt first
    tools: list[ToolSchema]
    mode: str  # "native" or "prompt"
    validate: Validate | None = None  # checks a tool call found in the text before it is run
    audit: RequestAudit | None = None  # records each request as it went out


async def complete(
    settings: AgentSettings,
    request: ModelRequest,
    on_token: Callable[[str], None],
    on_retry: Callable[[LLMError, float, int], None],
) -> ModelTurn:
    """One model turn, retried on transient failures (only while nothing has streamed yet). The
    messages and tools leave as the data policy allows (agent_core.privacy.outgoing), every time."""
    if not settings.llm_configured:
        raise not_configured()
    outgoing = prepare(request.messages, request.tools, settings.data_policy, settings.redaction_patterns)
    request = replace(request, messages=outgoing.messages, tools=outgoing.tools)
    sent = _recorder(request.audit, "turn", outgoing)
    streamed = False

    def forward(text: str) -> None:
        nonlocal streamed
        streamed = True
        on_token(text)

    for attempt in range(1, settings.max_retries + 2):
        try:
            # within, not wait_for: sent now, not on the loop's next turn (agent_core/deadlines.py)
            async with within(settings.response_timeout):
                return await _complete_once(settings, request, forward, sent)
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


async def _complete_once(
    settings: AgentSettings, request: ModelRequest, on_token: Callable[[str], None], sent: Sent | None
) -> ModelTurn:
    request = replace(request, messages=[for_the_model(m) for m in request.messages])
    if request.mode == "prompt":
        return await _complete_prompt(settings, request, on_token, sent)
    return await _complete_native(settings, request, on_token, sent)


async def _complete_native(
    settings: AgentSettings, request: ModelRequest, on_token: Callable[[str], None], sent: Sent | None
) -> ModelTurn:
    turn = ModelTurn()
    calls: dict[int, ToolCall] = {}

    def on_delta(delta: Delta) -> None:
        content = delta.get("content")
        if isinstance(content, str) and content:  # text only: the token event's contract
            turn.content += content
            on_token(content)
        tool_deltas: object = delta.get("tool_calls")
        for tool_delta in tool_deltas if isinstance(tool_deltas, list) else ():
            merge_tool_delta(calls, tool_delta)

    messages = _wire_messages(request.messages)
    ended = await _stream(settings, messages, request.tools, on_delta, sent)
    turn.tool_calls = finished_calls(calls)
    turn.usage, turn.cut = (
        _usage(ended.usage, messages, turn),
        ended.cut,
    )  # of what the model wrote, before any rescue below
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
    settings: AgentSettings, request: ModelRequest, on_token: Callable[[str], None], sent: Sent | None
) -> ModelTurn:
    system, *rest = request.messages
    messages: list[Message] = [
        {"role": "system", "content": prompt_mode_system(str(system["content"]), request.tools)},
        *as_prompt_messages(rest),
    ]
    turn = ModelTurn()
    visible = VisibleTokens(on_token)

    def on_delta(delta: Delta) -> None:
        content = delta.get("content")
        if isinstance(content, str) and content:  # text only: the token event's contract
            turn.content += content
            visible.feed(content)

    ended = await _stream(settings, messages, None, on_delta, sent)
    visible.close()
    turn.usage, turn.cut = _usage(ended.usage, messages, turn), ended.cut
    parsed = parse_reply(turn.content)
    turn.tool_calls = _calls_from_pairs(parsed.tool_calls)
    turn.final_answer = parsed.final_answer
    return turn


# Endpoints (by base URL) that answered 400 to `stream_options`: they are not sent it again.
_refuse_stream_options: set[str] = set()
# Endpoints that refused `max_tokens` and named `max_completion_tokens` (OpenAI's reasoning models).
_wants_max_completion_tokens: set[str] = set()


class RequestBody(TypedDict, total=False):
    model: str
    messages: list[Message]
    stream: bool
    tools: list[ToolSchema]
    stream_options: dict[str, bool]
    max_tokens: int
    max_completion_tokens: int


@dataclass(frozen=True)
class StreamEnd:
    usage: Usage | None  # the usage object the endpoint reported, if any
    cut: bool  # a choice ended with finish_reason "length"


async def _stream(
    settings: AgentSettings,
    messages: list[Message],
    tools: list[ToolSchema] | None,
    on_delta: Callable[[Delta], None],
    sent: Sent | None = None,
) -> StreamEnd:
    """Stream one completion into `on_delta`. An optional field the endpoint refuses by name is
    adapted (once per endpoint, remembered) and the request sent again: nothing has streamed yet."""
    # openai loads on first use: the server starts without it (bench/server_start.py)
    import openai

    body: RequestBody = {"model": settings.model, "messages": messages, "stream": True}
    if tools:  # never send tools/tool_choice when unset: some servers reject null values
        body["tools"] = tools
    endpoint = settings.base_url or ""
    while True:
        wire = _adapted(body, settings, endpoint)
        try:
            return await _read_stream(settings, wire, on_delta, sent)
        except openai.APIStatusError as exc:
            if not _learned_from(exc, wire, endpoint):
                raise llm_error(exc, settings, bool(tools)) from None
        except openai.OpenAIError as exc:
            raise llm_error(exc, settings, bool(tools)) from None


def _adapted(body: RequestBody, settings: AgentSettings, endpoint: str) -> RequestBody:
    """`body` with the optional fields the endpoint takes: usage in the stream, the reply's length cap."""
    wire: RequestBody = {**body}
    if endpoint not in _refuse_stream_options:
        wire["stream_options"] = {"include_usage": True}
    if settings.max_reply_tokens is not None:
        if endpoint in _wants_max_completion_tokens:
            wire["max_completion_tokens"] = settings.max_reply_tokens
        else:
            wire["max_tokens"] = settings.max_reply_tokens
    return wire


def _learned_from(exc: Exception, wire: RequestBody, endpoint: str) -> bool:
    """Whether a refusal named an optional field of `wire` the endpoint does not take (then remembered):
    an older server's `stream_options` (usage is estimated from then on), a reasoning model's
    `max_tokens` (sent as `max_completion_tokens` instead)."""
    import openai

    if not isinstance(exc, openai.APIStatusError) or exc.status_code not in (400, 422):
        return False
    message = server_message(exc)
    if "stream_options" in wire and "stream_options" in message:
        _refuse_stream_options.add(endpoint)
        return True
    if "max_tokens" in wire and "max_completion_tokens" in message:
        _wants_max_completion_tokens.add(endpoint)
        return True
    return False


async def _read_stream(
    settings: AgentSettings, body: RequestBody, on_delta: Callable[[Delta], None], sent: Sent | None
) -> StreamEnd:
    """The SDK sends the request (auth, status errors) and the SSE lines are parsed here: its
    per-chunk pydantic models cost more than the rest of a token's way to the browser."""
    import openai

    usage, cut = None, False
    # The body is already plain JSON: as extra_body the SDK sends it as is, instead of walking
    # messages and tool schemas against its TypedDicts on every call (6% of a busy server).
    request = None
    idle = IdleDeadline(settings.request_timeout)
    try:
        async with (
            idle.scope(),
            cached_client(settings).chat.completions.with_streaming_response.create(
                model=body["model"],
                messages=[],
                stream=True,
                extra_body=body,
                **idle.sdk_timeout(settings.connect_timeout),
            ) as response,
        ):
            request = response.http_request
            # Recorded beside the stream, not before it: the reply is read at once (first token), and
            # the record is complete before the turn returns (awaited below).
            recording = asyncio.ensure_future(sent(request)) if sent is not None else None
            transport = sys.modules[
                type(response.http_response).__module__.partition(".")[0]
            ]  # httpx or httpx2, by SDK version
            events = sse_data(response.http_response.aiter_bytes(), idle.touch)
            try:
                async for data in events:
                    if data.startswith("[DONE]"):
                        await drain(events)
                        break
                    chunk = parse_chunk(data, request)
                    for delta in deltas(chunk):
                        on_delta(delta)
                    cut = cut or cut_at_length(chunk)
                    usage = chunk.get("usage") or usage  # the last chunk's (some servers send a running count)
            except transport.TimeoutException as exc:
                if timed_out(exc):
                    raise openai.APITimeoutError(request=request) from None
                raise openai.APIConnectionError(request=request) from None
            except (transport.RequestError, ssl.SSLError):
                raise openai.APIConnectionError(request=request) from None
            except OversizedEvent as exc:
                raise openai.APIError(str(exc), request, body=None) from None
            finally:
                if recording is not None:
                    await recording
    except openai.APIStatusError as exc:  # the endpoint received it, and refused
        if sent is not None:
            await sent(exc.response.request)
        raise
    except asyncio.TimeoutError:
        if not idle.expired:
            raise
        raise openai.APITimeoutError(request=request) from None  # type: ignore[arg-type]
    return StreamEnd(usage, cut)


def _usage(reported: Usage | None, messages: list[Message], turn: ModelTurn) -> TokenUsage:
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


async def plain_completion(settings: AgentSettings, messages: list[Message], audit: RequestAudit | None = None) -> str:
    """A non-streamed completion without tools, its messages as the data policy allows."""
    outgoing = prepare(messages, [], settings.data_policy, settings.redaction_patterns)
    wire = [for_the_model(m) for m in outgoing.messages]
    return await _plain(settings, wire, _recorder(audit, "completion", outgoing))


async def summary_completion(
    settings: AgentSettings,
    instruction: str,
    conversation: list[Message],
    transcript: Callable[[list[Message]], str],
    audit: RequestAudit | None = None,
) -> str:
    """A summary of `conversation`: the data policy applies to its messages (tool results by their
    tool) before `transcript` turns them into the one text the model reads."""
    outgoing = prepare(conversation, [], settings.data_policy, settings.redaction_patterns)
    messages: list[Message] = [
        {"role": "system", "content": instruction},
        {"role": "user", "content": transcript(outgoing.messages)},
    ]
    return await _plain(settings, messages, _recorder(audit, "summary", outgoing))


async def _plain(settings: AgentSettings, messages: list[Message], sent: Sent | None) -> str:
    import openai

    if not settings.llm_configured:
        raise not_configured()
    try:
        raw = await cached_client(settings).chat.completions.with_raw_response.create(
            # The messages are in the wire shape (Cellwright's own keys stripped, see for_the_model), which the
            # SDK describes as a union by role that our one Message type cannot be narrowed to.
            model=settings.model,
            messages=cast("list[ChatCompletionMessageParam]", messages),
        )
        if sent is not None:
            await sent(raw.http_request)
        reply = raw.parse()
    except openai.APIStatusError as exc:
        if sent is not None:
            await sent(exc.response.request)
        raise llm_error(exc, settings, False) from None
    except openai.OpenAIError as exc:
        raise llm_error(exc, settings, False) from None
    return (reply.choices[0].message.content or "").strip() if reply.choices else ""


def _wire_messages(messages: list[Message]) -> list[Message]:
    """`content: ""` instead of null beside tool calls (llama.cpp rejects null)."""
    return [{**m, "content": ""} if m.get("role") == "assistant" and m.get("content") is None else m for m in messages]


def _calls_from_pairs(pairs: list[tuple[str, str]]) -> list[ToolCall]:
    return [
        {"id": f"call_{uuid.uuid4().hex[:16]}", "type": "function", "function": {"name": name, "arguments": args}}
        for name, args in pairs
    ]


def estimate_tokens(messages: list[Message]) -> int:
    """A rough count (4 characters a token) that needs no tokenizer for an unknown model."""
    return sum(len(json.dumps(m)) for m in messages) // 4
