"""Cellwright's Jupyter server extension (the `Cellwright` configurable of API.md)."""
from __future__ import annotations

from typing import Any

from .extension import Cellwright, __version__

__all__ = ["Cellwright", "__version__"]


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    return [{"src": "labextension", "dest": "cellwright"}]


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    return [{"module": "jupyter_ext", "app": Cellwright}]
