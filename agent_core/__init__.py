"""Cellwright's agent: the LangGraph loop, its tools, prompts and persistence. Free of Jupyter
server code, so the kernel-side `%agent` magic can use it too.

`%load_ext agent_core` in a notebook adds `%agent` / `%%agent` (see agent_core.kernel_side.magic); to load
it in every kernel: `c.InteractiveShellApp.extensions = ["agent_core"]` in an IPython profile's config."""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    if name == "tool":  # `from agent_core import tool` in a notebook: the @tool decorator, a stdlib-only module
        from agent_core.kernel_side.tool_decorator import tool

        return tool
    # package.json is the one place the version is written (pyproject reads it through
    # hatch-nodejs-version), so the panel and the server report the same one. Looked up on first
    # use: importlib.metadata would make every `import agent_core` slower.
    if name != "__version__":
        raise AttributeError(f"module 'agent_core' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("cellwright")
    except PackageNotFoundError:  # a checkout used without installing it
        return "0+unknown"


def load_ipython_extension(ipython: object) -> None:
    from agent_core.kernel_side.magic import (
        load_ipython_extension as load,  # imported here: `import agent_core` stays cheap
    )

    load(ipython)


def unload_ipython_extension(ipython: object) -> None:
    from agent_core.kernel_side.magic import unload_ipython_extension as unload

    unload(ipython)
