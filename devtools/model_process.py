"""The scripted model (devtools/fake_llm.py) in a process of its own, for benchmarks: told what to
answer, asked when it wrote each token. In the client's process, its writer threads and the
client's reads share one GIL: a busy reader slowed the model's stream (token_relay's "direct"
answer took 3% less time than the same answer written while the server's stream was read), and a
hundred writer threads made the client's reads lag (many_threads). Send times are
time.perf_counter(): CLOCK_MONOTONIC, one clock for every process of the machine."""

from __future__ import annotations

import json
import multiprocessing
import time
from multiprocessing.connection import Connection

from . import fake_llm
from .fake_llm import FakeLLM, text


def _record_sends(sent: dict[str, float]) -> None:
    """In the model's process: note when each token's chunk was written (by its text)."""
    fake_llm._Server.request_queue_size = 1024  # the default backlog of 5 resets a hundred connects
    original = fake_llm._Handler._write_chunk

    def write_chunk(self: fake_llm._Handler, data: bytes) -> None:
        original(self, data)
        if data.startswith(b"data: {"):
            for choice in json.loads(data[6:])["choices"]:
                content = (choice.get("delta") or {}).get("content")
                if content:
                    sent[content] = time.perf_counter()

    fake_llm._Handler._write_chunk = write_chunk  # type: ignore[method-assign]


def _serve(control: Connection) -> None:
    sent: dict[str, float] = {}
    _record_sends(sent)
    with FakeLLM() as llm:
        control.send(llm.base_url)
        while (order := control.recv()) is not None:
            replies, pace, delay = order
            if replies is None:  # asked for the send times so far
                control.send(dict(sent))
                sent.clear()
                continue
            llm.script(*[text(tokens, chunk_delay=pace, delay_before=delay) for tokens in replies])
            control.send(True)


class ModelProcess:
    """The scripted model's process, from the benchmark's side. Token texts must be distinct
    within a script: send times are found by text."""

    def __init__(self) -> None:
        context = multiprocessing.get_context("fork")  # before the benchmark starts threads of its own
        self._control, child = context.Pipe()
        self._process = context.Process(target=_serve, args=(child,), daemon=True)
        self._process.start()
        self.base_url: str = self._control.recv()
        self.pid = self._process.pid

    def script(self, replies: list[list[str]], pace: float = 0.0, delay: float = 0.0) -> None:
        """The next replies, in request order: each its tokens, one per `pace` s after `delay` s."""
        self._control.send((replies, pace, delay))
        self._control.recv()

    def sends(self) -> dict[str, float]:
        """When each token written since the last call was written."""
        self._control.send((None, 0.0, 0.0))
        return self._control.recv()

    def __enter__(self) -> ModelProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self._control.send(None)
        self._process.join(10)
