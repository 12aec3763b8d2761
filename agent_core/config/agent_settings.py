"""The agent's settings: one immutable value shared by the server and the `%agent` magic, a
snapshot of agent_core.config.configurable.Cellwright (whose traits take their defaults from here)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Literal
from urllib.parse import urlsplit

from agent_core.contract.choices import DataPolicy, ToolCalling, Vision  # auto: native, falling back to prompt

DEFAULT_ENDPOINT = "https://api.openai.com"  # where the SDK goes without a base_url
_DEFAULT_PORTS = {"http": 80, "https": 443}


def endpoint_of(base_url: str) -> str:
    """What an API key belongs to: the scheme, host and port of `base_url` ("http://127.0.0.1:8000"; the
    default port left out), DEFAULT_ENDPOINT for an empty one. A URL that does not parse is its own
    endpoint (it matches only itself)."""
    url = base_url.strip()
    if not url:
        return DEFAULT_ENDPOINT
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:
        return url
    scheme = parts.scheme.lower()
    if not scheme or not host:
        return url
    netloc = f"[{host}]" if ":" in host else host
    if port is not None and port != _DEFAULT_PORTS.get(scheme):
        netloc += f":{port}"
    return f"{scheme}://{netloc}"


@dataclass(frozen=True)
class AgentSettings:
    model: str = ""
    base_url: str = ""
    api_key: str = field(
        default="", repr=False
    )  # the key of base_url's endpoint only (configuration.Cellwright.key_for)
    tool_calling: ToolCalling = "native"
    auto_approve: frozenset[str] = field(default_factory=frozenset)
    max_model_calls: int | None = None  # None: the agent's own cap (30 single, 50 for the planner)
    cell_timeout: float | None = None  # long training cells are normal: no cap by default
    background_after: float = 20.0  # issue 38: seconds before a running cell ends its run (waiting_for_cell); 0: never
    command_timeout: float = 120.0
    request_timeout: float = 120.0  # between streamed chunks
    connect_timeout: float = 10.0
    response_timeout: float = 600.0  # a whole reply, however slowly it trickles in
    max_reply_tokens: int | None = None  # sent as max_tokens; None: the endpoint's own limit
    max_retries: int = 3  # for 429, 5xx and dropped connections, with backoff
    context_token_budget: int = 48_000  # older turns are summarised beyond this (estimated tokens)
    namespace_snapshot: bool = True  # a run without @mentions starts with the kernel's variables
    vision: Vision = "auto"  # image outputs as image parts: auto tries, and stops for the thread on a refusal
    max_images: int = 3  # image parts per model request
    prices: Mapping[str, Mapping[str, float]] = field(default_factory=dict)  # model -> per million tokens
    undo_snapshot_limit_mb: int = 256  # kernel memory kept for undo snapshots, in all (also the cap of one step)
    mcp_servers: Mapping[str, Mapping[str, object]] = field(
        default_factory=dict
    )  # checked: agent_core.config.mcp_servers
    auto_approve_notebook_tools: tuple[str, ...] = ()  # @tool(read_only=True) functions the user lets run unasked
    data_dir: str = ""  # Cellwright's own folder (the knowledge index lives there); "" for the default
    knowledge_index: bool = True  # index the workspace's documents for search_knowledge
    embedding_model: str = ""  # "" for BM25 only; a model name: embeddings from the endpoint too
    # name -> SQLAlchemy URL for sql_query; the URLs may hold credentials: never shown, logged or sent
    databases: Mapping[str, str] = field(default_factory=dict, repr=False)
    sql_allow_writes: bool = False  # statements other than SELECT/WITH are refused unless this is on
    data_policy: DataPolicy = "full"  # what of the data may reach the model (agent_core.privacy); a run may narrow it
    redaction_patterns: tuple[str, ...] = ()  # the operator's extra regexes, replaced before a request leaves
    # issue 37: explore and read-only shell commands sandboxed without approval ("auto") or always asked ("off")
    sandbox: Literal["auto", "off"] = "auto"
    sandbox_limits: Mapping[str, float] = field(
        default_factory=lambda: {"cpu_s": 10.0, "wall_s": 20.0, "memory_mb": 2048.0, "processes": 32.0}
    )

    def __post_init__(self) -> None:
        object.__setattr__(self, "redaction_patterns", tuple(self.redaction_patterns))  # the trait's list

    @property
    def llm_configured(self) -> bool:
        # Without a base_url the SDK talks to api.openai.com, which needs a key.
        return bool(self.model) and bool(self.base_url or self.api_key)

    def with_overrides(self, **changes: object) -> AgentSettings:
        return replace(self, **changes)  # type: ignore[arg-type]
