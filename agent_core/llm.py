"""The OpenAI-compatible adapter: one streamed chat completion, tokens forwarded as they arrive,
tool-call deltas assembled, SDK errors turned into messages that tell the user what to fix."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

from .settings import AgentSettings

# Local servers ignore the key, but the SDK refuses an empty one.
PLACEHOLDER_KEY = "no-key-needed"


class LLMError(Exception):
    def __init__(self, kind: str, message: str, retryable: bool = False) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.retryable = retryable


@dataclass
class ModelTurn:
    content: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # OpenAI format, raw JSON arguments


def _client(settings: AgentSettings) -> Any:
    import openai

    # A client per call: a client reused across event loops fails ("Event loop is closed").
    return openai.AsyncOpenAI(
        api_key=settings.api_key or PLACEHOLDER_KEY,
        base_url=settings.base_url or None,
        timeout=openai.Timeout(settings.request_timeout, connect=min(10.0, settings.request_timeout)),
        max_retries=settings.max_retries,
    )


def _merge_tool_delta(calls: dict[int, dict[str, Any]], delta: Any) -> None:
    call = calls.setdefault(
        delta.index if delta.index is not None else len(calls),
        {"id": "", "type": "function", "function": {"name": "", "arguments": ""}},
    )
    if delta.id:
        call["id"] = delta.id
    fn = delta.function
    if fn is None:
        return
    if fn.name and fn.name != call["function"]["name"]:
        # Some servers repeat the full name in every chunk: keep it once.
        call["function"]["name"] += fn.name
    if fn.arguments:
        call["function"]["arguments"] += fn.arguments


def _finish_calls(calls: dict[int, dict[str, Any]], turn_id: int) -> list[dict[str, Any]]:
    finished = []
    for index in sorted(calls):
        call = calls[index]
        call["id"] = call["id"] or f"call_{turn_id}_{index}"  # some servers send no ids
        finished.append(call)
    return finished


async def stream_chat(
    settings: AgentSettings,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    on_token: Callable[[str], None],
    turn_id: int = 0,
) -> ModelTurn:
    """One streamed completion. Raises LLMError with a user-facing message on any failure."""
    if not settings.llm_configured:
        raise LLMError(
            "llm_not_configured",
            "No model is configured. Set CELLWRIGHT_MODEL and OPENAI_BASE_URL (and OPENAI_API_KEY if the "
            "endpoint needs one), or c.Cellwright.model / base_url / api_key, or PUT cellwright/api/config.",
        )
    import openai

    request: dict[str, Any] = {"model": settings.model, "messages": messages, "stream": True}
    if tools:  # never send tools/tool_choice when unset: some servers reject null values
        request["tools"] = tools
    turn = ModelTurn()
    calls: dict[int, dict[str, Any]] = {}
    try:
        async with _client(settings) as client:
            stream = await client.chat.completions.create(**request)
            async for chunk in stream:
                for choice in chunk.choices or []:
                    delta = choice.delta
                    if delta is None:
                        continue
                    if delta.content:
                        turn.content += delta.content
                        on_token(delta.content)
                    for tool_delta in delta.tool_calls or []:
                        _merge_tool_delta(calls, tool_delta)
    except openai.OpenAIError as exc:
        raise _llm_error(exc, settings) from None
    turn.tool_calls = _finish_calls(calls, turn_id)
    return turn


def _llm_error(exc: Exception, settings: AgentSettings) -> LLMError:
    import openai

    where = settings.base_url or "api.openai.com"
    detail = _server_message(exc)
    if isinstance(exc, openai.APITimeoutError):
        return LLMError("llm_timeout", f"The LLM endpoint at {where} timed out. Try again, or raise the time-out.", True)
    if isinstance(exc, openai.APIConnectionError):
        return LLMError(
            "llm_unreachable",
            f"Cannot reach the LLM endpoint at {where}. Check that the server runs and that OPENAI_BASE_URL "
            "(c.Cellwright.base_url) is right.",
            True,
        )
    if isinstance(exc, openai.AuthenticationError | openai.PermissionDeniedError):
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
        return LLMError("llm_rate_limited", f"The LLM endpoint is rate limiting requests ({detail}). Try again later.", True)
    if isinstance(exc, openai.APIStatusError):
        retryable = exc.status_code >= 500
        return LLMError("llm_error", f"The LLM endpoint answered {exc.status_code}: {detail}", retryable)
    return LLMError("llm_error", f"The LLM request failed: {detail}")


def _server_message(exc: Exception) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])[:300]
    return str(exc)[:300]
