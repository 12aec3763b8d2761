"""Inline completion's pieces without a server: the settings' endpoint and key, the boundary and
the parse check, the prompt's bounds and masking, and the cache's typed-ahead answers."""

from __future__ import annotations

from typing import Any

import pytest
from traitlets.config import Config

from agent_core.completion.prompt import CELLS_CHARS, PREFIX_CHARS, CompletionContext
from agent_core.completion.service import CompletionService
from agent_core.completion.suggestion import Boundary, fits_python, without_overlap
from agent_core.config.configurable import Cellwright


def test_the_completion_endpoint_gets_only_its_own_key() -> None:
    config = Config({"Cellwright": {"model": "chat", "base_url": "http://chat:8000/v1", "api_key": "chat-key"}})
    same = Cellwright(environ={}, config=config).completion_endpoint()
    assert (same.model, same.base_url, same.api_key, same.fim) == ("chat", "http://chat:8000/v1", "chat-key", "auto")
    config.Cellwright.completion_base_url = "http://coder:9000/v1"
    config.Cellwright.completion_model = "coder"
    other = Cellwright(environ={}, config=config).completion_endpoint()
    assert (other.model, other.base_url, other.api_key) == ("coder", "http://coder:9000/v1", "")
    config.Cellwright.completion_base_url = "http://chat:8000/v2"  # the same endpoint (scheme, host, port)
    assert Cellwright(environ={}, config=config).completion_endpoint().api_key == "chat-key"


def feed(prefix: str, pieces: list[str], chat: bool = False) -> Boundary:
    boundary = Boundary(prefix, chat)
    for piece in pieces:
        boundary.feed(piece)
    return boundary


@pytest.mark.parametrize(
    ("prefix", "pieces", "chat", "shown", "done"),
    [
        ("df.", ["groupby('city')", ".sum()\n", "\n", "print(1)"], False, "groupby('city').sum()", True),
        ("def f(x):\n    ", ["return x + 1\n", "print(f(2))\n"], False, "return x + 1", True),
        (
            "for i in range(3):",
            ["```py", "thon\n\n    print(i)\n", "    n += i\n```", "\nmore"],
            True,
            "\n    print(i)\n    n += i",
            True,
        ),
        ("x = ", ["compute(", "1)"], False, "compute(1)", False),
        ("if ok:\n    ", ["a = 0\n" + "    a += 1\n" * 30], False, "a = 0" + "\n    a += 1" * 15, True),  # 16 lines
    ],
)
def test_the_boundary(prefix: str, pieces: list[str], chat: bool, shown: str, done: bool) -> None:
    boundary = feed(prefix, pieces, chat)
    assert boundary.done is done
    assert (boundary.text if done else boundary.final()) == shown


def test_parse_check_and_overlap() -> None:
    assert fits_python("df.", "groupby('city')", "\n")
    assert not fits_python("df.", "groupby('city'", "\n")
    assert fits_python("%matplotlib inline\nx = (", "1", ")\n")  # magics count as statements
    assert fits_python("x = (\ny = ", "2", "\n")  # the error lies before the cursor: not the suggestion's
    assert fits_python("%%bash\nls ", "-la", "")  # a cell magic's body is not Python
    assert without_overlap("print(x)", ")\n") == "print(x"
    assert without_overlap("a + b", "\nc") == "a + b"


def test_the_prompt_is_bounded_and_masks_credentials() -> None:
    cells = ["x = 1", "y" * (CELLS_CHARS * 2), "import os"]
    context = CompletionContext.bounded(
        "a.ipynb", "python", "p" * (PREFIX_CHARS * 2) + "url = 'https://me:pw@host/db'\n", "s" * 10_000, cells, ""
    )
    prompt, suffix = context.fim()
    assert len(prompt) < PREFIX_CHARS + CELLS_CHARS + 200 and len(suffix) <= 2000
    assert "me:pw" not in prompt and "host/db" in prompt
    assert context.cells_above[-1] == "x = 1"  # nearest last, next to the prefix
    assert "import os" not in prompt  # beyond the budget: the far cell is left out
    messages = context.chat()
    assert "<CURSOR>" in messages[-1]["content"] and "me:pw" not in messages[-1]["content"]


def test_the_cache_answers_a_prefix_typed_ahead_into_a_suggestion() -> None:
    service: Any = CompletionService(lambda: None)  # type: ignore[arg-type,return-value]
    key = ("m", "u", "auto", "a.py")
    service._store(key, "total = ", "\n", "price * qty")
    assert service._lookup(key, "total = ", "\n", 60) == "price * qty"
    assert service._lookup(key, "total = pri", "\n", 60) == "ce * qty"
    assert service._lookup(key, "total = pro", "\n", 60) is None  # typed something else
    assert service._lookup(key, "total = price * qty", "\n", 60) is None  # nothing left to suggest
    assert service._lookup(key, "total = ", "", 60) is None  # another suffix
    assert service._lookup(key, "total = ", "\n", 0) is None  # expired
