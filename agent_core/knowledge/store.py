"""The index on disk: one SQLite file in Cellwright's data folder (owner-only, like every file
there), an FTS5 table of chunks ranked by bm25() and a table of what was indexed from where.

Blocking; one connection guarded by a lock, used from worker threads (asyncio.to_thread)."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_core.knowledge.chunking import Chunk
from agent_core.private_files import private_file

SCHEMA_VERSION = "2"  # 2: porter stemming (cancelled matches cancellations)
# bm25() weights of (path, heading, body): a word in a heading or a file name says more than one in a paragraph.
BM25_WEIGHTS = (2.0, 3.0, 1.0)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sources (
    path TEXT PRIMARY KEY,       -- a workspace path, or db:<database>/<table>
    origin TEXT NOT NULL,        -- 'file' or 'database'
    mtime_ns INTEGER NOT NULL,
    size INTEGER NOT NULL,
    chunks INTEGER NOT NULL,
    indexed_at REAL NOT NULL
);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks USING fts5(
    path, heading, body, kind UNINDEXED, position UNINDEXED, tokenize = 'porter unicode61 remove_diacritics 2'
);
"""


@dataclass(frozen=True)
class Hit:
    path: str
    heading: str
    text: str
    kind: str
    position: int
    score: float  # larger is better (bm25() is negative: its opposite)

    @property
    def key(self) -> str:
        return f"{self.path}#{self.position}"


class IndexStore:
    def __init__(self, path: Path) -> None:
        self.path = path
        private_file(path)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        with self._lock:
            found = self._version()
            if found not in (None, SCHEMA_VERSION):  # an older layout: rebuilt from the files
                self._db.executescript("DROP TABLE IF EXISTS sources; DROP TABLE IF EXISTS chunks;")
            self._db.executescript(_SCHEMA)
            self._db.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))

    def _version(self) -> str | None:
        try:
            row = self._db.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
        except sqlite3.OperationalError:
            return None
        return row[0] if row else None

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def sources(self, origin: str) -> dict[str, tuple[int, int]]:
        """path -> (mtime_ns, size) of what is indexed from `origin`."""
        with self._lock:
            rows = self._db.execute("SELECT path, mtime_ns, size FROM sources WHERE origin = ?", (origin,)).fetchall()
        return {path: (mtime, size) for path, mtime, size in rows}

    def replace(
        self, path: str, origin: str, mtime_ns: int, size: int, chunks: Iterable[Chunk], new: bool = False
    ) -> int:
        """Index `chunks` as the whole content of `path` (its earlier chunks removed), in one transaction.
        `new`: the caller knows nothing is indexed under `path` (a first build), so no delete scan is needed."""
        items = list(chunks)
        with self._lock:
            self._db.execute("BEGIN")
            try:
                if not new:
                    self._db.execute("DELETE FROM chunks WHERE path = ?", (path,))
                self._db.executemany(
                    "INSERT INTO chunks (path, heading, body, kind, position) VALUES (?, ?, ?, ?, ?)",
                    [(path, c.heading, c.text, c.kind, i) for i, c in enumerate(items)],
                )
                self._db.execute(
                    "INSERT OR REPLACE INTO sources VALUES (?, ?, ?, ?, ?, ?)",
                    (path, origin, mtime_ns, size, len(items), time.time()),
                )
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return len(items)

    def remove(self, paths: Iterable[str]) -> None:
        with self._lock:
            self._db.execute("BEGIN")
            for path in paths:
                self._db.execute("DELETE FROM chunks WHERE path = ?", (path,))
                self._db.execute("DELETE FROM sources WHERE path = ?", (path,))
            self._db.execute("COMMIT")

    def search(self, match: str, limit: int, origin: str | None = None) -> list[Hit]:
        """Chunks matching the FTS5 expression `match` (built by fts_query, never raw model text),
        best first."""
        weights = ", ".join(str(w) for w in BM25_WEIGHTS)
        sql = f"SELECT path, heading, body, kind, position, bm25(chunks, {weights}) AS rank FROM chunks WHERE chunks MATCH ?"
        params: list[Any] = [match]
        if origin is not None:
            sql += " AND path IN (SELECT path FROM sources WHERE origin = ?)"
            params.append(origin)
        sql += " ORDER BY rank LIMIT ?"
        params.append(limit)
        with self._lock:
            rows = self._db.execute(sql, params).fetchall()
        return [
            Hit(path, heading, body, kind, int(position), -float(rank))
            for path, heading, body, kind, position, rank in rows
        ]

    def chunk(self, path: str, position: int) -> Hit | None:
        with self._lock:
            row = self._db.execute(
                "SELECT path, heading, body, kind, position FROM chunks WHERE path = ? AND position = ?",
                (path, position),
            ).fetchone()
        return Hit(row[0], row[1], row[2], row[3], int(row[4]), 0.0) if row else None

    def chunks_of(self, path: str) -> list[Hit]:
        with self._lock:
            rows = self._db.execute(
                "SELECT path, heading, body, kind, position FROM chunks WHERE path = ? ORDER BY position", (path,)
            ).fetchall()
        return [Hit(r[0], r[1], r[2], r[3], int(r[4]), 0.0) for r in rows]

    def counts(self) -> dict[str, int]:
        with self._lock:
            files, chunks, tables = self._db.execute(
                "SELECT COALESCE(SUM(origin = 'file'), 0), COALESCE(SUM(chunks), 0), COALESCE(SUM(origin = 'database'), 0) FROM sources"
            ).fetchone()
        return {"files": int(files), "chunks": int(chunks), "tables": int(tables)}
