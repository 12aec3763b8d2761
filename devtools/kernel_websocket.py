"""A kernel's websocket spoken as JupyterLab speaks it (JSON frames that name their `channel`), for
tests and benches that drive a kernel beside Cellwright: through a Jupyter server, or straight to a
Kernel Gateway (which serves the same `api/kernels/<id>/channels`)."""

from __future__ import annotations

import json
import uuid
from typing import Any

import websocket
from jupyter_client.jsonutil import json_default
from jupyter_client.session import Session

from jupyter_ext.gateway_channels import quick_ack


def connect(http_url: str, kernel_id: str, token: str | None = None, timeout: float = 30) -> websocket.WebSocket:
    """A websocket on the kernel's channels, its own session (a browser tab's)."""
    url = f"{http_url.replace('http', 'ws', 1)}/api/kernels/{kernel_id}/channels?session_id={uuid.uuid4().hex}"
    headers = [f"Authorization: token {token}"] if token else []
    return websocket.create_connection(url, header=headers, timeout=timeout)


def send_execute(ws: websocket.WebSocket, code: str, username: str = "user") -> str:
    """Send an execute_request for `code` on the shell channel; its msg_id."""
    content = {"code": code, "silent": False, "store_history": True, "user_expressions": {}, "allow_stdin": False}
    message = Session(username=username).msg("execute_request", content)
    ws.send(json.dumps({**message, "channel": "shell"}, default=json_default))
    return str(message["header"]["msg_id"])


def acks_at_once(ws: websocket.WebSocket) -> None:
    """Acknowledge what comes next at once, as Cellwright's gateway client does
    (jupyter_ext.gateway_channels.acks_at_once says why a gateway's answers need it)."""
    quick_ack(ws.sock)


def until_done(ws: websocket.WebSocket, msg_id: str, quick_acks: bool = False) -> dict[str, Any]:
    """Read frames until the request `msg_id` has its execute_reply and the kernel's idle after it
    (in either order, as a notebook waits for both); the reply. `quick_acks`: acknowledge each
    frame at once (acks_at_once), as Cellwright's gateway client does."""
    reply: dict[str, Any] | None = None
    idle = False
    while reply is None or not idle:
        frame = json.loads(ws.recv())
        if quick_acks:
            acks_at_once(ws)
        if frame.get("parent_header", {}).get("msg_id") != msg_id:
            continue  # another client's output: every client of the kernel gets iopub
        kind = frame["header"]["msg_type"]
        if kind == "execute_reply":
            reply = frame
        elif kind == "status" and frame["content"]["execution_state"] == "idle":
            idle = True
    return reply
