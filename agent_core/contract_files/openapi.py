"""The OpenAPI 3.1 document of Cellwright's REST API, written from the route table and the models
(served at `GET cellwright/api/openapi.json`, checked in as jupyter_ext/openapi.json)."""

from __future__ import annotations

import json
import re
from functools import cache
from http import HTTPStatus
from typing import Any

from agent_core.contract.routes import EVENT_STREAM, NDJSON, OPENAPI_DOCUMENT, ROUTES, Lines, Route
from agent_core.contract_files.catalog import definitions, ref
from agent_core.json_types import JsonObject

# The version of this document (OpenAPI's info.version), not of the package: it changes when the
# contract does, and a release that leaves the contract alone leaves the document alone.
DOCUMENT_VERSION = "1"
REFS = "#/components/schemas/{model}"
AUTH_ERROR = 403  # every route: no token, or no XSRF token on a mutating method


def openapi_document() -> JsonObject:
    paths: dict[str, JsonObject] = {}
    for route in ROUTES:
        paths.setdefault("/" + route.path, {})[route.method] = _operation(route)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Cellwright",
            "version": DOCUMENT_VERSION,
            "description": (
                "The HTTP API of the Cellwright server extension (shared/API.md). Errors answer "
                '{"error": kind, "message": text} with a 4xx status; a 5xx is a bug.'
            ),
        },
        "servers": [{"url": "{base_url}cellwright/api", "variables": {"base_url": {"default": "/"}}}],
        "security": [{"jupyterToken": []}],
        "paths": paths,
        "components": {
            "schemas": definitions(REFS),
            "securitySchemes": {
                "jupyterToken": {
                    "type": "apiKey",
                    "in": "header",
                    "name": "Authorization",
                    "description": "\"token <the server's token>\", or Jupyter's login cookie; mutating methods "
                    "also need the _xsrf cookie and its X-XSRFToken header.",
                }
            },
        },
    }


@cache
def openapi_json() -> str:
    """The document as served and checked in (stable key order, one trailing newline)."""
    return json.dumps(openapi_document(), indent=2) + "\n"


def _operation(route: Route) -> JsonObject:
    operation: JsonObject = {"operationId": operation_id(route), "summary": route.summary}
    parameters = [_path_parameter(name) for name in re.findall(r"{(\w+)}", route.path)]
    parameters += [
        {"name": p.name, "in": p.where, "required": False, "description": p.description, "schema": {"type": p.type}}
        for p in route.params
    ]
    if parameters:
        operation["parameters"] = parameters
    if route.body is not None:
        operation["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": ref(route.body.__name__, REFS)}},
        }
    responses = {str(status): _answer(status, answer) for status, answer in route.answers.items()}
    for status in sorted({*route.errors, AUTH_ERROR}):
        responses[str(status)] = {"description": HTTPStatus(status).phrase, "content": _json("ErrorBody")}
    operation["responses"] = responses
    return operation


def operation_id(route: Route) -> str:
    """e.g. post_threads_by_thread_id_approvals_by_tool_call_id."""
    words = [f"by_{part[1:-1]}" if part.startswith("{") else part.replace(".", "_") for part in route.path.split("/")]
    return "_".join([route.method, *words])


def _path_parameter(name: str) -> JsonObject:
    return {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}


def _json(name: str) -> JsonObject:
    return {"application/json": {"schema": ref(name, REFS)}}


def _answer(status: int, answer: Any) -> JsonObject:
    description = HTTPStatus(status).phrase
    if answer is None:
        return {"description": description}
    if answer == EVENT_STREAM:
        return {
            "description": "Server-Sent Events: `id: <seq>` (stored events only), `event: <type>` and `data:` one "
            "StreamEvent as JSON; a `: ping` comment at least every 15 s.",
            "content": {EVENT_STREAM: {"schema": ref("StreamEvent", REFS)}},
        }
    if isinstance(answer, Lines):
        return {
            "description": f"JSON lines: one {answer.model.__name__} a line, written as they come.",
            "content": {NDJSON: {"schema": ref(answer.model.__name__, REFS)}},
        }
    if answer == OPENAPI_DOCUMENT:
        return {"description": "This document.", "content": {"application/json": {"schema": {"type": "object"}}}}
    return {"description": description, "content": _json(answer.__name__)}
