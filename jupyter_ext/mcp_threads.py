"""Which thread an MCP call runs in: one per session and notebook, more while its calls overlap.

Outside agents open several sessions (two windows of one agent) and make parallel calls. A run of a
thread is one at a time, so a call never shares a thread with another call that is still running
or waiting for the user's decision: it gets one of its session's free threads, else a free thread
of the client on that notebook that no live session holds (the agent's earlier session), else a
new one, titled for the client like the rest."""

from __future__ import annotations

import asyncio
import weakref
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .run_manager import RunManager


def thread_title(client: str) -> str:
    return f"{client} via MCP"


class SessionThreads:
    """The threads each live MCP session holds, and the calls in flight on each."""

    def __init__(self, runs: RunManager) -> None:
        self._runs = runs
        # A session's threads, by notebook; a session that ends (its object collected) frees them.
        self._held: weakref.WeakKeyDictionary[object, dict[str, list[str]]] = weakref.WeakKeyDictionary()
        self._calls: Counter[str] = Counter()  # from a call's claim to its answer
        self._claiming = asyncio.Lock()  # two calls never pick one thread

    @asynccontextmanager
    async def thread_for_call(self, session: object, client: str, notebook: str) -> AsyncIterator[str]:
        """A thread of `client` on `notebook` that no other call is on, held until the call is answered."""
        async with self._claiming:
            thread_id = await self._free_thread(session, client, notebook)
            self._calls[thread_id] += 1
        try:
            yield thread_id
        finally:
            self._calls[thread_id] -= 1
            if not self._calls[thread_id]:
                del self._calls[thread_id]

    async def _free_thread(self, session: object, client: str, notebook: str) -> str:
        own = self._held.setdefault(session, {}).setdefault(notebook, [])
        for thread_id in own:
            if await self._idle(thread_id):
                return thread_id
        others = {t for held in self._held.values() for ts in held.values() for t in ts}
        title = thread_title(client)
        for record in await self._runs.threads.list():
            if record.title == title and record.notebook_path == notebook and record.thread_id not in others:
                if await self._idle(record.thread_id):
                    own.append(record.thread_id)
                    return record.thread_id
        created = (await self._runs.threads.create(notebook, title)).thread_id
        own.append(created)
        return created

    async def _idle(self, thread_id: str) -> bool:
        """No call of ours on it, and no run of anyone's running or waiting for a decision. (A run that
        only finishes now, its call answered, counts as idle: a new run waits for it.)"""
        if self._calls[thread_id]:
            return False
        record = await self._runs.threads.get(thread_id)
        if record is None:
            return False
        running = record.status == "running" and not self._runs.finishing(thread_id)
        return not running and record.status != "awaiting_approval"
