"""The record of what reached the model: every request a thread's agents made, as it went out (the
body's bytes), with its kind, size, redaction count and the sources of its parts. Bounded: a
thread's newest KEEP_BODIES requests keep their bodies; older ones are compacted to their size and
SHA-256 (the rest of the row stays). Same database as the thread store, SQLite or PostgreSQL."""

from __future__ import annotations

import base64
import hashlib
import json
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agent_core.contract.model_requests import MAX_STEP_SOURCES, RequestSource, SentSummary
from agent_core.json_types import JsonObject

if TYPE_CHECKING:  # database.py creates this module's table
    from agent_core.storage.database import Connection, Database

KEEP_BODIES = 200  # per thread: a request beyond the newest 200 keeps its size and hash, not its text

MODEL_REQUESTS = (
    "CREATE TABLE IF NOT EXISTS model_requests ("
    " thread_id TEXT NOT NULL, seq INTEGER NOT NULL, created_at REAL NOT NULL, agent TEXT NOT NULL,"
    " task_id TEXT NOT NULL, kind TEXT NOT NULL, bytes INTEGER NOT NULL, redactions INTEGER NOT NULL,"
    " sources TEXT NOT NULL, sha256 TEXT NOT NULL, body TEXT, PRIMARY KEY (thread_id, seq))",
)
_COLUMNS = "seq, created_at, agent, task_id, kind, bytes, redactions, sources, sha256, body"


class RequestLog:
    """A thread's model requests; the caller has checked that the thread is its owner's."""

    def __init__(self, database: Database) -> None:
        self.database = database

    async def add(
        self,
        thread_id: str,
        agent: str,
        task_id: str,
        kind: str,
        body: bytes,
        redactions: int,
        sources: list[dict[str, str]],
    ) -> int:
        """Record one request; its seq (per thread, from 1)."""
        now = time.time()

        def insert(conn: Connection) -> int:  # on the database's thread: hashing and deflating too
            digest = hashlib.sha256(body).hexdigest()
            row = (now, agent, task_id, kind, len(body), redactions, json.dumps(sources), digest, packed(body))
            self.database.lock_threads(conn, [thread_id])
            last = conn.execute("SELECT MAX(seq) FROM model_requests WHERE thread_id = ?", (thread_id,)).fetchone()
            seq = int(last[0] or 0) + 1
            conn.execute(
                f"INSERT INTO model_requests (thread_id, {_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (thread_id, seq, *row),
            )
            conn.execute(
                "UPDATE model_requests SET body = NULL WHERE thread_id = ? AND seq <= ? AND body IS NOT NULL",
                (thread_id, seq - KEEP_BODIES),
            )
            return seq

        seq: int = await self.database.write(insert)
        return seq

    async def list(self, thread_id: str) -> list[RecordedRequest]:
        rows = await self.database.call(
            lambda conn: conn.execute(
                f"SELECT {_COLUMNS} FROM model_requests WHERE thread_id = ? ORDER BY seq", (thread_id,)
            ).fetchall()
        )
        return [RecordedRequest(*row) for row in rows]

    @staticmethod
    def delete_in(conn: Connection, thread_id: str) -> None:
        """Inside the thread's delete: its record goes with it."""
        conn.execute("DELETE FROM model_requests WHERE thread_id = ?", (thread_id,))


@dataclass(frozen=True)
class RecordedRequest:
    seq: int
    created_at: float
    agent: str
    task_id: str
    kind: str
    bytes: int
    redactions: int
    sources: str  # JSON list of {"kind", "name"}
    sha256: str
    body: str | None  # packed(); None once compacted

    def public(self, with_text: bool = True) -> JsonObject:
        """The route's item: the body, its messages and tools while it is kept (and `with_text`)."""
        item: JsonObject = {
            "seq": self.seq,
            "agent": self.agent,
            "kind": self.kind,
            "bytes": self.bytes,
            "redactions": self.redactions,
            "sources": json.loads(self.sources),
            "sha256": self.sha256,
            "created_at": self.created_at,
            "kept": self.body is not None,
        }
        if self.task_id:
            item["task_id"] = self.task_id
        if self.body is not None and with_text:
            raw = unpacked(self.body)
            sent = json.loads(raw)
            item["messages"] = sent.get("messages", [])
            if "tools" in sent:
                item["tools"] = sent["tools"]
            item["body"] = raw.decode("utf-8", errors="replace")  # JSON as the SDK encoded it: UTF-8
        return item


# A body is stored deflated (a request repeats the conversation: ~8 times smaller), as text both
# dialects keep alike; byte for byte what was sent once inflated.
PACKED = "z1:"


def packed(body: bytes) -> str:
    return PACKED + base64.b64encode(zlib.compress(body, 6)).decode("ascii")


def unpacked(text: str) -> bytes:
    if not text.startswith(PACKED):
        return text.encode("utf-8")
    return zlib.decompress(base64.b64decode(text[len(PACKED) :]))


@dataclass(frozen=True)
class ThreadAudit:
    """One agent's requests in one thread (agent_core.llm.client.RequestAudit)."""

    log: RequestLog
    thread_id: str
    agent: str
    task_id: str = ""
    # Told of each model turn's request once recorded (its step's "what was sent"): the run context
    # keeps the last one for the call's usage event. A retried turn's last request is the one answered.
    on_turn: Callable[[SentSummary], None] | None = None

    async def sent(self, kind: str, body: bytes, redactions: int, sources: list[dict[str, str]]) -> None:
        seq = await self.log.add(self.thread_id, self.agent, self.task_id, kind, body, redactions, sources)
        if kind == "turn" and self.on_turn is not None:
            named = [RequestSource.model_validate(source) for source in sources[:MAX_STEP_SOURCES]]
            self.on_turn(SentSummary(request_seq=seq, bytes=len(body), redactions=redactions, sources=named))
