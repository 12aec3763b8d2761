"""The kernel side of undo, called through ToolEnvironment.evaluate_json: one probe expression per
call (agent_core.kernel_probes.probe), its inputs travelling as JSON data, never as code, so a tool call id
with quotes or path characters is only ever a dictionary key in the kernel."""

from __future__ import annotations

from agent_core.environment import ToolEnvironment, ToolInputError
from agent_core.json_types import JsonObject, json_items
from agent_core.kernel_probes.introspection import _evaluate  # the introspection probes' busy check and time limit
from agent_core.kernel_probes.probe import probe_expression, read_only_probe
from agent_core.kernel_probes.snapshots import SOURCE

MEASURE_TIMEOUT = 10.0  # sizes only: numpy's and pandas' own accounting, a bounded walk
COPY_TIMEOUT = 120.0  # a deep copy of a few hundred MB
MB = 1024 * 1024


async def _call(env: ToolEnvironment, entry: str, payload: JsonObject, timeout: float) -> JsonObject:
    """The probe's answer; ToolInputError saying why there is none. A kernel busy with another cell
    is not asked (the request would wait behind it): "kernel busy". Only `measure` runs none of the
    user's code (a copy may run an object's __deepcopy__)."""
    expression = (
        read_only_probe(SOURCE, entry, payload) if entry == "measure" else probe_expression(SOURCE, entry, payload)
    )
    answer = await _evaluate(env, expression, timeout)
    if not isinstance(answer, dict):
        raise ToolInputError("the kernel's answer was not understood")
    return answer


async def measure(
    env: ToolEnvironment,
    names: list[str],
    cap_bytes: int,
    mutated: list[str] | None = None,
    check: list[str] | None = None,
) -> JsonObject:
    """Per name: exists, bytes (None: known only once copied); `problems`: why no snapshot fits or
    can hold the state of a name changed in place (`mutated`) or that a call may change (`check`)."""
    payload = {"names": names, "cap": cap_bytes, "mutated": list(mutated or ()), "check": list(check or ())}
    return await _call(env, "measure", payload, MEASURE_TIMEOUT)


async def take(
    env: ToolEnvironment,
    thread_id: str,
    call_id: str,
    token: str,
    names: list[str],
    cap_bytes: int,
    mutated: list[str] | None = None,
    check: list[str] | None = None,
) -> JsonObject:
    payload = {
        "thread_id": thread_id,
        "call_id": call_id,
        "token": token,
        "names": names,
        "cap": cap_bytes,
        "total_cap": cap_bytes,
        "mutated": list(mutated or ()),
        "check": list(check or ()),
    }
    return await _call(env, "take", payload, COPY_TIMEOUT)


async def undo(env: ToolEnvironment, thread_id: str, call_id: str, token: str) -> JsonObject:
    return await _call(env, "undo", {"thread_id": thread_id, "call_id": call_id, "token": token}, MEASURE_TIMEOUT)


async def held(env: ToolEnvironment, thread_id: str) -> list[str]:
    answer = await _call(env, "held", {"thread_id": thread_id}, MEASURE_TIMEOUT)
    return [str(step) for step in json_items(answer.get("steps"))]


async def drop(env: ToolEnvironment, thread_id: str) -> int:
    dropped = (await _call(env, "drop", {"thread_id": thread_id}, MEASURE_TIMEOUT)).get("dropped", 0)
    return dropped if isinstance(dropped, int) else 0
