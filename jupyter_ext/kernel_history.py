"""The inputs of a kernel's current session (its history), for the cell graph's stale check after
every cell: asked on the server's kept evaluation client when there is one (a client of its own cost
a connection each time: on a gateway kernel, a websocket and the gateway's kernel_info round trips)."""

from __future__ import annotations

from typing import Any

from agent_core.json_types import json_items

from .kernel_clients import KernelChannels, KernelManagerProtocol, MappingKernelManagerProtocol, connected_client
from .kernel_evaluations import KernelEvaluations, shell_reply

HISTORY_SECONDS = 3.0  # for the kernel's history reply: an idle kernel answers in milliseconds


async def session_inputs(
    evaluations: KernelEvaluations | None,
    kernel_id: str,
    manager: KernelManagerProtocol,
    kernel_manager: MappingKernelManagerProtocol,
    n: int,
) -> list[tuple[int, str]]:
    """The last `n` inputs of the kernel's current session as (execution count, source), oldest first;
    none when the kernel did not answer within HISTORY_SECONDS."""
    if evaluations is not None:
        reply = await evaluations.ask(kernel_id, manager, kernel_manager, _ask_history, HISTORY_SECONDS)
    else:
        client = await connected_client(manager, outputs=False)
        try:
            reply = await shell_reply(client, _ask_history(client), HISTORY_SECONDS)
        finally:
            client.stop_channels()
    return latest_session(json_items((reply or {}).get("history")))[-n:] if n > 0 else []


def _ask_history(client: KernelChannels) -> str:
    """Ask for the inputs of the kernel's own session (0: the current one, from its memory), not a
    "tail": that reads the history database, which every kernel of this user writes, newest session
    first, so another notebook's kernel started later would show as this one's inputs. Its msg_id."""
    return client.history(raw=True, output=False, hist_access_type="range", session=0, start=1)


def latest_session(history: list[Any]) -> list[tuple[int, str]]:
    """(line, source) of the newest session's entries, oldest first (a range of session 0 holds the
    current session only; this also guards against a kernel that answers with more)."""
    entries = [e for e in history if isinstance(e, (list, tuple)) and len(e) == 3]
    if not entries:
        return []
    newest = max(e[0] for e in entries)
    return sorted((int(line), str(source)) for session, line, source in entries if session == newest)
