"""The request bodies of the HTTP routes (API.md), once, as Pydantic models: they are the
validators (strict types, bounded sizes), so no route reads a field it has not checked."""
from __future__ import annotations

import json
from typing import Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

MAX_BODY_BYTES = 8 * 1024 * 1024  # an edited write_file may carry up to 5 MB of content
MAX_JSON_DEPTH = 64
MAX_MESSAGE_CHARS = 200_000  # ~50k tokens: more is a file to read, not a message
MAX_PATH_CHARS = 4096
MAX_ID_CHARS = 200
MAX_NAMES = 100

Path_ = Field(default=None, max_length=MAX_PATH_CHARS)
Id_ = Field(default=None, max_length=MAX_ID_CHARS)


class Body(BaseModel):
    # strict: "5" is not 5 and a string is not a list; unknown fields are ignored (newer panels).
    model_config = ConfigDict(strict=True, extra="ignore")
    field_kinds: ClassVar[dict[str, str]] = {}  # the error kind of a wrong field, where API.md names one


class CreateThread(Body):
    notebook_path: str = Field(default="", max_length=MAX_PATH_CHARS)
    title: str = Field(default="", max_length=500)


class StartRun(Body):
    message: str = Field(min_length=1, max_length=MAX_MESSAGE_CHARS)
    notebook_path: str | None = Path_
    kernel_id: str | None = Id_
    mode: Literal["single", "multi"] = "single"
    field_kinds: ClassVar[dict[str, str]] = {"mode": "bad_mode"}


class Decision(Body):
    decision: Literal["approve", "edit", "reject"]
    args: dict[str, Any] | None = None
    reason: str | None = Field(default=None, max_length=20_000)
    kernel_id: str | None = Id_
    field_kinds: ClassVar[dict[str, str]] = {"decision": "bad_decision", "args": "bad_args"}


class DiagnosticsRequest(Body):
    code: str | None = Field(default=None, max_length=1_000_000)
    path: str | None = Path_
    kernel_id: str | None = Id_


class ResourcesRequest(Body):
    files: list[str] | None = Field(default=None, max_length=MAX_NAMES)
    dataframes: list[str] | None = Field(default=None, max_length=MAX_NAMES)
    kernel_id: str | None = Id_
    notebook_path: str | None = Path_


class BodyError(Exception):
    """A body the client must fix; `kind` is the error kind of API.md."""

    def __init__(self, message: str, kind: str = "bad_request", status: int = 400) -> None:
        super().__init__(message)
        self.message, self.kind, self.status = message, kind, status


def parse_json(raw: bytes) -> dict[str, Any]:
    """The body as a JSON object: 413 past MAX_BODY_BYTES, 400 bad_json when malformed or too deep."""
    if len(raw) > MAX_BODY_BYTES:
        raise BodyError(
            f"The request body is {len(raw)} bytes; the limit is {MAX_BODY_BYTES} bytes. Send less "
            "(a long message belongs in a file the agent can read).",
            "body_too_large",
            413,
        )
    try:
        data = json.loads(raw or b"{}")
    except (ValueError, RecursionError) as exc:
        detail = "it is nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise BodyError(f"The request body is not valid JSON ({detail}).", "bad_json") from None
    if _depth_over(data, MAX_JSON_DEPTH):
        raise BodyError(f"The request body is nested more than {MAX_JSON_DEPTH} levels deep.", "bad_json")
    if not isinstance(data, dict):
        raise BodyError("The request body must be a JSON object.", "bad_json")
    return data


def _depth_over(value: Any, limit: int) -> bool:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
    return False


ModelT = TypeVar("ModelT", bound=Body)


def parse_body(model: type[ModelT], data: dict[str, Any]) -> ModelT:
    """`data` as `model`, or a BodyError that names each wrong field and what it should be."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        problems = []
        for error in exc.errors(include_url=False)[:5]:
            where = ".".join(str(part) for part in error["loc"]) or "body"
            problems.append(f'"{where}": {error["msg"]}')
        errors = exc.errors()
        first_field = str(errors[0]["loc"][0]) if errors[0]["loc"] else ""
        if all(e["type"] == "missing" for e in errors):
            kind = "missing_fields"
        else:
            kind = model.field_kinds.get(first_field, "bad_request")
        raise BodyError("The request body does not fit: " + "; ".join(problems) + ".", kind) from None
