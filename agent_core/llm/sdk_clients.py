"""The `openai` SDK clients: one per event loop and endpoint, with that endpoint's key only, over the
SDK's aiohttp transport when it is installed."""

from __future__ import annotations

import asyncio
import functools
import ssl
import weakref
from types import ModuleType
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from agent_core.config.agent_settings import AgentSettings

if TYPE_CHECKING:  # the SDK is imported on first use
    from openai import AsyncOpenAI

# Local servers ignore the key, but the SDK refuses an empty one.
PLACEHOLDER_KEY = "no-key-needed"

# One client per event loop and endpoint: a client reused across event loops fails ("Event loop is
# closed"), and making one costs ~30 ms (an SSL context), which the first token would wait for.
ClientKey = tuple[str, str, float, float]  # key, endpoint, request and connect time-outs
_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[ClientKey, AsyncOpenAI]] = (
    weakref.WeakKeyDictionary()
)


def new_client(settings: AgentSettings) -> AsyncOpenAI:
    """An SDK client for the settings' endpoint with the settings' key, the key of that endpoint
    (configuration.Cellwright.key_for). Without one, requests carry no Authorization header at all:
    not the placeholder, nor the OPENAI_API_KEY the SDK would read. The caller closes it (or
    `cached_client` keeps it)."""
    # openai loads on first use: the server starts without it (bench/server_start.py)
    import openai

    timeout = openai.Timeout(settings.request_timeout, connect=settings.connect_timeout)
    make = openai.AsyncOpenAI if settings.api_key else _keyless_client_class(openai)
    return make(
        api_key=settings.api_key or PLACEHOLDER_KEY,
        base_url=settings.base_url or None,
        timeout=timeout,
        max_retries=0,  # retried here, visibly
        http_client=_aiohttp_client(openai, timeout, settings.base_url or "")
        or openai.DefaultAsyncHttpxClient(timeout=timeout, verify=tls_context()),
    )


def preload() -> None:
    """Import the SDK and what its first chat request loads, and make the TLS context (~1 s of CPU,
    several on a busy machine), for a process that knows a model request will come before anyone
    asks (a run waiting for a background cell when the server started): that request then does not
    wait for them. Blocking: meant for a worker thread."""
    import openai

    # AsyncOpenAI.chat.completions loads these on the first request (the SDK's resources load lazily).
    from openai.resources.chat import AsyncChat  # noqa: F401
    from openai.resources.chat.completions import AsyncCompletions  # noqa: F401

    try:
        import aiohttp  # noqa: F401
    except ImportError:
        pass
    else:
        getattr(openai, "DefaultAioHttpClient", None)  # the SDK loads its aiohttp transport on this access
    tls_context()


@functools.cache
def tls_context() -> ssl.SSLContext:
    """One TLS context for all the process's clients, made as the SDK's HTTP library makes its own
    default (the same CA bundle and environment): making one costs ~50 ms of CPU, which every new
    client (a new event loop, endpoint or key) paid before its first request."""
    try:
        from httpx2 import create_ssl_context
    except ImportError:  # an SDK on httpx
        from httpx import create_ssl_context
    return create_ssl_context()


@functools.cache
def _keyless_client_class(openai: Any) -> type[AsyncOpenAI]:  # Any, not ModuleType: a class derives from it
    class KeylessAsyncOpenAI(openai.AsyncOpenAI):
        """Omits the Authorization header of every request (the SDK's explicit "no auth")."""

        async def _prepare_options(self, options: Any) -> Any:
            headers = options.headers if isinstance(options.headers, dict) else {}
            options.headers = {"Authorization": openai.Omit(), **headers}
            return await super()._prepare_options(options)

    return KeylessAsyncOpenAI


def _aiohttp_client(openai: ModuleType, timeout: object, base_url: str) -> Any:  # DefaultAioHttpClient, in new SDKs
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
    return None if make is None else make(timeout=timeout, verify=tls_context())


def cached_client(settings: AgentSettings) -> AsyncOpenAI:
    key: ClientKey = (settings.api_key, settings.base_url, settings.request_timeout, settings.connect_timeout)
    per_loop = _clients.setdefault(asyncio.get_running_loop(), {})
    if key not in per_loop:
        per_loop[key] = new_client(settings)
    return per_loop[key]


async def close_clients() -> None:
    """Close this event loop's clients: for a loop that ends (each `%agent` call has its own)."""
    for client in _clients.pop(asyncio.get_running_loop(), {}).values():
        await client.close()
