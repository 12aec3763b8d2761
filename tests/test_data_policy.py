"""What the model sees, through the real server, kernel and the scripted model: under each data
policy, which of a DataFrame's, a CSV's and a cell's personal data reach the raw request bodies;
the record of requests equals what the model received, byte for byte (a sub-agent and a summary
included); a run cannot widen the server's policy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from devtools.fake_llm import FakeLLM, text, tool_call
from tests.conftest import Api, of_type
from tests.test_multi_agent import delegate
from tests.test_tools_routes import run_in_kernel

PEOPLE = {
    "name": ["Alice Smith", "Bob Jones"],
    "email": ["alice.smith@example.com", "bob.jones@corp.example.org"],
    "phone": ["+1 415 555 0100", "(212) 555-0187"],
    "card": ["4111 1111 1111 1111", "5500-0000-0000-0004"],
}
PERSONAL = [*PEOPLE["email"], *PEOPLE["phone"], *PEOPLE["card"]]  # what redact must replace
VALUES = [*PERSONAL, *PEOPLE["name"]]  # what schema_only must keep in: every data value
SETUP = f"import pandas as pd\npeople = pd.DataFrame({PEOPLE!r})"
CELL = "print(people.to_string())\nfor e in people.email:\n    print('contact', e)\nraise KeyError(people.email[0])"
CSV = "name,email,phone,card\n" + "".join(
    f"{n},{e},{p},{c}\n"
    for n, e, p, c in zip(PEOPLE["name"], PEOPLE["email"], PEOPLE["phone"], PEOPLE["card"], strict=True)
)


def configuration(serverapp: Any) -> Any:
    return serverapp.web_app.settings["cellwright"].configuration


def bodies(fake_llm: FakeLLM) -> list[str]:
    return [raw.decode() for raw in fake_llm.raw_requests]


async def records(api: Api, thread: str) -> dict[str, Any]:
    _, answer = await api.call("GET", f"threads/{thread}/requests", expect=200)
    return answer


async def run_scenario(api: Api, fake_llm: FakeLLM, kernel: str, **run: Any) -> tuple[str, list[dict[str, Any]]]:
    """The model runs a cell printing the people, reads the CSV and answers; the user mentions @people."""
    fake_llm.script(
        tool_call("run_cell", {"code": CELL, "description": "show the people"}, id="c1"),
        tool_call("read_file", {"path": "people.csv"}, id="f1"),
        text("done"),
    )
    thread = await api.new_thread()
    await api.run(thread, "Who is in @people? See people.csv too.", kernel_id=kernel, **run)
    events = await api.until_finished(thread)
    assert events[-1]["status"] == "completed", events
    results = {e["id"]: e for e in of_type(events, "tool_result")}
    assert results["c1"]["status"] == "error" and results["f1"]["status"] == "ok"  # the cell raised, as written
    return thread, events


@pytest.fixture
def people(jp_serverapp: Any, jp_root_dir: Path, notebook_kernel: str) -> str:
    (jp_root_dir / "people.csv").write_text(CSV)
    configuration(jp_serverapp).auto_approve = ["run_cell"]
    return notebook_kernel


async def test_full_sends_the_values(api: Api, fake_llm: FakeLLM, jp_serverapp: Any, people: str) -> None:
    await run_in_kernel(jp_serverapp, SETUP)
    thread, _ = await run_scenario(api, fake_llm, people)
    sent = "\n".join(bodies(fake_llm))
    assert all(value in sent for value in VALUES), [v for v in VALUES if v not in sent]
    assert "[REDACTED" not in sent
    answer = await records(api, thread)
    assert [r["redactions"] for r in answer["requests"]] == [0, 0, 0]
    assert answer["summary"]["data_policy"] == "full"


async def test_redact_replaces_and_counts_each_value(
    api: Api, fake_llm: FakeLLM, jp_serverapp: Any, people: str
) -> None:
    configuration(jp_serverapp).data_policy = "redact"
    await run_in_kernel(jp_serverapp, SETUP)
    thread, _ = await run_scenario(api, fake_llm, people)
    sent = bodies(fake_llm)
    everything = "\n".join(sent)
    assert not [value for value in PERSONAL if value in everything]
    assert all(f"[REDACTED:{kind}]" in everything for kind in ("email", "phone", "card"))
    assert "Alice Smith" in everything  # a name is not a pattern: redact keeps it, schema_only does not
    answer = await records(api, thread)
    # Each request's count is the replacements in that very body.
    assert [r["redactions"] for r in answer["requests"]] == [body.count("[REDACTED:") for body in sent]
    last = sent[-1]
    # The cell's output (2 emails printed twice, the KeyError's), the CSV's rows and the @people context.
    assert last.count("[REDACTED:email]") >= 5 and last.count("[REDACTED:card]") >= 4
    assert answer["summary"]["redactions"] == sum(body.count("[REDACTED:") for body in sent)


async def test_schema_only_sends_no_value_and_a_thread_keeps_it(
    api: Api, fake_llm: FakeLLM, jp_serverapp: Any, people: str
) -> None:
    await run_in_kernel(jp_serverapp, SETUP)  # the server's policy is full: the thread narrows it
    thread, events = await run_scenario(api, fake_llm, people, data_policy="schema_only")
    sent = bodies(fake_llm)
    everything = "\n".join(sent)
    assert not [value for value in VALUES if value in everything]
    assert not [d for d in ("4111111111111111", "5500000000000004") if d in everything.replace(" ", "")]
    last = json.loads(sent[-1])["messages"]
    context = next(m["content"] for m in last if m["role"] == "user" and m["content"].startswith("[Context"))
    assert "@people: pandas.DataFrame, shape 2 x 4" in context and "'email': " in context  # names, dtypes, nulls stay
    cell, csv = (m["content"] for m in last if m["role"] == "tool")
    assert "[cell output: " in cell and "error KeyError: '…'" in cell
    assert "columns: name,email,phone,card" in csv and "[3 lines of contents withheld" in csv
    # The panel was told what ran (events are the user's own view, not the model's).
    assert "alice.smith@example.com" in json.dumps(of_type(events, "cell_output"))
    answer = await records(api, thread)
    assert answer["summary"]["data_policy"] == "schema_only"
    kinds = {(s["kind"], s["name"]) for r in answer["requests"] for s in r["sources"]}
    assert {("dataframe", "people"), ("cell_output", "show the people"), ("file", "people.csv")} <= kinds

    # The next run, which does not say, stays as narrow.
    fake_llm.script(text("still done"))
    seen = len(sent)
    await api.run(thread, "And again?", kernel_id=people)
    await api.until_finished(thread, events[-1]["seq"])
    later = bodies(fake_llm)[seen:]
    assert later and not [value for value in VALUES if value in "\n".join(later)]


async def test_a_run_cannot_widen_the_servers_policy(api: Api, fake_llm: FakeLLM, jp_serverapp: Any) -> None:
    configuration(jp_serverapp).data_policy = "redact"
    thread = await api.new_thread()
    code, answer = await api.call("POST", f"threads/{thread}/runs", {"message": "hi", "data_policy": "full"})
    assert code == 400 and answer["error"] == "policy_wider"
    assert "'redact' or 'schema_only'" in answer["message"] and "'full'" in answer["message"]
    code, answer = await api.call("POST", f"threads/{thread}/runs", {"message": "hi", "data_policy": "none"})
    assert code == 400
    assert fake_llm.requests == []  # nothing went out
    code, answer = await api.call("GET", "threads/0123456789abcdef/requests")
    assert code == 404 and answer["error"] == "thread_not_found"
    code, answer = await api.call("GET", f"threads/{thread}/requests", params={"text": "yes"})
    assert code == 400


@pytest.mark.also_postgres
async def test_the_record_is_what_the_model_received(api: Api, fake_llm: FakeLLM, jp_serverapp: Any) -> None:
    """A planner, a sub-agent and a summary: every request recorded byte for byte, tagged."""
    configuration(jp_serverapp).data_policy = "redact"
    report = "The folder holds the notebook. " + "DETAIL-OF-THE-FOLDER " * 250
    fake_llm.script(
        delegate("researcher", "List the files of the workspace.", "p1"),
        tool_call("list_files", {"path": "."}, id="r1"),
        text(report),
        tool_call("final_answer", {"answer": "One notebook."}, id="p2"),
    )
    thread = await api.new_thread()
    await api.run(thread, "What did alice@example.com leave here?", mode="multi")
    first = await api.until_finished(thread)
    assert first[-1]["status"] == "completed", first
    configuration(jp_serverapp).context_token_budget = 1000  # the next planner call summarises the first run
    fake_llm.script(text("SUMMARY: one notebook, asked by a user."), tool_call("final_answer", {"answer": "ok"}))
    await api.run(thread, "And now?", mode="multi")
    second = await api.until_finished(thread, first[-1]["seq"])
    assert second[-1]["status"] == "completed", second

    received = fake_llm.raw_requests
    answer = await records(api, thread)
    recorded = answer["requests"]
    assert [r["body"].encode() for r in recorded] == received  # byte for byte, in order, none missing
    for record, raw in zip(recorded, received, strict=True):
        body = json.loads(raw)
        assert record["messages"] == body["messages"] and record.get("tools") == body.get("tools")
        assert record["bytes"] == len(raw) and record["kept"]
    assert [r["seq"] for r in recorded] == list(range(1, len(received) + 1))
    tags = [(r["agent"], r.get("task_id"), r["kind"]) for r in recorded]
    assert tags == [
        ("planner", None, "turn"),
        ("researcher", "p1", "turn"),
        ("researcher", "p1", "turn"),
        ("planner", None, "turn"),
        ("planner", None, "summary"),
        ("planner", None, "turn"),
    ]
    summary_body = json.loads(received[4])
    assert "tools" not in summary_body and "DETAIL-OF-THE-FOLDER" in summary_body["messages"][1]["content"]
    assert "alice@example.com" not in b"".join(received).decode()
    assert recorded[0]["redactions"] == 1 and recorded[4]["redactions"] >= 1  # the user's email, summary too
    assert {"kind": "agent_report", "name": "researcher"} in recorded[3]["sources"]
    # Each step's "what was sent" (its model call's usage event) is its turn's record.
    steps = [(e["agent"], e.get("task_id"), e["request"]) for e in of_type(first + second, "usage")]
    turns = [r for r in recorded if r["kind"] == "turn"]
    assert [(agent, task, s["request_seq"], s["bytes"], s["redactions"], s["sources"]) for agent, task, s in steps] == [
        (r["agent"], r.get("task_id"), r["seq"], r["bytes"], r["redactions"], r["sources"]) for r in turns
    ]
    _, light = await api.call("GET", f"threads/{thread}/requests", params={"text": "0"}, expect=200)
    assert all("messages" not in r and "body" not in r for r in light["requests"])
    assert [r["sha256"] for r in light["requests"]] == [r["sha256"] for r in recorded]
    _, one = await api.call("GET", f"threads/{thread}/requests", params={"seq": "5"}, expect=200)
    assert [r["seq"] for r in one["requests"]] == [5] and one["requests"][0]["body"].encode() == received[4]
    assert one["summary"] == answer["summary"] and one["summary"]["requests"] == len(received)
    code, _ = await api.call("GET", f"threads/{thread}/requests", params={"seq": "-1"})
    assert code == 400


async def test_older_records_are_compacted_to_sizes_and_hashes(tmp_path: Path, monkeypatch: Any) -> None:
    import hashlib

    from agent_core.storage import request_log
    from agent_core.storage.thread_store import ThreadStore

    monkeypatch.setattr(request_log, "KEEP_BODIES", 3)
    store = ThreadStore(tmp_path / "threads.sqlite", owner="me")
    await store.open()
    try:
        thread = (await store.create("n.ipynb", "t")).thread_id
        other = (await store.create("n.ipynb", "u")).thread_id
        bodies = [json.dumps({"messages": [{"role": "user", "content": "é" * n}]}).encode() for n in range(5)]
        for body in bodies:
            await store.requests.add(thread, "main", "", "turn", body, 0, [])
        await store.requests.add(other, "main", "", "turn", b'{"messages": []}', 0, [])
        recorded = [r.public() for r in await store.requests.list(thread)]
        assert [r["seq"] for r in recorded] == [1, 2, 3, 4, 5]
        assert [r["kept"] for r in recorded] == [False, False, True, True, True]
        assert [r["sha256"] for r in recorded] == [hashlib.sha256(b).hexdigest() for b in bodies]
        assert [r["bytes"] for r in recorded] == [len(b) for b in bodies]
        assert "messages" not in recorded[0] and recorded[4]["body"].encode() == bodies[4]
        assert [r.seq for r in await store.requests.list(other)] == [1]  # each thread counts its own
        await store.delete(thread)
        assert await store.requests.list(thread) == [] and len(await store.requests.list(other)) == 1
    finally:
        await store.close()
