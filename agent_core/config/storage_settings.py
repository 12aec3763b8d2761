"""Where a server's threads are kept and whose they are: the database settings of `c.Cellwright`
and its owner, each with its environment variable. Operator settings: not changed at run time."""

from __future__ import annotations

import getpass
import os
from collections.abc import Mapping
from typing import Any

from traitlets import Float, HasTraits, Int, TraitError, Unicode, default, validate

from agent_core.config.database_url import DATABASE_TIMEOUT


class EnvironmentDefaults(HasTraits):
    """Settings tagged `env=...` take that environment variable's value when no config sets them."""

    _environ: Mapping[str, str]  # as the server (or the %agent kernel) started: set by Cellwright.__init__

    def _env(self, name: str) -> str:
        return self._environ.get(self.traits()[name].metadata["env"], "")


class StorageSettings(EnvironmentDefaults):
    """The database a server keeps its threads in (SQLite files or a PostgreSQL shared by servers) and
    the owner whose threads they are."""

    database_url = Unicode(
        help="Where threads and checkpoints are kept: '' for SQLite files in data_dir, a file path, 'memory', "
        "or postgresql://... for servers that share threads. Env: CELLWRIGHT_DATABASE_URL.",
    ).tag(config=True, env="CELLWRIGHT_DATABASE_URL")
    database_pool_size = Int(
        2,
        help="Connections to a PostgreSQL database_url in a server's pool for threads and events. A server holds "
        "this many at most, plus one for the agent's checkpoints and one that listens for the writes of its "
        "owner's other servers. Env: CELLWRIGHT_DATABASE_POOL_SIZE.",
    ).tag(config=True, env="CELLWRIGHT_DATABASE_POOL_SIZE")
    database_timeout = Float(
        DATABASE_TIMEOUT,
        help="Seconds a call to a PostgreSQL database_url waits for a connection before it fails: while the "
        "database is down, the panel hears that it is unavailable after this long. Default: 10. "
        "Env: CELLWRIGHT_DATABASE_TIMEOUT.",
    ).tag(config=True, env="CELLWRIGHT_DATABASE_TIMEOUT")
    owner = Unicode(
        help="The user whose threads this server (or %agent kernel) keeps and shows; it sees no other user's. "
        "Default: JUPYTERHUB_USER under JupyterHub, else the operating system's user running Jupyter. "
        "Env: CELLWRIGHT_OWNER.",
    ).tag(config=True, env="CELLWRIGHT_OWNER")
    checkpointer_url = Unicode(
        help="The older name of database_url, read when database_url is not set. Env: CELLWRIGHT_CHECKPOINTER_URL.",
    ).tag(config=True)

    @default("database_url")
    def _default_database_url(self) -> str:
        # A config's checkpointer_url is an explicit choice: it beats either environment variable.
        return (
            self.checkpointer_url or self._env("database_url") or self._environ.get("CELLWRIGHT_CHECKPOINTER_URL", "")
        )

    @default("database_pool_size")
    def _default_database_pool_size(self) -> int:
        raw = self._env("database_pool_size")
        try:
            return int(raw) if raw else 2
        except ValueError:
            raise TraitError(f"database_pool_size must be a whole number of connections, not {raw!r}.") from None

    @default("database_timeout")
    def _default_database_timeout(self) -> float:
        raw = self._env("database_timeout")
        try:
            return float(raw) if raw else DATABASE_TIMEOUT
        except ValueError:
            raise TraitError(f"database_timeout must be a number of seconds, not {raw!r}.") from None

    @default("owner")
    def _default_owner(self) -> str:
        # Not the request's identity: on a plain server, each token-authenticated request without
        # a login cookie is a new anonymous user. The user the server runs for is stable.
        return self._env("owner") or self._environ.get("JUPYTERHUB_USER", "") or os_user()

    @validate("database_pool_size")
    def _pool_size(self, proposal: Any) -> int:
        if proposal.value < 1:
            raise TraitError(
                f"database_pool_size must be 1 or more (connections per pool), not {proposal.value}: a server with "
                "no connection could not read a thread."
            )
        return int(proposal.value)

    @validate("owner")
    def _owner(self, proposal: Any) -> str:
        if not proposal.value.strip():
            raise TraitError("owner must name a user, not be empty: threads are kept per user.")
        return str(proposal.value)


def os_user() -> str:
    """The operating system's name of the user running this process (its uid where it has none,
    as in a container run with an arbitrary uid)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no name in the environment nor in the password database
        return f"uid-{os.getuid()}"
