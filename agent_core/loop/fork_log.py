"""The event log a forked thread starts with ("try again from here", POST fork): the panel draws a
thread from its events, so a fork whose log began empty would show an empty timeline. It gets the
other thread's events up to just before the step it goes back to, then a `forked` event."""

from __future__ import annotations

from collections.abc import Iterable

from agent_core.json_types import JsonObject

STAMPS = ("seq", "thread_id")  # the new thread's log stamps its own
TURN_ONLY = ("token", "usage")  # the model turn that made the step: gone with it


def forked_log(
    events: Iterable[JsonObject], later_calls: set[str], origin_thread: str, from_call: str, title: str
) -> list[JsonObject]:
    """`events` (the origin's log, in order) up to the first one of a step in `later_calls` (the
    calls of the conversation the fork leaves out), without that model turn's streamed text, and the
    `forked` event that ends it."""
    kept: list[JsonObject] = []
    for event in events:
        if event.get("id") in later_calls:
            break
        kept.append({key: value for key, value in event.items() if key not in STAMPS})
    while kept and kept[-1].get("type") in TURN_ONLY:
        kept.pop()
    run_id = str(kept[-1].get("run_id") or "") if kept else ""
    end: JsonObject = {
        "type": "forked",
        "run_id": run_id,
        "agent": "main",
        "forked_from": origin_thread,
        "from_tool_call_id": from_call,
        "title": title,
    }
    return [*kept, end]
