"""The task benchmark against the real small model the suite already serves (llama.cpp's server with
SmolLM2-135M, as in tests/test_local_llm.py): five easy tasks, run to their end. The score is printed
(the run's terminal summary, .output/bench/), not asserted: a 135M model cannot do analysis."""

from __future__ import annotations

from typing import Any

import pytest

from bench.agent_tasks.datasets import generate
from bench.agent_tasks.report import table
from bench.agent_tasks.runner import Settings, cellwright_server, prepare, run_benchmark
from bench.agent_tasks.tasks import all_tasks, select
from devtools.llama_server import MAX_REPLY_TOKENS, missing
from tests.bench_tables import record

MISSING = missing()
pytestmark = [
    pytest.mark.skipif(bool(MISSING), reason="; ".join(MISSING) or "ready"),
    # The model's speed decides whether each task ends within its limit (beside the other tests, on the
    # 2-core machine, a task ran out of time): after the parallel part, on its own.
    pytest.mark.alone,
]
FIVE = "sales_rows,sales_products,emp_count_engineering,sql_customers,messy_rows"


# Served with the model's own chat template (tests/conftest.py's llama_prompt_server): prompt tool calling
# (streamed function calling with automatic tool choice gives an empty stream on this server, TESTING.md).
@pytest.mark.timeout(600)
def test_five_tasks_against_the_local_model(llama_prompt_server: str, tmp_path_factory: Any) -> None:
    tasks = select(all_tasks(), FIVE)
    settings = Settings(
        llama_prompt_server,
        "smollm2",
        tool_calling="prompt",
        limit_s=90,
        max_model_calls=4,
        max_reply_tokens=MAX_REPLY_TOKENS,
        tasks=FIVE,
    )
    expected = prepare(tmp_path_factory.mktemp("answers"), tasks)
    with cellwright_server(settings, base=tmp_path_factory.mktemp("bench-server")) as server:
        generate(server.root)
        report = run_benchmark(server.url, server.root, tasks, settings, expected)
    record("agent_tasks: SmolLM2-135M (llama.cpp, prompt tool calling)", table(report))
    results = report["results"]
    assert [r["id"] for r in results] == [t.id for t in tasks] and len(results) == 5
    # Every task ended by itself (its replies capped at MAX_REPLY_TOKENS: a 135M model may otherwise ramble
    # until its window is full and the runner stops it at its time limit), the model was called and its
    # tokens counted.
    assert all(r["status"] in ("completed", "failed", "cancelled") for r in results), results
    # Every task's stream began: a prompt longer than the served context ends it empty, which the loop
    # reports as empty replies (what this test missed while the server's window was 4096).
    assert all(r["first_token_s"] is not None for r in results), results
    assert all(r["model_calls"] >= 1 and r["prompt_tokens"] > 0 for r in results), results
    assert all(r["completion_tokens"] > 0 and not r["error"] for r in results), results
