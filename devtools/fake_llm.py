"""A scripted fake OpenAI-compatible chat-completions server (standard library only).

Each POST /v1/chat/completions (or /v1/responses, devtools/fake_llm_responses.py) consumes the next
scripted reply; the test then inspects ``llm.requests`` to see what the client sent. POST /v1/completions (the legacy
endpoint, fill-in-the-middle with ``suffix``) consumes the same script, unless the fake is made
with ``completions=False`` (then it answers 404, as a chat-only endpoint does); while it streams,
the server watches its connection and notes in ``closed`` when the client hung up.
"""

from __future__ import annotations

import itertools
import json
import socket
import sys
import threading
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from devtools.fake_llm_completions import LegacyCompletions, split_words
from devtools.fake_llm_completions import Stopped as _Stopped
from devtools.fake_llm_script import NotShown, Reply, ScriptItem, Shown, error, error_body, reading, text, tool_call

MODEL_ID = "fake-model"
EXHAUSTED_MESSAGE = "fake LLM script exhausted"

# The script's vocabulary, for the tests that import it from here with the server.
__all__ = [
    "EXHAUSTED_MESSAGE",
    "MODEL_ID",
    "FakeLLM",
    "NotShown",
    "Reply",
    "Shown",
    "error",
    "reading",
    "text",
    "tool_call",
]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, fake: FakeLLM, host: str) -> None:
        self.fake = fake
        self.connections: set[socket.socket] = set()
        self.conn_lock = threading.Lock()
        super().__init__((host, 0), _Handler)

    def get_request(self):  # type: ignore[override]
        sock, addr = super().get_request()
        with self.conn_lock:
            self.connections.add(sock)
        return sock, addr

    def shutdown_request(self, request) -> None:  # type: ignore[override]
        with self.conn_lock:
            self.connections.discard(request)
        super().shutdown_request(request)

    def abort_connections(self) -> None:
        with self.conn_lock:
            conns = list(self.connections)
        for sock in conns:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def handle_error(self, request, client_address) -> None:  # type: ignore[override]
        if self.fake._stop.is_set() or isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return  # client hung up / server stopping: not a test failure
        super().handle_error(request, client_address)


class _Handler(LegacyCompletions, BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # silence stderr
        pass

    # -- helpers -------------------------------------------------------------

    @property
    def fake(self) -> FakeLLM:
        return self.server.fake

    def _sleep(self, seconds: float) -> None:
        if seconds > 0 and self.fake._stop.wait(seconds):
            raise _Stopped

    def _send_json(self, status: int, obj: Any, headers: Mapping[str, str] = {}) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)
        self.wfile.flush()

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _hang(self) -> None:
        self.fake._stop.wait()
        self.close_connection = True
        raise _Stopped

    # -- routes --------------------------------------------------------------

    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/v1/models":
            model = {"id": MODEL_ID, "object": "model", "created": 0, "owned_by": "fake-llm"}
            self._send_json(200, {"object": "list", "data": [model]})
        else:
            self._send_json(404, error_body(f"unknown path {self.path}", "invalid_request_error"))

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if self.path.rstrip("/") == "/v1/embeddings":  # deterministic vectors, not scripted (fake_embeddings)
            from .fake_embeddings import embeddings_answer

            self.fake.embedding_requests += 1
            self._send_json(*embeddings_answer(json.loads(raw or b"{}")))
            return
        if self.path.rstrip("/") == "/v1/completions" and self.fake.completions:
            self._legacy_completion(raw)
            return
        if self.path.rstrip("/") == "/v1/completions":
            self.fake.refused_completions += 1
        if self.path.rstrip("/") == "/v1/responses":  # the Responses API (Codex): same script
            self._responses(raw)
            return
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._send_json(404, error_body(f"unknown path {self.path}", "invalid_request_error"))
            return
        try:
            body = json.loads(raw)
        except ValueError:
            self._send_json(400, error_body("fake LLM: request body is not JSON", "invalid_request_error"))
            return
        if self.fake.reject_stream_options and "stream_options" in body:
            message = "Unrecognized request argument supplied: stream_options"
            self._send_json(400, error_body(message, "invalid_request_error"))
            return
        if self.fake.reject_max_tokens and "max_tokens" in body:  # OpenAI's reasoning models
            message = "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead."
            self._send_json(400, error_body(message, "invalid_request_error"))
            return
        reply = self.fake._next_reply(body, {k.lower(): v for k, v in self.headers.items()}, raw)
        try:
            self._respond(body, reply)
        except _Stopped:
            self.close_connection = True
        except ConnectionError:  # client went away (e.g. its timeout)
            self.close_connection = True

    def _respond(self, body: dict, reply: Reply) -> None:
        self._sleep(reply.delay_before)
        if reply.status != 200:
            self._send_json(reply.status, reply.error_body or error_body("error"), reply.headers)
            return
        if body.get("stream"):
            self._stream(body, reply)
        elif reply.hang:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.flush()
            self._hang()
        else:
            self._send_json(200, self.fake._completion(body, reply), reply.headers)

    def _responses(self, raw: bytes) -> None:
        from devtools.fake_llm_responses import response_events, sse

        body = json.loads(raw or b"{}")
        reply = self.fake._next_reply(body, {k.lower(): v for k, v in self.headers.items()}, raw, "/v1/responses")
        if reply.status != 200:
            self._send_json(reply.status, reply.error_body or error_body("error"), reply.headers)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        try:
            for event in response_events(reply, self.fake._tool_calls(reply), len(self.fake.requests)):
                self._write_chunk(sse(event))
            if reply.hang:
                self._hang()
            self._write_chunk(b"")
        except (_Stopped, ConnectionError):
            self.close_connection = True

    def _stream(self, body: dict, reply: Reply) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        for k, v in reply.headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.flush()
        chunks = self.fake._chunks(body, reply)
        if reply.hang or reply.drop:  # stop mid-stream: no finish chunk; headers only if nothing scripted
            chunks = [c for c in chunks if c["choices"] and c["choices"][0]["finish_reason"] is None]
            chunks = chunks if len(chunks) > 1 else []
        for chunk in chunks:
            self._sleep(reply.chunk_delay)
            self._write_chunk(b"data: " + json.dumps(chunk).encode() + b"\n\n")
        if reply.hang:
            self._hang()
        if reply.drop:
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        self._sleep(reply.chunk_delay)
        self._write_chunk(b"data: [DONE]\n\n")
        self._write_chunk(b"")  # end of chunked body


def _capped(reply: Reply, cap: object) -> Reply:
    """A reply streamed as pieces, cut at `cap` pieces (each a token) as an endpoint cuts at max_tokens."""
    if not isinstance(cap, int) or not isinstance(reply.content, list) or len(reply.content) <= cap:
        return reply
    return replace(reply, content=reply.content[:cap], finish_reason="length")


def _split_n(s: str, n: int) -> list[str]:
    if n <= 1 or len(s) <= 1:
        return [s]
    n = min(n, len(s))
    step, extra = divmod(len(s), n)
    out, pos = [], 0
    for i in range(n):
        size = step + (1 if i < extra else 0)
        out.append(s[pos : pos + size])
        pos += size
    return out


class FakeLLM:
    """A fake OpenAI chat-completions server on 127.0.0.1 (a free port), scripted per test."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        *,
        usage: bool = True,
        reject_stream_options: bool = False,
        reject_max_tokens: bool = False,
        completions: bool = True,
    ) -> None:
        self._host = host
        # Serve POST /v1/completions (fill-in-the-middle with `suffix`); False plays a chat-only endpoint (404).
        self.completions = completions
        # Token usage in a last chunk when the request asks for it (stream_options.include_usage);
        # False plays a server that never reports usage.
        self.usage = usage
        # True plays a server that refuses the stream_options field (400).
        self.reject_stream_options = reject_stream_options
        # True plays a model that takes max_completion_tokens and refuses max_tokens (400).
        self.reject_max_tokens = reject_max_tokens
        self._lock = threading.Condition()
        self._script: deque[ScriptItem] = deque()
        self._requests: list[dict] = []
        self._raw: list[bytes] = []  # the same requests' bodies, byte for byte as received
        self._headers: list[dict[str, str]] = []
        self._paths: list[str] = []
        self._closed: list[float] = []  # time.monotonic() of each client hang-up seen mid-stream (/v1/completions)
        self.embedding_requests = 0  # /v1/embeddings calls (answered by fake_embeddings, not the script)
        self.refused_completions = 0  # POST /v1/completions answered 404 (made with completions=False)
        self._stop = threading.Event()
        self._ids = itertools.count(1)  # completion ids
        self._call_ids = itertools.count(1)  # automatic tool-call ids
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------

    def start(self) -> FakeLLM:
        """Start serving in a daemon thread."""
        if self._server is not None:
            return self
        self._stop.clear()
        self._server = _Server(self, self._host)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-llm", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; aborts hanging/slow replies and open connections."""
        if self._server is None:
            return
        self._stop.set()
        self._server.shutdown()
        self._server.abort_connections()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self) -> FakeLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "FakeLLM not started"
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        """E.g. "http://127.0.0.1:PORT/v1"."""
        return f"http://{self._host}:{self.port}/v1"

    # -- scripting / inspection --------------------------------------------------

    def script(self, *replies: ScriptItem) -> FakeLLM:
        """Append replies (Reply, str = text, or callable(request_body) -> Reply)."""
        for r in replies:
            if not (isinstance(r, (Reply, str)) or callable(r)):
                raise TypeError(f"script item must be a Reply, str or callable, got {r!r}")
        with self._lock:
            self._script.extend(replies)
        return self

    def clear(self) -> None:
        """Drop the replies not consumed: a fake shared by several tests, one of which stopped midway."""
        with self._lock:
            self._script.clear()

    @property
    def pending(self) -> int:
        """Number of scripted replies not yet consumed."""
        with self._lock:
            return len(self._script)

    @property
    def requests(self) -> list[dict]:
        """Parsed JSON bodies of chat-completion requests, in order (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def raw_requests(self) -> list[bytes]:
        """The chat-completion request bodies byte for byte as they arrived, in order (a copy)."""
        with self._lock:
            return list(self._raw)

    @property
    def request_headers(self) -> list[dict[str, str]]:
        """Headers of each chat-completion request (lower-cased names), in order."""
        with self._lock:
            return list(self._headers)

    @property
    def paths(self) -> list[str]:
        """The endpoint path of each request in ``requests`` ("/v1/chat/completions" or "/v1/completions")."""
        with self._lock:
            return list(self._paths)

    @property
    def closed(self) -> list[float]:
        """time.monotonic() of each client hang-up the server saw while streaming /v1/completions."""
        with self._lock:
            return list(self._closed)

    def wait_for_close(self, n: int = 1, timeout: float = 10) -> list[float]:
        """Block until the server saw at least n hang-ups mid-stream; raise TimeoutError otherwise."""
        with self._lock:
            if not self._lock.wait_for(lambda: len(self._closed) >= n, timeout):
                raise TimeoutError(f"fake LLM: expected {n} closed streams, saw {len(self._closed)} in {timeout}s")
            return list(self._closed)

    def _note_closed(self) -> None:
        with self._lock:
            self._closed.append(time.monotonic())
            self._lock.notify_all()

    def wait_for_requests(self, n: int, timeout: float = 10) -> list[dict]:
        """Block until at least n requests arrived; raise TimeoutError otherwise."""
        with self._lock:
            if not self._lock.wait_for(lambda: len(self._requests) >= n, timeout):
                raise TimeoutError(f"fake LLM: expected {n} requests, got {len(self._requests)} in {timeout}s")
            return list(self._requests)

    # -- internals ---------------------------------------------------------------

    def _next_reply(
        self, body: dict, headers: dict[str, str], raw: bytes = b"", path: str = "/v1/chat/completions"
    ) -> Reply:
        with self._lock:
            self._requests.append(body)
            self._raw.append(raw)
            self._headers.append(headers)
            self._paths.append(path)
            number = len(self._requests)
            item = self._script.popleft() if self._script else None
            self._lock.notify_all()
        if item is None:
            return error(500, f"{EXHAUSTED_MESSAGE}: no reply scripted for request #{number}", code="fake_llm")
        if callable(item) and not isinstance(item, Reply):
            try:
                item = item(body)
            except Exception as exc:  # make test bugs visible to the client
                return error(500, f"fake LLM script callable raised {exc!r}", code="fake_llm")
        if isinstance(item, str):
            item = text(item)
        if not isinstance(item, Reply):
            return error(500, f"fake LLM script callable returned {item!r}, not a Reply", code="fake_llm")
        return _capped(item, body.get("max_tokens") or body.get("max_completion_tokens"))

    def _tool_calls(self, reply: Reply) -> list[tuple[str, str, str | None]]:
        out = []
        for i, tc in enumerate(reply.tool_calls):
            name, args = tc[0], tc[1]
            call_id = tc[2] if len(tc) == 3 and tc[2] else f"call_fake_{next(self._call_ids)}"
            if i == 0 and reply.raw_args is not None:
                args = reply.raw_args
            elif args is None:
                args = "{}"
            elif not isinstance(args, str):
                args = json.dumps(args)
            out.append((name, args, None if reply.omit_ids else call_id))
        return out

    @staticmethod
    def _usage(body: dict, reply: Reply, completion: int | None = None) -> dict:
        """Deterministic counts: the prompt's JSON length / 4; for a stream, `completion` is its
        number of content and tool-argument chunks."""
        prompt = len(json.dumps(body.get("messages", []))) // 4
        if completion is None:
            completion = len("".join(reply.content) if isinstance(reply.content, list) else reply.content or "") // 4
            completion += sum(len(str(tc[1])) for tc in reply.tool_calls) // 4
        return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}

    def _completion(self, body: dict, reply: Reply) -> dict:
        content = "".join(reply.content) if isinstance(reply.content, list) else reply.content
        message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None}
        if reply.reasoning is not None:
            message["reasoning_content"] = reply.reasoning
        calls = self._tool_calls(reply)
        if calls and not reply.empty_stream:
            message["tool_calls"] = [
                {**({"id": cid} if cid else {}), "type": "function", "function": {"name": n, "arguments": a}}
                for n, a, cid in calls
            ]
        finish = reply.finish_reason or ("tool_calls" if calls else "stop")
        return {
            "id": f"chatcmpl-fake{next(self._ids)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", MODEL_ID),
            "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
            "usage": self._usage(body, reply),
        }

    def _chunks(self, body: dict, reply: Reply) -> list[dict]:
        if reply.empty_stream:
            return []
        include_usage = self.usage and bool((body.get("stream_options") or {}).get("include_usage"))
        base = {
            "id": f"chatcmpl-fake{next(self._ids)}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": body.get("model", MODEL_ID),
        }

        def chunk(delta: dict, finish: str | None = None) -> dict:
            c = {**base, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]}
            if include_usage:
                c["usage"] = None
            return c

        out = [chunk({"role": "assistant", "content": ""})]
        if reply.reasoning:
            out += [chunk({"reasoning_content": p}) for p in split_words(reply.reasoning)]
        if reply.content:
            pieces = reply.content if isinstance(reply.content, list) else split_words(reply.content)
            out += [chunk({"content": p}) for p in pieces]
        calls = self._tool_calls(reply)
        for i, (name, args, cid) in enumerate(calls):
            first: dict[str, Any] = {"index": i}
            if cid:
                first["id"] = cid
            first["type"] = "function"
            first["function"] = {"name": name, "arguments": args if reply.split_args_into == 0 else ""}
            out.append(chunk({"tool_calls": [first]}))
            if reply.split_args_into == 0:
                continue
            for piece in _split_n(args, reply.split_args_into):
                fn = {"name": name, "arguments": piece} if reply.repeat_name else {"arguments": piece}
                out.append(chunk({"tool_calls": [{"index": i, "function": fn}]}))
        finish = reply.finish_reason or ("tool_calls" if calls else "stop")
        out.append(chunk({}, finish))
        if include_usage:
            produced = sum(
                1 for c in out for ch in c["choices"] if ch["delta"].get("content") or _has_arguments(ch["delta"])
            )
            out.append({**base, "choices": [], "usage": self._usage(body, reply, produced)})
        return [out[0], *reply.misshapen, *out[1:]]  # type: ignore[list-item]


def _has_arguments(delta: dict) -> bool:
    return any((call.get("function") or {}).get("arguments") for call in delta.get("tool_calls") or [])
