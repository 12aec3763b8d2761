"""Optional embeddings (c.Cellwright.embedding_model): chunk vectors from the configured
OpenAI-compatible endpoint's /embeddings, kept in Qdrant's embedded local mode (a folder in the
data directory, no server), and fused with BM25 by reciprocal rank.

qdrant-client (the `knowledge` extra) is imported on first use only."""

from __future__ import annotations

import asyncio
import re
import uuid
from pathlib import Path
from typing import Any

from agent_core.config.agent_settings import AgentSettings
from agent_core.knowledge.store import Hit, IndexStore
from agent_core.llm.sdk_clients import new_client
from agent_core.privacy.outgoing import redacted_texts
from agent_core.private_files import private_dir

BATCH = 64
EMBED_CHARS = 2000  # per chunk sent to the endpoint
RRF_K = 60  # the usual constant of reciprocal rank fusion
_NAMESPACE = uuid.UUID("6f1d9a52-4c1e-4d0e-9a57-0b1c2d3e4f50")


def point_id(path: str, position: int) -> str:
    return str(uuid.uuid5(_NAMESPACE, f"{path}#{position}"))


def fuse(rankings: list[list[str]], limit: int) -> list[str]:
    """Reciprocal rank fusion of several best-first key lists."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking):
            scores[key] = scores.get(key, 0.0) + 1.0 / (RRF_K + rank + 1)
    return sorted(scores, key=lambda key: -scores[key])[:limit]


class EmbeddingIndex:
    def __init__(self, folder: Path, model: str) -> None:
        self.folder = folder
        self.model = model
        self.collection = "chunks_" + re.sub(r"[^A-Za-z0-9_]", "_", model)[:100]
        self._client: Any = None
        self._lock = asyncio.Lock()

    def _open(self) -> Any:
        if self._client is None:
            from qdrant_client import QdrantClient

            self._client = QdrantClient(path=str(private_dir(self.folder)))
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    async def _embed(self, settings: AgentSettings, texts: list[str]) -> list[list[float]]:
        if settings.data_policy != "full":  # the documents' text leaves for the endpoint too
            texts = redacted_texts(texts, settings.redaction_patterns)
        client = new_client(settings)
        try:
            vectors: list[list[float]] = []
            for start in range(0, len(texts), BATCH):
                answer = await client.embeddings.create(model=self.model, input=texts[start : start + BATCH])
                vectors += [item.embedding for item in sorted(answer.data, key=lambda item: item.index)]
            return vectors
        finally:
            await client.close()

    def _ensure_collection(self, size: int) -> None:
        from qdrant_client import models

        client = self._open()
        if not client.collection_exists(self.collection):
            client.create_collection(
                self.collection, vectors_config=models.VectorParams(size=size, distance=models.Distance.COSINE)
            )

    async def update(self, settings: AgentSettings, store: IndexStore, paths: list[str]) -> None:
        """Replace the vectors of `paths` with those of their chunks now in `store`."""
        async with self._lock:
            for path in paths:
                hits = await asyncio.to_thread(store.chunks_of, path)
                vectors = (
                    await self._embed(settings, [f"{h.heading}\n{h.text}"[:EMBED_CHARS] for h in hits]) if hits else []
                )
                await asyncio.to_thread(self._replace, path, hits, vectors)

    def _replace(self, path: str, hits: list[Hit], vectors: list[list[float]]) -> None:
        from qdrant_client import models

        client = self._open()
        if vectors:
            self._ensure_collection(len(vectors[0]))
        if not client.collection_exists(self.collection):
            return
        selector = models.Filter(must=[models.FieldCondition(key="path", match=models.MatchValue(value=path))])
        client.delete(self.collection, points_selector=models.FilterSelector(filter=selector))
        if vectors:
            points = [
                models.PointStruct(
                    id=point_id(h.path, h.position), vector=v, payload={"path": h.path, "position": h.position}
                )
                for h, v in zip(hits, vectors, strict=False)
            ]
            client.upsert(self.collection, points=points)

    async def search(self, settings: AgentSettings, query: str, limit: int) -> list[tuple[str, int]]:
        """(path, position) of the chunks nearest to `query`, best first."""
        (vector,) = await self._embed(settings, [query[:EMBED_CHARS]])
        async with self._lock:
            return await asyncio.to_thread(self._nearest, vector, limit)

    def _nearest(self, vector: list[float], limit: int) -> list[tuple[str, int]]:
        client = self._open()
        if not client.collection_exists(self.collection):
            return []
        found = client.query_points(self.collection, query=vector, limit=limit).points
        return [(p.payload["path"], int(p.payload["position"])) for p in found if p.payload]
