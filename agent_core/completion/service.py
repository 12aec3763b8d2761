"""Inline completion, end to end: the cursor's context (prompt.py) with the kernel's names
(kernel_names.py), a short cache (the same prefix and suffix, or a prefix that typed ahead into a
cached suggestion, make no request), the endpoint's stream (upstream.py) cut at a boundary
(suggestion.py), and this server's completion usage (no thread owns a completion)."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing
from dataclasses import asdict, dataclass

from agent_core.completion.kernel_names import KernelNames, format_names
from agent_core.completion.prompt import NAMES_CHARS, CompletionContext
from agent_core.completion.suggestion import Boundary, fits_python, without_overlap
from agent_core.completion.upstream import Outcome, fim_known, pieces
from agent_core.config.completion_settings import CompletionEndpoint
from agent_core.errors import Conflict
from agent_core.json_types import JsonObject
from agent_core.llm.failures import LLMError, not_configured
from agent_core.tools.base import ToolEnvironment

CACHE_ENTRIES = 256
MAX_REPLY_CHARS = 20_000  # an endpoint that ignores max_tokens is not read on


@dataclass
class CompletionCounters:
    requests: int = 0
    cached: int = 0
    cancelled: int = 0
    dropped: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated: bool = False

    def public(self) -> JsonObject:
        return asdict(self)


@dataclass(frozen=True)
class _Cached:
    prefix: str
    suffix: str
    text: str
    at: float


class CompletionService:
    """Completions for one server: `endpoint` gives the completion settings in effect (read per request)."""

    def __init__(self, endpoint: Callable[[], CompletionEndpoint]) -> None:
        self._endpoint = endpoint
        self.names = KernelNames()
        self.usage = CompletionCounters()
        self._cache: OrderedDict[tuple[str, ...], list[_Cached]] = OrderedDict()

    async def complete(
        self,
        path: str,
        prefix: str,
        suffix: str,
        language: str = "python",
        cells_above: list[str] | None = None,
        env: ToolEnvironment | None = None,
        kernel_key: str = "",
        execution_count: int | None = None,
    ) -> AsyncGenerator[JsonObject, None]:
        """CompletionChunk dicts: deltas, then one done or error. Raises Conflict before the first one
        when no model is configured. Closing the iterator closes the endpoint's request."""
        endpoint = self._endpoint()
        if not endpoint.model or not (endpoint.base_url or endpoint.api_key):
            raise Conflict(not_configured().message, "llm_not_configured")
        names = ""
        if env is not None:
            names = format_names(await self.names.names(kernel_key, env, execution_count), NAMES_CHARS)
        context = CompletionContext.bounded(path, language, prefix, suffix, cells_above or [], names)
        key = (endpoint.model, endpoint.base_url, endpoint.fim, *context.key())
        hit = self._lookup(key, prefix, suffix, endpoint.cache_seconds)
        if hit is not None:
            self.usage.cached += 1
            yield {"type": "done", "text": hit, "cached": True}
            return
        async for chunk in self._ask(endpoint, context, key, prefix, suffix, language):
            yield chunk

    async def _ask(
        self,
        endpoint: CompletionEndpoint,
        context: CompletionContext,
        key: tuple[str, ...],
        prefix: str,
        suffix: str,
        language: str,
    ) -> AsyncGenerator[JsonObject, None]:
        outcome = Outcome(fim=bool(fim_known(endpoint)))
        boundary: Boundary | None = None
        sent, raw, finished = "", "", False
        try:
            async with aclosing(pieces(endpoint, context, outcome)) as stream:
                async for piece in stream:
                    raw += piece
                    boundary = boundary or Boundary(prefix, chat=not outcome.fim)
                    boundary.feed(piece)
                    if boundary.text.startswith(sent) and len(boundary.text) > len(sent):
                        # deltas only ever append: text the boundary takes back is settled by `done`
                        yield {"type": "delta", "text": boundary.text[len(sent) :]}
                        sent = boundary.text
                    if boundary.done or len(raw) > MAX_REPLY_CHARS:
                        self.usage.cancelled += 1  # closed here: the rest of the reply is not needed
                        break
            finished = True
        except LLMError as exc:
            yield {"type": "error", "kind": exc.kind, "message": exc.message}
            return
        finally:
            self._count(outcome, context, raw, finished)
        text = without_overlap(boundary.final(), suffix) if boundary is not None else ""
        dropped = None
        if language == "python" and not fits_python(prefix, text, suffix):
            self.usage.dropped += 1
            text, dropped = "", "the suggestion does not parse as Python with the code around it"
        if endpoint.cache_seconds > 0:
            self._store(key, prefix, suffix, text)
        yield {"type": "done", "text": text, "fim": outcome.fim, **({"dropped": dropped} if dropped else {})}

    def _count(self, outcome: Outcome, context: CompletionContext, raw: str, finished: bool) -> None:
        if not outcome.requested:
            return
        self.usage.requests += 1
        if not finished:
            self.usage.cancelled += 1  # the client went away (a new keystroke): closed mid-stream
        usage = outcome.usage
        if isinstance(usage, dict) and isinstance(prompt := usage.get("prompt_tokens"), int):
            self.usage.prompt_tokens += prompt
            completion = usage.get("completion_tokens")
            self.usage.completion_tokens += completion if isinstance(completion, int) else 0
            return
        prompt = context.fim() if outcome.fim else (str(context.chat()),)
        self.usage.prompt_tokens += sum(len(part) for part in prompt) // 4
        self.usage.completion_tokens += (len(raw) + 3) // 4
        self.usage.estimated = True

    # -- the cache

    def _lookup(self, key: tuple[str, ...], prefix: str, suffix: str, seconds: float) -> str | None:
        """A cached suggestion for this prefix: the same one, or one the user has typed the start of
        (its rest). None when there is none, or it is older than `seconds`."""
        now = time.monotonic()
        for entry in reversed(self._cache.get(key, ())):
            if now - entry.at > seconds or entry.suffix != suffix:
                continue
            if entry.prefix == prefix:
                return entry.text
            whole = entry.prefix + entry.text
            if entry.text and prefix.startswith(entry.prefix) and whole.startswith(prefix) and len(whole) > len(prefix):
                return whole[len(prefix) :]
        return None

    def _store(self, key: tuple[str, ...], prefix: str, suffix: str, text: str) -> None:
        entries = self._cache.setdefault(key, [])
        self._cache.move_to_end(key)
        entries.append(_Cached(prefix, suffix, text, time.monotonic()))
        del entries[:-8]  # the latest few per context
        while len(self._cache) > CACHE_ENTRIES:
            self._cache.popitem(last=False)
