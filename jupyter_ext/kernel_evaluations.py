"""Expressions evaluated in a kernel for the probes (namespace snapshot, @tool discovery and calls,
undo snapshots, resource checks), on one kept shell-only client per kernel.

An execute_request has a fixed cost in the kernel (a few ms: IPython runs an empty cell around the
user_expressions), and a new client costs its connection. A run's start asks for two evaluations
at once (its context and its @tool functions): those asked for in the same turn of the event loop
travel in one execute_request, one user_expression each, on the kept client. A request of read-only
expressions only (ReadOnlyExpression) also carries the installer of the kernel's quick path
(agent_core.kernel_probes.quick_answers) and is answered there once it is installed: ~1 ms instead
of ~2.5 ms of IPython's cell machinery before the expressions run (issue 41).

A run's start also asks for those two ahead (`ask_ahead`), as soon as its POST has been checked: the
request leaves while the server answers the POST and takes the thread's lease, and the run's own
evaluations moments later take the answer (or wait for it) instead of asking again."""

from __future__ import annotations

import asyncio
import hashlib
import queue
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from agent_core.json_types import JsonObject
from agent_core.kernel_probes import quick_answers
from agent_core.kernel_probes.probe import ReadOnlyExpression, probe_expression
from agent_core.kernel_probes.quick_answers import INSTALL_KEY, QUICK_PREFIX

from .kernel_clients import (
    KernelChannels,
    KernelClients,
    KernelManagerProtocol,
    MappingKernelManagerProtocol,
    connected_client,
)

EVALUATION_TIMEOUT = 30.0  # the callers' own limits are shorter; this one only bounds a lost reply
# An answer asked for ahead serves an evaluation asked this soon after it was sent, once; a later one
# asks anew (a cell may have run since: the namespace it described is not the kernel's any more).
AHEAD_SECONDS = 1.0

Expressions = dict[str, str]  # user_expressions: key -> expression
Results = dict[str, JsonObject]  # key -> {"status": "ok", "data": ...} or {"status": "error", "ename", "evalue"}


@cache
def _quick_installer() -> str:
    source = Path(quick_answers.__file__).read_text(encoding="utf-8")
    return probe_expression(source, "install", {"version": hashlib.sha256(source.encode()).hexdigest()[:16]})


def expression_key(expression: str, n: int) -> str:
    """The user_expressions key of a batch's `n`th expression: the quick path's own for a read-only one."""
    return f"{QUICK_PREFIX}{n}" if isinstance(expression, ReadOnlyExpression) else f"e{n}"


def with_quick_installer(expressions: Expressions) -> Expressions:
    """A request the quick path may answer carries its installer: the first one on a kernel (or after
    a restart) goes through IPython and installs it; the next ones are answered there, the installer
    answered without running."""
    if all(key.startswith(QUICK_PREFIX) for key in expressions):
        return {**expressions, INSTALL_KEY: _quick_installer()}
    return expressions


async def evaluate(client: KernelChannels, expressions: Expressions, timeout: float = EVALUATION_TIMEOUT) -> Results:
    """One silent execute_request evaluating `expressions` (no history, no execution count, nothing
    assigned); {} when the kernel does not answer within `timeout`. No wait_for_ready: it waits for
    0.2 s of iopub silence, and only the shell reply matters here."""
    msg_id = client.execute("", silent=True, store_history=False, user_expressions=expressions)
    reply = await shell_reply(client, msg_id, timeout)
    results = (reply or {}).get("user_expressions")
    return results if isinstance(results, dict) else {}


async def shell_reply(client: KernelChannels, msg_id: str, timeout: float) -> JsonObject | None:
    """The content of the shell reply to `msg_id`; replies to earlier requests whose callers gave up are skipped."""
    while True:
        try:
            msg = await client.get_shell_msg(timeout=timeout)
        except queue.Empty:
            return None
        if msg.get("parent_header", {}).get("msg_id") == msg_id:
            content: JsonObject = msg["content"]
            return content


@dataclass
class _Batch:
    expressions: Expressions = field(default_factory=dict)
    results: asyncio.Future[Results] | None = None


@dataclass
class _Ahead:
    """A batch asked for ahead: the key of each expression nobody has taken yet, and when it was sent."""

    keys: dict[str, str]  # expression -> its key in the batch
    results: asyncio.Future[Results]
    asked: float = field(default_factory=time.monotonic)


class KernelEvaluations:
    """The server's evaluation clients, one per kernel, and the batch each is gathering."""

    def __init__(self) -> None:
        self._clients = KernelClients(outputs=False)
        self._gathering: dict[str, _Batch] = {}
        self._in_flight: dict[str, set[asyncio.Future[Results]]] = {}
        self._ahead: dict[str, _Ahead] = {}

    async def evaluate(
        self,
        kernel_id: str,
        manager: KernelManagerProtocol,
        kernel_manager: MappingKernelManagerProtocol,
        expression: str,
    ) -> JsonObject:
        """The kernel's user_expressions entry for `expression`; {} when it did not answer."""
        taken = self._take_ahead(kernel_id, expression)
        if taken is not None:
            results, key = taken
        else:
            batch = self._batch(kernel_id, manager, kernel_manager)
            key = self._join(batch, expression)
            assert batch.results is not None
            results = batch.results
        # shielded: a caller that gives up (its own time limit) leaves the batch to the others
        return (await asyncio.shield(results)).get(key) or {}

    def ask_ahead(
        self,
        kernel_id: str,
        manager: KernelManagerProtocol,
        kernel_manager: MappingKernelManagerProtocol,
        expressions: list[str],
    ) -> None:
        """Send `expressions` on the loop's next turn, before anyone awaits them: `evaluate` of one of
        them within AHEAD_SECONDS takes this answer, once. Nothing is sent while an evaluation of ours
        is in flight on that kernel (it may wait behind a user's cell: this one would too)."""
        if not expressions or self._in_flight.get(kernel_id):
            return
        batch = self._batch(kernel_id, manager, kernel_manager)
        assert batch.results is not None
        self._ahead[kernel_id] = _Ahead({e: self._join(batch, e) for e in expressions}, batch.results)

    def _take_ahead(self, kernel_id: str, expression: str) -> tuple[asyncio.Future[Results], str] | None:
        ahead = self._ahead.get(kernel_id)
        if ahead is None:
            return None
        if time.monotonic() - ahead.asked > AHEAD_SECONDS:
            del self._ahead[kernel_id]
            return None
        key = ahead.keys.pop(expression, None)
        if not ahead.keys:
            del self._ahead[kernel_id]
        return None if key is None else (ahead.results, key)

    def _batch(
        self, kernel_id: str, manager: KernelManagerProtocol, kernel_manager: MappingKernelManagerProtocol
    ) -> _Batch:
        """The batch gathering on that kernel in this turn of the loop, or a new one sent on the next."""
        batch = self._gathering.get(kernel_id)
        if batch is None:
            batch = self._gathering[kernel_id] = _Batch()
            batch.results = asyncio.ensure_future(self._send(kernel_id, manager, kernel_manager, batch))
            sending = self._in_flight.setdefault(kernel_id, set())
            sending.add(batch.results)
            batch.results.add_done_callback(sending.discard)
        return batch

    @staticmethod
    def _join(batch: _Batch, expression: str) -> str:
        key = expression_key(expression, len(batch.expressions))
        batch.expressions[key] = expression
        return key

    def joinable(self, kernel_id: str) -> bool:
        """Whether a batch is gathering on that kernel with nothing else of ours in flight: an evaluation
        asked for now travels with it, in the same request."""
        return kernel_id in self._gathering and len(self._in_flight.get(kernel_id, ())) == 1

    async def answered_within(self, kernel_id: str, seconds: float) -> bool:
        """Whether every evaluation of ours on that kernel is answered within `seconds`. An idle kernel answers
        one in a few ms; one still unanswered after that waits behind a cell that started before it."""
        sending = self._in_flight.get(kernel_id)
        if not sending:
            return True
        _, pending = await asyncio.wait(set(sending), timeout=seconds)  # waits; cancels nothing
        return not pending

    async def _send(
        self,
        kernel_id: str,
        manager: KernelManagerProtocol,
        kernel_manager: MappingKernelManagerProtocol,
        batch: _Batch,
    ) -> Results:
        # A task's first step runs on the loop's next turn: every evaluation asked for in this one has
        # joined the batch by then (a run's two probes, asked by the two tasks of one gather, do).
        if self._gathering.get(kernel_id) is batch:
            del self._gathering[kernel_id]
        shared = await self._clients.get(kernel_id, manager, kernel_manager)
        try:
            async with shared.turn:  # one request at a time per client: its replies are read in order
                return await evaluate(shared.client, with_quick_installer(batch.expressions))
        finally:
            self._clients.done(kernel_id, shared)
            if not self._in_flight[kernel_id]:
                del self._in_flight[kernel_id]

    async def ask(
        self,
        kernel_id: str,
        manager: KernelManagerProtocol,
        kernel_manager: MappingKernelManagerProtocol,
        send: Callable[[KernelChannels], str],
        timeout: float,
    ) -> JsonObject | None:
        """The content of the shell reply to the request `send` makes on the kept client (its msg_id);
        None if none came within `timeout`. A client of its own would cost a connection each time: on a
        gateway, a websocket and the kernel_info round trips the gateway makes for it (issue 41)."""
        shared = await self._clients.get(kernel_id, manager, kernel_manager)
        try:
            async with shared.turn:
                return await shell_reply(shared.client, send(shared.client), timeout)
        finally:
            self._clients.done(kernel_id, shared)

    def close(self) -> None:
        self._clients.close()


async def evaluate_once(manager: KernelManagerProtocol, expression: str) -> JsonObject:
    """Without kept clients (a KernelEnvironment made outside the server): a client for this evaluation only."""
    client = await connected_client(manager, outputs=False)
    try:
        return (await evaluate(client, {"value": expression})).get("value") or {}
    finally:
        client.stop_channels()
