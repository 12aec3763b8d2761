"""Cellwright's agent: the LangGraph loop, its tools, prompts and persistence. Free of Jupyter
server code, so the kernel-side `%agent` magic can use it too.

`%load_ext agent_core` in a notebook adds `%agent` / `%%agent` (see agent_core.kernel.magic); to load
it in every kernel: `c.InteractiveShellApp.extensions = ["agent_core"]` in an IPython profile's config."""
from __future__ import annotations

from typing import Any

__version__ = "0.1.0"


def load_ipython_extension(ipython: Any) -> None:
    from .kernel.magic import load_ipython_extension as load  # imported here: `import agent_core` stays cheap

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    from .kernel.magic import unload_ipython_extension as unload

    unload(ipython)
