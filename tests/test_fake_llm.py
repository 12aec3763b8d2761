"""Checks the fake LLM server against the real openai SDK (sync and async clients)."""

from __future__ import annotations

import http.client
import json
import subprocess
import sys
import threading
import time

import openai
import pytest

from devtools.fake_llm import EXHAUSTED_MESSAGE, FakeLLM, Reply, error, text, tool_call

MESSAGES = [{"role": "system", "content": "You are Cellwright."}, {"role": "user", "content": "hi"}]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "run_cell",
            "parameters": {"type": "object", "properties": {"code": {"type": "string"}}},
        },
    }
]


@pytest.fixture
def llm():
    with FakeLLM() as fake:
        yield fake


def client(llm: FakeLLM, **kw) -> openai.OpenAI:
    kw.setdefault("max_retries", 0)
    kw.setdefault("timeout", 5)
    return openai.OpenAI(base_url=llm.base_url, api_key="sk-fake", **kw)


def aclient(llm: FakeLLM, **kw) -> openai.AsyncOpenAI:
    kw.setdefault("max_retries", 0)
    kw.setdefault("timeout", 5)
    return openai.AsyncOpenAI(base_url=llm.base_url, api_key="sk-fake", **kw)


def stream(c: openai.OpenAI, **kw) -> list:
    return list(c.chat.completions.create(model="fake-model", messages=MESSAGES, stream=True, **kw))


def deltas(chunks) -> list:
    return [ch.choices[0].delta for ch in chunks if ch.choices]


def tool_call_deltas(chunks) -> list:
    return [tc for d in deltas(chunks) for tc in (d.tool_calls or [])]


def accumulate_tool_calls(chunks) -> dict[int, dict]:
    """What a careful client does: id/name set once, arguments concatenated."""
    calls: dict[int, dict] = {}
    for tc in tool_call_deltas(chunks):
        acc = calls.setdefault(tc.index, {"id": None, "name": None, "arguments": ""})
        acc["id"] = acc["id"] or tc.id
        if tc.function:
            acc["name"] = acc["name"] or tc.function.name
            acc["arguments"] += tc.function.arguments or ""
    return calls


# -- text ----------------------------------------------------------------------


def test_stream_text_sync(llm):
    llm.script(text("Hello there, this is the fake model."))
    chunks = stream(client(llm))
    ds = deltas(chunks)
    assert ds[0].role == "assistant" and ds[0].content == ""
    pieces = [d.content for d in ds if d.content]
    assert len(pieces) >= 5
    assert "".join(pieces) == "Hello there, this is the fake model."
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert all(ch.choices[0].finish_reason is None for ch in chunks[:-1])
    assert {ch.id for ch in chunks} == {chunks[0].id} and chunks[0].id.startswith("chatcmpl-")
    assert chunks[0].model == "fake-model" and chunks[0].object == "chat.completion.chunk"


@pytest.mark.asyncio
async def test_stream_text_async_and_requests_recorded(llm):
    llm.script(text("First answer."), text(["exact", " chunks", "<thi", "nk>"]))
    c = aclient(llm)
    got = []
    async for ch in await c.chat.completions.create(model="m1", messages=MESSAGES, tools=TOOLS, stream=True):
        got.append(ch)
    assert "".join(d.content or "" for d in deltas(got)) == "First answer."
    second = MESSAGES + [{"role": "assistant", "content": "First answer."}, {"role": "user", "content": "more"}]
    got = [ch async for ch in await c.chat.completions.create(model="m2", messages=second, stream=True)]
    assert [d.content for d in deltas(got) if d.content] == ["exact", " chunks", "<thi", "nk>"]
    assert got[0].model == "m2"
    await c.close()

    reqs = llm.requests
    assert len(reqs) == 2
    assert reqs[0]["model"] == "m1" and reqs[0]["stream"] is True
    assert reqs[0]["messages"] == MESSAGES
    assert reqs[0]["tools"][0]["function"]["name"] == "run_cell"
    assert reqs[1]["messages"][-2:] == second[-2:]
    assert "tools" not in reqs[1]
    assert llm.request_headers[1]["authorization"] == "Bearer sk-fake"
    assert llm.request_headers[1]["x-stainless-async"].startswith("async")
    assert llm.pending == 0


def test_include_usage_and_empty_replies(llm):
    llm.script(text("a b"), Reply(), Reply(empty_stream=True))
    chunks = stream(client(llm), stream_options={"include_usage": True})
    assert chunks[-1].choices == [] and chunks[-1].usage.total_tokens > 0
    assert chunks[-2].choices[0].finish_reason == "stop"
    assert all(ch.usage is None for ch in chunks[:-1])
    # Reply() with nothing: role chunk + finish chunk, no content.
    chunks = stream(client(llm))
    assert len(chunks) == 2 and not any(d.content for d in deltas(chunks))
    assert chunks[-1].choices[0].finish_reason == "stop"
    # empty_stream: only "data: [DONE]" -> the SDK yields no chunk at all.
    assert stream(client(llm)) == []


def test_reasoning_content_is_an_extra_field(llm):
    llm.script(Reply(reasoning="Let me think.", content="42"))
    ds = deltas(stream(client(llm)))
    # Not a declared SDK field; pydantic keeps it as an extra attribute.
    assert "".join(getattr(d, "reasoning_content", None) or "" for d in ds) == "Let me think."
    assert "".join(d.content or "" for d in ds) == "42"


# -- tool calls --------------------------------------------------------------------


def test_stream_tool_call(llm):
    args = {"todos": [{"title": "load data", "done": False}, {"title": "plot", "done": True}]}
    llm.script(tool_call("write_todos", args, id="call_1"))
    chunks = stream(client(llm), tools=TOOLS)
    tcs = tool_call_deltas(chunks)
    assert tcs[0].id == "call_1" and tcs[0].type == "function"
    assert tcs[0].function.name == "write_todos" and tcs[0].function.arguments == ""
    assert len(tcs) == 4  # header + 3 argument pieces (default split_args_into=3)
    assert all(tc.id is None and tc.function.name is None for tc in tcs[1:])
    calls = accumulate_tool_calls(chunks)
    assert calls[0]["name"] == "write_todos" and json.loads(calls[0]["arguments"]) == args
    assert chunks[-1].choices[0].finish_reason == "tool_calls"
    assert not any(d.content for d in deltas(chunks))


def test_tool_call_auto_id_and_split(llm):
    llm.script(
        tool_call("run_cell", {"code": "x = 1"}, split_args_into=7),
        tool_call("run_cell", {"code": "y = 2"}, split_args_into=1),
        tool_call("run_cell", {"code": "z = 3"}, split_args_into=0),
    )
    c = client(llm)
    tcs = tool_call_deltas(stream(c))
    assert tcs[0].id.startswith("call_") and len(tcs) == 1 + 7
    tcs = tool_call_deltas(stream(c))
    assert [tc.function.arguments for tc in tcs] == ["", '{"code": "y = 2"}']
    # split_args_into=0: name and full arguments in one delta (vLLM/Ollama style).
    tcs = tool_call_deltas(stream(c))
    assert len(tcs) == 1 and tcs[0].function.name == "run_cell"
    assert json.loads(tcs[0].function.arguments) == {"code": "z = 3"}


def test_tool_call_omit_ids(llm):
    llm.script(tool_call("run_cell", {"code": "x = 1"}, omit_ids=True))
    chunks = stream(client(llm))
    tcs = tool_call_deltas(chunks)
    assert all(tc.id is None for tc in tcs)  # the SDK just gives id=None
    calls = accumulate_tool_calls(chunks)
    assert calls[0]["id"] is None and json.loads(calls[0]["arguments"]) == {"code": "x = 1"}


def test_tool_call_repeat_name(llm):
    llm.script(
        tool_call("run_cell", {"code": "x = 1"}, repeat_name=True),
        tool_call("run_cell", {"code": "x = 1"}, repeat_name=True),
    )
    c = client(llm)
    tcs = tool_call_deltas(stream(c))
    assert all(tc.function.name == "run_cell" for tc in tcs)  # name in every delta
    naive = "".join(tc.function.name for tc in tcs)
    assert naive == "run_cell" * 4  # concatenating names breaks
    # Surprise: the SDK's own stream helper concatenates names the same way.
    with c.chat.completions.stream(model="fake-model", messages=MESSAGES, tools=TOOLS) as s:
        final = s.get_final_completion()
    assert final.choices[0].message.tool_calls[0].function.name == "run_cell" * 4


def test_several_tool_calls_with_text(llm):
    llm.script(
        Reply(
            content="thinking",
            tool_calls=[("run_cell", {"code": "a"}, "call_a"), ("final_answer", {"answer": "done"}, "call_9")],
        )
    )
    chunks = stream(client(llm))
    assert "".join(d.content or "" for d in deltas(chunks)) == "thinking"
    calls = accumulate_tool_calls(chunks)
    assert calls == {
        0: {"id": "call_a", "name": "run_cell", "arguments": '{"code": "a"}'},
        1: {"id": "call_9", "name": "final_answer", "arguments": '{"answer": "done"}'},
    }
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_invalid_json_arguments(llm):
    llm.script(tool_call("run_cell", raw_args='{"code": "x = '), tool_call("run_cell", "not json"))
    c = client(llm)
    for expected in ['{"code": "x = ', "not json"]:
        calls = accumulate_tool_calls(stream(c))
        assert calls[0]["arguments"] == expected
        with pytest.raises(json.JSONDecodeError):
            json.loads(calls[0]["arguments"])


# -- non-streaming -----------------------------------------------------------------


def test_non_streaming(llm):
    llm.script(text("Plain answer."), Reply(content="x", tool_calls=[("run_cell", {"code": "1"}, "call_7")]))
    c = client(llm)
    r = c.chat.completions.create(model="fake-model", messages=MESSAGES)
    assert r.object == "chat.completion"
    assert r.choices[0].message.content == "Plain answer."
    assert r.choices[0].message.tool_calls is None and r.choices[0].finish_reason == "stop"
    r = c.chat.completions.create(model="fake-model", messages=MESSAGES, tools=TOOLS)
    tc = r.choices[0].message.tool_calls[0]
    assert (tc.id, tc.function.name, json.loads(tc.function.arguments)) == ("call_7", "run_cell", {"code": "1"})
    assert r.choices[0].finish_reason == "tool_calls" and r.usage.prompt_tokens > 0
    assert "stream" not in llm.requests[0]


def test_models_list(llm):
    assert [m.id for m in client(llm).models.list()] == ["fake-model"]


# -- errors --------------------------------------------------------------------------


def test_errors_map_to_sdk_exceptions(llm):
    llm.script(
        error(429, "rate limited", retry_after=7),
        error(401, "bad key"),
        error(404, "model not found"),
        error(500, "boom"),
    )
    c = client(llm)
    with pytest.raises(openai.RateLimitError) as e:
        stream(c)
    assert e.value.status_code == 429 and "rate limited" in str(e.value)
    assert e.value.response.headers["retry-after"] == "7"
    assert e.value.body == {"message": "rate limited", "type": "requests", "param": None, "code": "rate_limit_exceeded"}
    with pytest.raises(openai.AuthenticationError, match="bad key"):
        stream(c)
    with pytest.raises(openai.NotFoundError, match="model not found") as e:
        c.chat.completions.create(model="nope", messages=MESSAGES)
    assert e.value.code == "model_not_found"
    with pytest.raises(openai.InternalServerError, match="boom"):
        stream(c)


def test_sdk_retries_consume_script_entries(llm):
    llm.script(error(429, "slow down", retry_after=0.05), text("after retry"))
    chunks = stream(client(llm, max_retries=1))
    assert "".join(d.content or "" for d in deltas(chunks)) == "after retry"
    assert len(llm.requests) == 2
    assert [h["x-stainless-retry-count"] for h in llm.request_headers] == ["0", "1"]


def test_script_exhausted(llm):
    llm.script(text("only one"))
    c = client(llm)
    stream(c)
    with pytest.raises(openai.InternalServerError) as e:
        stream(c)
    assert e.value.status_code == 500
    assert EXHAUSTED_MESSAGE in str(e.value) and "#2" in str(e.value)


def test_callable_script_item(llm):
    llm.script(
        lambda body: text("echo: " + body["messages"][-1]["content"]),
        lambda body: 1 / 0,
    )
    c = client(llm)
    assert "".join(d.content or "" for d in deltas(stream(c))) == "echo: hi"
    with pytest.raises(openai.InternalServerError, match="ZeroDivisionError"):
        stream(c)


# -- timing ----------------------------------------------------------------------------


def test_chunk_delay_spaces_chunks(llm):
    llm.script(Reply(content="one two three four", chunk_delay=0.1))
    t0 = time.monotonic()
    times = []
    for ch in client(llm).chat.completions.create(model="m", messages=MESSAGES, stream=True):
        if ch.choices and ch.choices[0].delta.content:
            times.append(time.monotonic() - t0)
    assert len(times) == 4
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    assert all(g >= 0.06 for g in gaps), gaps


def test_delay_before(llm):
    llm.script(Reply(content="late", delay_before=0.3))
    t0 = time.monotonic()
    s = client(llm).chat.completions.create(model="m", messages=MESSAGES, stream=True)
    assert time.monotonic() - t0 >= 0.25  # create() waits for the response headers
    assert "".join(d.content or "" for d in deltas(list(s))) == "late"


def test_hang_times_out_and_server_stops_promptly():
    fake = FakeLLM().start()
    fake.script(Reply(hang=True), Reply(content="partial output", hang=True))
    c = client(fake, timeout=0.3)
    s = c.chat.completions.create(model="m", messages=MESSAGES, stream=True)  # headers arrive
    t0 = time.monotonic()
    with pytest.raises(openai.APITimeoutError):
        list(s)
    assert 0.2 <= time.monotonic() - t0 < 2
    # Stalls mid-stream: the partial content is delivered first.
    got = []
    with pytest.raises(openai.APITimeoutError):
        for ch in c.chat.completions.create(model="m", messages=MESSAGES, stream=True):
            got.append(ch.choices[0].delta.content or "")
    assert "".join(got) == "partial output"
    t0 = time.monotonic()
    fake.stop()  # the two handlers are still hanging
    assert time.monotonic() - t0 < 1


@pytest.mark.asyncio
async def test_async_non_streaming_hang_times_out():
    fake = FakeLLM().start()
    fake.script(Reply(hang=True), Reply(hang=True, delay_before=30))
    c = aclient(fake, timeout=0.3)
    with pytest.raises(openai.APITimeoutError):
        await c.chat.completions.create(model="m", messages=MESSAGES)
    with pytest.raises(openai.APITimeoutError):
        await c.chat.completions.create(model="m", messages=MESSAGES, stream=True)
    await c.close()
    t0 = time.monotonic()
    fake.stop()
    assert time.monotonic() - t0 < 1


def test_stop_interrupts_a_client_waiting_on_hang():
    fake = FakeLLM().start()
    fake.script(Reply(hang=True))
    errors: list[BaseException] = []

    def consume():
        try:
            list(stream(client(fake, timeout=30)))
        except BaseException as exc:
            errors.append(exc)

    t = threading.Thread(target=consume)
    t.start()
    fake.wait_for_requests(1, timeout=5)
    t0 = time.monotonic()
    fake.stop()
    t.join(5)
    assert not t.is_alive() and time.monotonic() - t0 < 2
    assert isinstance(errors[0], openai.APIConnectionError)  # the stream was cut, not completed


def test_stop_closes_pooled_keepalive_connections():
    fake = FakeLLM().start()
    fake.script(text("a"), text("never served"))
    c = client(fake)
    # Non-streaming (or async streaming) requests leave an idle keep-alive connection
    # in the client's pool; the sync Stream does not drain after [DONE], so it never reuses one.
    c.chat.completions.create(model="m", messages=MESSAGES)
    fake.stop()
    with pytest.raises(openai.APIConnectionError):
        c.chat.completions.create(model="m", messages=MESSAGES)
    assert fake.pending == 1


def test_wire_format():
    """Raw SSE bytes, as a non-SDK client (or a proxy) would see them."""
    with FakeLLM() as fake:
        fake.script(tool_call("run_cell", {"code": "x"}, id="call_1"), error(429, "later", retry_after=2))
        conn = http.client.HTTPConnection("127.0.0.1", fake.port, timeout=5)
        body = json.dumps({"model": "m", "messages": MESSAGES, "stream": True})
        conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
        r = conn.getresponse()
        assert r.status == 200 and r.version == 11
        assert r.getheader("Content-Type") == "text/event-stream"
        assert r.getheader("Transfer-Encoding") == "chunked"
        raw = r.read().decode()
        assert raw.endswith("\n\ndata: [DONE]\n\n")
        events = raw.split("\n\n")[:-1]
        assert all(e.startswith("data: ") for e in events)
        chunks = [json.loads(e[6:]) for e in events[:-1]]
        assert chunks[0]["choices"][0] == {
            "index": 0,
            "delta": {"role": "assistant", "content": ""},
            "logprobs": None,
            "finish_reason": None,
        }
        assert chunks[1]["choices"][0]["delta"] == {
            "tool_calls": [
                {"index": 0, "id": "call_1", "type": "function", "function": {"name": "run_cell", "arguments": ""}}
            ]
        }
        assert chunks[-1]["choices"][0] == {"index": 0, "delta": {}, "logprobs": None, "finish_reason": "tool_calls"}
        # Same keep-alive connection: an error reply.
        conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
        r = conn.getresponse()
        assert r.status == 429 and r.getheader("Retry-After") == "2"
        assert json.loads(r.read())["error"]["message"] == "later"
        conn.close()


# -- inspection helpers -------------------------------------------------------------------


def test_wait_for_requests(llm):
    llm.script(text("a"), text("b"))
    c = client(llm)
    threading.Timer(0.1, lambda: (stream(c), stream(c))).start()
    reqs = llm.wait_for_requests(2, timeout=5)
    assert len(reqs) == 2
    with pytest.raises(TimeoutError, match="expected 3 requests, got 2"):
        llm.wait_for_requests(3, timeout=0.1)


def test_rejection_reason_reaches_next_request(llm):
    """The pattern agent tests use: script a tool call, then inspect the follow-up request."""
    llm.script(tool_call("run_cell", {"code": "import os"}, id="call_1"), text("OK, I won't."))
    c = client(llm)
    calls = accumulate_tool_calls(stream(c, tools=TOOLS))
    history = MESSAGES + [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": calls[0]["id"],
                    "type": "function",
                    "function": {"name": "run_cell", "arguments": calls[0]["arguments"]},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "Rejected by user: no os imports"},
    ]
    list(c.chat.completions.create(model="fake-model", messages=history, tools=TOOLS, stream=True))
    last = llm.requests[-1]["messages"][-1]
    assert last == {"role": "tool", "tool_call_id": "call_1", "content": "Rejected by user: no os imports"}


def test_subprocess_client(llm):
    llm.script(text("from a subprocess"))
    code = (
        "import openai, sys\n"
        "c = openai.OpenAI(base_url=sys.argv[1], api_key='sk-sub', max_retries=0, timeout=5)\n"
        "s = c.chat.completions.create(model='m', messages=[{'role': 'user', 'content': 'x'}], stream=True)\n"
        "print(''.join(ch.choices[0].delta.content or '' for ch in s if ch.choices))\n"
    )
    out = subprocess.run([sys.executable, "-c", code, llm.base_url], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "from a subprocess"
    assert llm.request_headers[0]["authorization"] == "Bearer sk-sub"
