"""GET threads/{id}/requests: the record of what reached the model, owner-checked like every thread route."""

from __future__ import annotations

from typing import Any

from jupyter_server.auth.decorator import authorized
from tornado import web

from agent_core.contract.model_requests import ModelRequests
from agent_core.json_types import JsonObject

from .errors import BadRequest
from .handler_base import CellwrightHandler


class RequestsHandler(CellwrightHandler):
    route = "threads/{thread_id}/requests"

    @web.authenticated
    @authorized
    async def get(self, thread_id: str) -> None:
        text = self.get_query_argument("text", "1")
        if text not in ("0", "1"):
            raise BadRequest(f"'text' must be 0 or 1, not {text[:20]!r}.")
        seq = self._seq()
        await self.runs.thread(thread_id)  # another owner's thread is a 404
        recorded = await self.runs.threads.requests.list(thread_id)
        items = [r.public(with_text=text == "1" and seq in (None, r.seq)) for r in recorded]
        summary = _summary(items, await self.runs.thread_data_policy(thread_id))  # of the whole thread
        shown = [item for item in items if seq in (None, item["seq"])]
        self.write_json(ModelRequests.model_validate({"requests": shown, "summary": summary}))

    def _seq(self) -> int | None:
        raw = self.get_query_argument("seq", None)
        if raw is None:
            return None
        if not raw.isdigit() or len(raw) > 12:
            raise BadRequest(f"'seq' must be a request's sequence number, not {raw[:20]!r}.")
        return int(raw)


def _summary(items: list[dict[str, Any]], policy: str) -> JsonObject:  # the request log's records, walked
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
