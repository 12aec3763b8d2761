"""The `%agent` magic's settings, read as the server reads them: the `Cellwright` section of the
Jupyter config files (jupyter_config, jupyter_cellwright_config and jupyter_server_config, .py and
.json, in jupyter_config_path(), through traitlets' own loaders), then the runtime settings.json that
PUT config writes into the data directory (it wins); environment variables fill in what neither sets.

What the kernel cannot see: options given to the server on its command line (--Cellwright.model=...)."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from ..settings import AgentSettings

# Lowest priority first: the extension loads its own file, then takes the server's config over it.
CONFIG_FILES = ("jupyter_config", "jupyter_cellwright_config", "jupyter_server_config")
ENV_FALLBACKS = {
    "model": "CELLWRIGHT_MODEL",
    "base_url": "OPENAI_BASE_URL",
    "api_key": "OPENAI_API_KEY",
    "tool_calling": "CELLWRIGHT_TOOL_CALLING",
    "checkpointer_url": "CELLWRIGHT_CHECKPOINTER_URL",
}
RUNTIME_EDITABLE = ("model", "base_url", "api_key", "tool_calling", "auto_approve")  # what PUT config may set
AUTO_APPROVE_ENV = "CELLWRIGHT_MAGIC_AUTO_APPROVE"


def _tool_calling(value: Any) -> str:
    if value not in ("native", "prompt", "auto"):
        raise ValueError('must be "native", "prompt" or "auto"')
    return str(value)


def _names(value: Any) -> frozenset[str]:
    if isinstance(value, str) or not all(isinstance(v, str) for v in value):
        raise ValueError("must be a list of tool names")
    return frozenset(value)


def _optional(convert: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return lambda value: None if value is None else convert(value)


# Trait name -> conversion; the traits of jupyter_ext.extension.Cellwright that the agent uses.
AGENT_TRAITS: dict[str, Callable[[Any], Any]] = {
    "model": str, "base_url": str, "api_key": str, "tool_calling": _tool_calling, "auto_approve": _names,
    "max_model_calls": _optional(int), "cell_timeout": _optional(float), "command_timeout": float,
    "request_timeout": float, "connect_timeout": float, "response_timeout": float, "max_retries": int,
    "context_token_budget": int,
}  # fmt: skip
PLACE_TRAITS: dict[str, Callable[[Any], Any]] = {"checkpointer_url": str, "data_dir": str}


@dataclass(frozen=True)
class KernelSettings:
    agent: AgentSettings
    data_dir: Path
    checkpointer_url: str
    problems: tuple[str, ...] = ()  # values that were ignored, for the user to see

    @property
    def threads_path(self) -> Path:
        return self.data_dir / "threads.sqlite"

    @property
    def checkpoints_path(self) -> Path:
        return self.data_dir / "checkpoints.sqlite"


def load_settings(environ: Mapping[str, str] = os.environ, config_paths: list[str] | None = None) -> KernelSettings:
    """The settings for one `%agent` call: settings.json > Jupyter config > environment."""
    from jupyter_core.paths import jupyter_data_dir

    problems: list[str] = []
    values: dict[str, Any] = {name: environ[var] for name, var in ENV_FALLBACKS.items() if environ.get(var)}
    for name, value in config_section(config_paths, problems).items():
        if name in AGENT_TRAITS or name in PLACE_TRAITS:
            values[name] = value
    data_dir = Path(str(values.get("data_dir") or Path(jupyter_data_dir()) / "cellwright"))
    values.update(runtime_values(data_dir / "settings.json"))
    agent: dict[str, Any] = {}
    for name, convert in {**AGENT_TRAITS, **PLACE_TRAITS}.items():
        if name not in values:
            continue
        try:
            agent[name] = convert(values[name])
        except (TypeError, ValueError) as exc:
            problems.append(f"Cellwright.{name} = {values[name]!r} was ignored: {exc}")
    agent.pop("data_dir", None)
    checkpointer_url = agent.pop("checkpointer_url", "")
    return KernelSettings(AgentSettings(**agent), data_dir, checkpointer_url, tuple(problems))


def config_section(config_paths: list[str] | None = None, problems: list[str] | None = None) -> dict[str, Any]:
    """The `Cellwright` section of the Jupyter config files, merged by the server's precedence: files
    of the higher-priority name, the earlier directory of the path and .json over .py win."""
    from jupyter_core.paths import jupyter_config_dir, jupyter_config_path
    from traitlets.config.loader import Config, ConfigFileNotFound, JSONFileConfigLoader, LazyConfigValue, PyFileConfigLoader

    if config_paths is None:
        config_paths = jupyter_config_path()
        if jupyter_config_dir() not in config_paths:
            config_paths.insert(0, jupyter_config_dir())  # as JupyterApp.config_file_paths
    merged = Config()
    for base in CONFIG_FILES:
        for directory in reversed(config_paths):
            for loader in (PyFileConfigLoader(base + ".py", path=directory), JSONFileConfigLoader(base + ".json", path=directory)):
                try:
                    merged.merge(loader.load_config())
                except ConfigFileNotFound:
                    pass
                except Exception as exc:  # a broken config file must not break the magic
                    if problems is not None:
                        problems.append(f"{loader.full_filename or base} could not be read: {type(exc).__name__}: {exc}")
    section = merged["Cellwright"] if "Cellwright" in merged else {}
    return {k: v.get_value([]) if isinstance(v, LazyConfigValue) else v for k, v in section.items()}


def runtime_values(path: Path) -> dict[str, Any]:
    """What PUT config saved (jupyter_ext.settings_store writes it); a missing or damaged file is empty."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in data.items() if k in RUNTIME_EDITABLE} if isinstance(data, dict) else {}


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
        import psutil  # type: ignore[import-untyped]

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
    from jupyter_core.paths import jupyter_runtime_dir

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
