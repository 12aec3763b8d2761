"""JSON on the token path: every model chunk is parsed, and every event written to the log and to
each reader, once per token. orjson does each in a fraction of the stdlib's time; what it refuses
(integers beyond 64 bits) goes to the stdlib. NaN and infinities are written as null: a browser's
JSON.parse refuses the stdlib's bare NaN."""

from __future__ import annotations

import json
from typing import Any

import orjson


def dumps(value: object) -> str:
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:
        return json.dumps(value)


def loads(data: str | bytes) -> Any:
    try:
        return orjson.loads(data)
    except ValueError:
        return json.loads(data)  # the stdlib's verdict and message decide
