"""Where this kernel's `%agent` works: the notebook it belongs to, the folder its tools are confined
to, its kernel id, and whether approvals are skipped. Read once, when the extension loads (see
magic.Session). Its settings are agent_core.config.configurable's, loaded as the server loads them."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from jupyter_core.paths import jupyter_runtime_dir

AUTO_APPROVE_ENV = "CELLWRIGHT_MAGIC_AUTO_APPROVE"


def notebook_path(environ: Mapping[str, str] = os.environ, root: Path | None = None) -> str:
    """The notebook this kernel belongs to, as the server names it (relative to its root), from
    JPY_SESSION_NAME; "magic" for a kernel not started for a notebook (a console, plain IPython)."""
    name = environ.get("JPY_SESSION_NAME", "")
    if not name:
        return "magic"
    if not os.path.isabs(name):
        return name
    # JupyterLab's sessions give the absolute file path: make it relative to the server's root.
    if root is not None:
        roots = [str(root)]
    else:
        ranked = sorted(_server_roots(), key=lambda found: (found[1] == os.getppid(), len(found[0])), reverse=True)
        roots = [found_root for found_root, _pid in ranked]
    for candidate in roots:
        for form in (Path(name), Path(name).resolve()):  # the server may name it through a symlink
            try:
                return form.relative_to(candidate).as_posix()
            except ValueError:
                continue
    return name


def workspace_root(environ: Mapping[str, str] = os.environ, start_dir: str | os.PathLike[str] | None = None) -> Path:
    """The folder the magic's file and shell tools are confined to: the root of the Jupyter server
    whose root holds this kernel's starting folder (the innermost, should several), else that folder
    itself. The caller computes it once: the kernel's current directory follows `%cd`, and a `%cd ~`
    must not hand the agent the whole home directory.

    The starting folder is the notebook's (JPY_SESSION_NAME is its absolute path for kernels that
    JupyterLab starts), else `start_dir` (the folder the kernel started in), else the current one."""
    name = environ.get("JPY_SESSION_NAME", "")
    start = Path(name).parent if os.path.isabs(name) else Path(start_dir or os.getcwd())
    start = start.expanduser().resolve()
    parent = os.getppid()
    holding = [(Path(root).resolve(), pid) for root, pid in _server_roots() if _alive(pid)]
    holding = [(root, pid) for root, pid in holding if start.is_relative_to(root)]
    if not holding:
        return start
    return max(holding, key=lambda found: (len(found[0].parts), found[1] == parent))[0]


def _alive(pid: int) -> bool:
    """Whether a process runs under `pid`; a server that died leaves its jpserver file behind."""
    if pid <= 0:
        return False
    try:
        # psutil and ipykernel may be missing from the kernel's environment (another venv, a terminal IPython)
        import psutil

        return bool(psutil.pid_exists(pid))
    except ImportError:
        pass
    if os.name == "nt":  # os.kill(pid, 0) would terminate it there
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process, alive
        return True
    except OSError:
        return False
    return True


def env_auto_approve(environ: Mapping[str, str] = os.environ) -> bool:
    """CELLWRIGHT_MAGIC_AUTO_APPROVE as set when the kernel started; read once, by the caller."""
    return environ.get(AUTO_APPROVE_ENV, "").strip().lower() in ("1", "true", "yes")


def _server_roots() -> list[tuple[str, int]]:
    """(root_dir, pid) of the Jupyter servers running for this user (their jpserver-*.json files)."""
    roots = []
    for info in Path(jupyter_runtime_dir()).glob("jpserver-*.json"):
        try:
            data = json.loads(info.read_text(encoding="utf-8"))
            roots.append((str(Path(data["root_dir"]).expanduser()), int(data.get("pid", 0))))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return roots


def kernel_id() -> str:
    """This kernel's id as the server knows it (from its connection file's name), or ""."""
    try:
        from ipykernel.connect import get_connection_file

        name = Path(get_connection_file()).name
    except Exception:  # not an ipykernel (terminal IPython), or no connection file
        return ""
    return name[len("kernel-") : -len(".json")] if name.startswith("kernel-") and name.endswith(".json") else ""
