"""Where threads live: the event log and leases, the databases (SQLite, PostgreSQL), checkpoints and the tool ledger."""
