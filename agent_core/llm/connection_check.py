"""The settings form's "Test connection" and model list: a few tiny requests to the endpoint with
the form's (maybe unsaved) values, each failure said the way the run would say it (llm.llm_error),
and nothing kept: the client made for the check is closed after it."""

from __future__ import annotations

import asyncio
from typing import Any

from agent_core.config.agent_settings import AgentSettings
from agent_core.json_types import JsonObject
from agent_core.llm.failures import LLMError, llm_error
from agent_core.llm.sdk_clients import new_client

CHECK_SECONDS = 20.0
MAX_MODELS = 500
# One tool the check offers, so a server that refuses function calling says so now, not mid-run.
_PING_TOOL = {
    "type": "function",
    "function": {
        "name": "ping",
        "description": "Answer the check.",
        "parameters": {"type": "object", "properties": {}},
    },
}


def _quick(settings: AgentSettings) -> AgentSettings:
    return settings.with_overrides(connect_timeout=min(settings.connect_timeout, 5.0), request_timeout=CHECK_SECONDS)


async def list_models(settings: AgentSettings) -> JsonObject:
    """GET config/models: what the endpoint's /models lists, or why there is no list."""
    if not (settings.base_url or settings.api_key):
        return {"models": [], "error": "No endpoint is set: set base_url (or an API key for api.openai.com) first."}
    client = new_client(_quick(settings))
    try:
        return {"models": await _models(client, settings)}
    except LLMError as exc:
        return {"models": [], "error": exc.message}
    finally:
        await client.close()


async def _models(client: Any, settings: AgentSettings) -> list[str]:
    # openai loads on first use: the server starts without it (bench/server_start.py)
    import openai

    try:
        page = await asyncio.wait_for(client.models.list(), CHECK_SECONDS)
    except openai.NotFoundError:
        return []  # many local servers have no /models: the name is typed in
    except openai.OpenAIError as exc:
        raise llm_error(exc, settings, False) from None
    except asyncio.TimeoutError:
        raise LLMError("llm_timeout", f"The endpoint did not list its models within {CHECK_SECONDS:g} s.") from None
    return sorted({str(model.id) for model in page.data})[:MAX_MODELS]


async def test_connection(settings: AgentSettings) -> JsonObject:
    """POST config/test: reachable, key accepted, model known, tool calling; stops at the first failure."""
    checks: list[JsonObject] = []
    models: list[str] = []

    def report(name: str, ok: bool, message: str) -> JsonObject:
        checks.append({"name": name, "ok": ok, "message": message})
        return {"ok": ok and name == "tools", "checks": checks, "models": models}

    if not settings.model:
        return report("model", False, "Set a model name first.")
    if not (settings.base_url or settings.api_key):
        return report("reachable", False, "Set the endpoint (base_url), or an API key for api.openai.com.")
    client = new_client(_quick(settings))
    try:
        try:
            models = await _models(client, settings)
        except LLMError as exc:
            return _failed(report, exc, "reachable")
        where = settings.base_url or "api.openai.com"
        report("reachable", True, f"{where} answers" + (f" and lists {len(models)} models." if models else "."))
        if models and settings.model not in models:
            return report(
                "model", False, f"The endpoint does not list the model {settings.model!r}; pick one of its models."
            )
        try:
            await _tiny_completion(client, settings, tools=False)
        except LLMError as exc:
            return _failed(report, exc, "model")
        report("key", True, "The endpoint accepted the request" + (" and the key." if settings.api_key else "."))
        report("model", True, f"The model {settings.model!r} answered.")
        try:
            await _tiny_completion(client, settings, tools=True)
        except LLMError as exc:
            return report("tools", False, f'{exc.message} Set tool calling to "prompt" or "auto".')
        return report("tools", True, "Function calling works.")
    finally:
        await client.close()


def _failed(report: Any, error: LLMError, stage: str) -> JsonObject:
    unreachable = error.kind in ("llm_unreachable", "llm_timeout")
    name = "reachable" if unreachable else {"llm_auth": "key", "llm_model_not_found": "model"}.get(error.kind, stage)
    return report(name, False, error.message)


async def _tiny_completion(client: Any, settings: AgentSettings, tools: bool) -> None:
    import openai

    body: JsonObject = {
        "model": settings.model,
        "messages": [{"role": "user", "content": "Reply with OK."}],
        "max_tokens": 8,
    }
    if tools:
        body["tools"] = [_PING_TOOL]
    try:
        await asyncio.wait_for(client.chat.completions.create(**body), CHECK_SECONDS)
    except openai.OpenAIError as exc:
        raise llm_error(exc, settings, tools) from None
    except asyncio.TimeoutError:
        raise LLMError("llm_timeout", f"The model did not answer within {CHECK_SECONDS:g} s.") from None
