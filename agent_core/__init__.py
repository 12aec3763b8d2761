"""Cellwright's agent: the LangGraph loop, its tools, prompts and persistence. Free of Jupyter
server code, so the kernel-side `%agent` magic can use it too."""
from __future__ import annotations

__version__ = "0.1.0"
