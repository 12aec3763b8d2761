"""GET threads/{id}/requests: the record of what reached the model, owner-checked like every thread route."""

from __future__ import annotations

from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from .errors import BadRequest
from .handler_base import CellwrightHandler


class RequestsHandler(CellwrightHandler):
    route = "threads/{thread_id}/requests"

    @web.authenticated
    @authorized
    async def get(self, thread_id: str) -> None:
        from agent_core.contract.model_requests import ModelRequests

        text = self.get_query_argument("text", "1")
        if text not in ("0", "1"):
            raise BadRequest(f"'text' must be 0 or 1, not {text[:20]!r}.")
        await self.runs.thread(thread_id)  # another owner's thread is a 404
        recorded = await self.runs.threads.requests.list(thread_id)
        items = [r.public() for r in recorded]
        if text == "0":
            items = [{k: v for k, v in item.items() if k not in ("messages", "tools", "body")} for item in items]
        policy = await self.runs.thread_data_policy(thread_id)
        self.write_json(ModelRequests.model_validate({"requests": items, "summary": _summary(items, policy)}))


def _summary(items: list[dict[str, Any]], policy: str) -> dict[str, Any]:
    kinds: dict[str, set[str]] = {}
    for item in items:
        for source in item["sources"]:
            kinds.setdefault(source["kind"], set()).add(source["name"])
    return {
        "requests": len(items),
        "bytes": sum(item["bytes"] for item in items),
        "redactions": sum(item["redactions"] for item in items),
        "sources": {kind: len(names) for kind, names in sorted(kinds.items())},
        "data_policy": policy,
    }
