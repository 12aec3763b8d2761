"""The legacy /v1/completions endpoint of the fake LLM (devtools/fake_llm.py): fill-in-the-middle
requests (`prompt` + `suffix`) answered from the same script, streamed while the server watches the
connection, so a test can see the moment its client hung up."""

from __future__ import annotations

import json
import re
import select
import socket
import time
from typing import Any

from devtools.fake_llm_script import error_body


class Stopped(Exception):
    """The server is stopping; abandon the response."""


def split_words(s: str) -> list[str]:
    return re.findall(r"\s*\S+|\s+$", s) or [s]


class LegacyCompletions:
    """Mixed into the fake's request handler (which provides fake, connection, the send helpers)."""

    fake: Any
    connection: Any
    wfile: Any
    close_connection: bool

    def _send_json(self, status: int, obj: Any, headers: Any = ...) -> None: ...  # the handler's
    def _sleep(self, seconds: float) -> None: ...
    def _write_chunk(self, data: bytes) -> None: ...

    def _legacy_completion(self, raw: bytes) -> None:
        try:
            body = json.loads(raw)
        except ValueError:
            self._send_json(400, error_body("fake LLM: request body is not JSON", "invalid_request_error"))
            return
        reply = self.fake._next_reply(body, {k.lower(): v for k, v in self.headers.items()}, raw, "/v1/completions")
        streaming = False
        try:
            self._sleep(reply.delay_before)
            if reply.status != 200:
                self._send_json(reply.status, reply.error_body or error_body("error"), reply.headers)
                return
            content = "".join(reply.content) if isinstance(reply.content, list) else reply.content or ""
            pieces = reply.content if isinstance(reply.content, list) else split_words(content)
            if not body.get("stream"):
                answer = text_chunk(self.fake, body, content, "stop")
                self._send_json(200, {**answer, "usage": text_usage(body, content)})
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.flush()
            streaming = True
            for piece in pieces if content else []:
                self._wait_watching(reply.chunk_delay)
                self._write_chunk(b"data: " + json.dumps(text_chunk(self.fake, body, piece, None)).encode() + b"\n\n")
            if reply.hang:
                while True:
                    self._wait_watching(0.5)
            self._write_chunk(b"data: " + json.dumps(text_chunk(self.fake, body, "", "stop")).encode() + b"\n\n")
            if (body.get("stream_options") or {}).get("include_usage") and self.fake.usage:
                usage = {
                    **text_chunk(self.fake, body, "", None),
                    "choices": [],
                    "usage": text_usage(body, content),
                }
                self._write_chunk(b"data: " + json.dumps(usage).encode() + b"\n\n")
            self._write_chunk(b"data: [DONE]\n\n")
            self._write_chunk(b"")
        except ClientGone:  # noted when it was seen
            self.close_connection = True
        except ConnectionError:
            # A write the client's hang-up broke (it closed while pieces were still being written):
            # a hang-up seen mid-stream too, a moment after it happened.
            if streaming:
                self.fake._note_closed()
            self.close_connection = True
        except Stopped:
            self.close_connection = True

    def _wait_watching(self, seconds: float) -> None:
        """Wait `seconds` (or until the server stops), noting the moment the client closes the connection."""
        deadline = time.monotonic() + seconds
        while True:
            if self.fake._stop.is_set():
                raise Stopped
            left = deadline - time.monotonic()
            if left <= 0:
                return
            readable, _, _ = select.select([self.connection], [], [], min(left, 0.05))
            if readable:
                try:
                    gone = self.connection.recv(1, socket.MSG_PEEK) == b""
                except OSError:
                    gone = True
                if gone:
                    self.fake._note_closed()
                    raise ClientGone("the client closed the connection")
                time.sleep(min(left, 0.005))  # a pipelined request: not a close


class ClientGone(ConnectionError):
    """The client's hang-up, seen (and noted) while the reply waited."""


def text_chunk(fake: Any, body: dict, piece: str, finish: str | None) -> dict:
    """A /v1/completions answer (or stream chunk) carrying `piece`."""
    return {
        "id": f"cmpl-fake{next(fake._ids)}",
        "object": "text_completion",
        "created": int(time.time()),
        "model": body.get("model", "fake-model"),
        "choices": [{"index": 0, "text": piece, "logprobs": None, "finish_reason": finish}],
    }


def text_usage(body: dict, content: str) -> dict:
    prompt = (len(str(body.get("prompt", ""))) + len(str(body.get("suffix", "")))) // 4
    completion = len(content) // 4
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
