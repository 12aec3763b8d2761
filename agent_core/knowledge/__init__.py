"""Workspace knowledge: the workspace's documents (and configured databases' table metadata),
chunked with their headings and kept in a SQLite FTS5 index (BM25) in Cellwright's data folder,
fresh through a file watcher; optionally embeddings in Qdrant's local mode, fused by rank.

Nothing here is imported at server start: the service module loads on the first search or when
the server schedules the first build."""
