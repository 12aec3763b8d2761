"""search_knowledge: ranked passages from the workspace's documents (and the table metadata of the
configured databases), each with its path and heading so the answer can cite it. Read-only.

The index (agent_core.knowledge) is built in the background; the first search starts it when the
server has not. The model's query is only ever turned into quoted words (knowledge.fts_query)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from jupyter_core.paths import jupyter_data_dir
from pydantic import Field

from agent_core.config.agent_settings import AgentSettings
from agent_core.tools.arguments import ToolArgs
from agent_core.tools.base import ToolContext, ToolInputError, ToolOutcome, ToolSpec
from agent_core.workspace import workspace_of

DEFAULT_K = 5
MAX_K = 20
MAX_PASSAGE_CHARS = 1200
MAX_QUERY_CHARS = 2000


def data_dir_of(settings: AgentSettings) -> Path:
    if settings.data_dir:
        return Path(settings.data_dir)

    return Path(jupyter_data_dir()) / "cellwright"


def knowledge_of(ctx: ToolContext) -> Any:
    """The knowledge base of the tool's workspace, or ToolInputError when indexing is off."""
    if not ctx.settings.knowledge_index:
        raise ToolInputError("the workspace index is off (c.Cellwright.knowledge_index = False): use search_workspace")
    # the knowledge package loads on the first search: %load_ext agent_core loads the tools without it
    from agent_core.knowledge.service import knowledge_base

    settings = ctx.settings
    return knowledge_base(workspace_of(ctx.env), data_dir_of(settings), lambda: settings)


def format_hits(query: str, hits: list[Any], capped: bool) -> str:
    if not hits:
        return f"No passages match {query[:200]!r}. Try other words (names, terms the documents would use), or search_workspace."
    lines = [f"{len(hits)} passages for {query[:200]!r}, best first (cite them by path):"]
    if capped:
        lines.append(f"(k was capped at {MAX_K})")
    for number, hit in enumerate(hits, 1):
        where = hit.path[3:] + " (database table)" if hit.path.startswith("db:") else hit.path
        heading = f" — {hit.heading}" if hit.heading else ""
        body = hit.text if len(hit.text) <= MAX_PASSAGE_CHARS else hit.text[: MAX_PASSAGE_CHARS - 3] + "..."
        lines.append(f"\n[{number}] {where}{heading}\n{body}")
    return "\n".join(lines)


class SearchKnowledgeArgs(ToolArgs):
    query: str = Field(
        min_length=1,
        max_length=MAX_QUERY_CHARS,
        description="What to look for, in words the documents would use (e.g. 'churn definition monthly').",
    )
    k: int | None = Field(default=None, ge=1, description=f"How many passages (default {DEFAULT_K}, at most {MAX_K}).")


async def search_knowledge(args: SearchKnowledgeArgs, ctx: ToolContext) -> ToolOutcome:
    base = knowledge_of(ctx)
    wanted = args.k or DEFAULT_K
    hits = await base.search(args.query, min(wanted, MAX_K))
    text = format_hits(args.query, hits, wanted > MAX_K)
    return ToolOutcome("ok", text, summary=f"{len(hits)} passages for {args.query[:80]!r}")


SEARCH_KNOWLEDGE = ToolSpec(
    name="search_knowledge",
    description=(
        "Search the workspace's documents (Markdown, reST, text, notebooks, Python docstrings) and the configured "
        "databases' table descriptions by meaning and keywords; returns ranked passages with their file path and "
        "section heading. Use it first for questions about the project (definitions, how something is computed, "
        "which table holds what), and cite the paths in your answer."
    ),
    args=SearchKnowledgeArgs,
    action=search_knowledge,
    touches="nothing",
    outside_agents=True,
    read_only=True,
)
