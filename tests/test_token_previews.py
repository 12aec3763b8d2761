"""Token previews (`previews=1`): a live reader gets each delta as it arrives, before its coalesced
row is stored; the stored rows stay coalesced, and what a reader keeps (stored text, plus previews
of rows not stored yet) is the answer once, in order. Readers that do not ask get no previews."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from devtools.fake_llm import FakeLLM, text
from devtools.sse import parse_sse
from tests.conftest import Api, of_type

WORDS = [f"w{i} " for i in range(300)]


async def test_previews_arrive_per_delta_and_are_replaced_by_their_stored_row(
    api: Api, fake_llm: FakeLLM, jp_serverapp: Any
) -> None:
    fake_llm.script(text(WORDS, chunk_delay=0.002))
    thread = await api.new_thread()
    await api.run(thread, "talk")
    code, body = await api.call("GET", f"threads/{thread}/events", params={"previews": 1}, request_timeout=60)
    assert code == 200
    everything = parse_sse(body, live=True)
    previews = [e for e in everything if e["type"] == "token" and e.get("live_only")]
    stored = of_type(parse_sse(body), "token")
    assert "".join(e["text"] for e in stored) == "".join(WORDS), "stored rows: every token once, in order"
    assert len(stored) <= len(WORDS) // 5, "still coalesced"
    assert len(previews) >= len(WORDS) // 2, "deltas previewed one by one"
    by_seq = {e["seq"]: e for e in stored}
    for seq in {p["stored_as"] for p in previews}:
        mine = "".join(p["text"] for p in previews if p["stored_as"] == seq)
        assert by_seq[seq]["text"].endswith(mine), "a preview's text is in the row it names"
    # Order: a row's previews come before that row, after the row before it.
    positions = {id(e): i for i, e in enumerate(everything)}
    for p in previews:
        row = next(e for e in everything if e.get("seq") == p["stored_as"])
        assert positions[id(p)] < positions[id(row)]

    plain = await api.events(thread)
    assert not [e for e in parse_sse(body, live=True) if e.get("live_only") and "seq" in e]
    assert of_type(plain, "token") == stored
    _, body = await api.call("GET", f"threads/{thread}/events", request_timeout=60)
    assert not [e for e in parse_sse(body, live=True) if e["type"] == "token" and e.get("live_only")]


async def test_a_reader_that_starts_mid_row_gets_the_rows_tokens_so_far_at_once(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """The panel opens its stream after POST runs answered: tokens the pump is coalescing by then
    were previewed to nobody. They reach the new reader at once, not when their row is stored."""
    from agent_core.contract import make_event
    from agent_core.loop import event_pump
    from agent_core.storage.thread_store import ThreadStore

    monkeypatch.setattr(event_pump, "TOKEN_WINDOW_SECONDS", 60.0)  # the row stays open until the test ends it
    store = ThreadStore(tmp_path / "threads.sqlite", owner="me")
    await store.open()
    try:
        thread = (await store.create("n.ipynb", "t")).thread_id
        events = store.events
        pump = event_pump.EventPump(events, thread, "run")
        pump(make_event("token", text="Hello"))  # the first of a burst: stored at once
        await pump.flush()
        first = events.last_stored(thread)
        pump(make_event("token", text=" there"))
        pump(make_event("token", text=", you"))
        for _ in range(1000):  # the pump takes both into its open row (yields only: no clock involved)
            await asyncio.sleep(0)
            if not pump._pending and pump._window_open:
                break
        assert events.last_stored(thread) == first, "the row is still being coalesced"
        events.reading_previews(thread, 1)  # a reader arrives, as follow_batches does before reading
        previews, _ = events.live_events(thread, events.live_start(thread, first), first)
        assert [(p["text"], p["stored_as"]) for p in previews] == [(" there", first + 1), (", you", first + 1)]
        pump(make_event("token", text="!"))  # later tokens of the row reach it one by one, once
        await asyncio.sleep(0)
        await pump.drain()
        everything, _ = events.live_events(thread, events.live_start(thread, first), first + 1)
        assert [p["text"] for p in everything] == [" there", ", you", "!"]
        stored = await events.events_after(thread, first)
        assert [e["text"] for e in stored if e["type"] == "token"] == [" there, you!"]
        events.reading_previews(thread, -1)
    finally:
        await store.close()
