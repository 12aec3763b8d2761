"""Workspace knowledge: a real SQLite FTS5 index of 200 generated documents, the real file watcher,
the embeddings path against the scripted server's /embeddings, and search_knowledge through a
real server with hostile arguments."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from agent_core.config.agent_settings import AgentSettings
from agent_core.knowledge.service import KnowledgeBase
from agent_core.workspace import Workspace
from devtools.fake_llm import FakeLLM, text, tool_call
from devtools.knowledge_corpus import EXPECTED, write_corpus
from tests.conftest import Api, of_type

UPDATE_DEADLINE = 5.0  # the bound for an edit to show in results (polled; it takes ~0.3 s here)


def _base(root: Path, data: Path, settings: AgentSettings | None = None) -> KnowledgeBase:
    chosen = settings or AgentSettings()
    return KnowledgeBase(Workspace(root, denied=(data,)), data, lambda: chosen)


async def _until(base: KnowledgeBase, query: str, check: Any) -> list[Any]:
    deadline = time.monotonic() + UPDATE_DEADLINE
    while True:
        hits = await base.search(query, 5)
        if check(hits) or time.monotonic() > deadline:
            return hits
        await asyncio.sleep(0.1)


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "workspace"
    write_corpus(root)
    return root


def test_the_expected_document_ranks_in_the_top_3_and_edits_show_up(corpus: Path, tmp_path: Path) -> None:
    async def scenario() -> None:
        base = _base(corpus, tmp_path / "data")
        try:
            hits = await base.search("how do we compute churn?", 3)
            assert EXPECTED in [hit.path for hit in hits], [hit.path for hit in hits]
            assert hits[0].heading == "Metrics > Churn rate"
            status = base.status()
            assert status["files"] == 200 and status["state"] == "ready" and not status["errors"]

            # An edit: a word no document had becomes findable, and a removed word stops matching.
            target = corpus / "docs" / "invoice" / "note_30.md"
            target.write_text("# Invoices\n\n## Dunning\n\nOverdue invoices get a xylophone reminder.\n")
            hits = await _until(base, "xylophone reminder", lambda found: bool(found))
            assert [hit.path for hit in hits][:1] == ["docs/invoice/note_30.md"]
            target.write_text("# Invoices\n\nNothing to see.\n")
            hits = await _until(base, "xylophone", lambda found: not found)
            assert hits == []
            target.unlink()
            await _until(
                base, "invoices nothing", lambda found: "docs/invoice/note_30.md" not in [h.path for h in found]
            )
            assert "docs/invoice/note_30.md" not in base.store.sources("file")

            # A folder renamed: the watcher names only the folder; its documents move in the index.
            (corpus / "docs" / "refund").rename(corpus / "docs" / "returns")
            await _until(
                base, "refund process", lambda found: found and all(h.path.startswith("docs/returns/") for h in found)
            )
            indexed = base.store.sources("file")
            assert not [p for p in indexed if p.startswith("docs/refund/")] and [
                p for p in indexed if p.startswith("docs/returns/")
            ]
        finally:
            await base.stop()

    asyncio.run(scenario())


def test_hidden_files_and_the_data_folder_are_never_indexed(corpus: Path, tmp_path: Path) -> None:
    (corpus / ".secret").mkdir()
    (corpus / ".secret" / "keys.md").write_text("# Keys\n\nquokka password hunter2\n")
    (corpus / ".quokka.md").write_text("quokka hidden dotfile\n")
    data = corpus / "cellwright-data"  # the data folder inside the root (a JUPYTER_DATA_DIR there)
    data.mkdir()
    (data / "notes.md").write_text("quokka in the data folder\n")

    async def scenario() -> None:
        base = _base(corpus, data)
        try:
            assert await base.search("quokka", 5) == []
            # Created while the watcher runs: still never read.
            (corpus / ".secret" / "more.md").write_text("quokka again\n")
            (corpus / "docs" / ".draft.md").write_text("quokka draft\n")
            (corpus / "docs" / "visible.md").write_text("# Visible\n\nquokka visible marker\n")
            hits = await _until(base, "quokka", lambda found: bool(found))
            assert [hit.path for hit in hits] == ["docs/visible.md"]
            indexed = base.store.sources("file")
            assert not [path for path in indexed if "/." in "/" + path or path.startswith("cellwright-data")]
        finally:
            await base.stop()

    asyncio.run(scenario())


@pytest.mark.parametrize(
    "query",
    [
        'churn" OR path:*',
        "NEAR(churn compute, 2)",
        "*",
        '"""',
        "churn AND NOT -compute^",
        "col:churn",
        ")))((",
        "x" * 5000,
        "🙂 ∑",
    ],
)
def test_fts_syntax_in_a_query_is_plain_text(corpus: Path, tmp_path: Path, query: str) -> None:
    async def scenario() -> list[Any]:
        base = _base(corpus, tmp_path / "data")
        try:
            return await base.search(query, 10**9)
        finally:
            await base.stop()

    hits = asyncio.run(scenario())
    assert len(hits) <= 20
    if "churn" in query:
        assert EXPECTED in [hit.path for hit in hits]


def test_embeddings_from_the_endpoint_are_fused_with_bm25(corpus: Path, tmp_path: Path) -> None:
    pytest.importorskip("qdrant_client")
    with FakeLLM() as fake:
        settings = AgentSettings(
            model="fake-model", base_url=fake.base_url, api_key="sk-x", embedding_model="fake-embed"
        )

        async def scenario() -> list[Any]:
            base = _base(corpus, tmp_path / "data", settings)
            try:
                hits = await base.search("how do we compute churn?", 3)
                assert not base.status()["errors"], base.status()["errors"]
                return hits
            finally:
                await base.stop()

        hits = asyncio.run(scenario())
        assert fake.embedding_requests >= 2  # the chunks, then the query
    assert EXPECTED in [hit.path for hit in hits]
    assert any((tmp_path / "data" / "knowledge").glob("qdrant-*"))


async def test_search_knowledge_through_the_server_with_hostile_arguments(
    api: Api, fake_llm: FakeLLM, jp_root_dir: Path
) -> None:
    write_corpus(jp_root_dir, count=40)
    (jp_root_dir / ".env.md").write_text("OPENAI_API_KEY=sk-live-quokka\n")
    fake_llm.script(
        tool_call("search_knowledge", {"query": 'compute churn" OR .env* NEAR(', "k": 10**12}, id="s1"),
        tool_call("search_knowledge", {"query": "quokka"}, id="s2"),  # only in the hidden file
        tool_call("search_knowledge", {"query": "x" * 100_000}, id="s3"),
        text("done"),
    )
    thread = await api.new_thread()
    await api.run(thread, "how do we compute churn?")
    events = await api.until_finished(thread)
    results = of_type(events, "tool_result")
    assert [r["status"] for r in results] == ["ok", "ok", "error"]
    told = [m["content"] for m in fake_llm.requests[-1]["messages"] if m["role"] == "tool"]
    assert EXPECTED in told[0] and "(k was capped at 20)" in told[0]
    assert "No passages" in told[1] and "OPENAI_API_KEY" not in "".join(told)  # the hidden file is not indexed
    _, status = await api.call("GET", "knowledge/status", expect=200)
    assert status["files"] == 40 and status["state"] == "ready"
