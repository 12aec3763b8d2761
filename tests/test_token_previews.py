"""Token previews (`previews=1`): a live reader gets each delta as it arrives, before its coalesced
row is stored; the stored rows stay coalesced, and what a reader keeps (stored text, plus previews
of rows not stored yet) is the answer once, in order. Readers that do not ask get no previews."""

from __future__ import annotations

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
