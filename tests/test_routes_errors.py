"""Bad input gets a clear 4xx (or an `error` event) and loses nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_core.loop.state import appended
from devtools.fake_llm import FakeLLM, error, text, tool_call
from tests.conftest import NOTEBOOK, Api, of_type


async def test_unknown_thread_is_404_on_every_route(api: Api) -> None:
    for method, path, body in [
        ("GET", "threads/nope", None),
        ("DELETE", "threads/nope", None),
        ("GET", "threads/nope/events", None),
        ("POST", "threads/nope/runs", {"message": "hi"}),
        ("POST", "threads/nope/approvals/call_1", {"decision": "approve"}),
        ("POST", "threads/nope/cancel", {}),
    ]:
        code, data = await api.call(method, path, body)
        assert code == 404, (method, path, data)
        assert data["error"] == "thread_not_found" and "GET cellwright/api/threads" in data["message"]


@pytest.mark.parametrize("path", ["threads", "threads/{t}/runs", "threads/{t}/approvals/c1", "config"])
async def test_malformed_json_is_400(api: Api, path: str) -> None:
    thread = await api.new_thread()
    method = "PUT" if path == "config" else "POST"
    code, data = await api.call(method, path.format(t=thread), "{not json")
    assert code == 400 and data["error"] == "bad_json" and "not valid JSON" in data["message"]


async def test_missing_and_bad_fields(api: Api) -> None:
    thread = await api.new_thread()
    code, data = await api.call("POST", f"threads/{thread}/runs", {"notebook_path": NOTEBOOK})
    assert (code, data["error"]) == (400, "missing_fields") and "message" in data["message"]
    code, data = await api.call("POST", f"threads/{thread}/runs", {"message": "  "})
    assert code == 400
    code, data = await api.call("POST", f"threads/{thread}/runs", {"message": "hi", "mode": "turbo"})
    assert (code, data["error"]) == (400, "bad_mode")
    code, data = await api.call(
        "POST", f"threads/{thread}/runs", {"message": "hi", "notebook_path": "../../etc/x.ipynb"}
    )
    assert (code, data["error"]) == (400, "path_outside_root")
    code, data = await api.call("POST", f"threads/{thread}/approvals/c1", {"decision": "maybe"})
    assert (code, data["error"]) == (400, "bad_decision")
    code, data = await api.call("POST", f"threads/{thread}/approvals/c1", {"decision": "edit"})
    assert (code, data["error"]) == (400, "bad_args")
    code, data = await api.call("POST", f"threads/{thread}/approvals/c1", {"decision": "approve"})
    assert (code, data["error"]) == (409, "not_pending") and "nothing is pending" in data["message"]


async def test_conflicts_while_active_and_while_awaiting(api: Api, fake_llm: FakeLLM, notebook_kernel: str) -> None:
    fake_llm.script(text("slow answer", delay_before=1.5), tool_call("run_cell", {"code": "1"}, id="c1"))
    thread = await api.new_thread()
    await api.run(thread, "first")
    code, data = await api.call("POST", f"threads/{thread}/runs", {"message": "second"})
    assert (code, data["error"]) == (409, "run_active")
    code, data = await api.call("POST", f"threads/{thread}/approvals/c1", {"decision": "approve"})
    assert code == 409
    done = await api.until_finished(thread)
    assert done[-1]["status"] == "completed"
    await api.run(thread, "now run a cell")
    waiting = await api.until_finished(thread, done[-1]["seq"])
    assert waiting[-1]["status"] == "awaiting_approval"
    code, data = await api.call("POST", f"threads/{thread}/runs", {"message": "third"})
    assert (code, data["error"]) == (409, "approval_pending")
    code, data = await api.approve(thread, "c1", "edit", args={"code": 5})
    assert (code, data["error"]) == (400, "bad_args")
    code, data = await api.approve(thread, "other-call")
    assert (code, data["error"]) == (409, "not_pending") and "c1" in data["message"]
    # Stop while awaiting: the call is answered as stopped and the thread is usable again.
    code, _ = await api.call("POST", f"threads/{thread}/cancel", {})
    assert code == 202
    _, detail = await api.call("GET", f"threads/{thread}")
    assert detail["pending_approval"] is None and detail["status"] == "cancelled"
    assert [m["role"] for m in detail["messages"]] == ["user", "assistant", "user", "assistant", "tool"]


async def test_notebook_without_kernel_is_told_to_the_model(api: Api, fake_llm: FakeLLM) -> None:
    fake_llm.script(tool_call("run_cell", {"code": "1 + 1"}, id="c1"), text("I need a kernel."))
    thread = await api.new_thread()
    await api.run(thread, "compute")
    first = await api.until_finished(thread)
    await api.approve(thread, "c1")
    events = await api.until_finished(thread, first[-1]["seq"])
    result = of_type(events, "tool_result")[0]
    assert result["status"] == "error" and f"no kernel for {NOTEBOOK}" in result["summary"]
    tool_message = [m for m in fake_llm.requests[-1]["messages"] if m["role"] == "tool"][0]
    assert "open the notebook or start its kernel" in tool_message["content"]


async def test_llm_errors_end_the_run_with_a_clear_error(api: Api, fake_llm: FakeLLM) -> None:
    fake_llm.script(error(401, "Incorrect API key provided"), error(404, "The model does not exist"))
    thread = await api.new_thread()
    await api.run(thread, "hello")
    events = await api.until_finished(thread)
    problem = of_type(events, "error")[0]
    assert problem["kind"] == "llm_auth" and "OPENAI_API_KEY" in problem["message"]
    assert "sk-test-secret-key" not in json.dumps(events)
    assert events[-1]["status"] == "failed"
    await api.run(thread, "hello again")
    events = await api.until_finished(thread, events[-1]["seq"])
    assert of_type(events, "error")[0]["kind"] == "llm_model_not_found"
    _, detail = await api.call("GET", f"threads/{thread}")
    assert [m["content"] for m in detail["messages"]] == ["hello", "hello again"]  # nothing lost


async def test_unreachable_and_unconfigured_llm(api: Api) -> None:
    thread = await api.new_thread()
    code, _ = await api.call("PUT", "config", {"base_url": "http://127.0.0.1:9/v1"})
    assert code == 200
    await api.run(thread, "hello")
    events = await api.until_finished(thread)
    assert [e["kind"] for e in of_type(events, "error")] == ["llm_retrying", "llm_unreachable"]
    assert of_type(events, "error")[0]["retryable"] is True
    code, _ = await api.call("PUT", "config", {"model": ""})
    code, data = await api.call("POST", f"threads/{thread}/runs", {"message": "hi"})
    assert (code, data["error"]) == (400, "llm_not_configured") and "CELLWRIGHT_MODEL" in data["message"]
    _, health = await api.call("GET", "health")
    assert health["llm_configured"] is False


async def test_config_never_returns_the_key(api: Api) -> None:
    code, config = await api.call("GET", "config")
    assert code == 200 and config["api_key_set"] is True and "api_key" not in config
    code, config = await api.call("PUT", "config", {"api_key": "sk-new-secret", "auto_approve": ["run_cell"]})
    assert code == 200 and "sk-new-secret" not in json.dumps(config) and config["auto_approve"] == ["run_cell"]
    code, data = await api.call("PUT", "config", {"auto_approve": ["rm_rf"]})
    assert code == 400 and "rm_rf" in data["message"]
    code, data = await api.call("PUT", "config", {"colour": "blue"})
    assert code == 400 and "colour" in data["message"]
    _, health = await api.call("GET", "health")
    assert set(health) == {
        "version",
        "model",
        "tool_calling",
        "checkpointer",
        "llm_configured",
        "shared_document",
        "sandbox",
    }
    assert health["checkpointer"] == "sqlite" and "sk-" not in json.dumps(health)


async def test_auto_approved_cell_runs_without_a_card(api: Api, fake_llm: FakeLLM, notebook_kernel: str) -> None:
    await api.call("PUT", "config", {"auto_approve": ["run_cell"]}, expect=200)
    fake_llm.script(tool_call("run_cell", {"code": "print('auto')"}, id="c1"), text("done"))
    thread = await api.new_thread()
    await api.run(thread, "go")
    events = await api.until_finished(thread)
    assert not of_type(events, "approval_required") and of_type(events, "tool_call")[0]["needs_approval"] is False
    assert of_type(events, "cell_output")[0]["output"]["text"] == "auto\n"


async def test_requests_without_credentials_are_refused(jp_fetch: Any) -> None:
    response = await jp_fetch(
        "cellwright", "api", "threads", method="GET", headers={"Authorization": ""}, raise_error=False
    )
    assert response.code == 403


@pytest.mark.also_postgres
async def test_redrive_after_crash_before_interrupt(api: Api, jp_serverapp: Any) -> None:
    """A crash between saving the model's step and raising the interrupt: the next request asks
    (on PostgreSQL too: the saved step is read back from the shared database)."""
    thread = await api.new_thread()
    manager = jp_serverapp.web_app.settings["cellwright"].run_manager
    graph = await manager.graph()
    call = {"id": "c9", "type": "function", "function": {"name": "run_cell", "arguments": '{"code": "1"}'}}
    config = {"configurable": {"thread_id": thread}}
    await graph.aupdate_state(config, {"messages": appended({"role": "user", "content": "x"})}, as_node="__start__")
    await graph.aupdate_state(
        config, {"messages": appended({"role": "assistant", "content": "", "tool_calls": [call]})}, as_node="model"
    )
    assert (await graph.aget_state(config)).next == ("tools",)
    _, detail = await api.call("GET", f"threads/{thread}")
    assert detail["pending_approval"] is None, "a read drives nothing"
    assert not await api.events(thread)
    code, data = await api.call("POST", f"threads/{thread}/runs", {"message": "next"})
    assert (code, data["error"]) == (409, "approval_pending"), "the next POST recovers the thread first"
    _, detail = await api.call("GET", f"threads/{thread}")
    assert detail["pending_approval"]["id"] == "c9" and detail["status"] == "awaiting_approval"
    events = await api.events(thread)
    assert of_type(events, "approval_required")[0]["id"] == "c9"


async def test_thread_run_by_a_kernel_is_busy_for_the_panel(api: Api, jp_serverapp: Any) -> None:
    from agent_core.storage.thread_store import ThreadStore

    thread = await api.new_thread()
    app = jp_serverapp.web_app.settings["cellwright"]
    kernel_side = ThreadStore(
        app.threads._path, owner=app.threads.owner, holder="a %agent call in a kernel"
    )  # what the magic opens
    await kernel_side.open()
    try:
        assert await kernel_side.take_lease(thread)
        code, data = await api.call("POST", f"threads/{thread}/runs", {"message": "hi"})
        assert (code, data["error"]) == (409, "run_active") and "%agent" in data["message"]
        await kernel_side.release_lease(thread)
    finally:
        await kernel_side.close()
