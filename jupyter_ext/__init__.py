"""Cellwright's Jupyter server extension; its settings are agent_core.config.configurable.Cellwright."""

from __future__ import annotations

from agent_core import __version__
from agent_core.json_types import JsonObject

from .extension import CellwrightApp

__all__ = ["CellwrightApp", "__version__"]


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    return [{"src": "labextension", "dest": "cellwright"}]


def _jupyter_server_extension_points() -> list[JsonObject]:
    # Also what an older config enabling "jupyter_ext" finds: the same app, which loads once per
    # server and logs how to drop the old name (CellwrightApp._load_jupyter_server_extension).
    return [{"module": "jupyter_ext", "app": CellwrightApp}]
