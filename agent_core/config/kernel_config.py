"""The settings as a kernel's `%agent` reads them: the Jupyter config files a server gives its
`cellwright` extension, read with traitlets' own loader, then the environment and settings.json
(agent_core.config.configurable does the rest, as for the server)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from jupyter_core.application import JupyterApp
from traitlets.config import Config

from agent_core.config.configurable import Cellwright, load


class _ConfigFiles(JupyterApp):
    """Reads Jupyter's config files as a Jupyter app does (config_file_paths, .py then .json, the
    base jupyter_config first) and nothing else."""

    def __init__(self, name: str, paths: list[str] | None, **kwargs: Any) -> None:
        super().__init__(config_file_name=name, **kwargs)
        self._paths = paths

    @property
    def config_file_paths(self) -> list[str]:
        return list(self._paths) if self._paths is not None else super().config_file_paths


def jupyter_config(config_paths: list[str] | None = None, log: logging.Logger | None = None) -> Config:
    """The config a Jupyter server gives its `cellwright` extension: the extension's own
    jupyter_cellwright_config under the server's jupyter_server_config (each over jupyter_config),
    merged as ExtensionApp._link_jupyter_server_extension merges them. `config_paths`: Jupyter's
    config path by default."""
    merged = Config()
    for name in ("jupyter_cellwright_config", "jupyter_server_config"):
        files = _ConfigFiles(name, config_paths, **({"log": log} if log is not None else {}))
        files.load_config_file()
        merged.merge(files.config)
    return merged


class _Notes(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.notes: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:  # a config file that could not be read
            message += f": {type(record.exc_info[1]).__name__}: {record.exc_info[1]}"
        self.notes.append(message)


def load_for_kernel(
    config_paths: list[str] | None = None, environ: Mapping[str, str] | None = None
) -> tuple[Cellwright, list[str]]:
    """The settings of a `%agent` call, as the server has them: the same config files, the same
    environment defaults, then settings.json. Also the notes for the user (a config file that could
    not be read, an unknown option, a saved value skipped). What a kernel cannot see: options given
    on the server's command line."""
    notes = _Notes()
    log = logging.Logger("cellwright.configuration")  # not registered: the notes go to the user, not the kernel's log
    log.addHandler(notes)
    settings = load(config=jupyter_config(config_paths, log), log=log, environ=environ)
    return settings, notes.notes
