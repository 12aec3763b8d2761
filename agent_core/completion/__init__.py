"""Inline completion: the suggestion at a cursor, from the completion model, aware of the kernel's
names (agent_core/completion/service.py drives it; the `completions` route serves it)."""
