"""A cell's iopub messages as notebook outputs, read in bursts. A training loop's log arrives as
thousands of one-line stream messages; forwarding each as its own event (nbformat's schema check,
a pydantic check, an SSE write) cost more than the kernel spent printing. A burst that is already
waiting is read at once and consecutive text of one stream becomes one output, as Jupyter's own
notebook model merges it."""

from __future__ import annotations

import queue
from typing import TYPE_CHECKING

from agent_core.json_types import JsonObject, json_items, json_object

if TYPE_CHECKING:
    from agent_core.tools.cell_progress import ProgressReader

    from .kernel_clients import KernelChannels, KernelMessage

OUTPUT_MSG_TYPES = frozenset({"stream", "display_data", "execute_result", "error"})
BURST_MESSAGES = 1000  # read at most this many waiting messages before forwarding what they hold
MERGED_CHARS = 64 * 1024  # a merged stream output is forwarded once it grows past this


def output_of(kind: str, content: JsonObject) -> JsonObject:
    """The nbformat v4 output of an iopub message of type `kind` (one of OUTPUT_MSG_TYPES). The
    kernel's message is trusted for shape (nbformat's schema check per message was the hot spot);
    the panel and the outputs digest read only these fields."""
    if kind == "stream":
        return {
            "output_type": "stream",
            "name": str(content.get("name", "stdout")),
            "text": str(content.get("text", "")),
        }
    if kind == "error":
        return {
            "output_type": "error",
            "ename": str(content.get("ename", "")),
            "evalue": str(content.get("evalue", "")),
            "traceback": [str(line) for line in json_items(content.get("traceback"))],
        }
    output: JsonObject = {
        "output_type": kind,
        "data": dict(json_object(content.get("data"))),
        "metadata": dict(json_object(content.get("metadata"))),
    }
    if kind == "execute_result":
        output["execution_count"] = content.get("execution_count")
    return output


async def waiting_messages(client: KernelChannels, limit: int = BURST_MESSAGES) -> list[KernelMessage]:
    """The iopub messages already received, without waiting for more."""
    found: list[KernelMessage] = []
    while len(found) < limit:
        try:
            found.append(await client.get_iopub_msg(timeout=0))
        except queue.Empty:
            break
    return found


def outputs_of_burst(burst: list[KernelMessage], msg_id: str) -> tuple[list[JsonObject], bool]:
    """The outputs that the messages of `burst` answering request `msg_id` hold (consecutive
    stream text merged), and whether the kernel went idle for it (messages after that are not its)."""
    outputs: list[JsonObject] = []
    for msg in burst:
        if msg.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        kind = msg["header"]["msg_type"]
        if kind in OUTPUT_MSG_TYPES:
            output = output_of(kind, msg["content"])
            if not _merged(outputs, output):
                outputs.append(output)
        elif went_idle(msg):
            return outputs, True
    return outputs, False


def read_widgets(progress: ProgressReader, burst: list[KernelMessage], msg_id: str) -> None:
    """Feed the burst's comm messages to `progress`: ipywidgets progress bars opened by cell `msg_id`."""
    for msg in burst:
        kind = msg["header"]["msg_type"]
        if kind == "comm_msg" or (kind == "comm_open" and msg.get("parent_header", {}).get("msg_id") == msg_id):
            progress.comm(kind, msg["content"])


def went_idle(msg: KernelMessage) -> bool:
    return msg["header"]["msg_type"] == "status" and msg["content"].get("execution_state") == "idle"


def kernel_died(msg: KernelMessage) -> bool:
    """The status jupyter_server sends on a kernel's websocket when the kernel's process died:
    "restarting" (its manager restarted it) or "dead" (it could not). A kernel's own iopub never says so."""
    return msg["header"]["msg_type"] == "status" and msg["content"].get("execution_state") in ("restarting", "dead")


def _merged(outputs: list[JsonObject], output: JsonObject) -> bool:
    """Append `output` to the last of `outputs` when both are text of one stream; True if it was."""
    last = outputs[-1] if outputs else None
    if (
        last is not None
        and output["output_type"] == "stream" == last["output_type"]
        and output["name"] == last["name"]
        and isinstance(text := last["text"], str)  # _output's streams: text always a str
        and len(text) < MERGED_CHARS
    ):
        last["text"] = text + str(output["text"])
        return True
    return False
