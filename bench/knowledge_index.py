"""Workspace knowledge: indexing throughput and query latency (issue 15).

Writes a generated workspace (devtools.knowledge_corpus) of about 10 000 chunks, builds the SQLite
FTS5 index from scratch (the initial build the server runs in the background), then times
searches of varied queries through KnowledgeBase.search (the path search_knowledge takes).
Prints documents and chunks per second for the build, and median / p95 query latency.

    python bench/knowledge_index.py [documents]     (default 4000: about 10 000 chunks)
"""

from __future__ import annotations

import asyncio
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent_core.config.agent_settings import AgentSettings  # noqa: E402
from agent_core.knowledge.service import KnowledgeBase  # noqa: E402
from agent_core.workspace import Workspace  # noqa: E402
from devtools.knowledge_corpus import TOPICS, write_corpus  # noqa: E402

QUERIES = 300


async def bench(documents: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root, data = Path(folder) / "workspace", Path(folder) / "data"
        write_corpus(root, count=documents)
        for extra in range(documents // 2):  # longer Markdown files: several sections each
            sections = "\n\n".join(
                f"## Section {n}\n\n{' '.join(random.sample(TOPICS, 12))} details {extra}-{n}" for n in range(3)
            )
            (root / "docs" / f"long_{extra}.md").write_text(f"# Long {extra}\n\n{sections}\n")
        base = KnowledgeBase(Workspace(root, denied=(data,)), data, AgentSettings)
        started = time.perf_counter()
        base.start()
        await base._built.wait()  # the initial build, as the server runs it
        built = time.perf_counter() - started
        counts = base.status()
        rng = random.Random(3)
        timings = []
        for _ in range(QUERIES):
            query = " ".join(rng.sample(TOPICS, 3)) + " how do we compute it?"
            t0 = time.perf_counter()
            await base.search(query, 5)
            timings.append(time.perf_counter() - t0)
        await base.stop()
    timings.sort()
    p95 = timings[int(len(timings) * 0.95) - 1]
    print(
        f"indexed {counts['files']} files, {counts['chunks']} chunks in {built:.2f} s: "
        f"{counts['files'] / built:.0f} docs/s, {counts['chunks'] / built:.0f} chunks/s"
    )
    print(
        f"search over {counts['chunks']} chunks, {QUERIES} queries: median {statistics.median(timings) * 1000:.1f} ms, "
        f"p95 {p95 * 1000:.1f} ms"
    )


if __name__ == "__main__":
    asyncio.run(bench(int(sys.argv[1]) if len(sys.argv) > 1 else 4000))
