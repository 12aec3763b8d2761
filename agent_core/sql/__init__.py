"""SQL over the configured databases (c.Cellwright.databases, SQLAlchemy URLs): statement
classification, bounded execution, table metadata (read by agent_core.knowledge), and the kernel-side loader.

SQLAlchemy is imported inside functions only."""
