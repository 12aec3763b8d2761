"""Model misbehaviour, scripted on the fake server, in both tool-calling modes, through the routes:
the agent repairs it or ends with a clear message; it never hangs, crashes or loops."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from devtools.fake_llm import FakeLLM, Reply, error, text, tool_call
from tests.conftest import Api, of_type

MODES = ["native", "prompt"]


def call(mode: str, name: str, args: dict[str, Any], id: str | None = None, **opts: Any) -> Reply:
    """A tool call as each mode's model writes it."""
    if mode == "native":
        return tool_call(name, args, id=id, **opts)
    return text(f"Thought: I will use {name}.\nAction: {name}\nAction Input: {json.dumps(args)}", **opts)


def answer(mode: str, content: str) -> Reply:
    return call(mode, "final_answer", {"answer": content}) if mode == "native" else text(f"Final Answer: {content}")


async def start(api: Api, mode: str, message: str = "go") -> tuple[str, list[dict[str, Any]]]:
    await api.call("PUT", "config", {"tool_calling": mode}, expect=200)
    thread = await api.new_thread()
    await api.run(thread, message)
    return thread, await api.until_finished(thread)


def tool_messages(request: dict[str, Any], mode: str) -> list[str]:
    if mode == "native":
        return [m["content"] for m in request["messages"] if m["role"] == "tool"]
    return [
        m["content"] for m in request["messages"] if m["role"] == "user" and m["content"].startswith("Observation:")
    ]


@pytest.mark.parametrize("mode", MODES)
async def test_full_run_with_approval(api: Api, fake_llm: FakeLLM, notebook_kernel: str, mode: str) -> None:
    fake_llm.script(call(mode, "run_cell", {"code": "print(6 * 7)"}), answer(mode, "It is 42."))
    thread, first = await start(api, mode)
    approval = of_type(first, "approval_required")[0]
    await api.approve(thread, approval["id"])
    events = await api.until_finished(thread, first[-1]["seq"])
    assert of_type(events, "cell_output")[0]["output"]["text"] == "42\n"
    assert of_type(events, "final")[0]["answer"] == "It is 42."
    request = fake_llm.requests[-1]
    assert any("42" in m for m in tool_messages(request, mode))
    if mode == "prompt":
        assert "tools" not in request and "Action Input" in request["messages"][0]["content"]
        assert "Action:" not in "".join(e["text"] for e in of_type(first, "token")), "machinery is not shown"
    for sent in fake_llm.requests:
        assert "tool_choice" not in sent
        assert all(m.get("content") is not None for m in sent["messages"])


@pytest.mark.parametrize("mode", MODES)
async def test_empty_replies_retried_twice_then_explained(api: Api, fake_llm: FakeLLM, mode: str) -> None:
    fake_llm.script(Reply(empty_stream=True), Reply(empty_stream=True), Reply(empty_stream=True))
    _, events = await start(api, mode)
    assert len(fake_llm.requests) == 3
    assert "empty" in fake_llm.requests[1]["messages"][-1]["content"]
    final = of_type(events, "final")[0]
    assert "empty replies" in final["answer"]
    assert ('tool_calling = "prompt"' in final["answer"]) == (mode == "native")  # the advice fits the mode
    assert events[-1]["status"] == "completed"


@pytest.mark.parametrize("mode", MODES)
async def test_one_empty_reply_then_the_run_goes_on(api: Api, fake_llm: FakeLLM, mode: str) -> None:
    fake_llm.script(Reply(empty_stream=True), answer(mode, "Recovered."))
    _, events = await start(api, mode)
    assert of_type(events, "final")[0]["answer"] == "Recovered."


async def test_tool_call_written_as_json_text_is_run(api: Api, fake_llm: FakeLLM) -> None:
    todos = {"todos": [{"content": "Load data", "status": "in_progress"}]}
    fake_llm.script(text(json.dumps({"name": "write_todos", "arguments": todos})), text("Planned."))
    _, events = await start(api, "native")
    assert of_type(events, "todos")[0]["todos"] == todos["todos"]
    assert of_type(events, "tool_result")[0]["status"] == "ok"


async def test_several_calls_in_one_turn_are_cut_to_the_first(api: Api, fake_llm: FakeLLM) -> None:
    todos = {"todos": [{"content": "A", "status": "pending"}]}
    fake_llm.script(
        Reply(
            tool_calls=[
                ("write_todos", todos, "t1"),
                ("run_cell", {"code": "1"}, "t2"),
                ("add_markdown", {"content": "x"}, "t3"),
            ]
        ),
        text("ok"),
    )
    _, events = await start(api, "native")
    assert [e["name"] for e in of_type(events, "tool_call")] == ["write_todos"]
    assert not of_type(events, "approval_required")
    sent = fake_llm.requests[-1]["messages"]
    assistant = [m for m in sent if m["role"] == "assistant"][0]
    assert [c["id"] for c in assistant["tool_calls"]] == ["t1"]
    assert "these were not run: run_cell, add_markdown" in tool_messages(fake_llm.requests[-1], "native")[0]


@pytest.mark.parametrize("mode", MODES)
async def test_unknown_tool_and_bad_arguments_get_correctable_errors(api: Api, fake_llm: FakeLLM, mode: str) -> None:
    bad_json = (
        tool_call("write_todos", '{"todos": [', id="b1")
        if mode == "native"
        else text('Action: write_todos\nAction Input: {"todos": [')
    )
    fake_llm.script(
        call(mode, "make_coffee", {"size": "large"}),
        bad_json,
        call(mode, "write_todos", {"items": []}),
        answer(mode, "fixed"),
    )
    _, events = await start(api, mode)
    results = [r for r in of_type(events, "tool_result") if r["name"] != "final_answer"]
    assert [r["status"] for r in results] == ["error", "error", "error"]
    observations = tool_messages(fake_llm.requests[-1], mode)
    assert "no tool named 'make_coffee'" in observations[0] and "run_cell" in observations[0]
    assert "not valid JSON" in observations[1]
    assert "needs the argument 'todos'" in observations[2]
    assert of_type(events, "final")[0]["answer"] == "fixed"


@pytest.mark.parametrize("mode", MODES)
async def test_same_failing_call_three_times_ends_the_run(api: Api, fake_llm: FakeLLM, mode: str) -> None:
    fake_llm.script(
        *[call(mode, "write_todos", {"todos": "not a list"}) for _ in range(3)], answer(mode, "never reached")
    )
    _, events = await start(api, mode)
    final = of_type(events, "final")[0]
    assert "failed 3 times" in final["answer"] and "write_todos" in final["answer"]
    assert len(fake_llm.requests) == 3 and fake_llm.pending == 1


async def test_missing_ids_and_repeated_names_are_tolerated(api: Api, fake_llm: FakeLLM) -> None:
    todos = {"todos": [{"content": "X", "status": "pending"}]}
    fake_llm.script(tool_call("write_todos", todos, omit_ids=True, repeat_name=True), text("done"))
    _, events = await start(api, "native")
    result = of_type(events, "tool_result")[0]
    assert result["name"] == "write_todos" and result["status"] == "ok" and result["id"]


async def test_rate_limit_and_server_error_are_retried_visibly(api: Api, fake_llm: FakeLLM) -> None:
    await api.call("PUT", "config", {"tool_calling": "native"}, expect=200)
    fake_llm.script(error(429, "slow down", retry_after=0.1), text("after retry"))
    _, events = await start(api, "native")
    retry = of_type(events, "error")[0]
    assert retry["kind"] == "llm_retrying" and retry["retryable"] and "rate limiting" in retry["message"]
    assert of_type(events, "final")[0]["answer"] == "after retry"


async def test_stalled_stream_times_out_with_a_clear_error(api: Api, fake_llm: FakeLLM, jp_serverapp: Any) -> None:
    settings = jp_serverapp.web_app.settings["cellwright"].configuration
    settings.request_timeout, settings.max_retries = 0.5, 0
    fake_llm.script(Reply(content="partial", hang=True))
    _, events = await start(api, "native")
    problem = of_type(events, "error")[-1]
    assert problem["kind"] == "llm_timeout" and events[-1]["status"] == "failed"


async def test_request_timeout_is_between_reads_not_for_the_whole_answer(
    api: Api, fake_llm: FakeLLM, jp_serverapp: Any
) -> None:
    # One timer per stream re-arms itself from the last read (agent_core/llm/client.py IdleDeadline): an
    # answer slower in total than request_timeout, but never silent that long, completes.
    settings = jp_serverapp.web_app.settings["cellwright"].configuration
    settings.request_timeout, settings.max_retries = 0.5, 0
    fake_llm.script(text(["slow ", "but ", "steady ", "answer ", "in ", "time"], chunk_delay=0.25))
    _, events = await start(api, "native")
    assert events[-1]["status"] == "completed" and not of_type(events, "error")
    assert of_type(events, "final")[0]["answer"] == "slow but steady answer in time"


async def test_a_model_silent_before_its_headers_times_out(api: Api, fake_llm: FakeLLM, jp_serverapp: Any) -> None:
    settings = jp_serverapp.web_app.settings["cellwright"].configuration
    settings.request_timeout, settings.max_retries = 0.5, 0
    fake_llm.script(text("too late", delay_before=3))
    _, events = await start(api, "native")
    problem = of_type(events, "error")[-1]
    assert problem["kind"] == "llm_timeout" and "0.5 s" in problem["message"] and events[-1]["status"] == "failed"


async def test_dropped_stream_is_a_lost_connection_not_a_time_out(
    api: Api, fake_llm: FakeLLM, jp_serverapp: Any
) -> None:
    # A stream cut mid-body is a lost connection with either HTTP transport: not a time-out to wait out.
    jp_serverapp.web_app.settings["cellwright"].configuration.max_retries = 0
    fake_llm.script(Reply(content=["partial ", "answer"], drop=True))
    _, events = await start(api, "native")
    problem = of_type(events, "error")[-1]
    assert problem["kind"] == "llm_unreachable" and "timed out" not in problem["message"]
    assert "".join(e["text"] for e in of_type(events, "token")) == "partial answer" and events[-1]["status"] == "failed"


async def test_model_call_cap_ends_with_a_final_answer(api: Api, fake_llm: FakeLLM, jp_serverapp: Any) -> None:
    jp_serverapp.web_app.settings["cellwright"].configuration.max_model_calls = 3
    fake_llm.script(
        *[tool_call("write_todos", {"todos": [{"content": f"step {i}", "status": "pending"}]}) for i in range(5)]
    )
    _, events = await start(api, "native")
    assert len(fake_llm.requests) == 3
    assert "limit" in of_type(events, "final")[0]["answer"]


@pytest.mark.parametrize("mode", MODES)
async def test_a_reply_cut_at_max_reply_tokens_ends_saying_so(
    api: Api, fake_llm: FakeLLM, jp_serverapp: Any, mode: str
) -> None:
    """A small local model rambles until its window is full: the cap ends the reply, the answer says why."""
    jp_serverapp.web_app.settings["cellwright"].configuration.max_reply_tokens = 32
    ramble = [f"and then {n} " for n in range(500)]
    fake_llm.script(text(ramble if mode == "native" else ["Final Answer: ", *ramble]))
    _, events = await start(api, mode)
    assert fake_llm.requests[0]["max_tokens"] == 32
    final = of_type(events, "final")[0]["answer"]
    assert final.startswith("and then 0 and then 1 ") and "and then 40 " not in final
    assert final.endswith(
        "(My reply was cut off here: it reached the limit of 32 tokens a reply (the setting max_reply_tokens).)"
    )
    assert of_type(events, "run_finished")[0]["status"] == "completed"


async def test_auto_mode_falls_back_to_prompt_when_tools_are_refused(api: Api, fake_llm: FakeLLM) -> None:
    fake_llm.script(error(400, "tools are not supported by this server"), text("Final Answer: prompt mode works"))
    _, events = await start(api, "auto")
    assert of_type(events, "final")[0]["answer"] == "prompt mode works"
    assert "tools" in fake_llm.requests[0] and "tools" not in fake_llm.requests[1]


async def test_long_history_is_summarised_keeping_recent_turns(api: Api, fake_llm: FakeLLM, jp_serverapp: Any) -> None:
    jp_serverapp.web_app.settings["cellwright"].configuration.context_token_budget = 1000
    old = "OLD-DETAIL " * 300  # ~825 tokens
    fake_llm.script(
        text(f"First answer {old}"), text("SUMMARY: the user asked about OLD things"), text("Second answer")
    )
    thread, first = await start(api, "native", "first question")
    await api.run(thread, "second question")
    await api.until_finished(thread, first[-1]["seq"])
    summary_request, answer_request = fake_llm.requests[1], fake_llm.requests[2]
    assert "tools" not in summary_request and "OLD-DETAIL" in summary_request["messages"][1]["content"]
    sent = json.dumps(answer_request["messages"])
    assert "SUMMARY: the user asked about OLD things" in sent and "OLD-DETAIL" not in sent
    assert answer_request["messages"][-1] == {"role": "user", "content": "second question"}


@pytest.mark.parametrize("mode", MODES)
async def test_read_only_tool_result_nudges_towards_open_todos(api: Api, fake_llm: FakeLLM, mode: str) -> None:
    todos = {
        "todos": [{"content": "Find the data", "status": "completed"}, {"content": "Summarise it", "status": "pending"}]
    }
    fake_llm.script(call(mode, "write_todos", todos), call(mode, "list_files", {"path": "."}), answer(mode, "done"))
    _, events = await start(api, mode)
    observations = tool_messages(fake_llm.requests[-1], mode)
    assert "Continue with your todo list. Open: Summarise it." in observations[1]
    assert "Find the data" not in observations[1].split("Continue with")[1]
    assert "Continue with" not in observations[0], "only after a read-only tool"
    assert of_type(events, "final")[0]["answer"] == "done"


async def test_server_error_is_retried(api: Api, fake_llm: FakeLLM) -> None:
    fake_llm.script(error(503, "overloaded"), text("back"))
    _, events = await start(api, "native")
    assert [e["kind"] for e in of_type(events, "error")] == ["llm_retrying"]
    assert "503" in of_type(events, "error")[0]["message"]
    assert of_type(events, "final")[0]["answer"] == "back"


async def test_misshapen_stream_parts_are_skipped_not_a_crash(api: Api, fake_llm: FakeLLM) -> None:
    # An endpoint (or whoever controls it) that breaks the chunk format where a field is expected to be
    # an object or a string: those parts are skipped, the rest of the turn is read.
    misshapen = [
        {"choices": 5},
        {"choices": ["a choice that is a string"]},
        {"choices": [{"delta": "a delta that is a string"}]},
        {"choices": [{"delta": {"tool_calls": "not a list"}}]},
        {"choices": [{"delta": {"tool_calls": [7, {"index": 0, "id": 5, "function": {"name": 9, "arguments": []}}]}}]},
    ]
    fake_llm.script(Reply(content="Still here.", misshapen=misshapen))
    _, events = await start(api, "native")
    assert events[-1]["status"] == "completed", events
    assert of_type(events, "final")[0]["answer"] == "Still here."
    assert not of_type(events, "error") and not of_type(events, "tool_call")


async def test_prompt_mode_keeps_the_tool_catalog_a_prefix_shared_across_notebooks(api: Api, fake_llm: FakeLLM) -> None:
    """A server that caches prompt prefixes (llama.cpp, vLLM, a hosted API) evaluates the tool catalog once:
    what changes from run to run (the notebook's path) comes after it."""
    await api.call("PUT", "config", {"tool_calling": "prompt"}, expect=200)
    fake_llm.script(text("Final Answer: one"), text("Final Answer: two"))
    for path in ("first.ipynb", "elsewhere/second.ipynb"):
        thread = await api.new_thread(path)
        await api.run(thread, "go", notebook_path=path)
        await api.until_finished(thread)
    first, second = (request["messages"][0]["content"] for request in fake_llm.requests)
    shared = len(os.path.commonprefix([first, second]))
    catalog_end = first.index("\n\n", first.index("- final_answer:"))
    assert first.startswith("You can use these tools:") and shared >= catalog_end, first[shared - 80 : shared + 80]
    assert "first.ipynb" in first[catalog_end:] and "elsewhere/second.ipynb" in second
    assert first.endswith("Final Answer: <your answer in Markdown>")
