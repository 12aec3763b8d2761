"""The scripted server's `/v1/embeddings`: deterministic vectors, a hashed bag of words (each word
adds 1 to the dimension its hash picks, then the vector is normalised), so texts sharing words are
close and tests can predict the ranking. Not a model: no learned similarity."""

from __future__ import annotations

import hashlib
import math
import re

DIMENSIONS = 64
_WORD = re.compile(r"\w+")


def embed(text: str, dimensions: int = DIMENSIONS) -> list[float]:
    vector = [0.0] * dimensions
    for word in _WORD.findall(text.lower()):
        digest = hashlib.blake2b(word.encode(), digest_size=4).digest()
        vector[int.from_bytes(digest, "big") % dimensions] += 1.0
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return [v / norm for v in vector]


def embeddings_answer(body: dict) -> tuple[int, dict]:
    """(status, JSON body) of an OpenAI embeddings request."""
    inputs = body.get("input")
    if isinstance(inputs, str):
        inputs = [inputs]
    if not isinstance(inputs, list) or not all(isinstance(item, str) for item in inputs) or not body.get("model"):
        return 400, {
            "error": {
                "message": "fake LLM: send model and input (a string or a list of strings)",
                "type": "invalid_request_error",
            }
        }
    data = [{"object": "embedding", "index": i, "embedding": embed(item)} for i, item in enumerate(inputs)]
    tokens = sum(len(_WORD.findall(item)) for item in inputs)
    return 200, {
        "object": "list",
        "data": data,
        "model": body["model"],
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }
