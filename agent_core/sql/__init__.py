"""SQL over the configured databases (c.Cellwright.databases, SQLAlchemy URLs): statement
classification, bounded execution, table metadata for retrieval, and the kernel-side loader.

SQLAlchemy is imported inside functions only."""
