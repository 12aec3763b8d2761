"""The build function of pyproject's jupyter-builder hook: the panel (labextension_src, built with npm
into jupyter_ext/labextension) before the wheel or sdist is made.

A built panel newer than its sources is used as it is, so a wheel built from an sdist (which carries
the built panel) needs no Node.js; CELLWRIGHT_SKIP_PANEL_BUILD=1 uses a built panel whatever its age.
Otherwise npm builds it (hatch_jupyter_builder's npm_builder), and without npm the build stops with one
line that says what to install, not a traceback."""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
BUILT = Path("jupyter_ext/labextension")
BUILT_MARKERS = (BUILT / "package.json", BUILT / "static" / "style.js")
SOURCES = (Path("labextension_src"), Path("package.json"), Path("package-lock.json"), Path("tsconfig.json"))
SKIP_VARIABLE = "CELLWRIGHT_SKIP_PANEL_BUILD"
INSTALL_NPM = (
    "install Node.js 20+ and npm (e.g. apt-get install nodejs npm), or install from a wheel that contains "
    "the built panel"
)

log = logging.getLogger(__name__)


def _newest_mtime(path: Path) -> float:
    if path.is_file():
        return path.stat().st_mtime
    return max((p.stat().st_mtime for p in path.rglob("*") if p.is_file()), default=0.0)


def panel_state(root: Path = ROOT) -> str:
    """'missing', 'stale' (a source file is newer than the built panel) or 'current'."""
    if not all((root / marker).is_file() for marker in BUILT_MARKERS):
        return "missing"
    built = _newest_mtime(root / BUILT)
    sources = max((_newest_mtime(root / source) for source in SOURCES if (root / source).exists()), default=0.0)
    return "stale" if sources > built else "current"


def missing_tools(path: str | None = None) -> list[str]:
    """The programs of the panel's build that are not on PATH (`path`: the PATH to search)."""
    return [tool for tool in ("node", "npm") if shutil.which(tool, path=path) is None]


def check(root: Path = ROOT, environ: dict[str, str] | None = None) -> str | None:
    """What to do about the panel: None to build it with npm, 'use' to ship the built one. Raises
    SystemExit with one line (what to install) when it can be neither built nor used."""
    environ = dict(os.environ) if environ is None else environ
    state = panel_state(root)
    if environ.get(SKIP_VARIABLE) == "1":
        if state == "missing":
            raise SystemExit(
                f"{SKIP_VARIABLE}=1 but jupyter_ext/labextension holds no built panel: unset it and {INSTALL_NPM}."
            )
        return "use"
    if state == "current":
        return "use"
    missing = missing_tools(environ.get("PATH"))
    if not missing:
        return None
    names = " and ".join(missing) + (" are" if len(missing) > 1 else " is")
    if state == "stale":
        raise SystemExit(
            f"Cellwright's built panel (jupyter_ext/labextension) is older than labextension_src and {names} "
            f"not on PATH: {INSTALL_NPM}, or set {SKIP_VARIABLE}=1 to ship the built panel as it is."
        )
    raise SystemExit(f"Cellwright's panel is built with npm, and {names} not on PATH: {INSTALL_NPM}.")


def build(target_name: str, version: str, **kwargs: Any) -> None:
    """hatch_jupyter_builder's build-function: see the module's docstring."""
    if check() == "use":
        log.info("Using the built panel in %s", BUILT)
        return
    from hatch_jupyter_builder import npm_builder

    npm_builder(target_name, version, **kwargs)
