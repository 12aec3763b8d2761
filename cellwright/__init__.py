"""The `cellwright` name that Jupyter lists: the server extension's entry points, re-exported from
jupyter_ext (the layout of DESIGN.md keeps the code in jupyter_ext/ and agent_core/)."""

from __future__ import annotations

from jupyter_ext import CellwrightApp, __version__, _jupyter_server_extension_points

__all__ = ["CellwrightApp", "__version__", "_jupyter_server_extension_points"]
