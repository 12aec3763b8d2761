"""What a failed model call means for the user: the SDK's errors turned into an `LLMError` whose
message says what to fix, and whether (and when) to retry."""

from __future__ import annotations

from agent_core.config.agent_settings import AgentSettings, endpoint_of
from agent_core.contract.choices import LLMErrorKind
from agent_core.redaction import redact_url


class LLMError(Exception):
    def __init__(
        self, kind: LLMErrorKind, message: str, retryable: bool = False, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.retryable = retryable
        self.retry_after = retry_after


def not_configured() -> LLMError:
    return LLMError(
        "llm_not_configured",
        "No model is configured. Set CELLWRIGHT_MODEL and OPENAI_BASE_URL (and OPENAI_API_KEY if the endpoint "
        "needs one), or c.Cellwright.model / base_url / api_key, or PUT cellwright/api/config.",
    )


def _retry_after(exc: object) -> float | None:
    response = getattr(exc, "response", None)
    raw = response.headers.get("retry-after") if response is not None else None
    try:
        return float(raw) if raw is not None else None
    except ValueError:
        return None


def llm_error(exc: Exception, settings: AgentSettings, sent_tools: bool) -> LLMError:
    # openai loads on first use: the server starts without it (bench/server_start.py)
    import openai

    where = redact_url(settings.base_url) if settings.base_url else "api.openai.com"
    detail = server_message(exc)
    if isinstance(exc, openai.APITimeoutError) and timed_out(exc):
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


def timed_out(exc: BaseException) -> bool:
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


def _has_images(exc: object) -> bool:
    """Whether the refused request carried image parts (then the refusal may be of them)."""
    request = getattr(exc, "request", None)
    try:
        return b'"image_url"' in (request.content if request is not None else b"")
    except Exception:
        return False


def server_message(exc: Exception) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])[:300]
        if isinstance(inner, str):
            return inner[:300]
    return str(exc)[:300]
